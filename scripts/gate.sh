#!/usr/bin/env bash
# The gate (issue 32): the CPU tests and GPU cases in suites/mutation/gate.json, which
# scripts/gate.py select chose from the kill matrices as the cheapest set that kills every mutant
# the full suites kill. The command a kernel change runs first; the full suites still follow.
# Usage: scripts/gate.sh [--cpu] [--gpu BIN_DIR]
#   --cpu          build (incrementally) and run the gate's CTest tests (the default without options)
#   --gpu BIN_DIR  on the runner: run the gate's cases of each GPU suite in BIN_DIR (the bundle's bin/),
#                  its racecheck cases under compute-sanitizer (FH_COMPUTE_SANITIZER names another)
# Env: FH_BUILD_DIR (build), FH_GATE (suites/mutation/gate.json), FH_JOBS (the cores).
# A listed test or case that is missing, skipped or not run fails the gate (exit 1), never passes it.
# Exit: 0 every part passed; 1 a part failed or did not run in full; 2 bad usage.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${FH_BUILD_DIR:-$ROOT/build}"
GATE="${FH_GATE:-$ROOT/suites/mutation/gate.json}"
JOBS="${FH_JOBS:-$(nproc)}"
CPU=0 GPU=""
while [ $# -gt 0 ]; do
  case "$1" in
    --cpu) CPU=1 ;;
    --gpu) GPU="${2:?gate.sh: --gpu needs the folder of the GPU suites}"; shift ;;
    *) echo "gate.sh: unknown option $1 (usage: gate.sh [--cpu] [--gpu BIN_DIR])" >&2; exit 2 ;;
  esac
  shift
done
[ "$CPU" = 1 ] || [ -n "$GPU" ] || CPU=1
gate() { python3 "$ROOT/scripts/gate.py" list "$@" --gate "$GATE"; }
gate cpu > /dev/null || exit 2
python3 "$ROOT/scripts/gate.py" check --gate "$GATE" || echo "gate.sh: the gate predates some catalog mutants (above); it still runs"
FAILED=0

if [ "$CPU" = 1 ]; then
  [ -f "$BUILD/CTestTestfile.cmake" ] || { echo "gate.sh: $BUILD is not a configured build (scripts/build.sh makes one)" >&2; exit 2; }
  REGEX="$(gate cpu)"
  WANT=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["cpu"]["tests"]))' "$GATE")
  T0=$(date +%s)
  cmake --build "$BUILD" -j "$JOBS" > "$BUILD/gate_build.log" 2>&1 || { echo "gate.sh: the build failed ($BUILD/gate_build.log)"; exit 1; }
  T1=$(date +%s)
  HAVE=$(ctest --test-dir "$BUILD" -N -R "$REGEX" | sed -n 's/^Total Tests: //p')
  if [ "$WANT" -gt 0 ]; then
    ctest --test-dir "$BUILD" -R "$REGEX" -j "$JOBS" --output-on-failure > "$BUILD/gate_cpu.log" 2>&1
    RC=$?
    SKIPPED=$(grep -c '(Skipped)\|\*\*\*Not Run\|Disabled' "$BUILD/gate_cpu.log")
    grep -E '^ *[0-9]+/[0-9]+ Test' "$BUILD/gate_cpu.log"
  else
    RC=0 SKIPPED=0
  fi
  T2=$(date +%s)
  if [ "$HAVE" != "$WANT" ] || [ "$RC" != 0 ] || [ "$SKIPPED" != 0 ]; then
    echo "gate.sh: CPU part FAILED: exit $RC, $HAVE of $WANT gate tests in this build, $SKIPPED skipped or not run ($BUILD/gate_cpu.log)"
    FAILED=1
  else
    echo "gate.sh: CPU part passed: $WANT tests in $((T2 - T1)) s (build $((T1 - T0)) s, $JOBS jobs)"
  fi
fi

if [ -n "$GPU" ]; then
  T0=$(date +%s)
  for SUITE in $(python3 -c 'import json,sys; print(" ".join(sorted(json.load(open(sys.argv[1]))["gpu"]["suites"])))' "$GATE"); do
    FILTER="$(gate gpu "$SUITE")"
    WANT=$(echo "$FILTER" | tr ':' '\n' | grep -c .)
    LOG="$(mktemp)"
    if [ ! -x "$GPU/$SUITE" ]; then
      echo "gate.sh: GPU part: $GPU/$SUITE missing: $WANT cases not run"; FAILED=1; continue
    fi
    S0=$(date +%s)
    if [ "$WANT" -gt 0 ]; then "$GPU/$SUITE" --gtest_filter="$FILTER" > "$LOG" 2>&1; RC=$?
    else RC=0; : > "$LOG"; fi
    PASSED=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$LOG" | tail -1)
    SKIPPED=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' "$LOG" | tail -1)
    if [ "$RC" != 0 ] || [ "${PASSED:-0}" != "$WANT" ] || [ "${SKIPPED:-0}" != 0 ]; then
      echo "gate.sh: GPU part: $SUITE FAILED: exit $RC, ${PASSED:-0} of $WANT cases passed, ${SKIPPED:-0} skipped"
      grep -E '^\[  FAILED  \]|^\[  SKIPPED \]' "$LOG" | head -20
      FAILED=1
    else
      echo "gate.sh: GPU part: $SUITE: $WANT cases passed in $(( $(date +%s) - S0 )) s"
    fi
    rm -f "$LOG"
    # The suite's racecheck cases: one case each under compute-sanitizer racecheck; a hazard fails.
    # Without cuBLAS in the sanitizer smoke, as scripts/mutate_gpu.py measured them.
    for CASE in $(gate racecheck "$SUITE" | tr ':' ' '); do
      S0=$(date +%s)
      FH_SMOKE_NO_CUBLAS=1 "${FH_COMPUTE_SANITIZER:-compute-sanitizer}" --tool racecheck --racecheck-report hazard --error-exitcode 97 \
        "$GPU/$SUITE" --gtest_filter="$CASE" > "$LOG" 2>&1
      RC=$?
      if [ "$RC" != 0 ] || ! grep -q '^\[  PASSED  \] 1 test' "$LOG"; then
        echo "gate.sh: GPU part: racecheck $SUITE $CASE FAILED: exit $RC"; grep -m5 -i 'hazard\|error' "$LOG"; FAILED=1
      else
        echo "gate.sh: GPU part: racecheck $SUITE $CASE: clean in $(( $(date +%s) - S0 )) s"
      fi
      rm -f "$LOG"
    done
  done
  echo "gate.sh: GPU part took $(( $(date +%s) - T0 )) s"
fi
[ "$FAILED" = 0 ] && echo "gate.sh: passed" || echo "gate.sh: FAILED"
exit "$FAILED"
