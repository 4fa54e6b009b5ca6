#!/usr/bin/env python3
"""Render the low-precision fidelity evidence of a forge-harness report to PNG (issue 5).

Reads one or more HDF5 reports (reports/SCHEMA.md: /<claim>/<case>/data/<dataset>) and writes:
  stagnation_loss.png        eval-loss curves of every stagnation run (stagnation_curves/*/eval_loss)
  stagnation_unchanged.png   fraction of weights a step left unchanged (.../unchanged_frac)
  int8_error_hist.png        |err| / B(a) histograms of the INT8 moments (prop4_int8_histograms/*)
  int8_trajectory.png        per-step max |W_int8 - W_fp32| (prop4_int8_trajectory/*/max_abs_dev)
Only the figures whose data are present are written.

Usage: render_fidelity.py REPORT.h5 [REPORT.h5 ...] [-o OUTDIR]
Needs h5py and matplotlib (the GPU runner's python has them); exits with status 2 and a message
when they are missing.
"""
import argparse
import os
import sys


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
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("reports", nargs="+")
    ap.add_argument("-o", "--outdir", default=".")
    args = ap.parse_args()
    need_modules()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data, _ = collect(args.reports)
    os.makedirs(args.outdir, exist_ok=True)
    written = []
    colors = {"fp32_master": "k", "bf16_rne": "tab:red", "bf16_sr": "tab:blue", "int8_state": "tab:green"}

    curves = data.get("stagnation_curves", {})
    for key, fname, ylabel, logy in (("eval_loss", "stagnation_loss.png", "eval loss", True),
                                     ("unchanged_frac", "stagnation_unchanged.png", "unchanged weights per step", False)):
        runs = [(case, d[key]) for case, d in sorted(curves.items()) if key in d]
        if not runs:
            continue
        fig, ax = plt.subplots(figsize=(8, 5))
        for case, y in runs:
            label = case.split(" seed ")[0]
            ax.plot(range(1, len(y) + 1), y, color=colors.get(label, None), lw=1, alpha=0.8, label=case)
        if logy:
            ax.set_yscale("log")
        ax.set_xlabel("step")
        ax.set_ylabel(ylabel)
        ax.set_title("stagnation experiment (least squares, AdamW, twin step)")
        ax.legend(fontsize=7, ncol=2)
        fig.tight_layout()
        fig.savefig(os.path.join(args.outdir, fname), dpi=120)
        plt.close(fig)
        written.append(fname)

    hists = data.get("prop4_int8_histograms", {})
    if hists:
        fig, axes = plt.subplots(1, len(hists), figsize=(4 * len(hists), 3.5), squeeze=False)
        for ax, (case, d) in zip(axes[0], sorted(hists.items())):
            h = d["err_over_bound_hist"]
            edges = [i / 20 for i in range(20)]
            ax.bar(edges, h[:20], width=0.05, align="edge", color="tab:green")
            ax.set_title("%s (violations: %d)" % (case, int(h[20])), fontsize=9)
            ax.set_xlabel("|err| / B(absmax)")
            ax.set_yscale("log")
        fig.tight_layout()
        fig.savefig(os.path.join(args.outdir, "int8_error_hist.png"), dpi=120)
        plt.close(fig)
        written.append("int8_error_hist.png")

    traj = data.get("prop4_int8_trajectory", {})
    if traj:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for case, d in sorted(traj.items()):
            for key, style in (("max_abs_dev", "-"), ("rms_dev", "--"), ("max_update", ":")):
                if key in d:
                    ax.plot(range(1, len(d[key]) + 1), d[key], style, label="%s %s" % (case, key))
        ax.set_yscale("symlog", linthresh=1e-8)
        ax.set_xlabel("step")
        ax.set_ylabel("|W_int8 - W_fp32|")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(args.outdir, "int8_trajectory.png"), dpi=120)
        plt.close(fig)
        written.append("int8_trajectory.png")

    if not written:
        sys.stderr.write("render_fidelity.py: no fidelity datasets found in %s\n" % ", ".join(args.reports))
        sys.exit(1)
    for w in written:
        print(os.path.join(args.outdir, w))


if __name__ == "__main__":
    main()
