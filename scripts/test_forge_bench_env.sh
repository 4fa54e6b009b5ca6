#!/usr/bin/env bash
# CTest forge_bench_bad_schedule_env: forge-bench's fused-schedule settings (FH_FUSED_*) are checked
# at the door, GPU or not: a value that is not an integer of int's range, or outside
# set_fused_schedule's range, is exit 2 with a message naming it; a good value passes the door.
# Usage: scripts/test_forge_bench_env.sh FORGE_BENCH
set -uo pipefail
[ $# -eq 1 ] && [ -x "$1" ] || { echo "usage: test_forge_bench_env.sh FORGE_BENCH" >&2; exit 2; }
BIN="$1"
fails=0
for bad in FH_FUSED_COOP_MIN_TOKENS=abc FH_FUSED_COOP_MIN_TOKENS=-1 FH_FUSED_COOP_MIN_TOKENS=99999999999 \
           FH_FUSED_COOP_MIN_TOKENS= FH_FUSED_STAGGER_US=2000000 FH_FUSED_STAGGER_STRIDE=1x \
           FH_FUSED_COOP_MIN_TOKENS_INT8=-5 FH_FUSED_COOP_MIN_TOKENS_INT8=8k \
           FH_FUSED_COOP_STAGGER_US=-3 FH_FUSED_COOP_STAGGER_US=2e1 FH_FUSED_COOP_STAGGER_GROUPS=0 \
           FH_FUSED_COOP_GROUP_ROWS=0 FH_FUSED_COOP_GROUP_ROWS=8x FH_FUSED_COOP_L2G_MIN_TOKENS=-1 \
           FH_FUSED_COOP_L2G_MIN_TOKENS=8k FH_FUSED_COOP_L2G_MIN_TOKENS_LIGHT=-1 \
           FH_FUSED_COOP_L2G_LIGHT_MIN_TILES=0 FH_FUSED_COOP_L2G_EPILOGUE_WARPS=4 \
           FH_FUSED_COOP_L2G_EPILOGUE_ROWS=12 FH_FUSED_COOP_L2G_EPILOGUE_ROWS=7x \
           FH_FUSED_COOP_L2G_EPILOGUE_ROWS_16K=136 FH_FUSED_COOP_L2G_MIN_TOKENS_INT8=-1 \
           FH_FUSED_COOP_L2G_EPILOGUE_ROWS_FP=0 FH_FUSED_COOP_L2G_EPILOGUE_ROWS_FP=100 \
           FH_FUSED_COOP_L2G_G_SLICES=0 FH_FUSED_COOP_L2G_G_SLICES=3 FH_FUSED_COOP_L2G_G_SLICES=2x \
           FH_FUSED_COOP_L2G_STAGED=2 FH_FUSED_COOP_L2G_STAGED=-1 FH_FUSED_COOP_L2G_STAGED=on \
           FH_FUSED_COOP_SPLIT_MAX=0 FH_FUSED_COOP_SPLIT_MAX=17 FH_FUSED_COOP_SPLIT_MIN_TOKENS=-1 \
           FH_FUSED_COOP_SPLIT_OVERHEAD_CHUNKS=-1 FH_FUSED_COOP_SPLIT_GAIN_PCT=100 \
           FH_FUSED_COOP_SPLIT_UNIT_CHUNKS=-2 FH_FUSED_COOP_SPLIT_MIN_SLICE_TOKENS=-1 \
           FH_FUSED_COOP_ILV_MIN_TOKENS=-1 FH_FUSED_COOP_ILV_MIN_TOKENS=2k; do
  name="${bad%%=*}"
  out="$(env "$bad" "$BIN" --allow-no-gpu 2>&1)"
  rc=$?
  want="$name"
  [ "$bad" = FH_FUSED_COOP_MIN_TOKENS=-1 ] && want=coop_min_tokens  # set_fused_schedule's own words
  [ "$bad" = FH_FUSED_COOP_MIN_TOKENS_INT8=-5 ] && want=coop_min_tokens_int8
  [ "$bad" = FH_FUSED_STAGGER_US=2000000 ] && want=stagger_us
  [ "$bad" = FH_FUSED_COOP_STAGGER_US=-3 ] && want=coop_stagger_us
  [ "$bad" = FH_FUSED_COOP_STAGGER_GROUPS=0 ] && want=coop_stagger_groups
  [ "$bad" = FH_FUSED_COOP_GROUP_ROWS=0 ] && want=coop_group_rows
  [ "$bad" = FH_FUSED_COOP_L2G_MIN_TOKENS=-1 ] && want="coop_l2g_min_tokens must"
  [ "$bad" = FH_FUSED_COOP_L2G_MIN_TOKENS_LIGHT=-1 ] && want="coop_l2g_min_tokens_light must"
  [ "$bad" = FH_FUSED_COOP_L2G_LIGHT_MIN_TILES=0 ] && want="coop_l2g_light_min_tiles must"
  [ "$bad" = FH_FUSED_COOP_L2G_EPILOGUE_WARPS=4 ] && want="coop_l2g_epilogue_warps must"
  [ "$bad" = FH_FUSED_COOP_L2G_EPILOGUE_ROWS=12 ] && want="coop_l2g_epilogue_rows must"
  [ "$bad" = FH_FUSED_COOP_L2G_EPILOGUE_ROWS_16K=136 ] && want="coop_l2g_epilogue_rows_16k must"
  [ "$bad" = FH_FUSED_COOP_L2G_MIN_TOKENS_INT8=-1 ] && want="coop_l2g_min_tokens_int8 must"
  case "$bad" in FH_FUSED_COOP_L2G_EPILOGUE_ROWS_FP=*) want="coop_l2g_epilogue_rows_fp must" ;; esac
  case "$bad" in FH_FUSED_COOP_SPLIT_MAX=*) want="coop_split_max must" ;; esac
  case "$bad" in FH_FUSED_COOP_L2G_G_SLICES=[03]) want="coop_l2g_g_slices must" ;; esac
  case "$bad" in FH_FUSED_COOP_L2G_STAGED=2|FH_FUSED_COOP_L2G_STAGED=-1) want="coop_l2g_staged must" ;; esac
  [ "$bad" = FH_FUSED_COOP_SPLIT_MIN_TOKENS=-1 ] && want="coop_split_min_tokens must"
  [ "$bad" = FH_FUSED_COOP_SPLIT_OVERHEAD_CHUNKS=-1 ] && want="coop_split_overhead_chunks must"
  [ "$bad" = FH_FUSED_COOP_SPLIT_GAIN_PCT=100 ] && want="coop_split_gain_pct must"
  [ "$bad" = FH_FUSED_COOP_SPLIT_UNIT_CHUNKS=-2 ] && want="coop_split_unit_chunks must"
  [ "$bad" = FH_FUSED_COOP_SPLIT_MIN_SLICE_TOKENS=-1 ] && want="coop_split_min_slice_tokens must"
  [ "$bad" = FH_FUSED_COOP_ILV_MIN_TOKENS=-1 ] && want="coop_ilv_min_tokens must"
  if [ $rc -ne 2 ]; then echo "FAIL: $bad: exit $rc, not 2 ($out)"; fails=$((fails + 1))
  elif ! grep -q "$want" <<< "$out"; then echo "FAIL: $bad: the message does not name $want: $out"; fails=$((fails + 1))
  else echo "ok: $bad refused: $(head -1 <<< "$out")"; fi
