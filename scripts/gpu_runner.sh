#!/usr/bin/env bash
# The GPU-runner entry point: unpacks bundle/fh_gpu_bundle.tar.xz (scripts/gpu_bundle.sh
# builds it on the CI-like machine; nothing is built here), then runs the benchmarks (alone on the
# GPU), every GPU suite and forge-verify (side by side), leaving every log, the benchmark JSON, the golden instruction set
# and the HDF5 report in one output folder, plus SUMMARY.txt. It says plainly which binaries or
# libraries are missing. Exit status: 0 when everything that ran passed, 1 otherwise, 2 when the
# bundle is missing or unusable.
# Usage: scripts/gpu_runner.sh OUTDIR
# Env: FH_SUITES (only these GPU suites), FH_SUITE_JOBS (suites at a time, default 5), FH_VERIFY_ARGS (extra forge-verify options), FH_SKIP_TORCH=1, FH_TORCH_QUICK=1, FH_BENCH_FILTER (default: 4096 x 4096, T = 512, four rules; "all": every benchmark; else a Google Benchmark regex over names like
# adamw_fp32_fp32_master/fused/out4096_in4096_T512/manual_time), FH_SKIP_BENCH=1, FH_SKIP_SUITES=1, FH_SKIP_VERIFY=1
# (for splitting one run over two device calls), FH_DIFF_BASELINE=REPORT.h5 (diff this run against it),
# FH_SWEEP_SEEDS=N (the GPU claims' seed sweep; FH_SWEEP_CLAIMS,
# FH_SWEEP_JOBS), FH_SANITIZE=1 (compute-sanitizer
# memcheck/racecheck/initcheck on the fused suite's small cases), FH_NCU=1 (Nsight Compute sections
# of the fused and rule kernels at 4096 x 4096, T = 512, for each benchmark config in FH_NCU_CONFIGS
# (default "adamw_fp32_fp32_master adamw_bf16_bf16_rne"), and the fused
# kernel's per-instruction source counters), FH_ALLOW_SKIP=1 (a skipped GPU
# test is not a failure: for trying the script on a machine without a GPU). A test skipped as
# "not applicable: needs 2 GPUs, 1 visible" (the machine lacks what it needs) never fails the run.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
[ $# -eq 1 ] && [ -n "$1" ] || { echo "usage: gpu_runner.sh OUTDIR" >&2; exit 2; }
OUT="$1"
# FH_NCU_CONFIGS: benchmark configuration names (rule_state_store), checked before any work: each
# becomes an anchored benchmark filter, and a regex or a typo would profile nothing.
for cfg in ${FH_NCU_CONFIGS:-}; do
  [[ "$cfg" =~ ^[a-z][a-z0-9_]*_(fp32|bf16|int8)_(fp32_master|bf16_rne|bf16_sr)$ ]] ||
    { echo "gpu_runner.sh: FH_NCU_CONFIGS: '$cfg' is not a benchmark configuration such as adamw_int8_fp32_master" >&2; exit 2; }
done
[ ! -e "$OUT" ] || [ -d "$OUT" ] || { echo "gpu_runner.sh: OUTDIR $OUT exists and is not a folder" >&2; exit 2; }
mkdir -p "$OUT" || { echo "gpu_runner.sh: cannot make OUTDIR $OUT" >&2; exit 2; }
OUT="$(cd "$OUT" && pwd)"
SUMMARY="$OUT/SUMMARY.txt"
: > "$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }

# The bundle: FH_BUNDLE, else bundle/fh_gpu_bundle.tar.xz, else an older .tar.gz.
TARBALL="${FH_BUNDLE:-$ROOT/bundle/fh_gpu_bundle.tar.xz}"
[ -n "${FH_BUNDLE:-}" ] || [ -f "$TARBALL" ] || TARBALL="$ROOT/bundle/fh_gpu_bundle.tar.gz"
if [ ! -f "$TARBALL" ]; then
  say "MISSING: bundle $TARBALL (build it with scripts/gpu_bundle.sh on the build machine)"
  echo "gpu_runner.sh: no bundle at $TARBALL (scripts/gpu_bundle.sh makes it)" >&2
  exit 2
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
# GNU tar picks the decompressor itself; without an xz binary, Python's tarfile reads it.
if ! tar -C "$WORK" -xf "$TARBALL" 2>/dev/null; then
  rm -rf "${WORK:?}"/*
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$TARBALL" "$WORK" ||
    { say "MISSING: cannot unpack $TARBALL"; exit 2; }
fi
B="$WORK/fh_gpu_bundle"
cp "$B/MANIFEST" "$OUT/MANIFEST" 2>/dev/null || true

say "== forge-harness GPU run $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
say "bundle: $(grep -E '^(git_revision|built_utc)=' "$B/MANIFEST" 2>/dev/null | tr '\n' ' ')"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader > "$OUT/nvidia-smi.txt" 2>&1
  say "gpu: $(head -1 "$OUT/nvidia-smi.txt")"
else
  say "gpu: nvidia-smi not found (the suites will say whether the CUDA runtime sees a GPU)"
fi

# Binaries and libraries: what the manifest promised, and what each binary cannot load.
read -r -a expected < <(sed -n 's/^binaries=//p' "$B/MANIFEST")
missing_bins=0
for t in "${expected[@]}"; do
  [ -x "$B/bin/$t" ] || { say "MISSING: binary $t (listed in the manifest, not in the bundle)"; missing_bins=1; }
done
check_libs() {  # prints the sonames a binary cannot resolve
  ldd "$1" 2>/dev/null | awk '/not found/ {print $1}'
}
# cuBLAS comes from the runner's CUDA (13.1), loaded when first called (kernels/gpu/cublas_loader.cpp,
# which also tries these folders); where the loader's cache does not know it, its folder goes on
# LD_LIBRARY_PATH.
if ! ldconfig -p 2>/dev/null | grep -q 'libcublas\.so\.13'; then
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
    if [ -e "$d/libcublas.so.13" ]; then
      export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
      say "note: cuBLAS from $d"
      break
    fi
  done
fi
need_fallback=0
for bin in "$B"/bin/*; do
  [ -x "$bin" ] && [ ! -d "$bin" ] || continue
  case "$(basename "$bin")" in *.so*) continue;; esac
  if [ -n "$(check_libs "$bin")" ]; then need_fallback=1; fi
done
if [ "$need_fallback" = 1 ]; then
  say "note: system libraries missing, using the bundled fallback libraries in lib/"
  export LD_LIBRARY_PATH="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
runnable=()
for t in "${expected[@]}"; do
  [ -x "$B/bin/$t" ] || continue
  miss="$(check_libs "$B/bin/$t" | tr '\n' ' ')"
  if [ -n "$miss" ]; then
    say "MISSING: $t cannot load: $miss"
  else
    runnable+=("$t")
  fi
done
ldd "$B"/bin/* > "$OUT/ldd.txt" 2>&1 || true

status=0
[ "$missing_bins" = 1 ] && status=1
has() { local x; for x in "${runnable[@]}"; do [ "$x" = "$1" ] && return 0; done; return 1; }

# GPU suites (GoogleTest): XML and the log per suite; each prints one-line summaries.
read -r -a suites < <(sed -n 's/^gpu_suites=//p' "$B/MANIFEST")
# FH_SUITES: run only these suites (space separated), e.g. for a short run of one suite.
[ -n "${FH_SUITES:-}" ] && read -r -a suites <<< "$FH_SUITES" && say "suites: only $FH_SUITES (FH_SUITES)"
[ "${FH_SKIP_SUITES:-0}" = 1 ] && suites=() && say "GPU suites: skipped (FH_SKIP_SUITES=1)"

# One GPU suite: XML and the log, its summary lines appended to $SUMMARY; returns 1 when it failed.
run_suite() {
  local s="$1" status=0
  if ! has "$s"; then say "suite $s: NOT RUN (missing binary or library)"; return 1; fi
  local extra_env=() start rc verdict skips skip_rc n_na n_skip
  extra_env=()
  [ "$s" = test_gpu_mma_model ] && extra_env=(FH_GOLDEN_OUT="$OUT/mma_h200.bin" FH_WGMMA_GOLDEN_OUT="$OUT/wgmma_h200.bin")
  # The powf suite measures the rcp.approx exceptions and a golden powf sample for CPU re-checks.
  [ "$s" = test_gpu_cuda_powf ] && extra_env=(FH_RCP_TABLE_OUT="$OUT/rcp_exceptions.bin" FH_POWF_GOLDEN_OUT="$OUT/cuda_powf_h200.bin")
  start=$(date +%s)
  env "${extra_env[@]}" "$B/bin/$s" --gtest_output="xml:$OUT/$s.xml" > "$OUT/$s.log" 2>&1
  rc=$?
  verdict=$([ $rc -eq 0 ] && echo PASS || echo FAIL)
  [ $rc -eq 0 ] || status=1
  # Skips (scripts/gtest_skips.sh): "not applicable" (this machine lacks what the test needs,
  # e.g. 2 GPUs on a one-GPU runner) is listed and passes; any other skip is something the
  # runner could have run, so it fails the run unless FH_ALLOW_SKIP=1.
  skips="$(bash "$ROOT/scripts/gtest_skips.sh" "$OUT/$s.log")"
  skip_rc=$?
  n_na=$(awk -F'\t' '$1 == "not_applicable"' <<< "$skips" | wc -l)
  n_skip=$(awk -F'\t' '$1 == "skipped"' <<< "$skips" | wc -l)
  [ "$n_na" -gt 0 ] && verdict="$verdict, $n_na test(s) $(awk -F'\t' '$1 == "not_applicable" {print $3; exit}' <<< "$skips")"
  [ "$n_skip" -gt 0 ] && verdict="$verdict, $n_skip test(s) SKIPPED: $(awk -F'\t' '$1 == "skipped" {print $3; exit}' <<< "$skips")"
  [ "$skip_rc" -eq 0 ] || [ "${FH_ALLOW_SKIP:-0}" = 1 ] || { status=1; verdict="${verdict/#PASS/FAIL}"; }
  say "suite $s: $verdict (rc $rc, $(( $(date +%s) - start )) s)"
  awk -F'\t' 'NF {print "    " $2 ": " ($1 == "skipped" ? "SKIPPED: " : "") $3}' <<< "$skips" | tee -a "$SUMMARY" >/dev/null
  grep -E '^\[(mma model|wgmma model|fused|cublas|cublas order|linear_backward|divsqrt|fidelity[^]]*)\]|^\[  FAILED  \] [A-Za-z]' "$OUT/$s.log" | sed 's/^/    /' | tee -a "$SUMMARY" >/dev/null
  return $status
}

# The suites run FH_SUITE_JOBS at a time (default 5, forge-verify beside them counting as one: the
# runner has 16 cores and one GPU with room for several; the suites check bits and pool-local
# peaks, no timings), each writing its summary into its own part file, appended in suite order.
suite_jobs="${FH_SUITE_JOBS:-5}"
[[ "$suite_jobs" =~ ^[1-9][0-9]*$ ]] || { echo "gpu_runner.sh: FH_SUITE_JOBS must be a positive integer (got $suite_jobs)" >&2; exit 2; }
PARTS="$WORK/parts"
mkdir -p "$PARTS"
suite_part() {  # one suite, its summary and exit status in part files
  SUMMARY="$PARTS/$1.summary" run_suite "$1" > /dev/null
  echo $? > "$PARTS/$1.rc"
}
run_suites() {
  local s
  for s in "${suites[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$suite_jobs" ]; do wait -n; done
    suite_part "$s" &
  done
  wait
}
collect_suites() {
  local s
  for s in "${suites[@]}"; do
    cat "$PARTS/$s.summary" >> "$SUMMARY" 2>/dev/null
    cat "$PARTS/$s.summary" 2>/dev/null
    [ "$(cat "$PARTS/$s.rc" 2>/dev/null)" = 0 ] || status=1
  done
}

# forge-verify: every claim, GPU claims included, report in the output folder; it runs beside the
# suites (its claims share the GPU with them) and its summary is appended after theirs.
run_verify() {
  local status=0 rc drc
  if [ "${FH_SKIP_VERIFY:-0}" = 1 ]; then
    say "forge-verify: skipped (FH_SKIP_VERIFY=1)"
  elif has forge-verify; then
    # FH_VERIFY_ARGS: extra forge-verify options, e.g. "--claim gpu_fused_vs_twin" for a short run.
    # --force: the output folder is the runner's own, and a rerun into it replaces its report.
    # --require-gpu: on the runner a GPU claim that did not run is a failure (exit 4), never a
    # pass; FH_ALLOW_SKIP=1 (trying the script without a GPU) drops it.
    require_gpu=(--require-gpu)
    [ "${FH_ALLOW_SKIP:-0}" = 1 ] && require_gpu=()
    # The benchmarks of this run go into the report, so a baseline diff can judge them.
    bench_arg=()
    [ -s "$OUT/bench.json" ] && bench_arg=(--bench-json "$OUT/bench.json")
    "$B/bin/forge-verify" ${FH_VERIFY_ARGS:-} "${require_gpu[@]}" "${bench_arg[@]}" --force --report "$OUT/forge-verify.h5" \
      --json "$OUT/forge-verify.json" --junit "$OUT/forge-verify.junit.xml" > "$OUT/forge-verify.log" 2>&1
    rc=$?
    say "forge-verify: $([ $rc -eq 0 ] && echo PASS || echo "FAIL (rc $rc)"), report forge-verify.h5"
    [ $rc -eq 0 ] || status=1
    # FH_DIFF_BASELINE=REPORT.h5: this run's report against a baseline (scripts/nightly.sh sets
    # it): every change in diff.txt, as JSON in diff.json, the exit code (0 nothing regressed, 1
    # a regression, 2 an unreadable file) in diff.rc. --force: as for the report, a rerun into this
    # folder replaces its diff.json.
    if [ -n "${FH_DIFF_BASELINE:-}" ] && [ -f "$OUT/forge-verify.h5" ]; then
      "$B/bin/forge-verify" diff "$FH_DIFF_BASELINE" "$OUT/forge-verify.h5" ${FH_DIFF_ARGS:-} --force --json "$OUT/diff.json" > "$OUT/diff.txt" 2>&1
      drc=$?
      echo "$drc" > "$OUT/diff.rc"
      say "baseline diff: $(case $drc in 0) echo "nothing regressed";; 1) echo "REGRESSED";; *) echo "FAILED (rc $drc)";; esac) ($(tail -n 1 "$OUT/diff.txt"))"
      grep -E '^regress' "$OUT/diff.txt" | head -40 | sed 's/^/    /' | tee -a "$SUMMARY" >/dev/null
    fi
    # The GPU claims' verdict tables (header, column names, one line per check), then the totals.
    awk '/^== (gpu_|[a-z0-9_]*_gpu:)/ {on = 1} /^$/ {on = 0} on' "$OUT/forge-verify.log" | sed 's/^/    /' | tee -a "$SUMMARY" >/dev/null
    grep -E '^(overall|report):' "$OUT/forge-verify.log" | sed 's/^/    /' | tee -a "$SUMMARY" >/dev/null
  else
    say "forge-verify: NOT RUN (missing binary or library)"
    status=1
  fi
  return $status
}

# Order: the benchmarks alone on the GPU (their timings), then the suites and forge-verify side by
# side (bits and verdicts, not timings), then the optional sanitizer, sweep and profiles.
if [ "${FH_SKIP_BENCH:-0}" = 1 ]; then
  say "forge-bench: skipped (FH_SKIP_BENCH=1)"
elif has forge-bench; then
  # Default: the gate's set, the paper's headline shape at T = 512 for AdamW, Lion, SGD and
  # SGD-momentum (two, one, none and one state), every state config and path, so that the whole
  # entry point fits five minutes; FH_BENCH_FILTER=all runs the whole grid (every rule x 4 shapes
  # x 4 token counts: nightly.sh's), any other value is a Google Benchmark regex.
  bench_filter="${FH_BENCH_FILTER:-(adamw|sgd|lion)_.*/out4096_in4096_T512/}"
  [ "$bench_filter" = all ] && bench_filter=
  no_gpu_ok=()  # without a GPU forge-bench exits 4, unless trying the script (FH_ALLOW_SKIP=1)
  [ "${FH_ALLOW_SKIP:-0}" = 1 ] && no_gpu_ok=(--allow-no-gpu)
  "$B/bin/forge-bench" --benchmark_out="$OUT/bench.json" --benchmark_out_format=json \
    ${bench_filter:+--benchmark_filter="$bench_filter"} "${no_gpu_ok[@]}" > "$OUT/bench.log" 2>&1
  rc=$?
  say "forge-bench: $([ $rc -eq 0 ] && echo done || echo "FAIL (rc $rc)"), JSON in bench.json $(grep -m1 -o 'no GPU: .*' "$OUT/bench.log")"
  [ $rc -eq 0 ] || status=1
  grep -E '_median' "$OUT/bench.log" | awk '{printf "    %-70s %10s %s\n", $1, $2, $3}' | tee -a "$SUMMARY" >/dev/null
