#!/usr/bin/env bash
# Tests scripts/render_memory_timeline.py with no GPU: a real forge-verify report of
# eq6_memory_model (the twin stack's timelines) gives a PNG; bad input (a missing report, a file
# that is not HDF5, a report without a timeline, an output folder that does not exist) exits 2 and
# writes no PNG. The model-step mode: a report judged from docs/model_step/json (the runner's
# measurements) gives a PNG for llama8b; a model the report does not hold exits 2 with no PNG.
# Usage: scripts/test_render_memory_timeline.sh FORGE_VERIFY   (FH_PYTHON: a python3 with h5py and matplotlib)
set -u
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
FV="${1:?usage: test_render_memory_timeline.sh FORGE_VERIFY}"
R="$ROOT/scripts/render_memory_timeline.py"
PY="${FH_PYTHON:-python3}"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
"$PY" -c 'import h5py, matplotlib' 2>/dev/null || { echo "test_render_memory_timeline: $PY lacks h5py or matplotlib" >&2; exit 2; }

"$FV" --claim eq6_memory_model --report "$T/eq6.h5" > "$T/fv.log" 2>&1 || { cat "$T/fv.log"; fail "forge-verify eq6_memory_model"; }
"$FV" --claim sr_exact_mean --report "$T/other.h5" > "$T/fv2.log" 2>&1 || { cat "$T/fv2.log"; fail "forge-verify sr_exact_mean"; }
"$PY" "$R" "$T/eq6.h5" "$T/tl.png" || fail "render on a report with timelines"
[ "$(head -c 4 "$T/tl.png" | tail -c 3)" = "PNG" ] || fail "tl.png is not a PNG"
ms=()
for f in "$ROOT"/docs/model_step/json/harness_*.json; do ms+=(--model-step "$f"); done
"$FV" --claim model_step_figures "${ms[@]}" --report "$T/ms.h5" > "$T/fv3.log" 2>&1
[ -f "$T/ms.h5" ] || { cat "$T/fv3.log"; fail "forge-verify model_step_figures wrote no report"; }
"$PY" "$R" "$T/ms.h5" "$T/ms.png" llama8b || fail "render the model step's timelines"
[ "$(head -c 4 "$T/ms.png" 2>/dev/null | tail -c 3)" = "PNG" ] || fail "ms.png is not a PNG"
echo "not hdf5" > "$T/bad.h5"
for args in "$T/none.h5 $T/a.png" "$T/bad.h5 $T/b.png" "$T/other.h5 $T/c.png" "$T/eq6.h5 $T/no/such/d.png" \
            "$T/ms.h5 $T/e.png qwen14b" "$T/eq6.h5 $T/f.png llama8b"; do
  set -- $args
  "$PY" "$R" "$@" 2> "$T/err.txt"
  rc=$?
  [ $rc -eq 2 ] || fail "rc $rc (want 2) for $args"
  [ ! -e "$2" ] || fail "a PNG was written for $args"
  grep -q "render_memory_timeline:" "$T/err.txt" || fail "no message for $args"
done
[ $fails -eq 0 ] && echo "test_render_memory_timeline: ok" || echo "test_render_memory_timeline: $fails failure(s)"
exit $((fails != 0))
