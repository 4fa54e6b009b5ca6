#!/usr/bin/env bash
# Tests scripts/render_summary.py end to end: renders the summary page of a CPU
# report and loads it in headless Chromium (Debian's chromium), which must show every image
# decoded (the page's own on-load check, read back with --dump-dom) and log no console message
# (--enable-logging=stderr). Then the same check must fail on each planted defect
# (FH_SUMMARY_PLANT=missing_image, js_error), and bad input must exit 2 with no page written.
# The page must also list the claims in the registry's order (never alphabetical), say so when the
# report was made without a GPU, and give the stagnation gap with its unit.
#
# Usage: test_summary_page.sh FORGE_VERIFY [WORKDIR]
#   FORGE_VERIFY: the built forge-verify (makes the report: four fidelity claims, one GPU claim
#   that is not-run here, one claim made to throw with FH_PLANT_THROWING_CLAIM -> verdict error).
#   FH_SUMMARY_REPORT=FILE reuses a report instead (no claim run); FH_PYTHON picks the interpreter
#   (default: the first of python3, /usr/bin/python3 with h5py, numpy and matplotlib).
set -u
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
FV="${1:?usage: test_summary_page.sh FORGE_VERIFY [WORKDIR]}"
T="$(mktemp -d "${2:-${TMPDIR:-/tmp}}/test_summary_page.XXXXXX")"
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

PY=""
for cand in ${FH_PYTHON:-} python3 /usr/bin/python3; do
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import h5py, numpy, matplotlib' >/dev/null 2>&1; then
    PY="$cand"; break
  fi
done
[ -n "$PY" ] || { echo "test_summary_page: no python3 with h5py, numpy and matplotlib (apt-get install -y python3-h5py python3-matplotlib)" >&2; exit 2; }
CHROMIUM="${FH_CHROMIUM:-/usr/bin/chromium}"
[ -x "$CHROMIUM" ] || { echo "test_summary_page: no $CHROMIUM (apt-get install -y chromium)" >&2; exit 2; }
RS="$ROOT/scripts/render_summary.py"
start=$(date +%s)

# ---- the report ----
"$FV" --list-claims-json > "$T/registry.json" || { echo "test_summary_page: $FV --list-claims-json failed" >&2; exit 2; }
if [ -n "${FH_SUMMARY_REPORT:-}" ]; then
  REPORT="$FH_SUMMARY_REPORT"
else
  REPORT="$T/report.h5"
  FH_PLANT_THROWING_CLAIM=int8_codec_bound "$FV" --quiet --report "$REPORT" \
    --claim stagnation,prop4_int8,gradient_fidelity,sr_statistics,stagnation_gpu,int8_codec_bound,tp_microbatch > "$T/fv.log" 2>&1
  [ -f "$REPORT" ] || { cat "$T/fv.log" >&2; echo "test_summary_page: forge-verify wrote no report" >&2; exit 2; }
fi
echo "report: $REPORT ($(( $(date +%s) - start )) s)"

# A made-up diff in forge-verify diff --json's shape.
cat > "$T/diff.json" <<'EOF'
{"base": "base.h5", "new": "new.h5", "changes": [
  {"kind": "verdict", "path": "stagnation/bf16_sr vs fp32_master/sr_within_noise", "field": "verdict",
   "base": "pass", "new": "fail", "regression": true, "note": "planted: pass -> fail"},
  {"kind": "meta", "path": "meta/git_revision", "field": "value", "base": "aaaa", "new": "bbbb", "regression": false, "note": ""}]}
EOF

# load PAGE_DIR NAME: Chromium loads the page; sets DOM_OK (the page's image/error check said ok)
# and CONSOLE_OK (no console message in Chromium's log).
load() {
  local dir="$1" name="$2"
  timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$T/chrome-$name" \
    --enable-logging=stderr --v=0 --virtual-time-budget=5000 --dump-dom "file://$dir/index.html" \
    > "$T/$name.dom" 2> "$T/$name.log"
  DOM_STATUS="$(grep -o '<div id="page-check"[^>]*>[^<]*' "$T/$name.dom" || echo 'no page-check element')"
  DOM_OK=0; CONSOLE_OK=0
  case "$DOM_STATUS" in *'data-status="ok"'*) DOM_OK=1 ;; esac
  grep -q ':CONSOLE' "$T/$name.log" || CONSOLE_OK=1
  echo "  $name: $DOM_STATUS | console: $(grep ':CONSOLE' "$T/$name.log" | head -3 | sed 's/.*CONSOLE[^]]*] //' || true)"
}

