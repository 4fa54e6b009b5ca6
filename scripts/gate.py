#!/usr/bin/env python3
"""The gate (issue 32): the smallest set of CPU tests and GPU cases that kills every mutant the full
suites kill, chosen from the kill matrices, and the check that keeps it honest.

  gate.py select --matrix CPU.json [--matrix GPU.json ...] [--out suites/mutation/gate.json]
      From kill matrices written by scripts/mutate.py (CTest tests) and scripts/mutate_gpu.py
      (GoogleTest cases of the GPU suites): every mutant killed in all reps must be killed by some
      gate test in all reps. Greedy weighted set cover (a test's cost: its baseline seconds in that
      matrix; ties to the test that kills more), then every test whose mutants the others kill
      already is dropped, cheapest kept. A flaky kill never counts. Mutants no test kills (survivors,
      flaky, build errors) are listed, not covered. An incomplete matrix is refused.
  gate.py check [--gate suites/mutation/gate.json] [--catalog HOST.json] [--kernel-catalog KERNEL.json]
      The gate against today's catalogs: a catalog mutant the gate neither covers nor lists as
      uncovered (a mutant added since the matrices were measured) is reported, exit 1.
  gate.py list cpu|gpu|racecheck SUITE [--gate ...]
      One line: the CTest regex of the CPU part, the --gtest_filter of the GPU suite SUITE, or
      SUITE's cases to run under compute-sanitizer racecheck, ':' between (scripts/gate.sh runs them).
  gate.py --selftest

Exit: 0 ok; 1 check found a mutant the gate does not know; 2 bad usage or input (nothing written).
"""
import argparse
import contextlib
import io
import json
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import atomic_file  # noqa: E402
import mutate  # noqa: E402  (the catalogs are read, and checked, as the mutation tools read them)
from mutate_gpu import RACECHECK, case_of  # noqa: E402  (a GPU case run under compute-sanitizer racecheck)

DEFAULT_GATE = os.path.join("suites", "mutation", "gate.json")
HOST_CATALOG = os.path.join("suites", "mutation", "catalog.json")
KERNEL_CATALOG = os.path.join("suites", "mutation", "kernel_catalog.json")
MIN_COST = 0.05  # seconds: a test measured at 0 still costs its start
BadInput = mutate.BadInput


def load_json(path, what):
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        raise BadInput("%s %s: %s" % (what, path, e.strerror))
    except ValueError as e:
        raise BadInput("%s %s: not JSON (%s)" % (what, path, e))


def load_matrix(path):
    """A kill matrix as candidates: {(part, suite, test): (cost, set of mutant ids killed every rep)}."""
    doc = load_json(path, "kill matrix")
    if not isinstance(doc, dict) or doc.get("tool") not in ("scripts/mutate.py", "scripts/mutate_gpu.py"):
        raise BadInput("kill matrix %s: not written by scripts/mutate.py or scripts/mutate_gpu.py" % path)
    if doc.get("complete") is not True:
        raise BadInput("kill matrix %s: incomplete (the run stopped before its last mutant)" % path)
    gpu = doc["tool"] == "scripts/mutate_gpu.py"
    base = doc.get("baseline", {}).get("tests", {})
    cands, killable, status = {}, set(), {}
    for m in doc.get("mutants", []):
        if not isinstance(m, dict) or not isinstance(m.get("id"), str) or not isinstance(m.get("tests", {}), dict):
            raise BadInput("kill matrix %s: a mutant row without id or tests" % path)
        # An argued equivalent that lives is listed as such, not as a survivor.
        status[m["id"]] = ("equivalent" if m.get("equivalent") and m.get("status") != "killed"
                           else m.get("status", "?"))
        for t, v in m.get("tests", {}).items():
            if v.get("verdict") != "killed":
                continue
            if t not in base:
                raise BadInput("kill matrix %s: %s killed %s but has no baseline time" % (path, t, m["id"]))
            suite = base[t].get("suite", "ctest") if gpu else "ctest"
            key = ("gpu" if gpu else "cpu", suite, t)
            cost = max(MIN_COST, float(base[t].get("seconds", 0.0)))
            cands.setdefault(key, [cost, set()])[1].add(m["id"])
            killable.add(m["id"])
    if not doc.get("mutants"):
        raise BadInput("kill matrix %s: no mutants" % path)
    return doc, cands, killable, status


