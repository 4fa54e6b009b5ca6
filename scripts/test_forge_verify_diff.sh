#!/usr/bin/env bash
# CTest forge_verify_diff_cli: `forge-verify diff` on its real command line, on reports that
# forge-verify itself writes (two quick CPU claims, then one of them, so a claim disappears; a
# finding refuted in one run and confirmed in the other), a truncated copy and a file that is
# not HDF5. Planted defect for the finding lines: report_diff.cpp's `finding ? judged(b.verdict)
# || ...` made `finding ? false` (the changed finding no longer regresses). Exits non-zero
# naming each failed expectation.
# Usage: test_forge_verify_diff.sh PATH/TO/forge-verify
set -u
FV=${1:?usage: test_forge_verify_diff.sh PATH/TO/forge-verify}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
FAILS=0 N=0

# make NAME CLAIMS [OPTIONS]: a report of those claims (forge-verify's exit 1 would be a failed
# check: refuse).
make_report() {
  local name=$1 claims=$2
  shift 2
  "$FV" --claim "$claims" "$@" --report "$T/$name.h5" >"$T/$name.log" 2>&1 ||
    { echo "forge-verify --claim $claims $* failed:"; cat "$T/$name.log"; exit 1; }
}
make_report two int8_codec_bound,sr_exact_mean
make_report one int8_codec_bound
make_report seed7 int8_codec_bound --seed 7
make_report again int8_codec_bound   # the same run again: only /meta may differ
# A finding (ext_layer_speed's faster_than_torch_fused, a statement of the release): refuted by a
# slower path, confirmed by a faster one. Both runs exit 0 (make_report refuses any other exit):
# a refutation alone is not a failure.
D="$(cd "$(dirname "$0")" && pwd)/testdata"  # timing_*.json: one layer timed, 200 us (torch), 260 or 180 us
torch=(--external-timing "$D/timing_torch_reference.json")
make_report refuted ext_layer_speed "${torch[@]}" --external-timing "$D/timing_tma_slow.json"
make_report confirmed ext_layer_speed "${torch[@]}" --external-timing "$D/timing_tma_fast.json"
head -c "$(( $(stat -c %s "$T/two.h5") / 2 ))" "$T/two.h5" >"$T/trunc.h5"
echo "not an HDF5 file" >"$T/text.h5"

# expect NAME RC PATTERN(stdout+stderr, grep -E) -- ARGS...
expect() {
  local name=$1 want=$2 pat=$3
  shift 4
  N=$((N + 1))
  rm -f "$T/out.json"
  "$FV" diff "$@" >"$T/stdout" 2>"$T/stderr"
  local rc=$? why=""
  [ "$rc" = "$want" ] || why+=" exit $rc, expected $want;"
  cat "$T/stdout" "$T/stderr" | grep -Eq -- "$pat" || why+=" no line matches '$pat';"
  if [ "$want" = 2 ]; then
    [ ! -e "$T/out.json" ] || why+=" --json file written on exit 2;"
    [ ! -s "$T/stdout" ] || why+=" stdout not empty on exit 2;"
  elif [[ " $* " == *" --json "* ]]; then
    python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$T/out.json" 2>/dev/null || why+=" --json not valid JSON;"
  fi
  if [ -n "$why" ]; then
    FAILS=$((FAILS + 1))
    echo "FAIL $name:$why"
    sed 's/^/  stdout: /' "$T/stdout"; sed 's/^/  stderr: /' "$T/stderr"
  else
    echo "ok   $name"
  fi
}

expect "self"               0 '0 regressions'                                     -- "$T/two.h5" "$T/two.h5" --json "$T/out.json"
expect "claim disappeared"  1 '^REGRESSION disappeared sr_exact_mean'             -- "$T/two.h5" "$T/one.h5" --json "$T/out.json"
expect "claim appeared"     0 '^info +appeared sr_exact_mean'                     -- "$T/one.h5" "$T/two.h5"
expect "provenance is info" 0 '^info +meta meta/seed: [0-9]+ -> 7'                -- "$T/one.h5" "$T/seed7.h5"
expect "strict"             1 'meta/seed'                                         -- "$T/one.h5" "$T/seed7.h5" --strict
expect "strict, only meta"  0 '0 regressions'                                     -- "$T/one.h5" "$T/again.h5" --strict
finding=ext_layer_speed/tma.4096x4096x512/faster_than_torch_fused
expect "same refutation"    0 '0 regressions'                                     -- "$T/refuted.h5" "$T/refuted.h5"
changed="^REGRESSION finding $finding \\[verdict\\]:"
expect "refuted->confirmed" 1 "$changed refuted -> confirmed"                    -- "$T/refuted.h5" "$T/confirmed.h5"
expect "confirmed->refuted" 1 "$changed confirmed -> refuted"                    -- "$T/confirmed.h5" "$T/refuted.h5"
expect "truncated NEW"      2 "NEW '$T/trunc.h5'"                                 -- "$T/two.h5" "$T/trunc.h5" --json "$T/out.json"
expect "truncated BASE"     2 "BASE '$T/trunc.h5'"                                -- "$T/trunc.h5" "$T/two.h5" --json "$T/out.json"
expect "not HDF5"           2 "'$T/text.h5' is not a valid report"                -- "$T/two.h5" "$T/text.h5" --json "$T/out.json"
expect "one report"         2 'expected two reports'                              -- "$T/two.h5" --json "$T/out.json"
expect "bad alpha"          2 "--alpha '2'"                                       -- "$T/two.h5" "$T/two.h5" --alpha 2 --json "$T/out.json"
expect "help"               0 'Mann-Whitney'                                      -- --help

echo "$((N - FAILS)) of $N expectations passed"
[ "$FAILS" = 0 ]
