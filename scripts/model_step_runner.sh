#!/usr/bin/env bash
# The model-shaped training step on the GPU runner, in one call: the model-step GPU suite at small shapes, then the
# Llama-3.1-8B-shaped step (batch 1, sequence 512) under the harness's standard, fused and fused-INT8
# paths (forge-model-step) and, in the same call, under torch fused AdamW and optimizer-in-backward
# hooks (scripts/forge_model_bench.py on the runner's PyTorch); the Qwen3-14B-shaped capacity per
# path; then forge-verify judges them all (model_step_figures, ext_model_*) and the timeline PNG
# is drawn. Everything lands in OUTDIR; results.tar.gz packs the JSON files.
# Usage: scripts/model_step_runner.sh OUTDIR     (bundle/fh_gpu_bundle.tar.xz built by gpu_bundle.sh)
# Env: FH_MS_PARTS (default "suite llama torch capacity verify"; "family" adds the Qwen3 family and GPT-2
#      124M, FH_MS_FAMILY the models; "tp" one tensor-parallel rank, FH_MS_TP the degrees,
#      FH_MS_TP_MAXBATCH the largest micro-batch tried), FH_MS_STEPS (20), FH_TORCH_STEPS (20),
#      FH_MS_CAPACITY (the most Qwen3-14B layers tried, 96).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${1:?usage: model_step_runner.sh OUTDIR}"
mkdir -p "$OUT/json"
OUT="$(cd "$OUT" && pwd)"
PARTS="${FH_MS_PARTS:-suite llama torch capacity verify}"
STEPS="${FH_MS_STEPS:-20}"
TSTEPS="${FH_TORCH_STEPS:-20}"
CAP="${FH_MS_CAPACITY:-96}"
LOG="$OUT/model_step_run.log"
say() { echo "$*" | tee -a "$LOG"; }
has() { [[ " $PARTS " == *" $1 "* ]]; }

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
tar -C "$WORK" -xf "$ROOT/bundle/fh_gpu_bundle.tar.xz" || { say "MISSING: bundle"; exit 2; }
B="$WORK/fh_gpu_bundle"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:$B/lib:${LD_LIBRARY_PATH:-}"
say "== model step run $(date -u +%FT%TZ), bundle $(grep git_revision "$B/MANIFEST" 2>/dev/null)"
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv,noheader | tee -a "$LOG"
rc=0
timed() { local t0=$SECONDS; "$@"; local r=$?; say "   ($((SECONDS - t0)) s, rc $r)"; return $r; }

if has suite; then
  say "-- test_gpu_model_step"
  timed "$B/bin/test_gpu_model_step" > "$OUT/test_gpu_model_step.log" 2>&1 || rc=1
  tail -5 "$OUT/test_gpu_model_step.log" | tee -a "$LOG"
fi

step() {  # name, then forge-model-step arguments (--force: a rerun into OUTDIR replaces its JSON)
  local name="$1"; shift
  say "-- forge-model-step $name: $*"
  timed "$B/bin/forge-model-step" "$@" --force --out "$OUT/json/$name.json" >> "$LOG" 2>&1 || rc=1
}
if has llama; then
  step harness_standard_bf16 --model llama31_8b --update standard --state bf16 --steps "$STEPS"
  step harness_standard_cublas_bf16 --model llama31_8b --update standard_cublas --state bf16 --steps "$STEPS"
  step harness_standard_int8 --model llama31_8b --update standard --state int8 --steps "$STEPS"
  step harness_fused_bf16 --model llama31_8b --update fused --state bf16 --steps "$STEPS"
  step harness_fused_int8 --model llama31_8b --update fused --state int8 --steps "$STEPS"
  step harness_fused_fp32_master --model llama31_8b --update fused --state fp32 --store fp32_master --steps "$STEPS"
  # Tied embedding / LM head (Llama-3.1-8B's shape with the head tied): the fallback's gradient.
  step harness_fused_bf16_tied --model llama31_8b --tied --update fused --state bf16 --steps "$STEPS"
  step harness_standard_bf16_tied --model llama31_8b --tied --update standard --state bf16 --steps "$STEPS"
