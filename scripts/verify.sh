#!/usr/bin/env bash
# The main job: set up, build, run forge-verify (default configuration unless flags are given).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${FH_BUILD_DIR:-$ROOT/build}"
bash "$ROOT/scripts/build.sh" >&2
exec "$BUILD/forge-verify" "$@"
