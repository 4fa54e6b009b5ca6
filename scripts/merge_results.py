#!/usr/bin/env python3
"""Merges external-producer results files of one path (docs/EXTERNAL_PRODUCER.md) written by
several processes, each over its own cases (forge_adapter.py --cases-filter), into one file.

Usage: merge_results.py [--force] OUT.h5 IN.h5 [IN.h5 ...]
The inputs must share cases_id, producer, path and role; the root and /meta attributes of the first
are kept, and each input's meta is listed in /meta as merged_from. A case present in two inputs, or
a disagreement in those four attributes, is an error (exit 2, nothing written). Inputs and OUT follow
the scripts' file policy (scripts/atomic_file.py): OUT is never an input, and an existing OUT is
replaced only with --force.
"""
import os
import sys

import h5py

import atomic_file  # scripts/atomic_file.py, beside this script

KEYS = ("cases_id", "producer", "path", "role")


USAGE = "merge_results.py [--force] OUT.h5 IN.h5 [IN.h5 ...]"


def open_results(path):
    """An open results file (regular, HDF5, with /meta and /cases), else BadInput naming it."""
    atomic_file.check_input(path, "input")
    try:
        src = h5py.File(path, "r")
    except Exception as e:  # h5py raises OSError, and others on some damaged files
        raise atomic_file.BadInput("%s is not an HDF5 file (%s)" % (path, str(e).splitlines()[0] if str(e) else e))
    for name in ("meta", "cases"):
        if not isinstance(src.get(name), h5py.Group):
            src.close()
            raise atomic_file.BadInput("%s is not a results file: no group /%s (docs/EXTERNAL_PRODUCER.md)" % (path, name))
    return src


def main(argv):
    (out, *ins), force = atomic_file.parse_positional(argv, USAGE, 2, 10000)
    for path in ins:
        open_results(path).close()
    seen = {}

    def work(tmp):
        with h5py.File(tmp, "w") as dst:
            first = None
            for path in ins:
                with open_results(path) as src:
                    ident = tuple(str(src.attrs.get(k, "")) for k in KEYS)
                    if first is None:
                        first = ident
                        for k, v in src.attrs.items():
                            dst.attrs[k] = v
                        src.copy(src["meta"], dst, "meta")
                        dst.create_group("cases")
                    elif ident != first:
                        diff = [k for k, a, b in zip(KEYS, ident, first) if a != b]
                        raise atomic_file.BadInput("%s: %s differs from the first input's (%s)"
                                                   % (path, ", ".join("%s %r" % (k, ident[KEYS.index(k)]) for k in diff),
                                                      ", ".join(repr(first[KEYS.index(k)]) for k in diff)))
                    for cid in src["cases"]:
                        if cid in seen:
                            raise atomic_file.BadInput("%s: case %s is also in %s" % (path, cid, seen[cid]))
                        seen[cid] = path
                        src.copy(src["cases"][cid], dst["cases"], cid)
            dst["meta"].attrs["merged_from"] = " ".join(os.path.basename(p) for p in ins)

    atomic_file.write_output(out, work, ins, force, prefix=".merge_results.")
    print("merge_results: wrote %s: %d cases from %d files" % (out, len(seen), len(ins)))
    return 0


if __name__ == "__main__":
    atomic_file.run_main("merge_results", main, sys.argv)
