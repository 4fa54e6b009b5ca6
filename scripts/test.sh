#!/usr/bin/env bash
# The test command: set up, build, run the CPU suites (and the GPU suites when a GPU is present).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${FH_BUILD_DIR:-$ROOT/build}"
bash "$ROOT/scripts/build.sh"
# Both labels everywhere: without a GPU each GPU test case reports itself skipped (one CTest
# test per GoogleTest case), so the log and the JUnit file say what did not run instead of
# leaving it out. The JUnit file (ctest-junit.xml in the build folder) is kept for CI.
cd "$BUILD"
ctest -L "cpu|gpu" --output-on-failure --output-junit "$BUILD/ctest-junit.xml" -j "${FH_JOBS:-$(nproc)}"
