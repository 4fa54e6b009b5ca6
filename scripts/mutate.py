#!/usr/bin/env python3
"""Mutation testing of the harness (issue 32, CPU slice): how many realistic bugs do the suites kill?

Each mutant in the catalog (suites/mutation/catalog.json) is one exact source edit: `find`, a
snippet that must occur exactly once in `file`, becomes `replace`. Mutants never touch the
checkout: the tool keeps a scratch copy of the tree (SCRATCH/tree, synced from the checkout at
every run, only changed files rewritten so the scratch build stays warm), configures it once into
SCRATCH/tree/build (Ninja, Release, ccache as scripts/build.sh does), and for each mutant applies
the edit there, builds only the targets the selected tests run, runs those tests --reps times,
and reverts the edit. Before the first mutant the unmutated tree is built and run once: every
selected test must pass (a skipped test cannot kill and is dropped with a note).

CPU slice: a mutant in CUDA code (kernels/gpu, *.cu, *.cuh) is refused. The CUDA objects that
include a mutated host header (a rule is __host__ __device__) are kept from the unmutated build,
so a rule mutant costs host compiles only (nvcc takes minutes per rule family on 2 cores); no CPU
test runs device code, and the kill matrix lists the objects kept. The mutated file keeps its
old mtime and the tool deletes the host objects that depend on it (ninja's deps log), so Ninja
recompiles exactly those.

The kill matrix (OUT/kill_matrix.json, rewritten atomically after every mutant, "complete": true
at the end): for each mutant and test, killed (failed or timed out in every rep), survived (passed
in every rep), flaky (killed in some reps only), with the first failing check's message; the
mutant's status: killed (some test killed it in every rep), survived, flaky, build_error; a
per-layer summary and the survivors. Each kill also lists its units (kill_units): the
configurations a test reports on FH_FAILED_UNIT lines, else its failed GoogleTest cases, else the
test; a rule mutant with fewer than two is listed as a thin kill (issue 32's target). A mutant
marked "equivalent": "reason" in the catalog is run and reported but does not fail the run.

Exit status: 0 every mutant killed in all reps or marked equivalent; 1 a non-equivalent mutant
survived, was killed only in some reps, or did not build; 2 bad usage or input (unknown id or
layer, a snippet not found exactly once, a bad catalog, the baseline failing), nothing measured;
3 an internal error of the tool (a mutant left applied is undone by the next run).
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import atomic_file  # noqa: E402  (scripts/atomic_file.py: temp file + rename)

DEFAULT_ROOT = os.path.dirname(HERE)
DEFAULT_CATALOG = os.path.join("suites", "mutation", "catalog.json")
DEFAULT_SCRATCH = "/tmp/fh-mutate"
# The default test set: the CPU-labelled CTest tests, less those that carry a measured COST in
# CMakeLists.txt (the slowest: 27 s to 175 s each on 2 cores) and forge_bench_no_gpu (it needs the
# CUDA benchmark binary and judges no host code).
DEFAULT_EXCLUDE = r"^forge_bench_no_gpu$"
# The tool's own CTest entries (mutation_catalog, mutation_selftest) are never run against a
# mutant: the catalog check would "kill" every mutant by not finding its snippet.
OWN_TESTS = r"^mutation_"
FIELDS = ("id", "layer", "file", "find", "replace", "why", "tests")
CUDA_SUFFIXES = (".cu", ".cuh")
CUDA_DIRS = ("kernels/gpu/",)


class BadInput(Exception):
    """Bad usage or input: exit 2, nothing measured."""


class Terminated(Exception):
    """SIGTERM arrived: unwind (reverting the mutant in hand) and exit 143."""


def log(msg):
    sys.stderr.write("mutate: %s\n" % msg)
    sys.stderr.flush()


# ---------------------------------------------------------------------------------------------
# The catalog

def load_catalog(path, cuda=False):
    """The catalog's mutants, checked. cuda: the kernel catalog (scripts/mutate_gpu.py), whose
    mutants edit CUDA code only; else the host catalog, which may not."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise BadInput("%s: no such catalog" % path)
    except (OSError, ValueError) as e:
        raise BadInput("%s: not a readable JSON catalog (%s)" % (path, e))
    mutants = data.get("mutants") if isinstance(data, dict) else None
    if not isinstance(mutants, list) or not mutants:
        raise BadInput("%s: wants an object with a non-empty list \"mutants\"" % path)
    seen = set()
    for i, m in enumerate(mutants):
        where = "%s: mutant %d" % (path, i)
        if not isinstance(m, dict):
            raise BadInput("%s: not an object" % where)
        for k in FIELDS:
            if k not in m:
                raise BadInput("%s (%s): field '%s' missing" % (where, m.get("id", "?"), k))
        for k in ("id", "layer", "file", "find", "why"):
            if not isinstance(m[k], str) or not m[k]:
                raise BadInput("%s (%s): '%s' must be a non-empty string" % (where, m.get("id", "?"), k))
        if not isinstance(m["replace"], str):
            raise BadInput("%s (%s): 'replace' must be a string" % (where, m["id"]))
        if m["find"] == m["replace"]:
            raise BadInput("%s (%s): 'replace' equals 'find'" % (where, m["id"]))
        if not isinstance(m["tests"], list) or not all(isinstance(t, str) for t in m["tests"]):
            raise BadInput("%s (%s): 'tests' must be a list of CTest names" % (where, m["id"]))
        if "equivalent" in m and (not isinstance(m["equivalent"], str) or not m["equivalent"]):
            raise BadInput("%s (%s): 'equivalent' must be the reason, a non-empty string" % (where, m["id"]))
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", m["id"]):
            raise BadInput("%s: id '%s' must be letters, digits, '_', '.', '-'" % (where, m["id"]))
        if m["id"] in seen:
            raise BadInput("%s: id '%s' appears twice" % (where, m["id"]))
        seen.add(m["id"])
        f = m["file"]
        if os.path.isabs(f) or ".." in f.split("/"):
            raise BadInput("%s (%s): file '%s' must be a path inside the tree" % (where, m["id"], f))
        is_cuda = f.endswith(CUDA_SUFFIXES) or f.startswith(CUDA_DIRS)
        if is_cuda and not cuda:
            raise BadInput("%s (%s): %s is CUDA code: this slice mutates host code only "
                           "(kernel mutants: suites/mutation/kernel_catalog.json, scripts/mutate_gpu.py)" % (where, m["id"], f))
        if cuda and not is_cuda:
            raise BadInput("%s (%s): %s is host code: the kernel catalog holds CUDA mutants only" % (where, m["id"], f))
    return mutants


def check_snippet(m, text, where):
    n = text.count(m["find"])
    if n != 1:
        raise BadInput("mutant %s: its 'find' occurs %d times in %s (want exactly once): %r"
                       % (m["id"], n, where, m["find"][:120]))


def select(mutants, only, layer):
    chosen = mutants
    if only:
        ids = [s for s in only.split(",") if s]
        known = {m["id"] for m in mutants}
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise BadInput("--only: unknown mutant id(s): %s" % ", ".join(unknown))
        chosen = [m for m in chosen if m["id"] in ids]
    if layer:
        layers = sorted({m["layer"] for m in mutants})
        if layer not in layers:
            raise BadInput("--layer %s: no such layer (the catalog has: %s)" % (layer, ", ".join(layers)))
        chosen = [m for m in chosen if m["layer"] == layer]
    if not chosen:
        raise BadInput("no mutant selected")
    return chosen


# ---------------------------------------------------------------------------------------------
# Mutants of a change (--changed BASE)

