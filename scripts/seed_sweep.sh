#!/usr/bin/env bash
# Runs the seed-dependent claims over N seeds and reports the failures per claim.
# A claim is seed-dependent when its registry row honours --seed (forge-verify
# --list-claims-json); GPU claims are swept only with --gpu (on the runner).
# Usage: scripts/seed_sweep.sh N [--first S] [--claims a,b,...] [--gpu] [--bin PATH] [--jobs J] [-- ARGS...]
#   N        seeds S .. S+N-1 (S = --first, default 1; 1 <= N <= 1000000, S+N-1 < 2^63)
#   --claims only these claims (default: every seed-dependent CPU claim, or GPU claim with --gpu)
#   ARGS     further forge-verify options for every run (for example --shape 64x96x40)
# Exit status: 0 when every run ran and none failed, 1 when any failed, 2 for bad usage (also when
# forge-verify refuses ARGS), 4 when none failed but some did not run (a GPU claim named in
# --claims without --gpu, or, with --gpu, a GPU claim that found no GPU). Each failing
# (claim, seed) is listed with the first failing check; reports of failing runs are kept in
# $FH_SWEEP_DIR (default: a temporary folder, printed).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
EXTRA=()
N="" FIRST=1 CLAIMS="" GPU=0 BIN="${FH_FORGE_VERIFY:-$ROOT/build/forge-verify}" JOBS="${FH_JOBS:-$(nproc)}"
usage() { sed -n '2,13p' "$0" >&2; exit 2; }
bad() { echo "seed_sweep: $*" >&2; usage; }
value() {  # value OPTION ARGC: the option needs a value
  [ "$2" -ge 2 ] || bad "$1 needs a value"
}
while [ $# -gt 0 ]; do
  case "$1" in
    --first) value "$1" $#; FIRST="$2"; shift 2 ;;
    --claims) value "$1" $#; CLAIMS="$2"; shift 2 ;;
    --gpu) GPU=1; shift ;;
    --bin) value "$1" $#; BIN="$2"; shift 2 ;;
    --jobs) value "$1" $#; JOBS="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    --) shift; EXTRA=("$@"); break ;;
    -*) bad "unknown option '$1'" ;;
    *) [ -z "$N" ] || bad "one N only ('$N', then '$1')"; N="$1"; shift ;;
  esac
