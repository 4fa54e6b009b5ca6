#!/usr/bin/env bash
# Tests scripts/compare_reports.py on small HDF5 reports built with h5py after reports/SCHEMA.md
# (no C++ build needed). Exits non-zero, naming each failed expectation, if any fails.
# Needs a python3 with h5py and numpy (Debian: python3-h5py python3-numpy); tries python3, then
# /usr/bin/python3 (FH_PYTHON overrides).
set -u
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CMP="$ROOT/scripts/compare_reports.py"

PY=""
for cand in ${FH_PYTHON:-} python3 /usr/bin/python3; do
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import h5py, numpy' >/dev/null 2>&1; then
    PY="$cand"
    break
  fi
done
if [ -z "$PY" ]; then
  echo "test_compare_reports: no python3 with h5py and numpy (apt-get install -y python3-h5py python3-numpy)" >&2
  exit 2
fi
echo "interpreter: $(command -v "$PY") ($("$PY" -c 'import sys, h5py, numpy; print("python", sys.version.split()[0], "h5py", h5py.__version__, "numpy", numpy.__version__)'))"

T="$(mktemp -d "${TMPDIR:-/tmp}/test_compare_reports.XXXXXX")"
trap 'rm -rf "$T"' EXIT

# ------------------------------------------------------------------------------------------------
# Fixture builder: a minimal valid report (SCHEMA.md v1), and one variant per kind of difference.
# ------------------------------------------------------------------------------------------------
cat >"$T/make.py" <<'EOF'
import copy
import math
import sys

import h5py
import numpy as np

NAN = float("nan")


def check(verdict, metric_name="", metric=NAN, bound=NAN, reason="", bitwise=None):
    c = {"verdict": verdict, "reason": reason, "metric_name": metric_name,
         "metric": metric, "bound": bound}
    if bitwise is not None:
        c["differing"], c["max_ulp"], c["first_diff"] = bitwise
    return c


def base_spec():
    """meta + {claim: {case: {attrs, checks, data}}}, every name in creation order."""
    return {
        "meta": {"git_revision": "b7de1fe", "host": "ci-runner-3", "gpu_name": "none",
                 "gpu_driver": "none", "cuda_runtime": "13.0", "cublas": "13.1.0",
                 "seed": "20260622", "configuration": "default", "tool_version": "forge-harness 0.1",
                 "start_time_utc": "2026-06-22T10:00:00Z"},
        "claims": {
            "prop1_exactness": {
                "adamw_T4096": {
                    "attrs": {"rule": "adamw", "shape": "4096x256"},
                    "checks": {
                        "bitwise_vs_cublas": check("pass", "differing", 0.0, 0.0, "",
                                                   bitwise=(0, 0.0, "")),
                        "model_vs_mma": check("not-run", reason="no GPU"),
                        "rel_err": check("pass", "max_rel_err", 1.5e-7, 1e-6, "", None),
                    },
                    "data": {
                        "rel_err_per_step": (np.array([1e-7, NAN, 3e-7, 0.0]), "max rel err per step"),
                        "ulp_histogram": (np.array([[0.0, 10.0], [1.0, 2.0]]), "columns: ulp distance, count"),
                        "counts": (np.array([1, 2, 3], dtype=np.int64), ""),
                        "empty": (np.zeros(0), ""),
                    },
                },
                "sgd_T128": {
                    "attrs": {"rule": "sgd"},
                    "checks": {"bitwise_vs_cublas": check("pass", "differing", 0.0, 0.0, "",
                                                          bitwise=(0, 0.0, ""))},
                    "data": {},
                },
            },
            "int8_codec_bound": {
                "codec_e4": {
                    "attrs": {},
                    "checks": {"bound": check("pass", "max_abs_err_over_B", 0.49, 0.5, "")},
                    "data": {"errors": (np.array([0.1, 0.2, 0.49]), "")},
                },
            },
        },
    }


def agg(verdicts):
    n = {v: sum(1 for x in verdicts if x == v) for v in ("pass", "fail", "not-run")}
    v = "fail" if n["fail"] else ("pass" if n["pass"] else "not-run")
    return v, n["pass"], n["fail"], n["not-run"]


def set_counts(obj, verdicts):
    v, p, f, nr = agg(verdicts)
    obj.attrs["verdict"] = v
    obj.attrs["n_pass"] = np.int64(p)
    obj.attrs["n_fail"] = np.int64(f)
    obj.attrs["n_not_run"] = np.int64(nr)


