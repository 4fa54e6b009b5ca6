#!/usr/bin/env bash
# CTest corpus_tokenizer: the convergence runs' data path without a GPU or the Debian package
# (issue 33). On a small dictd-like text: scripts/prepare_corpus.py writes the four files, the
# token files decode back to the splits' text through scripts/bpe_tokenizer.py, training twice
# gives the same merges, a paragraph lands in the same split twice; bad input exits 2 and writes
# nothing; scripts/torch_train_reference.py's windows are token_data.h's (the golden values of
# test_convergence_parity) and its door refuses bad data before torch is imported.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
d="$(mktemp -d)"
trap 'rm -rf "$d"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
python3 - "$d/src.txt" <<'PY'
import random, sys
random.seed(5)
words = "the of a to and in is that it was for on as with by at from this his which or be an not are".split()
words += "abuse abase river stone light measure quick small green table window harbour lantern".split()
paras = []
for i in range(1500):
    n = random.randint(5, 40)
    paras.append("Entry%d \\E*n\"try\\, n. " % i + " ".join(random.choice(words) for _ in range(n)) + ".\n   [1913 Webster]")
open(sys.argv[1], "w").write("\n\n".join(paras) + "\n")
PY
gzip -c "$d/src.txt" > "$d/src.dz"
P="$ROOT/scripts/prepare_corpus.py"
python3 "$P" "$d/a" --source "$d/src.dz" --vocab 300 --train-bytes 40000 > "$d/log" 2>&1 || { fail "prepare_corpus: $(cat "$d/log")"; }
for f in train.u16 heldout.u16 tokenizer.json corpus.json; do [ -s "$d/a/$f" ] || fail "no $f"; done
[ -e "$d/a/.tmp" ] && fail "the scratch folder was left"
python3 "$P" "$d/b" --source "$d/src.txt" --vocab 300 --train-bytes 40000 > /dev/null 2>&1 || fail "plain text source"
cmp -s "$d/a/tokenizer.json" "$d/b/tokenizer.json" || fail "two trainings gave different merges"
cmp -s "$d/a/heldout.u16" "$d/b/heldout.u16" || fail "the held-out split moved between runs"
python3 - "$ROOT" "$d/a" <<'PY' || fail "round trip / split / windows"
import json, os, struct, sys, importlib.util
root, a = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(root, "scripts"))
import bpe_tokenizer, prepare_corpus
t = bpe_tokenizer.load(os.path.join(a, "tokenizer.json"))
c = json.load(open(os.path.join(a, "corpus.json")))
assert c["vocab_size"] == t.vocab_size == 300, c["vocab_size"]
for name in ("train.u16", "heldout.u16"):
    b = open(os.path.join(a, name), "rb").read()
    ids = struct.unpack("<%dH" % (len(b) // 2), b)
    assert max(ids) < 300 and len(ids) == c["files"][name]["tokens"], name
    text = t.decode(ids)
    assert "[1913 Webster]" not in text and "\\" not in text, "markup left in " + name
    assert bpe_tokenizer.Tokenizer(t.merges).encode(text) == list(ids), "encode(decode(ids)) != ids in " + name
    for p in text.split("\n"):
        assert prepare_corpus.heldout(p) == (name == "heldout.u16"), "a paragraph in the wrong split"
assert t.decode(t.encode("A new text, unseen: 42!")) == "A new text, unseen: 42!"
spec = importlib.util.spec_from_file_location("ttr", os.path.join(root, "scripts/torch_train_reference.py"))
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
assert (m.train_offset(0x18, 1, 1000000, 512), m.train_offset(0x18, 1000, 1000000, 512), m.train_offset(7, 3, 5000, 64),
        m.heldout_offset(3, 8, 100000, 512)) == (463828, 915341, 1899, 37307)
PY
# Bad input: exit 2, nothing written.
for args in "--source $d/src.dz --vocab 100" "--source $d/src.dz --vocab 70000" "--source $d/none.dz" \
            "--source $d/src.dz --train-bytes 0" "--source $d"; do
  python3 "$P" "$d/c" $args > "$d/log" 2>&1
  rc=$?
  [ $rc -eq 2 ] || fail "prepare_corpus $args: exit $rc, not 2"
  grep -q "prepare_corpus.py:" "$d/log" || fail "prepare_corpus $args: no message"
  [ -e "$d/c/train.u16" ] && fail "prepare_corpus $args: wrote a file"
done
printf 'x' > "$d/tiny.txt"
python3 "$P" "$d/c" --source "$d/tiny.txt" > "$d/log" 2>&1; [ $? -eq 2 ] || fail "a source without text: not exit 2"
printf '\x01\x02\x03' > "$d/a/odd.u16"
T="$ROOT/scripts/torch_train_reference.py"
mkdir -p "$d/odd" && cp "$d/a/odd.u16" "$d/odd/train.u16" && cp "$d/a/heldout.u16" "$d/odd/heldout.u16"
python3 "$T" --data "$d/odd" --out "$d/o.json" --model tiny > "$d/log" 2>&1; [ $? -eq 2 ] || fail "torch reference: odd token file not exit 2"
python3 "$T" --data "$d/a" --out "$d/o.json" --model tiny --steps 0 > "$d/log" 2>&1; [ $? -eq 2 ] || fail "torch reference: --steps 0 not exit 2"
python3 "$T" --data "$d/a" --out "$d" --model tiny > "$d/log" 2>&1; [ $? -eq 2 ] || fail "torch reference: --out a folder not exit 2"
printf '{"kind": "fh_model_weights", "params": [{"name": "embed_tokens", "rows": 2, "cols": 2, "offset": 0}]}\n\x01\x00' > "$d/w.bin"
python3 "$T" --data "$d/a" --out "$d/o.json" --model tiny --init-from "$d/w.bin" > "$d/log" 2>&1; [ $? -eq 2 ] || fail "torch reference: weights past their data not exit 2"
python3 "$T" --data "$d/a" --out "$d/o.json" --model tiny --init-from "$d/a/corpus.json" > "$d/log" 2>&1; [ $? -eq 2 ] || fail "torch reference: --init-from not a weights file not exit 2"
python3 "$T" --data "$d/a" --out "$d/o.json" --model tiny --compare-grads "$d/w.bin" > "$d/log" 2>&1; [ $? -eq 2 ] || fail "torch reference: --compare-grads without --init-from not exit 2"
printf '{"kind": "fh_model_weights", "params": []}\n' > "$d/w0.bin"
python3 "$T" --data "$d/a" --out "$d/o.json" --model tiny --dtype fp32 --init-from "$d/w0.bin" --compare-grads "$d/w.bin" > "$d/log" 2>&1; [ $? -eq 2 ] || fail "torch reference: --compare-grads not a gradients file not exit 2"
python3 "$T" --data "$d/a" --out "$d/o.json" --model tiny --optimizer forge > "$d/log" 2>&1; [ $? -eq 2 ] || fail "torch reference: --optimizer forge without --forge-src not exit 2"
[ -e "$d/o.json" ] && fail "torch reference wrote a file for bad input"
[ $fails -eq 0 ] && echo "test_corpus_tokenizer: all checks passed"
exit $((fails > 0))
