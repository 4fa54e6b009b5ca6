#!/usr/bin/env bash
# The convergence study (issue 33) on the GPU runner, in one call: the harness's fused and standard
# paths (forge-model-step --train: bf16 state with fp32 master weights, INT8 state with fp32 master
# weights, bf16 state with bf16_sr weights) and torch AdamW in bf16 and fp32
# (scripts/torch_train_reference.py), the seeds of FH_CONV_SEEDS each, torch fp32 again from each
# seed's harness weights (--dump-init / --init-from), the released FORGE package's default (bf16 state)
# and INT8 paths (torch_train_reference.py --optimizer forge|forge_int8 on its source tree, carried in
# external_release/forge or FH_CONV_FORGE_SRC), plus one planted skipped update, all on
# the same corpus windows; FH_CONV_PARALLEL runs share the GPU at a time (the model is small). The
# JSON files land in OUTDIR/runs.tar.xz; judge them here (no GPU needed):
#   forge-verify --claim convergence_parity --convergence-run DIR/*.json --out REPORT.h5
# Usage: scripts/convergence_runner.sh OUTDIR     (bundle/fh_gpu_bundle.tar.xz with forge-model-step;
#        corpus/ from scripts/prepare_corpus.py, carried, or corpus.tar.xz beside it)
# Env: FH_CONV_SEEDS ("1 2 3"), FH_CONV_STEPS (1000), FH_CONV_TOKENS (512), FH_CONV_LR (6e-4),
#      FH_CONV_PARALLEL (8, through MPS unless FH_CONV_MPS=0), FH_CONV_PARTS ("harness torch release planted"), FH_CONV_DATA (the corpus folder),
#      FH_CONV_FORGE_SRC (the release's tree, holding src/fused_grad_optimizer);
#      for the script's own test (scripts/test_convergence_runner.sh): FH_CONV_BIN (a folder with
#      forge-model-step instead of the bundle's) and FH_CONV_PYTHON (python3).
# Exit: 0 every run finished, 1 a run failed (its line in the log), 2 a missing bundle, corpus or
# (part release) release tree.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${1:?usage: convergence_runner.sh OUTDIR}"
# The switches, before anything is made.
case "${FH_CONV_MPS:-1}" in 0|1) ;; *) echo "convergence_runner: FH_CONV_MPS='$FH_CONV_MPS' must be 0 or 1" >&2; exit 2 ;; esac
case "${FH_CONV_PARALLEL:-8}" in ''|*[!0-9]*|0*) echo "convergence_runner: FH_CONV_PARALLEL='${FH_CONV_PARALLEL:-}' must be a positive integer" >&2; exit 2 ;; esac
mkdir -p "$OUT/json" || exit 2
OUT="$(cd "$OUT" && pwd)"
SEEDS="${FH_CONV_SEEDS:-1 2 3}"
STEPS="${FH_CONV_STEPS:-1000}"
TOKENS="${FH_CONV_TOKENS:-512}"
LR="${FH_CONV_LR:-6e-4}"
PAR="${FH_CONV_PARALLEL:-8}"
PARTS="${FH_CONV_PARTS:-harness torch release planted}"
LOG="$OUT/convergence_run.log"
say() { echo "$*" | tee -a "$LOG"; }
has() { [[ " $PARTS " == *" $1 "* ]]; }
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
DATA="${FH_CONV_DATA:-$ROOT/corpus}"
PY="${FH_CONV_PYTHON:-python3}"
if [ ! -s "$DATA/train.u16" ] && [ -f "$ROOT/corpus.tar.xz" ]; then
  tar -C "$WORK" -xf "$ROOT/corpus.tar.xz" && DATA="$WORK/corpus"
fi
[ -s "$DATA/train.u16" ] && [ -s "$DATA/heldout.u16" ] || { say "MISSING: corpus (scripts/prepare_corpus.py corpus)"; exit 2; }
FORGE_SRC="${FH_CONV_FORGE_SRC:-$ROOT/external_release/forge}"
if has release && [ ! -d "$FORGE_SRC/src/fused_grad_optimizer" ]; then
  say "MISSING: the released package at $FORGE_SRC (src/fused_grad_optimizer)"; exit 2
fi
if [ -n "${FH_CONV_BIN:-}" ]; then
  B="$WORK/given" && mkdir -p "$B" && ln -s "$(cd "$FH_CONV_BIN" && pwd)" "$B/bin"
else
  tar -C "$WORK" -xf "$ROOT/bundle/fh_gpu_bundle.tar.xz" || { say "MISSING: bundle"; exit 2; }
  B="$WORK/fh_gpu_bundle"
fi
[ -x "$B/bin/forge-model-step" ] || { say "MISSING: forge-model-step in the bundle"; exit 2; }
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:$B/lib:${LD_LIBRARY_PATH:-}"
# Runs side by side share the GPU through MPS (FH_CONV_MPS=0: the driver's time slices instead).
# Measured 2026-12-07 on an H100 (docs/model_step/README.md): a harness run spins one CPU core and
# leaves the GPU mostly idle; 100 steps took 8 s alone, 32 s for 4 at once time-sliced and 22 s for 4
# through MPS; 6-8 harness runs of 1000 steps through MPS took 265-316 s each, all together. If the
# daemon does not start, the log says so and the runs are time-sliced.
if [ "${FH_CONV_MPS:-1}" = 1 ] && [ "$PAR" -gt 1 ] && command -v nvidia-cuda-mps-control >/dev/null 2>&1; then
  export CUDA_MPS_PIPE_DIRECTORY="$WORK/mps_pipe" CUDA_MPS_LOG_DIRECTORY="$WORK/mps_log"
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  if nvidia-cuda-mps-control -d; then
    trap 'echo quit | nvidia-cuda-mps-control; rm -rf "$WORK"' EXIT
    say "-- MPS daemon started"
  else
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
    say "-- MPS did not start: the runs are time-sliced"
  fi