# ---- the real page ----
if "$PY" "$RS" "$REPORT" -o "$T/page" --registry "$T/registry.json" --diff "$T/diff.json" \
     --bench "$ROOT/scripts/testdata/bench_sample.json" > "$T/rs.log" 2>&1; then
  load "$T/page" page
  [ "$DOM_OK" = 1 ] && ok "page loads, every image decoded" || fail "page check: $DOM_STATUS"
  [ "$CONSOLE_OK" = 1 ] && ok "no console message" || fail "console messages in $T/page.log"
  n_img=$(ls "$T/page/figures" | wc -l)
  [ "$n_img" -ge 7 ] && ok "$n_img figures (stagnation x2, INT8 x2, gradient, SR, roofline)" || fail "only $n_img figures: $(ls "$T/page/figures")"
  D="$T/page.dom"
  grep -q 'class="v v-error">error</span>' "$D" && ok "the throwing claim is shown as error" || fail "no error verdict on the page"
  grep -q 'class="v v-not-run">not-run</span>' "$D" && ok "the GPU claim is shown as not-run" || fail "no not-run verdict on the page"
  # A finding (stagnation's paper statements) in its own words, and the vocabulary said once.
  grep -q 'class="v v-confirmed">confirmed</span>' "$D" && ok "a finding is shown as confirmed" \
    || fail "no confirmed finding on the page (stagnation's sr_within_noise)"
  [ "$(grep -o 'id="vocabulary"' "$D" | wc -l)" = 1 ] && ok "the verdict vocabulary is said once" \
    || fail "the page does not say the verdict vocabulary exactly once"
  grep -q 'int8_codec_bound</a></td><td><span class="v v-error">' "$D" && ok "error is not shown as pass" || fail "int8_codec_bound's row is not error"
  grep -q 'stagnation_gpu</a></td><td><span class="v v-not-run">' "$D" && ok "not-run is not shown as pass" || fail "stagnation_gpu's row is not not-run"
  grep -q 'bf16 round-to-nearest loses ~6%' "$D" && ok "paper statements from the registry" || fail "no paper statement"
  grep -q 'planted: pass -&gt; fail' "$D" && ok "diff section lists the changes" || fail "no diff section"
  grep -q 'exact optimum of the eval loss\|Exact least-squares optimum' "$D" && ok "stagnation's exact optimum is reported" || fail "no exact optimum on the page"
  grep -q 'roofline.png' "$D" && ok "benchmark roofline" || fail "no roofline"
  if [ -z "${FH_SUMMARY_REPORT:-}" ]; then  # our report holds tp_microbatch's per-H200 cases
    grep -q 'tp_microbatch.png' "$D" && [ -s "$T/page/figures/tp_microbatch.png" ] && ok "one TP rank's micro-batch figure" \
      || fail "no tp_microbatch figure (the report has tp_microbatch's h200.tp* cases)"
  fi
  grep -q 'speedup_bars.png' "$D" && [ -s "$T/page/figures/speedup_bars.png" ] && ok "fused vs cuBLAS + rule bars" \
    || fail "no speedup bars (the sample has fused and cublas runs of adamw fp32 and bf16)"
  # Claims in the paper's order (the registry's), never alphabetical; a run without a
  # GPU says so; the stagnation gap has its unit; the page says how many claims were judged.
  page_order="$(grep -o 'href="#claim-[a-z0-9_]*"' "$D" | sed 's/href="#claim-//; s/"$//' | tr '\n' ' ')"
  want_order="$("$PY" -c 'import json, sys
ids = sys.argv[2].split()
print(" ".join(c["id"] for c in json.load(open(sys.argv[1]))["claims"] if c["id"] in ids) + " ")' "$T/registry.json" "$page_order")"
  alpha_order="$(echo $page_order | tr ' ' '\n' | sort | tr '\n' ' ')"
  [ -n "$page_order" ] && [ "$page_order" = "$want_order" ] && ok "claims in the registry's order: $page_order" \
    || fail "claims not in the registry's order: page '$page_order', registry '$want_order'"
  [ "$page_order" != "$alpha_order" ] && ok "claims not in alphabetical order" \
    || fail "the page lists the claims alphabetically ($page_order)"
  gpu_name="$("$PY" -c 'import h5py, sys; v = h5py.File(sys.argv[1], "r")["meta"].attrs.get("gpu_name", ""); print(v.decode() if isinstance(v, bytes) else v)' "$REPORT")"
  if [ "$gpu_name" = none ]; then
    grep -q 'id="no-gpu"' "$D" && grep -q 'This run had no GPU' "$D" && ok "the page says the run had no GPU" \
      || fail "a run without a GPU is not said on the page"
  else
    grep -q 'id="no-gpu"' "$D" && fail "a run on $gpu_name is said to have had no GPU" || ok "GPU run: no no-GPU note"
  fi
  grep -Eq 'claims? judged; checks: ' "$D" && ok "the page says how many claims were judged" || fail "no 'claims judged' line"
  grep -Eq 'rel_gap = [-+0-9.e]+ \([-+][0-9.e+-]+%\)' "$D" && ok "the stagnation gap is shown with its unit (%)" \
    || fail "the stagnation gap is a bare ratio (no 'rel_gap = x (+y%)')"
  grep -Eq '<tr><td>bf16_rne</td><td class="num">[-+][0-9.e+-]+%</td>' "$D" && ok "the stagnation table gives the gap in %" \
    || fail "the stagnation table gives bf16_rne's gap without its unit"