def cover(cands, universe):
    """Greedy weighted set cover of universe by cands {key: (cost, set)}, then drop redundant tests
    (the dearest first). Deterministic: ties broken by the key."""
    left, chosen = set(universe), []
    while left:
        key = min((k for k in cands if cands[k][1] & left),
                  key=lambda k: (cands[k][0] / len(cands[k][1] & left), -len(cands[k][1] & left), k))
        chosen.append(key)
        left -= cands[key][1]
    for key in sorted(chosen, key=lambda k: (-cands[k][0], k)):
        rest = set().union(*(cands[k][1] for k in chosen if k != key)) if len(chosen) > 1 else set()
        if universe <= rest:
            chosen.remove(key)
    return sorted(chosen)


def select(args):
    cands, killable, status, sources = {}, set(), {}, []
    for path in args.matrix:
        doc, c, k, s = load_matrix(path)
        dup = set(s) & set(status)
        if dup:
            raise BadInput("kill matrix %s: mutants measured twice: %s" % (path, ", ".join(sorted(dup))))
        for key, (cost, ids) in c.items():
            cands.setdefault(key, [cost, set()])[1].update(ids)
        killable |= k
        status.update(s)
        sources.append({"path": path, "tool": doc["tool"], "revision": doc.get("revision", ""),
                        "device": doc.get("device", ""), "mutants": len(s), "reps": doc.get("reps")})
    chosen = cover(cands, killable)
    parts = {"cpu": {"tests": [], "seconds": 0.0}, "gpu": {"suites": {}, "seconds": 0.0}}
    for part, suite, t in chosen:
        p = parts[part]
        if part == "cpu":
            p["tests"].append(t)
        else:
            p["suites"].setdefault(suite, []).append(t)
        p["seconds"] = round(p["seconds"] + cands[(part, suite, t)][0], 2)
    covers = {i: sorted(t for part, suite, t in chosen if i in cands[(part, suite, t)][1]) for i in sorted(killable)}
    gate = {"made_by": "scripts/gate.py select", "matrices": sources, "cpu": parts["cpu"], "gpu": parts["gpu"],
            "covers": covers, "not_covered": {i: st for i, st in sorted(status.items()) if i not in killable},
            "note": "seconds: the sum of the chosen tests' baseline times in their kill matrix (serial); "
                    "scripts/gate.sh measures the wall time"}

    def work(tmp):
        with open(tmp, "w") as f:
            json.dump(gate, f, indent=1)
            f.write("\n")

    atomic_file.replace_from_temp(args.out, work, prefix=".gate.", replace=True)
    print("gate: %d CPU tests (%.0f s), %d GPU cases in %d suites (%.0f s) kill %d mutants; not covered: %s; %s"
          % (len(parts["cpu"]["tests"]), parts["cpu"]["seconds"], sum(len(v) for v in parts["gpu"]["suites"].values()),
             len(parts["gpu"]["suites"]), parts["gpu"]["seconds"], len(killable),
             ", ".join("%s (%s)" % kv for kv in gate["not_covered"].items()) or "none", args.out))
    return 0


def load_gate(path):
    g = load_json(path, "gate")
    if not isinstance(g, dict) or g.get("made_by") != "scripts/gate.py select":
        raise BadInput("gate %s: not written by scripts/gate.py select" % path)
    return g


def check(args):
    g = load_gate(args.gate)
    known = set(g["covers"]) | set(g["not_covered"])
    ids = [m["id"] for c in args.catalog for m in mutate.load_catalog(os.path.join(args.root, c))]
    ids += [m["id"] for c in args.kernel_catalog for m in mutate.load_catalog(os.path.join(args.root, c), cuda=True)]
    unknown = sorted(set(ids) - known)
    gone = sorted(known - set(ids))
    for i in gone:
        print("gate: %s is in the gate but no longer in a catalog (harmless; reselect)" % i)
    if unknown:
        print("gate: not measured, so the gate cannot claim them: %s; rerun the kill matrices and gate.py select"
              % ", ".join(unknown))
        return 1
    print("gate: every catalog mutant (%d) is covered (%d) or listed as not covered (%d)"
          % (len(ids), len(set(ids) & set(g["covers"])), len(set(ids) & set(g["not_covered"]))))
    return 0