fi
say "== convergence run $(date -u +%FT%TZ), bundle $(grep git_revision "$B/MANIFEST" 2>/dev/null), corpus $(grep -o '"source_sha256": "[0-9a-f]*' "$DATA/corpus.json" | cut -c19-34)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee -a "$LOG"
jobs_file="$WORK/jobs"
: > "$jobs_file"
common="--steps $STEPS --tokens $TOKENS --lr $LR"
for s in $SEEDS; do
  if has harness; then
    for u in fused standard; do
      # The fused run dumps the initial weights, the standard run its first-step gradients (the same
      # seed: the same weights and batch), for torch fp32's same start and gradient comparison below.
      dump="--dump-grads $WORK/g_s$s.bin"
      [ "$u" = fused ] && dump="--dump-init $WORK/w_s$s.bin"
      # The first seed's fused runs with fp32 master weights trace their first 60 steps: the largest
      # weight change per step and (INT8) the second moments decoding to zero, the INT8 divergence's
      # cause (convergence_parity's int8_update_within_10x_bf16). The trace only reads.
      trace=""
      [ "$u" = fused ] && [ "$s" = "${SEEDS%% *}" ] && trace="--trace-steps $(( STEPS < 60 ? STEPS : 60 ))"
      echo "$B/bin/forge-model-step --model llama_30m --train $DATA --seed $s --update $u --state bf16 --store fp32_master $common $dump $trace --force --out $OUT/json/h_${u}_bf16_master_s$s.json" >> "$jobs_file"
      echo "$B/bin/forge-model-step --model llama_30m --train $DATA --seed $s --update $u --state int8 --store fp32_master $common $trace --force --out $OUT/json/h_${u}_int8_master_s$s.json" >> "$jobs_file"
      echo "$B/bin/forge-model-step --model llama_30m --train $DATA --seed $s --update $u --state bf16 --store bf16_sr $common --force --out $OUT/json/h_${u}_bf16_sr_s$s.json" >> "$jobs_file"
    done
  fi
  if has torch; then
    for dt in bf16 fp32; do
      echo "$PY $ROOT/scripts/torch_train_reference.py --data $DATA --model llama_30m --dtype $dt --seed $s $common --out $OUT/json/t_${dt}_s$s.json" >> "$jobs_file"
    done
  fi
  if has release; then
    for o in forge forge_int8; do
      echo "$PY $ROOT/scripts/torch_train_reference.py --data $DATA --model llama_30m --dtype bf16 --seed $s $common --optimizer $o --forge-src $FORGE_SRC --out $OUT/json/r_${o}_s$s.json" >> "$jobs_file"
    done
  fi
done
if has planted; then
  s="${SEEDS%% *}"
  echo "$B/bin/forge-model-step --model llama_30m --train $DATA --seed $s --update fused --state bf16 --store fp32_master $common --plant skip_one_update --force --out $OUT/json/h_fused_bf16_master_planted_s$s.json" >> "$jobs_file"
fi
say "-- $(wc -l < "$jobs_file") runs, $PAR at a time"
t0=$SECONDS
rc=0
# The job list's commands, PAR at a time: each run's output in OUTDIR/logs/NAME.log (NAME: its JSON's),
# a line with its exit status and seconds in OUTDIR/runs_progress.txt as it ends (both kept if the
# runner is cut off: the 2026-12-07 calls lost every unfinished run's output), "run failed: ..." lines
# into the log.
mkdir -p "$OUT/logs"
: > "$OUT/runs_progress.txt"
: > "$WORK/failed.txt"
run_jobs() {
  xargs -P "$PAR" -I CMD sh -c 'n=$(echo "CMD" | sed -n "s|.* --out [^ ]*/\([^/ ]*\)\.json.*|\1|p"); s=$(date +%s)
    if CMD > "$0/logs/$n.log" 2>&1; then r=0; else r=$?; echo "run failed: CMD" >> "$1"; fi
    echo "[$(date -u +%T)] $n rc $r in $(( $(date +%s) - s )) s" >> "$0/runs_progress.txt"' "$OUT" "$WORK/failed.txt" < "$jobs_file"
}
run_jobs
# Then torch in fp32 from each seed's harness weights: the same first loss (same_start).
if has harness && has torch; then
  : > "$jobs_file"
  for s in $SEEDS; do
    grads=""
    [ -s "$WORK/g_s$s.bin" ] && grads="--compare-grads $WORK/g_s$s.bin"
    [ -s "$WORK/w_s$s.bin" ] && echo "$PY $ROOT/scripts/torch_train_reference.py --data $DATA --model llama_30m --dtype fp32 --seed $s $common --init-from $WORK/w_s$s.bin $grads --out $OUT/json/t_fp32_from_harness_s$s.json" >> "$jobs_file"
  done
  run_jobs
fi
cat "$WORK/failed.txt" >> "$LOG"
[ -s "$WORK/failed.txt" ] && rc=1
say "-- runs done in $((SECONDS - t0)) s; $(grep -c '^run failed' "$WORK/failed.txt") failed"
tar -C "$OUT" -cJf "$OUT/runs.tar.xz" json && rm -rf "$OUT/json"
exit $rc
