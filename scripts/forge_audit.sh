#!/usr/bin/env bash
# The FORGE release audit on the GPU runner. Judges the released package (carried as
# an ignored folder, external_release/forge, never part of the project) through the
# external-producer interface (docs/EXTERNAL_PRODUCER.md). Each phase fits in one device call:
#   paths   writes the "forge" cases, runs scripts/forge_adapter.py once per kernel path (one
#           results file per path, several processes at a time), judges every file with
#           forge-verify --external, records the element-wise golden set (scripts/forge_golden.py),
#           and keeps the PTX/TTGIR/SASS that Triton produced for the judged kernels.
#   judge   only the judging step of paths (merge and forge-verify), over part files already there.
#   model   scripts/forge_model_bench.py, one process per configuration (Llama-3.1-8B shape).
#   timing  per-layer times: each FORGE path and torch (adapter --timing) beside forge-bench's
#           fused kernel and cuBLAS + rule at the same shapes.
# Usage: scripts/forge_audit.sh OUT PHASE...   Env: FH_AUDIT_PATHS (paths, each NAME or NAME@REGEX),
# FH_AUDIT_JOBS, FH_ADAPTER_TIMEOUT, FH_AUDIT_KERNELS=0 (skip the kernel collection), FH_MODEL_CONFIGS,
# FH_MODEL_TIMEOUT (per configuration), FH_TIMING_PATHS, FH_TIMING_SHAPES, FH_TIMING_PREWARM=0 (no
# parallel compile before the timed runs), FH_TIMING_TIMEOUT (per path), FH_BENCH_FILTER.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${1:?usage: forge_audit.sh OUT PHASE...}"
shift
mkdir -p "$OUT/logs"
OUT="$(cd "$OUT" && pwd)"
FORGE_SRC="${FH_FORGE_SRC:-$ROOT/external_release/forge}"
[ -d "$FORGE_SRC/src/fused_grad_optimizer" ] || { echo "forge_audit: no release at $FORGE_SRC" >&2; exit 2; }
WORK="${FH_AUDIT_WORK:-/tmp/fh_audit}"
mkdir -p "$WORK"
say() { echo "$*" | tee -a "$OUT/AUDIT.txt"; }
# Every kernel path of the release that forge_adapter.py drives (the default of each phase).
ALL_PATHS="persistent autotuned tma tma_ws streamk opt_only int8 int8_opt_only sgd torch_reference fp8 wmma_v3 cutlass_hopper"

B="$WORK/fh_gpu_bundle"
if [ ! -x "$B/bin/forge-verify" ]; then
  tar -C "$WORK" -xf "$ROOT/bundle/fh_gpu_bundle.tar.xz" || { echo "forge_audit: cannot unpack the bundle" >&2; exit 2; }
fi
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TRITON_CACHE_DIR="$WORK/triton_cache"
FV="$B/bin/forge-verify"
PY=python3
say "== forge audit $(date -u +%FT%TZ) on $(hostname): $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1)"
say "release: $FORGE_SRC ($(sed -n 's/^version *= *//p' "$FORGE_SRC/pyproject.toml" | head -1))"
say "python: $($PY -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__, "cuda", torch.version.cuda)' 2>&1)"

