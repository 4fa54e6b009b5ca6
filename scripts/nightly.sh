#!/usr/bin/env bash
# The nightly job: runs the GPU entry point (scripts/gpu_runner.sh, which always
# requires the GPU claims to run), diffs its report against the stored baseline
# (forge-verify diff), renders the summary page, and promotes the new report to baseline only
# when the run passed and nothing regressed.
# Usage: scripts/nightly.sh OUTDIR [BASELINE_DIR]
#   BASELINE_DIR  holds forge-verify.h5 (and bench.json, MANIFEST, PROMOTED.txt) of the last
#                 promoted run; default $FH_BASELINE_DIR, else nightly-baseline/ in the checkout.
#                 Without a baseline the run is promoted when it passed (the first baseline).
# Every gpu_runner.sh variable passes through (FH_SKIP_TORCH, FH_BENCH_FILTER, FH_VERIFY_ARGS...);
# FH_DIFF_ALPHA (0 < A < 1) / FH_DIFF_MIN_RATIO (R >= 1) / FH_DIFF_MARGIN (0 <= F <= 1) set the
# diff's thresholds; a value that is not a plain decimal number in its range is bad usage.
# Then the parsers are fuzzed (scripts/fuzz.sh) for FH_NIGHTLY_FUZZ_SECONDS per
# target (default 300; 0 skips; skipped too without clang++-14), raw HDF5 files included: what
# HDF5's own parser does on a corrupt file is listed, a finding in the harness's readers fails.
# Refuted findings (paper or release statements the run refutes) do not fail the run and are
# promoted with it; a finding that changed against the baseline is a regression ("FINDING CHANGED").
# Output: OUTDIR/run (the runner's folder: report, logs, diff.txt, diff.json), OUTDIR/page
# (index.html), OUTDIR/fuzz.log, OUTDIR/NIGHTLY.txt (what happened). Exit status: 0 promoted;
# 1 the run failed or something regressed, a changed finding included (baseline kept); 2 bad
# usage or a missing piece (no bundle, no page); 3 promoted, but the fuzzers found something
# (OUTDIR/fuzz.log).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
usage() { echo "nightly: $*" >&2; echo "usage: scripts/nightly.sh OUTDIR [BASELINE_DIR]" >&2; exit 2; }
case "${1:-}" in -h|--help) sed -n '2,22p' "$0"; exit 0 ;; -*) usage "unknown option '$1'" ;; esac
[ $# -ge 1 ] && [ $# -le 2 ] || usage "expected OUTDIR [BASELINE_DIR], got $# arguments"
[ -n "$1" ] || usage "OUTDIR is empty"
# The diff's thresholds, checked before anything runs: each reaches forge-verify diff as one word
# (gpu_runner.sh splits FH_DIFF_ARGS on blanks), so only a plain decimal number is let through.
threshold() {  # threshold VAR OPTION AWK-RANGE-TEST: appends "OPTION value" to diff_args when VAR is set
  local v="${!1:-}"
  [ -n "$v" ] || return 0
  [[ "$v" =~ ^[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$ ]] && awk -v v="$v" "BEGIN { exit !($3) }" ||
    usage "$1='$v' is not a plain decimal number in range ($3)"
  diff_args+=" $2 $v"
}
diff_args=""
threshold FH_DIFF_ALPHA --alpha "v > 0 && v < 1"
threshold FH_DIFF_MIN_RATIO --min-ratio "v >= 1"
threshold FH_DIFF_MARGIN --margin-fraction "v >= 0 && v <= 1"
FUZZ_SECONDS="${FH_NIGHTLY_FUZZ_SECONDS:-300}"
[[ "$FUZZ_SECONDS" =~ ^[0-9]{1,6}$ ]] || usage "FH_NIGHTLY_FUZZ_SECONDS='$FUZZ_SECONDS' is not a whole number of seconds"
OUT="$1"
BASE="${2:-${FH_BASELINE_DIR:-$ROOT/nightly-baseline}}"
mkdir -p -- "$OUT" || exit 2
OUT="$(cd "$OUT" && pwd)"
LOG="$OUT/NIGHTLY.txt"
: > "$LOG"
say() { echo "nightly: $*" | tee -a "$LOG"; }
# The fuzz stage, once, then exit: status 0 becomes 3 when the fuzzers found something.
fuzz_failed=0
finish() {
  if [ "$FUZZ_SECONDS" -eq 0 ]; then
    say "fuzzing: skipped (FH_NIGHTLY_FUZZ_SECONDS=0)"
  elif ! command -v "${FH_FUZZ_CXX:-clang++-14}" >/dev/null 2>&1; then
    say "fuzzing: skipped (no ${FH_FUZZ_CXX:-clang++-14}; scripts/setup.sh installs it)"
  else
    FH_FUZZ_RAW_HDF5=1 FH_FUZZ_LIBHDF5_FATAL=0 FH_FUZZ_ARTIFACTS="$OUT/fuzz-artifacts" \
      bash "$ROOT/scripts/fuzz.sh" "$FUZZ_SECONDS" > "$OUT/fuzz.log" 2>&1
    local rc=$?
    grep -E '^fuzz: ' "$OUT/fuzz.log" | grep -vE '^fuzz: (built|[a-z_]+: (FINDING|a regression))' | sed 's/^fuzz: /    /' >> "$LOG"
    case $rc in
      0) say "fuzzing: no finding in the readers ($FUZZ_SECONDS s per target; fuzz.log)" ;;
      1) say "fuzzing: FINDINGS in the readers (fuzz.log; inputs in fuzz-artifacts/)"; fuzz_failed=1 ;;
      *) say "fuzzing: could not run (rc $rc; fuzz.log)"; fuzz_failed=1 ;;
    esac
  fi
  [ "$1" -eq 0 ] && [ "$fuzz_failed" = 1 ] && exit 3
  exit "$1"
}
PY=python3
for cand in ${FH_PYTHON:-} python3 /usr/bin/python3; do
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import h5py, numpy, matplotlib' 2>/dev/null; then PY="$cand"; break; fi
done

