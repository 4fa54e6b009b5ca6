#!/usr/bin/env python3
"""The layer check (DESIGN "Layout"): no #include points upward.

Each source folder belongs to a layer; a file may include only from the folders its layer lists.
Data flows one way: case generator -> producers -> oracles -> verdicts -> report, so
  core       kernels/common, kernels/rules, kernels/formats   (numerics every layer shares)
  inputs     inputs/             the door and the readers of every file the harness is given
                                 (core only: parsed into typed values before any claim runs)
  exact      exact/              running error analysis in MPFR (Tracked), shared by references and judges
  twin       kernels/twin        the host twin and the tensor-core model (a producer)
  gpu        kernels/gpu         the CUDA kernels (producers; may use the twin's model)
  reference  reference/          MPFR rules, exact G, two-phase and order-matched references
                                 (producers; may use the twin's instruction model)
  oracles    oracles/            judges: core numerics and exact/ only, never a producer
  reports    reports/            the evidence vocabulary (oracles) and the HDF5 report (may use
                                 the input layer's door, text rules and HDF5 plumbing)
  suites     suites/             claims, GoogleTest suites, benchmarks, forge-verify: anything
Usage: check_layers.py ROOT      exit 0 when clean, 1 listing each upward include
       check_layers.py --self-test   plants an upward include in a scratch tree and expects 1
"""
import os
import re
import sys
import tempfile

CORE = {"kernels/common", "kernels/rules", "kernels/formats"}
ALLOWED = {
    "kernels/common": CORE,
    "kernels/rules": CORE,
    "kernels/formats": CORE,
    "inputs": CORE | {"inputs"},
    "exact": CORE | {"exact"},
    "kernels/twin": CORE | {"kernels/twin"},
    "kernels/gpu": CORE | {"kernels/twin", "kernels/gpu"},
    "reference": CORE | {"kernels/twin", "exact", "reference"},
    "oracles": CORE | {"exact", "oracles"},
    "reports": CORE | {"exact", "oracles", "inputs", "reports"},
}
SOURCE_EXT = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def folder_of(rel):
    parts = rel.split("/")
    if parts[0] == "kernels" and len(parts) > 2:
        return "kernels/" + parts[1]
    return parts[0]


def check(root):
    problems, files = [], 0
    for top in ("kernels", "inputs", "exact", "reference", "oracles", "reports", "suites"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith(SOURCE_EXT):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                src = folder_of(rel)
                allowed = ALLOWED.get(src)
                files += 1
                with open(path, encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m or allowed is None:
                            continue
                        target = m.group(1)
                        dst = folder_of(target)
                        if "/" not in target:  # a sibling include ("x.h"): same folder
                            continue
                        if dst not in ALLOWED and dst != "suites":
                            continue  # generated or third-party headers
                        if dst not in allowed:
                            problems.append(f"{rel}:{lineno}: {src} includes {target} ({dst} is above it)")
    return problems, files


def self_test():
    with tempfile.TemporaryDirectory() as root:
        def put(rel, text):
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w") as f:
                f.write(text)
        put("kernels/common/a.h", "#pragma once\n")
        put("oracles/b.h", '#include "kernels/common/a.h"\n')
        put("reports/c.h", '#include "oracles/b.h"\n')
        put("inputs/g.h", '#include "kernels/common/a.h"\n')
        put("reports/h.cpp", '#include "inputs/g.h"\n')
        clean, _ = check(root)
        if clean:
            print("self-test: a clean tree was flagged:", clean)
            return 1
        # Planted: a producer includes an oracle, an oracle a producer, reports a suite, the input
        # layer the report (inputs sit below the oracles) and an oracle.
        put("kernels/twin/d.cpp", '#include "oracles/b.h"\n')
        put("oracles/e.cpp", '#include "reference/x.h"\n')
        put("reports/f.cpp", '#include "suites/claims/y.h"\n')
        put("inputs/i.cpp", '#include "reports/c.h"\n')
        put("inputs/j.h", '#include "oracles/b.h"\n')
        planted, _ = check(root)
        want = {"kernels/twin/d.cpp", "oracles/e.cpp", "reports/f.cpp", "inputs/i.cpp", "inputs/j.h"}
        seen = {p.split(":")[0] for p in planted}
        if seen != want:
            print("self-test: planted upward includes", sorted(want), "but the check saw", sorted(seen))
            return 1
        print("self-test: the check sees every planted upward include:")
        for p in planted:
            print("  " + p)
    return 0


def main(argv):
    if len(argv) == 2 and argv[1] == "--self-test":
        return self_test()
    if len(argv) != 2 or argv[1].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    problems, files = check(argv[1])
    for p in problems:
        print(p)
    print(f"check_layers: {files} files, {len(problems)} upward include(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