# The operators a changed line gets, each applied at its first occurrence outside a string literal
# or comment: the binary operators with the spaces this code base's format puts around them (so
# that a template's angle brackets or a unary minus are never taken), and the boolean literals.
CHANGED_OPERATORS = [(" <= ", " < "), (" >= ", " > "), (" < ", " <= "), (" > ", " >= "), (" == ", " != "),
                     (" != ", " == "), (" && ", " || "), (" || ", " && "), (" + ", " - "), (" - ", " + "),
                     ("true", "false"), ("false", "true")]
CHANGED_OP_NAMES = {" <= ": "le", " >= ": "ge", " < ": "lt", " > ": "gt", " == ": "eq", " != ": "ne",
                    " && ": "and", " || ": "or", " + ": "plus", " - ": "minus", "true": "true", "false": "false"}
# Production code only: tests (test_*), fuzz targets, the catalog and CUDA code (this slice) are not
# mutated.
CHANGED_SKIP = ("suites/cpu/", "suites/gpu/", "suites/fuzz/", "suites/mutation/") + CUDA_DIRS
CHANGED_SUFFIXES = (".cpp", ".h", ".hpp", ".cc")


def code_span(line):
    """The part of a C++ line before a // comment that is not inside a string literal, and a mask
    of the positions inside string or character literals."""
    inside, quote, mask, i = False, "", [], 0
    while i < len(line):
        c = line[i]
        if not inside and line.startswith("//", i):
            return line[:i], mask
        if inside:
            mask.append(True)
            if c == "\\":
                mask.append(True)
                i += 2
                continue
            if c == quote:
                inside = False
        else:
            if c in "\"'":
                inside, quote = True, c
                mask.append(True)
            else:
                mask.append(False)
        i += 1
    return line, mask


def line_is_string_concat(code, at, n):
    """The operator at code[at:at+n] joins strings: a string literal right beside it, or a
    std::to_string(...) operand on either side."""
    left, right = code[:at].rstrip(), code[at + n:].lstrip()
    near_literal = left.endswith('"') or right.startswith('"')
    return near_literal or "to_string(" in right[:16] or ("to_string(" in left[-40:] and left.endswith(")"))


def mutate_line(line):
    """[(operator name, mutated line)] for one changed line: each operator once, at its first
    occurrence in code (not in a literal or comment); nothing for comments and preprocessor lines."""
    stripped = line.strip()
    if not stripped or stripped.startswith(("//", "#", "*", "/*")):
        return []
    code, mask = code_span(line)
    out = []
    for old, new in CHANGED_OPERATORS:
        at = code.find(old)
        while at >= 0 and any(mask[at:at + len(old)]):
            at = code.find(old, at + 1)
        if at < 0:
            continue
        if old in (" + ", " - ") and line_is_string_concat(code, at, len(old)):
            continue  # "a" - b does not compile: a mutant that costs a build and says nothing
        if old in ("true", "false"):  # whole words only
            before = code[at - 1] if at > 0 else " "
            after = code[at + len(old)] if at + len(old) < len(code) else " "
            if before.isalnum() or before == "_" or after.isalnum() or after == "_":
                continue
        out.append((CHANGED_OP_NAMES[old], line[:at] + new + line[at + len(old):]))
    return out


def changed_lines(root, base):
    """{path: [new line numbers]} of the host C++ production files the change BASE..working tree
    adds or modifies (git diff --unified=0)."""
    try:
        out = subprocess.run(["git", "-C", root, "diff", "--unified=0", "--no-color", "--no-ext-diff", base, "--"],
                             capture_output=True, text=True, check=True).stdout
    except subprocess.CalledProcessError as e:
        raise BadInput("--changed %s: git diff failed: %s" % (base, e.stderr.strip()[:300]))
    lines, path, at = {}, None, 0
    for row in out.splitlines():
        if row.startswith("+++ "):
            path = row[6:] if row.startswith("+++ b/") else None
            if path and (not path.endswith(CHANGED_SUFFIXES) or path.startswith(CHANGED_SKIP)
                         or os.path.basename(path).startswith(("test_", "fuzz_"))):
                path = None
        elif row.startswith("@@"):
            m = re.match(r"@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@", row)
            at = int(m.group(1)) if m else 0
        elif row.startswith("+") and path:
            lines.setdefault(path, []).append(at)
            at += 1
    return lines