base_report="$BASE/forge-verify.h5"
diff_env=()
if [ -f "$base_report" ]; then
  say "baseline $base_report ($(grep -h -m1 '^promoted' "$BASE/PROMOTED.txt" 2>/dev/null || echo 'provenance unknown'))"
  diff_env=(FH_DIFF_BASELINE="$base_report")
else
  say "no baseline at $base_report: this run becomes the first baseline if it passes"
fi
# The diff's thresholds (checked above) reach forge-verify diff through gpu_runner.sh's FH_DIFF_ARGS.
# The whole benchmark grid unless told otherwise (gpu_runner.sh's default is the gate's T = 512 set).
env "${diff_env[@]}" FH_BENCH_FILTER="${FH_BENCH_FILTER:-all}" FH_DIFF_ARGS="$diff_args" bash "$ROOT/scripts/gpu_runner.sh" "$OUT/run"
run_rc=$?
say "GPU entry point: $([ $run_rc -eq 0 ] && echo PASS || echo "FAIL (rc $run_rc)")"
[ $run_rc -eq 2 ] && { say "no usable bundle: nothing ran"; exit 2; }
report="$OUT/run/forge-verify.h5"
[ -f "$report" ] || { say "no report was written: nothing to diff or promote"; finish 1; }

diff_rc=0
if [ -f "$base_report" ]; then
  diff_rc="$(cat "$OUT/run/diff.rc" 2>/dev/null || echo 2)"
  say "diff against the baseline: $(case $diff_rc in 0) echo "nothing regressed";; 1) echo "REGRESSED";; *) echo "could not diff (rc $diff_rc)";; esac) (run/diff.txt)"
  grep -E '^REGRESSION' "$OUT/run/diff.txt" 2>/dev/null | head -20 | sed 's/^/    /' | tee -a "$LOG"
  # A finding of the paper or the release that changed (confirmed to refuted or back) is news
  # about the thing audited, not about the harness: said on its own line.
  n_findings="$(grep -cE '^REGRESSION finding ' "$OUT/run/diff.txt" 2>/dev/null)"
  [ "${n_findings:-0}" -gt 0 ] &&
    say "FINDING CHANGED: $n_findings finding(s) of the paper or the release changed (run/diff.txt)"
fi
# Refuted findings are listed, never a failure: a run that has them is promoted like any other.
n_refuted="$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["counts"].get("refuted", 0))' \
  "$OUT/run/forge-verify.json" 2>/dev/null)"
[ "${n_refuted:-0}" -gt 0 ] 2>/dev/null &&
  say "findings: $n_refuted refuted (the paper's or the release's statements; not a failure)"

page_args=("$report" -o "$OUT/page" --force)  # OUTDIR/page is this job's own page
[ -f "$OUT/run/registry.json" ] && page_args+=(--registry "$OUT/run/registry.json")
[ -f "$OUT/run/diff.json" ] && page_args+=(--diff "$OUT/run/diff.json")
[ -s "$OUT/run/bench.json" ] && page_args+=(--bench "$OUT/run/bench.json")  # the roofline
if "$PY" "$ROOT/scripts/render_summary.py" "${page_args[@]}" > "$OUT/page.log" 2>&1; then
  say "summary page: page/index.html"
else
  say "summary page FAILED (page.log)"
  page_failed=1
fi

if [ $run_rc -eq 0 ] && [ "$diff_rc" = 0 ]; then
  # Promotion: copied beside, then renamed, so the baseline is never half replaced.
  mkdir -p "$BASE" && tmp="$(mktemp -d "$BASE/.promote.XXXXXX")" || { say "cannot write $BASE"; exit 2; }
  cp "$report" "$tmp/forge-verify.h5" &&
    { [ ! -f "$OUT/run/bench.json" ] || cp "$OUT/run/bench.json" "$tmp/bench.json"; } &&
    { [ ! -f "$OUT/run/MANIFEST" ] || cp "$OUT/run/MANIFEST" "$tmp/MANIFEST"; } &&
    echo "promoted $(date -u +%Y-%m-%dT%H:%M:%SZ) from $OUT/run ($(grep -m1 '^git_revision=' "$OUT/run/MANIFEST" 2>/dev/null))" > "$tmp/PROMOTED.txt" ||
    { say "promotion failed while copying"; rm -rf "$tmp"; exit 2; }
  for f in "$tmp"/*; do mv -f "$f" "$BASE/$(basename "$f")"; done
  rmdir "$tmp"
  say "PROMOTED: $BASE/forge-verify.h5 is the new baseline"
  [ "${page_failed:-0}" = 1 ] && finish 2
  finish 0
fi
say "NOT promoted: $([ $run_rc -ne 0 ] && echo "the run failed")$([ $run_rc -ne 0 ] && [ "$diff_rc" != 0 ] && echo "; ")$([ "$diff_rc" != 0 ] && echo "the diff found regressions or could not run") (baseline kept)"
finish 1