done
# A good value passes the door (then no GPU: exit 0 with --allow-no-gpu, or a run on a GPU machine).
for good in FH_FUSED_COOP_MIN_TOKENS=0 FH_FUSED_COOP_STAGGER_US=20 FH_FUSED_COOP_GROUP_ROWS=3 \
            FH_FUSED_COOP_L2G_MIN_TOKENS=8192 FH_FUSED_COOP_L2G_MIN_TOKENS_LIGHT=0 \
            FH_FUSED_COOP_L2G_LIGHT_MIN_TILES=1 FH_FUSED_COOP_L2G_EPILOGUE_WARPS=2 \
            FH_FUSED_COOP_L2G_EPILOGUE_ROWS=8 FH_FUSED_COOP_L2G_EPILOGUE_ROWS_16K=128 \
            FH_FUSED_COOP_L2G_EPILOGUE_ROWS_FP=72 FH_FUSED_COOP_L2G_G_SLICES=2 FH_FUSED_COOP_L2G_STAGED=1 \
            FH_FUSED_COOP_L2G_MIN_TOKENS_INT8=0 FH_FUSED_COOP_SPLIT_MAX=1 FH_FUSED_COOP_SPLIT_GAIN_PCT=0 \
            FH_FUSED_COOP_SPLIT_UNIT_CHUNKS=-1 FH_FUSED_COOP_ILV_MIN_TOKENS=2048; do
  if env "$good" FH_FUSED_COOP_STAGGER_GROUPS=4 "$BIN" --allow-no-gpu --benchmark_filter=NONE > /dev/null 2>&1; then echo "ok: $good accepted"
  else echo "FAIL: $good was refused"; fails=$((fails + 1)); fi
done
[ $fails -eq 0 ] && echo "test_forge_bench_env: all checks passed"
exit $((fails > 0))
