#!/usr/bin/env bash
# Runs the seed-dependent claims over N seeds and reports the failures per claim (issue 15).
# A claim is seed-dependent when its registry row honours --seed (forge-verify
# --list-claims-json); GPU claims are swept only with --gpu (on the runner).
# Usage: scripts/seed_sweep.sh N [--first S] [--claims a,b,...] [--gpu] [--bin PATH] [--jobs J] [-- ARGS...]
#   N        seeds S .. S+N-1 (S = --first, default 1)
#   --claims only these claims (default: every seed-dependent CPU claim, or GPU claim with --gpu)
#   ARGS     further forge-verify options for every run (for example --shape 64x96x40)
# Exit status: 0 when no run failed, 1 when any did, 2 for bad usage. Each failing
# (claim, seed) is listed with the first failing check; reports of failing runs are kept in
# $FH_SWEEP_DIR (default: a temporary folder, printed).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
EXTRA=()
N="" FIRST=1 CLAIMS="" GPU=0 BIN="${FH_FORGE_VERIFY:-$ROOT/build/forge-verify}" JOBS="${FH_JOBS:-$(nproc)}"
usage() { sed -n '2,11p' "$0" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --first) FIRST="${2:?}"; shift 2 ;;
    --claims) CLAIMS="${2:?}"; shift 2 ;;
    --gpu) GPU=1; shift ;;
    --bin) BIN="${2:?}"; shift 2 ;;
    --jobs) JOBS="${2:?}"; shift 2 ;;
    -h|--help) usage ;;
    --) shift; EXTRA=("$@"); break ;;
    *) [ -z "$N" ] || usage; N="$1"; shift ;;
  esac
done
[[ "$N" =~ ^[1-9][0-9]*$ ]] || { echo "seed_sweep: N must be a positive integer" >&2; usage; }
[[ "$FIRST" =~ ^[0-9]+$ ]] || { echo "seed_sweep: --first must be a non-negative integer" >&2; exit 2; }
[[ "$JOBS" =~ ^[1-9][0-9]*$ ]] || { echo "seed_sweep: --jobs must be a positive integer" >&2; exit 2; }
[ -x "$BIN" ] || { echo "seed_sweep: no forge-verify at $BIN (build it, or --bin PATH)" >&2; exit 2; }
if [ -z "$CLAIMS" ]; then
  CLAIMS="$("$BIN" --list-claims-json | python3 -c '
import json, sys
gpu = sys.argv[1] == "1"
print(",".join(c["id"] for c in json.load(sys.stdin)["claims"] if "--seed" in c["options"] and c["needs_gpu"] == gpu))' "$GPU")" ||
    { echo "seed_sweep: cannot read the claim registry from $BIN" >&2; exit 2; }
fi
DIR="${FH_SWEEP_DIR:-$(mktemp -d)}"
mkdir -p "$DIR"
FH_SWEEP_EXTRA="${EXTRA[*]:-}"
export FH_SWEEP_EXTRA
echo "seed_sweep: claims $CLAIMS; seeds $FIRST..$((FIRST + N - 1)); $JOBS at a time; options: ${FH_SWEEP_EXTRA:-none}; reports of failures in $DIR"
run_one() {  # claim seed -> one line "claim seed rc first-failure"
  local claim="$1" seed="$2" rep="$DIR/$1.seed$2.h5" log="$DIR/$1.seed$2.log"
  rm -f "$rep"  # a report of an earlier sweep into the same folder
  # shellcheck disable=SC2086  # FH_SWEEP_EXTRA is a word list of forge-verify options
  "$BIN" --claim "$claim" --seed "$seed" --quiet --report "$rep" $FH_SWEEP_EXTRA > "$log" 2>&1
  local rc=$?
  local first=""
  [ $rc -ne 0 ] && first="$(grep -m1 -E '^  .* fail ' "$log" | tr -s ' ' | cut -c1-160)"
  [ $rc -eq 0 ] && rm -f "$rep" "$log"
  echo "$claim $seed $rc $first"
}
export -f run_one
export BIN DIR
RESULTS="$DIR/results.txt"
IFS=, read -r -a claim_list <<< "$CLAIMS"
for c in "${claim_list[@]}"; do
  for ((s = FIRST; s < FIRST + N; ++s)); do echo "$c $s"; done
done | xargs -P "$JOBS" -n 2 bash -c 'run_one "$0" "$1"' > "$RESULTS"
status=0
for c in "${claim_list[@]}"; do
  runs=$(awk -v c="$c" '$1 == c' "$RESULTS" | wc -l)
  bad=$(awk -v c="$c" '$1 == c && $3 != 0' "$RESULTS" | wc -l)
  printf "%-30s %4d seeds, %4d failing\n" "$c" "$runs" "$bad"
  awk -v c="$c" '$1 == c && $3 != 0 {printf "    seed %s: exit %s %s\n", $2, $3, substr($0, index($0, $4))}' "$RESULTS" | sort -n -k2 | head -20
  [ "$bad" -eq 0 ] || status=1
done
[ "$status" -eq 0 ] && echo "seed_sweep: no failures" || echo "seed_sweep: FAILURES (logs in $DIR)"
exit $status
