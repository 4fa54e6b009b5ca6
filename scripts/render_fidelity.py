#!/usr/bin/env python3
"""Render the low-precision fidelity evidence of a forge-harness report to PNG.

Reads one or more HDF5 reports (reports/SCHEMA.md: /<claim>/<case>/data/<dataset>) and writes:
  stagnation_loss.png        eval-loss curves of every stagnation run (stagnation_curves/*/eval_loss)
  stagnation_unchanged.png   fraction of weights a step left unchanged (.../unchanged_frac)
  int8_error_hist.png        |err| / B(a) histograms of the INT8 moments (prop4_int8_histograms/*)
  int8_trajectory.png        per-step max |W_int8 - W_fp32| (prop4_int8_trajectory/*/max_abs_dev)
  gradient_fidelity.png      per-step error and bias of the bf16-G update (gradient_fidelity*/*/rms_rel)
  sr_tallies.png             SR class table against its threshold, every binomial test (sr_statistics/*)
Stagnation curves are drawn as the mean over run seeds with the seeds' min-max band (the noise
band), with the exact least-squares optimum (stagnation/exact optimum/optimum_loss) and, in a
second panel, each variant minus fp32 master for the same seed (SR's curve lies on fp32's).
Every figure is stamped with the report's git revision, GPU name and start time (/meta).
Both layouts are read: the CPU suites' reports and forge-verify's (stagnation/curves <label> with
2-D [run seed, step] curves, prop4_int8/* with the histograms and the trajectory).
Only the figures whose data are present are written.

forge-verify on a GPU machine also writes the same claims run on the fused kernel (groups
stagnation_gpu, prop4_int8_gpu, gradient_fidelity_gpu): --gpu renders those instead, into files
named gpu_<figure>.png.

The dataset names the figures read are listed once below (FIGURE_DATASETS) and checked against
the claim registry's export (forge-verify --list-claims-json) when --registry is given: a
dataset the registry does not declare for that claim stops the run (exit 2) instead of drawing
an empty figure. --check-registry FILE does only that check (no h5py or matplotlib needed).

Usage: render_fidelity.py REPORT.h5 [REPORT.h5 ...] [-o OUTDIR] [--gpu] [--registry FILE] [--force]
       render_fidelity.py --check-registry FILE
Needs h5py and matplotlib (the GPU runner's python has them). Bad input (a missing file, a folder,
FIFO or device, not HDF5, not a report or a schema version it does not read, a report with no
fidelity data, missing modules) and a refused output print one line on stderr and exit 2 with
nothing written; an unexpected failure exits 3. A figure is refused when its name in OUTDIR is a
folder, symlink, device or FIFO, one of the reports, or an existing file without --force; every
name is checked before the first figure is written, and each is written to a temporary file and
renamed into place.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from atomic_file import BadInput, check_input, check_output, open_report, run_main, write_output  # noqa: E402

# forge-verify claim -> the per-case datasets the figures read (the _gpu claims read the same).
FIGURE_DATASETS = {
    "stagnation": ["eval_loss", "unchanged_frac", "final_loss_fp32_mean_std", "optimum_loss"],
    "prop4_int8": ["err_over_bound_hist", "max_abs_dev", "rms_dev", "max_update", "max_update_int8"],
    "gradient_fidelity": ["rms_rel", "max_rel", "bias_rel", "directional_bias"],
    "sr_statistics": ["class_low16", "observed", "expected", "threshold"],
}


def check_registry(path):
    """Every dataset a figure reads is declared by its claim (and the claim's _gpu twin)."""
    check_input(path, "registry export")
    try:
        with open(path, encoding="utf-8") as f:
            claims = {c["id"]: set(c["datasets"]) for c in json.load(f)["claims"]}
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as e:
        raise BadInput("%s: cannot read the registry export (%s: %s)" % (path, type(e).__name__, e))
    missing = []
    for claim, names in FIGURE_DATASETS.items():
        for cid in (claim, claim + "_gpu"):
            if cid not in claims:
                missing.append("%s: not in the registry" % cid)
                continue
            missing += ["%s/%s: not declared" % (cid, n) for n in names if n not in claims[cid]]
    if missing:
        raise BadInput("%s: the figures read datasets the registry does not declare: %s" % (path, "; ".join(missing)))


def need_modules():
    missing = []
    try:
        import h5py  # noqa: F401
    except ImportError:
        missing.append("h5py")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        missing.append("matplotlib")
    if missing:
        raise BadInput("missing Python module(s): %s (Debian: apt-get install %s, or run on the GPU runner)"
                       % (", ".join(missing), " ".join("python3-" + m for m in missing)))


def _s(v):
    return v.decode() if isinstance(v, bytes) else v


def collect(paths):
    """Over all reports: {claim: {case: {dataset: array}}}, {claim: {case: attrs}},
    {claim: {case: {check: attrs}}} and the first report's /meta (with 'reports' naming them all)."""
    data, attrs, checks, meta = {}, {}, {}, {}
    for path in paths:
        with open_report(path) as f:
            try:
                _collect_one(f, data, attrs, checks, meta)
            except Exception as e:  # h5py raises more than OSError on a damaged file
                raise BadInput("%s cannot be read as a report (%s: %s)" % (path, type(e).__name__, e))
    meta["reports"] = ", ".join(os.path.basename(p) for p in paths)
    return data, attrs, checks, meta


def _collect_one(f, data, attrs, checks, meta):
    import h5py
    if not meta:
        meta.update({k: _s(v) for k, v in f["meta"].attrs.items()})
    for claim in f:
        if claim == "meta" or not isinstance(f[claim], h5py.Group):
            continue
        for case in f[claim]:
            g = f[claim][case]
            if not isinstance(g, h5py.Group):
                continue
            attrs.setdefault(claim, {})[case] = {k: _s(v) for k, v in g.attrs.items()}
            if "checks" in g:
                for name in g["checks"]:
                    checks.setdefault(claim, {}).setdefault(case, {})[name] = {
                        k: _s(v) for k, v in g["checks"][name].attrs.items()}
            if "data" in g:
                for name in g["data"]:
                    data.setdefault(claim, {}).setdefault(case, {})[name] = g["data"][name][()]


def stamp_text(meta):
    """What every figure carries: which code, on which GPU, when (the report's /meta)."""
    return "rev %s | GPU %s | %s | %s" % (meta.get("git_revision", "unknown"), meta.get("gpu_name", "unknown"),
                                         meta.get("start_time_utc", "unknown"), meta.get("reports", ""))


def stamp(fig, meta):
    fig.text(0.995, 0.005, stamp_text(meta), ha="right", va="bottom", fontsize=6, color="0.35")


# One look per stagnation variant: colour, line style, marker, drawing order. SR is drawn above
# fp32 master (its curve lies on top of fp32's) with markers so both stay visible.
VARIANT_STYLE = {
    "fp32_master": dict(color="k", ls="-", marker=None, zorder=3, lw=1.6),
    "bf16_rne": dict(color="tab:red", ls="--", marker="s", zorder=2, lw=1.2),
    "bf16_sr": dict(color="tab:blue", ls="-.", marker="o", zorder=4, lw=1.2),
    "int8_state": dict(color="tab:green", ls=":", marker="^", zorder=3.5, lw=1.4),
}


def check_outdir(outdir):
    """OUTDIR must be a folder, or absent below a folder this process can write in (it is made)."""
    if os.path.lexists(outdir) and not os.path.isdir(outdir):
        raise BadInput("%s: the output folder exists and is not a folder" % outdir)
    up = os.path.abspath(outdir)
    while not os.path.lexists(up):
        up = os.path.dirname(up)
    if not os.path.isdir(up) or not os.access(up, os.W_OK | os.X_OK):
        raise BadInput("%s: the output folder%s is not writable" % (outdir, "" if up == os.path.abspath(outdir)
                                                                     else " cannot be made: %s" % up))


def render(paths, outdir, gpu=False, force=False):
    """Writes every figure whose data the reports hold; returns the file names written (in outdir).
    Every figure is drawn and every output name checked before the first is written."""
    check_outdir(outdir)
    need_modules()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    sfx = "_gpu" if gpu else ""
    prefix = "gpu_" if gpu else ""
    data, attrs, checks, meta = collect(paths)
    executor = "fused kernel step (%s)" % meta.get("gpu_name", "GPU") if gpu else "twin step"
    drawn = []

    def save(fig, fname):
        stamp(fig, meta)
        drawn.append((fig, prefix + fname))

    # Stagnation curves as {label: [run seed, step]}: the CPU suite stores one case per run
    # (stagnation_curves/<label seed s>, 1-D), forge-verify one case per variant (stagnation/curves
    # <label>, 2-D [run seed, step]).
    def stagnation_runs(key):
        runs = {}
        for case, d in sorted(data.get("stagnation_curves" if not sfx else "-", {}).items()):
            if key in d:
                runs.setdefault(case.split(" seed ")[0], []).append(np.asarray(d[key], dtype=float))
        for case, d in sorted(data.get("stagnation" + sfx, {}).items()):
            if key in d and case.startswith("curves "):
                label = attrs["stagnation" + sfx][case].get("label", case[len("curves "):])
                arr = np.asarray(d[key], dtype=float)
                runs.setdefault(label, []).extend(arr if arr.ndim == 2 else arr.reshape(1, -1))
        order = [l for l in VARIANT_STYLE if l in runs] + [l for l in runs if l not in VARIANT_STYLE]
        return [(l, np.vstack(runs[l])) for l in order]

    def stagnation_dataset(name):
        for d in data.get("stagnation" + sfx, {}).values():
            if name in d:
                return np.asarray(d[name], dtype=float)
        return None

    def band(ax, label, y, offset=None, stride=40):
        """Mean over run seeds as the line, the seeds' min-max envelope as the band (the noise band)."""
        st = VARIANT_STYLE.get(label, dict(color=None, ls="-", marker=None, zorder=2, lw=1))
        x = np.arange(1, y.shape[1] + 1)
        yy = y - offset if offset is not None else y
        m = yy.mean(axis=0)
        line, = ax.plot(x, m, color=st["color"], ls=st["ls"], lw=st["lw"], zorder=st["zorder"],
                        marker=st["marker"], markevery=(stride // 4 * (list(VARIANT_STYLE).index(label) % 4) + 1, stride)
                        if st["marker"] else None, ms=4, mfc="none",
                        label="%s (mean of %d seeds, band: min-max)" % (label, y.shape[0]))
        if y.shape[0] > 1:
            ax.fill_between(x, yy.min(axis=0), yy.max(axis=0), color=line.get_color(), alpha=0.18, lw=0,
                            zorder=st["zorder"] - 0.5)
        return line

    loss = stagnation_runs("eval_loss")
    if loss:
        opt = stagnation_dataset("optimum_loss")
        fstd = stagnation_dataset("final_loss_fp32_mean_std")
        fig, axes = plt.subplots(1, 2, figsize=(13, 6.2))
        ax = axes[0]
        for label, y in loss:
            band(ax, label, y)
        if opt is not None:
            ax.axhline(opt[0], color="0.3", ls=(0, (6, 3)), lw=1,
                       label="exact optimum of the eval loss (Eigen QR, double): %.4g" % opt[0])
            if len(opt) > 1:
                ax.axhline(opt[1], color="0.6", ls=(0, (1, 2)), lw=1, label="eval loss at W*: %.4g" % opt[1])
        ax.set_yscale("log")
        ax.set_xlabel("step")
        ax.set_ylabel("eval loss")
        ax.set_title("eval loss per variant", fontsize=9)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, frameon=False)
        # Right: every variant minus fp32 master, paired by run seed (same data stream per seed), so
        # SR's and INT8's curves, hidden under fp32's on the left, show against fp32's own noise.
        ax = axes[1]
        ref = dict(loss).get("fp32_master")
        if ref is not None:
            for label, y in loss:
                if label in ("fp32_master", "bf16_rne") or y.shape != ref.shape:
                    continue
                band(ax, label, y, offset=ref)
            spread = ref - ref.mean(axis=0)
            x = np.arange(1, ref.shape[1] + 1)
            ax.fill_between(x, spread.min(axis=0), spread.max(axis=0), color="k", alpha=0.12, lw=0,
                            label="fp32 master's own seed spread per step")
            if fstd is not None:
                tail = max(1, ref.shape[1] // 10)
                ax.fill_between([ref.shape[1] - tail, ref.shape[1]], -2 * fstd[1], 2 * fstd[1], color="tab:orange",
                                alpha=0.3, lw=0, label="verdict noise band: +-2 std of fp32 final loss (last 10%)")
            ax.axhline(0, color="k", lw=0.6)
            ax.set_ylabel("eval loss - fp32 master's (same run seed)")
            ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, frameon=False)
            # bf16 RNE is off this panel's scale: its gap is said in the title, as the verdict measures it
            # (the summary's gaps: final eval loss, mean of the last 10% of steps and of the run seeds,
            # over fp32 master's, minus 1), not one step's ratio.
            gaps = stagnation_dataset("gaps")
            if gaps is not None and len(gaps) and np.isfinite(gaps[0]):
                rne = ("bf16 RNE (left panel): final eval loss %+.1f%% over fp32 master's\n(mean of the last 10%% "
                       "of steps and of the run seeds: the gap its check uses)" % (100 * gaps[0]))
            elif "bf16_rne" in dict(loss):
                rne = ("bf16 RNE (left panel): eval loss at the last step %+.1f%% over fp32 master's"
                       % (100 * (dict(loss)["bf16_rne"].mean(axis=0)[-1] / ref.mean(axis=0)[-1] - 1)))
            else:
                rne = ""
            ax.set_title("bf16 SR and INT8 state against fp32 master" + ("\n" + rne if rne else ""), fontsize=9)
        ax.set_xlabel("step")
        fig.suptitle("stagnation: least squares, AdamW, %s" % executor, fontsize=10)
        fig.tight_layout(rect=(0, 0.02, 1, 1))
        save(fig, "stagnation_loss.png")

    unchanged = stagnation_runs("unchanged_frac")
    if unchanged:
        fig, ax = plt.subplots(figsize=(8, 5))
        for label, y in unchanged:
            band(ax, label, y)
        ax.set_xlabel("step")
        ax.set_ylabel("fraction of stored weights left unchanged")
        ax.set_title("stagnation: updates that vanish in the weight store (%s)" % executor, fontsize=10)
        ax.legend(fontsize=7, loc="center right")
        fig.tight_layout(rect=(0, 0.02, 1, 1))
        save(fig, "stagnation_unchanged.png")

    def cases_with(key, claims):
        return [("%s/%s" % (claim, case), d) for claim in claims for case, d in sorted(data.get(claim, {}).items())
                if key in d]

    # INT8 |err|/B histograms: prop4_int8_histograms/* (CPU suite) or prop4_int8/* (forge-verify).
    hists = cases_with("err_over_bound_hist", ("prop4_int8_gpu",) if sfx else ("prop4_int8_histograms", "prop4_int8"))
    if hists:
        fig, axes = plt.subplots(1, len(hists), figsize=(4.5 * len(hists), 4.2), squeeze=False)
        for ax, (case, d) in zip(axes[0], hists):
            h = d["err_over_bound_hist"]
            edges = [i / 20 for i in range(20)]
            ax.bar(edges, [max(v, 0) for v in h[:20]], width=0.05, align="edge", color="tab:green", edgecolor="k", lw=0.3)
            ax.bar([1.0], [max(h[20], 0)], width=0.05, align="edge", color="tab:red", edgecolor="k", lw=0.3,
                   label="beyond the bound: %d" % int(h[20]))
            ax.axvline(1.0, color="tab:red", lw=1.2, label="bound B(absmax)")
            ax.set_title(case, fontsize=7)
            ax.set_xlabel("|err| / B(absmax)")
            ax.set_ylabel("elements")
            ax.set_xlim(0, 1.08)
            nz = [v for v in h[:21] if v > 0]
            if nz and max(nz) > 100 * min(nz):  # log only where counts span decades
                ax.set_yscale("log")
            else:
                ax.set_ylim(0, 1.15 * max(nz or [1]))
            ax.legend(fontsize=6, loc="upper left")
        fig.suptitle("Proposition 4: INT8 block-64 moment errors against the codec bound (%s)" % executor, fontsize=10)
        fig.tight_layout(rect=(0, 0.03, 1, 1))
        save(fig, "int8_error_hist.png")

    traj = cases_with("max_abs_dev", ("prop4_int8_gpu",) if sfx else ("prop4_int8_trajectory", "prop4_int8"))
    if traj:
        fig, ax = plt.subplots(figsize=(8.5, 5))
        for case, d in traj:
            steps = np.arange(1, len(d["max_abs_dev"]) + 1)
            for key, style in (("max_abs_dev", "-"), ("rms_dev", "--"), ("max_update", ":")):
                if key in d:
                    ax.plot(steps, d[key], style, label="%s %s" % (case.split("/")[-1], key))
            # The check's bound: |W_int8(t) - W_fp32(t)| <= sum over steps of both runs' largest
            # step (triangle inequality); its final value is the check's bound.
            if "max_update" in d and "max_update_int8" in d:
                env = np.cumsum(np.asarray(d["max_update"]) + np.asarray(d["max_update_int8"]))
                ax.plot(steps, env, color="0.3", ls=(0, (6, 3)), lw=1.4, label="bound: cumulative max step of both runs")
            claim, cs = case.split("/", 1)
            # The check's bound as a level mark: black when the check passed, a red cross only when it failed
            # (red is for failures on every figure of the page).
            for ch in checks.get(claim, {}).get(cs, {}).values():
                if ch.get("verdict") in ("pass", "fail") and np.isfinite(ch.get("bound", float("nan"))):
                    failed = ch["verdict"] == "fail"
                    ax.plot([steps[-1]], [ch["bound"]], "x" if failed else "_", color="tab:red" if failed else "k",
                            ms=9 if failed else 16, mew=2,
                            label="check's bound %.4g (%s)" % (ch["bound"], "FAILED" if failed else "passed"))
        ax.set_yscale("symlog", linthresh=1e-8)
        ax.set_xlabel("step")
        ax.set_ylabel("|W_int8 - W_fp32|")
        ax.set_title("Proposition 4: INT8-state weights against fp32-state weights over the steps (%s)" % executor,
                     fontsize=9)
        ax.legend(fontsize=6, loc="center left", bbox_to_anchor=(1.01, 0.5))
        fig.tight_layout(rect=(0, 0.03, 1, 1))
        save(fig, "int8_trajectory.png")

    # Gradient fidelity: per-step error and bias of the bf16-G update relative to its scale. Legends
    # go below the panels, off the data.
    grad = cases_with("rms_rel", ("gradient_fidelity_gpu",) if sfx else ("gradient_fidelity_curves", "gradient_fidelity"))
    if grad:
        fig, axes = plt.subplots(1, 2, figsize=(12, 5.6))
        for case, d in grad:
            case = case.split("/")[-1].split(" bf16-G")[0]  # "adamw 64x128 T=32 50 steps"
            steps = range(1, len(d["rms_rel"]) + 1)
            axes[0].plot(steps, d["rms_rel"], "-", label="%s rms" % case)
            if "max_rel" in d:
                axes[0].plot(steps, d["max_rel"], ":", label="%s max" % case)
            if "bias_rel" in d:
                axes[1].plot(steps, d["bias_rel"], "-", label="%s bias" % case)
            if "directional_bias" in d:
                axes[1].plot(steps, d["directional_bias"], "--", label="%s directional" % case)
        axes[0].set_yscale("log")
        axes[0].set_ylabel("|W_bf16G - W_fp32G| / rms(update)")
        axes[1].axhline(0, color="k", lw=0.5)
        axes[1].set_ylabel("mean (W_bf16G - W_fp32G) / rms(update)")
        for ax in axes:
            ax.set_xlabel("step")
            ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
        fig.suptitle("gradient fidelity: G rounded to bf16 before the optimizer vs fp32 G (fused path, %s)" % executor,
                     fontsize=10)
        fig.tight_layout(rect=(0, 0.03, 1, 1))
        save(fig, "gradient_fidelity.png")

    # SR tallies: the class table (observed round-up fraction minus the exact one, against the
    # Hoeffding threshold) and every binomial test (cases with an alpha attribute) as |diff| / threshold.
    srclaim = "sr_statistics" + sfx
    table = [(c, d) for c, d in data.get(srclaim, {}).items() if all(k in d for k in FIGURE_DATASETS["sr_statistics"])]
    tests = [(case, ch) for case, a in attrs.get(srclaim, {}).items() if "alpha" in a
             for ch in checks.get(srclaim, {}).get(case, {}).values()
             if ch.get("verdict") in ("pass", "fail") and ch.get("bound", 0) > 0]
    if table or tests:
        fig, axes = plt.subplots(1, 2, figsize=(13, 5.2), gridspec_kw={"width_ratios": [1, 1.2]})
        ax = axes[0]
        for case, d in table:
            x = np.arange(len(d["class_low16"]))
            diff = np.asarray(d["observed"]) - np.asarray(d["expected"])
            thr = np.asarray(d["threshold"])
            ax.fill_between(x, -thr, thr, step="mid", color="tab:blue", alpha=0.15, label="Hoeffding threshold (alpha)")
            ax.plot(x, diff, "o", color="tab:blue", label="observed - exact round-up probability")
            ax.set_xticks(x)
            ax.set_xticklabels(["0x%04x" % int(v) for v in d["class_low16"]], rotation=45, fontsize=7)
        ax.axhline(0, color="k", lw=0.5)
        ax.set_xlabel("dropped low 16 bits of the value class")
        ax.set_ylabel("round-up fraction: observed - exact")
        ax.set_title("class table", fontsize=9)
        if table:
            ax.legend(fontsize=7, loc="upper right")
        ax = axes[1]
        if tests:
            names = ["%s" % c.replace(" variant=kernel", "").replace(" via twin fused step", "") for c, _ in tests]
            ratio = [ch["metric"] / ch["bound"] for _, ch in tests]
            colors = ["tab:blue" if ch["verdict"] == "pass" else "tab:red" for _, ch in tests]
            y = np.arange(len(tests))
            ax.barh(y, ratio, color=colors)
            ax.axvline(1.0, color="tab:red", lw=1.2, label="threshold (fail beyond)")
            ax.set_yticks(y)
            ax.set_yticklabels(names, fontsize=7)
            ax.invert_yaxis()
            ax.set_xlim(0, max(1.1, max(ratio) * 1.05))
            ax.legend(fontsize=7, loc="lower right")
        ax.set_xlabel("|observed - expected| / threshold")
        ax.set_title("every binomial test (blue pass, red fail)", fontsize=9)
        fig.suptitle("stochastic rounding on the Philox stream: tallies (%s)" % executor, fontsize=10)
        fig.tight_layout(rect=(0, 0.03, 1, 1))
        save(fig, "sr_tallies.png")
    try:
        finals = [os.path.join(outdir, name) for _, name in drawn]
        for final in finals:
            check_output(final, paths, force)
        if drawn:
            try:
                os.makedirs(outdir, exist_ok=True)
            except OSError as e:
                raise BadInput("%s: cannot make the output folder (%s)" % (outdir, e.strerror))
        for (fig, _), final in zip(drawn, finals):
            write_output(final, lambda tmp, fig=fig: fig.savefig(tmp, format="png", dpi=110), paths, force,
                         prefix=".render_fidelity.")
    finally:
        for fig, _ in drawn:
            plt.close(fig)
    return [name for _, name in drawn]


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--check-registry":
        check_registry(sys.argv[2])
        print("render_fidelity.py: every figure dataset is declared in %s" % sys.argv[2])
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("reports", nargs="+")
    ap.add_argument("--registry", help="forge-verify --list-claims-json output: check the figure datasets against it")
    ap.add_argument("-o", "--outdir", default=".")
    ap.add_argument("--gpu", action="store_true", help="render forge-verify's *_gpu claims (every step on the fused kernel)")
    ap.add_argument("--force", action="store_true", help="replace figures that exist in OUTDIR")
    args = ap.parse_args()
    if args.registry:
        check_registry(args.registry)
    written = render(args.reports, args.outdir, args.gpu, args.force)
    if not written:
        raise BadInput("%s: no %sfidelity datasets to draw" % (", ".join(args.reports), "GPU (--gpu) " if args.gpu else ""))
    for w in written:
        print(os.path.join(args.outdir, w))
    return 0


if __name__ == "__main__":
    run_main("render_fidelity.py", main)
