#!/usr/bin/env bash
# CTest seed_discipline: the one run seed is printed once, reaches the report and the test
# binaries, and a failure names it. Exits non-zero naming each failed expectation.
# Usage: test_seed_discipline.sh PATH/TO/forge-verify PATH/TO/test_seed_streams
set -u
FV=${1:?usage: test_seed_discipline.sh FORGE_VERIFY TEST_SEED_STREAMS}
TS=${2:?usage: test_seed_discipline.sh FORGE_VERIFY TEST_SEED_STREAMS}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }

# forge-verify: "seed: 0x..." once on stderr, before the first claim; /meta keeps the seed.
"$FV" --claim sr_exact_mean --seed 0x10 --report "$T/r.h5" >"$T/fv.out" 2>"$T/fv.err" || fail "forge-verify --seed 0x10 failed: $(cat "$T/fv.err")"
[ "$(grep -c '^seed: ' "$T/fv.err")" = 1 ] || fail "forge-verify printed its seed $(grep -c '^seed: ' "$T/fv.err") times, not once"
grep -q '^seed: 0x0000000000000010 ' "$T/fv.err" || fail "forge-verify did not print 'seed: 0x0000000000000010': $(head -3 "$T/fv.err")"
[ "$(grep -n -m1 '^seed: ' "$T/fv.err" | cut -d: -f1)" -lt "$(grep -n -m1 '^\[1/' "$T/fv.err" | cut -d: -f1)" ] 2>/dev/null ||
  fail "forge-verify's seed line does not come before its first claim"
if command -v h5dump >/dev/null; then
  h5dump -a /meta/seed "$T/r.h5" 2>/dev/null | grep -q '"16"' || fail "/meta/seed is not \"16\""
fi
"$FV" --claim sr_exact_mean --seed 0x10 --quiet --report "$T/q.h5" >/dev/null 2>"$T/q.err" || fail "forge-verify --quiet failed"
[ ! -s "$T/q.err" ] || fail "--quiet still printed on stderr: $(cat "$T/q.err")"

# A test binary: the run seed from --seed=N or FH_SEED, printed once as its first line.
env -u FH_SEED "$TS" --seed=0x10 --gtest_filter='SeedStreams.*' >"$T/ts.out" 2>&1 || fail "test_seed_streams --seed=0x10 failed: $(tail -5 "$T/ts.out")"
[ "$(head -1 "$T/ts.out" | cut -c1-24)" = "seed: 0x0000000000000010" ] || fail "--seed=0x10: first line is '$(head -1 "$T/ts.out")'"
FH_SEED=17 "$TS" --gtest_filter='SeedStreams.*' >"$T/env.out" 2>&1 || fail "FH_SEED=17 failed"
[ "$(head -1 "$T/env.out" | cut -c1-24)" = "seed: 0x0000000000000011" ] || fail "FH_SEED=17: first line is '$(head -1 "$T/env.out")'"
env -u FH_SEED "$TS" --gtest_filter='SeedStreams.*' >"$T/def.out" 2>&1 || fail "no seed given: failed"
head -1 "$T/def.out" | grep -q "^seed: each test's fixed seed" || fail "no seed given: first line is '$(head -1 "$T/def.out")'"
for bad in --seed=12x --seed=-1; do
  env -u FH_SEED "$TS" "$bad" >"$T/bad.out" 2>&1; rc=$?
  [ "$rc" = 2 ] && grep -q -- "--seed is not an unsigned integer" "$T/bad.out" || fail "$bad: rc $rc (want 2 and a message): $(cat "$T/bad.out")"
done
FH_SEED=zz "$TS" >"$T/bad.out" 2>&1; rc=$?
[ "$rc" = 2 ] && grep -q "FH_SEED is not an unsigned integer" "$T/bad.out" || fail "FH_SEED=zz: rc $rc (want 2 and a message)"

# A failure names its seed (the planted failing test, disabled in normal runs).
env -u FH_SEED "$TS" --gtest_also_run_disabled_tests --gtest_filter='SeedStreams.DISABLED_PlantedFailureNamesItsSeed' >"$T/pl.out" 2>&1 &&
  fail "the planted failure passed"
grep -q "^seed: this test drew 0x000000000000007b; FH_SEED=0x000000000000007b" "$T/pl.out" ||
  fail "the planted failure does not name its seed: $(cat "$T/pl.out")"

[ "$FAILS" = 0 ] && echo "seed_discipline: every expectation held" && exit 0
echo "seed_discipline: $FAILS expectation(s) failed"
exit 1