done
# Decimal without leading zeros (bash would read 010 as octal), within int64 with room for N.
[[ "$N" =~ ^[1-9][0-9]{0,6}$ ]] && [ "$N" -le 1000000 ] || bad "N must be an integer from 1 to 1000000 (got '$N')"
[[ "$FIRST" =~ ^(0|[1-9][0-9]{0,18})$ ]] || bad "--first must be a decimal integer from 0 to 2^63-1 (got '$FIRST')"
# shellcheck disable=SC2071  # digit strings of equal length: string order is numeric order, and -gt would overflow
if [ ${#FIRST} -eq 19 ] && [[ "$FIRST" > "9223372036854775807" ]]; then
  bad "--first must be below 2^63 (got '$FIRST')"
fi
[ "$FIRST" -le $((9223372036854775807 - (N - 1))) ] || bad "--first + N - 1 must be below 2^63 (got --first $FIRST, N $N)"
[[ "$JOBS" =~ ^[1-9][0-9]{0,3}$ ]] || bad "--jobs must be an integer from 1 to 9999 (got '$JOBS')"
[[ "$CLAIMS" =~ ^[A-Za-z0-9_,]*$ ]] || bad "--claims must be claim ids separated by commas (got '$CLAIMS')"
[ -x "$BIN" ] || { echo "seed_sweep: no forge-verify at $BIN (build it, or --bin PATH)" >&2; exit 2; }

# The registry decides which claims run: unknown names are bad usage, and a GPU claim without
# --gpu is listed as not run instead of being run where it would only report not-run.
PLAN="$("$BIN" --list-claims-json | python3 -c '
import json, sys
gpu, asked = sys.argv[1] == "1", [c for c in sys.argv[2].split(",") if c]
reg = {c["id"]: c for c in json.load(sys.stdin)["claims"]}
unknown = [c for c in asked if c not in reg]
if unknown:
    print("unknown " + ",".join(unknown))
    sys.exit(0)
if not asked:
    asked = [c for c in reg if "--seed" in reg[c]["options"] and reg[c]["needs_gpu"] == gpu]
print("run " + ",".join(c for c in asked if gpu or not reg[c]["needs_gpu"]))
print("notrun " + ",".join(c for c in asked if not gpu and reg[c]["needs_gpu"]))' "$GPU" "$CLAIMS")" ||
  { echo "seed_sweep: cannot read the claim registry from $BIN" >&2; exit 2; }
case "$PLAN" in unknown\ *) bad "no such claim in the registry: ${PLAN#unknown }" ;; esac
CLAIMS="$(sed -n 's/^run //p' <<< "$PLAN")"
NOTRUN="$(sed -n 's/^notrun //p' <<< "$PLAN")"

DIR="${FH_SWEEP_DIR:-$(mktemp -d)}"
mkdir -p "$DIR"
# The options reach each run quoted, as given (never split again or globbed).
FH_SWEEP_EXTRA="$(printf '%q ' "${EXTRA[@]}")"
[ ${#EXTRA[@]} -gt 0 ] || FH_SWEEP_EXTRA=""
FH_SWEEP_GPU="$GPU"
export FH_SWEEP_EXTRA FH_SWEEP_GPU
echo "seed_sweep: claims ${CLAIMS:-none}; seeds $FIRST..$((FIRST + N - 1)); $JOBS at a time; options: ${FH_SWEEP_EXTRA:-none}; reports of failures in $DIR"
run_one() {  # claim seed -> one line "claim seed rc first-failure"
  local claim="$1" seed="$2" rep="$DIR/$1.seed$2.h5" log="$DIR/$1.seed$2.log" extra=()
  eval "extra=($FH_SWEEP_EXTRA)"  # printf %q's quoting, undone
  # With --gpu a GPU claim that finds no GPU exits 4 (not run), never 0.
  [ "$FH_SWEEP_GPU" = 1 ] && extra+=(--require-gpu)
  rm -f "$rep"  # a report of an earlier sweep into the same folder
  "$BIN" --claim "$claim" --seed "$seed" --quiet --report "$rep" "${extra[@]}" > "$log" 2>&1
  local rc=$?
  local first=""
  [ $rc -ne 0 ] && first="$(grep -m1 -E '^  .* fail ' "$log" | tr -s ' ' | cut -c1-160)"
  [ $rc -eq 2 ] && first="$(grep -m1 . "$log" | cut -c1-160)"
  [ $rc -eq 0 ] && rm -f "$rep" "$log"
  echo "$claim $seed $rc $first"
}
export -f run_one
export BIN DIR
RESULTS="$DIR/results.txt"
: > "$RESULTS"
IFS=, read -r -a claim_list <<< "$CLAIMS"
if [ ${#claim_list[@]} -gt 0 ]; then
  for c in "${claim_list[@]}"; do
    for ((i = 0; i < N; ++i)); do echo "$c $((FIRST + i))"; done  # FIRST + N itself may not fit
  done | xargs -r -P "$JOBS" -n 2 bash -c 'run_one "$0" "$1"' > "$RESULTS"
fi
# forge-verify's exit 2 is its refusal of the options: bad usage of the sweep, not failing seeds.
refused="$(awk '$3 == 2 {m = $0; sub(/^[^ ]+ [^ ]+ 2 ?/, "", m); printf "%s seed %s: %s", $1, $2, m; exit}' "$RESULTS")"
[ -z "$refused" ] || bad "forge-verify refused the run's options, nothing was judged ($refused)"
status=0 notrun=0
for c in "${claim_list[@]}"; do
  runs=$(awk -v c="$c" '$1 == c' "$RESULTS" | wc -l)
  bad=$(awk -v c="$c" '$1 == c && $3 != 0 && $3 != 4' "$RESULTS" | wc -l)
  nr=$(awk -v c="$c" '$1 == c && $3 == 4' "$RESULTS" | wc -l)
  printf "%-30s %4d seeds, %4d failing%s%s\n" "$c" "$runs" "$bad" "$([ "$nr" -eq 0 ] || echo ", $nr NOT RUN (no GPU)")" \
    "$([ "$runs" -eq "$N" ] || echo ", $((N - runs)) seeds NOT RUN (no result)")"
  [ "$runs" -eq "$N" ] || notrun=1
  awk -v c="$c" '$1 == c && $3 != 0 && $3 != 4 {printf "    seed %s: exit %s %s\n", $2, $3, substr($0, index($0, $4))}' "$RESULTS" | sort -n -k2 | head -20
  [ "$bad" -eq 0 ] || status=1
  [ "$nr" -eq 0 ] || notrun=1
done
IFS=, read -r -a notrun_list <<< "$NOTRUN"
for c in "${notrun_list[@]}"; do
  printf "%-30s NOT RUN: a GPU claim (--gpu sweeps GPU claims, on the runner)\n" "$c"
  notrun=1
done
if [ "$status" -ne 0 ]; then
  echo "seed_sweep: FAILURES (logs in $DIR)"
elif [ "$notrun" -ne 0 ]; then
  echo "seed_sweep: no failure among the runs that ran, but some claims did NOT RUN"
  status=4
else
  echo "seed_sweep: no failures"
fi
exit $status