else
  say "forge-bench: NOT RUN (missing binary or library)"
  status=1
fi

start_all=$(date +%s)
( SUMMARY="$PARTS/verify.summary" run_verify > /dev/null; echo $? > "$PARTS/verify.rc" ) &
verify_pid=$!
run_suites  # its final wait also waits for forge-verify (a job of this shell)
collect_suites
wait "$verify_pid"
cat "$PARTS/verify.summary" >> "$SUMMARY"
cat "$PARTS/verify.summary"
[ "$(cat "$PARTS/verify.rc" 2>/dev/null)" = 0 ] || status=1
say "suites + forge-verify: $(( $(date +%s) - start_all )) s (suites $suite_jobs at a time, forge-verify beside them)"

# compute-sanitizer on the fused suite's small cases (optional: slow).
if [ "${FH_SANITIZE:-0}" = 1 ] && command -v compute-sanitizer >/dev/null 2>&1 && has test_gpu_fused; then
  for tool in memcheck racecheck initcheck; do
    # initcheck only: leave cuBLAS out of the smoke test. cuBLAS's Hopper kernels store G through
    # the TMA engine, whose writes initcheck does not track, so the rule kernel's reads of that G
    # (every element, 240000 reports on the runner) are false "uninitialized" errors; the
    # materializer's G, written by ordinary stores, is checked. memcheck and racecheck keep cuBLAS.
    smoke_env=()
    [ "$tool" = initcheck ] && smoke_env=(FH_SMOKE_NO_CUBLAS=1)
    env "${smoke_env[@]}" compute-sanitizer --tool "$tool" --error-exitcode 9 "$B/bin/test_gpu_fused" \
      --gtest_filter='GpuFused.SanitizerSmoke:GpuFused.LinearBackward*' \
      > "$OUT/sanitizer_$tool.log" 2>&1
    rc=$?
    say "compute-sanitizer $tool: $([ $rc -eq 0 ] && echo clean || echo "FAIL (rc $rc)")  $(grep -E 'ERROR SUMMARY' "$OUT/sanitizer_$tool.log" | tail -1)"
    [ $rc -eq 0 ] || status=1
  done
