#!/usr/bin/env bash
# One GPU-runner call for fused-kernel speed work (kernels/gpu/NOTES.md): the bitwise suites first
# (the GPU fused suite and the fidelity suite, whose _gpu runs step the fused kernel against the
# twin), then forge-bench and torch's per-layer time in the same call, so that a version's timing
# counts only beside its passing suites. Everything lands in OUTDIR/run.tar.gz plus SUMMARY.txt.
# Usage: scripts/kernel_speed_runner.sh OUTDIR
# Env: FH_BENCH_FILTER (forge-bench regex), FH_TORCH_SHAPES (OUTxINxT,...; empty skips torch),
#      FH_SUITES (default: test_gpu_fused test_gpu_fidelity), FH_VERIFY_ARGS (forge-verify claims;
#      empty skips forge-verify), FH_RUN_TIMEOUT (seconds for suites + bench, default 480, so that
#      a device call's 10 minutes still leave time to pack what ran).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
[ $# -eq 1 ] && [ -n "$1" ] || { echo "usage: kernel_speed_runner.sh OUTDIR" >&2; exit 2; }
OUT="$1"
[ ! -e "$OUT" ] || [ -d "$OUT" ] || { echo "kernel_speed_runner.sh: OUTDIR $OUT exists and is not a folder" >&2; exit 2; }
mkdir -p "$OUT" || { echo "kernel_speed_runner.sh: cannot make OUTDIR $OUT" >&2; exit 2; }
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
skip_verify=1
[ -n "${FH_VERIFY_ARGS:-}" ] && skip_verify=0
FH_SUITES="${FH_SUITES:-test_gpu_fused test_gpu_fidelity}" FH_SKIP_TORCH=1 FH_SKIP_VERIFY=$skip_verify \
  timeout "${FH_RUN_TIMEOUT:-480}" bash "$ROOT/scripts/gpu_runner.sh" "$WORK/run"
status=$?
[ $status -eq 124 ] && echo "kernel_speed_runner: suites + bench stopped after ${FH_RUN_TIMEOUT:-480} s" >> "$WORK/run/SUMMARY.txt"
if [ -n "${FH_TORCH_SHAPES-4096x4096x512,4096x4096x2048,4096x4096x8192}" ]; then
  timeout 90 python3 "$ROOT/scripts/torch_layer_timing.py" "$WORK/run/torch_layer.json" \
    --shapes "${FH_TORCH_SHAPES-4096x4096x512,4096x4096x2048,4096x4096x8192}" > "$WORK/run/torch_layer.log" 2>&1
  echo "torch layer timing: rc $?" >> "$WORK/run/SUMMARY.txt"
  grep median "$WORK/run/torch_layer.log" | sed 's/^/    /' >> "$WORK/run/SUMMARY.txt"
fi
cp "$WORK/run/SUMMARY.txt" "$OUT/SUMMARY.txt"
tar -C "$WORK" -czf "$OUT/run.tar.gz" run
exit $status