phase_paths() {
  local cases="$WORK/cases_forge.h5"
  [ -f "$cases" ] || "$FV" external-cases --set forge "$cases" > "$OUT/logs/cases.log" 2>&1 || { say "cases: FAILED"; cat "$OUT/logs/cases.log"; return 1; }
  say "cases: $(tail -1 "$OUT/logs/cases.log")"
  $PY "$ROOT/scripts/forge_golden.py" "$OUT/forge_elementwise_h200.bin" --forge-src "$FORGE_SRC" > "$OUT/logs/golden.log" 2>&1 &
  local golden_pid=$!
  # A path runs as one process, or as several over disjoint cases ("name@REGEX": --cases-filter),
  # merged afterwards into one results file per path (scripts/merge_results.py).
  local paths="${FH_AUDIT_PATHS:-$ALL_PATHS}"
  local t0=$(date +%s) k=0 jobs="$WORK/jobs.txt"
  : > "$jobs"
  for e in $paths; do
    k=$((k + 1))
    local name="${e%%@*}" filter=""
    [ "$name" != "$e" ] && filter="--cases-filter '${e#*@}'"
    echo "timeout ${FH_ADAPTER_TIMEOUT:-400} $PY '$ROOT/scripts/forge_adapter.py' '$cases' '$WORK/part_$k.$name.h5' --path $name $filter --forge-src '$FORGE_SRC' > '$OUT/logs/adapter_${name}_$k.log' 2>&1; echo \"adapter $e: rc \$?\"" >> "$jobs"
  done
  # Several adapters at once on the one GPU: nothing is timed here (bits do not depend on load).
  tr '\n' '\0' < "$jobs" | xargs -0 -n 1 -P "${FH_AUDIT_JOBS:-4}" sh -c 'eval "$1"' job | tee -a "$OUT/AUDIT.txt"
  say "adapters: $(( $(date +%s) - t0 )) s"
  phase_judge
  wait "$golden_pid"
  say "golden: rc $? $(tail -1 "$OUT/logs/golden.log")"
  [ "${FH_AUDIT_KERNELS:-1}" = 1 ] || return 0
  collect_kernels
}

# Merges each path's part files and judges them all with forge-verify --external.
phase_judge() {
  local cases="$WORK/cases_forge.h5"
  local paths="${FH_AUDIT_PATHS:-$ALL_PATHS}"
  local args=() done_names=""
  for e in $paths; do
    local name="${e%%@*}"
    case " $done_names " in *" $name "*) continue ;; esac
    done_names="$done_names $name"
    local parts=("$WORK"/part_*."$name".h5)
    if [ ! -f "${parts[0]}" ]; then say "path $name: no results file (see logs/adapter_${name}_*.log)"; continue; fi
    $PY "$ROOT/scripts/merge_results.py" "$WORK/res_$name.h5" "${parts[@]}" >> "$OUT/logs/merge.log" 2>&1 \
      && args+=(--external "$WORK/res_$name.h5") || say "path $name: merge failed (logs/merge.log)"
  done
  "$FV" "${args[@]}" --external-cases "$cases" --report "$OUT/audit_report.h5" --json "$OUT/audit_summary.json" --force \
    > "$OUT/logs/verify.log" 2>&1
  say "forge-verify --external: rc $? ($(grep -m1 '^overall' "$OUT/logs/verify.log"))"
}

collect_kernels() {
  # What Triton compiled: PTX, TTGIR and the SASS of every cubin, one archive.
  local k="$WORK/kernels"
  rm -rf "$k" && mkdir -p "$k"
  find "$TRITON_CACHE_DIR" -name '*.ptx' -o -name '*.ttgir' -o -name '*.json' | while read -r f; do
    cp "$f" "$k/$(basename "$(dirname "$f")" | cut -c1-12)_$(basename "$f")"
  done
  if command -v cuobjdump >/dev/null || [ -x /usr/local/cuda/bin/cuobjdump ]; then
    find "$TRITON_CACHE_DIR" -name '*.cubin' | while read -r f; do
      /usr/local/cuda/bin/cuobjdump -sass "$f" > "$k/$(basename "$(dirname "$f")" | cut -c1-12)_$(basename "$f" .cubin).sass" 2>&1
    done
  fi
  # The two approximate instructions FORGE's update uses, alone: what SASS ptxas makes of them.
  printf '%s\n' 'extern "C" __global__ void k(const float* a, const float* b, float* o) {' \
    '  int i = threadIdx.x; float r, s;' \
    '  asm("div.full.f32 %0, %1, %2;" : "=f"(r) : "f"(a[i]), "f"(b[i]));' \
    '  asm("sqrt.approx.f32 %0, %1;" : "=f"(s) : "f"(a[i]));' '  o[i] = r; o[i + 32] = s; }' > "$WORK/approx.cu"
  (cd "$WORK" && /usr/local/cuda/bin/nvcc -arch=sm_90a -cubin -o approx.cubin approx.cu && /usr/local/cuda/bin/cuobjdump -sass approx.cubin > "$k/approx_div_full_sqrt_approx.sass") 2>&1 | tail -3
  tar -C "$WORK" -cJf "$OUT/triton_kernels.tar.xz" kernels
  say "kernels: $(ls "$k" | wc -l) files, $(du -k "$OUT/triton_kernels.tar.xz" | cut -f1) KiB"
}