def changed_mutants(root, base, files, limit):
    """Catalog entries (layer "changed") for the operators on the lines the change touched. Each
    edit's `find` is the line itself, or the line with the one before it where the line alone is not
    unique in its file; a line unique neither way is left out. More than `limit`: an evenly spaced,
    deterministic subset."""
    made = []
    for path, numbers in sorted(changed_lines(root, base).items()):
        if path not in files:
            continue
        text = files[path].decode("utf-8", "replace")
        rows = text.split("\n")
        for n in numbers:
            if not 1 <= n <= len(rows):
                continue
            line = rows[n - 1]
            for op, mutated in mutate_line(line):
                find, replace = line + "\n", mutated + "\n"
                if text.count(find) != 1 and n >= 2:
                    find, replace = rows[n - 2] + "\n" + find, rows[n - 2] + "\n" + replace
                if text.count(find) != 1:
                    continue
                stem = re.sub(r"[^A-Za-z0-9_]", "_", os.path.splitext(path)[0])
                made.append({"id": "changed.%s.%d.%s" % (stem, n, op), "layer": "changed", "file": path,
                             "find": find, "replace": replace, "tests": [],
                             "why": "%s:%d, %s: %s" % (path, n, op, mutated.strip()[:100])})
    if limit and len(made) > limit:
        made = [made[(i * len(made)) // limit] for i in range(limit)]
    return made


# ---------------------------------------------------------------------------------------------
# The scratch tree

def source_files(root, hold):
    """{relative path: bytes} of the tree to mutate: the checkout's tracked and untracked
    (not ignored) files as they are now; paths under a --hold prefix as at HEAD."""
    files = {}
    is_git = subprocess.run(["git", "-C", root, "rev-parse", "--git-dir"], capture_output=True).returncode == 0
    if is_git:
        out = subprocess.run(["git", "-C", root, "ls-files", "-co", "--exclude-standard", "-z"],
                             capture_output=True, check=True).stdout
        rels = [p.decode() for p in out.split(b"\0") if p]
    else:
        if hold:
            raise BadInput("--hold needs a git checkout (%s is not one)" % root)
        rels = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if not (d == root and (x.startswith("build") or x in ("bundle", ".git")))]
            rels += [os.path.relpath(os.path.join(d, n), root) for n in names]
    held = [h.rstrip("/") + "/" for h in hold]
    for rel in rels:
        if any(rel.startswith(h) for h in held):
            continue
        p = os.path.join(root, rel)
        if os.path.islink(p) or not os.path.isfile(p):
            continue
        with open(p, "rb") as f:
            files[rel] = f.read()
    if held:
        out = subprocess.run(["git", "-C", root, "ls-tree", "-r", "-z", "--name-only", "HEAD", "--"] + held,
                             capture_output=True, check=True).stdout
        for rel in [p.decode() for p in out.split(b"\0") if p]:
            files[rel] = subprocess.run(["git", "-C", root, "show", "HEAD:" + rel],
                                        capture_output=True, check=True).stdout
    return files


def scratch_files(tree, manifest_path):
    """{relative path: bytes} of the scratch tree as it is (the files its manifest lists)."""
    with open(manifest_path) as f:
        rels = json.load(f)
    out = {}
    for rel in rels:
        p = os.path.join(tree, rel)
        if os.path.isfile(p):
            with open(p, "rb") as fh:
                out[rel] = fh.read()
    return out


def sync_tree(files, tree, manifest_path):
    """Makes tree hold exactly files (and the build folder): a file is rewritten only when its
    content differs, so unchanged files keep their mtimes and the scratch build stays warm."""
    os.makedirs(tree, exist_ok=True)
    old = []
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            old = json.load(f)
    changed = []
    for rel, data in sorted(files.items()):
        p = os.path.join(tree, rel)
        try:
            with open(p, "rb") as f:
                if f.read() == data:
                    continue
        except FileNotFoundError:
            os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
        changed.append(rel)
    removed = 0
    for rel in old:
        if rel not in files and os.path.exists(os.path.join(tree, rel)):
            os.unlink(os.path.join(tree, rel))
            removed += 1
    # Executable bits: the scripts the tests run directly.
    for rel in files:
        if rel.endswith((".sh", ".py")):
            os.chmod(os.path.join(tree, rel), 0o755)
    with open(manifest_path + ".tmp", "w") as f:
        json.dump(sorted(files), f)
    os.replace(manifest_path + ".tmp", manifest_path)
    return changed, removed


# ---------------------------------------------------------------------------------------------
# Build

def build_env(tree):
    env = dict(os.environ)
    env["PATH"] = "/usr/local/cuda/bin:" + env.get("PATH", "")
    env.setdefault("CCACHE_MAXSIZE", "8G")
    env["CCACHE_BASEDIR"] = tree
    env["CCACHE_NOHASHDIR"] = "1"
    return env


def configure(tree, build, env, cache=("-DFH_DEVICE_SASS=OFF", "-DFH_GPU_RULE_FAMILY=")):
    # Every run, also over an existing build: a re-run is seconds, and it re-globs the suites, so a
    # test file new since the last run is a CTest test before the tests are listed.
    t = time.time()
    # By default PTX-only device code (as CI builds it): no CPU test runs a kernel, and ptxas is two
    # thirds of the CUDA build (scripts/mutate_gpu.py passes its own cache settings); every rule family,
    # as CI builds it, also in a scratch build the kernel tool configured before.
    cmd = ["cmake", "-S", tree, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release"] + list(cache)
    if shutil.which("ccache"):
        cmd += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache", "-DCMAKE_CUDA_COMPILER_LAUNCHER=ccache"]
    nvcc = shutil.which("nvcc", path=env["PATH"])
    if nvcc:
        cmd += ["-DCMAKE_CUDA_COMPILER=" + nvcc]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        shutil.rmtree(os.path.join(build, "CMakeFiles"), ignore_errors=True)
        raise BadInput("cmake configure of the scratch tree failed:\n" + (r.stdout + r.stderr)[-3000:])
    return time.time() - t


def ninja_build(build, targets, env, jobs):
    t = time.time()
    r = subprocess.run(["ninja", "-C", build, "-j", str(jobs)] + sorted(targets), env=env,
                       capture_output=True, text=True)
    return r.returncode == 0, time.time() - t, r.stdout + r.stderr


def build_error_excerpt(out):
    lines = out.splitlines()
    for i, l in enumerate(lines):
        if ": error:" in l or "undefined reference" in l:
            return "\n".join(lines[i:i + 4])[:800]
    return "\n".join(lines[-12:])[-800:]


def objects_depending_on(build, path):
    """(host objects, CUDA objects) whose recorded dependencies include path (ninja -t deps)."""
    r = subprocess.run(["ninja", "-C", build, "-t", "deps"], capture_output=True, text=True)
    target = os.path.realpath(path)
    host, cuda = [], []
    current, hit = None, False

    def flush():
        if current and hit:
            (cuda if current.endswith((".cu.o", ".cu.obj")) else host).append(current)

    for line in r.stdout.splitlines():
        if line and not line[0].isspace():
            flush()
            current, hit = line.split(":", 1)[0], False
        elif line.strip() and current and not hit:
            dep = line.strip()
            if os.path.realpath(os.path.join(build, dep)) == target:
                hit = True
    flush()
    return sorted(host), sorted(cuda)


# ---------------------------------------------------------------------------------------------
# Tests

def ctest_tests(build):
    r = subprocess.run(["ctest", "--show-only=json-v1"], cwd=build, capture_output=True, text=True)
    if r.returncode != 0:
        raise BadInput("ctest --show-only failed in %s: %s" % (build, r.stderr[-500:]))
    tests = []
    for t in json.loads(r.stdout).get("tests", []):
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        tests.append({
            "name": t["name"],
            "command": t.get("command") or [],
            "labels": props.get("LABELS", []),
            "cost": props.get("COST"),
            "cwd": props.get("WORKING_DIRECTORY", build),
            "env": props.get("ENVIRONMENT", []),
            "skip_rc": props.get("SKIP_RETURN_CODE"),
            "will_fail": bool(props.get("WILL_FAIL", False)),
            "timeout": props.get("TIMEOUT"),
        })
    return tests


def pick_tests(tests, regex, exclude):
    cpu = [t for t in tests if "cpu" in t["labels"] and not re.search(OWN_TESTS, t["name"])]
    if regex:
        try:
            rx = re.compile(regex)
        except re.error as e:
            raise BadInput("--tests %r: not a regular expression (%s)" % (regex, e))
        chosen = [t for t in cpu if rx.search(t["name"])]
    else:
        chosen = [t for t in cpu if t["cost"] is None]
    if exclude:
        ex = re.compile(exclude)
        chosen = [t for t in chosen if not ex.search(t["name"])]
    if not chosen:
        raise BadInput("no CPU test matches --tests %r (the CPU tests: %s)"
                       % (regex, ", ".join(t["name"] for t in cpu)))
    return chosen


def ctestfile_commands(build):
    """{test name: the command's words} as CTestTestfile.cmake declares them (ctest --show-only
    leaves a command out while its executable is not built yet)."""
    out = {}
    path = os.path.join(build, "CTestTestfile.cmake")
    if not os.path.exists(path):
        return out
    for line in open(path, encoding="utf-8"):
        mt = re.match(r'add_test\(\[=\[(.*?)\]=\]\s+(.*)\)\s*$', line)
        if mt:
            out[mt.group(1)] = [w.replace('\\"', '"') for w in re.findall(r'"((?:[^"\\]|\\.)*)"', mt.group(2))]
    return out


def targets_for(tests, cpu_tests, build, all_targets):
    """The build targets the tests run: every build-folder path in their commands that names a
    target; a test that names only the build folder (a script that finds the binaries itself) gets
    every binary any CPU test names."""
    declared = ctestfile_commands(build)
    pat = re.compile(re.escape(build.rstrip("/")) + r"(/[^\s'\"$;|&()<>]*)?")

    def named(t):
        words = t["command"] or declared.get(t["name"], [])
        found, mentions = set(), False
        for arg in words:
            for mt in pat.finditer(arg):
                mentions = True
                rel = (mt.group(1) or "").lstrip("/")
                if rel in all_targets:
                    found.add(rel)
        return found, mentions

    need, vague = set(), []
    for t in tests:
        found, mentions = named(t)
        need |= found
        if mentions and not found:
            vague.append(t["name"])
    if vague:
        for t in cpu_tests:
            need |= named(t)[0]
    return need, vague


def list_targets(build):
    r = subprocess.run(["ninja", "-C", build, "-t", "targets", "all"], capture_output=True, text=True)
    out = set()
    for line in r.stdout.splitlines():
        name = line.rsplit(":", 1)[0].strip()
        if "/" not in name and not name.endswith((".o", ".a", ".ninja", ".cmake")):
            out.add(name)
    return out


GTEST_FAIL = re.compile(r"^(.*?):(\d+): Failure\s*$")


def first_failure(output):
    """The first failing check's message: a GoogleTest failure block, else the failed tests' list,
    else the output's last lines."""
    lines = output.splitlines()
    for i, l in enumerate(lines):
        if GTEST_FAIL.match(l):
            block = [l.strip()]
            for nxt in lines[i + 1:i + 8]:
                if not nxt.strip() or nxt.startswith("[  FAILED  ]") or nxt.startswith("seed:"):
                    break
                block.append(nxt.strip())
            return " | ".join(block)[:600]
    for l in lines:
        if l.startswith("[  FAILED  ]"):
            return l.strip()[:600]
    tail = [l.strip() for l in lines if l.strip()][-4:]
    return " | ".join(tail)[-600:]


GTEST_RUN = re.compile(r"^\[ RUN      \] (\S+)")
GTEST_FAILED_CASE = re.compile(r"^\[  FAILED  \] (\S+\.\S+?)(,| \(|$)")
FH_UNIT = re.compile(r"^FH_FAILED_UNIT: (.+?)\s*$")


def failed_units(output):
    """The independent units a failing test reports: the FH_FAILED_UNIT lines a test prints (one
    per hyperparameter configuration, say), and each failed GoogleTest case that printed none;
    an empty list when the output names neither (the whole test is then one unit)."""
    units, case, cases_with_units, failed_cases = set(), None, set(), set()
    for l in output.splitlines():
        m = GTEST_RUN.match(l)
        if m:
            case = m.group(1)
            continue
        m = FH_UNIT.match(l)
        if m:
            units.add(m.group(1))
            if case:
                cases_with_units.add(case)
            continue
        m = GTEST_FAILED_CASE.match(l)
        if m:
            failed_cases.add(m.group(1))
    return sorted(units | (failed_cases - cases_with_units))


def run_test(t, timeout):
    env = dict(os.environ)
    for kv in t["env"]:
        k, _, v = kv.partition("=")
        env[k] = v
    start = time.time()
    try:
        proc = subprocess.Popen(t["command"], cwd=t["cwd"], env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)
    except OSError as e:
        return {"result": "fail", "message": "could not start: %s" % e, "seconds": time.time() - start}
    try:
        raw, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, 9)  # the test's whole process group (it may have started others)
        except ProcessLookupError:
            pass
        proc.communicate()
        return {"result": "fail", "message": "timed out after %d s" % timeout, "seconds": time.time() - start}
    rc, out = proc.returncode, raw.decode("utf-8", "replace")
    secs = time.time() - start
    if t["skip_rc"] is not None and rc == int(t["skip_rc"]):
        return {"result": "skip", "message": "skipped (exit %d)" % rc, "seconds": secs}
    ok = (rc == 0) != t["will_fail"]
    if ok:
        return {"result": "pass", "message": "", "seconds": secs}
    msg = first_failure(out)
    return {"result": "fail", "message": ("exit %d: " % rc) + msg if rc >= 0 else "signal %d: %s" % (-rc, msg),
            "seconds": secs, "units": failed_units(out)}


def run_tests(tests, jobs, timeouts):
    # Slowest first (by the baseline), so the pool ends together.
    order = sorted(tests, key=lambda t: -timeouts.get(t["name"], 0))
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futs = {t["name"]: pool.submit(run_test, t, timeouts.get(t["name"], 900)) for t in order}
        return {n: f.result() for n, f in futs.items()}


# ---------------------------------------------------------------------------------------------
# Mutants

class Journal:
    """SCRATCH/journal.json names the mutated file while a mutant is applied, so that a run that
    was killed mid-mutant is undone by the next run before anything else."""

    def __init__(self, scratch):
        self.path = os.path.join(scratch, "journal.json")

    def write(self, entry):
        with open(self.path + ".tmp", "w") as f:
            json.dump(entry, f)
        os.replace(self.path + ".tmp", self.path)

    def clear(self):
        if os.path.exists(self.path):
            os.unlink(self.path)

    def recover(self, tree, build):
        if not os.path.exists(self.path):
            return
        with open(self.path) as f:
            e = json.load(f)
        log("undoing the interrupted mutant %s in %s" % (e["id"], e["file"]))
        restore(tree, build, e["file"], e["original"].encode("utf-8"), e["mtime_ns"], e["objects"])
        self.clear()


def restore(tree, build, rel, original, mtime_ns, objects):
    p = os.path.join(tree, rel)
    if original is not None:
        with open(p, "wb") as f:
            f.write(original)
        os.utime(p, ns=(mtime_ns, mtime_ns))
    for o in objects:
        op = os.path.join(build, o)
        if os.path.exists(op):
            os.unlink(op)


def verdicts(runs):
    """Per test, over the reps: killed (failed every rep), survived, flaky, skipped."""
    out = {}
    names = runs[0].keys()
    for n in names:
        res = [r[n] for r in runs if n in r]
        kills = sum(1 for x in res if x["result"] == "fail")
        skips = sum(1 for x in res if x["result"] == "skip")
        if skips == len(res):
            v = "skipped"
        elif kills == len(res):
            v = "killed"
        elif kills == 0:
            v = "survived"
        else:
            v = "flaky"
        msg = next((x["message"] for x in res if x["result"] == "fail"), "")
        # A killing test's units: those it reported in every rep (the whole test when none).
        fails = [set(x.get("units") or [n]) for x in res if x["result"] == "fail"]
        units = sorted(set.intersection(*fails)) if v == "killed" else []
        out[n] = {"verdict": v, "kills": kills, "reps": len(res), "message": msg, "units": units,
                  "seconds": round(sum(x["seconds"] for x in res) / len(res), 2)}
    return out


def record_verdicts(result, runs, expected_tests):
    """A mutant's verdicts over its reps into its matrix row (mutate_gpu.py's rows too): per test,
    the tests that killed it, their units, the flaky kills, its status and the hinted survivors."""
    v = verdicts(runs)
    result["tests"] = v
    result["killed_by"] = sorted(n for n, x in v.items() if x["verdict"] == "killed")
    # Independent kills: each killing test's units (its configurations or cases), test-qualified.
    result["kill_units"] = sorted(n + ": " + u if u != n else n for n in result["killed_by"] for u in v[n]["units"])
    result["flaky_kills"] = sorted(n for n, x in v.items() if x["verdict"] == "flaky")
    result["status"] = "killed" if result["killed_by"] else ("flaky" if result["flaky_kills"] else "survived")
    result["expected_but_survived"] = sorted(n for n in expected_tests if n in v and v[n]["verdict"] != "killed")


def summarize(results, catalog_ids):
    per_layer = {}
    survivors, flaky, broken, wrong_equiv = [], [], [], []
    for r in results:
        s = per_layer.setdefault(r["layer"], {"mutants": 0, "killed": 0, "survived": 0, "flaky": 0,
                                              "build_error": 0, "equivalent": 0})
        s["mutants"] += 1
        if r.get("equivalent") and r["status"] != "killed":
            s["equivalent"] += 1
        else:
            s[r["status"]] += 1
        if r.get("equivalent") and r["status"] == "killed":
            wrong_equiv.append(r["id"])
        if r.get("equivalent"):
            continue
        if r["status"] == "survived":
            survivors.append(r["id"])
        elif r["status"] == "flaky":
            flaky.append(r["id"])
        elif r["status"] == "build_error":
            broken.append(r["id"])
    totals = {k: sum(s[k] for s in per_layer.values())
              for k in ("mutants", "killed", "survived", "flaky", "build_error", "equivalent")}
    # Issue 32's target: every rule mutant killed by at least two independent units (tests,
    # configurations or cases); a rule defect one configuration sees is thinly covered.
    thin = [r["id"] for r in results if r["layer"] == "rules" and r["status"] == "killed"
            and len(r.get("kill_units", [])) < 2]
    return {"per_layer": per_layer, "totals": totals, "survivors": survivors, "flaky": flaky,
            "build_errors": broken, "marked_equivalent_but_killed": wrong_equiv, "thin_rule_kills": thin}


def write_matrix(out_dir, doc):
    final = os.path.join(out_dir, "kill_matrix.json")

    def work(tmp):
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1, sort_keys=False)
            f.write("\n")

    atomic_file.replace_from_temp(final, work, prefix=".kill_matrix.", replace=True)
    return final


