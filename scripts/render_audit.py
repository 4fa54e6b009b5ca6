#!/usr/bin/env python3
"""Render the FORGE audit page: one Markdown file from one or more forge-verify reports.

Usage: render_audit.py [--force] OUT.md REPORT.h5 [REPORT.h5 ...]

For every claim of the audit (ext_order_probe, ext_prop1, ext_corollary1, ext_int8,
ext_model_memory, ext_model_time, ext_layer_speed, then any other claim the reports hold) the
page quotes the README's or the paper's sentence the claim judges and gives one table row per
external path (kernel path of the FORGE release): the verdict, the counts of its checks, the
first failing check with its reason, and where the evidence is in the report
(/<claim>/<case>/checks/<check>, reports/SCHEMA.md). A claim none of the reports holds is
listed as "not in this report".

Verdict of a row, over every check of every case of that path (in all the reports): fail if any
check failed or is an error; pass if none did and at least one passed; otherwise "not run".
A not-run is never shown as pass: a passing row where some check (other than the placeholder
`ran`) never ran for that path is shown "pass (partial)", naming the check. Above the tables: each report's provenance from /meta (run,
device, harness revision, and per external path the release package, version, commit,
switches, triton/torch/cuda, device).

A path is the case attribute `path`, else the case name's prefix (`<path>.<case_id>`; ext_prop1
names its cases `<fused>_vs_<two_phase>.<case_id>`, the row is the fused path). Reports are read
with render_summary.read_report. Bad input (a missing file, a folder, FIFO or device, not HDF5,
not a forge-verify report or a schema version it does not read) and a refused OUT.md (its folder
missing or read-only; a folder, symlink, device or FIFO; one of the reports; an existing file
without --force) print one line on stderr and exit 2 without writing OUT.md; an unexpected
failure exits 3. The page is written to a temporary file beside OUT.md and renamed into place.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from atomic_file import check_input, check_output, parse_positional, run_main, write_output  # noqa: E402
from render_summary import BadInput, read_report  # noqa: E402

R = "external_release/forge/README.md"
# claim -> (where the sentence is, the sentence judged)
CLAIMS = [
    ("ext_order_probe", "README (%s:41, :77); premise: in which order each path sums G over tokens" % R,
     "\"the fused step is bit-identical to a reference that accumulates the token axis in the same order\""),
    ("ext_prop1", "Paper, Proposition 1 (paraphrase)",
     "the fused update equals materializing G and then applying the optimizer, bit for bit"),
    ("ext_corollary1", "README (%s:77)" % R,
     "\"against cuBLAS the only discrepancy is the summation order intrinsic to any GEMM\""),
    ("ext_int8", "Paper, Proposition 4 (paraphrase)",
     "the INT8 state's error is bounded by half a quantization step; the paper relies on stochastic rounding"),
    ("ext_model_memory", "README table (%s:54-62): Llama-3.1-8B, H200, batch 1, seq 512, bf16" % R,
     "peak memory: FORGE 48.36 GB vs fused AdamW 60.08 GB; FORGE (int8) 35.32 GB"),
    ("ext_model_time", "README (%s:40, :59-62)" % R,
     "step time: 110.2 ms/step vs 134.3 ms (fused AdamW); FORGE (int8) 155.0 ms"),
    ("ext_layer_speed", "Paper (paraphrase)", "about 1.5x speed at small batch"),
]
BAD = ("fail", "error")
# Every row of this page judges the release, so a finding's word is counted in the column of the
# verdict it is made from (reports/SCHEMA.md, schema 3): a refutation is the release's "fail" here.
FINDING_AS = {"confirmed": "pass", "refuted": "fail", "inconclusive": "not-run"}


def short(s, n=150):
    s = re.sub(r"\s+", " ", str(s)).strip().replace("`", "'")
    return s if len(s) <= n else s[:n - 1] + "…"


def cell(s):
    return str(s).replace("|", "\\|").replace("\n", " ")


def verdict_of(n):
    if n["fail"] or n["error"]:
        return "fail"
    return "pass" if n["pass"] else "not run"


def row_verdict(r):
    """A row's verdict, and the checks that never ran for its path while others passed (a partial pass)."""
    v = verdict_of(r["n"])
    never = [c for c, nm in r["names"].items() if nm["v"] == {"not-run"} and c != "ran"] if v == "pass" else []
    return ("pass (partial)" if never else v), never


def path_of(case):
    p = case["attrs"].get("path")
    if p:
        return str(p)
    return case["name"].split(".", 1)[0].split("_vs_", 1)[0]


def load(paths):
    reps = []
    for p in paths:
        rep = read_report(p)
        tool = str(rep["meta"].get("tool", "")) + " " + str(rep["meta"].get("tool_version", ""))
        if "forge-verify" not in tool:
            raise BadInput("%s is a report but not forge-verify's (/meta tool=%r)" % (p, tool.strip()))
        reps.append(rep)
    return reps


