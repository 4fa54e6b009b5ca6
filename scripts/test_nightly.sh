#!/usr/bin/env bash
# CTest nightly_promotion (issue 19): scripts/nightly.sh end to end on a CPU-only machine, with a
# bundle holding only the given forge-verify and a few CPU claims (FH_ALLOW_SKIP=1: no GPU
# here). The first run becomes the baseline; a second identical run diffs clean and is
# promoted; a run with a planted throwing claim, and a run that lost a claim, regress and leave
# the baseline byte for byte as it was. Each run writes the summary page.
# Usage: scripts/test_nightly.sh PATH/TO/forge-verify
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
FV="${1:?usage: test_nightly.sh FORGE_VERIFY}"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
fail() { echo "test_nightly: FAIL: $*" >&2; exit 1; }

mkdir -p "$T/fh_gpu_bundle/bin"
cp "$FV" "$T/fh_gpu_bundle/bin/forge-verify"
printf 'git_revision=test\nbinaries=forge-verify\ngpu_suites=\n' > "$T/fh_gpu_bundle/MANIFEST"
tar -C "$T" -cf "$T/bundle.tar" fh_gpu_bundle
export FH_BUNDLE="$T/bundle.tar" FH_ALLOW_SKIP=1 FH_SKIP_SUITES=1 FH_SKIP_BENCH=1 FH_SKIP_TORCH=1
export FH_NIGHTLY_FUZZ_SECONDS=0  # the fuzz stage is scripts/fuzz.sh's (CI runs it); here: promotion
claims="--claim int8_codec_bound,sr_exact_mean"
nightly() {  # outdir, then env assignments
  local out="$1"; shift
  env "$@" bash "$ROOT/scripts/nightly.sh" "$T/$out" "$T/base" > "$T/$out.log" 2>&1
}

FH_VERIFY_ARGS="$claims" nightly n1; rc=$?
[ $rc -eq 0 ] || { cat "$T/n1.log"; fail "first run: rc $rc, want 0 (promoted as the first baseline)"; }
[ -f "$T/base/forge-verify.h5" ] || fail "first run promoted no baseline"
[ -s "$T/n1/page/index.html" ] || fail "first run wrote no page"
grep -q "no baseline" "$T/n1/NIGHTLY.txt" || fail "first run did not say it had no baseline"

FH_VERIFY_ARGS="$claims" nightly n2; rc=$?
[ $rc -eq 0 ] || { cat "$T/n2.log"; fail "identical second run: rc $rc, want 0"; }
grep -q "nothing regressed" "$T/n2/NIGHTLY.txt" || fail "second run: no clean diff in NIGHTLY.txt"
[ -f "$T/n2/run/diff.json" ] || fail "second run: no diff.json"
grep -q "n2/run" "$T/base/PROMOTED.txt" || fail "second run was not promoted"
cp "$T/base/forge-verify.h5" "$T/kept.h5"

nightly n3 FH_VERIFY_ARGS="$claims" FH_PLANT_THROWING_CLAIM=sr_exact_mean; rc=$?
[ $rc -eq 1 ] || { cat "$T/n3.log"; fail "planted throwing claim: rc $rc, want 1"; }
grep -q "REGRESSED" "$T/n3/NIGHTLY.txt" || fail "planted throwing claim: the diff did not regress"
grep -q "NOT promoted" "$T/n3/NIGHTLY.txt" || fail "planted throwing claim: promoted"
cmp -s "$T/kept.h5" "$T/base/forge-verify.h5" || fail "a regressed run changed the baseline"
[ -s "$T/n3/page/index.html" ] || fail "a regressed run wrote no page"

FH_VERIFY_ARGS="--claim int8_codec_bound" nightly n4; rc=$?
[ $rc -eq 1 ] || { cat "$T/n4.log"; fail "lost claim: rc $rc, want 1"; }
grep -q "disappeared sr_exact_mean" "$T/n4/run/diff.txt" || fail "lost claim not named in diff.txt"
cmp -s "$T/kept.h5" "$T/base/forge-verify.h5" || fail "a regressed run changed the baseline"
echo "test_nightly: 4 nightly runs as expected (first baseline, clean promotion, two regressions refused)"
