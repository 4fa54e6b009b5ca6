#!/usr/bin/env bash
# Tests scripts/render_audit.py with no GPU: builds a tiny fake forge-verify report in
# the real layout (reports/SCHEMA.md: /meta, /<claim>/<case>/{checks/<check>,data}), renders the
# audit page and checks that a failing check shows "fail", an errored one "fail", a case whose
# checks are all not-run "not run" (never "pass"), a pass whose claim check never ran "pass
# (partial)", an absent claim "not in this report", and that bad input (a missing file, a file
# that is not HDF5, an HDF5 file that is not a report) exits 2 and writes no page.
# Usage: scripts/test_render_audit.sh   (FH_PYTHON picks the interpreter; it needs h5py)
# Exits non-zero if any check fails.
set -u
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
RA="$ROOT/scripts/render_audit.py"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }

PY=""
for cand in ${FH_PYTHON:-} python3 /usr/bin/python3; do
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import h5py' >/dev/null 2>&1; then PY="$cand"; break; fi
done
[ -n "$PY" ] || { echo "test_render_audit: no python3 with h5py (apt-get install -y python3-h5py)" >&2; exit 2; }

# ---- the fake report: one case per situation ----
"$PY" - "$T/fake.h5" "$T/notreport.h5" <<'EOF' || { echo "test_render_audit: could not write the fake report" >&2; exit 2; }
import sys, h5py
AGG = ("pass", "fail", "not-run", "error")
def counts(vs):
    n = {k: sum(v == k for v in vs) for k in AGG}
    v = "fail" if n["fail"] else "error" if n["error"] else "pass" if n["pass"] else "not-run"
    return v, n
def agg(g, vs):
    v, n = counts(vs)
    g.attrs["verdict"] = v
    for k in AGG:
        g.attrs["n_" + k.replace("-", "_")] = n[k]
with h5py.File(sys.argv[1], "w") as f:
    m = f.create_group("meta").attrs
    for k, v in dict(tool="forge-verify", tool_version="forge-verify test", git_revision="abc1234", host="ci",
                     gpu_name="none", gpu_driver="none", cuda_runtime="unknown", cublas="unknown", seed="1",
                     configuration="fake", start_time_utc="2026-01-01T00:00:00Z").items():
        m[k] = v
    for p, role in (("persistent", "fused"), ("streamk", "two_phase")):
        for k, v in dict(package="fused_grad_optimizer", version="1.0.0", commit="7cba611", triton="3.6.0",
                         torch="2.11.0", cuda="13.0", device="NVIDIA H200", role=role,
                         switches='{"_use_tma": false, "entry": "kernel (K:1)"}').items():
            m["external.%s.%s" % (p, k)] = v
    # claim -> case -> (case attrs, [(check, verdict, reason)])
    claims = {
        "ext_prop1": {"persistent_vs_streamk.c1": ({"path": "persistent", "two_phase_path": "streamk"},
                                                    [("fused_equals_two_phase", "fail", "PLANTED_FAIL W differs")])},
        "ext_corollary1": {
            "fp8.c1": ({"path": "fp8"}, [("ran", "not-run", "PLANTED_NOTRUN unsupported")]),
            "fp8.c2": ({"path": "fp8"}, [("only_order_differs", "not-run", "PLANTED_NOTRUN no G")]),
            "wmma_v3.c1": ({"path": "wmma_v3"}, [("host_torch_model_reproduces_reference", "pass", ""),
                                                 ("only_order_differs", "not-run", "PLANTED_NEVER no order")]),
            "persistent.c1": ({"path": "persistent"}, [("host_torch_model_reproduces_reference", "pass", ""),
                                                       ("only_order_differs", "pass", "")])},
        "ext_order_probe": {"tma.probe": ({"path": "tma"}, [("ran", "error", "PLANTED_ERROR CUDA error")])},
        "ext_other": {"sgd.x": ({}, [("something", "pass", "")])},  # no path attr: from the name
    }
    every = []
    for claim, cases in claims.items():
        cg = f.create_group(claim)
        cvs = []
        for case, (attrs, checks) in cases.items():
            g = cg.create_group(case)
            g.create_group("data")
            ch = g.create_group("checks")
            vs = []
            for name, v, reason in checks:
                c = ch.create_group(name).attrs
                c["verdict"], c["reason"], c["metric_name"], c["pass_if"] = v, reason, "differing", "<="
                c["metric"], c["bound"] = (1.0 if v == "fail" else 0.0) if v in ("pass", "fail") else float("nan"), 0.0
                vs.append(v)
            agg(g, vs)
            for k, v in attrs.items():
                g.attrs[k] = v
            cvs += vs
        agg(cg, cvs)
        cg.attrs["n_cases"] = len(cases)
        every += cvs
    f.attrs["schema_version"] = 2
    agg(f, every)
with h5py.File(sys.argv[2], "w") as f:
    f.create_group("something")
EOF

section() {  # section CLAIM: that claim's part of the page
  awk -v h="### $1" '$0 == h {on = 1; print; next} /^### / {on = 0} on' "$T/out.md"
}
row() {  # row CLAIM PATH: the table row of PATH under CLAIM
  section "$1" | grep -E "^\| $2 \|"
}