def write(spec, path):
    with h5py.File(path, "w", track_order=True) as f:
        f.attrs["schema_version"] = np.int64(1)
        allv = [c["verdict"] for cl in spec["claims"].values() for cs in cl.values()
                for c in cs["checks"].values()]
        set_counts(f, allv)
        meta = f.create_group("meta", track_order=True)
        for k, v in spec["meta"].items():
            meta.attrs[k] = v
        for cl_name, cl in spec["claims"].items():
            g = f.create_group(cl_name, track_order=True)
            set_counts(g, [c["verdict"] for cs in cl.values() for c in cs["checks"].values()])
            g.attrs["n_cases"] = np.int64(len(cl))
            for cs_name, cs in cl.items():
                cg = g.create_group(cs_name, track_order=True)
                set_counts(cg, [c["verdict"] for c in cs["checks"].values()])
                for k, v in cs["attrs"].items():
                    cg.attrs[k] = v
                checks = cg.create_group("checks", track_order=True)
                for ch_name, ch in cs["checks"].items():
                    kg = checks.create_group(ch_name, track_order=True)
                    for k in ("verdict", "reason", "metric_name"):
                        kg.attrs[k] = ch[k]
                    for k in ("metric", "bound"):
                        kg.attrs[k] = np.float64(ch[k])
                    if "differing" in ch:
                        kg.attrs["differing"] = np.int64(ch["differing"])
                        kg.attrs["max_ulp"] = np.float64(ch["max_ulp"])
                        kg.attrs["first_diff"] = ch["first_diff"]
                data = cg.create_group("data", track_order=True)
                for d_name, (values, desc) in cs["data"].items():
                    ds = data.create_dataset(d_name, data=values)
                    if desc:
                        ds.attrs["description"] = desc


def case(s, claim, name):
    return s["claims"][claim][name]


def variants():
    v = {}
    s = base_spec()
    v["base"] = s
    # Same content, other provenance: must compare identical (meta is informational).
    s = base_spec()
    s["meta"].update(git_revision="c0ffee1", start_time_utc="2026-06-23T03:00:00Z",
                     host="ci-runner-7")
    s["meta"]["extra_key"] = "x"
    v["same_other_meta"] = s

    s = base_spec()
    case(s, "int8_codec_bound", "codec_e4")["checks"]["bound"]["verdict"] = "fail"
    v["verdict_flip"] = s

    s = base_spec()
    case(s, "prop1_exactness", "adamw_T4096")["checks"]["rel_err"]["metric"] = 2.5e-7
    v["metric_change"] = s

    s = base_spec()
    c = case(s, "prop1_exactness", "sgd_T128")["checks"]["bitwise_vs_cublas"]
    c.update(verdict="fail", metric=3.0, differing=3, max_ulp=2.0,
             first_diff="tile=(1,0) element=(17,42) step=2", reason="reduction order differs")
    v["bitwise_moved"] = s

    s = base_spec()
    s["claims"]["prop1_exactness"]["lion_T64"] = {
        "attrs": {"rule": "lion"}, "checks": {"rel_err": check("pass", "max_rel_err", 0.0, 1e-6)},
        "data": {}}
    v["case_added"] = s

    s = base_spec()
    del s["claims"]["int8_codec_bound"]
    v["claim_removed"] = s

    s = base_spec()
    vals, desc = case(s, "prop1_exactness", "adamw_T4096")["data"]["ulp_histogram"]
    vals = vals.copy()
    vals[1, 1] = 5.0
    case(s, "prop1_exactness", "adamw_T4096")["data"]["ulp_histogram"] = (vals, desc)
    v["dataset_change"] = s

    s = base_spec()
    case(s, "prop1_exactness", "adamw_T4096")["attrs"]["shape"] = "4096x512"
    v["case_attr_change"] = s

    s = base_spec()
    case(s, "prop1_exactness", "adamw_T4096")["checks"]["model_vs_mma"]["reason"] = "no device"
    v["reason_change"] = s

    s = base_spec()
    c = case(s, "prop1_exactness", "sgd_T128")["checks"]["bitwise_vs_cublas"]
    c["max_ulp"] = -0.0  # 0.0 -> -0.0: bitwise different
    v["neg_zero"] = s

    # All of the above at once: each must be named.
    s = base_spec()
    case(s, "prop1_exactness", "adamw_T4096")["checks"]["rel_err"]["metric"] = 2.5e-7
    c = case(s, "prop1_exactness", "sgd_T128")["checks"]["bitwise_vs_cublas"]
    c.update(verdict="fail", metric=3.0, differing=3, max_ulp=2.0,
             first_diff="tile=(1,0) element=(17,42) step=2", reason="reduction order differs")
    s["claims"]["prop1_exactness"]["lion_T64"] = {
        "attrs": {}, "checks": {"rel_err": check("pass", "max_rel_err", 0.0, 1e-6)}, "data": {}}
    vals, desc = case(s, "prop1_exactness", "adamw_T4096")["data"]["ulp_histogram"]
    vals = vals.copy()
    vals[1, 1] = 5.0
    case(s, "prop1_exactness", "adamw_T4096")["data"]["ulp_histogram"] = (vals, desc)
    case(s, "prop1_exactness", "adamw_T4096")["checks"]["rel_err"]["verdict"] = "fail"
    del s["claims"]["int8_codec_bound"]
    v["all_at_once"] = s

    # Deliberate renames of every kind: base + the rename map must compare identical.
    s = base_spec()
    s["claims"]["int8_codec"] = s["claims"].pop("int8_codec_bound")      # claim
    p = s["claims"]["prop1_exactness"]
    p["adamw_T4096_in256"] = p.pop("adamw_T4096")                         # case (order differs)
    cs = p["adamw_T4096_in256"]
    cs["checks"]["rel_err_vs_fp64"] = cs["checks"].pop("rel_err")         # check
    cs["checks"]["rel_err_vs_fp64"]["metric_name"] = "max_relative_error"  # metric_name
    cs["data"]["err_per_step"] = cs["data"].pop("rel_err_per_step")        # dataset
    cs["attrs"]["update_rule"] = cs["attrs"].pop("rule")                  # attr
    p["sgd_T128"]["attrs"]["update_rule"] = p["sgd_T128"]["attrs"].pop("rule")
    v["renamed"] = s
    return v


