#!/usr/bin/env python3
"""Merges external-producer results files of one path (docs/EXTERNAL_PRODUCER.md) written by
several processes, each over its own cases (forge_adapter.py --cases-filter), into one file.

Usage: merge_results.py OUT.h5 IN.h5 [IN.h5 ...]
The inputs must share cases_id, producer, path and role; the root and /meta attributes of the first
are kept, and each input's meta is listed in /meta as merged_from. A case present in two inputs, or
a disagreement in those four attributes, is an error (exit 2, nothing written).
"""
import os
import sys

import h5py

import atomic_file  # scripts/atomic_file.py, beside this script

KEYS = ("cases_id", "producer", "path", "role")


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        return 2
    out, ins = argv[1], argv[2:]
    seen = {}

    def work(tmp):
        with h5py.File(tmp, "w") as dst:
            first = None
            for path in ins:
                with h5py.File(path, "r") as src:
                    ident = tuple(str(src.attrs.get(k, "")) for k in KEYS)
                    if first is None:
                        first = ident
                        for k, v in src.attrs.items():
                            dst.attrs[k] = v
                        src.copy(src["meta"], dst, "meta")
                        dst.create_group("cases")
                    elif ident != first:
                        raise ValueError("%s: %s differs from the first input's %s" % (path, ident, first))
                    for cid in src["cases"]:
                        if cid in seen:
                            raise ValueError("case %s is in both %s and %s" % (cid, seen[cid], path))
                        seen[cid] = path
                        src.copy(src["cases"][cid], dst["cases"], cid)
            dst["meta"].attrs["merged_from"] = " ".join(os.path.basename(p) for p in ins)

    try:
        atomic_file.replace_from_temp(out, work, prefix=".merge_results.")
    except (OSError, KeyError, ValueError) as e:
        print("merge_results: %s" % e, file=sys.stderr)
        return 2
    print("merge_results: wrote %s: %d cases from %d files" % (out, len(seen), len(ins)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
