#!/usr/bin/env python3
"""Render the low-precision fidelity evidence of a forge-harness report to PNG (issue 5).

Reads one or more HDF5 reports (reports/SCHEMA.md: /<claim>/<case>/data/<dataset>) and writes:
  stagnation_loss.png        eval-loss curves of every stagnation run (stagnation_curves/*/eval_loss)
  stagnation_unchanged.png   fraction of weights a step left unchanged (.../unchanged_frac)
  int8_error_hist.png        |err| / B(a) histograms of the INT8 moments (prop4_int8_histograms/*)
  int8_trajectory.png        per-step max |W_int8 - W_fp32| (prop4_int8_trajectory/*/max_abs_dev)
  gradient_fidelity.png      per-step error and bias of the bf16-G update (gradient_fidelity*/*/rms_rel)
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

Usage: render_fidelity.py REPORT.h5 [REPORT.h5 ...] [-o OUTDIR] [--gpu] [--registry FILE]
       render_fidelity.py --check-registry FILE
Needs h5py and matplotlib (the GPU runner's python has them); exits with status 2 and a message
when they are missing.
"""
import argparse
import json
import os
import sys

# forge-verify claim -> the per-case datasets the figures read (the _gpu claims read the same).
FIGURE_DATASETS = {
    "stagnation": ["eval_loss", "unchanged_frac"],
    "prop4_int8": ["err_over_bound_hist", "max_abs_dev", "rms_dev", "max_update"],
    "gradient_fidelity": ["rms_rel", "max_rel", "bias_rel", "directional_bias"],
}


def check_registry(path):
    """Every dataset a figure reads is declared by its claim (and the claim's _gpu twin)."""
    try:
        with open(path) as f:
            claims = {c["id"]: set(c["datasets"]) for c in json.load(f)["claims"]}
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.stderr.write("render_fidelity.py: cannot read the registry export %s: %s\n" % (path, e))
        sys.exit(2)
    missing = []
    for claim, names in FIGURE_DATASETS.items():
        for cid in (claim, claim + "_gpu"):
            if cid not in claims:
                missing.append("%s: not in the registry" % cid)
                continue
            missing += ["%s/%s: not declared" % (cid, n) for n in names if n not in claims[cid]]
    if missing:
        sys.stderr.write("render_fidelity.py: the figures read datasets the registry does not declare:\n  %s\n"
                         % "\n  ".join(missing))
        sys.exit(2)


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
        sys.stderr.write("render_fidelity.py: missing Python module(s): %s "
                         "(pip install %s, or run on the GPU runner)\n" % (", ".join(missing), " ".join(missing)))
        sys.exit(2)