if __name__ == "__main__":
    out = sys.argv[1]
    for name, spec in variants().items():
        write(spec, "%s/%s.h5" % (out, name))
    # A valid HDF5 file that is not a report, and one of a future schema.
    with h5py.File(out + "/not_report.h5", "w") as f:
        f.create_dataset("x", data=np.arange(3))
    write(base_spec(), out + "/schema2.h5")
    with h5py.File(out + "/schema2.h5", "a") as f:
        f.attrs["schema_version"] = np.int64(2)
    # A case without its data group.
    write(base_spec(), out + "/no_data_group.h5")
    with h5py.File(out + "/no_data_group.h5", "a") as f:
        del f["int8_codec_bound/codec_e4/data"]
EOF

if ! "$PY" "$T/make.py" "$T"; then
  echo "FAIL: could not build the fixture reports" >&2
  exit 1
fi
# A truncated report and a file that is not HDF5 at all.
head -c 3000 "$T/base.h5" >"$T/truncated.h5"
printf 'this is not an HDF5 file\n' >"$T/text.h5"

cat >"$T/renames.map" <<'EOF'
# kind  old  new
claim        int8_codec_bound   int8_codec
case         adamw_T4096        adamw_T4096_in256
check        rel_err            rel_err_vs_fp64
metric_name  max_rel_err        max_relative_error
dataset      rel_err_per_step   err_per_step
attr         rule               update_rule
EOF
cp "$T/renames.map" "$T/stale.map"
echo 'check  no_such_check  whatever' >>"$T/stale.map"
printf 'case a b c\n' >"$T/badline.map"
printf 'claim prop1_exactness int8_codec_bound\n' >"$T/collide.map"

# ------------------------------------------------------------------------------------------------
# Runner
# ------------------------------------------------------------------------------------------------
FAILS=0
N=0
# run NAME EXPECTED_RC [--out/--err PATTERN ...] [--empty-stdout] -- ARGS...
run() {
  local name="$1" want="$2"
  shift 2
  local pats=() empty_stdout=0
  while [ "$1" != "--" ]; do
    case "$1" in
      --out|--err|--not-out) pats+=("$1" "$2"); shift 2 ;;
      --empty-stdout) empty_stdout=1; shift ;;
      *) echo "bad test spec $1" >&2; exit 2 ;;
    esac
  done
  shift
  N=$((N + 1))
  "$PY" "$CMP" "$@" >"$T/out" 2>"$T/err"
  local rc=$? ok=1 why=""
  if [ "$rc" != "$want" ]; then ok=0; why+=" exit $rc, expected $want;"; fi
  local i=0
  while [ $i -lt ${#pats[@]} ]; do
    local where="${pats[$i]}" pat="${pats[$((i + 1))]}"
    case "$where" in
      --out) grep -qF -- "$pat" "$T/out" || { ok=0; why+=" stdout lacks '$pat';"; } ;;
      --not-out) ! grep -qF -- "$pat" "$T/out" || { ok=0; why+=" stdout has '$pat';"; } ;;
      --err) grep -qF -- "$pat" "$T/err" || { ok=0; why+=" stderr lacks '$pat';"; } ;;
    esac
    i=$((i + 2))
  done
  if [ $empty_stdout = 1 ] && [ -s "$T/out" ]; then ok=0; why+=" stdout not empty;"; fi
  if [ $ok = 1 ]; then
    echo "ok   $name (exit $rc)"
  else
    echo "FAIL $name:$why"
    echo "  --- command: compare_reports.py $*"
    sed 's/^/  | /' "$T/out" "$T/err"
    FAILS=$((FAILS + 1))
  fi
}

