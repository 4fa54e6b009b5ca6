#!/usr/bin/env python3
"""Draw the memory timeline of a forge-verify report (issue 18; the paper's Figure 2).

Usage: render_memory_timeline.py REPORT.h5 OUT.png

Finds the eq6_memory_model case that carries the timelines (datasets timeline_<path>_in_use and
timeline_<path>_peak, attribute timeline_phases; reports/SCHEMA.md layout) and draws every path
on one plot: bytes in use at each phase boundary (solid) and the peak since the previous boundary
(dashed), in MiB. Bad input (a missing file, not HDF5, not a report, no timeline in it, OUT.png's
folder missing) prints one line on stderr and exits 2 without writing OUT.png; the figure is
written to a temporary file beside OUT.png and renamed onto it.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from atomic_file import replace_from_temp  # noqa: E402


class BadInput(Exception):
    pass


def read_timelines(path):
    if not os.path.isfile(path):
        raise BadInput("no such report file: %s" % path)
    import h5py
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        raise BadInput("%s is not an HDF5 file (%s)" % (path, e))
    with f:
        if "schema_version" not in f.attrs or "meta" not in f:
            raise BadInput("%s is HDF5 but not a forge-harness report" % path)
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
                return case.name, phases, lines
    raise BadInput("%s holds no memory timeline (claim eq6_memory_model with timeline_* datasets)" % path)


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    report, out = argv[1], argv[2]
    try:
        if not os.path.isdir(os.path.dirname(os.path.abspath(out))):
            raise BadInput("the folder of %s does not exist" % out)
        case, phases, lines = read_timelines(report)
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(8, 4.5))
        x = range(len(phases))
        for path, (in_use, peak) in sorted(lines.items()):
            line, = ax.plot(x, [b / 2**20 for b in in_use], marker="o", label="%s: in use" % path)
            ax.plot(x, [b / 2**20 for b in peak], linestyle="--", color=line.get_color(), label="%s: peak" % path)
        ax.set_xticks(list(x))
        ax.set_xticklabels(phases, rotation=20, ha="right")
        ax.set_ylabel("MiB")
        ax.set_title("memory per phase: %s" % case.split("/")[-1], fontsize=9)
        ax.legend(fontsize=8)
        fig.tight_layout()

        def save(tmp):
            fig.savefig(tmp, format="png", dpi=110)
        replace_from_temp(out, save)
    except BadInput as e:
        print("render_memory_timeline: %s" % e, file=sys.stderr)
        return 2
    print("render_memory_timeline: wrote %s (%s)" % (out, ", ".join(sorted(lines))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
