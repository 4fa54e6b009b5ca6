#!/usr/bin/env bash
# scripts/gate.sh's GPU part on made-up suites (no GPU): a gate whose cases pass, whose case fails,
# whose suite is missing, whose racecheck case reports a hazard, and a case the suite skips. Each
# failure must fail the gate (exit 1); only the all-clean run passes. Usage: test_gate_sh.sh
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
D=$(mktemp -d); trap 'rm -rf "$D"' EXIT
mkdir -p "$D/bin"
# A suite: prints GoogleTest's summary for the --gtest_filter it gets; FAKE_FAIL / FAKE_SKIP name a case.
cat > "$D/bin/test_fake" <<'S'
#!/usr/bin/env bash
f="${1#--gtest_filter=}"; n=0; bad=0; skip=0
for c in ${f//:/ }; do
  echo "[ RUN      ] $c"
  if [ "$c" = "${FAKE_FAIL:-}" ]; then echo "[  FAILED  ] $c (1 ms)"; bad=1
  elif [ "$c" = "${FAKE_SKIP:-}" ]; then echo "[  SKIPPED ] $c (0 ms)"; skip=$((skip + 1))
  else echo "[       OK ] $c (1 ms)"; n=$((n + 1)); fi
done
echo "[  PASSED  ] $n tests."
[ "$skip" = 0 ] || echo "[  SKIPPED ] $skip tests, listed below:"
exit $bad
S
# A sanitizer: runs the suite; FAKE_RACE=1 reports a hazard and exits with --error-exitcode's value.
cat > "$D/sanitizer" <<'S'
#!/usr/bin/env bash
while [ "${1#--}" != "$1" ]; do case "$1" in --error-exitcode) code=$2; shift ;; --tool|--racecheck-report) shift ;; esac; shift; done
"$@"; rc=$?
[ "${FH_SMOKE_NO_CUBLAS:-}" = 1 ] || { echo "racecheck without FH_SMOKE_NO_CUBLAS=1"; exit 1; }
if [ "${FAKE_RACE:-0}" = 1 ]; then echo "========= Error: Race reported between Write access and Read access"; exit "$code"; fi
exit $rc
S
chmod +x "$D/bin/test_fake" "$D/sanitizer"
cat > "$D/gate.json" <<'S'
{"made_by": "scripts/gate.py select", "matrices": [], "cpu": {"tests": [], "seconds": 0},
 "gpu": {"suites": {"test_fake": ["A.one", "A.two", "racecheck:A.smoke"]}, "seconds": 1},
 "covers": {}, "not_covered": {}}
S
export FH_GATE="$D/gate.json" FH_COMPUTE_SANITIZER="$D/sanitizer"
FAILS=0
expect() {  # expect WANT_RC LABEL [VAR=VALUE ...] -- gate.sh's exit for that environment
  local want=$1 label=$2; shift 2
  env "$@" bash "$ROOT/scripts/gate.sh" --gpu "$D/bin" > "$D/log" 2>&1; local rc=$?
  if [ "$rc" != "$want" ]; then echo "test_gate_sh: $label: exit $rc, want $want"; cat "$D/log"; FAILS=1
  else echo "test_gate_sh: $label: exit $rc ok"; fi
}
expect 0 "every case passes, the racecheck case clean" X=0
grep -q "racecheck test_fake A.smoke: clean" "$D/log" || { echo "test_gate_sh: the racecheck case did not run"; FAILS=1; }
grep -q "test_fake: 2 cases passed" "$D/log" || { echo "test_gate_sh: the plain cases were not run as two"; FAILS=1; }
expect 1 "a case fails" FAKE_FAIL=A.two
expect 1 "a case skips" FAKE_SKIP=A.one
expect 1 "the racecheck case reports a hazard" FAKE_RACE=1
mv "$D/bin/test_fake" "$D/test_fake.away"
expect 1 "the suite is missing" X=0
mv "$D/test_fake.away" "$D/bin/test_fake"
exit $FAILS
