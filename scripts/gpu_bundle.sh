#!/usr/bin/env bash
# Builds what the GPU runner runs and packs it into bundle/fh_gpu_bundle.tar.xz (kept well under
# the ~64 MiB that travels to the runner; xz, because every binary embeds the whole kernel set and
# xz packs those copies 2.4x tighter than gzip: 26 against 63 MB, measured on one bundle): the
# stripped GPU suite binaries (suites/gpu/test_*), forge-verify, forge-bench with Google Benchmark's
# shared library beside it ($ORIGIN run path), and, under lib/, the shared libraries of the HDF5 and
# MPFR chains as a fallback for a runner that lacks one (gpu_runner.sh puts lib/ on LD_LIBRARY_PATH
# only when ldd reports a library missing). cuBLAS is never bundled (nor linked: the binaries load it
# when first called): the runner's own cuBLAS 13.1 in /usr/local/cuda is the one the suites describe.
# Usage: scripts/gpu_bundle.sh            (build dir: $FH_BUILD_DIR or build/, jobs: $FH_JOBS, FH_BUNDLE_OUT, FH_BUNDLE_SUITES, FH_BUNDLE_VERIFY, FH_BUNDLE_MODEL_STEP, FH_NO_BENCH=1 leaves forge-bench out, FH_BUNDLE_LIBS=0 the fallback libraries)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${FH_BUILD_DIR:-$ROOT/build}"
JOBS="${FH_JOBS:-$(nproc)}"
# FH_BUNDLE_OUT: the packed file (default bundle/fh_gpu_bundle.tar.xz; another name lets two bundles
# for two calls be packed side by side).
PACKED="${FH_BUNDLE_OUT:-$ROOT/bundle/fh_gpu_bundle.tar.xz}"
case "$PACKED" in *.tar.xz) ;; *) echo "gpu_bundle: FH_BUNDLE_OUT='$PACKED' must end in .tar.xz (nothing built)" >&2; exit 2 ;; esac
OUTDIR="$(dirname "$PACKED")"
LIMIT_BYTES=$((60 * 1024 * 1024))
export PATH="/usr/local/cuda/bin:$PATH"
case "${FH_BUNDLE_VERIFY:-0}" in
  0|1) ;;
  *) echo "gpu_bundle: FH_BUNDLE_VERIFY='$FH_BUNDLE_VERIFY' must be 0 or 1 (nothing built)" >&2; exit 2 ;;
esac
case "${FH_BUNDLE_MODEL_STEP:-0}" in
  0|1) ;;
  *) echo "gpu_bundle: FH_BUNDLE_MODEL_STEP='$FH_BUNDLE_MODEL_STEP' must be 0 or 1 (nothing built)" >&2; exit 2 ;;
esac
case "${FH_BUNDLE_LIBS:-1}" in
  0|1) ;;
  *) echo "gpu_bundle: FH_BUNDLE_LIBS='$FH_BUNDLE_LIBS' must be 0 or 1 (nothing built)" >&2; exit 2 ;;
esac
preset="${FH_BUNDLE_XZ_PRESET:-6}"
case "$preset" in
  [0-9]) ;;
  *) echo "gpu_bundle: FH_BUNDLE_XZ_PRESET='$preset' must be one digit, 0 .. 9 (nothing built)" >&2; exit 2 ;;
esac

# A PTX-only build (FH_DEVICE_SASS=OFF, GPU-less CI) refuses every GPU at run time: never pack one.
if grep -q '^FH_DEVICE_SASS:BOOL=OFF' "$BUILD/CMakeCache.txt" 2>/dev/null; then
  echo "gpu_bundle: $BUILD is configured with FH_DEVICE_SASS=OFF (PTX only); use another FH_BUILD_DIR or reconfigure with -DFH_DEVICE_SASS=ON" >&2
  exit 1
fi

# A kernel mutants' build (FH_GPU_RULE_FAMILY: some rule families only, scripts/mutate_gpu.py) is no
# product either: its suites would skip the other rules.
if grep -Eq '^FH_GPU_RULE_FAMILY:STRING=.+' "$BUILD/CMakeCache.txt" 2>/dev/null; then
  echo "gpu_bundle: $BUILD is configured with FH_GPU_RULE_FAMILY (a kernel mutants' build, some rule families only); use a full build" >&2
  exit 1
fi

if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$(command -v nvcc)" >/dev/null
fi

gpu_suites=()
for src in "$ROOT"/suites/gpu/test_*.cu "$ROOT"/suites/gpu/test_*.cpp; do
  [ -e "$src" ] || continue
  name="$(basename "$src")"; gpu_suites+=("${name%.*}")
