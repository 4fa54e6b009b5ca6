#!/usr/bin/env bash
# Configures and builds forge-harness into build/ (or $FH_BUILD_DIR).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${FH_BUILD_DIR:-$ROOT/build}"
bash "$ROOT/scripts/setup.sh"
export PATH="/usr/local/cuda/bin:$PATH"
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_COMPILER="$(command -v nvcc)" >/dev/null
fi
cmake --build "$BUILD" -j "${FH_JOBS:-$(nproc)}" "$@"
