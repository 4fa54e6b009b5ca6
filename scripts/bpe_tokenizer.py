#!/usr/bin/env python3
"""A small byte-level BPE tokenizer, kept in the project for the convergence runs (issue 33).

Text is cut into pieces (a word with the space before it, a run of punctuation with its space, a
run of spaces; `PIECE`), each piece's UTF-8 bytes are ids 0..255, and the learned merges (pairs of
ids -> a new id, 256 on, in the order learned) are applied to a piece lowest rank first, as GPT-2's
BPE does. Training counts the pieces of the training text and repeatedly merges the most frequent
adjacent pair (ties: the smallest pair of ids), so the same text gives the same merges on any
machine. Decoding concatenates the ids' bytes: decode(encode(t)) == t for every text.

The tokenizer file (JSON): {"kind": "fh_bpe", "vocab_size": V, "merges": [[a, b], ...]} with
V = 256 + len(merges).

Library: train(text, vocab_size), Tokenizer(merges).encode / decode, load(path), save(path).
CLI: bpe_tokenizer.py train TEXT_FILE VOCAB_SIZE OUT.json | encode TOKENIZER.json TEXT_FILE
     (prints the ids) | decode TOKENIZER.json (ids on standard input, prints the text).
Exit 0 done, 2 bad usage or input.
"""
import json
import re
import sys
from collections import Counter, defaultdict

PIECE = re.compile(r" ?[A-Za-z]+| ?[0-9]+| ?[^A-Za-z0-9\s]+|\s+")


def pieces(text):
    """The text cut into pieces whose concatenation is the text."""
    out, pos = [], 0
    for m in PIECE.finditer(text):
        if m.start() != pos:  # nothing is skipped: PIECE matches every character
            raise AssertionError("bpe_tokenizer: unmatched text at %d" % pos)
        out.append(m.group(0))
        pos = m.end()
    if pos != len(text):
        raise AssertionError("bpe_tokenizer: unmatched text at %d" % pos)
    return out


def train(text, vocab_size):
    """The merges of a vocab_size BPE (vocab_size >= 256) learned from text."""
    if vocab_size < 256:
        raise ValueError("vocab_size must be at least 256 (the bytes)")
    counts = Counter(pieces(text))
    words = [list(p.encode("utf-8")) for p in counts]
    freq = [counts[p] for p in counts]
    pair_count = Counter()
    where = defaultdict(set)  # pair -> the words holding it
    for w, (ids, f) in enumerate(zip(words, freq)):
        for a, b in zip(ids, ids[1:]):
            pair_count[(a, b)] += f
            where[(a, b)].add(w)
    merges = []
    while 256 + len(merges) < vocab_size and pair_count:
        best = max(pair_count.items(), key=lambda kv: (kv[1], (-kv[0][0], -kv[0][1])))
        pair, n = best
        if n < 1:
            break
        new = 256 + len(merges)
        merges.append(list(pair))
        for w in list(where[pair]):
            ids, f = words[w], freq[w]
            for a, b in zip(ids, ids[1:]):  # the word's pairs leave the counts ...
                pair_count[(a, b)] -= f
                if pair_count[(a, b)] <= 0:
                    del pair_count[(a, b)]
                where[(a, b)].discard(w)
            merged, i = [], 0
            while i < len(ids):
                if i + 1 < len(ids) and ids[i] == pair[0] and ids[i + 1] == pair[1]:
                    merged.append(new)
                    i += 2
                else:
                    merged.append(ids[i])
                    i += 1
            words[w] = merged
            for a, b in zip(merged, merged[1:]):  # ... and come back merged
                pair_count[(a, b)] += f
                where[(a, b)].add(w)
        where.pop(pair, None)
    return merges


class Tokenizer:
    def __init__(self, merges):
        self.merges = [tuple(m) for m in merges]
        self.rank = {m: i for i, m in enumerate(self.merges)}
        self.vocab_size = 256 + len(self.merges)
        self.bytes_of = [bytes([i]) for i in range(256)]
        for a, b in self.merges:
            if a >= len(self.bytes_of) or b >= len(self.bytes_of):
                raise ValueError("merge (%d, %d) names an id not yet defined" % (a, b))
            self.bytes_of.append(self.bytes_of[a] + self.bytes_of[b])
        self.cache = {}

    def encode_piece(self, piece):
        ids = self.cache.get(piece)
        if ids is not None:
            return ids
        ids = list(piece.encode("utf-8"))
        while len(ids) > 1:
            ranked = [(self.rank.get((a, b), None), i) for i, (a, b) in enumerate(zip(ids, ids[1:]))]
            ranked = [(r, i) for r, i in ranked if r is not None]
            if not ranked:
                break
            r, _ = min(ranked)
            a, b = self.merges[r]
            merged, i = [], 0
            while i < len(ids):
                if i + 1 < len(ids) and ids[i] == a and ids[i + 1] == b:
                    merged.append(256 + r)
                    i += 2
                else:
                    merged.append(ids[i])
                    i += 1
            ids = merged
        self.cache[piece] = ids
        return ids

    def encode(self, text):
        out = []
        for p in pieces(text):
            out.extend(self.encode_piece(p))
        return out

    def decode(self, ids):
        return b"".join(self.bytes_of[i] for i in ids).decode("utf-8")


def save(path, merges):
    with open(path, "w") as f:
        json.dump({"kind": "fh_bpe", "vocab_size": 256 + len(merges), "merges": merges}, f)
        f.write("\n")


def load(path):
    with open(path) as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or doc.get("kind") != "fh_bpe" or not isinstance(doc.get("merges"), list):
        raise ValueError("%s: not an fh_bpe tokenizer file" % path)
    merges = doc["merges"]
    if any(not (isinstance(m, list) and len(m) == 2 and all(isinstance(x, int) and x >= 0 for x in m)) for m in merges):
        raise ValueError("%s: a merge is not a pair of ids" % path)
    t = Tokenizer(merges)
    if doc.get("vocab_size") != t.vocab_size:
        raise ValueError("%s: vocab_size %r, but %d merges make %d" % (path, doc.get("vocab_size"), len(merges), t.vocab_size))
    return t


def main(argv):
    try:
        if len(argv) == 5 and argv[1] == "train":
            with open(argv[2], encoding="utf-8") as f:
                text = f.read()
            save(argv[4], train(text, int(argv[3])))
            return 0
        if len(argv) == 4 and argv[1] == "encode":
            with open(argv[3], encoding="utf-8") as f:
                print(" ".join(map(str, load(argv[2]).encode(f.read()))))
            return 0
        if len(argv) == 3 and argv[1] == "decode":
            t = load(argv[2])
            ids = [int(x) for x in sys.stdin.read().split()]
            if any(i < 0 or i >= t.vocab_size for i in ids):
                raise ValueError("an id outside [0, %d)" % t.vocab_size)
            sys.stdout.write(t.decode(ids))
            return 0
    except (OSError, ValueError, UnicodeDecodeError) as e:
        print("bpe_tokenizer.py: %s" % e, file=sys.stderr)
        return 2
    print(__doc__.split("CLI:")[1].split("Exit")[0].strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