done
targets=("${gpu_suites[@]}" forge-verify forge-torch-compat forge-model-step)
# FH_BUNDLE_SUITES: only these GPU suites and no forge-verify / torch-compat / model-step (a
# kernel speed run's bundle, well under the carry limit now that every binary holds two kernels).
# FH_BUNDLE_VERIFY=1 adds forge-verify back (a kernel call that also runs the GPU claims),
# FH_BUNDLE_MODEL_STEP=1 forge-model-step (a call that also trains or measures the model step).
if [ -n "${FH_BUNDLE_SUITES:-}" ]; then
  read -r -a gpu_suites <<< "$FH_BUNDLE_SUITES"
  targets=("${gpu_suites[@]}")
  [ "${FH_BUNDLE_VERIFY:-0}" = 1 ] && targets+=(forge-verify)
  [ "${FH_BUNDLE_MODEL_STEP:-0}" = 1 ] && targets+=(forge-model-step)
fi
if [ -n "${FH_NO_BENCH:-}" ]; then
  echo "gpu_bundle: FH_NO_BENCH is set: bundle without benchmarks" >&2
elif ninja -C "$BUILD" -t targets all 2>/dev/null | grep "^forge-bench:" >/dev/null; then
  targets+=(forge-bench)
else
  echo "gpu_bundle: forge-bench is not configured (Google Benchmark not found): bundle without benchmarks" >&2
fi
echo "gpu_bundle: building ${targets[*]}"
cmake --build "$BUILD" -j "$JOBS" --target "${targets[@]}"

STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/fh_gpu_bundle/bin" "$STAGE/fh_gpu_bundle/lib"
B="$STAGE/fh_gpu_bundle"
for t in "${targets[@]}"; do
  strip -o "$B/bin/$t" "$BUILD/$t"
done
if [ -x "$B/bin/forge-bench" ]; then
  bm="$(ldd "$BUILD/forge-bench" | awk '/libbenchmark\.so/ {print $3}')"
  [ -n "$bm" ] || { echo "gpu_bundle: forge-bench does not link libbenchmark?" >&2; exit 1; }
  cp -L "$bm" "$B/bin/"
fi

# Fallback libraries (FH_BUNDLE_LIBS=0 leaves them out: the runner has MPFR, GMP and HDF5 1.10.8 with
# its dependencies, ../shared/GPU_RUNNER.md, and they cost about 6.6 MB packed, which forge-verify's
# bundle needs to travel beside the tree): everything the binaries resolve here except glibc's own libraries, the C++
# runtime (the runner's GCC 13 one is newer), the CUDA libraries, NCCL (190 MB; the runner has its
# own in /lib/x86_64-linux-gnu) and libbenchmark (shipped above).
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libresolv|libstdc\+\+|libgcc_s|libcublas|libcublasLt|libcudart|libnccl|libbenchmark)'
if [ "${FH_BUNDLE_LIBS:-1}" = 1 ]; then
  for t in "${targets[@]}"; do
    ldd "$BUILD/$t" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
  done | sort -u | while read -r soname path; do
    if [[ "$soname" =~ $skip ]]; then continue; fi
    cp -L "$path" "$B/lib/$soname"
  done
  strip --strip-unneeded "$B"/lib/*.so* 2>/dev/null || true
fi

# What was built, for the runner's report.
{
  echo "built_utc=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "git_revision=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)$(git -C "$ROOT" diff --quiet 2>/dev/null || echo -dirty)"
  echo "nvcc=$(nvcc --version | tail -1)"
  echo "binaries=${targets[*]}"
  echo "gpu_suites=${gpu_suites[*]}"
} > "$B/MANIFEST"

mkdir -p "$OUTDIR"
command -v xz >/dev/null || { echo "gpu_bundle: xz is needed to pack the bundle (apt-get install xz-utils)" >&2; exit 1; }
rm -f "$PACKED"
# A dictionary larger than one binary (375 MB each since the fatbins are uncompressed, CMakeLists.txt)
# lets xz pack the binaries' shared kernel set once; one thread (a second would cut the input into
# blocks packed apart). FH_BUNDLE_XZ_PRESET: 6 packs test_gpu_fused + forge-bench to 33.6 MB in
# about 9 minutes on 2 cores, 3 faster and larger.
tar -C "$STAGE" -cf - fh_gpu_bundle | xz -T1 --lzma2=preset="$preset",dict=768MiB > "$PACKED.partial"
mv "$PACKED.partial" "$PACKED"
size=$(stat -c %s "$PACKED")
echo "gpu_bundle: $PACKED, $((size / 1024)) KiB ($(du -sk "$B" | cut -f1) KiB unpacked)"
ls -la "$B/bin" "$B/lib" | sed 's/^/  /'
if [ "$size" -gt "$LIMIT_BYTES" ]; then
  echo "gpu_bundle: the bundle is over $((LIMIT_BYTES / 1024 / 1024)) MiB: it may not travel to the runner" >&2
  exit 1
fi
