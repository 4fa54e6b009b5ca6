#!/usr/bin/env python3
"""The torch cross-check: the project's PyTorch-compatible AdamW
(kernels/rules/adamw_torch_fused.h, run on the host by forge-torch-compat) against
torch.optim.AdamW(fused=True) on CUDA, bit for bit, on fp32 and bf16 parameters, >= 10^7 elements
per case, 10 steps, several hyperparameter sets (weight_decay = 0, large lr, tiny gradients,
maximize, betas where CUDA's powf is not correctly rounded). Zero mismatches is the bar.

Runs on the GPU runner's python3 (PyTorch 2.11 + CUDA, numpy). For every case it:
  1. makes seeded parameters and gradients on the GPU, runs torch's fused AdamW for the steps
     and keeps params, exp_avg, exp_avg_sq after every step;
  2. dumps the inputs (raw little-endian, format in suites/torch_compat/forge_torch_compat.cpp),
     runs forge-torch-compat, and compares every bit after every step (primary variant) and
     after the last step (alternative variants: lrwd = fp32(lr)*fp32(wd) or fp32(lr*wd in double);
     powf as nvcc --fmad=false or default --fmad=true compiles it), so the table says which
     reading of PyTorch's kernel is the right one.
Before the cases it measures rcp.approx.ftz.f32 on this GPU (with CuPy or Triton, whichever is
there) over every input the powf port gives it, and passes the differences from
round-to-nearest to the binary (--rcp-exceptions). A powf probe compares torch.pow on CUDA
(PyTorch's own build of libdevice powf) with both builds of the port.

Usage: scripts/torch_crosscheck.py [--binary PATH] [--n N] [--steps S] [--seed X] [--quick] OUTDIR
Writes OUTDIR/torch_crosscheck.log (everything printed), OUTDIR/table.txt, OUTDIR/summary.json,
OUTDIR/rcp_exceptions.bin and the binary's logs. Exit status: 0 when the primary variant has zero
mismatches in every case, 1 when it has any, 2 when something needed is missing.
Prints as it goes (flushes every line), so PYTHONUNBUFFERED is not needed.
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from seed_stream import stream_seed  # noqa: E402  (scripts/seed_stream.py, beside this script)

LOG = None


def say(*args):
    line = " ".join(str(a) for a in args)
    print(line, flush=True)
    if LOG is not None:
        LOG.write(line + "\n")
        LOG.flush()


def die(msg, code=2):
    say("torch_crosscheck: " + msg)
    sys.exit(code)


# ---- hyperparameter sets: (name, lr, beta1, beta2, eps, weight_decay, maximize, grad kind) ----
CASES = [
    ("defaults", 1e-3, 0.9, 0.999, 1e-8, 1e-2, False, "wide"),
    ("wd0", 1e-3, 0.9, 0.999, 1e-8, 0.0, False, "wide"),
    ("large_lr", 1.0, 0.9, 0.999, 1e-8, 0.1, False, "wide"),
    ("tiny_grad", 1e-3, 0.9, 0.999, 1e-8, 1e-2, False, "tiny"),
    ("b0.95_0.98_maximize", 3e-4, 0.95, 0.98, 1e-6, 0.1, True, "wide"),
    ("b0.8_0.99_lr0.1", 0.1, 0.8, 0.99, 1e-5, 0.1, False, "wide"),
]
DTYPES = ["fp32", "bf16"]
PRIMARY = ("fp32", "no_fmad")  # (--lrwd, --powf): the header's defaults
VARIANTS = [("fp32", "no_fmad"), ("double", "no_fmad"), ("fp32", "fmad"), ("double", "fmad")]


def variant_name(v):
    return "lrwd=%s,powf=%s" % v


# ---- binary I/O (see suites/torch_compat/forge_torch_compat.cpp) ----

def write_adamw_input(np, path, case, dtype, params, grads):
    name, lr, b1, b2, eps, wd, maximize, _ = case
    n = params.size
    with open(path, "wb") as f:
        f.write(struct.pack("<8sQQdddddII", b"FHTCADW1", n, len(grads), lr, b1, b2, eps, wd,
                            1 if maximize else 0, 1 if dtype == "bf16" else 0))
        params.tofile(f)
        for g in grads:
            assert g.size == n and g.dtype == params.dtype
            g.tofile(f)


def read_adamw_output(np, path, n, dtype):
    """[(step, params_bits, exp_avg_bits, exp_avg_sq_bits)] as unsigned integer arrays."""
    elem = np.uint16 if dtype == "bf16" else np.uint32
    esize = 2 if dtype == "bf16" else 4
    with open(path, "rb") as f:
        magic, n_file, records, dcode, _ = struct.unpack("<8sQQII", f.read(32))
        if magic != b"FHTCOUT1" or n_file != n or dcode != (1 if dtype == "bf16" else 0):
            raise RuntimeError("%s: unexpected header %r n=%d dtype=%d" % (path, magic, n_file, dcode))
        out = []
        for _ in range(records):
            (step,) = struct.unpack("<Q", f.read(8))
            arrs = [np.fromfile(f, dtype=elem, count=n) for _ in range(3)]
            if any(a.size != n for a in arrs):
                raise RuntimeError("%s: truncated" % path)
            out.append((step, *arrs))
    expect = 32 + records * (8 + 3 * n * esize)
    if os.path.getsize(path) != expect:
        raise RuntimeError("%s: %d bytes, expected %d" % (path, os.path.getsize(path), expect))
    return out


def order_keys(np, bits, dtype):
    """Monotone integer keys (for ulp distances): sign-magnitude to two's complement."""
    if dtype == "bf16":
        b = bits.astype(np.int64)
        mag = b & 0x7FFF
        return np.where(b & 0x8000, -mag, mag)
    b = bits.astype(np.int64)
    mag = b & 0x7FFFFFFF
    return np.where(b & 0x80000000, -mag, mag)