fi
if has torch; then
  for c in torch_fused torch_hooks; do
    say "-- forge_model_bench $c llama8b"
    timed python3 "$ROOT/scripts/forge_model_bench.py" --config "$c" --model llama8b --steps "$TSTEPS" \
      --out "$OUT/json/torch_${c#torch_}_llama8b.json" >> "$LOG" 2>&1 || rc=1
  done
fi
if has capacity; then
  step capacity_fused_bf16 --model qwen3_14b --update fused --state bf16 --capacity "$CAP"
  step capacity_standard_bf16 --model qwen3_14b --update standard --state bf16 --capacity "$CAP"
  say "-- forge_model_bench torch_fused qwen14b (40 layers)"
  timed python3 "$ROOT/scripts/forge_model_bench.py" --config torch_fused --model qwen14b --steps 4 \
    --out "$OUT/json/torch_fused_qwen14b.json" >> "$LOG" 2>&1 || rc=1
fi
# The family (issue 33; part "family", not in the default parts): the Qwen3 models (0.6B to 14B) and GPT-2 124M's sizes,
# fused and standard with bf16 state beside torch fused AdamW on each, the same sequence and steps.
if has family; then
  for m in ${FH_MS_FAMILY:-gpt2_124m qwen3_0p6b qwen3_1p7b qwen3_4b qwen3_8b qwen3_14b}; do
    step harness_fused_bf16_$m --model "$m" --update fused --state bf16 --steps "$STEPS"
    step harness_standard_bf16_$m --model "$m" --update standard --state bf16 --steps "$STEPS"
    tm="$m" && [ "$m" = qwen3_14b ] && tm=qwen14b  # forge_model_bench.py's name of the 14B
    say "-- forge_model_bench torch_fused $tm"
    timed python3 "$ROOT/scripts/forge_model_bench.py" --config torch_fused --model "$tm" --steps "$TSTEPS" \
      --out "$OUT/json/torch_fused_$m.json" >> "$LOG" 2>&1 || rc=1
  done
fi
# One tensor-parallel rank of the 8B step (issue 33; part "tp", not in the default parts): at TP 2, 4, 8,
# fused and standard, micro-batch 1 and 4 measured, and the largest micro-batch that fits this GPU
# (FH_MS_TP_MAXBATCH, 128). tp_*.json: judge with forge-verify --claim tp_microbatch --tp-rank-run F.json.
if has tp; then
  for t in ${FH_MS_TP:-2 4 8}; do
    for u in fused standard; do
      for b in 1 4; do
        step tp${t}_${u}_b$b --model llama31_8b --update "$u" --state bf16 --tp "$t" --batch "$b" --steps 3 --warmup 1
      done
      step tp${t}_${u}_capacity --model llama31_8b --update "$u" --state bf16 --tp "$t" --capacity-batch "${FH_MS_TP_MAXBATCH:-128}"
    done
  done
fi
if has verify; then
  ms=() ext=()
  for f in "$OUT"/json/harness_*.json "$OUT"/json/capacity_*.json; do [ -f "$f" ] && ms+=(--model-step "$f"); done
  for f in "$OUT"/json/torch_*.json; do [ -f "$f" ] && ext+=(--external-model "$f"); done
  say "-- forge-verify ${#ms[@]} model-step args, ${#ext[@]} torch args"
  timed "$B/bin/forge-verify" --claim model_step_figures "${ms[@]}" "${ext[@]}" --report "$OUT/model_step_report.h5" \
    > "$OUT/forge_verify.log" 2>&1 || rc=1
  tail -30 "$OUT/forge_verify.log" | tee -a "$LOG"
  for m in llama8b; do
    python3 "$ROOT/scripts/render_memory_timeline.py" --force "$OUT/model_step_report.h5" "$OUT/timeline_$m.png" "$m" >> "$LOG" 2>&1 || rc=1
  done
fi
tar -C "$OUT" -czf "$OUT/results.tar.gz" json && rm -rf "$OUT/json"
say "== done rc $rc"
exit $rc
