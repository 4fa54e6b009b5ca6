#!/usr/bin/env python3
"""Render one forge-verify report as a static summary page.

Usage: render_summary.py REPORT.h5 -o OUTDIR [--diff DIFF.json] [--registry REGISTRY.json]
                         [--bench BENCH.json] [--force]

Writes OUTDIR/index.html and OUTDIR/figures/*.png: no server, no network, no script from
elsewhere. The page holds
  - at the top, the overall verdict, how many claims were judged and why the others judged nothing
    (as forge-verify's closing lines), and, for a run without a GPU, a note that says so and why;
  - the run's provenance (/meta);
  - the verdict table, claims in the paper's order (the registry's order, from --registry, else the
    order the run added them, which is the same; never alphabetical): per claim the paper's sentence
    (the registry's `statement`, from `forge-verify --list-claims-json`, passed as --registry), then
    every check with its verdict, metric, pass direction, bound and evidence; not-run and error are
    shown as such, never as pass; a finding is shown as confirmed, refuted (orange, never red) or
    inconclusive, and the top names the refuted ones and says the vocabulary once; a relative gap
    or a ratio is shown with its unit ("0.378 (+37.8%)");
  - the stagnation gaps as signed percentages, with what a gap is and how it stands to the paper's
    "~6%";
  - every figure scripts/render_fidelity.py draws for the report (and for its *_gpu claims);
  - benchmarks: the report's /benchmarks group (reports/SCHEMA.md) and/or a Google Benchmark JSON
    (--bench): a table of medians, and with the JSON's bytes_per_s / flop_per_s counters a
    roofline against the H200's peaks; wherever a fused and a cuBLAS + rule run share a rule,
    state, layer and T, bars of their ratio;
  - with --diff, the changes of a `forge-verify diff --json` file (a top-level "changes" list of
    objects with kind, path, base, new, regression).
Every figure is stamped with the report's git revision, GPU name and start time.

The page carries one small inline script that, on load, checks that every <img> decoded
(naturalWidth > 0) and writes the result into <div id="page-check" data-status="ok|broken">;
scripts/test_summary_page.sh reads it from headless Chromium's --dump-dom.

Bad input (a missing file, a folder, FIFO or device, a file that is not a report or has a schema
version this script does not read, a JSON of the wrong shape) and a refused OUTDIR print one line
on stderr and exit 2 with nothing written; an unexpected failure exits 3. OUTDIR is refused when
it is a file, symlink or other non-folder, a non-empty folder this script did not write, a page it
wrote that holds any file its manifest (OUTDIR/.render_summary.manifest: every file it wrote, with
its SHA-256) does not list or that changed since, or an existing page without --force. So it
never deletes a file it did not write. The page is built in a temporary folder beside OUTDIR and
renamed into place, so OUTDIR is either the previous page or the new one, never half of one.

FH_SUMMARY_PLANT (off by default) plants a defect for the page test: `missing_image` (an <img>
whose file is absent) or `js_error` (a script that throws on load).
"""
import argparse
import hashlib
import html
import json
import math
import os
import re
import shutil
import stat
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from atomic_file import BadInput, check_input, file_kind, open_report, run_main, same_file  # noqa: E402

MARKER = "<!-- forge-harness summary page -->"  # the page's first comment: what wrote it
MANIFEST = ".render_summary.manifest"  # what this script wrote into OUTDIR: the only files it removes
JSON_MAX_BYTES = 64 << 20  # a JSON input larger than this is refused unread
PLANTS = ("missing_image", "js_error")

# Peaks the roofline is drawn against: NVIDIA H200 SXM datasheet (nvidia.com/en-us/data-center/h200):
# 4.8 TB/s HBM3e, 989 TFLOP/s dense BF16 tensor core (1,979 is with 2:4 sparsity). The fused step's
# GEMM takes bf16 inputs with fp32 accumulation, so the dense bf16 peak is its compute ceiling.
H200_HBM_BYTES_PER_S = 4.8e12
H200_BF16_DENSE_FLOP_PER_S = 989e12
# The runner's measured device-to-device copy rate (suites/bench/bench_fused.cu, kCopyRateBytesPerS).
RUNNER_COPY_BYTES_PER_S = 4.2e12


def esc(x):
    return html.escape(str(x), quote=True)


def _s(v):
    return v.decode() if isinstance(v, bytes) else v


def fmt(x):
    if isinstance(x, str):
        return x
    try:
        x = float(x)
    except (TypeError, ValueError):
        return str(x)
    if math.isnan(x):
        return "&ndash;"
    return "%.6g" % x


# ------------------------------------------------------------------------------------------------
# Input
# ------------------------------------------------------------------------------------------------

def read_report(path):
    """The report as plain Python: meta, root attrs, claims -> cases -> checks, benchmarks."""
    f = open_report(path)
    try:
        return _walk_report(f, path)
    except BadInput:
        raise
    except Exception as e:  # h5py raises more than OSError on a damaged file
        raise BadInput("%s cannot be read as a report (%s: %s)" % (path, type(e).__name__, e))
    finally:
        f.close()


def in_creation_order(group):
    """The group's member names in the order they were created (the report tracks it: the order the
    run added its claims, which is the registry's), else by name (h5py's order for the root group)."""
    import h5py
    names = []
    try:
        group.id.links.iterate(lambda n: names.append(_s(n)), idx_type=h5py.h5.INDEX_CRT_ORDER)
    except Exception:  # no creation-order index (a file another tool wrote): by name
        return list(group)
    return names


def _walk_report(f, path):
    import h5py
    rep = {"path": path, "root": {k: _s(v) for k, v in f.attrs.items()},
           "meta": {k: _s(v) for k, v in f["meta"].attrs.items()}, "claims": [], "benchmarks": []}
    for claim in in_creation_order(f):
        if claim in ("meta", "benchmarks") or not isinstance(f[claim], h5py.Group):
            continue
        c = {"id": claim, "attrs": {k: _s(v) for k, v in f[claim].attrs.items()}, "cases": []}
        for case in f[claim]:
            g = f[claim][case]
            if not isinstance(g, h5py.Group):
                continue
            cs = {"name": case, "attrs": {k: _s(v) for k, v in g.attrs.items()}, "checks": []}
            if "checks" in g:
                for name in g["checks"]:
                    cs["checks"].append(dict(name=name, **{k: _s(v) for k, v in g["checks"][name].attrs.items()}))
            cs["datasets"] = list(g["data"]) if "data" in g else []
            # Short 1-D datasets (gaps, optimum) are shown in the page; curves only as figures.
            cs["small"] = {n: [float(x) for x in g["data"][n][()]] for n in cs["datasets"]
                           if g["data"][n].ndim == 1 and g["data"][n].shape[0] <= 8 and g["data"][n].dtype.kind in "fi"}
            c["cases"].append(cs)
        rep["claims"].append(c)
    if "benchmarks" in f:
        for key in f["benchmarks"]:
            d = f["benchmarks"][key]
            reps = [float(x) for x in d[()]]
            rep["benchmarks"].append({"name": _s(d.attrs.get("name", key)), "median_ns": float(d.attrs.get("median", float("nan"))),
                                      "repetitions": reps})
    return rep


