#!/usr/bin/env python3
"""The hostile-input re-run (CTest hostile_inputs): several hundred bad or edge inputs against the
built binaries (forge-verify, its diff and external-cases subcommands, forge-model-step) and the
scripts, over every input surface: option values, the HDF5 results and cases files, the four JSON
inputs, reports given to diff and to the page, and every output path.

Each case states its expected outcome. A refusal must exit 2 with one stderr line naming the file
(or option) and the field, no traceback, within 30 s, without a signal, and leave its folder as it
was (no output, no temporary, no existing file replaced: name, type, size, mtime, inode and
SHA-256 compared). A control case holds a valid input and must be accepted (exit 0 or 1; 4 where
a GPU is needed), so that refusing everything cannot pass.

Prints a Markdown table per surface on stdout, then every failing case with its command; exit 1
when any case fails, 2 on bad usage, 77 (skipped) without h5py.

Usage: /usr/bin/python3 scripts/hostile_inputs.py BUILD_DIR [--only SURFACE] [--list] [--jobs N]
Planted defect: FH_HOSTILE_PLANT=control_refused expects exit 2 from every control case, so the
run must fail on each of them."""
import argparse
import hashlib
import json
import os
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

TIMEOUT_S = 30
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, "scripts")
PLANT = os.environ.get("FH_HOSTILE_PLANT", "")

try:
    import h5py
    import numpy as np
except ImportError:
    print("hostile_inputs: needs h5py and numpy (Debian: python3-h5py); not run", file=sys.stderr)
    sys.exit(77)


class Case:
    """One hostile (or control) input. argv runs in the case's own folder; names must all appear on
    one stderr line of a refusal; accept_rc is the set of exit codes of an accepted control."""

    def __init__(self, surface, name, argv, folder, names=(), accept_rc=None, env=None,
                 unprivileged=False, may_write=False):
        self.surface, self.name, self.argv, self.folder = surface, name, argv, folder
        self.names = [n for n in names if n]
        self.accept_rc = accept_rc
        self.env = env or {}
        self.unprivileged = unprivileged  # run without root's permission override
        self.may_write = may_write  # a runner that records its refusal in its OUTDIR
        self.outcome, self.left, self.detail, self.rc, self.stderr = "", "", "", None, ""


class Suite:
    """The case list and the files it needs, all under one temporary folder."""

    def __init__(self, build, tmp):
        self.build, self.tmp = build, tmp
        self.fv = os.path.join(build, "forge-verify")
        self.fms = os.path.join(build, "forge-model-step")
        self.py = sys.executable
        self.base = os.path.join(tmp, "base")
        os.makedirs(self.base)
        self.cases = []
        self.n = 0

    def folder(self):
        self.n += 1
        d = os.path.join(self.tmp, "c%04d" % self.n)
        os.makedirs(d)
        return d

    def add(self, surface, name, argv, folder, names=(), **kw):
        self.cases.append(Case(surface, name, argv, folder, names, **kw))

    def control(self, surface, name, argv, folder, rc=(0, 1), **kw):
        self.cases.append(Case(surface, name, argv, folder, accept_rc=set(rc), **kw))


def sh(argv, cwd=None, env=None):
    r = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
    if r.returncode != 0:
        sys.exit("hostile_inputs: could not make a base file: %s: exit %d: %s"
                 % (" ".join(argv), r.returncode, r.stderr.decode(errors="replace")[-400:]))


def put(path, data):
    with open(path, "wb") as f:
        f.write(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)
    return path


def h5copy_edit(src, dst, edit):
    """A copy of an HDF5 file with one edit made through the HDF5 API."""
    shutil.copyfile(src, dst)
    with h5py.File(dst, "r+") as f:
        edit(f)
    return dst


def make_base(s):
    """Valid files from the project's own tools: the CI cases file, numpy_producer's results of
    both roles, a small real report, and the JSON inputs kept in the checkout."""
    b = s.base
    sh([s.fv, "external-cases", "--set", "ci", os.path.join(b, "cases.h5")])
    for role in ("fused", "two_phase"):
        sh([s.py, os.path.join(SCRIPTS, "numpy_producer.py"), os.path.join(b, "cases.h5"),
            os.path.join(b, role + ".h5"), "--role", role])
    sh([s.fv, "--quiet", "--jobs", "1", "--claim", "int8_codec_bound,eq6_memory_model,prop4_int8",
        "--report", os.path.join(b, "report.h5")], cwd=b)
    with h5py.File(os.path.join(b, "cases.h5"), "r") as f:
        s.case_kind = {k: f["cases"][k].attrs["kind"] for k in f["cases"]}
        s.case_kind = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in s.case_kind.items()}
    s.adamw = sorted(k for k, v in s.case_kind.items() if v == "adamw")[0]
    s.probe = sorted(k for k, v in s.case_kind.items() if v == "order_probe")[0]
    s.int8 = sorted(k for k, v in s.case_kind.items() if v == "adamw_int8")[0]
    shutil.copyfile(os.path.join(ROOT, "scripts", "testdata", "bench_sample.json"), os.path.join(b, "bench.json"))
    shutil.copyfile(os.path.join(ROOT, "docs", "model_step", "json", "harness_fused_bf16.json"),
                    os.path.join(b, "model_step.json"))
    shutil.copyfile(os.path.join(ROOT, "docs", "model_step", "json", "torch_fused_llama8b.json"),
                    os.path.join(b, "torch_model.json"))
    put(os.path.join(b, "kill_matrix.json"), json.dumps({
        "tool": "scripts/mutate.py", "complete": True, "reps": 3, "mutants": [
            {"id": "m_killed", "layer": "rules", "file": "kernels/rules/adamw.h", "why": "beta swapped",
             "status": "killed", "killed_by": ["test_rules_vs_mpfr"], "kill_units": ["a", "b"],
             "tests": {"test_rules_vs_mpfr": {"verdict": "killed", "message": "rel err 0.3 > 1e-6"}}},
            {"id": "m_lives", "layer": "formats", "status": "survived", "killed_by": []}]}))
    put(os.path.join(b, "text.h5"), "not an HDF5 file\n")
    os.mkfifo(os.path.join(b, "fifo"))
    os.mkdir(os.path.join(b, "dir"))
    os.symlink("loop_b", os.path.join(b, "loop_a"))
    os.symlink("loop_a", os.path.join(b, "loop_b"))
    for name in os.listdir(b):
        p = os.path.join(b, name)
        if os.path.isfile(p) and not os.path.islink(p):
            os.chmod(p, 0o444)  # a write through any case's bug shows in the global check


def bp(s, name):
    return os.path.join(s.base, name)


# Files that are not what their reader wants, shared by every file input (name, path, words).
def common_bad_files(s, d, stem):
    return [
        ("missing file", os.path.join(d, stem + ".absent"), []),
        ("empty file", put(os.path.join(d, stem + ".empty"), b""), []),
        ("a directory", bp(s, "dir"), []),
        ("a FIFO", bp(s, "fifo"), []),
        ("/dev/zero", "/dev/zero", []),
        ("a symlink loop", bp(s, "loop_a"), []),
    ]


