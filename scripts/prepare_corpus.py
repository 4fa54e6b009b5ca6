#!/usr/bin/env python3
"""The convergence runs' corpus (issue 33): English text from a Debian package, split, tokenized.

Reads a dictd database (default /usr/share/dictd/gcide.dict.dz, Debian's dict-gcide: the GNU
Collaborative International Dictionary of English; `apt-get install dict-gcide`), gzip or plain,
keeps its text (UTF-8; the few lines that are not, Windows-1252; source tags such as "[1913 Webster]" and the markup braces dropped, each paragraph's
whitespace folded to single spaces), puts each paragraph in the held-out split when the first four
bytes of its SHA-256 are 0 mod 100 (about 1%; the same paragraph always lands in the same split),
trains the project's BPE (scripts/bpe_tokenizer.py) on the first --train-bytes of the training
text, and writes into OUT_DIR:
  train.u16, heldout.u16   the splits' token ids, little-endian uint16, paragraphs joined by "\\n"
  tokenizer.json           the BPE's merges
  corpus.json              where it came from and what it holds (sizes, SHA-256 of every file)
Nothing of the corpus is committed: the folder is carried to the runner (ignored, rebuilt from the
package by this script; the same package version gives the same bytes).

Usage: prepare_corpus.py OUT_DIR [--source PATH] [--vocab 4096] [--train-bytes 8000000]
                         [--max-bytes N (the first N bytes of the source only, for tests)]
Exit 0 written, 2 bad usage or input (nothing written: the files are written to OUT_DIR/.tmp and
moved in at the end).
"""
import argparse
import gzip
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpe_tokenizer  # noqa: E402

SOURCE_TAG = re.compile(r"^\s*\[[^\]]*\]\s*$")  # a line that is only "[1913 Webster]", "[PJC]", ...
MARKUP = re.compile(r"[{}\\*\"]")


def die(msg):
    print("prepare_corpus.py: %s" % msg, file=sys.stderr)
    sys.exit(2)


def paragraphs(raw):
    """The database's text as paragraphs (blank-line separated), cleaned."""
    out = []
    for block in re.split(r"\n\s*\n", raw):
        lines = [ln for ln in block.split("\n") if not SOURCE_TAG.match(ln)]
        text = " ".join(" ".join(lines).split())
        text = " ".join(MARKUP.sub("", text).split())
        if text:
            out.append(text)
    return out


def decode_lines(data):
    """UTF-8 text, line by line; a line that is not UTF-8 is read as Windows-1252 (GCIDE has a few
    such lines: its quotation marks), bytes 1252 leaves undefined as U+FFFD. Returns the text and the
    count of such lines."""
    out, legacy = [], 0
    for line in data.split(b"\n"):
        try:
            out.append(line.decode("utf-8"))
        except UnicodeDecodeError:
            out.append(line.decode("cp1252", errors="replace"))
            legacy += 1
    return "\n".join(out), legacy


def heldout(paragraph):
    return int.from_bytes(hashlib.sha256(paragraph.encode("utf-8")).digest()[:4], "little") % 100 == 0


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def package_version(name):
    try:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", name], capture_output=True, text=True, timeout=30)
        return r.stdout.strip() if r.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--source", default="/usr/share/dictd/gcide.dict.dz")
    ap.add_argument("--vocab", type=int, default=4096)
    ap.add_argument("--train-bytes", type=int, default=8_000_000)
    ap.add_argument("--max-bytes", type=int, default=0)
    a = ap.parse_args()
    if not 256 < a.vocab <= 65536:
        die("--vocab %d: must be in 257 .. 65536 (ids are stored as uint16)" % a.vocab)
    if a.train_bytes < 1 or a.max_bytes < 0:
        die("--train-bytes must be >= 1 and --max-bytes >= 0")
    if os.path.exists(a.out_dir) and not os.path.isdir(a.out_dir):
        die("OUT_DIR %s exists and is not a folder" % a.out_dir)
    try:
        with open(a.source, "rb") as f:
            head = f.read(2)
        opener = gzip.open if head == b"\x1f\x8b" else open
        with opener(a.source, "rb") as f:
            data = f.read()
        raw, legacy = decode_lines(data[: a.max_bytes] if a.max_bytes else data)
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        die("cannot read %s: %s (Debian's dict-gcide installs the default source)" % (a.source, e))
    paras = paragraphs(raw)
    train_p = [p for p in paras if not heldout(p)]
    held_p = [p for p in paras if heldout(p)]
    if len(train_p) < 2 or len(held_p) < 1:
        die("%s holds too little text: %d training and %d held-out paragraphs" % (a.source, len(train_p), len(held_p)))
    train_text, held_text = "\n".join(train_p), "\n".join(held_p)
    merges = bpe_tokenizer.train(train_text[: a.train_bytes], a.vocab)
    tok = bpe_tokenizer.Tokenizer(merges)
    tmp = os.path.join(a.out_dir, ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    files = {}
    for name, text in (("train.u16", train_text), ("heldout.u16", held_text)):
        ids = tok.encode(text)
        if tok.decode(ids) != text:
            die("the tokenizer does not round-trip the %s split" % name)
        with open(os.path.join(tmp, name), "wb") as f:
            f.write(struct.pack("<%dH" % len(ids), *ids))
        files[name] = {"tokens": len(ids), "bytes_of_text": len(text.encode("utf-8"))}
    bpe_tokenizer.save(os.path.join(tmp, "tokenizer.json"), merges)
    for name in ("train.u16", "heldout.u16", "tokenizer.json"):
        files.setdefault(name, {})["sha256"] = sha256_file(os.path.join(tmp, name))
    doc = {"kind": "fh_corpus", "source": os.path.abspath(a.source), "source_sha256": sha256_file(a.source),
           "package": "dict-gcide", "package_version": package_version("dict-gcide"),
           "max_bytes": a.max_bytes, "lines_read_as_cp1252": legacy, "paragraphs": {"train": len(train_p), "heldout": len(held_p)},
           "split": "held out: SHA-256 of the paragraph, first 4 bytes little-endian, = 0 mod 100",
           "vocab_size": tok.vocab_size, "tokenizer_train_bytes": a.train_bytes, "files": files}
    with open(os.path.join(tmp, "corpus.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    for name in ("train.u16", "heldout.u16", "tokenizer.json", "corpus.json"):
        os.replace(os.path.join(tmp, name), os.path.join(a.out_dir, name))
    os.rmdir(tmp)
    print("prepare_corpus.py: %s: %d + %d paragraphs, %d + %d tokens, vocab %d" %
          (a.out_dir, len(train_p), len(held_p), files["train.u16"]["tokens"], files["heldout.u16"]["tokens"],
           tok.vocab_size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