def merge_matrices(base_path, part_path, out_dir, tool, same, catalog=()):
    """A complete kill matrix (base) with a later run's mutants (part, e.g. --only after a test was
    strengthened, or with a racecheck case) in place of its own rows; each replaced row records the
    run it came from (measured_in); the part's baseline cases the base lacks join with their times;
    the summary is recomputed. The keys in `same` must agree. A row whose edit is still the catalog's
    takes the catalog's equivalence argument (or loses one the catalog dropped), as --resume does.
    Writes OUT_DIR/kill_matrix.json."""
    def load(path):
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            raise BadInput("merge: %s: not a readable kill matrix (%s)" % (path, e))
        if not isinstance(doc, dict) or doc.get("tool") != tool or doc.get("complete") is not True:
            raise BadInput("merge: %s: not a complete kill matrix of %s" % (path, tool))
        rows = doc.get("mutants")
        if not isinstance(rows, list) or not all(isinstance(m, dict) and isinstance(m.get("id"), str) for m in rows):
            raise BadInput("merge: %s: \"mutants\" must be a list of rows, each with its id" % path)
        return doc
    base, part = load(base_path), load(part_path)
    for key in same:
        if base.get(key) != part.get(key):
            raise BadInput("merge: %s differs (%r in %s, %r in %s)" % (key, base.get(key), base_path, part.get(key), part_path))
    rows = {m["id"]: m for m in part["mutants"]}
    unknown = sorted(set(rows) - {m["id"] for m in base["mutants"]})
    if unknown or not rows:
        raise BadInput("merge: %s: %s" % (part_path, "mutants not in the base matrix: " + ", ".join(unknown)
                                          if unknown else "no mutants"))
    source = {k: part[k] for k in ("device", "revision", "tree", "reps", "tests") if k in part}
    source["matrix"] = os.path.basename(os.path.dirname(os.path.abspath(part_path))) + "/" + os.path.basename(part_path)
    merged = [dict(rows[m["id"]], measured_in=source) if m["id"] in rows else dict(m) for m in base["mutants"]]
    entries = {m["id"]: m for m in catalog}
    for r in merged:
        c = entries.get(r["id"])
        if c is not None and edit_key(c) == r.get("edit"):
            r.pop("equivalent", None)
            if c.get("equivalent"):
                r["equivalent"] = c["equivalent"]
    doc = dict(base, mutants=merged, summary=summarize(merged, [m["id"] for m in merged]))
    btests = dict(base.get("baseline", {}).get("tests", {}))
    for c, r in part.get("baseline", {}).get("tests", {}).items():
        btests.setdefault(c, r)
    doc["baseline"] = dict(base.get("baseline", {}), tests=btests)
    doc["merged_runs"] = base.get("merged_runs", []) + [dict(source, mutants=sorted(rows))]
    os.makedirs(out_dir, exist_ok=True)
    path = write_matrix(os.path.abspath(out_dir), doc)
    print_summary(doc["summary"], merged)
    print("kill matrix: %s" % path)
    return doc