# ---------------------------------------------------------------------------- forge-verify options
def option_cases(s):
    sv = "options"
    bad = {
        "--shape": ["0x1x1", "1x1", "axbxc", "-1x2x3", "2147483648x1x1", "65536x65536x1", "1x1x1048577",
                    "1x1x0", "", "1x1x1x1", " 1x1x1", "1e3x1x1", "1x1x99999999999999999999", "8x8x8 "],
        "--steps": ["0", "-1", "10001", "abc", "1.5", "", "99999999999999999999", "0x10000", " 5"],
        "--seed": ["-1", "18446744073709551616", "0x", "0xg", "abc", "", "1e3", "0x10000000000000000"],
        "--samples": ["0", "10000001", "x", "-5", ""],
        "--rule": ["nosuch", "", "adamw,,lion", "ADAMW", "adamw,"],
        "--format": ["int4", "", "fp32,,bf16"],
        "--store": ["x", "", "bf16"],
        "--jobs": ["0", "257", "-1", "abc", "", "1.0"],
        "--claim": ["nosuch", "", "int8_codec_bound,nosuch", ","],
    }
    honoured_by = {"--shape": "prop1_twin", "--steps": "prop1_twin", "--seed": "int8_codec_bound",
                   "--samples": "rules_vs_mpfr", "--rule": "prop1_twin", "--format": "prop1_twin",
                   "--store": "prop1_twin", "--jobs": "int8_codec_bound", "--claim": None}
    for opt, values in bad.items():
        for v in values:
            d = s.folder()
            argv = [s.fv, "--quiet", opt, v]
            if opt != "--claim":
                argv += ["--claim", honoured_by[opt]]
            if honoured_by[opt] == "prop1_twin":
                # the smallest run, so that a wrongly accepted value costs little time
                for o2, v2 in (("--rule", "sgd"), ("--format", "fp32"), ("--store", "fp32_master"),
                               ("--steps", "1"), ("--shape", "4x4x4")):
                    if o2 != opt:
                        argv += [o2, v2]
            if opt != "--jobs":
                argv += ["--jobs", "1"]
            s.add(sv, "%s %r" % (opt, v), argv, d, [opt.lstrip("-")])
    hypers = ["lr=nan", "lr=inf", "lr=", "=1", "lr", "nosuch=1", "lr=1e999", "beta1=abc", "lr=1x", "lr=-inf",
              "eps=0x1p", "lr=1,2"]
    for h in hypers:
        s.add(sv, "--hyper %r" % h, [s.fv, "--quiet", "--jobs", "1", "--rule", "adamw", "--claim", "rules_vs_mpfr",
                                     "--samples", "1", "--hyper", h], s.folder(), [h.split("=")[0] or "--hyper"])
    for opt in ("--shape", "--steps", "--seed", "--claim", "--report", "--json", "--external", "--bench-json", "--hyper"):
        s.add(sv, "%s without its value" % opt, [s.fv, "--quiet", "--jobs", "1", "--claim", "int8_codec_bound", opt],
              s.folder(), [opt])
    s.add(sv, "unknown option", [s.fv, "--quiet", "--frobnicate"], s.folder(), ["--frobnicate"])
    s.add(sv, "a positional argument", [s.fv, "--quiet", "stray.h5", "--claim", "int8_codec_bound"], s.folder(), ["stray.h5"])
    s.add(sv, "--external without --external-cases", [s.fv, "--quiet", "--external", bp(s, "fused.h5")], s.folder(),
          ["--external-cases"])
    s.add(sv, "--external-cases without --external", [s.fv, "--quiet", "--external-cases", bp(s, "cases.h5"),
                                                       "--claim", "ext_prop1"], s.folder(), ["--external"])
    # Controls: edge values that are in range.
    s.control(sv, "--seed 0x10 (hex)", [s.fv, "--quiet", "--jobs", "1", "--claim", "int8_codec_bound", "--seed", "0x10"], s.folder())
    s.control(sv, "--seed 2^64-1", [s.fv, "--quiet", "--jobs", "1", "--claim", "int8_codec_bound", "--seed",
                                    "18446744073709551615"], s.folder())
    s.control(sv, "--shape 1x1x1 --steps 1", [s.fv, "--quiet", "--jobs", "1", "--claim", "prop1_twin", "--rule", "sgd",
                                              "--format", "fp32", "--store", "fp32_master", "--shape", "1x1x1",
                                              "--steps", "1"], s.folder())
    s.control(sv, "--hyper lr=0", [s.fv, "--quiet", "--jobs", "1", "--claim", "rules_vs_mpfr", "--rule", "adamw",
                                    "--samples", "1", "--hyper", "lr=0"], s.folder())