B="$T/base.h5"
run "identical (same file)" 0 --out "no differences" --out "IDENTICAL" --out "compared 2 claim(s), 3 case(s), 5 check(s), 5 dataset(s)" -- "$B" "$B"
run "identical apart from /meta" 0 --out "IDENTICAL" --out "meta git_revision" --out "meta start_time_utc" --out "meta extra_key" --out "meta host" --out "4 /meta difference(s)" \
  --out "0 difference(s)" -- "$B" "$T/same_other_meta.h5"
run "flipped verdict" 1 --out 'int8_codec_bound/codec_e4/checks/bound: verdict: base "pass" | new "fail"' \
  --out "10 difference(s) (1 content, 9 aggregate)" --out 'int8_codec_bound: verdict: base "pass" | new "fail"' --out 'int8_codec_bound/codec_e4: n_fail: base 0 | new 1' --out "DIFFERENT" -- "$B" "$T/verdict_flip.h5"
run "changed metric" 1 --out 'prop1_exactness/adamw_T4096/checks/rel_err: metric: base 1.5e-07 | new 2.5e-07' \
  --out "1 difference(s) (1 content, 0 aggregate)" -- "$B" "$T/metric_change.h5"
run "bitwise count moved off zero" 1 --out 'prop1_exactness/sgd_T128/checks/bitwise_vs_cublas: differing: base 0 | new 3' \
  --out 'bitwise_vs_cublas: max_ulp: base 0.0 | new 2.0' --out 'bitwise_vs_cublas: first_diff: base "" | new "tile=(1,0) element=(17,42) step=2"' \
  --out 'bitwise_vs_cublas: verdict: base "pass" | new "fail"' --out 'bitwise_vs_cublas: reason' -- "$B" "$T/bitwise_moved.h5"
run "added case" 1 --out "prop1_exactness/lion_T64: case: base <absent> | new 1 check(s), 0 dataset(s)  (case only in new (added))" \
  --out "prop1_exactness: n_cases: base 2 | new 3" -- "$B" "$T/case_added.h5"
run "removed claim" 1 --out "int8_codec_bound: claim: base 1 case(s), 1 check(s) | new <absent>  (claim only in base (removed))" \
  --out "compared 1 claim(s)" -- "$B" "$T/claim_removed.h5"
run "dataset value change" 1 --out "prop1_exactness/adamw_T4096/data/ulp_histogram: values: base 2.0 | new 5.0  (1 of 4 element(s) differ, first at index [1, 1]" \
  -- "$B" "$T/dataset_change.h5"
run "dataset change, --ignore-datasets" 0 --out "datasets ignored" -- "$B" "$T/dataset_change.h5" --ignore-datasets
run "case attribute change" 1 --out 'prop1_exactness/adamw_T4096: attr shape: base "4096x256" | new "4096x512"' -- "$B" "$T/case_attr_change.h5"
run "reason change" 1 --out 'model_vs_mma: reason: base "no GPU" | new "no device"' -- "$B" "$T/reason_change.h5"
run "reason change, --ignore-reasons" 0 -- "$B" "$T/reason_change.h5" --ignore-reasons
run "0.0 vs -0.0 is a bitwise difference" 1 --out "max_ulp: base 0.0 | new -0.0" -- "$B" "$T/neg_zero.h5"
run "all at once, each named" 1 \
  --out 'adamw_T4096/checks/rel_err: verdict: base "pass" | new "fail"' --out "int8_codec_bound: claim: base 1 case(s)" \
  --out 'adamw_T4096/checks/rel_err: metric: base 1.5e-07 | new 2.5e-07' --out 'sgd_T128/checks/bitwise_vs_cublas: differing: base 0 | new 3' \
  --out 'prop1_exactness/lion_T64: case' --out 'ulp_histogram: values' -- "$B" "$T/all_at_once.h5"