def collect(paths):
    """{claim: {case: {dataset: numpy array}}} plus case attributes, over all reports."""
    import h5py
    data, attrs = {}, {}
    for path in paths:
        if not os.path.exists(path):
            sys.stderr.write("render_fidelity.py: no such report: %s\n" % path)
            sys.exit(1)
        with h5py.File(path, "r") as f:
            for claim in f:
                if claim == "meta" or not isinstance(f[claim], h5py.Group):
                    continue
                for case in f[claim]:
                    g = f[claim][case]
                    if not isinstance(g, h5py.Group):
                        continue
                    attrs.setdefault(claim, {})[case] = {k: (v.decode() if isinstance(v, bytes) else v)
                                                         for k, v in g.attrs.items()}
                    if "data" in g:
                        for name in g["data"]:
                            data.setdefault(claim, {}).setdefault(case, {})[name] = g["data"][name][()]
    return data, attrs


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
    args = ap.parse_args()
    if args.registry:
        check_registry(args.registry)
    sfx = "_gpu" if args.gpu else ""
    prefix = "gpu_" if args.gpu else ""
    executor = "fused kernel step (H200)" if args.gpu else "twin step"
    need_modules()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data, attrs = collect(args.reports)
    os.makedirs(args.outdir, exist_ok=True)
    written = []
    colors = {"fp32_master": "k", "bf16_rne": "tab:red", "bf16_sr": "tab:blue", "int8_state": "tab:green"}

    # Stagnation curves: the CPU suite stores one case per run (stagnation_curves/<label seed s>,
    # 1-D), forge-verify one case per variant (stagnation/curves <label>, 2-D [run seed, step]).
    def stagnation_runs(key):
        runs = []
        for case, d in sorted(data.get("stagnation_curves" if not sfx else "-", {}).items()):
            if key in d:
                runs.append((case, case.split(" seed ")[0], d[key]))
        for case, d in sorted(data.get("stagnation" + sfx, {}).items()):
            if key in d and case.startswith("curves "):
                label = attrs["stagnation" + sfx][case].get("label", case[len("curves "):])
                seeds = str(attrs["stagnation" + sfx][case].get("run_seeds", "")).split(",")
                arr = d[key]
                rows = arr if arr.ndim == 2 else arr.reshape(1, -1)
                for i, y in enumerate(rows):
                    runs.append(("%s seed %s" % (label, seeds[i] if i < len(seeds) else i), label, y))
        return runs

    for key, fname, ylabel, logy in (("eval_loss", "stagnation_loss.png", "eval loss", True),
                                     ("unchanged_frac", "stagnation_unchanged.png", "unchanged weights per step", False)):
        runs = stagnation_runs(key)
        if not runs:
            continue
        fig, ax = plt.subplots(figsize=(8, 5))
        for case, label, y in runs:
            ax.plot(range(1, len(y) + 1), y, color=colors.get(label, None), lw=1, alpha=0.8, label=case)
        if logy:
            ax.set_yscale("log")
        ax.set_xlabel("step")
        ax.set_ylabel(ylabel)
        ax.set_title("stagnation experiment (least squares, AdamW, %s)" % executor)
        ax.legend(fontsize=7, ncol=2)
        fig.tight_layout()
        fig.savefig(os.path.join(args.outdir, prefix + fname), dpi=120)
        plt.close(fig)
        written.append(prefix + fname)

    def cases_with(key, claims):
        return [("%s/%s" % (claim, case), d) for claim in claims for case, d in sorted(data.get(claim, {}).items())
                if key in d]

    # INT8 |err|/B histograms: prop4_int8_histograms/* (CPU suite) or prop4_int8/* (forge-verify).
    hists = cases_with("err_over_bound_hist", ("prop4_int8_gpu",) if sfx else ("prop4_int8_histograms", "prop4_int8"))
    if hists:
        fig, axes = plt.subplots(1, len(hists), figsize=(4.5 * len(hists), 3.8), squeeze=False)
        for ax, (case, d) in zip(axes[0], hists):
            h = d["err_over_bound_hist"]
            edges = [i / 20 for i in range(20)]
            ax.bar(edges, [max(v, 0) for v in h[:20]], width=0.05, align="edge", color="tab:green", edgecolor="k", lw=0.3)
            ax.set_title("%s\n(violations: %d)" % (case, int(h[20])), fontsize=7)
            ax.set_xlabel("|err| / B(absmax)")
            ax.set_ylabel("elements")
            ax.set_xlim(0, 1)
            nz = [v for v in h[:20] if v > 0]
            if nz and max(nz) > 100 * min(nz):  # log only where counts span decades
                ax.set_yscale("log")
            else:
                ax.set_ylim(0, 1.1 * max(nz or [1]))
        fig.tight_layout()
        fig.savefig(os.path.join(args.outdir, prefix + "int8_error_hist.png"), dpi=120)
        plt.close(fig)
        written.append(prefix + "int8_error_hist.png")

    traj = cases_with("max_abs_dev", ("prop4_int8_gpu",) if sfx else ("prop4_int8_trajectory", "prop4_int8"))
    if traj:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for case, d in traj:
            for key, style in (("max_abs_dev", "-"), ("rms_dev", "--"), ("max_update", ":")):
                if key in d:
                    ax.plot(range(1, len(d[key]) + 1), d[key], style, label="%s %s" % (case, key))
        ax.set_yscale("symlog", linthresh=1e-8)
        ax.set_xlabel("step")
        ax.set_ylabel("|W_int8 - W_fp32|")
        ax.legend(fontsize=6)
        fig.tight_layout()
        fig.savefig(os.path.join(args.outdir, prefix + "int8_trajectory.png"), dpi=120)
        plt.close(fig)
        written.append(prefix + "int8_trajectory.png")

    # Gradient fidelity: per-step error and bias of the bf16-G update relative to its scale.
    grad = cases_with("rms_rel", ("gradient_fidelity_gpu",) if sfx else ("gradient_fidelity_curves", "gradient_fidelity"))
    if grad:
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
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
            ax.legend(fontsize=6)
        fig.suptitle("gradient fidelity: G rounded to bf16 before the optimizer vs fp32 G (fused path, %s)" % executor, fontsize=9)
        fig.tight_layout()
        fig.savefig(os.path.join(args.outdir, prefix + "gradient_fidelity.png"), dpi=120)
        plt.close(fig)
        written.append(prefix + "gradient_fidelity.png")

    if not written:
        sys.stderr.write("render_fidelity.py: no fidelity datasets found in %s\n" % ", ".join(args.reports))
        sys.exit(1)
    for w in written:
        print(os.path.join(args.outdir, w))


if __name__ == "__main__":
    main()
