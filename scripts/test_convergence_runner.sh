#!/usr/bin/env bash
# CTest convergence_runner: scripts/convergence_runner.sh without a GPU, so that a runner call is not
# lost to the script: fake producers (a forge-model-step and a python that write their --out, and the
# weights of --dump-init) stand in; the runner must start every run of the study (3 seeds: 6 harness
# configurations, torch bf16 and fp32, the released package's two paths, the planted skip, then torch
# fp32 from each seed's dumped weights), pass each its own arguments, pack the JSON files and exit 0; a
# failing run makes it exit 1, a missing corpus or release tree 2.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
d="$(mktemp -d)"
trap 'rm -rf "$d"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
mkdir -p "$d/bin" "$d/data" "$d/forge/src/fused_grad_optimizer"
printf 'xx' > "$d/data/train.u16" && printf 'xx' > "$d/data/heldout.u16" && echo '{}' > "$d/data/corpus.json"
# The fakes: write {"args": "..."} to --out (and a file to --dump-init); FAKE_FAIL=1 makes the planted run fail.
cat > "$d/bin/forge-model-step" <<'FAKE'
#!/usr/bin/env bash
all="$*" out="" dump=""
while [ $# -gt 0 ]; do case "$1" in --out) out="$2"; shift ;; --dump-init|--dump-grads) dump="$2"; shift ;; esac; shift; done
[ -n "$dump" ] && echo w > "$dump"
[ "${FAKE_FAIL:-0}" = 1 ] && [[ "$out" == *planted* ]] && exit 1
echo "{\"args\": \"$all\"}" > "$out"
FAKE
cat > "$d/bin/python" <<'FAKE'
#!/usr/bin/env bash
all="$*" out="" init=""
while [ $# -gt 0 ]; do case "$1" in --out) out="$2"; shift ;; --init-from) init="$2"; shift ;; esac; shift; done
[ -z "$init" ] || [ -s "$init" ] || exit 3  # torch from the harness's weights: they must be there
echo "{\"args\": \"$all\"}" > "$out"
FAKE
chmod +x "$d/bin/forge-model-step" "$d/bin/python"
R="$ROOT/scripts/convergence_runner.sh"
export FH_CONV_FORGE_SRC="$d/forge"
FH_CONV_BIN="$d/bin" FH_CONV_PYTHON="$d/bin/python" FH_CONV_DATA="$d/data" FH_CONV_STEPS=7 bash "$R" "$d/out" > "$d/log" 2>&1
rc=$?
[ $rc -eq 0 ] || fail "the study: exit $rc ($(tail -3 "$d/log"))"
tar -C "$d" -xJf "$d/out/runs.tar.xz" 2>/dev/null || fail "no runs.tar.xz"
n=$(ls "$d/json" 2>/dev/null | wc -l)
[ "$n" -eq 34 ] || fail "$n JSON files, not 34 (18 harness, 6 torch, 6 release, 3 torch from the harness, 1 planted)"
for f in h_fused_bf16_master_s1 h_standard_int8_master_s3 h_fused_bf16_sr_s2 t_bf16_s1 t_fp32_s3 r_forge_s1 r_forge_int8_s3 \
         t_fp32_from_harness_s2 h_fused_bf16_master_planted_s1; do
  [ -s "$d/json/$f.json" ] || fail "no $f.json"
done
grep -q -- "--update standard --state int8 --store fp32_master --steps 7" "$d/json/h_standard_int8_master_s3.json" ||
  fail "a run without its own arguments: $(cat "$d/json/h_standard_int8_master_s3.json")"
grep -q -- "--plant skip_one_update" "$d/json/h_fused_bf16_master_planted_s1.json" || fail "the planted run is not planted"
# The first seed's fused INT8 and bf16 runs trace their first steps (at most the run's 7); no other run does.
for f in h_fused_int8_master_s1 h_fused_bf16_master_s1; do
  grep -q -- "--trace-steps 7 " "$d/json/$f.json" || fail "$f is not traced: $(cat "$d/json/$f.json")"
done
[ "$(grep -l -- "--trace-steps" "$d"/json/*.json | wc -l)" -eq 2 ] || fail "traced runs: $(grep -l -- "--trace-steps" "$d"/json/*.json)"
grep -q -- "--dump-grads .*g_s2.bin" "$d/json/h_standard_bf16_master_s2.json" || fail "the standard run dumps no gradients"
grep -q -- "--compare-grads .*g_s2.bin" "$d/json/t_fp32_from_harness_s2.json" || fail "torch fp32 from the harness compares no gradients"
grep -q -- "--optimizer forge_int8 --forge-src $d/forge" "$d/json/r_forge_int8_s3.json" || fail "the release's INT8 run: $(cat "$d/json/r_forge_int8_s3.json")"
# Each run's output in logs/NAME.log and its end in runs_progress.txt (kept when the runner is cut off).
for f in "$d"/json/*.json; do
  b="$(basename "$f" .json)"
  [ -f "$d/out/logs/$b.log" ] || fail "no logs/$b.log"
  grep -q "\] $b rc 0 in [0-9]* s$" "$d/out/runs_progress.txt" || fail "no progress line for $b"
done
rm -rf "$d/out" "$d/json"
FAKE_FAIL=1 FH_CONV_BIN="$d/bin" FH_CONV_PYTHON="$d/bin/python" FH_CONV_DATA="$d/data" bash "$R" "$d/out" > "$d/log" 2>&1
rc=$?
[ $rc -eq 1 ] || fail "a failing run: exit $rc, not 1"
grep -q "^run failed" "$d/out/convergence_run.log" || fail "the failing run is not named in the log"
grep -q "h_fused_bf16_master_planted_s1 rc [1-9][0-9]* in" "$d/out/runs_progress.txt" || fail "the failing run's progress line has no failing status"
FH_CONV_BIN="$d/bin" FH_CONV_DATA="$d/none" bash "$R" "$d/out2" > "$d/log" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "no corpus: exit $rc, not 2"
FH_CONV_BIN="$d/bin" FH_CONV_DATA="$d/data" FH_CONV_FORGE_SRC="$d/none" bash "$R" "$d/out3" > "$d/log" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "no release tree: exit $rc, not 2"
# The switches are checked before anything is made (exit 2, the variable named, no OUTDIR).
for bad in "FH_CONV_MPS=yes" "FH_CONV_PARALLEL=0" "FH_CONV_PARALLEL=x"; do
  env "$bad" FH_CONV_BIN="$d/bin" FH_CONV_DATA="$d/data" bash "$R" "$d/out4" > "$d/log" 2>&1
  rc=$?
  { [ $rc -eq 2 ] && grep -q "${bad%%=*}='${bad#*=}'" "$d/log" && [ ! -e "$d/out4" ]; } ||
    fail "$bad: exit $rc, not 2 with the variable named and nothing made ($(head -c 200 "$d/log"))"
done
[ $fails -eq 0 ] && echo "test_convergence_runner: all checks passed"
exit $((fails > 0))