fi


# The seed sweep of the GPU claims: FH_SWEEP_SEEDS=N runs every seed-dependent GPU
# claim over seeds 1..N (FH_SWEEP_CLAIMS narrows it, FH_SWEEP_JOBS runs at a time, default 4),
# failures per claim in sweep.txt and the failing runs' logs and reports under sweep/.
if [ -n "${FH_SWEEP_SEEDS:-}" ] && has forge-verify; then
  FH_SWEEP_DIR="$OUT/sweep" bash "$ROOT/scripts/seed_sweep.sh" "$FH_SWEEP_SEEDS" --gpu --bin "$B/bin/forge-verify" \
    --jobs "${FH_SWEEP_JOBS:-4}" ${FH_SWEEP_CLAIMS:+--claims "$FH_SWEEP_CLAIMS"} > "$OUT/sweep.txt" 2>&1
  rc=$?
  say "seed sweep ($FH_SWEEP_SEEDS seeds): $([ $rc -eq 0 ] && echo PASS || echo "FAIL (rc $rc)")"
  grep -E 'seeds,|seed [0-9]+:' "$OUT/sweep.txt" | sed 's/^/    /' | tee -a "$SUMMARY" >/dev/null
  [ $rc -eq 0 ] || status=1
fi

# Nsight Compute on the T = 512 bar's kernels (optional): where the fused kernel's time goes.
if [ "${FH_NCU:-0}" = 1 ] && command -v ncu >/dev/null 2>&1 && has forge-bench; then
  for cfgname in ${FH_NCU_CONFIGS:-adamw_fp32_fp32_master adamw_bf16_bf16_rne}; do
    for path in fused cublas; do
      ncu --clock-control none --launch-skip 3 --launch-count 2 --kernel-name regex:'fused_wgrad|rule_element|rule_int8' \
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
        --section SchedulerStats --section WarpStateStats \
        "$B/bin/forge-bench" --benchmark_filter="^${cfgname}/${path}/out4096_in4096_T512/" \
        --benchmark_repetitions=1 --benchmark_min_time=0.001 > "$OUT/ncu_${cfgname}_${path}.txt" 2>&1
      say "ncu $cfgname $path: rc $? ($(grep -c 'Duration' "$OUT/ncu_${cfgname}_${path}.txt") kernel profiles)"
    done
    # Per-instruction counts and stall samples of the fused kernel (where its instructions go).
    ncu --clock-control none --launch-skip 3 --launch-count 1 --kernel-name regex:'fused_wgrad' --section SourceCounters \
      --page source --print-source sass "$B/bin/forge-bench" --benchmark_filter="^${cfgname}/fused/out4096_in4096_T512/" \
      --benchmark_repetitions=1 --benchmark_min_time=0.001 > "$OUT/ncu_${cfgname}_fused_source.txt" 2>&1
    say "ncu $cfgname fused source counters: rc $?"
  done