"$PY" "$RA" "$T/out.md" "$T/fake.h5" > "$T/ra.log" 2>&1; rc=$?
if [ $rc -ne 0 ] || [ ! -s "$T/out.md" ]; then
  cat "$T/ra.log" >&2; fail "render on the fake report: rc $rc, want 0 and a page"
else
  ok "rendered the fake report"
  r="$(row ext_prop1 persistent)"
  echo "$r" | grep -q '| \*\*fail\*\* |' && echo "$r" | grep -q PLANTED_FAIL \
    && echo "$r" | grep -q '/ext_prop1/persistent_vs_streamk.c1/checks/fused_equals_two_phase' \
    && ok "failing check shows fail, its reason and evidence path" || fail "ext_prop1 persistent row: '$r'"
  r="$(row ext_corollary1 fp8)"
  if echo "$r" | grep -q '| not run |' && ! echo "$r" | grep -qi 'pass |'; then ok "all-not-run path shows 'not run', not pass"
  else fail "ext_corollary1 fp8 row (all checks not-run): '$r'"; fi
  grep -E '^\| ext_corollary1 \|' "$T/out.md" | grep -q 'not run: fp8' && ok "overview lists fp8 as not run" \
    || fail "overview does not list fp8 as not run: $(grep -E '^\| ext_corollary1 \|' "$T/out.md")"
  r="$(row ext_corollary1 wmma_v3)"
  echo "$r" | grep -q '| pass (partial) |' && echo "$r" | grep -q only_order_differs \
    && ok "a pass whose claim check never ran shows 'pass (partial)'" || fail "ext_corollary1 wmma_v3 row: '$r'"
  r="$(row ext_corollary1 persistent)"
  echo "$r" | grep -q '| pass |' && ok "all-passed path shows pass" || fail "ext_corollary1 persistent row: '$r'"
  r="$(row ext_order_probe tma)"
  echo "$r" | grep -q '| \*\*fail\*\* |' && echo "$r" | grep -q PLANTED_ERROR \
    && ok "errored check shows fail" || fail "ext_order_probe tma row (error): '$r'"
  section ext_model_memory | grep -q 'not in this report' && ok "absent claim: not in this report" \
    || fail "ext_model_memory is not marked absent"
  row ext_other sgd | grep -q '| pass |' && ok "other claim gets a generic table (path from the case name)" \
    || fail "no generic table row for ext_other sgd"
  grep -q 'fused_grad_optimizer 1.0.0' "$T/out.md" && grep -q 'abc1234' "$T/out.md" \
    && ok "provenance from /meta" || fail "provenance (package version, git revision) missing"
fi

# Two reports: rows add up over both, evidence names the report file (--force: out.md exists).
cp "$T/fake.h5" "$T/second.h5"
"$PY" "$RA" --force "$T/out.md" "$T/fake.h5" "$T/second.h5" > "$T/ra2.log" 2>&1 \
  && row ext_prop1 persistent | grep -q '| \*\*fail\*\* | 2 | 0 | 2 |' \
  && row ext_prop1 persistent | grep -q 'fake.h5:/ext_prop1/' && ok "two reports: counts add up, evidence names the file" \
  || { cat "$T/ra2.log" >&2; fail "two reports: row '$(row ext_prop1 persistent)'"; }

# Bad input: exit 2, one line on stderr, no page (and an existing page left as it was).
bad() {  # bad WHAT OUT ARGS...
  local what="$1" out="$2"; shift 2
  "$PY" "$RA" "$out" "$@" > "$T/bad.out" 2> "$T/bad.err"; local rc=$?
  if [ $rc -ne 2 ]; then fail "$what: rc $rc, want 2"
  elif [ "$(wc -l < "$T/bad.err")" -ne 1 ]; then fail "$what: stderr is not one line: $(cat "$T/bad.err")"
  else ok "$what: exit 2 ($(cat "$T/bad.err"))"; fi
}
bad "missing report" "$T/none.md" "$T/does_not_exist.h5"
[ -e "$T/none.md" ] && fail "missing report: a page was written" || ok "missing report: no page written"
echo "not hdf5" > "$T/text.h5"
bad "not HDF5" "$T/none.md" "$T/text.h5"
bad "HDF5, not a report" "$T/none.md" "$T/notreport.h5"
bad "one good, one missing" "$T/none.md" "$T/fake.h5" "$T/does_not_exist.h5"
[ -e "$T/none.md" ] && fail "bad input: a page was written" || ok "bad input: no page written"
echo "previous page" > "$T/keep.md"
bad "missing report, page exists" "$T/keep.md" "$T/does_not_exist.h5"
[ "$(cat "$T/keep.md")" = "previous page" ] && ok "existing page left as it was" || fail "existing page was changed"
ls -a "$T" | grep -q '^\.render_audit\.' && fail "a temporary file was left behind" || ok "no temporary file left"

if [ $fails -ne 0 ]; then echo "test_render_audit: $fails check(s) failed" >&2; exit 1; fi
echo "test_render_audit: all checks passed"
