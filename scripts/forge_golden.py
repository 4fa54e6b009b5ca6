#!/usr/bin/env python3
"""Golden outputs of the released FORGE package's element-wise AdamW step, recorded on
the GPU runner and re-checked on the CPU by suites/cpu/test_forge_release_model.cpp against the
host model of its arithmetic (kernels/rules/adamw_forge_release.h).

Runs the release's `optimizer_only_adamw(G, W, m, v, ...)` (kernel.py; element-wise, so its tile
config cannot change a bit) on crafted fp32 G, W, m and v, fp32 state and weights (no bf16
rounding to hide the arithmetic), for several hyperparameter sets and step numbers.

The two hardware approximations in that step (MUFU.RCP behind div.full.f32, MUFU.SQRT behind
sqrt.approx.ftz.f32) are not specified bit for bit, so the recorder also measures them: a probe
kernel of ours (not the release's code) replays the step as the host model describes it, with the
two instructions as inline PTX, and records every (input, output) pair they saw. The host model
uses those pairs as its tables (they are the instruction's outputs whatever the probe computes);
the recorder also prints how many of the probe's own W, m, v differ from the release's.

Usage: forge_golden.py OUT.bin [--forge-src DIR] [--n 8192]
File format (little-endian): b"FHFGOLD2", u32 n_sets, then per set: f64 lr, beta1, beta2, eps,
weight_decay; i64 step; i64 n; then n-element uint32 arrays G, W0, m0, v0, W1, m1, v1 (fp32 bits);
then two tables, rcp.approx.ftz.f32 and sqrt.approx.ftz.f32, each u64 count and that many input
bits (ascending) then output bits.
"""
import argparse
import os
import struct
import sys

import numpy as np

import atomic_file  # scripts/atomic_file.py, beside this script

SETS = [  # lr, beta1, beta2, eps, weight_decay, step
    (1e-3, 0.9, 0.999, 1e-8, 0.01, 1),
    (1e-3, 0.9, 0.999, 1e-8, 0.01, 10),
    (1e-4, 0.9, 0.999, 1e-8, 0.01, 1000),
    (3e-4, 0.95, 0.95, 1e-6, 0.1, 7),
]


def crafted(rng, n):
    """G over many magnitudes (and exact zeros), W, m and v of training-like sizes."""
    mag = 10.0 ** rng.uniform(-9, 2, n)
    g = (mag * rng.choice([-1.0, 1.0], n)).astype(np.float32)
    g[rng.random(n) < 0.02] = 0.0
    w = rng.normal(0, 0.02, n).astype(np.float32)
    m = (rng.normal(0, 1, n) * 10.0 ** rng.uniform(-6, -1, n)).astype(np.float32)
    v = ((rng.normal(0, 1, n) * 10.0 ** rng.uniform(-6, -1, n)) ** 2).astype(np.float32)
    v[rng.random(n) < 0.02] = 0.0
    return g, w, m, v


