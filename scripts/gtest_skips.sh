#!/usr/bin/env bash
# The skipped tests of one GoogleTest log, and whether the GPU runner may accept them.
# A test that skips because the machine lacks what it needs (two GPUs on a one-GPU runner) says
# so with a skip message that starts with "not applicable: " (FH_NOT_APPLICABLE in
# suites/gpu/gpu_suite_util.h); any other skip (no GPU at all, a skip without a message, a skip
# outside a test) is one the runner could have run, so it is not accepted.
# Usage: scripts/gtest_skips.sh LOG
# Prints one line per skipped test, tab separated: not_applicable|skipped, test name, message
# (first line). Exit 0 when every skip (if any) is not applicable, 1 when any other skip is
# there, 2 when LOG cannot be read.
set -uo pipefail
LOG="${1:?usage: gtest_skips.sh LOG}"
[ -r "$LOG" ] && [ -f "$LOG" ] || { echo "gtest_skips: cannot read $LOG" >&2; exit 2; }
# GoogleTest prints a skip as "FILE:LINE: Skipped", the message on the next line, then
# "[  SKIPPED ] NAME (N ms)" when the test ends, and at the end "[  SKIPPED ] N tests, listed
# below:". A skipped test whose message does not start with the prefix, and any skip the
# closing count has beyond the tests seen, is "skipped".
awk '
  BEGIN { OFS = "\t"; listed = -1 }
  grab { if (msg == "") msg = $0; grab = 0 }
  /^\[ RUN      \] / { msg = ""; next }
  /: Skipped$/ { grab = 1; next }
  /^\[  SKIPPED \] .* \([0-9]+ ms\)$/ {
    name = $4; sub(/,$/, "", name)
    kind = (msg ~ /^not applicable: /) ? "not_applicable" : "skipped"
    print kind, name, msg
    seen++; if (kind == "skipped") other++
    next
  }
  /^\[  SKIPPED \] [0-9]+ tests?, listed below/ { listed = $4 + 0 }
  END {
    if (listed > seen) { print "skipped", "(" listed - seen " more)", "skips the log does not explain"; other++ }
    exit other > 0 ? 1 : 0
  }
' "$LOG"