def list_part(args):
    g = load_gate(args.gate)
    if args.part == "cpu":
        tests = g["cpu"]["tests"]
        print("^(" + "|".join(re.escape(t) for t in tests) + ")$" if tests else "")
    else:  # gpu: the --gtest_filter; racecheck: the cases run under compute-sanitizer racecheck
        cases = g["gpu"]["suites"].get(args.suite, [])
        race = [case_of(c) for c in cases if c.startswith(RACECHECK)]
        print(":".join(race if args.part == "racecheck" else [c for c in cases if not c.startswith(RACECHECK)]))
    return 0


def selftest():
    failures = []

    def expect(cond, what):
        if not cond:
            failures.append(what)

    def matrix(tool, base, rows, complete=True):
        return {"tool": tool, "complete": complete, "reps": 3,
                "baseline": {"tests": {t: dict(seconds=s, **({"suite": "bin_a"} if tool.endswith("gpu.py") else {}))
                                       for t, s in base.items()}},
                "mutants": [{"id": i, "status": st, "tests": {t: {"verdict": v} for t, v in ts.items()}}
                            for i, st, ts in rows]}

    cpu = matrix("scripts/mutate.py", {"cheap": 1, "wide": 5, "dear": 100, "flaky": 0.1}, [
        ("m1", "killed", {"cheap": "killed", "wide": "killed", "dear": "killed"}),
        ("m2", "killed", {"wide": "killed", "dear": "killed", "flaky": "flaky"}),
        ("m3", "killed", {"wide": "killed", "dear": "killed"}),
        ("m4", "killed", {"dear": "killed", "flaky": "flaky"}),
        ("m5", "survived", {"cheap": "survived", "flaky": "flaky"}),
        ("m6", "survived", {"cheap": "survived"})])
    cpu["mutants"][-1]["equivalent"] = "no input tells it apart"
    gpu = matrix("scripts/mutate_gpu.py", {"S.case1": 2, "S.case2": 9}, [
        ("k1", "killed", {"S.case1": "killed", "S.case2": "killed"}),
        ("k2", "killed", {"S.case2": "killed"})])
    with tempfile.TemporaryDirectory() as d:
        def write(name, doc):
            p = os.path.join(d, name)
            with open(p, "w") as f:
                json.dump(doc, f)
            return p

        out = os.path.join(d, "gate.json")
        a = argparse.Namespace(matrix=[write("cpu.json", cpu), write("gpu.json", gpu)], out=out)
        select(a)
        g = load_gate(out)
        # wide kills m1..m3 at 5 s; dear is needed for m4 and kills everything, so wide and cheap go.
        expect(g["cpu"]["tests"] == ["dear"], "the redundant cheaper tests were not dropped: %s" % g["cpu"]["tests"])
        expect(g["gpu"]["suites"] == {"bin_a": ["S.case2"]}, "GPU cover wrong: %s" % g["gpu"]["suites"])
        # A racecheck case the cover needs is listed apart from the --gtest_filter.
        race = matrix("scripts/mutate_gpu.py", {"S.case1": 2, "racecheck:S.case1": 30}, [
            ("r1", "killed", {"racecheck:S.case1": "killed"}), ("r2", "killed", {"S.case1": "killed"})])
        select(argparse.Namespace(matrix=[write("race.json", race)], out=out + ".race"))
        listed = {}
        for part in ("gpu", "racecheck"):
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                list_part(argparse.Namespace(gate=out + ".race", part=part, suite="bin_a"))
            listed[part] = buf.getvalue().strip()
        expect(listed == {"gpu": "S.case1", "racecheck": "S.case1"}, "racecheck cases not listed apart: %s" % listed)
        expect(g["not_covered"] == {"m5": "survived", "m6": "equivalent"},
               "survivor or argued equivalent not listed as such: %s" % g["not_covered"])
        cpu2 = matrix("scripts/mutate.py", {"cheap": 1, "wide": 5, "dear": 100}, [
            ("m1", "killed", {"cheap": "killed", "dear": "killed"}),
            ("m2", "killed", {"wide": "killed", "dear": "killed"}),
            ("m3", "killed", {"wide": "killed", "dear": "killed"})])
        select(argparse.Namespace(matrix=[write("cpu2.json", cpu2)], out=out))
        g = load_gate(out)
        expect(g["cpu"]["tests"] == ["cheap", "wide"], "the cheap cover was not chosen: %s" % g["cpu"]["tests"])
        expect(g["covers"]["m2"] == ["wide"], "covers wrong: %s" % g["covers"])
        # Bad input refused, the gate file untouched.
        before = open(out).read()
        for doc, what in ((dict(cpu, complete=False), "incomplete"), ({"tool": "x"}, "foreign"),
                          (matrix("scripts/mutate.py", {}, [("m1", "killed", {"t": "killed"})]), "no baseline time")):
            try:
                select(argparse.Namespace(matrix=[write("bad.json", doc)], out=out))
                failures.append("%s matrix accepted" % what)
            except BadInput:
                pass
        try:
            select(argparse.Namespace(matrix=[write("a.json", cpu), write("b.json", cpu)], out=out))
            failures.append("a mutant measured twice accepted")
        except BadInput:
            pass
        expect(open(out).read() == before, "a refused selection changed the gate file")
        # check: a catalog mutant the gate does not know fails.
        os.makedirs(os.path.join(d, "cat"))
        def catalog(*ids):
            with open(os.path.join(d, "cat", "c.json"), "w") as f:
                json.dump({"mutants": [{"id": i, "layer": "rules", "file": "r.h", "find": "a", "replace": "b", "why": "-",
                                        "tests": []} for i in ids]}, f)
            return argparse.Namespace(gate=out, root=d, catalog=[os.path.join("cat", "c.json")], kernel_catalog=[])
        expect(check(catalog("m1", "m2", "m3", "new")) == 1, "check passed with a mutant the gate never measured")
        expect(check(catalog("m1", "m2")) == 0, "check failed on a catalog the gate covers")
        with open(os.path.join(d, "cat", "c.json"), "w") as f:
            f.write('{"mutants": [{"id": "m1"}]}')
        try:
            check(argparse.Namespace(gate=out, root=d, catalog=[os.path.join("cat", "c.json")], kernel_catalog=[]))
            failures.append("check accepted a catalog entry without its fields")
        except BadInput:
            pass
    for f in failures:
        print("gate selftest: FAIL: " + f)
    print("gate selftest: %s" % ("ok" if not failures else "%d failure(s)" % len(failures)))
    return 1 if failures else 0