else
  cat "$T/rs.log" >&2; fail "render_summary.py failed on a good report"
fi

# ---- planted defects: the check must fail on each ----
for plant in missing_image js_error; do
  if FH_SUMMARY_PLANT=$plant "$PY" "$RS" "$REPORT" -o "$T/page_$plant" --registry "$T/registry.json" > "$T/rs_$plant.log" 2>&1; then
    load "$T/page_$plant" "$plant"
    if [ "$plant" = missing_image ]; then
      [ "$DOM_OK" = 0 ] && ok "planted missing image caught by the page check" || fail "planted missing image not caught"
    else
      [ "$CONSOLE_OK" = 0 ] && ok "planted JavaScript error caught in Chromium's console log" || fail "planted JavaScript error not seen in the console log"
      [ "$DOM_OK" = 0 ] && ok "planted JavaScript error caught by the page check" || fail "planted JavaScript error not caught by the page check"
    fi
  else
    cat "$T/rs_$plant.log" >&2; fail "render_summary.py failed with FH_SUMMARY_PLANT=$plant"
  fi
done

# ---- bad input: exit 2, a message, no page ----
bad() {
  local what="$1"; shift
  "$PY" "$RS" "$@" > "$T/bad.out" 2> "$T/bad.err"
  local rc=$?
  if [ $rc = 2 ] && [ -s "$T/bad.err" ] && [ ! -e "$T/badpage" ] && ! ls -a "$T" | grep -q '^\.badpage\.'; then
    ok "$what: exit 2, no page ($(head -1 "$T/bad.err"))"
  else
    fail "$what: exit $rc, stderr '$(head -1 "$T/bad.err")', page left: $(ls -a "$T" | grep badpage)"
  fi
}
echo "not hdf5" > "$T/not_a_report.h5"
"$PY" -c 'import h5py, sys; h5py.File(sys.argv[1], "w").create_group("x")' "$T/other.h5"
echo '{"no": "changes"}' > "$T/bad_diff.json"
bad "missing report" "$T/absent.h5" -o "$T/badpage"
bad "not HDF5" "$T/not_a_report.h5" -o "$T/badpage"
bad "HDF5 but not a report" "$T/other.h5" -o "$T/badpage"
bad "diff JSON without changes" "$REPORT" -o "$T/badpage" --diff "$T/bad_diff.json"
bad "missing registry" "$REPORT" -o "$T/badpage" --registry "$T/absent.json"
mkdir "$T/badpage_user" && echo keep > "$T/badpage_user/notes.txt"
"$PY" "$RS" "$REPORT" -o "$T/badpage_user" > /dev/null 2>&1
[ $? = 2 ] && [ "$(cat "$T/badpage_user/notes.txt")" = keep ] && ok "a folder it did not write is refused" || fail "a user's folder was replaced"

# The family's figure, from the committed family report (issue 33: docs/model_step/family): every model
# that ran, the 14B (no path fits 80 GB) without bars.
FR="$ROOT/docs/model_step/family/family_report.h5"
"$PY" "$RS" "$FR" -o "$T/family" > "$T/family.log" 2>&1 && grep -q 'family.png' "$T/family/index.html" \
  && [ -s "$T/family/figures/family.png" ] && ok "the family's figure" || fail "no family figure from $FR ($(tail -1 "$T/family.log"))"

# The convergence study's figure, from its committed report (docs/model_step/convergence): the INT8
# configurations that diverged are named so in the legend.
CR="$ROOT/docs/model_step/convergence/convergence_report.h5"
"$PY" "$RS" "$CR" -o "$T/convergence" > "$T/convergence.log" 2>&1 && grep -q 'convergence_loss.png' "$T/convergence/index.html" \
  && [ -s "$T/convergence/figures/convergence_loss.png" ] && ok "the convergence study's figure" \
  || fail "no convergence figure from $CR ($(tail -1 "$T/convergence.log"))"
# ... and the INT8 divergence's cause, from the traced runs the report judged.
grep -q 'convergence_int8_cause.png' "$T/convergence/index.html" && [ -s "$T/convergence/figures/convergence_int8_cause.png" ] \
  && ok "the INT8 divergence's figure" || fail "no INT8 divergence figure from $CR"

echo "test_summary_page: $fails failure(s), $(( $(date +%s) - start )) s"
[ $fails = 0 ]
