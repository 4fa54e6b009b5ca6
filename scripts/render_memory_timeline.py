#!/usr/bin/env python3
"""Draw the memory timeline of a forge-verify report (the paper's Figure 2).

Usage: render_memory_timeline.py [--force] REPORT.h5 OUT.png [MODEL]

Without MODEL: finds the eq6_memory_model case that carries the twin's timelines (datasets
timeline_<path>_in_use and timeline_<path>_peak, attribute timeline_phases; reports/SCHEMA.md
layout). With MODEL (llama8b, qwen14b, ...): the model_step_figures cases of that model measured
on the GPU (datasets timeline_in_use and timeline_peak, one case per configuration). Draws every
path on one plot: bytes in use at each phase boundary (solid) and the peak since the previous
boundary (dashed), in MiB (GiB for the model step). Bad input (a missing file, a folder, FIFO or
device, not HDF5, not a report or a schema version it does not read, no timeline in it) and a
refused OUT.png (its folder missing or read-only; a folder, symlink, device or FIFO; the report
itself; an existing file without --force) print one line on stderr and exit 2 without writing
OUT.png; an unexpected failure exits 3. The figure is written to a temporary file beside OUT.png
and renamed into place.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from atomic_file import (BadInput, check_input, check_output, open_report, parse_positional,  # noqa: E402
                         run_main, write_output)


def text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def read_model_step_timelines(f, path, model):
    claim = f.get("model_step_figures")
    phases, lines, refs = None, {}, {}
    for case in (claim.values() if claim is not None else []):
        data = case.get("data")
        if data is None or "timeline_phases" not in case.attrs or text(case.attrs.get("model", "")) != model:
            continue
        p = text(case.attrs["timeline_phases"]).split(";")
        if phases is not None and p != phases:
            raise BadInput("%s: the %s timelines mark different phases" % (path, model))
        phases = p
        lines[text(case.attrs.get("config", case.name))] = (list(data["timeline_in_use"][()]), list(data["timeline_peak"][()]))
        for d in ("torch_fused_peak_bytes", "torch_hooks_peak_bytes"):
            if d in data:
                refs[d[:-len("_peak_bytes")]] = float(data[d][()][0])
    if not lines:
        raise BadInput("%s holds no model_step_figures timeline of model %s" % (path, model))
    return "model step, " + model, phases, lines, refs


def read_timelines(path, model=None):
    with open_report(path) as f:
        try:
            return _timelines(f, path, model)
        except BadInput:
            raise
        except Exception as e:  # h5py raises more than OSError on a damaged file
            raise BadInput("%s cannot be read as a report (%s: %s)" % (path, type(e).__name__, e))


def _timelines(f, path, model):
    if model is not None:
        return read_model_step_timelines(f, path, model)
    claim = f.get("eq6_memory_model")
    for case in (claim.values() if claim is not None else []):
        data = case.get("data")
        if data is None or "timeline_phases" not in case.attrs:
            continue
        phases = case.attrs["timeline_phases"]
        phases = (phases.decode() if isinstance(phases, bytes) else str(phases)).split(";")
        lines = {}
        for name in data:
            if name.startswith("timeline_") and name.endswith("_in_use"):
                p = name[len("timeline_"):-len("_in_use")]
                lines[p] = (list(data[name][()]), list(data["timeline_%s_peak" % p][()]))
        if lines:
            return case.name, phases, lines, {}
    raise BadInput("%s holds no memory timeline (claim eq6_memory_model with timeline_* datasets)" % path)


def main(argv):
    pos, force = parse_positional(argv, __doc__.strip().splitlines()[2][len("Usage: "):], 2, 3)
    report, out = pos[0], pos[1]
    model = pos[2] if len(pos) == 3 else None
    # Both files are checked before anything is read or drawn.
    check_input(report, "report")
    check_output(out, [report], force)
    case, phases, lines, refs = read_timelines(report, model)
    unit, scale = ("GiB", 2**30) if model else ("MiB", 2**20)
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(12 if len(phases) > 12 else 8, 4.5))
    x = range(len(phases))
    for path, (in_use, peak) in sorted(lines.items()):
        line, = ax.plot(x, [b / scale for b in in_use], marker="o", label="%s: in use" % path)
        ax.plot(x, [b / scale for b in peak], linestyle="--", color=line.get_color(), label="%s: peak" % path)
    for name, peak in sorted(refs.items()):  # torch in the same runner call: its whole-run peak
        ax.axhline(peak / scale, linestyle=":", color="gray" if name == "torch_fused" else "black",
                   label="%s: peak (max_memory_allocated)" % name)
    ax.set_xticks(list(x))
    ax.set_xticklabels([p.replace("backward.", "bwd.") for p in phases], rotation=60 if len(phases) > 12 else 20,
                       ha="right", fontsize=7 if len(phases) > 12 else 9)
    ax.set_ylabel(unit)
    ax.set_title("memory per phase: %s" % case.split("/")[-1], fontsize=9)
    if model:
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    else:
        ax.legend(fontsize=8)
    fig.tight_layout()

    def save(tmp):
        fig.savefig(tmp, format="png", dpi=110)
    write_output(out, save, [report], force, prefix=".render_memory_timeline.")
    print("render_memory_timeline: wrote %s (%s)" % (out, ", ".join(sorted(lines))))
    return 0


if __name__ == "__main__":
    run_main("render_memory_timeline", main, sys.argv)
