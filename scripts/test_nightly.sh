#!/usr/bin/env bash
# CTest nightly_promotion: scripts/nightly.sh end to end on a CPU-only machine, with a
# bundle holding only the given forge-verify and a few CPU claims (FH_ALLOW_SKIP=1: no GPU
# here). The first run becomes the baseline; a second identical run diffs clean and is
# promoted; a run with a planted throwing claim, and a run that lost a claim, regress and leave
# the baseline byte for byte as it was; a run that refutes a finding is promoted, and the next,
# where that finding is confirmed, regresses. Each run writes the summary page.
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

# Findings (DESIGN contract 7): ext_layer_speed's faster_than_torch_fused judges the release. A run
# whose external path is slower refutes it and is promoted all the same (a refutation is not a
# failure); the next run, where that path is faster, turns the refutation into a confirmation:
# a changed finding, so the diff regresses, NIGHTLY.txt says FINDING CHANGED, and the baseline
# stays. Planted defects: removing "faster_than_torch_fused" from ext_layer_speed's findings in
# suites/claims/registry.cpp (n5 fails and is not promoted); report_diff.cpp's
# `finding ? judged(b.verdict) || ...` made `finding ? false` (n6 is promoted).
# timing_*.json: one layer timed, 200 us (torch), 260 or 180 us (tma); copied into $T, whose path
# has no blank (FH_VERIFY_ARGS is split on blanks).
cp "$ROOT"/scripts/testdata/timing_*.json "$T/"
speed="$claims,ext_layer_speed --external-timing $T/timing_torch_reference.json --external-timing"
FH_VERIFY_ARGS="$speed $T/timing_tma_slow.json" nightly n5; rc=$?
[ $rc -eq 0 ] || { cat "$T/n5.log"; fail "a run whose only non-pass is a refutation: rc $rc, want 0 (promoted)"; }
grep -q "n5/run" "$T/base/PROMOTED.txt" || fail "a run with a refuted finding was not promoted"
grep -q "findings: 1 refuted" "$T/n5/NIGHTLY.txt" || fail "NIGHTLY.txt does not list the refuted finding"
cp "$T/base/forge-verify.h5" "$T/kept.h5"

FH_VERIFY_ARGS="$speed $T/timing_tma_fast.json" nightly n6; rc=$?
[ $rc -eq 1 ] || { cat "$T/n6.log"; fail "a refutation turned into a confirmation: rc $rc, want 1"; }
grep -q "FINDING CHANGED" "$T/n6/NIGHTLY.txt" || fail "a changed finding is not flagged in NIGHTLY.txt"
grep -Eq "^REGRESSION finding ext_layer_speed/tma.4096x4096x512/faster_than_torch_fused .*refuted -> confirmed" \
  "$T/n6/run/diff.txt" || fail "diff.txt does not name the changed finding"
grep -q "NOT promoted" "$T/n6/NIGHTLY.txt" || fail "a changed finding was promoted"
cmp -s "$T/kept.h5" "$T/base/forge-verify.h5" || fail "a run with a changed finding changed the baseline"
echo "test_nightly: 6 nightly runs as expected (first baseline, clean promotion, two regressions refused," \
  "a refutation promoted, a changed finding refused)"