phase_model() {
  for c in ${FH_MODEL_CONFIGS:-torch_fused forge forge_tma_ws forge_int8}; do
    local t0=$(date +%s)
    timeout "${FH_MODEL_TIMEOUT:-900}" $PY "$ROOT/scripts/forge_model_bench.py" --config "$c" --model "${FH_MODEL:-llama8b}" --forge-src "$FORGE_SRC" \
      --out "$OUT/model_$c.json" > "$OUT/logs/model_$c.log" 2>&1
    say "model $c: rc $? ($(( $(date +%s) - t0 )) s) $(tail -1 "$OUT/logs/model_$c.log")"
  done
}

phase_timing() {
  local shapes="${FH_TIMING_SHAPES:-4096x4096x512,14336x4096x512,4096x4096x2048}"
  if [ "${FH_TIMING_PREWARM:-1}" = 1 ]; then
    # Compiles every path's kernels at once into the shared Triton cache (33-config autotunes
    # compile for minutes one config at a time); these times are thrown away. The timed runs below
    # then go one at a time on an idle GPU and still autotune afresh (the choice is not cached).
    local t0=$(date +%s)
    for p in ${FH_TIMING_PATHS:-$ALL_PATHS}; do
      timeout "${FH_TIMING_TIMEOUT:-300}" $PY "$ROOT/scripts/forge_adapter.py" --timing "$WORK/prewarm_$p.json" \
        --timing-shapes "$shapes" --path "$p" --forge-src "$FORGE_SRC" > "$OUT/logs/prewarm_$p.log" 2>&1 &
    done
    wait
    say "timing prewarm (compiles, not timed): $(( $(date +%s) - t0 )) s"
  fi
  for p in ${FH_TIMING_PATHS:-$ALL_PATHS}; do
    local t0=$(date +%s)
    timeout "${FH_TIMING_TIMEOUT:-300}" $PY "$ROOT/scripts/forge_adapter.py" --timing "$OUT/timing_$p.json" --force \
      --timing-shapes "$shapes" --path "$p" --forge-src "$FORGE_SRC" > "$OUT/logs/timing_$p.log" 2>&1
    say "timing $p: rc $? ($(( $(date +%s) - t0 )) s)"
  done
  if [ -x "$B/bin/forge-bench" ]; then
    "$B/bin/forge-bench" --benchmark_filter="${FH_BENCH_FILTER:-adamw_bf16_bf16_rne/(fused|cublas)/out(4096|14336)_in4096_T(512|2048)/}" \
      --benchmark_out="$OUT/timing_harness.json" --benchmark_out_format=json > "$OUT/logs/timing_harness.log" 2>&1
    say "timing harness: rc $?"
  fi
}

for ph in "$@"; do
  case "$ph" in
    paths) phase_paths ;;
    judge) phase_judge ;;
    model) phase_model ;;
    timing) phase_timing ;;
    *) echo "forge_audit: unknown phase '$ph' (paths, judge, model, timing)" >&2; exit 2 ;;
  esac
done
say "== done $(date -u +%FT%TZ)"