def run(args):
    root = os.path.abspath(args.root)
    catalog_path = args.catalog if os.path.isabs(args.catalog) else os.path.join(root, args.catalog)
    if not os.path.exists(catalog_path) and os.path.exists(args.catalog):
        catalog_path = os.path.abspath(args.catalog)
    mutants = load_catalog(catalog_path) if not args.changed else []
    if args.list and not args.changed:
        for m in mutants:
            print("%-28s %-10s %-44s %s%s" % (m["id"], m["layer"], m["file"], m["why"],
                                              "  [equivalent]" if m.get("equivalent") else ""))
        return 0
    chosen = mutants if args.check_catalog or args.changed else select(mutants, args.only, args.layer)
    if args.reps < 1:
        raise BadInput("--reps must be at least 1")
    hold = [h for h in (args.hold or "").split(",") if h]
    scratch = os.path.abspath(args.scratch)
    tree = os.path.join(scratch, "tree")
    build = os.path.join(tree, "build")
    manifest = os.path.join(scratch, "manifest.json")
    frozen = args.no_sync or args.sync_only is not None
    if frozen and not args.check_catalog:
        if not os.path.exists(manifest):
            raise BadInput("--no-sync/--sync-only: no scratch tree at %s yet (run once without them)" % tree)
        Journal(scratch).recover(tree, build)
        files = scratch_files(tree, manifest)
        if args.sync_only:
            prefixes = [x.rstrip("/") for x in args.sync_only.split(",") if x]
            for rel, data in source_files(root, hold).items():
                if any(rel == x or rel.startswith(x + "/") for x in prefixes):
                    files[rel] = data
    else:
        files = source_files(root, hold)
    if args.changed:
        mutants = changed_mutants(root, args.changed, files, args.max_mutants)
        if not mutants:
            raise BadInput("--changed %s: the change touches no mutable line of host production code" % args.changed)
        chosen = select(mutants, args.only, None)
        log("--changed %s: %d mutants over %d lines of %d files" % (
            args.changed, len(chosen), len({(m["file"], m["why"].split(",")[0]) for m in chosen}),
            len({m["file"] for m in chosen})))
    for m in chosen:
        if m["file"] not in files:
            raise BadInput("mutant %s: %s is not a file of the tree" % (m["id"], m["file"]))
        check_snippet(m, files[m["file"]].decode("utf-8"), m["file"])
    if args.list:  # --changed --list: the generated mutants, nothing built
        for m in chosen:
            print("%-60s %s" % (m["id"], m["why"]))
        return 0
    if args.check_catalog:
        print("mutate: catalog %s: %d mutants, every snippet found exactly once" % (catalog_path, len(mutants)))
        return 0

    out_dir = os.path.abspath(args.out or os.path.join(args.scratch, "out"))
    if not os.path.isdir(out_dir):
        try:
            os.makedirs(out_dir)
        except OSError as e:
            raise BadInput("--out %s: cannot make the folder (%s)" % (out_dir, e.strerror))
    os.makedirs(scratch, exist_ok=True)
    journal = Journal(scratch)
    journal.recover(tree, build)
    t0 = time.time()
    changed, removed = sync_tree(files, tree, manifest)
    log("scratch tree %s: %d files rewritten%s, %d removed (%s)" % (
        tree, len(changed), (": " + ", ".join(changed[:8]) + (" ..." if len(changed) > 8 else "")) if changed else "",
        removed, "frozen: only " + args.sync_only + " synced" if args.sync_only else "frozen, not synced" if args.no_sync
        else "held at HEAD: " + ", ".join(hold) if hold else "the checkout as it is now"))
    env = build_env(tree)
    secs = configure(tree, build, env)
    if secs:
        log("configured %s in %.0f s" % (build, secs))

    listed = ctest_tests(build)
    base_tests = pick_tests(listed, args.tests, args.exclude_tests if args.exclude_tests is not None
                            else (DEFAULT_EXCLUDE if not args.tests else ""))
    cpu_tests = [t for t in listed if "cpu" in t["labels"] and not re.search(OWN_TESTS, t["name"])]
    cpu_names = {t["name"] for t in cpu_tests}
    base_names = [t["name"] for t in base_tests]
    # Each mutant runs the base set and the tests its catalog entry names (unless --no-hinted), so
    # a slow test named as a mutant's killer runs for that mutant only.
    hints = {}
    for m in chosen:
        hints[m["id"]] = [] if args.no_hinted else [n for n in m["tests"] if n in cpu_names and n not in base_names]
        unknown = [n for n in m["tests"] if n not in cpu_names]
        if unknown:
            log("mutant %s: its catalog hint names no CPU test here: %s" % (m["id"], ", ".join(unknown)))
    wanted = set(base_names) | {n for h in hints.values() for n in h}
    tests = [t for t in cpu_tests if t["name"] in wanted]
    all_targets = list_targets(build)
    targets, vague = targets_for(tests, cpu_tests, build, all_targets)
    if vague:
        log("tests %s name the build folder but no binary: building every binary the CPU tests name" % ", ".join(vague))
    log("tests (%d base%s): %s" % (len(base_names), ", %d more named by the catalog" % (len(tests) - len(base_names))
                                   if len(tests) > len(base_names) else "", " ".join(t["name"] for t in tests)))
    log("targets (%d): %s" % (len(targets), " ".join(sorted(targets))))

    # Baseline: the unmutated tree builds and every selected test passes.
    ok, bsecs, bout = ninja_build(build, targets, env, args.jobs)
    if not ok:
        raise BadInput("the unmutated scratch tree does not build:\n" + build_error_excerpt(bout))
    log("baseline build %.0f s" % bsecs)
    by_name = {t["name"]: t for t in ctest_tests(build)}  # now that the binaries exist, with their commands
    tests = [by_name[t["name"]] for t in tests]
    missing = [t["name"] for t in tests if not t["command"]]
    if missing:
        raise BadInput("ctest has no command for %s after the build" % ", ".join(missing))
    base = run_tests(tests, args.jobs, {t["name"]: 900 for t in tests})
    failing = {n: r for n, r in base.items() if r["result"] == "fail"}
    if failing:
        raise BadInput("baseline: the unmutated tree fails %d selected test(s): %s" % (
            len(failing), "; ".join("%s: %s" % (n, r["message"][:300]) for n, r in sorted(failing.items()))))
    skipped = sorted(n for n, r in base.items() if r["result"] == "skip")
    tests = [t for t in tests if t["name"] not in skipped]
    if not tests:
        raise BadInput("baseline: every selected test skipped; nothing can kill a mutant")
    timeouts = {n: int(max(60, 5 * r["seconds"] + 30)) for n, r in base.items()}
    base_secs = sum(r["seconds"] for r in base.values())
    log("baseline: %d tests pass (%.0f s of test time)%s" % (len(tests), base_secs,
        "; skipped, dropped: " + ", ".join(skipped) if skipped else ""))

    doc = {
        "tool": "scripts/mutate.py", "complete": False,
        "catalog": os.path.relpath(catalog_path, root) if catalog_path.startswith(root) else catalog_path,
        "tree": {"source": root, "held_at_head": hold, "scratch": tree},
        "reps": args.reps,
        "tests": [t["name"] for t in tests if t["name"] in base_names],
        "tests_named_by_catalog": sorted(t["name"] for t in tests if t["name"] not in base_names),
        "tests_skipped_in_baseline": skipped,
        "baseline": {"build_seconds": round(bsecs, 1),
                     "tests": {n: {"result": r["result"], "seconds": round(r["seconds"], 2)} for n, r in base.items()}},
        "note": "CPU slice: CUDA objects that include a mutated header are kept from the unmutated build "
                "(listed per mutant as cuda_objects_kept); no CPU test runs device code.",
        "mutants": [], "summary": {},
    }
    doc["config"] = {"reps": args.reps, "full_reps": bool(args.full_reps), "tests": doc["tests"],
                     "hinted": {m["id"]: hints[m["id"]] for m in chosen}}
    earlier = {}
    if args.resume:
        earlier = resumable(out_dir, doc["config"])
        log("--resume: %d mutant(s) already measured in %s" % (sum(1 for m in chosen if edit_key(m) in earlier), out_dir))
    results = []
    for i, m in enumerate(chosen, 1):
        if edit_key(m) in earlier:
            r = dict(earlier[edit_key(m)])
            r.pop("equivalent", None)
            if m.get("equivalent"):
                r["equivalent"] = m["equivalent"]
            results.append(r)
            log("[%d/%d] %s: %s (measured before, --resume)" % (i, len(chosen), m["id"], r["status"]))
            continue
        log("[%d/%d] %s (%s, %s)" % (i, len(chosen), m["id"], m["layer"], m["file"]))
        mine = [t for t in tests if t["name"] in base_names or t["name"] in hints[m["id"]]]
        results.append(run_mutant(m, tree, build, env, files, mine, targets, timeouts, args, journal))
        r = results[-1]
        log("    %s%s (build %.0f s, tests %.0f s)%s" % (
            r["status"], " [equivalent]" if m.get("equivalent") else "", r["build"]["seconds"],
            r["test_seconds"], (": killed by " + ", ".join(r["killed_by"])) if r["killed_by"] else ""))
        doc["mutants"] = results
        doc["summary"] = summarize(results, [x["id"] for x in chosen])
        doc["elapsed_seconds"] = round(time.time() - t0, 1)
        write_matrix(out_dir, doc)
    doc["complete"] = True
    path = write_matrix(out_dir, doc)
    s = doc["summary"]
    print_summary(s, results)
    print("kill matrix: %s" % path)
    # A generated mutant that does not compile is no bug a review would meet: listed, not a failure.
    bad = s["survivors"] + s["flaky"] + ([] if args.changed else s["build_errors"])
    return 1 if bad else 0


