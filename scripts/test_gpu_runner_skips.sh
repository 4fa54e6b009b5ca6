#!/usr/bin/env bash
# CTest gpu_runner_skips: how scripts/gpu_runner.sh judges skipped GPU tests, with no build and no
# GPU. A skip the machine cannot avoid ("not applicable: needs 2 GPUs, 1 visible") is listed and
# passes; any other skip fails the run, alone or beside a not-applicable one (FH_ALLOW_SKIP=1
# still accepts it). First scripts/gtest_skips.sh on fake GoogleTest logs, then gpu_runner.sh
# end to end on a fake bundle whose suite binary prints such a log.
# Usage: scripts/test_gpu_runner_skips.sh
set -uo pipefail
shopt -s lastpipe  # the checks run at the end of pipelines; their failures must count here
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

# A GoogleTest log: one line per test, "pass NAME", "na NAME" (skipped as not applicable) or
# "skip NAME MESSAGE" (any other skip), in GoogleTest's own layout.
fake_log() {
  local kind name msg n_pass=0 skipped=()
  echo "[==========] Running some tests from 1 test suite."
  while read -r kind name msg; do
    echo "[ RUN      ] $name"
    case $kind in
      pass) echo "[       OK ] $name (1 ms)"; n_pass=$((n_pass + 1)); continue;;
      na) printf '/src/suites/gpu/test_x.cu:34: Skipped\nnot applicable: needs 2 GPUs, 1 visible\n';;
      skip) printf '/src/suites/gpu/test_x.cu:20: Skipped\n%s\n' "$msg";;
    esac
    echo "[  SKIPPED ] $name (0 ms)"
    skipped+=("$name")
  done
  echo "[==========] tests ran. (3 ms total)"
  echo "[  PASSED  ] $n_pass tests."
  if [ ${#skipped[@]} -gt 0 ]; then
    echo "[  SKIPPED ] ${#skipped[@]} tests, listed below:"
    printf '[  SKIPPED ] %s\n' "${skipped[@]}"
  fi
}

# ---- scripts/gtest_skips.sh: exit code and the kinds it prints ----
classify() {  # name, wanted exit code, wanted "kind name" lines (sorted, space separated); log on stdin
  local what="$1" want_rc="$2" want="$3" got rc
  cat > "$T/log"
  got="$(bash "$ROOT/scripts/gtest_skips.sh" "$T/log")"; rc=$?
  local kinds; kinds="$(awk -F'\t' '{print $1 " " $2}' <<< "$got" | sed '/^ $/d' | sort | tr '\n' ' ' | sed 's/ $//')"
  if [ "$rc" -ne "$want_rc" ]; then fail "$what: exit $rc, want $want_rc ($got)"
  elif [ "$kinds" != "$want" ]; then fail "$what: printed '$kinds', want '$want'"
  else ok "$what"; fi
}
printf 'pass A.a\npass A.b\n' | fake_log | classify "no skip passes" 0 ""
printf 'pass A.a\nna A.b\nna A.c\n' | fake_log | classify "not-applicable skips pass" 0 \
  "not_applicable A.b not_applicable A.c"
printf 'pass A.a\nskip A.b no GPU: cudaErrorNoDevice\n' | fake_log | classify "another skip fails" 1 "skipped A.b"
printf 'na A.a\nskip A.b no GPU: x\n' | fake_log | classify "both together fail" 1 "not_applicable A.a skipped A.b"
printf 'skip A.a NCCL ranks need at least 2 GPUs; 1 visible\n' | fake_log |
  classify "a need said in free text, without the prefix, fails" 1 "skipped A.a"
printf 'skip A.a not applicable\n' | fake_log | classify "the prefix without its colon fails" 1 "skipped A.a"
# A skip that GoogleTest counts but no test explains (a whole suite skipped in its set-up).
{ printf 'na A.a\n' | fake_log; echo "[  SKIPPED ] 3 tests, listed below:"; } |
  classify "unexplained skips in the closing count fail" 1 "not_applicable A.a skipped (2 more)"
# The recorded one-GPU log of the NCCL suite (before the prefix): its skips are not accepted.
classify "recorded NCCL log (free-text skips) fails" 1 \
  "skipped NcclCollectives.EqualSimulatedRanksBitForBit skipped NcclCollectives.ShardedLayerOnNcclGathersToTheUnshardedUpdate" \
  < "$ROOT/docs/sharding_gpu/test_nccl_collectives_1gpu.log"
bash "$ROOT/scripts/gtest_skips.sh" "$T/nosuch.log" 2>/dev/null
[ $? -eq 2 ] && ok "an unreadable log is exit 2" || fail "an unreadable log is not exit 2"

# ---- gpu_runner.sh end to end: a bundle with one fake suite that prints the log ----
runner() {  # name, wanted exit code, wanted SUMMARY line (grep -E), env assignments...; plan on stdin
  local what="$1" want_rc="$2" want_line="$3"; shift 3
  rm -rf "$T/b" "$T/out"; mkdir -p "$T/b/fh_gpu_bundle/bin"
  fake_log > "$T/b/suite.log"
  printf '#!/bin/sh\ncat "%s"\n' "$T/b/suite.log" > "$T/b/fh_gpu_bundle/bin/test_gpu_fake"
  chmod +x "$T/b/fh_gpu_bundle/bin/test_gpu_fake"
  printf 'git_revision=test\nbinaries=test_gpu_fake\ngpu_suites=test_gpu_fake\n' > "$T/b/fh_gpu_bundle/MANIFEST"
  tar -C "$T/b" -cf "$T/b/bundle.tar" fh_gpu_bundle
  env FH_BUNDLE="$T/b/bundle.tar" FH_SKIP_BENCH=1 FH_SKIP_VERIFY=1 FH_SKIP_TORCH=1 "$@" \
    bash "$ROOT/scripts/gpu_runner.sh" "$T/out" > "$T/runner.log" 2>&1
  local rc=$?
  if [ "$rc" -ne "$want_rc" ]; then fail "gpu_runner, $what: exit $rc, want $want_rc"; cat "$T/out/SUMMARY.txt" >&2
  elif ! grep -qE "$want_line" "$T/out/SUMMARY.txt"; then fail "gpu_runner, $what: SUMMARY.txt lacks /$want_line/"; cat "$T/out/SUMMARY.txt" >&2
  else ok "gpu_runner, $what"; fi
}
printf 'pass N.a\nna N.b\nna N.c\n' | runner "a 2-GPU suite on a 1-GPU runner passes" 0 \
  "^suite test_gpu_fake: PASS, 2 test\(s\) not applicable: needs 2 GPUs, 1 visible"
printf 'pass N.a\nna N.b\n' | runner "the not-applicable test is listed" 0 "^    N\.b: not applicable: needs 2 GPUs, 1 visible$"
printf 'pass N.a\nskip N.b no GPU: x\n' | runner "a skipped suite fails the run" 1 "^suite test_gpu_fake: FAIL, 1 test\(s\) SKIPPED: no GPU: x"
printf 'na N.a\nskip N.b no GPU: x\n' | runner "both together fail the run" 1 "^== overall: FAIL"
printf 'pass N.a\nskip N.b no GPU: x\n' | runner "FH_ALLOW_SKIP=1 accepts any skip" 0 "^== overall: PASS" FH_ALLOW_SKIP=1

[ "$fails" -eq 0 ] || { echo "test_gpu_runner_skips: $fails check(s) failed" >&2; exit 1; }
echo "test_gpu_runner_skips: all checks passed"
