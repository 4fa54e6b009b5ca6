#!/usr/bin/env bash
# Configures and builds forge-harness into build/ (or $FH_BUILD_DIR).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${FH_BUILD_DIR:-$ROOT/build}"
bash "$ROOT/scripts/setup.sh"
export PATH="/usr/local/cuda/bin:$PATH"
# The compile cache (ccache, both the C++ and the CUDA compiler): keyed on paths relative to the
# checkout (CCACHE_BASEDIR, no working directory in the key), so a fresh clone in another folder
# reuses what an earlier build compiled. FH_NO_CCACHE=1 builds without it; a cold cache only costs
# the lookups.
launcher=()
if [ -z "${FH_NO_CCACHE:-}" ] && command -v ccache >/dev/null; then
  export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-8G}"
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
# FH_DEVICE_SASS=OFF: device code as PTX only (no ptxas; for machines without a GPU, as .ci/run
# builds); it is a configure-time choice, so it applies to a build folder when first configured
# and whenever it is given.
sass=()
[ -n "${FH_DEVICE_SASS:-}" ] && sass=(-DFH_DEVICE_SASS="$FH_DEVICE_SASS")
if [ ! -f "$BUILD/build.ninja" ] || [ ${#sass[@]} -gt 0 ]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$(command -v nvcc)" \
    "${launcher[@]}" "${sass[@]}" >/dev/null
fi
cmake --build "$BUILD" -j "${FH_JOBS:-$(nproc)}" "$@"