def edit_key(m):
    """What a measurement depends on in a catalog entry: the id and the edit itself."""
    return hashlib.sha256(json.dumps([m["id"], m["file"], m["find"], m["replace"]]).encode()).hexdigest()[:16]


def resumable(out_dir, config):
    """{edit key: result} of the mutants an earlier run with the same settings measured in OUT."""
    path = os.path.join(out_dir, "kill_matrix.json")
    if not os.path.exists(path):
        return {}
    try:
        with open(path) as f:
            old = json.load(f)
    except (OSError, ValueError) as e:
        raise BadInput("--resume: %s is not readable (%s)" % (path, e))
    if old.get("config") != config:
        raise BadInput("--resume: %s was measured with other settings (reps, tests or hints); "
                       "use another --out or drop --resume" % path)
    return {r["edit"]: r for r in old.get("mutants", []) if r.get("edit")}


def run_mutant(m, tree, build, env, files, tests, targets, timeouts, args, journal):
    rel = m["file"]
    p = os.path.join(tree, rel)
    original = files[rel]
    text = original.decode("utf-8")
    check_snippet(m, text, os.path.join(tree, rel))
    mtime_ns = os.stat(p).st_mtime_ns
    host_objs, cuda_objs = objects_depending_on(build, p)
    entry = {"id": m["id"], "file": rel, "mtime_ns": mtime_ns, "objects": host_objs, "original": text}
    journal.write(entry)
    result = {"id": m["id"], "layer": m["layer"], "file": rel, "why": m["why"], "expected_tests": m["tests"],
              "edit": edit_key(m)}
    if m.get("equivalent"):
        result["equivalent"] = m["equivalent"]
    try:
        with open(p, "wb") as f:
            f.write(text.replace(m["find"], m["replace"], 1).encode("utf-8"))
        os.utime(p, ns=(mtime_ns, mtime_ns))  # only the objects deleted below are rebuilt
        for o in host_objs:
            op = os.path.join(build, o)
            if os.path.exists(op):
                os.unlink(op)
        ok, bsecs, bout = ninja_build(build, targets, env, args.jobs)
        result["build"] = {"ok": ok, "seconds": round(bsecs, 1), "objects_rebuilt": host_objs,
                           "cuda_objects_kept": cuda_objs}
        if not host_objs:
            result["build"]["note"] = "no built object depends on this file: only tests that read it at run time can kill it"
        if not ok:
            result["build"]["error"] = build_error_excerpt(bout)
            result.update({"status": "build_error", "tests": {}, "killed_by": [], "test_seconds": 0.0})
            return result
        t = time.time()
        runs = [run_tests(tests, args.jobs, timeouts)]
        # Only a test that killed in rep 1 can kill in every rep: reps 2.. rerun those (the mutant's
        # status needs no more), or every test when none killed (a survivor's flaky kill shows).
        killers = [t for t in tests if runs[0][t["name"]]["result"] == "fail"]
        again = tests if (args.full_reps or not killers) else killers
        for _ in range(args.reps - 1):
            runs.append(run_tests(again, args.jobs, timeouts))
        result["test_seconds"] = round(time.time() - t, 1)
        record_verdicts(result, runs, m["tests"])
        return result
    finally:
        restore(tree, build, rel, original, mtime_ns, host_objs)
        journal.clear()