def provenance(reps):
    out = ["## Provenance", ""]
    for rep in reps:
        m, r = rep["meta"], rep["root"]
        g = lambda k: m.get(k, "(absent)")  # noqa: E731
        out += ["### %s" % os.path.basename(rep["path"]), "",
                "- report: `%s`, schema %s, overall %s (%s pass, %s fail, %s not-run, %s error)"
                % (rep["path"], r.get("schema_version"), r.get("verdict"), r.get("n_pass"), r.get("n_fail"),
                   r.get("n_not_run"), r.get("n_error")),
                "- harness: %s, git revision %s, started %s on host %s"
                % (g("tool_version"), g("git_revision"), g("start_time_utc"), g("host")),
                "- device: %s (cc %s, %s SMs), driver %s, CUDA runtime %s, cuBLAS %s"
                % (g("gpu_name"), g("gpu_compute_capability"), g("gpu_sm_count"), g("gpu_driver"),
                   g("cuda_runtime"), g("cublas")),
                "- cases file: %s; seed %s; options not honoured: %s"
                % (g("external.cases"), g("seed"), g("options_not_honoured")),
                "- configuration: %s" % short(g("configuration"), 200), ""]
        ext = {}
        for k, v in m.items():
            if k.startswith("external.") and k.count(".") >= 2:
                path, key = k[len("external."):].rsplit(".", 1)
                ext.setdefault(path, {})[key] = str(v)
        if not ext:
            out += ["(no external.<path>.<key> entries in /meta)", ""]
            continue
        out += ["| path | role | package version | commit | triton / torch / cuda | device | switches | entry |",
                "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for path in sorted(ext):
            e = ext[path]
            sw, entry = e.get("switches", ""), ""
            try:
                d = json.loads(sw)
                entry = d.pop("entry", "") if isinstance(d, dict) else ""
                sw = ", ".join("%s=%s" % (k.lstrip("_"), json.dumps(v)) for k, v in d.items()) if isinstance(d, dict) else sw
            except ValueError:
                pass
            out.append("| %s |" % " | ".join(cell(x) for x in (
                path, e.get("role", ""), "%s %s" % (e.get("package", ""), e.get("version", "")), e.get("commit", ""),
                "%s / %s / %s" % (e.get("triton", "?"), e.get("torch", "?"), e.get("cuda", "?")),
                e.get("device", ""), short(sw, 160), short(entry, 120))))
        out.append("")
    return out


def claim_rows(claim, reps):
    """path -> {n: check counts, cases, bad: first failing check, any: first check (a pass before a not-run),
    extra: the claim's extra column, names: check name -> verdicts seen} over all reports holding the claim."""
    rows = {}
    multi = len(reps) > 1
    for rep in reps:
        for c in rep["claims"]:
            if c["id"] != claim:
                continue
            for case in c["cases"]:
                row = rows.setdefault(path_of(case), {"n": dict.fromkeys(("pass", "fail", "not-run", "error"), 0),
                                                      "cases": 0, "bad": None, "any": None, "extra": {},
                                                      "names": {}})
                row["cases"] += 1
                where = "%s/%s/%s" % ("%s:" % os.path.basename(rep["path"]) if multi else "", claim, case["name"])
                cn = dict.fromkeys(row["n"], 0)
                for ch in case["checks"]:
                    v = str(ch.get("verdict", "error"))
                    v = FINDING_AS.get(v, v)
                    v = v if v in cn else "error"
                    cn[v] += 1
                    ev = "%s/checks/%s" % (where, ch["name"])
                    why = ch.get("reason") or ch.get("first_diff") or ""
                    nm = row["names"].setdefault(ch["name"], {"v": set(), "ev": ev, "why": why})
                    nm["v"].add(v)
                    if v in BAD and row["bad"] is None:
                        row["bad"] = ("%s (%s): %s" % (ch["name"], v, why), ev)
                    if row["any"] is None or (row["any"][2] == "not-run" and v == "pass"):
                        row["any"] = (ch["name"], ev, v, why)
                if row["any"] is None:
                    row["any"] = ("(no checks)", where, "not-run", "")
                for k in cn:
                    row["n"][k] += cn[k]
                # Per-claim extra column.
                a = case["attrs"]
                if claim == "ext_order_probe":
                    for k in ("declared", "identified"):
                        o = row["extra"].setdefault(k, {})
                        v = str(a.get(k + "_order", "-"))
                        o[v] = o.get(v, 0) + 1
                elif claim == "ext_prop1":
                    tp = a.get("two_phase_path") or case["name"].split(".", 1)[0].partition("_vs_")[2] or "?"
                    prev = row["extra"].setdefault(tp, dict.fromkeys(cn, 0))
                    for k in cn:
                        prev[k] += cn[k]
    return rows


EXTRA = {"ext_order_probe": "order (declared; identified)", "ext_prop1": "vs two-phase path"}


def claim_table(claim, src, sentence, reps):
    out = ["### %s" % claim, "", "%s:" % src, "", "> %s" % sentence, ""]
    held = [c for rep in reps for c in rep["claims"] if c["id"] == claim]
    if not held:
        return out + ["**not in this report**" if len(reps) == 1 else "**not in any of these reports**", ""], None
    stored = ", ".join("%s (%s pass, %s fail, %s not-run, %s error, %s cases)" % (
        c["attrs"].get("verdict"), c["attrs"].get("n_pass"), c["attrs"].get("n_fail"), c["attrs"].get("n_not_run"),
        c["attrs"].get("n_error"), c["attrs"].get("n_cases")) for c in held)
    rows = claim_rows(claim, reps)
    total = dict.fromkeys(("pass", "fail", "not-run", "error"), 0)
    for r in rows.values():
        for k in total:
            total[k] += r["n"][k]
    out += ["The report's own aggregate: %s. Recomputed from the checks: **%s**." % (stored, verdict_of(total)), ""]
    hdr = ["path", "verdict", "cases", "pass", "fail", "not run", "error", "first failing check: reason", "evidence"]
    if claim in EXTRA:
        hdr.insert(7, EXTRA[claim])
    out += ["| %s |" % " | ".join(hdr), "|%s" % (" --- |" * len(hdr))]
    for path, r in rows.items():
        n, (v, never) = r["n"], row_verdict(r)
        if r["bad"]:
            why, ev = short(r["bad"][0]), r["bad"][1]
        elif v == "not run":
            why, ev = short("(none failed; not run: %s)" % (r["any"][3] or "no reason given")), r["any"][1]
        elif never:  # a check that never ran for this path while others passed
            nm = r["names"][never[0]]
            why, ev = short("(none failed; never ran for this path: %s: %s)" % (", ".join(never), nm["why"])), nm["ev"]
        else:
            why, ev = "", r["any"][1]
        cols = [path, "**%s**" % v if v == "fail" else v, r["cases"], n["pass"], n["fail"], n["not-run"], n["error"],
                why, "`%s`" % ev]
        if claim == "ext_order_probe":
            cols.insert(7, "; ".join("%s %s" % (k, ", ".join(o if len(r["extra"][k]) == 1 else "%s (%d)" % (o, c)
                                                           for o, c in r["extra"][k].items())) for k in r["extra"]))
        elif claim == "ext_prop1":
            cols.insert(7, ", ".join("%s %s" % (tp, verdict_of(c)) for tp, c in r["extra"].items()))
        out.append("| %s |" % " | ".join(cell(x) for x in cols))
    return out + [""], (verdict_of(total), rows)


def render(reps):
    names = ", ".join(os.path.basename(r["path"]) for r in reps)
    out = ["# FORGE release audit (issue 16)", "",
           "Generated by scripts/render_audit.py from %s. Verdict per external path: fail if any check failed or "
           "errored, pass if all checks that ran passed and at least one did (\"pass (partial)\" when a check of the "
           "claim never ran for that path), otherwise not run (never pass)." % names,
           ""]
    known = [c[0] for c in CLAIMS]
    others = []
    for rep in reps:
        others += [c["id"] for c in rep["claims"] if c["id"] not in known and c["id"] not in others]
    claims = CLAIMS + [(c, "(no sentence on file for this claim)", "generic table: %s" % c) for c in others]
    tables, summary = [], []
    for cid, src, sentence in claims:
        t, res = claim_table(cid, src, sentence, reps)
        tables += t
        if res is None:
            summary.append("| %s | not in this report | |" % cid)
        else:
            by = {}
            for p, r in res[1].items():
                by.setdefault(row_verdict(r)[0], []).append(p)
            summary.append("| %s | %s | %s |" % (cid, "**fail**" if res[0] == "fail" else res[0], "; ".join(
                "%s: %s" % (v, ", ".join(by[v])) for v in ("fail", "pass", "pass (partial)", "not run") if v in by)))
    out += ["## Claims at a glance", "", "| claim | verdict | paths |", "| --- | --- | --- |"] + summary + [""]
    out += provenance(reps)
    out += ["## Claims", ""] + tables
    return "\n".join(out)


def main(argv):
    pos, force = parse_positional(argv, __doc__.split("\n")[2][len("Usage: "):], 2, 10000)
    out, reports = pos[0], pos[1:]
    # Every file is checked before any report is read.
    for p in reports:
        check_input(p, "report")
    check_output(out, reports, force)
    text = render(load(reports))

    def work(tmp):
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    write_output(out, work, reports, force, prefix=".render_audit.")
    print(out)
    return 0


if __name__ == "__main__":
    run_main("render_audit.py", main, sys.argv)