# ---------------------------------------------------------------------------- HDF5 producer files
def results_cases(s):
    sv = "--external results file"
    F, C, TP = bp(s, "fused.h5"), bp(s, "cases.h5"), bp(s, "two_phase.h5")

    def judge(path, claim="ext_prop1,ext_corollary1,ext_order_probe,ext_int8", extra=()):
        return [s.fv, "--quiet", "--jobs", "1", "--claim", claim, "--external", path, "--external", TP,
                "--external-cases", C, *extra]

    for what, path, words in common_bad_files(s, s.folder(), "results"):
        s.add(sv, what, judge(path), os.path.dirname(path) if what in ("missing file", "empty file") else s.folder(),
              [os.path.basename(path)] + words)
    d = s.folder()
    raw = open(F, "rb").read()
    for n in (8, 100, 1024, len(raw) // 2, len(raw) - 1):
        p = put(os.path.join(d, "trunc_%d.h5" % n), raw[:n])
        s.add(sv, "truncated to %d bytes" % n, judge(p), d, [os.path.basename(p)])
    s.add(sv, "not HDF5 (text)", judge(bp(s, "text.h5")), s.folder(), ["text.h5"])
    A, K = s.adamw, s.probe

    def e(name, edit, words, claim=None):
        d = s.folder()
        p = h5copy_edit(F, os.path.join(d, "r.h5"), edit)
        s.add(sv, name, judge(p, **({"claim": claim} if claim else {})), d, ["r.h5"] + words)

    def seta(key, val, where="/"):
        return lambda f: f[where].attrs.__setitem__(key, val)

    def dela(key, where="/"):
        return lambda f: f[where].attrs.__delitem__(key)

    i64 = np.int64
    e("interface version 2", seta("fh_external_interface", i64(2)), ["fh_external_interface"])
    e("interface version 0", seta("fh_external_interface", i64(0)), ["fh_external_interface"])
    e("interface version -1", seta("fh_external_interface", i64(-1)), ["fh_external_interface"])
    e("interface version a string", seta("fh_external_interface", "1"), ["fh_external_interface"])
    e("interface version a float", seta("fh_external_interface", 1.0), ["fh_external_interface"])
    e("interface version an array", seta("fh_external_interface", np.array([1, 1], dtype=i64)), ["fh_external_interface"])
    e("interface version missing", dela("fh_external_interface"), ["fh_external_interface"])
    e("file_kind cases", seta("file_kind", "cases"), ["file_kind"])
    e("file_kind missing", dela("file_kind"), ["file_kind"])
    e("file_kind an integer", seta("file_kind", i64(1)), ["file_kind"])
    e("cases_id of another set", seta("cases_id", "forge-1-0000000"), ["cases_id"])
    e("cases_id missing", dela("cases_id"), ["cases_id"])
    e("cases_id an integer", seta("cases_id", i64(7)), ["cases_id"])
    e("role bogus", seta("role", "bogus"), ["role"])
    e("role missing", dela("role"), ["role"])
    e("path with a slash", seta("path", "a/b"), ["path"])
    e("path empty", seta("path", ""), ["path"])
    e("path 256 characters", seta("path", "p" * 256), ["path"])
    e("path not UTF-8", seta("path", np.bytes_(b"\xff\xfe")), ["path"])
    e("producer missing", dela("producer"), ["producer"])
    e("order_model bogus", seta("order_model", "bogus"), ["order_model"])
    for key, vals in (("order_k_group", [2 ** 62, 2 ** 31, 0, -1, 65]),
                      ("order_split_k", [2 ** 40, 0, 65537]),
                      ("order_split_round", [2 ** 40, 0, 65537])):
        for v in vals:
            def edit(f, key=key, v=v):
                f.attrs["order_model"] = "mma_chain"
                for k2 in ("order_k_group", "order_split_k", "order_split_round"):
                    f.attrs[k2] = i64(16 if k2 == "order_k_group" else 1)
                f.attrs[key] = i64(v)
            e("%s = %d" % (key, v), edit, [key])
    e("order_k_group a float", lambda f: (f.attrs.__setitem__("order_model", "mma_chain"),
                                          f.attrs.__setitem__("order_k_group", 16.5)), ["order_k_group"])
    e("/meta key with a dash", seta("a-b", "x", "/meta"), ["a-b"])
    e("/meta value an integer", seta("package", i64(3), "/meta"), ["package"])
    e("/meta value not UTF-8", seta("package", np.bytes_(b"\xc3\x28"), "/meta"), ["package"])
    e("/meta key 256 characters", seta("k" * 256, "x", "/meta"), ["/meta"])
    e("status bogus", seta("status", "bogus", "/cases/" + A), [A, "status"])
    e("status missing", dela("status", "/cases/" + A), [A, "status"])
    e("status failed without error", seta("status", "failed", "/cases/" + A), [A, "error"])
    e("error text not UTF-8", lambda f: (f["cases/" + A].attrs.__setitem__("status", "failed"),
                                         f["cases/" + A].attrs.__setitem__("error", np.bytes_(b"oom \xff"))), [A, "error"])
    e("case the cases file does not hold", lambda f: f.copy("cases/" + A, "cases/nosuch_case"), ["nosuch_case"])
    e("case id in capitals", lambda f: f.move("cases/" + A, "cases/" + A.upper()), [A.upper()])
    e("case id with a space", lambda f: f.move("cases/" + A, "cases/a b"), ["a b"])

    def ds(case, name, data=None, shape=None, dtype=None, group=False):
        def edit(f):
            g = f["cases/" + case]
            if name in g:
                del g[name]
            if group:
                g.create_group(name)
            elif data is not None:
                g[name] = data
            elif shape is not None:
                g.create_dataset(name, shape=shape, dtype=dtype)
        return edit

    with h5py.File(F, "r") as f:
        Wshape, Wdt = f["cases/" + A]["W"].shape, f["cases/" + A]["W"].dtype
        Gshape = f["cases/" + K]["G"].shape
    e("W float32 instead of raw bits", ds(A, "W", shape=Wshape, dtype=np.float32), [A, "W"])
    other_width = np.uint32 if Wdt == np.uint16 else np.uint16  # the other weight dtype's raw bits
    e("W in the other weight dtype's width", ds(A, "W", shape=Wshape, dtype=other_width), [A, "W"])
    e("W one step short", ds(A, "W", shape=(Wshape[0] - 1,) + Wshape[1:], dtype=Wdt), [A, "W"])
    e("W transposed", ds(A, "W", shape=(Wshape[0], Wshape[2], Wshape[1]), dtype=Wdt), [A, "W"])
    e("W two-dimensional", ds(A, "W", shape=Wshape[1:], dtype=Wdt), [A, "W"])
    e("W scalar", ds(A, "W", data=np.uint16(1)), [A, "W"])
    e("W missing", ds(A, "W"), [A, "W"])
    e("W a group", ds(A, "W", group=True), [A, "W"])
    e("m missing", ds(A, "m"), [A, "m"])
    e("v wrong shape", ds(A, "v", shape=(1, 1, 1), dtype=Wdt), [A, "v"])
    e("probe G three-dimensional", ds(K, "G", shape=(1,) + Gshape, dtype=np.uint32), [K, "G"])
    e("probe G int64", ds(K, "G", shape=Gshape, dtype=np.int64), [K, "G"])
    e("int8 m_q as uint8", ds(s.int8, "m_q", shape=(1, 1, 1), dtype=np.uint8), [s.int8, "m_q"])
    e("int8 m_scale wrong shape", ds(s.int8, "m_scale", shape=(1, 1, 1), dtype=np.uint32), [s.int8, "m_scale"])
    # Data from other files: never followed.
    d = s.folder()
    other = h5copy_edit(F, os.path.join(d, "other.h5"), lambda f: None)
    p = h5copy_edit(F, os.path.join(d, "r.h5"), lambda f: (f["cases/" + A].__delitem__("W"),
                    f["cases/" + A].__setitem__("W", h5py.ExternalLink("other.h5", "/cases/%s/W" % A))))
    s.add(sv, "W an external link", judge(p), d, ["r.h5", "W"])
    e("W a dangling soft link", lambda f: (f["cases/" + A].__delitem__("W"),
                                           f["cases/" + A].__setitem__("W", h5py.SoftLink("/nowhere"))), [A, "W"])
    e("case group an external link to /etc/passwd", lambda f: (f["cases"].__delitem__(A),
                                                               f["cases"].__setitem__(A, h5py.ExternalLink("/etc/passwd", "/"))), [A])
    nbytes = int(np.prod(Wshape)) * Wdt.itemsize
    for label, target in (("a file of zeros", None), ("/etc/passwd", "/etc/passwd")):
        d = s.folder()
        tgt = target or put(os.path.join(d, "zeros.bin"), b"\0" * nbytes)
        def ext_edit(f, tgt=tgt):
            g = f["cases/" + A]
            del g["W"]
            g.create_dataset("W", shape=Wshape, dtype=Wdt, external=[(tgt, 0, h5py.h5f.UNLIMITED)])
        p = h5copy_edit(F, os.path.join(d, "r.h5"), ext_edit)
        s.add(sv, "W in external raw storage (%s)" % label, judge(p), d, ["r.h5", "W"])

    def vds(f):
        g = f["cases/" + A]
        data = g["W"][()]
        del g["W"]
        f["cases"].create_dataset("hidden_W", data=data)
        lay = h5py.VirtualLayout(shape=Wshape, dtype=Wdt)
        lay[...] = h5py.VirtualSource(f["cases/hidden_W"])
        g.create_virtual_dataset("W", lay)
    e("W a virtual dataset", vds, [A, "W"])
    d = s.folder()
    s.add(sv, "the same results file twice", [s.fv, "--quiet", "--jobs", "1", "--claim", "ext_prop1", "--external", F,
                                              "--external", F, "--external-cases", C], d, ["fused.h5"])
    d = s.folder()
    os.symlink(F, os.path.join(d, "link.h5"))
    s.add(sv, "a results file and a symlink to it", [s.fv, "--quiet", "--jobs", "1", "--claim", "ext_prop1", "--external", F,
                                                     "--external", os.path.join(d, "link.h5"), "--external-cases", C],
          d, ["fused.h5"])
    s.add(sv, "the cases file as a results file", judge(C), s.folder(), ["cases.h5", "file_kind"])
    s.add(sv, "a report as a results file", judge(bp(s, "report.h5")), s.folder(), ["report.h5"])
    s.control(sv, "valid fused and two-phase files", judge(F, "ext_prop1"), s.folder())
    s.control(sv, "valid files, every ext_* claim", judge(F), s.folder())


def cases_file_cases(s):
    sv = "--external-cases cases file"
    F, C, TP = bp(s, "fused.h5"), bp(s, "cases.h5"), bp(s, "two_phase.h5")

    def judge(cases):
        return [s.fv, "--quiet", "--jobs", "1", "--claim", "ext_prop1,ext_corollary1,ext_order_probe,ext_int8",
                "--external", F, "--external", TP, "--external-cases", cases]

    for what, path, words in common_bad_files(s, s.folder(), "cases"):
        s.add(sv, what, judge(path), os.path.dirname(path) if what in ("missing file", "empty file") else s.folder(),
              [os.path.basename(path)] + words)
    raw = open(C, "rb").read()
    d = s.folder()
    for n in (100, len(raw) // 3, len(raw) - 1):
        p = put(os.path.join(d, "trunc_%d.h5" % n), raw[:n])
        s.add(sv, "truncated to %d bytes" % n, judge(p), d, [os.path.basename(p)])
    A, K, Q = s.adamw, s.probe, s.int8

    def e(name, edit, words):
        d = s.folder()
        p = h5copy_edit(C, os.path.join(d, "c.h5"), edit)
        s.add(sv, name, judge(p), d, ["c.h5"] + words)

    def seta(key, val, where="/"):
        return lambda f: f[where].attrs.__setitem__(key, val)

    i64, f64 = np.int64, np.float64
    a = "/cases/" + A
    e("interface version 2", seta("fh_external_interface", i64(2)), ["fh_external_interface"])
    e("file_kind results", seta("file_kind", "results"), ["file_kind"])
    e("cases_id changed", seta("cases_id", "other"), ["cases_id"])
    e("kind bogus", seta("kind", "bogus", a), [A, "kind"])
    for key, v in (("lr", float("nan")), ("lr", float("inf")), ("beta2", float("inf")), ("eps", -1.0),
                   ("beta1", 1.0), ("beta2", 1.5), ("weight_decay", -0.1), ("lr", -1e-3)):
        e("%s = %r" % (key, v), seta(key, f64(v), a), [A, key])
    e("lr a string", seta("lr", "0.001", a), [A, "lr"])
    for key, v in (("out", 0), ("out", 2 ** 31), ("in", -1), ("tokens", 0), ("steps", 0), ("steps", 10001),
                   ("first_step", 0), ("first_step", 2 ** 31)):
        e("%s = %d" % (key, v), seta(key, i64(v), a), [A, key])
    e("out*in*steps overflowing int64", lambda f: [f[a].attrs.__setitem__(k, i64(v)) for k, v in
                                                   (("out", 2 ** 31 - 1), ("in", 2 ** 31 - 1), ("steps", 10000))], [A])
    e("out = in = 65536 (W0 implies 8 GiB)", lambda f: [f[a].attrs.__setitem__(k, i64(65536)) for k in ("out", "in")], [A])
    e("weight_dtype fp16", seta("weight_dtype", "fp16", a), [A, "weight_dtype"])
    e("state_dtype bogus", seta("state_dtype", "bogus", a), [A, "state_dtype"])
    e("qblock 0", seta("qblock", i64(0), "/cases/" + Q), [Q, "qblock"])
    e("qblock 3 (does not divide in)", seta("qblock", i64(3), "/cases/" + Q), [Q, "qblock"])
    e("qblock 2^62", seta("qblock", i64(2 ** 62), "/cases/" + Q), [Q, "qblock"])
    e("pair_i out of range", lambda f: f["cases/" + K + "/pair_i"].__setitem__(0, 2 ** 40), [K, "pair_i"])
    e("pair_i negative", lambda f: f["cases/" + K + "/pair_i"].__setitem__(0, -1), [K, "pair_i"])

    def reshape(case, name, shape=None, dtype=None):
        def edit(f):
            g = f["cases/" + case]
            old = g[name]
            sh_, dt = shape or old.shape, dtype or old.dtype
            del g[name]
            g.create_dataset(name, shape=sh_, dtype=dt)
        return edit
    with h5py.File(C, "r") as f:
        Xs = f[a]["X"].shape
    e("X float32", reshape(A, "X", dtype=np.float32), [A, "X"])
    e("X one token short", reshape(A, "X", shape=(Xs[0], Xs[1] - 1, Xs[2])), [A, "X"])
    e("dY wrong shape", reshape(A, "dY", shape=(1, 1, 1)), [A, "dY"])
    e("W0 missing", lambda f: f[a].__delitem__("W0"), [A, "W0"])
    e("G missing", lambda f: f[a].__delitem__("G"), [A, "G"])
    e("X an external link", lambda f: (f[a].__delitem__("X"), f[a].__setitem__("X", h5py.ExternalLink(F, "/x"))), [A, "X"])
    e("case id with a capital", lambda f: f.move(a, "/cases/Bad"), ["Bad"])
    s.control(sv, "the valid cases file", judge(C), s.folder())


def external_cases_cmd(s):
    sv = "external-cases subcommand"
    fv = [s.fv, "external-cases"]
    for args, words in ((["--set", "bogus", "o.h5"], ["--set"]), (["--set", "", "o.h5"], ["--set"]),
                        (["--set", "ci"], ["output"]), (["--set", "ci", "--seed", "-1", "o.h5"], ["--seed"]),
                        (["--set", "ci", "--seed", "abc", "o.h5"], ["--seed"]),
                        (["--set", "ci", "--seed", "18446744073709551616", "o.h5"], ["--seed"]),
                        (["o.h5"], ["--set"]), (["--set", "ci", "a.h5", "b.h5"], ["b.h5"]),
                        (["--set", "ci", "--frobnicate", "o.h5"], ["--frobnicate"]), (["--set"], ["--set"])):
        s.add(sv, " ".join(args) or "(none)", fv + args, s.folder(), words)
    output_path_cases(s, sv, lambda out, force: fv + ["--set", "ci"] + (["--force"] if force else []) + [out],
                      inputs=())
    s.control(sv, "a fresh OUT", fv + ["--set", "ci", "fresh.h5"], s.folder(), rc=(0,))


# ---------------------------------------------------------------------------- output paths
def output_path_cases(s, sv, make_argv, inputs, label="", ext="out"):
    """Every refused output: make_argv(out, force) -> argv. inputs: paths the command reads (an
    output equal to one of them, also through a hard link or another spelling, is refused)."""
    L = label + " " if label else ""
    d = s.folder()
    p = put(os.path.join(d, "exists." + ext), "previous\n")
    s.add(sv, L + "output exists, no --force", make_argv(p, False), d, ["exists." + ext])
    d = s.folder()
    os.mkdir(os.path.join(d, "isdir"))
    s.add(sv, L + "output is a directory", make_argv(os.path.join(d, "isdir"), True), d, ["isdir"])
    d = s.folder()
    os.mkfifo(os.path.join(d, "fifo." + ext))
    s.add(sv, L + "output is a FIFO", make_argv(os.path.join(d, "fifo." + ext), True), d, ["fifo." + ext])
    d = s.folder()
    os.symlink(os.path.join(d, "nowhere"), os.path.join(d, "dangling." + ext))
    s.add(sv, L + "output is a dangling symlink", make_argv(os.path.join(d, "dangling." + ext), True), d,
          ["dangling." + ext])
    d = s.folder()
    put(os.path.join(d, "target.txt"), "target\n")
    os.symlink(os.path.join(d, "target.txt"), os.path.join(d, "link." + ext))
    s.add(sv, L + "output is a symlink to a file", make_argv(os.path.join(d, "link." + ext), True), d, ["link." + ext])
    d = s.folder()
    s.add(sv, L + "output folder missing", make_argv(os.path.join(d, "no", "new." + ext), True), d, ["no"])
    d = s.folder()
    os.mkdir(os.path.join(d, "ro"))
    os.chmod(os.path.join(d, "ro"), 0o555)
    s.add(sv, L + "output folder read-only", make_argv(os.path.join(d, "ro", "new." + ext), True), d, ["ro"],
          unprivileged=True)
    for i, src in enumerate(inputs):
        d = s.folder()
        mine = os.path.join(d, "in_" + os.path.basename(src))
        shutil.copyfile(src, mine)
        os.link(mine, os.path.join(d, "hard." + ext))
        s.add(sv, L + "output is input %d" % i, make_argv(mine, True, {src: mine}), d, [os.path.basename(mine)])
        d = s.folder()
        mine = os.path.join(d, "in_" + os.path.basename(src))
        shutil.copyfile(src, mine)
        os.mkdir(os.path.join(d, "sub"))
        other = os.path.join(d, "sub", "..", os.path.basename(mine))
        s.add(sv, L + "output is input %d by another spelling" % i, make_argv(other, True, {src: mine}), d,
              [os.path.basename(mine)])
        d = s.folder()
        mine = os.path.join(d, "in_" + os.path.basename(src))
        shutil.copyfile(src, mine)
        os.link(mine, os.path.join(d, "hard." + ext))
        s.add(sv, L + "output is input %d through a hard link" % i, make_argv(os.path.join(d, "hard." + ext), True,
                                                                            {src: mine}), d, ["hard." + ext])


def report_output_cases(s):
    sv = "forge-verify outputs"
    base = [s.fv, "--quiet", "--jobs", "1", "--claim", "int8_codec_bound"]
    for opt in ("--report", "--json", "--junit"):
        def mk(out, force, swap=None, opt=opt):
            return base + [opt, out] + (["--force"] if force else [])
        output_path_cases(s, sv, mk, (), label=opt)
    bench = bp(s, "bench.json")

    def with_input(opt_out, opt_in, src):
        def mk(out, force, swap=None):
            inp = (swap or {}).get(src, src)
            return base + [opt_in, inp, opt_out, out] + (["--force"] if force else [])
        return mk
    output_path_cases(s, sv, with_input("--report", "--bench-json", bench), [bench], label="--report vs --bench-json")
    output_path_cases(s, sv, with_input("--json", "--bench-json", bench), [bench], label="--json vs --bench-json")
    d = s.folder()
    put(os.path.join(d, "r.h5"), "previous\n")
    s.add(sv, "--json equals --report (same string)", base + ["--report", "r.h5", "--json", "r.h5", "--force"], d, ["r.h5"])
    d = s.folder()
    put(os.path.join(d, "r.h5"), "previous\n")
    s.add(sv, "--json equals --report (./ spelling)", base + ["--report", "r.h5", "--json", "./r.h5", "--force"], d, ["r.h5"])
    d = s.folder()
    s.add(sv, "--junit equals --json (fresh)", base + ["--json", "o.json", "--junit", "o.json"], d, ["o.json"])
    s.add(sv, "--report /dev/null", base + ["--report", "/dev/null", "--force"], s.folder(), ["/dev/null"])
    d = s.folder()
    s.add(sv, "--report name of 300 characters", base + ["--report", "n" * 300 + ".h5"], d, ["report"])
    s.add(sv, "--report empty", base + ["--report", ""], s.folder(), ["--report"])
    d = s.folder()
    s.control(sv, "fresh --report, --json and --junit", base + ["--report", "r.h5", "--json", "r.json", "--junit", "r.xml"], d)
    d = s.folder()
    put(os.path.join(d, "r.h5"), "previous\n")
    s.control(sv, "existing --report with --force", base + ["--report", "r.h5", "--force"], d)


# ---------------------------------------------------------------------------- JSON inputs
def json_bad(text_valid):
    """Classes of bad JSON common to the four readers: (name, bytes, words)."""
    return [
        ("not JSON", b"this is not json", []),
        ("truncated", text_valid[: len(text_valid) // 2], []),
        ("an array at the top", b"[]", []),
        ("null at the top", b"null", []),
        ("a number at the top", b"7", []),
        ("an empty object", b"{}", []),
        ("trailing garbage", text_valid + b" }", []),
        ("non-UTF-8 bytes", b'{"x\xff": 1}', []),
        ("NaN literal", b'{"x": NaN}', []),
        ("nesting 100000 deep", b'{"x": ' + b"[" * 100000 + b"]" * 100000 + b"}", []),
    ]


def json_cases(s):
    specs = [
        # surface, option, valid base, claim, seeds folder, {seed: expect}
        ("--bench-json", "--bench-json", bp(s, "bench.json"), "int8_codec_bound", "bench_json",
         {"negative_real_time.json": ["real_time"], "overflow_1e999.json": [], "duplicate_key.json": ["name"],
          "name_nul.json": ["name"], "error_occurred_string.json": ["error_occurred"],
          "unit_overflow.json": ["real_time"], "deep_nesting.json": [], "long_name.json": ["name"],
          "error_message_nul.json": ["error_message"], "not_utf8.json": [], "error_run.json": None}),
        ("--external-timing", "--external-timing", bp(s, "bench.json"), "ext_layer_speed", "bench_json",
         {"negative_real_time.json": ["real_time"], "overflow_1e999.json": [], "duplicate_key.json": ["name"],
          "name_nul.json": ["name"], "error_occurred_string.json": ["error_occurred"],
          "unit_overflow.json": ["real_time"], "deep_nesting.json": [], "long_name.json": ["name"],
          "error_message_nul.json": ["error_message"], "not_utf8.json": [], "error_run.json": None}),
        ("--model-step", "--model-step", bp(s, "model_step.json"), "model_step_figures", "model_step_json",
         {"capacity_small.json": None, "config_deep.json": [], "config_nul.json": ["config"],
          "config_slash.json": ["config"], "duplicate_status.json": ["status"], "layers_1e300.json": ["layers"],
          "layers_negative.json": ["layers"], "model_unknown.json": ["model"], "tag_peaks_number.json": ["tag_peaks"],
          "update_unknown.json": ["update"]}),
        ("--external-model", "--external-model", bp(s, "torch_model.json"), "ext_model_memory,ext_model_time",
         "model_bench_json",
         {"torch_small.json": None, "config_dots.json": ["model"], "config_slash.json": ["config"],
          "device_deep.json": [], "error_nul.json": ["error"], "layers_float.json": ["layers"],
          "model_step_as_external.json": [], "ok_without_peak.json": ["peak_bytes"],
          "step_ms_negative.json": ["step_ms"]}),
        ("--kill-matrix", "--kill-matrix", bp(s, "kill_matrix.json"), "mutation_kill_matrix", None, {}),
    ]
    for sv, opt, valid, claim, seeds, expect in specs:
        base = [s.fv, "--quiet", "--jobs", "1", "--claim", claim]
        vtext = open(valid, "rb").read()
        for what, path, words in common_bad_files(s, s.folder(), "in.json"):
            s.add(sv, what, base + [opt, path], os.path.dirname(path) if what in ("missing file", "empty file")
                  else s.folder(), [os.path.basename(path)] + words)
        for what, data, words in json_bad(vtext):
            d = s.folder()
            p = put(os.path.join(d, "in.json"), data)
            s.add(sv, what, base + [opt, p], d, ["in.json"] + words)
        doc = json.loads(vtext)
        for what, text, words in json_field_edits(sv, doc):
            d = s.folder()
            p = put(os.path.join(d, "in.json"), text)
            s.add(sv, what, base + [opt, p], d, ["in.json"] + words)
        for seed, words in sorted(expect.items()):
            src = os.path.join(ROOT, "suites", "fuzz", "seeds", seeds, seed)
            d = s.folder()
            p = os.path.join(d, seed)
            shutil.copyfile(src, p)
            if words is None:
                s.control(sv, "seed " + seed, base + [opt, p], d)
            else:
                s.add(sv, "seed " + seed, base + [opt, p], d, [seed] + words)
        s.control(sv, "the valid file", base + [opt, valid], s.folder())


def dumps_dup(doc, key, first):
    """doc as JSON with key given twice: first, then its real value (the last one wins in a lax reader)."""
    t = json.dumps(doc)
    return t.replace('"%s":' % key, '"%s": %s, "%s":' % (key, json.dumps(first), key), 1)


def json_field_edits(sv, doc):
    """Field-level edits of a valid document: (name, text, words)."""
    out = []
    if "benchmarks" in doc:
        runs = doc["benchmarks"]
        r0 = dict(runs[0])

        def with_run(**kw):
            d = dict(doc)
            r = dict(r0)
            r.update(kw)
            d["benchmarks"] = [r] + runs[1:]
            return json.dumps(d)
        out += [("real_time negative", with_run(real_time=-1.349), ["real_time"]),
                ("real_time a string", with_run(real_time="1.5"), ["real_time"]),
                ("real_time 1e999", with_run(real_time=1.0).replace('"real_time": 1.0', '"real_time": 1e999', 1), []),
                ("cpu_time negative", with_run(cpu_time=-1.0), ["cpu_time"]),
                ("time_unit bogus", with_run(time_unit="fortnights"), ["time_unit"]),
                ("repetitions negative", with_run(repetitions=-3), ["repetitions"]),
                ("name an integer", with_run(name=5), ["name"]),
                ("benchmarks an object", json.dumps(dict(doc, benchmarks={})), ["benchmarks"]),
                ("duplicate real_time", dumps_dup(dict(doc, benchmarks=[r0]), "real_time", -5.0), ["real_time"])]
    elif "mutants" in doc:
        m0 = doc["mutants"][0]

        def km(**kw):
            return json.dumps(dict(doc, mutants=[dict(m0, **kw)] + doc["mutants"][1:]))
        out += [("tool unknown", json.dumps(dict(doc, tool="scripts/other.py")), ["tool"]),
                ("complete a string", json.dumps(dict(doc, complete="yes")), ["complete"]),
                ("reps 0", json.dumps(dict(doc, reps=0)), ["reps"]),
                ("reps 1e300", json.dumps(dict(doc, reps=1e300)), ["reps"]),
                ("mutants an object", json.dumps(dict(doc, mutants={})), ["mutants"]),
                ("a mutant's status bogus", km(status="dead"), ["status"]),
                ("killed with no killing test", km(killed_by=[]), ["killing tests"]),
                ("an id with a slash", km(id="a/b"), ["id"]),
                ("an id twice", json.dumps(dict(doc, mutants=[m0, m0])), ["given twice"]),
                ("killed_by a string", km(killed_by="test_x"), ["killed_by"]),
                ("a message with a NUL", km(tests={"test_rules_vs_mpfr": {"verdict": "killed", "message": "a\u0000b"}}),
                 ["message"]),
                ("status duplicated (survived, then killed)", json.dumps(dict(doc, mutants=[m0])).replace(
                    '"status":', '"status": "survived", "status":', 1), ["status"])]
    else:
        def w(**kw):
            d = dict(doc)
            d.update(kw)
            return json.dumps(d)
        out += [("status bogus", w(status="bogus"), ["status"]),
                ("status duplicated (failed, then ok)", dumps_dup(doc, "status", "failed"), ["status"]),
                ("model unknown", w(model="gpt5"), ["model"]),
                ("layers negative", w(layers=-3), ["layers"]),
                ("layers 1e300", w(layers=1e300), ["layers"]),
                ("layers a string", w(layers="32"), ["layers"]),
                ("peak_bytes negative", w(peak_bytes=-1), ["peak_bytes"]),
                ("peak_bytes 1e999", w(peak_bytes=1).replace('"peak_bytes": 1', '"peak_bytes": 1e999', 1), []),
                ("config empty", w(config=""), ["config"])]
        if "update" in doc:
            out.append(("update unknown", w(update="sideways"), ["update"]))
        if "step_ms" in doc:
            out.append(("step_ms negative", w(step_ms=[-1.0, 2.0]), ["step_ms"]))
            out.append(("step_ms empty", w(step_ms=[]), ["step_ms"]))
        if "median_ms" in doc:
            out.append(("median_ms negative", w(median_ms=-2.0), ["median_ms"]))
    return out


# ---------------------------------------------------------------------------- reports: diff, page
def diff_cases(s):
    sv = "diff"
    R = bp(s, "report.h5")
    diff = [s.fv, "diff"]
    for what, path, words in common_bad_files(s, s.folder(), "base.h5"):
        d = os.path.dirname(path) if what in ("missing file", "empty file") else s.folder()
        s.add(sv, "BASE " + what, diff + [path, R], d, [os.path.basename(path)] + words)
        s.add(sv, "NEW " + what, diff + [R, path], d, [os.path.basename(path)] + words)
    raw = open(R, "rb").read()
    d = s.folder()
    for n in (100, len(raw) // 2, len(raw) - 1):
        p = put(os.path.join(d, "trunc_%d.h5" % n), raw[:n])
        s.add(sv, "NEW truncated to %d bytes" % n, diff + [R, p], d, [os.path.basename(p)])

    def e(name, edit, words):
        d = s.folder()
        p = h5copy_edit(R, os.path.join(d, "new.h5"), edit)
        s.add(sv, name, diff + [R, p], d, ["new.h5"] + words)
    e("schema version 99", lambda f: f.attrs.__setitem__("schema_version", np.int64(99)), ["schema_version"])
    e("schema version a string", lambda f: f.attrs.__setitem__("schema_version", "2"), ["schema_version"])
    e("schema version missing", lambda f: f.attrs.__delitem__("schema_version"), ["schema_version"])
    e("a claim an external link", lambda f: f.__setitem__("ext_link_claim", h5py.ExternalLink(R, "/")), ["ext_link_claim"])
    e("verdict an integer", lambda f: f.attrs.__setitem__("verdict", np.int64(1)), ["verdict"])
    s.add(sv, "NEW is a cases file", diff + [R, bp(s, "cases.h5")], s.folder(), ["cases.h5"])
    s.add(sv, "NEW is not HDF5", diff + [R, bp(s, "text.h5")], s.folder(), ["text.h5"])
    for args, words in ((["--alpha", "-1"], ["--alpha"]), (["--alpha", "2"], ["--alpha"]), (["--alpha", "nan"], ["--alpha"]),
                        (["--alpha", "abc"], ["--alpha"]), (["--min-ratio", "0"], ["--min-ratio"]),
                        (["--min-ratio", "-1"], ["--min-ratio"]), (["--min-ratio", "inf"], ["--min-ratio"]),
                        (["--margin-fraction", "2"], ["--margin-fraction"]), (["--margin-fraction", "-0.1"], ["--margin-fraction"]),
                        (["--frobnicate"], ["--frobnicate"]), (["--json"], ["--json"])):
        s.add(sv, " ".join(args), diff + [R, R] + args, s.folder(), words)
    s.add(sv, "one report only", diff + [R], s.folder(), ["NEW"])
    s.add(sv, "three reports", diff + [R, R, R], s.folder(), ["two reports"])
    rm = os.path.join(ROOT, "suites", "fuzz", "seeds", "rename_map")
    for seed in sorted(os.listdir(rm)):
        d = s.folder()
        p = os.path.join(d, seed)
        shutil.copyfile(os.path.join(rm, seed), p)
        s.add(sv, "--rename-map seed " + seed, diff + [R, R, "--rename-map", p], d, [seed])
    for what, path, words in common_bad_files(s, s.folder(), "map.txt"):
        d = os.path.dirname(path) if what in ("missing file", "empty file") else s.folder()
        if what == "empty file":
            continue  # an empty map renames nothing: valid
        s.add(sv, "--rename-map " + what, diff + [R, R, "--rename-map", path], d, [os.path.basename(path)])

    def mk(out, force, swap=None):
        base = (swap or {}).get(R, R)
        return diff + [base, R, "--json", out] + (["--force"] if force else [])
    output_path_cases(s, sv, mk, [R], label="--json")
    s.control(sv, "a report against itself", diff + [R, R], s.folder(), rc=(0,))
    s.control(sv, "--json to a fresh path", diff + [R, R, "--json", "d.json"], s.folder(), rc=(0,))
    s.control(sv, "schema-1 report as BASE", diff + [os.path.join(ROOT, "scripts", "testdata", "schema1_report.h5"), R],
              s.folder())


def page_cases(s):
    R = bp(s, "report.h5")
    P = s.py
    runners = {
        "render_summary.py": lambda inp, out, *a: [P, os.path.join(SCRIPTS, "render_summary.py"), inp, "-o", out, *a],
        "render_audit.py": lambda inp, out, *a: [P, os.path.join(SCRIPTS, "render_audit.py"), *a, out, inp],
        "render_memory_timeline.py": lambda inp, out, *a: [P, os.path.join(SCRIPTS, "render_memory_timeline.py"), *a, inp, out],
        "render_fidelity.py": lambda inp, out, *a: [P, os.path.join(SCRIPTS, "render_fidelity.py"), inp, "-o", out, *a],
    }
    ext = {"render_summary.py": "page", "render_audit.py": "md", "render_memory_timeline.py": "png",
           "render_fidelity.py": "figs"}
    for script, run in runners.items():
        sv = script
        for what, path, words in common_bad_files(s, s.folder(), "rep.h5"):
            d = os.path.dirname(path) if what in ("missing file", "empty file") else s.folder()
            s.add(sv, what, run(path, os.path.join(d, "new." + ext[script])), d, [os.path.basename(path)])
        d = s.folder()
        s.add(sv, "not HDF5", run(bp(s, "text.h5"), os.path.join(d, "new." + ext[script])), d, ["text.h5"])
        d = s.folder()
        s.add(sv, "a cases file, not a report", run(bp(s, "cases.h5"), os.path.join(d, "new." + ext[script])), d, ["cases.h5"])
        for label, val in (("schema 4 (newer)", np.int64(4)), ("schema a string", "2"), ("schema -1", np.int64(-1))):
            d = s.folder()
            p = h5copy_edit(R, os.path.join(d, "rep.h5"), lambda f, v=val: f.attrs.__setitem__("schema_version", v))
            s.add(sv, label, run(p, os.path.join(d, "new." + ext[script])), d, ["rep.h5"])
        d = s.folder()
        p = put(os.path.join(d, "rep.h5"), open(R, "rb").read()[:2000])
        s.add(sv, "truncated report", run(p, os.path.join(d, "new." + ext[script])), d, ["rep.h5"])
        if script in ("render_audit.py", "render_memory_timeline.py"):
            output_path_cases(s, sv, lambda out, force, swap=None, run=run: run((swap or {}).get(R, R), out,
                                                                               *(["--force"] if force else [])),
                              [R], ext=ext[script])
    sv = "render_summary.py"
    run = runners[sv]
    for opt, valid in (("--diff", None), ("--bench", bp(s, "bench.json")), ("--registry", None)):
        for what, data in (("duplicate keys", b'{"a": 1, "a": 2}'), ("1e999", b'{"a": 1e999}'),
                           ("non-UTF-8", b'{"a": "\xff"}'), ("truncated", b'{"a": ['), ("nesting 100000 deep",
                                                                                        b"[" * 100000 + b"]" * 100000)):
            d = s.folder()
            p = put(os.path.join(d, "in.json"), data)
            s.add(sv, "%s %s" % (opt, what), run(R, os.path.join(d, "page"), opt, p), d, ["in.json"])
        for what, path, words in common_bad_files(s, s.folder(), "in.json"):
            if what in ("missing file", "empty file", "a directory"):
                d = os.path.dirname(path) if what != "a directory" else s.folder()
                s.add(sv, "%s %s" % (opt, what), run(R, os.path.join(d, "page"), opt, path), d, [os.path.basename(path)])
    d = s.folder()
    put(os.path.join(d, "notes.txt"), "the user's own file\n")
    s.add(sv, "-o a folder it did not write, --force", run(R, d, "--force"), d, [os.path.basename(d)])
    d = s.folder()
    s.control(sv, "a valid report", run(R, os.path.join(d, "page")), d, rc=(0,))
    d = s.folder()
    s.control("render_audit.py", "a valid report", runners["render_audit.py"](R, os.path.join(d, "a.md")), d, rc=(0,))
    d = s.folder()
    s.control("render_memory_timeline.py", "a valid report",
              runners["render_memory_timeline.py"](R, os.path.join(d, "t.png")), d, rc=(0,))
    d = s.folder()
    os.mkdir(os.path.join(d, "figs"))
    s.control("render_fidelity.py", "a valid report", runners["render_fidelity.py"](R, os.path.join(d, "figs")), d, rc=(0,))


# ---------------------------------------------------------------------------- other scripts
def script_cases(s):
    P = s.py
    # A copy of scripts/ with no bundle and a build.sh that builds nothing: the entry points'
    # argument handling without a GPU run or a build.
    fake = os.path.join(s.tmp, "fakeroot")
    shutil.copytree(SCRIPTS, os.path.join(fake, "scripts"), ignore=shutil.ignore_patterns("testdata", "__pycache__"))
    put(os.path.join(fake, "scripts", "build.sh"), "#!/usr/bin/env bash\nexit 0\n")
    fs = os.path.join(fake, "scripts")
    env_fv = {"FH_FORGE_VERIFY": s.fv, "FH_BUILD_DIR": s.build, "FH_JOBS": "1"}
    sv = "seed_sweep.sh"
    ss = ["bash", os.path.join(fs, "seed_sweep.sh")]
    for args, words in (([], []), (["0"], ["0"]), (["-1"], ["-1"]), (["abc"], ["abc"]),
                        (["2", "--first", "9223372036854775808"], ["--first"]), (["2", "--first", "-1"], ["--first"]),
                        (["2", "--first", "18446744073709551616"], ["--first"]),
                        (["1", "--claims", "nosuch"], ["nosuch"]), (["1", "--jobs", "0"], ["--jobs"]),
                        (["1", "--frobnicate"], ["--frobnicate"]), (["1", "--claims"], ["--claims"]),
                        (["1", "--claims", "int8_codec_bound", "--", "--shape", "0x1x1"], ["--shape"])):
        s.add(sv, " ".join(args) or "(none)", ss + args, s.folder(), words, env=env_fv)
    s.add(sv, "a GPU claim without --gpu", ss + ["1", "--claims", "gpu_mma_model"], s.folder(), ["gpu_mma_model"],
          env=env_fv, accept_rc=None)
    s.cases[-1].expect_rc = 4
    s.control(sv, "one seed of one claim", ss + ["1", "--claims", "int8_codec_bound"], s.folder(), rc=(0,), env=env_fv)
    sv = "nightly.sh"
    ni = ["bash", os.path.join(fs, "nightly.sh")]
    s.add(sv, "no arguments", ni, s.folder(), [])
    for var, val in (("FH_DIFF_ALPHA", "abc"), ("FH_DIFF_ALPHA", "1; touch pwned"), ("FH_DIFF_MIN_RATIO", "-1"),
                     ("FH_DIFF_MARGIN", "2"), ("FH_DIFF_MARGIN", "$(touch pwned)"), ("FH_NIGHTLY_FUZZ_SECONDS", "-5")):
        d = s.folder()
        s.add(sv, "%s=%r" % (var, val), ni + [os.path.join(d, "out")], d, [var], env={var: val})
    d = s.folder()
    put(os.path.join(d, "afile"), "x\n")
    s.add(sv, "OUTDIR is a file", ni + [os.path.join(d, "afile")], d, ["afile"])
    for sv, script in (("gpu_runner.sh", "gpu_runner.sh"), ("kernel_speed_runner.sh", "kernel_speed_runner.sh")):
        run = ["bash", os.path.join(fs, script)]
        s.add(sv, "no arguments", run, s.folder(), ["OUTDIR"])
        d = s.folder()
        put(os.path.join(d, "afile"), "x\n")
        s.add(sv, "OUTDIR is a file", run + [os.path.join(d, "afile")], d, ["afile"])
        d = s.folder()
        s.add(sv, "no bundle", run + [os.path.join(d, "out")], d, ["bundle"], may_write=True, env={"FH_TORCH_SHAPES": ""})
    sv = "verify.sh"
    vv = ["bash", os.path.join(fs, "verify.sh")]
    for args, words in ((["--shape", "0x1x1"], ["--shape"]), (["--jobs", "0"], ["--jobs"]), (["--frobnicate"], ["--frobnicate"])):
        s.add(sv, " ".join(args), vv + args, s.folder(), words, env={"FH_BUILD_DIR": s.build})
    s.control(sv, "--claim int8_codec_bound", vv + ["--quiet", "--jobs", "1", "--claim", "int8_codec_bound"], s.folder(),
              env={"FH_BUILD_DIR": s.build})
    sv = "merge_results.py"
    mr = [P, os.path.join(SCRIPTS, "merge_results.py")]
    F = bp(s, "fused.h5")
    s.add(sv, "no arguments", mr, s.folder(), [])
    s.add(sv, "one argument", mr + ["out.h5"], s.folder(), [])
    for what, path, words in common_bad_files(s, s.folder(), "part.h5"):
        d = os.path.dirname(path) if what in ("missing file", "empty file") else s.folder()
        s.add(sv, "input " + what, mr + [os.path.join(d, "out.h5"), path], d, [os.path.basename(path)])
    d = s.folder()
    s.add(sv, "input not HDF5", mr + [os.path.join(d, "out.h5"), bp(s, "text.h5")], d, ["text.h5"])
    d = s.folder()
    s.add(sv, "input a cases file", mr + [os.path.join(d, "out.h5"), bp(s, "cases.h5")], d, ["cases.h5"])
    d = s.folder()
    s.add(sv, "two different paths", mr + [os.path.join(d, "out.h5"), F, bp(s, "two_phase.h5")], d, ["path"])
    output_path_cases(s, sv, lambda out, force, swap=None: mr + (["--force"] if force else []) + [out, (swap or {}).get(F, F)],
                      [F], ext="h5")
    d = s.folder()
    s.control(sv, "one valid part", mr + [os.path.join(d, "out.h5"), F], d, rc=(0,))
    sv = "forge_adapter.py"
    fa = [P, os.path.join(SCRIPTS, "forge_adapter.py"), "--path", "persistent"]
    for what, path, words in common_bad_files(s, s.folder(), "cases.h5"):
        d = os.path.dirname(path) if what in ("missing file", "empty file") else s.folder()
        s.add(sv, "cases " + what, fa + [path, os.path.join(d, "r.h5")], d, [os.path.basename(path)])
    d = s.folder()
    s.add(sv, "cases not HDF5", fa + [bp(s, "text.h5"), os.path.join(d, "r.h5")], d, ["text.h5"])
    d = s.folder()
    s.add(sv, "--path bogus", [P, os.path.join(SCRIPTS, "forge_adapter.py"), "--path", "bogus", bp(s, "cases.h5"),
                               os.path.join(d, "r.h5")], d, ["--path"])
    output_path_cases(s, sv, lambda out, force, swap=None: fa + (["--force"] if force else []) +
                      [(swap or {}).get(bp(s, "cases.h5"), bp(s, "cases.h5")), out],
                      [bp(s, "cases.h5")], ext="h5")


# ---------------------------------------------------------------------------- forge-model-step
def model_step_cases(s):
    sv = "forge-model-step"
    M = [s.fms]
    for args, words in (([], []), (["--model", "nosuch", "--out", "a.json"], ["nosuch"]),
                        (["--model", "tiny", "--steps", "0", "--out", "a.json"], ["--steps"]),
                        (["--model", "tiny", "--update", "sideways", "--out", "a.json"], ["--update"]),
                        (["--model", "tiny", "--state", "int4", "--out", "a.json"], ["--state"]),
                        (["--model", "tiny", "--store", "x", "--out", "a.json"], ["--store"]),
                        (["--model", "tiny", "--capacity", "-1", "--out", "a.json"], ["--capacity"]),
                        (["--model", "tiny", "--capacity", "abc", "--out", "a.json"], ["--capacity"]),
                        (["--model", "tiny"], ["--out"]), (["--model", "tiny", "--out"], ["--out"]),
                        (["--model", "tiny", "--frobnicate", "--out", "a.json"], ["--frobnicate"]),
                        (["--model", "tiny", "--out", ""], ["--out"])):
        s.add(sv, " ".join(args) or "(none)", M + args, s.folder(), words)
    output_path_cases(s, sv, lambda out, force, swap=None: M + ["--model", "tiny", "--out", out] +
                      (["--force"] if force else []), (), ext="json")
    s.add(sv, "--out /dev/null", M + ["--model", "tiny", "--out", "/dev/null", "--force"], s.folder(), ["/dev/null"])
    s.control(sv, "--help", M + ["--help"], s.folder(), rc=(0,))
    # Without a GPU a valid command exits 4 (nothing measured); with one, 0.
    s.control(sv, "a valid command", M + ["--model", "tiny", "--out", "a.json"], s.folder(), rc=(0, 4))


# ---------------------------------------------------------------------------- running and judging
def snapshot(folder):
    """name -> (type, size, mtime, inode, sha256) of everything under folder, links not followed."""
    snap = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for n in dirnames + filenames:
            p = os.path.join(dirpath, n)
            st = os.lstat(p)
            digest = ""
            if stat.S_ISREG(st.st_mode) and st.st_size < (256 << 20):
                h = hashlib.sha256()
                with open(p, "rb") as f:
                    for chunk in iter(lambda: f.read(1 << 20), b""):
                        h.update(chunk)
                digest = h.hexdigest()
            snap[os.path.relpath(p, folder)] = (stat.S_IFMT(st.st_mode), st.st_size, st.st_mtime_ns, st.st_ino, digest)
    return snap


def unprivileged_prefix():
    """Root ignores a read-only folder; setpriv drops that override (as test_script_inputs.sh does)."""
    if os.geteuid() != 0:
        return []
    pre = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner"]
    try:
        subprocess.run(pre + ["true"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return pre
    except (OSError, subprocess.CalledProcessError):
        return None


def run_case(c, unpriv):
    before = snapshot(c.folder)
    env = dict(os.environ)
    env.update(c.env)
    argv = c.argv
    if c.unprivileged:
        if unpriv is None:
            c.outcome, c.detail = "not-run", "root, and setpriv cannot drop CAP_DAC_OVERRIDE"
            return c
        argv = unpriv + argv
    t0 = time.time()
    p = subprocess.Popen(argv, cwd=c.folder, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = p.communicate(timeout=TIMEOUT_S)
        hung = False
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        hung = True
    c.seconds = time.time() - t0
    c.rc = p.returncode
    c.stderr = err.decode("utf-8", "replace")
    # A refusal that is an outcome of the run (exit 4: a claim did not run) may say so on stdout.
    said = c.stderr if getattr(c, "expect_rc", 2) == 2 else out.decode("utf-8", "replace") + c.stderr
    lines = [ln for ln in said.splitlines() if ln.strip()]
    after = snapshot(c.folder)
    expect_rc = getattr(c, "expect_rc", 2)
    control = c.accept_rc is not None
    if PLANT == "control_refused" and control:
        control = False
    if hung:
        c.outcome, c.detail = "hang", "killed after %d s" % TIMEOUT_S
    elif c.rc < 0 or (129 <= c.rc <= 192 and c.rc != 128 + signal.SIGINT):
        c.outcome, c.detail = "crash", "signal %d" % (-c.rc if c.rc < 0 else c.rc - 128)
    elif control:
        ok = c.rc in c.accept_rc and "Traceback" not in c.stderr
        c.outcome = "ok" if ok else "control refused"
        if not ok:
            c.detail = "exit %d, want %s" % (c.rc, "/".join(map(str, sorted(c.accept_rc))))
    elif c.rc in (0, 1) or (c.rc == 4 and expect_rc != 4):
        c.outcome, c.detail = "wrongly accepted", "exit %d, want %d" % (c.rc, expect_rc)
    else:
        why = []
        if c.rc != expect_rc:
            why.append("exit %d, want %d" % (c.rc, expect_rc))
        if "Traceback" in c.stderr:
            why.append("a traceback")
        if not lines:
            why.append("nothing on stderr")
        elif not any(all(n in ln for n in c.names) for ln in (lines[:1] if expect_rc == 2 else lines)):
            why.append("the first stderr line does not name %s" % " and ".join(repr(n) for n in c.names))
        c.outcome = "unclear refusal" if why else "ok"
        c.detail = "; ".join(why)
    if not control and not c.may_write and c.outcome != "not-run" and after != before:
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        c.left = "changed or left: " + ", ".join(changed[:4])
    return c


COLUMNS = ["ok", "wrongly accepted", "unclear refusal", "crash", "hang", "control refused"]


def table(cases):
    surfaces = []
    for c in cases:
        if c.surface not in surfaces:
            surfaces.append(c.surface)
    rows = ["| surface | cases | refused as expected (controls accepted) | wrongly accepted | unclear refusal | crash | hang "
            "| left behind | control refused | not run |", "| --- | " + " | ".join(["---:"] * 9) + " |"]
    total = [0] * 9
    for sv in surfaces + [None]:
        cs = [c for c in cases if c.surface == sv] if sv else cases
        v = [len(cs)] + [sum(1 for c in cs if c.outcome == k and not c.left) if k == "ok" else
                         sum(1 for c in cs if c.outcome == k) for k in COLUMNS[:5]] + \
            [sum(1 for c in cs if c.left), sum(1 for c in cs if c.outcome == "control refused"),
             sum(1 for c in cs if c.outcome == "not-run")]
        name = "**all**" if sv is None else sv
        rows.append("| %s | %s |" % (name, " | ".join(str(x) for x in v)))
    return "\n".join(rows)


def command_text(c):
    env = " ".join("%s=%s" % (k, shlex.quote(v)) for k, v in c.env.items())
    return (env + " " if env else "") + " ".join(shlex.quote(a if len(a) < 300 else a[:60] + "...") for a in c.argv)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build", help="the build folder holding forge-verify and forge-model-step")
    ap.add_argument("--only", help="run only the surfaces whose name contains this text")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    for exe in ("forge-verify", "forge-model-step"):
        if not os.access(os.path.join(build, exe), os.X_OK):
            print("hostile_inputs: %s: no executable %s" % (build, exe), file=sys.stderr)
            return 2
    if a.jobs < 1:
        print("hostile_inputs: --jobs must be at least 1", file=sys.stderr)
        return 2
    tmp = tempfile.mkdtemp(prefix="hostile_inputs.")
    try:
        s = Suite(build, tmp)
        make_base(s)
        for make in (option_cases, results_cases, cases_file_cases, external_cases_cmd, report_output_cases,
                     json_cases, diff_cases, page_cases, script_cases, model_step_cases):
            make(s)
        cases = [c for c in s.cases if not a.only or a.only in c.surface]
        base_before = snapshot(s.base)
        unpriv = unprivileged_prefix()
        t0 = time.time()
        # Cases that share a folder run one after another: each judges what changed in its folder,
        # and forge-verify probes its default report path with a file it creates and removes at once.
        by_folder = {}
        for c in cases:
            by_folder.setdefault(c.folder, []).append(c)
        with ThreadPoolExecutor(max_workers=a.jobs) as pool:
            list(pool.map(lambda group: [run_case(c, unpriv) for c in group], by_folder.values()))
        base_changed = snapshot(s.base) != base_before
        print("# Hostile inputs: %d cases, %.0f s\n" % (len(cases), time.time() - t0))
        for c in sorted(cases, key=lambda c: -getattr(c, "seconds", 0))[:8]:
            print("hostile_inputs: slowest: %.1f s %s / %s" % (getattr(c, "seconds", 0), c.surface, c.name), file=sys.stderr)
        print(table(cases))
        failed = [c for c in cases if c.outcome not in ("ok", "not-run") or c.left]
        print("\n## Failing cases (%d)\n" % len(failed))
        for c in failed:
            print("- **%s / %s**: %s%s%s  " % (c.surface, c.name, c.outcome,
                                               (" (" + c.detail + ")") if c.detail else "",
                                               "; left behind: " + c.left if c.left else ""))
            print("  `%s`  " % command_text(c).replace("`", "'").replace(tmp, "$T"))
            first = (c.stderr.strip().splitlines() or ["(nothing)"])[0][:300].replace(tmp, "$T")
            print("  stderr: `%s`" % first.replace("`", "'"))
        notrun = [c for c in cases if c.outcome == "not-run"]
        for c in notrun:
            print("- not run: %s / %s: %s" % (c.surface, c.name, c.detail))
        if base_changed:
            print("\n- **the shared base files changed during the run** (an input was written)")
        return 1 if failed or base_changed else 0
    finally:
        if a.keep:
            print("kept: " + tmp, file=sys.stderr)
        else:
            for dirpath, dirnames, _ in os.walk(tmp):
                for n in dirnames:
                    try:
                        os.chmod(os.path.join(dirpath, n), 0o755)
                    except OSError:
                        pass
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