run "renamed, no map" 1 --out "int8_codec: claim" -- "$B" "$T/renamed.h5"
run "rename map applied" 0 --out "IDENTICAL" \
  --out "claim \"int8_codec_bound\" -> \"int8_codec\" at int8_codec_bound" \
  --out "case \"adamw_T4096\" -> \"adamw_T4096_in256\" at prop1_exactness/adamw_T4096" \
  --out "check \"rel_err\" -> \"rel_err_vs_fp64\" at prop1_exactness/adamw_T4096/checks/rel_err" \
  --out "metric_name \"max_rel_err\" -> \"max_relative_error\" at prop1_exactness/adamw_T4096/checks/rel_err" \
  --out "dataset \"rel_err_per_step\" -> \"err_per_step\" at prop1_exactness/adamw_T4096/data/rel_err_per_step" \
  --out "attr \"rule\" -> \"update_rule\" at prop1_exactness/adamw_T4096" \
  --out "attr \"rule\" -> \"update_rule\" at prop1_exactness/sgd_T128" \
  --out "renames applied to base (7)" -- "$B" "$T/renamed.h5" --rename-map "$T/renames.map"
run "rename map, still a real difference" 1 --out "renames applied" --out 'int8_codec/codec_e4/checks/bound: verdict' \
  -- "$T/verdict_flip.h5" "$T/renamed.h5" --rename-map "$T/renames.map"
run "unmatched rename entry" 2 --empty-stdout --err "matched nothing" --err "line 8: check \"no_such_check\"" \
  -- "$B" "$T/renamed.h5" --rename-map "$T/stale.map"
run "malformed rename line" 2 --empty-stdout --err "expected 'kind old new'" -- "$B" "$B" --rename-map "$T/badline.map"
run "rename collision" 2 --empty-stdout --err "two claims named" -- "$B" "$B" --rename-map "$T/collide.map"
run "missing rename map" 2 --empty-stdout --err "cannot read" -- "$B" "$B" --rename-map "$T/nope.map"
run "truncated file (new)" 2 --empty-stdout --err "truncated.h5" -- "$B" "$T/truncated.h5"
run "truncated file (base)" 2 --empty-stdout --err "truncated.h5" -- "$T/truncated.h5" "$B"
run "non-HDF5 file" 2 --empty-stdout --err "not an HDF5 file" -- "$B" "$T/text.h5"
run "HDF5 but not a report" 2 --empty-stdout --err "no schema_version" -- "$T/not_report.h5" "$B"
run "future schema_version" 2 --empty-stdout --err "schema_version is 2" -- "$B" "$T/schema2.h5"
run "case without data group" 2 --empty-stdout --err "has no 'data' group" -- "$B" "$T/no_data_group.h5"
run "missing file" 2 --empty-stdout --err "no such file" -- "$B" "$T/absent.h5"
run "usage: one argument" 2 --empty-stdout --err "usage:" -- "$B"
run "usage: unknown option" 2 --empty-stdout --err "usage:" -- "$B" "$B" --frobnicate

# --json: written on 0 and 1 (valid JSON, the differences in it), never on 2.
run "json on difference" 1 -- "$B" "$T/verdict_flip.h5" --json "$T/d.json"
if "$PY" - "$T/d.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["identical"] is False, d
assert [x["field"] for x in d["differences"]] == ["verdict"], d["differences"]
assert d["differences"][0]["path"] == "int8_codec_bound/codec_e4/checks/bound"
assert d["counts"]["checks"] == 5 and d["counts"]["content_differences"] == 1
EOF
then echo "ok   json content"; else echo "FAIL json content"; FAILS=$((FAILS + 1)); fi
N=$((N + 1))
run "json on identical" 0 -- "$B" "$T/same_other_meta.h5" --json "$T/i.json"
N=$((N + 1))
if "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["identical"] and len(d["meta_differences"])==4' "$T/i.json"; then
  echo "ok   json identical content"; else echo "FAIL json identical content"; FAILS=$((FAILS + 1)); fi
run "no json on error" 2 --empty-stdout -- "$B" "$T/truncated.h5" --json "$T/e.json"
N=$((N + 1))
if [ -e "$T/e.json" ] || compgen -G "$T/.e.json.tmp.*" >/dev/null; then echo "FAIL json written on exit 2 (or temp left)"; FAILS=$((FAILS + 1)); else echo "ok   no json or temp file after exit 2"; fi

echo "$((N - FAILS)) of $N expectations passed"
if [ $FAILS -ne 0 ]; then
  echo "test_compare_reports: $FAILS FAILED" >&2
  exit 1
fi
echo "test_compare_reports: all passed"