def print_summary(s, results):
    print("%-12s %7s %7s %8s %6s %11s %10s" % ("layer", "mutants", "killed", "survived", "flaky",
                                                 "build_error", "equivalent"))
    for layer, c in sorted(s["per_layer"].items()):
        print("%-12s %7d %7d %8d %6d %11d %10d" % (layer, c["mutants"], c["killed"], c["survived"], c["flaky"],
                                                     c["build_error"], c["equivalent"]))
    c = s["totals"]
    print("%-12s %7d %7d %8d %6d %11d %10d" % ("total", c["mutants"], c["killed"], c["survived"], c["flaky"],
                                                 c["build_error"], c["equivalent"]))
    for r in results:
        if r["status"] != "killed":
            tag = " (equivalent: %s)" % r["equivalent"] if r.get("equivalent") else ""
            print("%s: %s%s" % (r["status"], r["id"], tag))
    if s["thin_rule_kills"]:
        print("rule mutants killed by fewer than two independent units (tests, configurations): %s"
              % ", ".join(s["thin_rule_kills"]))
    if s["marked_equivalent_but_killed"]:
        print("marked equivalent in the catalog but killed (the mark is wrong): %s"
              % ", ".join(s["marked_equivalent_but_killed"]))


# ---------------------------------------------------------------------------------------------
# Self-test: the tool on a tiny CMake project (no CUDA, seconds): a killed mutant exits 0, a
# survivor behind a weak test exits 1, a snippet not found and an unknown id exit 2, and the
# checkout is never touched.

SELFTEST_FILES = {
    "CMakeLists.txt": """cmake_minimum_required(VERSION 3.20)
project(mini LANGUAGES CXX)
enable_testing()
add_library(mini STATIC mini.cpp)
add_executable(test_strong test_strong.cpp)
target_link_libraries(test_strong mini)
add_executable(test_weak test_weak.cpp)
target_link_libraries(test_weak mini)
add_test(NAME test_strong COMMAND test_strong)
add_test(NAME test_weak COMMAND test_weak)
set_tests_properties(test_strong test_weak PROPERTIES LABELS cpu)
""",
    "mini.h": "#pragma once\nfloat lerp_beta(float beta, float m, float g);\n",
    "mini.cpp": '#include "mini.h"\nfloat lerp_beta(float beta, float m, float g) { return beta * m + (1.0f - beta) * g; }\n',
    "test_strong.cpp": '#include "mini.h"\n#include <cstdio>\nint main() { float r = lerp_beta(0.9f, 1.0f, 0.0f);\n'
                       '  if (r != 0.9f) { std::printf("mini.cpp:1: Failure\\nExpected 0.9, got %g\\n", r);\n'
                       '    std::printf("FH_FAILED_UNIT: m=1 g=0\\nFH_FAILED_UNIT: m=1 g=0 again\\n"); return 1; }\n'
                       '  return 0; }\n',
    "test_weak.cpp": '#include "mini.h"\nint main() { return lerp_beta(0.5f, 1.0f, 1.0f) == 1.0f ? 0 : 1; }\n',
}


# The change --changed's self-test makes: one added line of code (two operators) and its test.
SELFTEST_CHANGE = "float add_or_sub(float a, float b, bool add) { return add ? a + b : a - b; }\n"
SELFTEST_CHANGE_TEST = '#include <cstdlib>\nfloat add_or_sub(float a, float b, bool add);\n' \
                       'static int adds = add_or_sub(3.0f, 1.0f, true) == 4.0f ? 0 : (std::printf("add broken\\n"), std::exit(1), 1);\n'