fi

# The fidelity figures from forge-verify's report (needs h5py and matplotlib on this python).
if [ -f "$OUT/forge-verify.h5" ] && command -v python3 >/dev/null 2>&1; then
  # The figures' dataset names are checked against the claim registry's export.
  reg=()
  "$B/bin/forge-verify" --list-claims-json > "$OUT/registry.json" 2>/dev/null && reg=(--registry "$OUT/registry.json")
  mkdir -p "$OUT/figures"  # render_fidelity.py writes into an existing folder only
  for mode in "" --gpu; do
    python3 "$ROOT/scripts/render_fidelity.py" "$OUT/forge-verify.h5" -o "$OUT/figures" --force $mode "${reg[@]}" \
      >> "$OUT/render.log" 2>&1 \
      || say "note: render_fidelity.py $mode failed (see render.log); render the report elsewhere"
  done
fi

# The torch cross-check: our PyTorch-compatible AdamW (host, forge-torch-compat) against
# torch.optim.AdamW(fused=True) on this GPU. FH_SKIP_TORCH=1 skips it; FH_TORCH_QUICK=1 uses 2^20 elements.
if [ "${FH_SKIP_TORCH:-0}" = 1 ]; then
  say "torch cross-check: skipped (FH_SKIP_TORCH=1)"
elif has forge-torch-compat && command -v python3 >/dev/null 2>&1; then
  PYTHONUNBUFFERED=1 python3 "$ROOT/scripts/torch_crosscheck.py" --binary "$B/bin/forge-torch-compat" \
    ${FH_TORCH_QUICK:+--quick} "$OUT/torch_crosscheck" > "$OUT/torch_crosscheck.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || status=1
  say "torch cross-check: $([ $rc -eq 0 ] && echo PASS || echo "FAIL (rc $rc)")"
  tail -n 40 "$OUT/torch_crosscheck.log" | sed 's/^/    /' | tee -a "$SUMMARY" >/dev/null
else
  say "torch cross-check: NOT RUN (forge-torch-compat or python3 missing)"
  status=1
fi

say "== overall: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