def read_json(path, what):
    st = check_input(path, what)
    if st.st_size > JSON_MAX_BYTES:
        raise BadInput("%s: the %s file is %d bytes, more than the %d this script reads" % (path, what, st.st_size,
                                                                                        JSON_MAX_BYTES))
    try:
        with open(path, encoding="utf-8") as fh:
            return json.loads(fh.read(JSON_MAX_BYTES + 1))
    except (OSError, ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError
        raise BadInput("%s is not a readable JSON %s (%s)" % (path, what, e))


def read_registry(path):
    """{id: row} in the registry's order (the order forge-verify runs the claims, the paper's)."""
    j = read_json(path, "registry")
    try:
        return {c["id"]: c for c in j["claims"]}
    except (KeyError, TypeError) as e:
        raise BadInput("%s is not forge-verify --list-claims-json output (a 'claims' list of objects with 'id'): %s"
                       % (path, e))


def read_diff(path):
    j = read_json(path, "diff")
    ch = j.get("changes") if isinstance(j, dict) else None
    if not isinstance(ch, list) or not all(isinstance(c, dict) for c in ch):
        raise BadInput("%s is not a diff JSON (forge-verify diff --json: a top-level 'changes' list of objects)" % path)
    return j


def read_bench(path):
    """Google Benchmark JSON -> rows with the median (or mean) aggregate per run, times in ns."""
    j = read_json(path, "Google Benchmark")
    if not isinstance(j, dict) or not isinstance(j.get("benchmarks"), list):
        raise BadInput("%s is not a Google Benchmark JSON (no 'benchmarks' list)" % path)
    scale = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
    runs = {}
    for b in j["benchmarks"]:
        if not isinstance(b, dict) or "real_time" not in b:
            continue
        name = b.get("run_name", b.get("name", "?"))
        kind = b.get("aggregate_name", "") if b.get("run_type") == "aggregate" else "iteration"
        if kind not in ("median", "mean", "iteration"):
            continue
        r = runs.setdefault(name, {})
        ns = float(b["real_time"]) * scale.get(b.get("time_unit", "ns"), 1.0)
        if kind == "iteration":
            r.setdefault("iteration", []).append((ns, b))
        else:
            r[kind] = (ns, b)
    rows = []
    for name, r in runs.items():
        if "median" in r:
            ns, b, how = r["median"][0], r["median"][1], "median"
        elif "mean" in r:
            ns, b, how = r["mean"][0], r["mean"][1], "mean"
        else:
            its = sorted(r["iteration"], key=lambda t: t[0])
            ns, b, how = its[len(its) // 2][0], its[len(its) // 2][1], "median of %d runs" % len(its)
        rows.append({"name": name, "time_ns": ns, "how": how, "label": b.get("label", ""),
                     "bytes_per_s": b.get("bytes_per_s"), "flop_per_s": b.get("flop_per_s")})
    if not rows:
        raise BadInput("%s holds no benchmark runs" % path)
    return {"context": j.get("context", {}), "rows": rows}


# ------------------------------------------------------------------------------------------------
# Figures
# ------------------------------------------------------------------------------------------------

def fidelity_figures(report_path, figdir):
    import render_fidelity
    out = []
    for gpu in (False, True):
        out += render_fidelity.render([report_path], figdir, gpu)
    return out


def save_stamped(fig, meta, figdir, name):
    """Lays the figure out, stamps it with the run's provenance, writes figdir/name and closes it."""
    import matplotlib.pyplot as plt
    import render_fidelity
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    render_fidelity.stamp(fig, meta)
    fig.savefig(os.path.join(figdir, name), dpi=110)
    plt.close(fig)
    return name


def issue33_figures(report_path, meta, figdir):
    """Issue 33's figures from the report, each drawn when its claim wrote data: the convergence
    study's held-out loss per configuration (mean over seeds, band = the seeds' min-max) and one
    tensor-parallel rank's largest micro-batch per degree (FORGE and the standard step); the family's
    step time and peak per model against torch fused AdamW's (model_step_figures' family cases), and the
    INT8 state's divergence per traced step (convergence_parity's int8_vs_bf16 cases)."""
    import h5py
    import numpy as np
    curves, tp, family, traces = {}, {}, {}, {}
    trace_keys = ("traced_max_update_int8", "traced_max_update_bf16", "traced_v_zero", "traced_v_zero_m_nonzero")
    with h5py.File(report_path, "r") as f:
        if "convergence_parity" in f:
            for case, g in f["convergence_parity"].items():
                # The INT8 divergence's cause, where the claim had traced runs (int8_vs_bf16.<config>).
                if case.startswith("int8_vs_bf16.") and "data" in g and all(k in g["data"] for k in trace_keys):
                    traces[case[len("int8_vs_bf16."):]] = {k: np.array(g["data"][k][()], dtype=float) for k in trace_keys}
                m = re.match(r"^run\.(.+)\.seed\d+$", case)
                if m and "data" in g and "eval_loss" in g["data"] and "eval_steps" in g["data"]:
                    curves.setdefault(m.group(1), []).append((list(g["data"]["eval_steps"][()]),
                                                              list(g["data"]["eval_loss"][()])))
        if "tp_microbatch" in f:
            for case, g in f["tp_microbatch"].items():
                m = re.match(r"^h200\.tp(\d+)$", case)
                if m and "data" in g:
                    tp[int(m.group(1))] = (float(g["data"]["max_microbatch_fused"][0]),
                                           float(g["data"]["max_microbatch_standard"][0]))
        if "model_step_figures" in f:
            for case, g in f["model_step_figures"].items():
                m = re.match(r"^harness_(fused|standard)_bf16(?:_tied)?\.(qwen3_\w+|qwen14b|gpt2_124m)\.L\d+$", case)
                d = g["data"] if "data" in g else {}
                if m and all(k in d for k in ("peak_bytes", "median_ms")):
                    fam = family.setdefault(m.group(2), {})
                    fam[m.group(1)] = (float(d["peak_bytes"][0]), float(d["median_ms"][0]))
                    if "torch_fused_peak_bytes" in d and "torch_fused_median_ms" in d:
                        fam["torch"] = (float(d["torch_fused_peak_bytes"][0]), float(d["torch_fused_median_ms"][0]))
    if not curves and not tp and not family and not traces:
        return []
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    out = []
    for config, t in sorted(traces.items())[:1]:  # one traced configuration (the study traces the fused path)
        # Left: per traced step, the largest change of any bf16 weight with INT8 and with bf16 state (log
        # scale; a non-finite step ends the INT8 line); right: the second moments decoding to 0.
        fig, (ax, zx) = plt.subplots(1, 2, figsize=(13, 4.6))
        steps = np.arange(1, len(t["traced_max_update_int8"]) + 1)
        ax.semilogy(steps, t["traced_max_update_int8"], "o-", ms=3, lw=1.2, label="INT8 state")
        ax.semilogy(np.arange(1, len(t["traced_max_update_bf16"]) + 1), t["traced_max_update_bf16"], "s-", ms=3, lw=1.2,
                    label="bf16 state (same seed)")
        ax.set_xlabel("step")
        ax.set_ylabel("largest |change| of a bf16 weight")
        ax.set_title("%s: the update each step made" % config, fontsize=9)
        ax.legend(fontsize=8)
        zsteps = np.arange(1, len(t["traced_v_zero"]) + 1)
        zx.plot(zsteps, t["traced_v_zero"], lw=1.2, label="second moments decoding to 0")
        zx.plot(zsteps, t["traced_v_zero_m_nonzero"], lw=1.2, label="... beside a first moment that does not (update m / eps)")
        zx.set_xlabel("step (state after it)")
        zx.set_ylabel("elements")
        zx.set_title("INT8 state: what the next update reads", fontsize=9)
        zx.legend(fontsize=8)
        out.append(save_stamped(fig, meta, figdir, "convergence_int8_cause.png"))
    if curves:
        # Left: the curves; right: each configuration's mean minus torch bf16's (the parity the
        # paper states in nats), where torch bf16 ran on the same schedule.
        fig, (ax, dx) = plt.subplots(1, 2, figsize=(13, 5.2))
        ref = None
        if "torch_adamw_bf16" in curves:
            r0 = curves["torch_adamw_bf16"]
            ref = (r0[0][0], np.nanmean(np.array([r[1] for r in r0 if r[0] == r0[0][0]], dtype=float), axis=0))
        # A configuration diverged where a seed's held-out loss leaves finite values or rises above
        # its start: drawn up to there, named so in the legend, and left out of the axes' range (its
        # thousands of nats would flatten every other curve).
        kept_lo, kept_hi, kept_gap = [], [], []
        for i, config in enumerate(sorted(curves)):
            runs = [r for r in curves[config] if r[0] == curves[config][0][0]]  # the seeds on one schedule
            steps, loss = np.array(runs[0][0]), np.array([r[1] for r in runs], dtype=float)
            bad = ~np.isfinite(loss) | (loss > loss[:, :1] * 1.05)
            diverged = bool(bad[:, 1:].any())
            if diverged:
                first = int(np.argmax(bad.any(axis=0)))
                loss = np.where(np.arange(len(steps)) < first, loss, np.nan)
            label = "%s (%d seeds%s)" % (config, len(runs), ", diverged" if diverged else "")
            line, = ax.plot(steps, np.nanmean(loss, axis=0), lw=1.2, ls=("-", "--", ":")[i // 10 % 3], label=label)
            ax.fill_between(steps, np.nanmin(loss, axis=0), np.nanmax(loss, axis=0), color=line.get_color(), alpha=0.15)
            if not diverged:
                kept_lo.append(np.nanmin(loss)), kept_hi.append(np.nanmax(loss))
            if ref is not None and list(steps) == list(ref[0]):
                gap = np.nanmean(loss, axis=0) - ref[1]
                dx.plot(steps, gap, lw=1.2, color=line.get_color(), ls=line.get_linestyle())
                dx.fill_between(steps, np.nanmin(loss, axis=0) - ref[1], np.nanmax(loss, axis=0) - ref[1],
                                color=line.get_color(), alpha=0.15)
                if not diverged and "_planted_" not in config:  # a planted run is meant to leave the range
                    kept_gap.append(np.nanmax(np.abs(gap[len(steps) // 10:])))
        if kept_lo:
            pad = 0.05 * (max(kept_hi) - min(kept_lo))
            ax.set_ylim(min(kept_lo) - pad, max(kept_hi) + pad)
        if kept_gap:  # the later steps' gaps set the range (the first steps differ by tenths of a nat)
            half = max(1.3 * max(kept_gap), 0.005)
            dx.set_ylim(-half, half)
        ax.set_xlabel("step")
        ax.set_ylabel("held-out loss (nats)")
        ax.set_title("convergence_parity: held-out loss, mean over seeds, band = min-max", fontsize=9)
        ax.legend(fontsize=6, ncol=2)
        dx.axhline(0.0, color="k", lw=0.8)
        for y in (-0.001, 0.001):
            dx.axhline(y, color="0.5", lw=0.8, ls="--")
        dx.set_xlabel("step")
        dx.set_ylabel("minus torch bf16's mean (nats); dashed: the paper's +-0.001")
        dx.set_title("against torch AdamW in bf16" if ref is not None else "no torch bf16 run to compare with", fontsize=9)
        out.append(save_stamped(fig, meta, figdir, "convergence_loss.png"))
    if tp:
        degrees = sorted(tp)
        x = np.arange(len(degrees))
        fig, ax = plt.subplots(figsize=(6.5, 4))
        ax.bar(x - 0.2, [tp[d][0] for d in degrees], 0.4, label="FORGE (fused)")
        ax.bar(x + 0.2, [tp[d][1] for d in degrees], 0.4, label="standard")
        ax.set_xticks(x)
        ax.set_xticklabels(["TP %d" % d for d in degrees])
        ax.set_ylabel("largest micro-batch (512-token sequences)")
        ax.set_title("tp_microbatch: one Llama-3.1-8B rank per H200, Megatron-LM's layout (the memory model)", fontsize=8)
        ax.legend(fontsize=7)
        out.append(save_stamped(fig, meta, figdir, "tp_microbatch.png"))
    if family:
        order = ["gpt2_124m", "qwen3_0p6b", "qwen3_1p7b", "qwen3_4b", "qwen3_8b", "qwen14b"]
        models = sorted(family, key=lambda m: order.index(m) if m in order else len(order))
        x = np.arange(len(models))
        fig, (tx, px) = plt.subplots(1, 2, figsize=(13, 4.6))
        # family[m][path] = (peak, median ms): torch's time over ours (a speedup), our peak over torch's.
        speedup = lambda f, path: f["torch"][1] / f[path][1]
        peak_ratio = lambda f, path: f[path][0] / f["torch"][0]
        for ax, ratio in ((tx, speedup), (px, peak_ratio)):
            for path, off in (("fused", -0.2), ("standard", 0.2)):
                v = [ratio(family[m], path) if path in family[m] and "torch" in family[m] else np.nan for m in models]
                ax.bar(x + off, v, 0.4, label=path)  # no bar without torch
        tx.axhline(1.07, color="0.4", lw=0.8, ls="--")
        tx.axhline(1.52, color="0.4", lw=0.8, ls=":")
        tx.set_ylabel("torch fused AdamW's step time / ours")
        tx.set_title("model_step_figures: the family's speedup (dashed 1.07, dotted 1.52: the paper's range)", fontsize=8)
        px.axhline(1.0, color="k", lw=0.8)
        px.set_ylabel("our peak / torch fused AdamW's")
        px.set_title("the family's peak memory against torch fused AdamW's", fontsize=8)
        for ax in (tx, px):
            ax.set_xticks(x)
            ax.set_xticklabels(models, fontsize=7)
            ax.legend(fontsize=7)
        out.append(save_stamped(fig, meta, figdir, "family.png"))
    return out


def roofline(rows, meta, figdir):
    """Achieved FLOP/s against arithmetic intensity (FLOP/byte), with the H200's two ceilings."""
    pts = [r for r in rows if r.get("bytes_per_s") and r.get("flop_per_s")]
    if not pts:
        return None
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    import render_fidelity
    fig, ax = plt.subplots(figsize=(9, 5.8))
    ai = np.array([r["flop_per_s"] / r["bytes_per_s"] for r in pts])
    x = np.logspace(math.log10(max(ai.min() / 4, 1e-2)), math.log10(max(ai.max() * 4, 2e3)), 200)
    ax.plot(x, np.minimum(H200_BF16_DENSE_FLOP_PER_S, x * H200_HBM_BYTES_PER_S), "k-", lw=1.5,
            label="H200 roofline: 4.8 TB/s HBM3e, 989 TFLOP/s dense bf16 (datasheet)")
    ax.plot(x, x * RUNNER_COPY_BYTES_PER_S, color="0.5", ls="--", lw=1,
            label="runner's measured copy rate 4.2 TB/s (bench_fused.cu)")
    paths = sorted({r["label"].split(" ")[0] if r["label"] else r["name"].split("/")[1] if "/" in r["name"] else "?"
                    for r in pts})
    markers = dict(zip(paths, "os^Dvx+*"))
    for p in paths:
        sel = [r for r in pts if (r["label"].split(" ")[0] if r["label"] else
                                 (r["name"].split("/")[1] if "/" in r["name"] else "?")) == p]
        ax.scatter([r["flop_per_s"] / r["bytes_per_s"] for r in sel], [r["flop_per_s"] for r in sel],
                   marker=markers.get(p, "o"), s=28, label="%s (%d)" % (p, len(sel)), zorder=3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per byte that must move)")
    ax.set_ylabel("achieved FLOP/s")
    ax.set_title("benchmarks against the H200's peaks (bytes_per_s, flop_per_s counters of forge-bench)", fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    render_fidelity.stamp(fig, meta)
    fig.savefig(os.path.join(figdir, "roofline.png"), dpi=110)
    plt.close(fig)
    return "roofline.png"


# ------------------------------------------------------------------------------------------------
# HTML
# ------------------------------------------------------------------------------------------------

CSS = """
body { font-family: sans-serif; margin: 1.5em; color: #222; max-width: 1400px; }
table { border-collapse: collapse; margin: 0.5em 0 1em 0; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; vertical-align: top; text-align: left; }
th { background: #f0f0f0; }
td.num { text-align: right; font-family: monospace; }
.v { font-weight: bold; padding: 0.05em 0.4em; border-radius: 3px; white-space: nowrap; }
.v-pass { background: #d6f5d6; color: #135e13; }
.v-fail { background: #f9d0d0; color: #8a1010; }
.v-not-run { background: #e4e4e4; color: #555; font-style: italic; }
.v-confirmed { background: #d6e9f9; color: #0f3f6d; }
.v-refuted { background: #ffe0b3; color: #7a3e00; }
.v-inconclusive { background: #e4e4e4; color: #555; font-style: italic; }
.v-error { background: #f3d1f3; color: #6d0f6d; outline: 2px solid #a020a0; }
.v-unknown { background: #fff2b3; color: #6b5200; }
.regression { background: #f9d0d0; }
.nogpu { background: #fff2b3; border: 1px solid #d9b800; padding: 0.5em 0.8em; margin: 0.5em 0 1em 0; max-width: 75em; }
.overall { font-size: 1.1em; }
figure { display: inline-block; margin: 0.5em; border: 1px solid #ddd; padding: 0.4em; }
figure img { max-width: 100%; }
figcaption { font-size: 0.8em; color: #555; }
details > summary { cursor: pointer; }
.statement { font-style: italic; }
.small { font-size: 0.8em; color: #555; }
"""

# Runs on load: every <img> must have decoded; the result goes into the DOM (read by the test).
CHECK_SCRIPT = """
var pageErrors = [];  // uncaught errors, also counted by the test from Chromium's console log
window.addEventListener('error', function (e) { pageErrors.push(String(e.message)); });
window.addEventListener('load', function () {
  var imgs = document.images, broken = [];
  for (var i = 0; i < imgs.length; i++)
    if (!imgs[i].complete || imgs[i].naturalWidth === 0) broken.push(imgs[i].getAttribute('src'));
  var d = document.getElementById('page-check');
  d.setAttribute('data-images', String(imgs.length));
  d.setAttribute('data-broken', String(broken.length));
  d.setAttribute('data-js-errors', String(pageErrors.length));
  d.setAttribute('data-status', broken.length === 0 && pageErrors.length === 0 ? 'ok' : 'broken');
  d.textContent = broken.length === 0 ? 'all ' + imgs.length + ' images loaded'
                                      : 'broken images: ' + broken.join(', ');
});
"""

# A contract's verdicts, then a finding's (reports/SCHEMA.md: a check's `kind`). A refutation is a
# finding, never a failure: it is orange, not red.
KNOWN_VERDICTS = ("pass", "fail", "not-run", "error", "confirmed", "refuted", "inconclusive")
JUDGED = ("pass", "fail", "confirmed", "refuted")  # direction and bound mean nothing for the others
COUNT_KEYS = ("n_pass", "n_fail", "n_not_run", "n_error", "n_confirmed", "n_refuted", "n_inconclusive")
VOCABULARY = ("A harness contract (a bitwise identity, a bound the harness proves, a self-check, a planted "
              "defect) is pass, fail or not-run; a finding (a statement of the paper or of the external release, "
              "named in the claim's registry row) is confirmed, refuted or inconclusive. A refutation is what the "
              "audit found, not a broken harness: it does not fail the run.")


def badge(v):
    v = str(v)
    cls = "v-" + v if v in KNOWN_VERDICTS else "v-unknown"
    return '<span class="v %s">%s</span>' % (cls, esc(v))


# Metrics whose bare number reads as a puzzle beside a paper's "~6%" or "1.5x": shown with their unit.
PERCENT_METRICS = ("rel_gap", "relative_difference")  # a relative difference: 0.378 is +37.8%
TIMES_METRICS = ("ratio", "speedup")                   # a ratio: 0.82 is 0.82x


def pct(x, signed=True):
    """A relative difference as a percentage, signed (0.378 -> +37.8%) unless it is a width."""
    try:
        v = 100 * float(x)
    except (TypeError, ValueError):
        return esc(x)
    if math.isnan(v):
        return "&ndash;"
    sign = "+" if signed else ""
    return ("%" + sign + ".1f%%") % v if abs(v) >= 0.1 or v == 0 else ("%" + sign + ".2g%%") % v


def with_unit(metric_name, x):
    """A metric's (or its bound's) number, with its unit where the metric has one: "0.378 (+37.8%)"."""
    s = fmt(x)
    try:
        v = float(x)
    except (TypeError, ValueError):
        return s
    if math.isnan(v):
        return s
    n = str(metric_name or "")
    if n in PERCENT_METRICS:
        return "%s (%s)" % (s, pct(v))
    if n in TIMES_METRICS:
        return "%s (%.3g&times;)" % (s, v)
    if "bytes" in n and abs(v) >= (1 << 20):
        return "%s (%.4g GiB)" % (s, v / (1 << 30))
    return s


def check_row(case, ch):
    v = ch.get("verdict", "?")
    value = with_unit(ch.get("metric_name"), ch.get("metric", float("nan")))
    metric = "%s = %s" % (esc(ch.get("metric_name", "")), value) if ch.get("metric_name") else value
    ev = []
    if ch.get("reason"):
        ev.append(esc(ch["reason"]))
    if "differing" in ch:
        ev.append("differing %s, max ulp %s%s" % (ch["differing"], fmt(ch.get("max_ulp", float("nan"))),
                                                   ", first at " + esc(ch["first_diff"]) if ch.get("first_diff") else ""))
    note = case["attrs"].get("note")
    if note:
        ev.append('<span class="small">%s</span>' % esc(note))
    judged = v in JUDGED
    return ("<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td class=num>%s</td><td class=num>%s</td><td>%s</td></tr>"
            % (esc(case["name"]), esc(ch.get("name", "")), badge(v), metric if judged else "",
               esc(ch.get("pass_if", "")) if judged else "",
               with_unit(ch.get("metric_name"), ch.get("bound", float("nan"))) if judged else "",
               "<br>".join(ev)))


def stagnation_table(rep, registry):
    """The stagnation gaps against fp32 master and against the exact optimum (Eigen), when present, as
    signed percentages, with what they are and how they stand to the paper's "~6%"."""
    out = []
    labels = ["fp32_master", "bf16_rne", "bf16_sr", "int8_state"]
    for c in paper_order(rep, registry):
        cases = {cs["name"]: cs for cs in c["cases"]}
        opt = cases.get("exact optimum", {}).get("small", {})
        summ = cases.get("summary", {}).get("small", {})
        if "optimum_loss" not in opt:
            continue
        gaps = [0.0] + list(summ.get("gaps", [float("nan")] * 3))
        sizes = cases.get("summary", {}).get("attrs", {}).get("sizes") or cases.get("exact optimum", {}).get(
            "attrs", {}).get("sizes", "")
        stmt = (registry or {}).get(c["id"], {}).get("statement") or (registry or {}).get(
            c["id"][:-4] if c["id"].endswith("_gpu") else "", {}).get("statement", "")
        band = summ.get("noise_band_rel", [float("nan")])[0]
        out.append("<h3>%s: final loss against fp32 master and against the exact optimum</h3>" % esc(c["id"]))
        out.append("<p>A <b>gap</b> is a relative difference of final eval losses (each the mean over the last 10%% of "
                   "steps and over the run seeds): variant / fp32 master &minus; 1, so bf16_rne at %s means its final "
                   "eval loss is that much above fp32 master's. The paper's figure%s is for its own training runs; "
                   "this is the harness's fixed least-squares problem%s, so the size of the gap is not comparable to "
                   "it. The checks judge the direction: <code>rne_gap_beyond_noise</code> passes when bf16 RNE's gap "
                   "exceeds the noise band (%s: 2 sample std of fp32 master's final loss over the run seeds, relative), "
                   "<code>sr_within_noise</code> when bf16 SR's difference stays within it.</p>"
                   % (pct(gaps[1]) if len(gaps) > 1 else "&ndash;",
                      ' (&ldquo;%s&rdquo;)' % esc(stmt) if stmt else "", " (%s)" % esc(sizes) if sizes else "",
                      pct(band, signed=False)))
        out.append("<p>Exact least-squares optimum of the eval loss (Eigen QR, double): %s; eval loss at W*: %s.</p>"
                   % (fmt(opt["optimum_loss"][0]), fmt(opt["optimum_loss"][1]) if len(opt["optimum_loss"]) > 1 else "&ndash;"))
        out.append("<table><tr><th>variant</th><th>gap vs fp32 master<br><span class=small>final loss / fp32 master's "
                   "&minus; 1</span></th><th>final loss &minus; optimum<br><span class=small>eval loss (absolute)</span>"
                   "</th><th>gap vs optimum<br><span class=small>final loss / optimum &minus; 1</span></th></tr>")
        ex = opt.get("excess_over_optimum", [float("nan")] * 4)
        gv = opt.get("gaps_vs_optimum", [float("nan")] * 4)
        for i, l in enumerate(labels):
            g = ("0 (the reference)" if i == 0 else pct(gaps[i])) if i < len(gaps) else "&ndash;"
            out.append("<tr><td>%s</td><td class=num>%s</td><td class=num>%s</td><td class=num>%s</td></tr>"
                       % (l, g, fmt(ex[i]) if i < len(ex) else "&ndash;", pct(gv[i]) if i < len(gv) else "&ndash;"))
        out.append("</table>")
    return "\n".join(out)


def paper_order(rep, registry):
    """The report's claims in the paper's order: the registry's (--registry; forge-verify runs the claims in
    it), else the order the run added them, which is the same; a claim the registry lacks comes last."""
    claims = list(rep["claims"])
    if registry:
        rank = {cid: i for i, cid in enumerate(registry)}
        claims.sort(key=lambda c: rank.get(c["id"], len(rank)))  # stable: the rest keep the report's order
    return claims


def _n(attrs, key):
    try:
        return int(attrs.get(key, 0))
    except (TypeError, ValueError):
        return 0


def counts_text(attrs):
    """The counts of a level, "3 pass, 0 fail, ...": a finding's counts only where the level has findings."""
    keys = [k for k in COUNT_KEYS[:4] if k in attrs]
    if any(_n(attrs, k) for k in COUNT_KEYS[4:]):
        keys += list(COUNT_KEYS[4:])
    return ", ".join("%s %s" % (attrs.get(k, 0), k[2:].replace("_", "-")) for k in keys)


def claim_reasons(c):
    return [str(ch.get("reason", "")) for cs in c["cases"] for ch in cs["checks"]]


def not_judged_why(c):
    """Why a claim that judged nothing (no check passed or failed, no finding confirmed or refuted)
    did not: the console's words (suites/forge_verify/console_table.cpp); "" when it judged
    something."""
    if sum(_n(c["attrs"], k) for k in ("n_pass", "n_fail", "n_confirmed", "n_refuted")) > 0:
        return ""
    if _n(c["attrs"], "n_error") > 0:
        return "threw an error"
    rs = [r.lower() for r in claim_reasons(c)]
    if rs and all(r.startswith("no gpu") or ("gpu" in r and "need" in r) for r in rs):
        return "need a GPU"
    if rs and all(r.startswith("no measurements") or r.startswith("no external results") for r in rs):
        return "need measurements"
    return "not run for other reasons"


def no_gpu_reason(rep):
    """Why the run had no GPU, or "" when it had one: a GPU claim's not-run reason that says none is
    visible (forge-verify's "not applicable: needs a GPU, 0 visible; <why>", or an older report's
    "no GPU: <why>"), else /meta gpu_name "none" (what forge-verify records without a GPU)."""
    for c in rep["claims"]:
        for r in claim_reasons(c):
            if ", 0 visible" in r or r.startswith("no GPU"):
                return r
    return "no GPU (/meta gpu_name: none)" if rep["meta"].get("gpu_name") == "none" else ""


def no_gpu_why(reason):
    """The <why> of a no-GPU reason: what the CUDA runtime said, without the words around it."""
    for lead in ("0 visible; ", "no GPU: "):
        if lead in reason:
            return reason[reason.index(lead) + len(lead):]
    return reason


def summary_lines(rep):
    """The verdict, how many claims were judged and why the others judged nothing (as the console's
    closing lines), and the no-GPU note when the run had no GPU."""
    claims = rep["claims"]
    whys = [not_judged_why(c) for c in claims]
    n_judged = sum(1 for w in whys if not w)
    counts = counts_text(rep["root"])
    out = ["<p class=overall>Overall: %s &mdash; %s%d%s claim%s judged; checks: %s.</p>"
           % (badge(rep["root"].get("verdict", "?")), "all " if n_judged == len(claims) and len(claims) > 1 else "",
              n_judged, "" if n_judged == len(claims) else " of %d" % len(claims), "" if len(claims) == 1 else "s",
              counts)]
    refuted = ["%s (%d)" % (c["id"], _n(c["attrs"], "n_refuted")) for c in claims if _n(c["attrs"], "n_refuted") > 0]
    if refuted:
        out.append("<p id=refuted>Refuted (a finding on the paper or the release, not a failure): %s.</p>"
                   % esc(", ".join(refuted)))
    out.append("<p class=small id=vocabulary>%s</p>" % esc(VOCABULARY))
    groups = {}
    for w in whys:
        if w:
            groups[w] = groups.get(w, 0) + 1
    rank = {"need a GPU": 0, "need measurements": 1, "threw an error": 2}
    parts = []
    for w in sorted(groups, key=lambda w: rank.get(w, 3)):
        k = groups[w]
        parts.append("%d %s" % (k, ("needs " + w[5:]) if k == 1 and w.startswith("need ") else w))
    if parts:
        out.append("<p>%d judged nothing: %s (their rows below say why).</p>" % (len(claims) - n_judged,
                                                                                ", ".join(parts)))
    why = no_gpu_reason(rep)
    if why:
        n_gpu = groups.get("need a GPU", 0)
        driver = (" CUDA gives this message also on a machine with no NVIDIA driver at all: it means no usable "
                  "GPU here, not a driver to upgrade." if "insufficient" in why.lower() else "")
        out.append('<div class=nogpu id=no-gpu><b>This run had no GPU</b> (%s). %s The verdict covers only what '
                   'this machine could judge; the GPU runner (scripts/gpu_runner.sh) judges the rest.%s</div>'
                   % (esc(no_gpu_why(why)), "%d GPU claim%s did not run." % (n_gpu, "" if n_gpu == 1 else "s") if n_gpu
                      else "No GPU claim was selected.", driver))
    return out


def verdict_section(rep, registry):
    out = ["<h2 id=verdicts>Verdicts</h2>"]
    out.append("<p class=small>Claims in the paper's order (the claim registry's, %s).</p>"
               % ("from --registry" if registry else "as the run added them"))
    out.append("<table><tr><th>claim</th><th>verdict</th><th>paper statement</th><th>what it judges</th>"
               "<th>checks</th></tr>")
    claims = paper_order(rep, registry)
    for c in claims:
        reg = registry.get(c["id"], {}) if registry else {}
        stmt = reg.get("statement") or ("(not in the registry)" if registry else "(no --registry given)")
        n = counts_text(c["attrs"])
        why = not_judged_why(c)
        why = "needs " + why[5:] if why.startswith("need ") else why  # one claim
        out.append('<tr><td><a href="#claim-%s">%s</a></td><td>%s</td><td class=statement>%s</td><td>%s</td><td>%s%s</td></tr>'
                   % (esc(c["id"]), esc(c["id"]), badge(c["attrs"].get("verdict", "?")), esc(stmt),
                      esc(reg.get("what", "")), esc(n), "<br><span class=small>judged nothing: %s</span>" % esc(why)
                      if why else ""))
    out.append("</table>")
    for c in claims:
        reg = registry.get(c["id"], {}) if registry else {}
        v = c["attrs"].get("verdict", "?")
        out.append('<details id="claim-%s"%s><summary><b>%s</b> %s <span class=statement>%s</span></summary>'
                   % (esc(c["id"]), "" if v == "pass" and not _n(c["attrs"], "n_refuted") else " open", esc(c["id"]),
                      badge(v), esc(reg.get("statement", ""))))
        out.append("<table><tr><th>case</th><th>check</th><th>verdict</th><th>metric</th><th>passes if</th>"
                   "<th>bound</th><th>evidence</th></tr>")
        for cs in c["cases"]:
            if not cs["checks"]:
                out.append("<tr><td>%s</td><td>(no checks)</td><td>%s</td><td></td><td></td><td></td><td></td></tr>"
                           % (esc(cs["name"]), badge(cs["attrs"].get("verdict", "not-run"))))
            for ch in cs["checks"]:
                out.append(check_row(cs, ch))
        out.append("</table></details>")
    return "\n".join(out)


CAPTIONS = {
    "stagnation_loss.png": "Stagnation: eval loss per variant (mean over run seeds, band = the seeds' min-max), the "
                           "exact least-squares optimum (Eigen QR in double) and, right, each variant minus fp32 master "
                           "for the same seed against fp32's own seed spread and the verdicts' noise band.",
    "stagnation_unchanged.png": "Stagnation: fraction of stored weights a step left unchanged (vanished updates).",
    "int8_error_hist.png": "Proposition 4: INT8 moment errors as a fraction of the codec bound (red: beyond it).",
    "int8_trajectory.png": "Proposition 4: INT8-state weights against fp32-state weights, with the check's bound.",
    "gradient_fidelity.png": "Gradient fidelity: G rounded to bf16 before the optimizer, against fp32 G.",
    "sr_tallies.png": "Stochastic rounding: class-table tallies and every binomial test against its threshold.",
    "roofline.png": "Benchmarks on a roofline against the H200's datasheet peaks.",
    "convergence_loss.png": "Convergence parity: held-out loss per configuration (harness, torch, the released "
                            "package), mean over seeds with the seeds' min-max band.",
    "convergence_int8_cause.png": "Convergence parity, the INT8 state's divergence: per traced step the largest weight "
                                  "change with INT8 and with bf16 state (one seed), and the second moments decoding to "
                                  "zero beside a first moment that does not.",
    "tp_microbatch.png": "One tensor-parallel rank of Llama-3.1-8B per H200: the largest micro-batch under FORGE and "
                         "the standard step, per degree (the memory model, validated by the measured ranks).",
    "family.png": "The Qwen3 family and GPT-2 124M (batch 1, sequence 512, bf16 state): each path's speedup over "
                  "torch fused AdamW and its peak memory over torch's, measured in one call.",
    "speedup_bars.png": "Per rule and state format, layer and T: cuBLAS's wgrad GEMM + the rule kernel over the "
                        "fused kernel (green: the fused kernel is faster; red: slower).",
}


def figures_section(figs, meta):
    out = ["<h2 id=figures>Figures</h2>",
           '<p class=small>Each figure is stamped: %s</p>' % esc("rev %s, GPU %s, %s" % (
               meta.get("git_revision", "unknown"), meta.get("gpu_name", "unknown"), meta.get("start_time_utc", "unknown")))]
    if not figs:
        out.append("<p>The report holds no figure data (no fidelity claim ran).</p>")
    for f in figs:
        base = f[4:] if f.startswith("gpu_") else f
        cap = CAPTIONS.get(base, f) + (" On the fused kernel (GPU claims)." if f.startswith("gpu_") else "")
        out.append('<figure><img src="figures/%s" alt="%s"><figcaption>%s</figcaption></figure>'
                   % (esc(f), esc(f), esc(cap)))
    return "\n".join(out)


# A forge-bench run name: [qwen3/]<rule>_<state>_<store>/<path>/out<O>_in<I>_T<T>[/<Google Benchmark's suffixes>].
BENCH_NAME = re.compile(r"^(?:qwen3/)?([a-z0-9_]+)/(fused|cublas)/out(\d+)_in(\d+)_T(\d+)(?:/|$)")


def speedup_bars(rows, meta, figdir):
    """cuBLAS + rule time over the fused kernel's, one bar per layer and T, a panel per rule and
    state: above 1 the fused kernel is faster (issue 28's table at a glance)."""
    pairs = {}
    for r in rows:
        m = BENCH_NAME.match(r["name"])
        if m:
            key = (m.group(1), int(m.group(3)), int(m.group(4)), int(m.group(5)))
            pairs.setdefault(key, {})[m.group(2)] = r["time_ns"]
    bars = sorted((k, v["cublas"] / v["fused"]) for k, v in pairs.items()
                  if v.get("fused", 0) > 0 and v.get("cublas", 0) > 0)
    if not bars:
        return None
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import render_fidelity
    configs = sorted({k[0] for k, _ in bars})
    n = max(len([b for b in bars if b[0][0] == c]) for c in configs)
    fig, axes = plt.subplots(1, len(configs), figsize=(min(4 + 3.2 * len(configs), 18), 1.2 + 0.22 * n), squeeze=False)
    for ax, c in zip(axes[0], configs):
        sel = [(k, x) for k, x in bars if k[0] == c]
        vals = [x for _, x in sel]
        ax.barh(range(len(sel)), vals, color=["tab:green" if x >= 1 else "tab:red" for x in vals])
        ax.axvline(1.0, color="k", lw=1)
        ax.set_yticks(range(len(sel)))
        ax.set_yticklabels(["%dx%d T%d" % (k[1], k[2], k[3]) for k, _ in sel], fontsize=6)
        ax.invert_yaxis()
        ax.set_title(c, fontsize=8)
        ax.set_xlabel("cuBLAS + rule / fused (> 1: fused faster)", fontsize=7)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    render_fidelity.stamp(fig, meta)
    fig.savefig(os.path.join(figdir, "speedup_bars.png"), dpi=110)
    plt.close(fig)
    return "speedup_bars.png"


def bench_section(rep, bench, roof, bars=None):
    if not rep["benchmarks"] and not bench:
        return ""
    out = ["<h2 id=benchmarks>Benchmarks</h2>"]
    if rep["benchmarks"]:
        out.append("<p>From the report's /benchmarks group (real time per repetition, median in &micro;s).</p>")
        out.append("<table><tr><th>benchmark</th><th>median &micro;s</th><th>repetitions</th></tr>")
        for b in rep["benchmarks"]:
            out.append("<tr><td>%s</td><td class=num>%s</td><td class=num>%d</td></tr>"
                       % (esc(b["name"]), fmt(b["median_ns"] / 1e3), len(b["repetitions"])))
        out.append("</table>")
    if bench:
        out.append("<p>From the Google Benchmark JSON (%s; %s). Peaks: H200 SXM datasheet, 4.8 TB/s HBM3e and "
                   "989 TFLOP/s dense bf16.</p>" % (esc(bench["context"].get("date", "no date")),
                                                     esc(bench["context"].get("host_name", "no host"))))
        out.append("<table><tr><th>benchmark</th><th>label</th><th>time &micro;s</th><th>TB/s</th><th>% of 4.8 TB/s</th>"
                   "<th>TFLOP/s</th><th>% of 989 TFLOP/s</th></tr>")
        for r in sorted(bench["rows"], key=lambda r: r["name"]):
            bw, fl = r.get("bytes_per_s"), r.get("flop_per_s")
            out.append("<tr><td>%s</td><td>%s</td><td class=num>%s (%s)</td><td class=num>%s</td><td class=num>%s</td>"
                       "<td class=num>%s</td><td class=num>%s</td></tr>"
                       % (esc(r["name"]), esc(r["label"]), fmt(r["time_ns"] / 1e3), esc(r["how"]),
                          fmt(bw / 1e12) if bw else "&ndash;", fmt(100 * bw / H200_HBM_BYTES_PER_S) if bw else "&ndash;",
                          fmt(fl / 1e12) if fl else "&ndash;",
                          fmt(100 * fl / H200_BF16_DENSE_FLOP_PER_S) if fl else "&ndash;"))
        out.append("</table>")
    if bars:
        out.append('<figure><img src="figures/%s" alt="speedup bars"><figcaption>%s</figcaption></figure>'
                   % (bars, esc(CAPTIONS["speedup_bars.png"])))
    if roof:
        out.append('<figure><img src="figures/%s" alt="roofline"><figcaption>%s</figcaption></figure>'
                   % (roof, esc(CAPTIONS["roofline.png"])))
    elif rep["benchmarks"]:
        out.append("<p class=small>No roofline: the report keeps times only; the bytes and FLOP counts are in "
                   "forge-bench's JSON (pass it with --bench).</p>")
    return "\n".join(out)


def diff_section(diff):
    if diff is None:
        return ""
    ch = diff["changes"]
    nreg = sum(1 for c in ch if c.get("regression"))
    out = ["<h2 id=diff>Changes against the baseline</h2>",
           "<p>%s &rarr; %s: %d changes, %s.</p>" % (esc(diff.get("base", "base")), esc(diff.get("new", "new")), len(ch),
                                                    '<span class="v v-fail">%d regressions</span>' % nreg if nreg
                                                    else '<span class="v v-pass">no regression</span>')]
    if ch:
        out.append("<table><tr><th>regression</th><th>kind</th><th>path</th><th>field</th><th>base</th><th>new</th>"
                   "<th>note</th></tr>")
        for c in sorted(ch, key=lambda c: not c.get("regression")):
            out.append('<tr%s><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>'
                       % (' class="regression"' if c.get("regression") else "", "yes" if c.get("regression") else "no",
                          esc(c.get("kind", "")), esc(c.get("path", "")), esc(c.get("field", "")),
                          esc(c.get("base", "")), esc(c.get("new", "")), esc(c.get("note", ""))))
        out.append("</table>")
    return "\n".join(out)


def page(rep, registry, figs, bench, roof, diff, plant, bars=None):
    meta = rep["meta"]
    title = "forge-harness: %s (%s, %s)" % (os.path.basename(rep["path"]), meta.get("git_revision", "?"),
                                            meta.get("start_time_utc", "?"))
    parts = ["<!DOCTYPE html>", MARKER, '<html lang="en"><head><meta charset="utf-8">',
             "<title>%s</title>" % esc(title), "<style>%s</style>" % CSS,
             "<script>%s</script>" % CHECK_SCRIPT]
    if plant == "js_error":
        parts.append("<script>planted_undefined_function();</script>")  # throws as the page is parsed
    parts.append("</head><body>")
    parts.append("<h1>%s</h1>" % esc(title))
    parts.append('<div id="page-check" data-status="pending">page check did not run</div>')
    parts.append("<p><a href=#verdicts>verdicts</a> &middot; <a href=#figures>figures</a>%s%s &middot; "
                 "<a href=#meta>provenance</a></p>" % (" &middot; <a href=#benchmarks>benchmarks</a>" if rep["benchmarks"] or bench else "",
                                                       " &middot; <a href=#diff>changes</a>" if diff is not None else ""))
    parts += summary_lines(rep)  # at a glance: the verdict, what was judged, and a run without a GPU said so
    parts.append(diff_section(diff))
    parts.append(verdict_section(rep, registry))
    shown = list(figs)
    if plant == "missing_image":
        shown.append("planted_missing.png")  # never written
    parts.append(figures_section(shown, meta))
    parts.append(stagnation_table(rep, registry))
    parts.append(bench_section(rep, bench, roof, bars))
    parts.append("<h2 id=meta>Provenance (/meta)</h2><table>")
    for k in sorted(meta):
        parts.append("<tr><th>%s</th><td>%s</td></tr>" % (esc(k), esc(meta[k])))
    parts.append("</table><p class=small>Rendered by scripts/render_summary.py from %s.</p></body></html>"
                 % esc(os.path.abspath(rep["path"])))
    return "\n".join(p for p in parts if p)


# ------------------------------------------------------------------------------------------------

def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def tree(folder):
    """(path relative to folder, lstat) of everything under it; links are not followed."""
    def fail(e):
        raise BadInput("%s: cannot list %s (%s)" % (folder, e.filename, e.strerror))
    out = []
    for dirpath, dirnames, filenames in os.walk(folder, onerror=fail):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            out.append((os.path.relpath(p, folder), os.lstat(p)))
    return out


def owned_files(outdir):
    """The manifest of the page this script wrote into outdir: {"files": {relative path: sha256},
    "dirs": [relative path]}, else BadInput."""
    mpath = os.path.join(outdir, MANIFEST)
    try:
        with open(mpath, encoding="utf-8") as fh:
            files = json.load(fh)
        if not isinstance(files.get("files"), dict) or not all(isinstance(v, str) for v in files["files"].values()):
            raise ValueError("'files' is not an object of digests")
        if not isinstance(files.get("dirs"), list) or not all(isinstance(v, str) for v in files["dirs"]):
            raise ValueError("'dirs' is not a list of names")
    except FileNotFoundError:
        raise BadInput("%s: a folder this script did not write (no %s in it): not replaced" % (outdir, MANIFEST))
    except (OSError, ValueError, AttributeError) as e:
        raise BadInput("%s: its page manifest %s cannot be read (%s): not replaced" % (outdir, mpath, e))
    return files


def check_outdir(outdir, inputs, force):
    """The manifest of the page to replace (None when outdir is absent or an empty folder); BadInput when
    outdir must not be replaced. Every file in it must be one this script wrote and left unchanged."""
    parent = os.path.dirname(outdir)
    if not os.path.isdir(parent):
        raise BadInput("%s: the output's folder %s does not exist" % (outdir, parent))
    if not os.access(parent, os.W_OK | os.X_OK):
        raise BadInput("%s: the output's folder %s is not writable" % (outdir, parent))
    try:
        st = os.lstat(outdir)
    except FileNotFoundError:
        return None
    if not stat.S_ISDIR(st.st_mode):
        twin = same_file(outdir, inputs) if stat.S_ISREG(st.st_mode) else None
        if twin is not None:
            raise BadInput("%s: the output is the same file as the input %s: refused" % (outdir, twin))
        raise BadInput("%s: the output is %s, not a folder: refused" % (outdir, file_kind(st.st_mode)))
    entries = tree(outdir)
    if not entries:
        return None
    owned = owned_files(outdir)
    for rel, est in entries:
        if rel == MANIFEST or (rel in owned["dirs"] and stat.S_ISDIR(est.st_mode)):
            continue
        path = os.path.join(outdir, rel)
        if rel not in owned["files"] or not stat.S_ISREG(est.st_mode):
            raise BadInput("%s: holds %s, which this script did not write: not replaced" % (outdir, rel))
        twin = same_file(path, inputs)
        if twin is not None:
            raise BadInput("%s: holds the input %s: refused" % (outdir, twin))
        if sha256(path) != owned["files"][rel]:
            raise BadInput("%s: %s changed since this script wrote it: not replaced" % (outdir, rel))
    if not force:
        raise BadInput("%s: the page exists (--force replaces a page this script wrote)" % outdir)
    return owned


def remove_owned(folder, owned):
    """Deletes from folder only what its manifest lists (files still unchanged, folders once
    empty), the manifest, then folder itself if empty; True when something is left (put there
    since the check)."""
    for rel, digest in owned["files"].items():
        p = os.path.join(folder, rel)
        if os.path.isfile(p) and not os.path.islink(p) and sha256(p) == digest:
            os.unlink(p)
    if os.path.isfile(os.path.join(folder, MANIFEST)):
        os.unlink(os.path.join(folder, MANIFEST))
    for rel in sorted(owned["dirs"], key=len, reverse=True) + [""]:
        try:
            os.rmdir(os.path.join(folder, rel))
        except OSError:
            pass
    return os.path.lexists(folder)


def write_manifest(folder):
    entries = tree(folder)
    files = {rel: sha256(os.path.join(folder, rel)) for rel, st in entries if stat.S_ISREG(st.st_mode)}
    dirs = [rel for rel, st in entries if stat.S_ISDIR(st.st_mode)]
    with open(os.path.join(folder, MANIFEST), "w", encoding="utf-8") as fh:
        json.dump({"written_by": "scripts/render_summary.py", "files": files, "dirs": dirs}, fh, indent=1,
                  sort_keys=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("report")
    ap.add_argument("-o", "--outdir", required=True)
    ap.add_argument("--diff", help="forge-verify diff --json output: list its changes")
    ap.add_argument("--registry", help="forge-verify --list-claims-json output: the paper's sentence per claim")
    ap.add_argument("--bench", help="Google Benchmark JSON (forge-bench --benchmark_out=F --benchmark_out_format=json)")
    ap.add_argument("--force", action="store_true", help="replace a page this script wrote into OUTDIR")
    args = ap.parse_args()
    plant = os.environ.get("FH_SUMMARY_PLANT", "")
    if plant and plant not in PLANTS:
        raise BadInput("FH_SUMMARY_PLANT must be one of %s" % ", ".join(PLANTS))

    outdir = os.path.abspath(args.outdir.rstrip("/") or args.outdir)
    inputs = [p for p in (args.report, args.registry, args.diff, args.bench) if p]
    tmp = old = None
    try:
        # Everything is read and checked before anything is written.
        rep = read_report(args.report)
        registry = read_registry(args.registry) if args.registry else None
        diff = read_diff(args.diff) if args.diff else None
        bench = read_bench(args.bench) if args.bench else None
        owned = check_outdir(outdir, inputs, args.force)  # None: nothing to replace
        parent = os.path.dirname(outdir)
        try:
            tmp = tempfile.mkdtemp(prefix=".%s.tmp." % os.path.basename(outdir), dir=parent)
        except OSError as e:
            raise BadInput("%s: cannot write in its folder %s (%s)" % (outdir, parent, e.strerror))
        figdir = os.path.join(tmp, "figures")
        os.makedirs(figdir)
        try:
            figs = fidelity_figures(args.report, figdir) + issue33_figures(args.report, rep["meta"], figdir)
        except (KeyError, ValueError, TypeError, IndexError) as e:
            raise BadInput("%s: its fidelity or model data do not have the expected shape: %r" % (args.report, e))
        roof = roofline(bench["rows"], rep["meta"], figdir) if bench else None
        # The bars from the JSON's medians, else from the report's /benchmarks group.
        bars = speedup_bars(bench["rows"] if bench else
                            [{"name": b["name"], "time_ns": b["median_ns"]} for b in rep["benchmarks"]], rep["meta"], figdir)
        with open(os.path.join(tmp, "index.html"), "w", encoding="utf-8") as fh:
            fh.write(page(rep, registry, figs, bench, roof, diff, plant, bars))
        write_manifest(tmp)
        os.chmod(tmp, 0o755)
        # Into place: the old page (if any) moves aside, the new one takes its name, and of the old
        # one only the files its manifest lists are deleted.
        try:
            if owned:
                old = tempfile.mkdtemp(prefix=".%s.old." % os.path.basename(outdir), dir=parent)
                os.rename(outdir, os.path.join(old, "page"))
            os.rename(tmp, outdir)  # fails, replacing nothing, if a non-empty outdir appeared meanwhile
        except OSError as e:
            if old and not os.path.lexists(outdir) and os.path.isdir(os.path.join(old, "page")):
                os.rename(os.path.join(old, "page"), outdir)  # the previous page back
            raise BadInput("%s: cannot put the page in place (%s)" % (outdir, e.strerror or e))
        tmp = None
        if old:
            if remove_owned(os.path.join(old, "page"), owned):
                sys.stderr.write("render_summary.py: note: files put into the old page while it was replaced are "
                                 "kept in %s\n" % os.path.join(old, "page"))
            else:
                os.rmdir(old)
                old = None
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        if old and not os.path.lexists(os.path.join(old, "page")):
            os.rmdir(old)
    print(os.path.join(outdir, "index.html"))
    return 0


if __name__ == "__main__":
    run_main("render_summary.py", main)