def main(argv):
    if argv == ["--selftest"]:
        return selftest()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("select")
    s.add_argument("--matrix", action="append", required=True)
    s.add_argument("--out", default=os.path.join(ROOT, DEFAULT_GATE))
    c = sub.add_parser("check")
    c.add_argument("--gate", default=os.path.join(ROOT, DEFAULT_GATE))
    c.add_argument("--root", default=ROOT)
    c.add_argument("--catalog", action="append", default=None, help="a host catalog (default: %s)" % HOST_CATALOG)
    c.add_argument("--kernel-catalog", action="append", default=None,
                   help="a kernel catalog (default: %s)" % KERNEL_CATALOG)
    lp = sub.add_parser("list")
    lp.add_argument("part", choices=("cpu", "gpu", "racecheck"))
    lp.add_argument("suite", nargs="?", default="")
    lp.add_argument("--gate", default=os.path.join(ROOT, DEFAULT_GATE))
    args = ap.parse_args(argv)
    try:
        if args.cmd == "select":
            return select(args)
        if args.cmd == "check":
            if args.catalog is None and args.kernel_catalog is None:
                args.catalog, args.kernel_catalog = [HOST_CATALOG], [KERNEL_CATALOG]
            args.catalog, args.kernel_catalog = args.catalog or [], args.kernel_catalog or []
            return check(args)
        if args.part in ("gpu", "racecheck") and not args.suite:
            raise BadInput("list %s needs the suite (a GPU test binary's name)" % args.part)
        return list_part(args)
    except BadInput as e:
        print("gate: %s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
