#!/usr/bin/env python3
"""Mutation testing of the GPU kernels (issue 32, GPU slice): do the GPU suites kill kernel bugs?

The kernel catalog (suites/mutation/kernel_catalog.json, the fields of catalog.json) holds exact
edits of CUDA code. Two steps, because this machine builds and the GPU runner runs:

  build (here)      a scratch copy of the tree per worker (SCRATCH/tree<w>), configured for sm_90a
                    with the rule families --family names (CMake FH_GPU_RULE_FAMILY; default adamw:
                    a header mutant recompiles one nvcc translation unit, not eight; "adamw;sgd"
                    adds the cases that need SGD, the SR statistics); builds the GPU suites
                    TARGETS unmutated (OUT/bin/baseline) and once per mutant (OUT/bin/<id>), the edit
                    reverted after each; OUT/plan.json lists what was built and what did not compile.
  run (the runner)  --bins OUT: the baseline suites must pass, except cases that need a rule family
                    the build left out (listed, not run); then per mutant every case of
                    test_gpu_fused and the cases its catalog entry names, --reps times (reps 2..
                    rerun only the cases that killed in rep 1, or every case when none did); each
                    case a row of the kill matrix: killed (failed or crashed in every rep),
                    survived, flaky, skipped. Writes --out/kill_matrix.json in mutate.py's format
                    (layer "kernel").
  merge (here)      BASE.json PART.json --out DIR: a run of some mutants (--only, say with
                    --racecheck, or after a check was strengthened) with the same catalog and rule
                    families replaces those mutants' rows of a complete matrix; each replaced row
                    records the run it came from (measured_in: device, revision); the summary is
                    recomputed.

Exit status: 0 every non-equivalent mutant killed in all reps (run) or built (build); 1 one
survived, was flaky or did not build; 2 bad usage or input (bad catalog, a snippet not found
exactly once, the baseline failing), nothing measured; 3 an internal error.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import mutate  # noqa: E402  (the catalog, scratch-tree, build and verdict pieces are mutate.py's)
from mutate import BadInput, log  # noqa: E402

DEFAULT_CATALOG = os.path.join("suites", "mutation", "kernel_catalog.json")
DEFAULT_SCRATCH = "/tmp/fh-mutate-gpu"
# The suites a kernel mutant's build holds; every case of the first runs for every mutant, the others'
# cases where the catalog names them.
TARGETS = ("test_gpu_fused", "test_gpu_divsqrt", "test_gpu_fidelity", "test_gpu_prop2")
NOT_BUILT = "is not in this build"  # rule_family_built.h's refusal: the case needs a family left out

GTEST_RUN = re.compile(r"^\[ RUN      \] (\S+)")
GTEST_END = re.compile(r"^\[ +(OK|FAILED|SKIPPED) +\] (\S+?\.\S+?) \((\d+) ms\)")


def drop_objects(build, path):
    """Deletes every object built from path (ninja's deps log), host and CUDA: the next build
    recompiles them (from ccache when the source is as before)."""
    host, cuda = mutate.objects_depending_on(build, path)
    for o in host + cuda:
        op = os.path.join(build, o)
        if os.path.exists(op):
            os.unlink(op)
    return host + cuda


def keep_binaries(build, dest):
    os.makedirs(dest, exist_ok=True)
    for t in TARGETS:
        out = os.path.join(dest, t)
        shutil.copy2(os.path.join(build, t), out)
        subprocess.run(["strip", "--strip-unneeded", out], check=False)


QUEUE_LOCK = threading.Lock()


def build_worker(w, tree, build, env, files, queue, results, out_dir):
    journal = tree + ".journal"
    while True:
        with QUEUE_LOCK:
            if not queue:
                return
            m = queue.pop(0)
        rel = m["file"]
        p = os.path.join(tree, rel)
        text = files[rel].decode("utf-8")
        mutate.check_snippet(m, text, p)
        mtime_ns = os.stat(p).st_mtime_ns
        r = {"id": m["id"], "layer": m["layer"], "file": rel, "why": m["why"], "expected_tests": m["tests"],
             "edit": mutate.edit_key(m)}
        if m.get("equivalent"):
            r["equivalent"] = m["equivalent"]
        with open(journal, "w") as f:
            json.dump({"file": rel}, f)
        try:
            with open(p, "wb") as f:
                f.write(text.replace(m["find"], m["replace"], 1).encode("utf-8"))
            drop_objects(build, p)
            ok, secs, out = mutate.ninja_build(build, TARGETS, env, 1)
            r["build"] = {"ok": ok, "seconds": round(secs, 1), "worker": w}
            if ok:
                keep_binaries(build, os.path.join(out_dir, "bin", m["id"]))
            else:
                r["build"]["error"] = mutate.build_error_excerpt(out)
            log("built %s: %s (%.0f s, worker %d)" % (m["id"], "ok" if ok else "BUILD ERROR", secs, w))
        finally:
            with open(p, "wb") as f:
                f.write(files[rel])
            os.utime(p, ns=(mtime_ns, mtime_ns))
            drop_objects(build, p)
            os.unlink(journal)
        results.append(r)


def cmd_build(args):
    root = os.path.abspath(args.root)
    mutants = mutate.select(load_kernel_catalog(os.path.join(root, args.catalog)), args.only, None)
    files = mutate.source_files(root, [])
    for m in mutants:
        mutate.check_snippet(m, files[m["file"]].decode("utf-8"), m["file"])
    out_dir = os.path.abspath(args.out)
    if os.path.exists(os.path.join(out_dir, "bin")):
        shutil.rmtree(os.path.join(out_dir, "bin"))
    os.makedirs(out_dir, exist_ok=True)
    scratch = os.path.abspath(args.scratch)
    workers = max(1, min(args.jobs, len(mutants)))
    trees = []
    for w in range(workers):
        tree = os.path.join(scratch, "tree%d" % w)
        build = os.path.join(tree, "build")
        env = mutate.build_env(tree)
        journal = tree + ".journal"
        if os.path.exists(journal):  # a run stopped with a mutant applied: its objects are the mutant's
            with open(journal) as f:
                rel = json.load(f)["file"]
            if os.path.isdir(build):
                drop_objects(build, os.path.join(tree, rel))
            os.unlink(journal)
        mutate.sync_tree(files, tree, os.path.join(scratch, "manifest%d.json" % w))
        mutate.configure(tree, build, env, ["-DFH_DEVICE_SASS=ON", "-DFH_GPU_RULE_FAMILY=" + args.family])
        trees.append((tree, build, env))
    t0 = time.time()
    # The baseline in tree 0 with every job, then the other trees (ccache fills them).
    for w, (tree, build, env) in enumerate(trees):
        ok, secs, out = mutate.ninja_build(build, TARGETS, env, args.jobs)
        if not ok:
            raise BadInput("the unmutated scratch tree %s does not build:\n%s" % (tree, mutate.build_error_excerpt(out)))
        log("baseline build, tree %d: %.0f s" % (w, secs))
    keep_binaries(trees[0][1], os.path.join(out_dir, "bin", "baseline"))
    queue, results = list(mutants), []
    threads = [threading.Thread(target=build_worker, args=(w, t, b, e, files, queue, results, out_dir))
               for w, (t, b, e) in enumerate(trees)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    order = {m["id"]: i for i, m in enumerate(mutants)}
    results.sort(key=lambda r: order[r["id"]])
    if len(results) != len(mutants):
        raise RuntimeError("a build worker stopped early (%d of %d mutants built)" % (len(results), len(mutants)))
    rev = subprocess.run(["git", "-C", root, "describe", "--always", "--dirty"], capture_output=True, text=True).stdout.strip()
    plan = {"tool": "scripts/mutate_gpu.py", "catalog": args.catalog, "revision": rev, "family": args.family,
            "targets": list(TARGETS), "build_seconds": round(time.time() - t0, 1), "mutants": results}
    write_plan(out_dir, plan)
    broken = [r["id"] for r in results if not r["build"]["ok"]]
    log("built %d of %d mutants into %s%s" % (len(results) - len(broken), len(results), out_dir,
                                            "; did not build: " + ", ".join(broken) if broken else ""))
    return 1 if broken else 0


def list_cases(binary):
    """The GoogleTest cases of a suite binary (--gtest_list_tests: no GPU needed)."""
    r = subprocess.run([binary, "--gtest_list_tests"], capture_output=True, text=True, timeout=120)
    cases, suite = [], None
    for line in r.stdout.splitlines():
        if not line.strip() or line.startswith(("seed", "Running main")):
            continue
        if not line.startswith(" "):
            suite = line.split("#")[0].strip()
        elif suite:
            cases.append(suite + line.split("#")[0].strip())
    if r.returncode != 0 or not cases:
        raise BadInput("%s --gtest_list_tests: exit %d, %d cases" % (binary, r.returncode, len(cases)))
    return cases


# A case run under compute-sanitizer's race detector: a barrier left out may change no value on the
# shapes the suites run (the warps happen to finish in order), but racecheck reports the hazard.
RACECHECK = "racecheck:"
RACE_EXIT = 97


def case_of(test):
    """The GoogleTest case a matrix test runs: racecheck:CASE runs CASE."""
    return test[len(RACECHECK):] if test.startswith(RACECHECK) else test


def write_plan(out_dir, plan):
    """plan.json, and each mutant's binaries pruned to the suites it runs: the first target always,
    the others where its catalog entry names one of their cases (what travels to the runner)."""
    where = {}
    for t in plan["targets"]:
        for c in list_cases(os.path.join(out_dir, "bin", "baseline", t)):
            where[c] = t
    plan["suite_of_case"] = where
    for m in plan["mutants"]:
        cases = [case_of(c) for c in m["expected_tests"]]
        m["targets"] = [plan["targets"][0]] + sorted({where[c] for c in cases if c in where} - {plan["targets"][0]})
        unknown = [c for c in cases if c not in where]
        if unknown:
            log("mutant %s: its catalog entry names no case of the suites: %s" % (m["id"], ", ".join(unknown)))
        d = os.path.join(out_dir, "bin", m["id"])
        if os.path.isdir(d):
            for t in plan["targets"]:
                if t not in m["targets"] and os.path.exists(os.path.join(d, t)):
                    os.unlink(os.path.join(d, t))
    with open(os.path.join(out_dir, "plan.json"), "w") as f:
        json.dump(plan, f, indent=1)
        f.write("\n")


def load_kernel_catalog(path):
    return mutate.load_catalog(path, cuda=True)


def gtest_cases(output, timed_out, rc):
    """{case: result} from one GoogleTest run's output: OK -> pass, FAILED -> fail with the first
    failure's message, SKIPPED -> skip; a case that started and never ended (a crash, a trap, the
    timeout) -> fail with what ended the run."""
    cases, current, block = {}, None, []
    for line in output.splitlines():
        m = GTEST_RUN.match(line)
        if m:
            current, block = m.group(1), []
            continue
        m = GTEST_END.match(line)
        if m and m.group(2) == current:
            kind, secs = m.group(1), int(m.group(3)) / 1000.0
            if kind == "OK":
                cases[current] = {"result": "pass", "message": "", "seconds": secs}
            elif kind == "SKIPPED":
                cases[current] = {"result": "skip", "message": "skipped", "seconds": secs}
            else:
                msg = mutate.first_failure("\n".join(block + [line]))
                thrown = next((l.strip() for l in block if l.startswith("C++ exception")), "")
                if thrown and thrown not in msg:  # "unknown file: Failure" has no line number to match
                    msg = (thrown + " | " + msg)[:600]
                cases[current] = {"result": "fail", "message": msg, "seconds": secs,
                                  "units": mutate.failed_units("\n".join(block))}
            current = None
            continue
        if current:
            block.append(line)
    if current:
        why = "timed out" if timed_out else ("killed by signal %d" % -rc if rc < 0 else "exit %d" % rc)
        tail = " | ".join(l.strip() for l in block if l.strip())[-400:]
        cases[current] = {"result": "fail", "message": "%s during the case: %s" % (why, tail), "seconds": 0.0}
    return cases


def run_command(cmd, timeout, env=None):
    """(output, exit status, timed out, seconds) of cmd, its process group killed at the timeout."""
    start = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, env=env)
    timed_out = False
    try:
        raw, _ = proc.communicate(timeout=max(timeout, 60))
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(proc.pid, 9)
        raw, _ = proc.communicate()
    return raw.decode("utf-8", "replace"), proc.returncode, timed_out, time.time() - start


def run_binary(binary, gfilter, timeout):
    out, rc, timed_out, secs = run_command([binary, "--gtest_filter=" + gfilter] if gfilter else [binary], timeout)
    return gtest_cases(out, timed_out, rc), rc, out, secs


def run_racecheck(binary, case, timeout):
    """One case under `compute-sanitizer --tool racecheck` (FH_COMPUTE_SANITIZER names another):
    pass when the case passes and no hazard is reported; fail with the first hazard line, or the
    case's own failure. FH_SMOKE_NO_CUBLAS=1: the sanitizer smoke leaves cuBLAS's kernels out (not
    ours to judge; scripts/gate.sh runs racecheck cases the same way)."""
    sanitizer = os.environ.get("FH_COMPUTE_SANITIZER", "compute-sanitizer")
    out, rc, timed_out, secs = run_command([sanitizer, "--tool", "racecheck", "--racecheck-report", "hazard",
                                            "--error-exitcode", str(RACE_EXIT), binary, "--gtest_filter=" + case], timeout,
                                           env=dict(os.environ, FH_SMOKE_NO_CUBLAS="1"))
    got = gtest_cases(out, timed_out, rc).get(case)
    if got is None:
        return {"result": "fail", "message": "racecheck: the case did not run (exit %d): %s" % (rc, out.strip()[-300:]),
                "seconds": secs}
    if got["result"] != "pass":
        return dict(got, seconds=secs)
    if rc == RACE_EXIT or timed_out:
        hazard = next((l.strip() for l in out.splitlines() if "Race reported" in l or "hazard" in l.lower()), "")
        return {"result": "fail", "message": ("racecheck: timed out" if timed_out else "racecheck: " + hazard)[:600],
                "seconds": secs}
    return {"result": "pass", "message": "", "seconds": secs}


def run_cases(bins, mutant, cases, where, timeout):
    """Runs the named cases from the mutant's binaries (one run a suite; a racecheck case alone under
    the sanitizer); {case: result}, every named case present (a case the run never reached: skip,
    "not run")."""
    out = {}
    for c in sorted(c for c in cases if c.startswith(RACECHECK)):
        out[c] = run_racecheck(os.path.join(bins, "bin", mutant, where[c]), case_of(c), 4 * timeout[where[c]])
    for target in sorted({where[c] for c in cases if not c.startswith(RACECHECK)}):
        mine = sorted(c for c in cases if where[c] == target and not c.startswith(RACECHECK))
        got, _, _, _ = run_binary(os.path.join(bins, "bin", mutant, target), ":".join(mine), timeout[target])
        for c in mine:
            out[c] = got.get(c, {"result": "skip", "message": "not run (an earlier case ended the run)", "seconds": 0.0})
    return out


def cmd_run(args):
    bins = os.path.abspath(args.bins)
    try:
        with open(os.path.join(bins, "plan.json")) as f:
            plan = json.load(f)
    except (OSError, ValueError) as e:
        raise BadInput("%s/plan.json: not readable (%s)" % (bins, e))
    if args.reps < 1 or args.parallel < 1:
        raise BadInput("--reps and --parallel must be at least 1")
    out_dir = os.path.abspath(args.out)
    os.makedirs(out_dir, exist_ok=True)
    targets = plan["targets"]
    if args.only:
        wanted = [x for x in args.only.split(",") if x]
        unknown = sorted(set(wanted) - {m["id"] for m in plan["mutants"]})
        if unknown:
            raise BadInput("--only: not in %s/plan.json: %s" % (bins, ", ".join(unknown)))
        plan["mutants"] = [m for m in plan["mutants"] if m["id"] in wanted]
    # --cases: the cases every mutant runs (default: every case of the first suite); the baseline then
    # runs those and the cases the mutants' entries name, suite by suite (plan.json's suite_of_case).
    chosen = [c for c in (args.cases or "").split(",") if c]
    race_cases = [c for c in (args.racecheck or "").split(",") if c]
    suite_of = plan.get("suite_of_case", {})
    unknown = sorted(c for c in race_cases if c not in suite_of)
    if unknown:
        raise BadInput("--racecheck: not cases of the suites (plan.json's suite_of_case): %s" % ", ".join(unknown))
    if chosen:
        unknown = sorted(c for c in chosen if suite_of.get(c) != targets[0])
        if unknown:
            raise BadInput("--cases: not cases of %s (plan.json's suite_of_case): %s" % (targets[0], ", ".join(unknown)))
        needed = set(chosen) | {case_of(c) for m in plan["mutants"] for c in m["expected_tests"] if case_of(c) in suite_of}
        needed |= set(race_cases)
        targets = [t for t in targets if any(suite_of[c] == t for c in needed)]
    # The baseline. A case that fails because its rule family is not in this build is left out
    # (listed); any other failure stops the run (exit 2, nothing measured).
    where, base, not_built, timeout = {}, {}, [], {}
    logs = []
    for target in targets:
        gfilter = ":".join(sorted(c for c in needed if suite_of[c] == target)) if chosen else None
        got, rc, out, secs = run_binary(os.path.join(bins, "bin", "baseline", target), gfilter, args.timeout)
        logs.append("=== %s (exit %d, %.0f s)\n%s" % (target, rc, secs, out))
        timeout[target] = int(3 * secs + 60)
        if not got:
            raise BadInput("baseline %s: exit %d and no GoogleTest case ran" % (target, rc))
        for c, res in got.items():
            where[c] = target
            if res["result"] == "fail" and NOT_BUILT in res["message"]:
                not_built.append(c)
            else:
                base[c] = res
        log("baseline %s: %d cases in %.0f s" % (target, len(got), secs))
    # The racecheck cases the mutants' entries name (or --racecheck adds): clean on the baseline.
    races = sorted({c for m in plan["mutants"] for c in m["expected_tests"] if c.startswith(RACECHECK)} |
                   {RACECHECK + c for c in race_cases})
    for c in races:
        case = case_of(c)
        if case not in where:
            raise BadInput("racecheck %s: not a case the baseline ran" % case)
        where[c] = where[case]
        base[c] = run_racecheck(os.path.join(bins, "bin", "baseline", where[c]), case, 4 * timeout[where[c]])
        logs.append("=== %s: %s %s" % (c, base[c]["result"], base[c]["message"]))
        log("baseline %s: %s in %.0f s" % (c, base[c]["result"], base[c]["seconds"]))
    with open(os.path.join(out_dir, "baseline.log"), "w") as f:
        f.write("\n".join(logs))
    failing = sorted(c for c, r in base.items() if r["result"] == "fail")
    if failing:
        raise BadInput("baseline: failing cases: %s (baseline.log)" % ", ".join(failing))
    passing = sorted(c for c, r in base.items() if r["result"] == "pass")
    skipped = sorted(c for c, r in base.items() if r["result"] == "skip")
    always = [c for c in passing if where[c] == targets[0] and (not chosen or c in chosen) and not c.startswith(RACECHECK)]
    always += [RACECHECK + c for c in race_cases]
    log("baseline: %d cases pass; skipped: %s; left out (family not built): %s"
        % (len(passing), ", ".join(skipped) or "-", ", ".join(not_built) or "-"))
    doc = {"tool": "scripts/mutate_gpu.py", "complete": False, "catalog": plan["catalog"], "revision": plan["revision"],
           "family": plan["family"], "reps": args.reps, "tests": always, "tests_skipped_in_baseline": skipped,
           "tests_not_in_this_build": sorted(not_built),
           "baseline": {"tests": {c: {"result": r["result"], "seconds": r["seconds"], "suite": where[c]}
                                  for c, r in base.items()}},
           "device": args.device or "", "mutants": [], "summary": {}}
    t0 = time.time()
    ids = [m["id"] for m in plan["mutants"]]
    done, lock = {}, threading.Lock()

    def measure(planned):
        r = {k: planned[k] for k in ("id", "layer", "file", "why", "expected_tests", "edit", "build")}
        if planned.get("equivalent"):
            r["equivalent"] = planned["equivalent"]
        if not planned["build"]["ok"]:
            r.update({"status": "build_error", "tests": {}, "killed_by": [], "test_seconds": 0.0})
            return r
        hinted = [c for c in planned["expected_tests"] if c in base and base[c]["result"] == "pass"]
        cases = sorted(set(always) | set(hinted))
        r["hinted_not_run"] = sorted(set(planned["expected_tests"]) - set(hinted))
        t = time.time()
        runs = [run_cases(bins, r["id"], cases, where, timeout)]
        killers = [c for c in cases if runs[0][c]["result"] == "fail"]
        for _ in range(args.reps - 1):
            runs.append(run_cases(bins, r["id"], killers or cases, where, timeout))
        r["test_seconds"] = round(time.time() - t, 1)
        mutate.record_verdicts(r, runs, planned["expected_tests"])
        return r

    def finished(r):
        # The matrix after every mutant, in catalog order (a run stopped by the call's time limit
        # leaves what it measured, "complete": false).
        with lock:
            done[r["id"]] = r
            log("[%d/%d] %s: %s (%.0f s)%s" % (len(done), len(ids), r["id"], r["status"], r.get("test_seconds", 0.0),
                                              ": killed by " + ", ".join(r["killed_by"]) if r["killed_by"] else ""))
            doc["mutants"] = [done[i] for i in ids if i in done]
            doc["summary"] = mutate.summarize(doc["mutants"], ids)
            doc["elapsed_seconds"] = round(time.time() - t0, 1)
            mutate.write_matrix(out_dir, doc)

    # Mutants side by side (--parallel): each process gets the GPU in time slices and the host
    # side of the suites (the twin, the data) runs on the runner's other cores.
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.parallel) as pool:
        for f in concurrent.futures.as_completed([pool.submit(measure, m) for m in plan["mutants"]]):
            finished(f.result())
    results = [done[i] for i in ids]
    doc["mutants"] = results
    doc["summary"] = mutate.summarize(results, ids)
    doc["complete"] = True
    path = mutate.write_matrix(out_dir, doc)
    s = doc["summary"]
    mutate.print_summary(s, results)
    print("kill matrix: %s" % path)
    return 1 if s["survivors"] + s["flaky"] + s["build_errors"] else 0


def cmd_merge(args):
    """BASE with PART's mutants in place of its own rows: the same catalog and rule families; the part
    may come from a later revision (a check strengthened since), which its rows record (measured_in)."""
    doc = mutate.merge_matrices(args.base, args.part, args.out, "scripts/mutate_gpu.py", ("catalog", "family"),
                                load_kernel_catalog(os.path.join(os.path.abspath(args.root), args.catalog)))
    s = doc["summary"]
    return 1 if s["survivors"] + s["flaky"] + s["build_errors"] else 0


def selftest():
    """The GoogleTest parsing and the verdicts on made-up runs (no GPU, no build): a pass, a
    failure with its message, a crash inside a case, a timeout, a skip."""
    out = "\n".join([
        "[ RUN      ] A.passes", "[       OK ] A.passes (12 ms)",
        "[ RUN      ] A.fails", "x.cu:10: Failure", "Expected equality of these values:", "  d.differing",
        "    Which is: 3", "FH_FAILED_UNIT: adamw int8", "[  FAILED  ] A.fails (40 ms)",
        "[ RUN      ] A.skips", "[  SKIPPED ] A.skips (0 ms)",
        "[ RUN      ] A.needs_lion", "unknown file: Failure",
        "C++ exception with description \"fused_wgrad_update: rule lion %s (CMake ...)\" thrown in the test body." % NOT_BUILT,
        "[  FAILED  ] A.needs_lion (3 ms)",
        "[ RUN      ] A.crashes", "CUDA error: an illegal memory access was encountered"])
    got = gtest_cases(out, False, -6)
    problems = []
    want = {"A.passes": "pass", "A.fails": "fail", "A.skips": "skip", "A.crashes": "fail", "A.needs_lion": "fail"}
    for n, res in want.items():
        if got.get(n, {}).get("result") != res:
            problems.append("%s: %s, want %s" % (n, got.get(n, {}).get("result"), res))
    if "Which is: 3" not in got.get("A.fails", {}).get("message", ""):
        problems.append("A.fails: the failure's message is lost: %r" % got.get("A.fails"))
    if got.get("A.fails", {}).get("units") != ["adamw int8"]:
        problems.append("A.fails: units %r, want ['adamw int8']" % got.get("A.fails", {}).get("units"))
    if "signal 6" not in got.get("A.crashes", {}).get("message", "") or "illegal" not in got["A.crashes"]["message"]:
        problems.append("A.crashes: %r does not say how the run ended" % got.get("A.crashes"))
    if NOT_BUILT not in got.get("A.needs_lion", {}).get("message", ""):
        problems.append("A.needs_lion: a family left out of the build is not recognisable: %r" % got.get("A.needs_lion"))
    timed = gtest_cases("[ RUN      ] B.hangs\nspinning", True, -9)
    if timed.get("B.hangs", {}).get("result") != "fail" or "timed out" not in timed["B.hangs"]["message"]:
        problems.append("B.hangs: a timeout is not a kill: %r" % timed.get("B.hangs"))
    v = mutate.verdicts([{"A.fails": got["A.fails"], "A.passes": got["A.passes"]},
                         {"A.fails": got["A.fails"], "A.passes": got["A.fails"]}])
    if v["A.fails"]["verdict"] != "killed" or v["A.passes"]["verdict"] != "flaky":
        problems.append("verdicts %r" % {n: x["verdict"] for n, x in v.items()})
    problems += selftest_run()
    for p in problems:
        log("selftest: " + p)
    print("mutate_gpu selftest: %s" % ("FAILED (%d problems)" % len(problems) if problems else "ok"))
    return 1 if problems else 0


FAKE_SUITE = """#!/bin/sh
# A made-up GoogleTest binary: case A.first passes unless KILL_FIRST, A.second passes, A.lion needs a
# family the build left out; --gtest_filter=X:Y runs only those.
f=""; for a in "$@"; do case "$a" in --gtest_filter=*) f="${a#--gtest_filter=}";; esac; done
want() { [ -z "$f" ] || case ":$f:" in *":$1:"*) return 0;; *) return 1;; esac; }
want A.first && { echo "[ RUN      ] A.first"; if [ -n "%(kill)s" ]; then echo "t.cu:3: Failure"; echo "  3 differ"; echo "[  FAILED  ] A.first (5 ms)"; else echo "[       OK ] A.first (5 ms)"; fi; }
want A.second && { echo "[ RUN      ] A.second"; echo "[       OK ] A.second (1 ms)"; }
want A.lion && { echo "[ RUN      ] A.lion"; echo "unknown file: Failure"; echo "C++ exception with description \"rule lion %(nb)s\" thrown in the test body."; echo "[  FAILED  ] A.lion (1 ms)"; }
exit 0
"""


FAKE_SANITIZER = """#!/bin/sh
# A made-up compute-sanitizer: runs the binary after its options; a binary of mutant m_race has a race.
while [ $# -gt 0 ]; do case "$1" in --tool|--racecheck-report|--error-exitcode) shift 2;; *) break;; esac; done
"$@"; rc=$?
case "$1" in *m_race*) echo "========= Error: Race reported between Write access at 0x10 in k and Read access"; exit 97;; esac
exit $rc
"""


def selftest_run():
    """cmd_run end to end on made-up suites: the baseline leaves out the case a missing family
    fails, a mutant whose case fails is killed (all reps), one that changes nothing survives."""
    import tempfile
    problems = []
    with tempfile.TemporaryDirectory() as d:
        bins = os.path.join(d, "bins")
        mutants = []
        sanitizer = os.path.join(d, "fake-sanitizer")
        with open(sanitizer, "w") as f:
            f.write(FAKE_SANITIZER)
        os.chmod(sanitizer, 0o755)
        os.environ["FH_COMPUTE_SANITIZER"] = sanitizer
        catalog = []
        for mid, kill in (("baseline", ""), ("m_killed", "1"), ("m_survives", ""), ("m_race", "")):
            os.makedirs(os.path.join(bins, "bin", mid))
            path = os.path.join(bins, "bin", mid, "test_fake")
            with open(path, "w") as f:
                f.write(FAKE_SUITE % {"kill": kill, "nb": NOT_BUILT})
            os.chmod(path, 0o755)
            if mid != "baseline":
                entry = {"id": mid, "layer": "kernel", "file": "kernels/gpu/x.cuh", "find": "a", "replace": mid,
                         "why": "-", "tests": ["racecheck:A.second"] if mid == "m_race" else []}
                catalog.append(entry)
                mutants.append({"id": mid, "layer": "kernel", "file": "kernels/gpu/x.cuh", "why": "-",
                                "edit": mutate.edit_key(entry), "expected_tests": entry["tests"], "build": {"ok": True}})
        with open(os.path.join(bins, "plan.json"), "w") as f:
            json.dump({"catalog": "-", "revision": "-", "family": "adamw", "targets": ["test_fake"],
                       "mutants": mutants}, f)
        out = os.path.join(d, "out")
        args = argparse.Namespace(bins=bins, out=out, reps=3, parallel=2, timeout=60, device="none", only=None, cases=None,
                                  racecheck=None)
        rc = cmd_run(args)
        with open(os.path.join(out, "kill_matrix.json")) as f:
            km = json.load(f)
        status = {m["id"]: m["status"] for m in km["mutants"]}
        if rc != 1 or status != {"m_killed": "killed", "m_survives": "survived", "m_race": "killed"}:
            problems.append("run: exit %d, statuses %r (want 1, m_killed and m_race killed, m_survives survived)"
                            % (rc, status))
        race = next((m for m in km["mutants"] if m["id"] == "m_race"), {})
        if race.get("killed_by") != ["racecheck:A.second"] or "Race reported" not in race["tests"]["racecheck:A.second"]["message"]:
            problems.append("run: m_race %r" % {k: race.get(k) for k in ("killed_by", "tests")})
        if km.get("tests_not_in_this_build") != ["A.lion"] or not km.get("complete"):
            problems.append("run: not-built cases %r, complete %r" % (km.get("tests_not_in_this_build"), km.get("complete")))
        killed = next((m for m in km["mutants"] if m["id"] == "m_killed"), {})
        if killed.get("killed_by") != ["A.first"] or killed.get("tests", {}).get("A.first", {}).get("kills") != 3:
            problems.append("run: m_killed %r" % {k: killed.get(k) for k in ("killed_by", "tests")})
        # merge: a later --only run replaces its mutants' rows (here m_race, shown surviving in a base
        # that lacked its racecheck case); another build's matrix or an unknown mutant is refused; a
        # mutant the catalog has since argued equivalent (m_survives) takes the argument.
        catalog[1]["equivalent"] = "argued since the run"
        with open(os.path.join(d, "kcat.json"), "w") as f:
            json.dump({"mutants": catalog}, f)
        part_dir, merged_dir = os.path.join(d, "part"), os.path.join(d, "merged")
        cmd_run(argparse.Namespace(**{**vars(args), "out": part_dir, "only": "m_race"}))
        km["mutants"] = [dict(m, status="survived", killed_by=[]) if m["id"] == "m_race" else m for m in km["mutants"]]
        km["baseline"]["tests"].pop("racecheck:A.second")
        base_path = os.path.join(d, "base.json")
        with open(base_path, "w") as f:
            json.dump(km, f)
        part_path = os.path.join(part_dir, "kill_matrix.json")
        margs = argparse.Namespace(base=base_path, part=part_path, out=merged_dir, root=d, catalog="kcat.json")
        rc = cmd_merge(margs)
        with open(os.path.join(merged_dir, "kill_matrix.json")) as f:
            mm = json.load(f)
        row = next(m for m in mm["mutants"] if m["id"] == "m_race")
        if "racecheck:A.second" not in mm["baseline"]["tests"]:
            problems.append("merge: the part's racecheck case has no baseline time in the merged matrix")
        if rc != 0 or row["status"] != "killed" or "measured_in" not in row or mm["summary"]["survivors"]:
            problems.append("merge: exit %d, m_race %s, survivors %r (m_survives argued equivalent)"
                            % (rc, row["status"], mm["summary"]["survivors"]))
        with open(part_path) as f:
            other = json.load(f)
        for change, want in ((dict(family="adamw;sgd"), "family"), (dict(mutants=[dict(row, id="nosuch")]), "nosuch"),
                             (dict(complete=False), "complete"), (dict(mutants=[1]), "mutants")):
            with open(os.path.join(d, "bad_part.json"), "w") as f:
                json.dump({**other, **change}, f)
            try:
                cmd_merge(argparse.Namespace(**{**vars(margs), "part": os.path.join(d, "bad_part.json")}))
                problems.append("merge %r: accepted" % sorted(change))
            except BadInput as e:
                if want not in str(e):
                    problems.append("merge %r: refused without naming %s: %s" % (sorted(change), want, e))
        # Bad input is refused before anything runs (exit 2 in main): each names what is wrong.
        for bad, want in ((dict(reps=0), "--reps"), (dict(parallel=0), "--parallel"),
                          (dict(only="m_killed,nosuch"), "nosuch"), (dict(cases="A.nosuch"), "A.nosuch"),
                          (dict(racecheck="A.norace"), "A.norace"),
                          (dict(bins=os.path.join(d, "nobins")), "plan.json")):
            a = argparse.Namespace(**{**vars(args), "out": os.path.join(d, "bad"), **bad})
            try:
                cmd_run(a)
                problems.append("run %r: accepted" % bad)
            except BadInput as e:
                if want not in str(e):
                    problems.append("run %r: refused without naming %s: %s" % (bad, want, e))
            if os.path.exists(os.path.join(d, "bad", "kill_matrix.json")):
                problems.append("run %r: wrote a kill matrix" % bad)
    os.environ.pop("FH_COMPUTE_SANITIZER", None)
    return problems


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--catalog", default=DEFAULT_CATALOG, help="the kernel catalog (default: %(default)s)")
    ap.add_argument("--root", default=os.path.dirname(HERE), help=argparse.SUPPRESS)
    ap.add_argument("--check-catalog", action="store_true",
                    help="check the catalog (fields, CUDA files, each snippet found exactly once) and exit")
    ap.add_argument("--selftest", action="store_true", help="check the output parsing and verdicts on made-up runs")
    sub = ap.add_subparsers(dest="cmd")
    b = sub.add_parser("build", help="build the baseline and every mutant's GPU suites (here)")
    b.add_argument("--out", required=True, help="folder for bin/ and plan.json (what the runner gets)")
    b.add_argument("--only", help="mutant ids, comma separated")
    b.add_argument("--family", default="adamw", help="the rule families built, ';' between (default: %(default)s)")
    b.add_argument("--scratch", default=DEFAULT_SCRATCH, help="persistent scratch trees (default: %(default)s)")
    b.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="build workers (default: the cores)")
    r = sub.add_parser("run", help="run the built mutants (on the GPU runner)")
    r.add_argument("--bins", required=True, help="the folder build wrote")
    r.add_argument("--out", required=True, help="folder for kill_matrix.json")
    r.add_argument("--reps", type=int, default=3, help="runs per mutant (default 3)")
    r.add_argument("--parallel", type=int, default=1, help="mutants run side by side on the GPU (default 1)")
    r.add_argument("--only", help="mutant ids, comma separated (a run split over calls)")
    r.add_argument("--cases", help="the first suite's cases every mutant runs, comma separated (default: all)")
    r.add_argument("--timeout", type=int, default=600, help="each baseline suite's time limit in seconds")
    r.add_argument("--device", help="the GPU's name, recorded in the matrix")
    r.add_argument("--racecheck", help="cases every mutant also runs under compute-sanitizer racecheck, comma separated "
                                       "(a mutant's entry can name racecheck:CASE itself)")
    g = sub.add_parser("merge", help="a run of some mutants replaces their rows of a complete matrix")
    g.add_argument("base", help="the complete kill matrix")
    g.add_argument("part", help="the later run's kill matrix (the same catalog and rule families)")
    g.add_argument("--out", required=True, help="folder for the merged kill_matrix.json")
    args = ap.parse_args(argv)
    try:
        if args.selftest:
            return selftest()
        if args.check_catalog:
            root = os.path.abspath(args.root)
            mutants = load_kernel_catalog(os.path.join(root, args.catalog))
            for m in mutants:
                with open(os.path.join(root, m["file"]), encoding="utf-8") as f:
                    mutate.check_snippet(m, f.read(), m["file"])
            print("kernel catalog: %d mutants, every snippet found once" % len(mutants))
            return 0
        if args.cmd == "build":
            return cmd_build(args)
        if args.cmd == "run":
            return cmd_run(args)
        if args.cmd == "merge":
            return cmd_merge(args)
        ap.print_usage(sys.stderr)
        return 2
    except BadInput as e:
        log(str(e))
        return 2


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as e:  # noqa: BLE001  (an internal error: say so, exit 3)
        log("internal error: %r" % e)
        raise SystemExit(3)
