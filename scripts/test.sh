#!/usr/bin/env bash
# The test command: set up, build, run the CPU suites (and the GPU suites when a GPU is present).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${FH_BUILD_DIR:-$ROOT/build}"
bash "$ROOT/scripts/build.sh"
LABEL="cpu"
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then LABEL="cpu|gpu"; fi
cd "$BUILD"
ctest -L "$LABEL" --output-on-failure -j "${FH_JOBS:-$(nproc)}"