def compare(np, got, want, dtype):
    """(mismatches, max ulp distance among them, first index) of two bit arrays."""
    diff = got != want
    count = int(np.count_nonzero(diff))
    if count == 0:
        return 0, 0, -1
    idx = np.flatnonzero(diff)
    ulp = np.abs(order_keys(np, got[idx], dtype) - order_keys(np, want[idx], dtype))
    return count, int(ulp.max()), int(idx[0])


# ---- GPU measurements ----

RCP_FIRST, RCP_LAST = 0x3FD00000, 0x40200000  # [1.625, 2.5): every m + 1 the powf port can form


def hardware_rcp(np, torch, x_f32):
    """rcp.approx.ftz.f32 of x on this GPU, or (None, reason)."""
    try:
        import cupy
        src = r'''
        extern "C" __global__ void rcp_approx(const float* x, float* y, long long n) {
          long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n) { float r; asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x[i])); y[i] = r; }
        }'''
        k = cupy.RawKernel(src, "rcp_approx")
        xd = cupy.asarray(x_f32)
        yd = cupy.empty_like(xd)
        n = x_f32.size
        k(((n + 255) // 256,), (256,), (xd, yd, cupy.int64(n)))
        cupy.cuda.Device().synchronize()
        return cupy.asnumpy(yd), "cupy"
    except Exception as e:  # noqa: BLE001 - fall through to Triton
        cupy_err = "%s: %s" % (type(e).__name__, e)
    try:
        import triton
        import triton.language as tl

        @triton.jit
        def rcp_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            x = tl.load(x_ptr + offs, mask=mask, other=1.0)
            y = tl.inline_asm_elementwise("rcp.approx.ftz.f32 $0, $1;", "=r,r", [x],
                                          dtype=tl.float32, is_pure=True, pack=1)
            tl.store(y_ptr + offs, y, mask=mask)

        xt = torch.from_numpy(x_f32).cuda()
        yt = torch.empty_like(xt)
        n = x_f32.size
        rcp_kernel[((n + 1023) // 1024,)](xt, yt, n, BLOCK=1024)
        torch.cuda.synchronize()
        return yt.cpu().numpy(), "triton"
    except Exception as e:  # noqa: BLE001
        return None, "no CuPy (%s) and no usable Triton (%s: %s)" % (cupy_err, type(e).__name__, e)


def measure_rcp(np, torch, outdir):
    bits = np.arange(RCP_FIRST, RCP_LAST, dtype=np.uint32)
    x = bits.view(np.float32)
    hw, how = hardware_rcp(np, torch, x)
    if hw is None:
        say("rcp.approx: not measured (%s); the binary uses its round-to-nearest model" % how)
        return None, {"measured": False, "reason": how}
    rn = (np.float32(1.0) / x).astype(np.float32)  # IEEE division, round-to-nearest
    hwb, rnb = hw.view(np.uint32), rn.view(np.uint32)
    ex = np.flatnonzero(hwb != rnb)
    far = np.count_nonzero(np.abs(hwb[ex].astype(np.int64) - rnb[ex].astype(np.int64)) > 1)
    path = os.path.join(outdir, "rcp_exceptions.bin")
    with open(path, "wb") as f:
        f.write(struct.pack("<8sQ", b"FHRCPEX1", ex.size))
        pairs = np.empty((ex.size, 2), dtype=np.uint32)
        pairs[:, 0] = bits[ex]
        pairs[:, 1] = hwb[ex]
        pairs.tofile(f)
    say("rcp.approx.ftz.f32 (via %s) over %d inputs in [1.625, 2.5): %d differ from round-to-nearest "
        "(%d by more than 1 ulp); table %s" % (how, x.size, ex.size, far, path))
    return path, {"measured": True, "via": how, "inputs": int(x.size), "differ_from_rn": int(ex.size),
                  "more_than_1ulp": int(far)}


def powf_probe(np, torch, binary, work, rcp_path, outdir):
    """torch.pow (PyTorch's own CUDA build of powf) against both builds of the port."""
    rng = np.random.default_rng(20261202)
    betas = np.array([0.8, 0.9, 0.95, 0.98, 0.99, 0.999, 0.9999], dtype=np.float32)
    t = np.arange(1, 100001, dtype=np.float32)
    xb = np.repeat(betas, t.size)
    yb = np.tile(t, betas.size)
    xr = rng.uniform(0.0, 1.0, 2000000).astype(np.float32)
    xr[xr == 0] = np.float32(0.5)
    yr = rng.uniform(-64.0, 64.0, xr.size).astype(np.float32)
    x = np.concatenate([xb, xr])
    y = np.concatenate([yb, yr])
    nb = xb.size
    hw = torch.pow(torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()).cpu().numpy().view(np.uint32)
    inp = os.path.join(work, "powf_in.bin")
    with open(inp, "wb") as f:
        f.write(struct.pack("<8sQ", b"FHTCPOW1", x.size))
        x.tofile(f)
        y.tofile(f)
    results = {}
    for build in ("no_fmad", "fmad"):
        for table in ([rcp_path] if rcp_path else []) + [None]:
            out = os.path.join(work, "powf_out.bin")
            cmd = [binary, "powf", inp, out, "--powf", build] + (["--rcp-exceptions", table] if table else [])
            run_binary(cmd, os.path.join(outdir, "powf_%s%s.log" % (build, "_table" if table else "")))
            with open(out, "rb") as f:
                magic, n = struct.unpack("<8sQ", f.read(16))
                res = np.fromfile(f, dtype=np.uint32, count=n)
                sens = np.fromfile(f, dtype=np.uint8, count=n)
            bad = res != hw
            key = "%s%s" % (build, "+measured_rcp" if table else "+rn_rcp_model")
            results[key] = {
                "betas_x_t_mismatch": int(np.count_nonzero(bad[:nb])),
                "random_mismatch": int(np.count_nonzero(bad[nb:])),
                "mismatch_where_rcp_insensitive": int(np.count_nonzero(bad & (sens == 0))),
                "rcp_sensitive_inputs": int(np.count_nonzero(sens)),
            }
            say("powf probe: torch.pow vs port %-26s betas x t (%d): %d mismatches, random (%d): %d, "
                "on rcp-insensitive inputs: %d" % (key, nb, results[key]["betas_x_t_mismatch"], xr.size,
                                                   results[key]["random_mismatch"],
                                                   results[key]["mismatch_where_rcp_insensitive"]))
    fits = [k for k, r in results.items() if r["mismatch_where_rcp_insensitive"] == 0]
    say("powf probe: builds of the port that agree with torch.pow wherever the reciprocal's last bit "
        "cannot matter: %s" % (", ".join(fits) if fits else "none (the port does not describe PyTorch's powf)"))
    i = int(np.flatnonzero((x == np.float32(0.95)) & (y == np.float32(6.0)))[0])
    say("powf probe: torch.pow(0.95f, 6.0f) on CUDA = 0x%08X (no_fmad port: 0x3F3C2EFA, correctly rounded 0x3F3C2EFB)"
        % int(hw[i]))
    results["torch_pow_0.95_6"] = "0x%08X" % int(hw[i])
    return results


# ---- torch side ----

def make_data(np, torch, case, dtype, n, steps, seed):
    """Initial params and per-step grads, on the GPU in the parameter dtype."""
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    tdt = torch.bfloat16 if dtype == "bf16" else torch.float32
    p = torch.randn(n, generator=gen, device="cuda") * 0.05
    p[torch.rand(n, generator=gen, device="cuda") < 1 / 64] = 0.0
    p[torch.rand(n, generator=gen, device="cuda") < 1 / 4096] *= 200.0
    grads = []
    for _ in range(steps):
        g = torch.randn(n, generator=gen, device="cuda")
        if case[7] == "tiny":
            g = g * 1e-30
        else:  # magnitudes spread over 2^-24 .. 2^2
            e = torch.randint(-24, 3, (n,), generator=gen, device="cuda").float()
            g = g * torch.exp2(e)
        g[torch.rand(n, generator=gen, device="cuda") < 1 / 128] = 0.0
        grads.append(g.to(tdt))
    return p.to(tdt), grads


def torch_run(torch, case, params0, grads):
    """torch.optim.AdamW(fused=True) over three tensors (a ragged split of the elements);
    returns per step (params, exp_avg, exp_avg_sq) as concatenated CPU tensors."""
    name, lr, b1, b2, eps, wd, maximize, _ = case
    n = params0.numel()
    cuts = [0, n - n // 3 - 7, n - 7, n]
    params = [torch.nn.Parameter(params0[cuts[i]:cuts[i + 1]].clone()) for i in range(3)]
    opt = torch.optim.AdamW(params, lr=lr, betas=(b1, b2), eps=eps, weight_decay=wd,
                            maximize=maximize, fused=True)
    snaps = []
    for g in grads:
        for i, p in enumerate(params):
            p.grad = g[cuts[i]:cuts[i + 1]].clone()
        opt.step()
        st = [opt.state[p] for p in params]
        snaps.append(tuple(torch.cat(parts).cpu() for parts in (
            [p.detach() for p in params], [s["exp_avg"] for s in st], [s["exp_avg_sq"] for s in st])))
    torch.cuda.synchronize()
    return snaps


def to_bits(np, torch, t, dtype):
    if dtype == "bf16":
        return t.contiguous().view(torch.int16).numpy().view(np.uint16)
    return t.contiguous().numpy().view(np.uint32)


def run_binary(cmd, logpath):
    t0 = time.time()
    with open(logpath, "w") as lf:
        lf.write(" ".join(cmd) + "\n")
        lf.flush()
        r = subprocess.run(cmd, stdout=lf, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        with open(logpath) as lf:
            tail = lf.read()[-2000:]
        raise RuntimeError("%s exited %d:\n%s" % (cmd[0], r.returncode, tail))
    return time.time() - t0


def find_binary(arg):
    cands = [arg] if arg else []
    if os.environ.get("FH_TORCH_COMPAT_BIN"):
        cands.append(os.environ["FH_TORCH_COMPAT_BIN"])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cands += [os.path.join(root, "build", "forge-torch-compat"), shutil.which("forge-torch-compat") or ""]
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.abspath(c)
    return None


def main():
    global LOG
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--binary", help="forge-torch-compat (default: $FH_TORCH_COMPAT_BIN, build/, PATH)")
    ap.add_argument("--n", type=int, default=10_000_000, help="elements per case (default 10^7)")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0x7C0C)
    ap.add_argument("--quick", action="store_true", help="n = 2^20, for trying the script")
    ap.add_argument("--work", help="folder for the large dumps (default: a temporary folder)")
    ap.add_argument("--no-powf-probe", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.n = 1 << 20
    if args.n < 16 or args.steps < 1:
        die("--n must be >= 16 and --steps >= 1")
    os.makedirs(args.outdir, exist_ok=True)
    outdir = os.path.abspath(args.outdir)
    LOG = open(os.path.join(outdir, "torch_crosscheck.log"), "w")
    say("== torch cross-check %s" % time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))

    try:
        import numpy as np
    except ImportError as e:
        die("MISSING: numpy (%s)" % e)
    try:
        import torch
    except ImportError as e:
        die("MISSING: PyTorch (%s)" % e)
    if not torch.cuda.is_available():
        die("MISSING: CUDA device (torch.cuda.is_available() is False)")
    binary = find_binary(args.binary)
    if not binary:
        die("MISSING: forge-torch-compat binary (pass --binary, set FH_TORCH_COMPAT_BIN, or build it)")
    say("torch %s, CUDA %s, GPU %s, numpy %s" % (torch.__version__, torch.version.cuda,
                                                torch.cuda.get_device_name(0), np.__version__))
    say("binary %s; n = %d per case, %d steps, seed %d" % (binary, args.n, args.steps, args.seed))

    work = args.work or tempfile.mkdtemp(prefix="fh_torchcc_")
    os.makedirs(work, exist_ok=True)
    summary = {"torch": torch.__version__, "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(0),
               "n": args.n, "steps": args.steps, "seed": args.seed, "primary": variant_name(PRIMARY),
               "cases": []}
    rows = []
    primary_bad = 0
    variant_total = {variant_name(v): 0 for v in VARIANTS}
    try:
        rcp_path, summary["rcp_approx"] = measure_rcp(np, torch, outdir)
        if not args.no_powf_probe:
            summary["powf_probe"] = powf_probe(np, torch, binary, work, rcp_path, outdir)
        for ci, case in enumerate(CASES):
            for dtype in DTYPES:
                label = "%s/%s" % (case[0], dtype)
                t0 = time.time()
                seed = stream_seed(args.seed, "torch_crosscheck/data", 2 * ci + (1 if dtype == "bf16" else 0))
                p0, grads = make_data(np, torch, case, dtype, args.n, args.steps, seed)
                snaps = torch_run(torch, case, p0, grads)
                want = [tuple(to_bits(np, torch, t, dtype) for t in s) for s in snaps]
                inp = os.path.join(work, "adamw_in.bin")
                write_adamw_input(np, inp, case, dtype, to_bits(np, torch, p0.cpu(), dtype),
                                  [to_bits(np, torch, g.cpu(), dtype) for g in grads])
                del grads
                t_torch = time.time() - t0
                entry = {"case": case[0], "dtype": dtype, "hyper": {
                    "lr": case[1], "betas": [case[2], case[3]], "eps": case[4], "weight_decay": case[5],
                    "maximize": case[6], "grads": case[7]}, "variants": {}}
                for v in VARIANTS:
                    if case[5] == 0.0 and v[0] == "double":
                        continue  # lrwd is unused without weight decay
                    every = v == PRIMARY
                    out = os.path.join(work, "adamw_out.bin")
                    cmd = [binary, "adamw", inp, out, "--lrwd", v[0], "--powf", v[1]]
                    if rcp_path:
                        cmd += ["--rcp-exceptions", rcp_path]
                    if every:
                        cmd.append("--every-step")
                    logname = "adamw_%s_%s_%s_%s.log" % (case[0], dtype, v[0], v[1])
                    t_bin = run_binary(cmd, os.path.join(outdir, logname))
                    got = read_adamw_output(np, out, args.n, dtype)
                    os.remove(out)
                    vres = []
                    for step, gp, gm, gv in got:
                        wp, wm, wv = want[step - 1]
                        cp, cm, cv = (compare(np, gp, wp, dtype), compare(np, gm, wm, dtype),
                                      compare(np, gv, wv, dtype))
                        vres.append({"step": step, "params": cp, "exp_avg": cm, "exp_avg_sq": cv})
                        rows.append((label, variant_name(v), step, cp, cm, cv))
                    worst = sum(r["params"][0] + r["exp_avg"][0] + r["exp_avg_sq"][0] for r in vres)
                    last = vres[-1]
                    last_bad = last["params"][0] + last["exp_avg"][0] + last["exp_avg_sq"][0]
                    variant_total[variant_name(v)] += last_bad
                    if v == PRIMARY:
                        primary_bad += worst
                    entry["variants"][variant_name(v)] = vres
                    say("%-28s %-26s host %.1fs: after step %d: params %d, exp_avg %d, exp_avg_sq %d mismatches"
                        "%s" % (label, variant_name(v), t_bin, last["step"], last["params"][0],
                                last["exp_avg"][0], last["exp_avg_sq"][0],
                                ("; all steps: %d" % worst) if every else ""))
                    if last_bad and last["params"][0]:
                        i = last["params"][2]
                        say("    first differing param [%d]: host 0x%X torch 0x%X (max %d ulp)" % (
                            i, int(got[-1][1][i]), int(want[last["step"] - 1][0][i]), last["params"][1]))
                summary["cases"].append(entry)
                say("%-28s done in %.1fs (torch and dump %.1fs)" % (label, time.time() - t0, t_torch))
                os.remove(inp)
    except Exception as e:  # noqa: BLE001 - report, keep the logs
        import traceback
        say(traceback.format_exc())
        die("failed: %s: %s" % (type(e).__name__, e))
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)

    # The table: one line per case x variant x recorded step.
    lines = ["%-28s %-26s %4s %12s %12s %12s %8s" % ("case", "variant", "step", "params", "exp_avg",
                                                    "exp_avg_sq", "max_ulp")]
    for label, vname, step, cp, cm, cv in rows:
        lines.append("%-28s %-26s %4d %12d %12d %12d %8d" % (label, vname, step, cp[0], cm[0], cv[0],
                                                             max(cp[1], cm[1], cv[1])))
    with open(os.path.join(outdir, "table.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    say("\n".join(lines))
    say("final-step mismatches per variant over all cases: " +
        ", ".join("%s: %d" % kv for kv in variant_total.items()))
    clean = [k for k, v in variant_total.items() if v == 0]
    say("variants with zero final-step mismatches everywhere: %s" % (", ".join(clean) if clean else "none"))
    summary["variant_final_mismatches"] = variant_total
    summary["primary_mismatches_all_steps"] = primary_bad
    summary["verdict"] = "pass" if primary_bad == 0 else "fail"
    with open(os.path.join(outdir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    say("VERDICT: %s (primary variant %s: %d mismatching values over all cases and steps)" % (
        summary["verdict"].upper(), variant_name(PRIMARY), primary_bad))
    return 0 if primary_bad == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