def selftest(args):
    base = tempfile.mkdtemp(prefix="fh-mutate-selftest.")
    try:
        proj = os.path.join(base, "proj")
        os.makedirs(proj)
        for rel, text in SELFTEST_FILES.items():
            with open(os.path.join(proj, rel), "w") as f:
                f.write(text)
        catalog = {"mutants": [
            {"id": "beta_swapped", "layer": "rules", "file": "mini.cpp", "find": "return beta * m + (1.0f - beta) * g;",
             "replace": "return (1.0f - beta) * m + beta * g;", "why": "beta <-> 1 - beta", "tests": ["test_strong"]},
            {"id": "missing", "layer": "rules", "file": "mini.cpp", "find": "no such text", "replace": "x",
             "why": "a stale snippet", "tests": []}]}
        cat = os.path.join(base, "catalog.json")
        with open(cat, "w") as f:
            json.dump(catalog, f)
        before = open(os.path.join(proj, "mini.cpp")).read()
        me = [sys.executable, os.path.abspath(__file__), "--root", proj, "--catalog", cat,
              "--scratch", os.path.join(base, "scratch"), "--jobs", "2"]
        checks = []

        def call(extra, want, what):
            r = subprocess.run(me + extra, capture_output=True, text=True)
            ok = r.returncode == want
            checks.append(ok)
            print("selftest: %-58s exit %d (want %d) %s" % (what, r.returncode, want, "ok" if ok else "FAILED"))
            if not ok:
                print(r.stdout[-2000:] + r.stderr[-2000:])
            return r

        # --changed's operators: a string concatenation is not mutated (it would not compile).
        ops = {line: [op for op, _ in mutate_line(line)] for line in (
            '  name = a + "_vs_" + b;', '  msg = "step " + std::to_string(s);', '  n = rows + cols;')}
        ok = list(ops.values()) == [[], [], ["plus"]]
        checks.append(ok)
        print("selftest: %-58s %s" % ("--changed: no '-' for a string '+'", "ok" if ok else "FAILED %s" % ops))
        call(["--only", "nosuch", "--out", os.path.join(base, "o0")], 2, "unknown id")
        call(["--only", "missing", "--out", os.path.join(base, "o0")], 2, "snippet not found")
        call(["--only", "beta_swapped", "--tests", "^test_strong$", "--reps", "2", "--out", os.path.join(base, "o1")],
             0, "killed by the strong test")
        def matrix(sub):
            try:
                with open(os.path.join(base, sub, "kill_matrix.json")) as f:
                    return json.load(f)
            except (OSError, ValueError):
                return {"complete": False, "mutants": [{"status": "none", "tests": {}}], "summary": {"survivors": []}}

        m1 = matrix("o1")
        r1 = m1["mutants"][0]
        strong = r1["tests"].get("test_strong", {})
        ok = (m1["complete"] and r1["status"] == "killed" and strong.get("kills") == 2
              and "Expected 0.9" in strong.get("message", ""))
        checks.append(ok)
        print("selftest: %-58s %s" % ("matrix: killed 2 of 2 reps, with the failure's message", "ok" if ok else "FAILED"))
        ok = (r1.get("kill_units") == ["test_strong: m=1 g=0", "test_strong: m=1 g=0 again"]
              and m1["summary"].get("thin_rule_kills") == [])
        checks.append(ok)
        print("selftest: %-58s %s" % ("matrix: the test's two reported units, not thin", "ok" if ok else "FAILED"))
        call(["--only", "beta_swapped", "--tests", "^test_weak$", "--no-hinted", "--reps", "1", "--out", os.path.join(base, "o2")],
             1, "survives the weak test")
        m2 = matrix("o2")
        ok = m2["summary"]["survivors"] == ["beta_swapped"]
        checks.append(ok)
        print("selftest: %-58s %s" % ("matrix: listed as a survivor", "ok" if ok else "FAILED"))
        ok = open(os.path.join(proj, "mini.cpp")).read() == before and \
            open(os.path.join(base, "scratch", "tree", "mini.cpp")).read() == before
        checks.append(ok)
        print("selftest: %-58s %s" % ("checkout and scratch copy unmutated afterwards", "ok" if ok else "FAILED"))
        # --changed: a commit, then a change that adds one line; its `+` mutant is killed (test_strong
        # adds), its `-` mutant survives (nothing subtracts), and nothing outside the change is mutated.
        git = ["git", "-C", proj, "-c", "user.name=selftest", "-c", "user.email=selftest@localhost"]
        for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
            subprocess.run(git + cmd, check=True, capture_output=True)
        with open(os.path.join(proj, "mini.cpp"), "a") as f:
            f.write(SELFTEST_CHANGE)
        with open(os.path.join(proj, "test_strong.cpp"), "a") as f:
            f.write(SELFTEST_CHANGE_TEST)
        call(["--changed", "HEAD", "--tests", "^test_strong$", "--reps", "1", "--out", os.path.join(base, "o3")],
             1, "--changed: one mutant killed, one survives")
        m3 = matrix("o3")
        got = {r["id"]: r["status"] for r in m3["mutants"]}
        ok = got == {"changed.mini.3.plus": "killed", "changed.mini.3.minus": "survived"}
        checks.append(ok)
        print("selftest: %-58s %s" % ("--changed: the added line's two mutants only" + ("" if ok else " (got %s)" % got),
                                      "ok" if ok else "FAILED"))
        call(["--changed", "HEAD~0", "--only", "nosuch", "--out", os.path.join(base, "o4")], 2, "--changed: unknown id")
        return 0 if all(checks) else 1
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


def main(argv):
    ap = argparse.ArgumentParser(
        prog="mutate.py", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Mutation testing of forge-harness's CPU-reachable layers: applies each catalog mutant "
                    "to a scratch copy of the tree, builds, runs the CPU tests --reps times, writes the kill matrix.",
        epilog="exit: 0 every mutant killed in all reps or marked equivalent; 1 a survivor, a flaky kill or a "
               "mutant that does not build; 2 bad usage or input (nothing measured).")
    ap.add_argument("--catalog", default=DEFAULT_CATALOG, help="the catalog (default: %(default)s)")
    ap.add_argument("--only", help="mutant ids, comma separated")
    ap.add_argument("--changed", metavar="BASE",
                    help="mutate the lines the change BASE..working tree adds or modifies in host production code "
                         "(relational, equality, logical, + / - operators, boolean literals) instead of the catalog; "
                         "a generated mutant that does not compile is listed, not a failure")
    ap.add_argument("--max-mutants", type=int, default=30,
                    help="with --changed: at most this many, an evenly spaced subset (default %(default)s; 0: all)")
    ap.add_argument("--layer", help="only the mutants of this layer")
    ap.add_argument("--tests", help="regex over the CPU-labelled CTest names to run (default: every CPU test "
                                    "without a measured COST, i.e. all but the slowest, and not forge_bench_no_gpu)")
    ap.add_argument("--exclude-tests", help="regex of CTest names to leave out (default: %s when --tests is not given)"
                    % DEFAULT_EXCLUDE)
    ap.add_argument("--no-hinted", action="store_true",
                    help="run only the --tests set, not also the tests each mutant's catalog entry names")
    ap.add_argument("--reps", type=int, default=3, help="test runs per mutant, to expose flaky kills (default 3)")
    ap.add_argument("--out", help="folder for kill_matrix.json (default: SCRATCH/out)")
    ap.add_argument("--scratch", default=DEFAULT_SCRATCH, help="persistent scratch folder: tree copy and build "
                                                               "(default: %(default)s)")
    ap.add_argument("--hold", help="path prefixes (comma separated) taken from HEAD instead of the working tree, "
                                   "e.g. folders someone is editing right now")
    ap.add_argument("--no-sync", action="store_true",
                    help="measure the scratch tree as it is (a fixed snapshot while others edit the checkout)")
    ap.add_argument("--sync-only", metavar="PREFIXES",
                    help="like --no-sync, but copy these paths (comma separated) from the checkout first")
    ap.add_argument("--full-reps", action="store_true",
                    help="rerun every test in every rep (default: reps 2.. rerun the tests that killed in rep 1, "
                         "or every test when none did)")
    ap.add_argument("--resume", action="store_true",
                    help="keep the mutants OUT/kill_matrix.json already measured with the same settings, run the rest")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="build and test jobs (default: the cores)")
    ap.add_argument("--root", default=DEFAULT_ROOT, help=argparse.SUPPRESS)
    ap.add_argument("--merge", nargs=2, metavar=("BASE", "PART"),
                    help="write --out/kill_matrix.json: the complete matrix BASE with the mutants a later run PART "
                         "measured (the same catalog) in place of its rows; nothing built")
    ap.add_argument("--list", action="store_true", help="print the catalog and exit")
    ap.add_argument("--check-catalog", action="store_true",
                    help="check the catalog against the tree (every snippet exactly once), build nothing")
    ap.add_argument("--selftest", action="store_true",
                    help="the tool on a tiny CMake project: kill, survivor, bad input (seconds, no CUDA)")
    ap.add_argument("--keep", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    def on_term(signum, frame):  # SIGTERM: undo the mutant (the finally blocks run), then exit 143
        raise Terminated()

    signal.signal(signal.SIGTERM, on_term)
    try:
        if args.selftest:
            return selftest(args)
        if args.merge:
            if not args.out:
                raise BadInput("--merge needs --out")
            s = merge_matrices(args.merge[0], args.merge[1], args.out, "scripts/mutate.py", ("catalog",),
                               load_catalog(args.catalog if os.path.isabs(args.catalog)
                                            else os.path.join(os.path.abspath(args.root), args.catalog)))["summary"]
            return 1 if s["survivors"] + s["flaky"] + s["build_errors"] else 0
        return run(args)
    except BadInput as e:
        log(str(e))
        return 2
    except KeyboardInterrupt:
        log("interrupted; the next run undoes a mutant left applied (journal)")
        return 130
    except Terminated:
        log("terminated (SIGTERM); the mutant in hand was undone; --resume carries on")
        return 143
    except Exception:  # a bug in the tool, not a verdict on the suites
        import traceback
        traceback.print_exc()
        log("internal error (exit 3); the next run undoes a mutant left applied (journal)")
        return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