def probe_kernel():
    """The element-wise step of kernels/rules/adamw_forge_release.h in Triton, recording MUFU I/O."""
    import triton
    import triton.language as tl

    @triton.jit
    def rcp(x):
        return tl.inline_asm_elementwise("rcp.approx.ftz.f32 $0, $1;", "=r,r", [x], dtype=tl.float32,
                                         is_pure=True, pack=1)

    @triton.jit
    def sqrt_approx(x):
        return tl.inline_asm_elementwise("sqrt.approx.ftz.f32 $0, $1;", "=r,r", [x], dtype=tl.float32,
                                         is_pure=True, pack=1)

    @triton.jit
    def div_full(a, b, rcp_in, rcp_out, offs, mask):
        big = tl.abs(b) > 8.50705917302346158658e+37
        a = tl.where(big, a * 0.25, a)
        b = tl.where(big, b * 0.25, b)
        tiny = tl.abs(b) < 1.175494350822287508e-38
        a = tl.where(tiny, a * 16777216.0, a)
        b = tl.where(tiny, b * 16777216.0, b)
        r = rcp(b)
        tl.store(rcp_in + offs, b, mask=mask)
        tl.store(rcp_out + offs, r, mask=mask)
        return a * r

    @triton.jit
    def k(g_ptr, w_ptr, m_ptr, v_ptr, rin, rout, sin, sout, n, lr, b1, b2, eps, wd, bc1, bc2,
          BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        g = tl.load(g_ptr + offs, mask=mask)
        w = tl.load(w_ptr + offs, mask=mask)
        m = tl.load(m_ptr + offs, mask=mask)
        v = tl.load(v_ptr + offs, mask=mask)
        m = tl.fma(1.0 - b1, g, b1 * m)
        v = tl.fma((1.0 - b2) * g, g, b2 * v)
        m_hat = div_full(m, bc1 + tl.zeros_like(m), rin, rout, offs, mask)
        v_hat = div_full(v, bc2 + tl.zeros_like(v), rin, rout, offs + n, mask)
        s = sqrt_approx(v_hat)
        tl.store(sin + offs, v_hat, mask=mask)
        tl.store(sout + offs, s, mask=mask)
        q = div_full(lr * m_hat, s + eps, rin, rout, offs + 2 * n, mask)
        w = tl.fma(tl.fma(tl.zeros_like(w) - lr, wd, 1.0), w, -q)
        tl.store(w_ptr + offs, w, mask=mask)
        tl.store(m_ptr + offs, m, mask=mask)
        tl.store(v_ptr + offs, v, mask=mask)
    return k


def table(ins, outs):
    """Unique (input, output) pairs sorted by input; one input must always give one output."""
    i = np.concatenate(ins).view(np.uint32)
    o = np.concatenate(outs).view(np.uint32)
    pairs = np.unique(np.stack([i, o], axis=1), axis=0)
    if len(np.unique(pairs[:, 0])) != len(pairs):
        raise SystemExit("forge_golden: an approximate instruction gave two outputs for one input")
    return pairs[:, 0].copy(), pairs[:, 1].copy()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--forge-src", default=os.path.join(os.path.dirname(__file__), "..", "external_release", "forge"))
    ap.add_argument("--n", type=int, default=8192)
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(os.path.abspath(a.forge_src), "src"))
    import torch
    from fused_grad_optimizer import kernel as K

    rng = np.random.default_rng(20261203)
    blobs = [b"FHFGOLD2", struct.pack("<I", len(SETS))]
    probe = probe_kernel()
    rcp_in, rcp_out, sqrt_in, sqrt_out = [], [], [], []
    probe_differs = 0
    # A 2-D layout the kernel tiles like a weight: rows x 128 columns.
    rows = a.n // 128
    for lr, b1, b2, eps, wd, step in SETS:
        g, w, m, v = crafted(rng, a.n)
        dev = lambda x: torch.from_numpy(x.reshape(rows, 128).copy()).cuda()
        G, W, M, V = dev(g), dev(w), dev(m), dev(v)
        K.optimizer_only_adamw(G, W, M, V, lr=lr, beta1=b1, beta2=b2, eps=eps, weight_decay=wd, step=step)
        Gp, Wp, Mp, Vp = dev(g), dev(w), dev(m), dev(v)
        ri = torch.empty(3 * a.n, dtype=torch.float32, device="cuda")
        ro, si, so = torch.empty_like(ri), torch.empty(a.n, device="cuda"), torch.empty(a.n, device="cuda")
        # The wrapper's scalars: bias corrections in double, every scalar rounded to fp32 at launch.
        probe[(triton_cdiv(a.n, 1024),)](Gp, Wp, Mp, Vp, ri, ro, si, so, a.n, lr, b1, b2, eps, wd,
                                          1.0 - b1 ** step, 1.0 - b2 ** step, BLOCK=1024)
        torch.cuda.synchronize()
        for mine, theirs in ((Wp, W), (Mp, M), (Vp, V)):
            probe_differs += int((mine.view(torch.int32) != theirs.view(torch.int32)).sum())
        for dst, src in ((rcp_in, ri), (rcp_out, ro), (sqrt_in, si), (sqrt_out, so)):
            dst.append(src.cpu().numpy())
        blobs.append(struct.pack("<5d2q", lr, b1, b2, eps, wd, step, a.n))
        for arr in (g, w, m, v, W.cpu().numpy().ravel(), M.cpu().numpy().ravel(), V.cpu().numpy().ravel()):
            blobs.append(np.ascontiguousarray(arr, dtype=np.float32).view(np.uint32).tobytes())
    for ins, outs in ((rcp_in, rcp_out), (sqrt_in, sqrt_out)):
        tin, tout = table(ins, outs)
        blobs += [struct.pack("<Q", len(tin)), tin.tobytes(), tout.tobytes()]
    print(f"forge_golden: probe kernel vs release: {probe_differs} of {3 * len(SETS) * a.n} W/m/v values differ")
    def work(tmp):
        with open(tmp, "wb") as f:
            f.write(b"".join(blobs))
    atomic_file.replace_from_temp(a.out, work, prefix=".forge_golden.")
    print(f"forge_golden: wrote {a.out}: {len(SETS)} sets x {a.n} elements")


def triton_cdiv(a, b):
    return (a + b - 1) // b


if __name__ == "__main__":
    main()
