#!/usr/bin/env python3
"""Golden outputs of the released FORGE package's element-wise AdamW step (issue 16), recorded on
the GPU runner and re-checked on the CPU by suites/cpu/test_forge_release_model.cpp against the
host model of its arithmetic (reference/forge_release_model.h).

Runs the release's `optimizer_only_adamw(G, W, m, v, ...)` (kernel.py; element-wise, so its tile
config cannot change a bit) on crafted fp32 G, W, m and v, fp32 state and weights (no bf16
rounding to hide the arithmetic), for several hyperparameter sets and step numbers.

Usage: forge_golden.py OUT.bin [--forge-src DIR] [--n 8192]
File format (little-endian): b"FHFGOLD1", u32 n_sets, then per set: f64 lr, beta1, beta2, eps,
weight_decay; i64 step; i64 n; then n-element uint32 arrays G, W0, m0, v0, W1, m1, v1 (fp32 bits).
"""
import argparse
import os
import struct
import sys

import numpy as np

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
    blobs = [b"FHFGOLD1", struct.pack("<I", len(SETS))]
    # A 2-D layout the kernel tiles like a weight: rows x 128 columns.
    rows = a.n // 128
    for lr, b1, b2, eps, wd, step in SETS:
        g, w, m, v = crafted(rng, a.n)
        dev = lambda x: torch.from_numpy(x.reshape(rows, 128).copy()).cuda()
        G, W, M, V = dev(g), dev(w), dev(m), dev(v)
        K.optimizer_only_adamw(G, W, M, V, lr=lr, beta1=b1, beta2=b2, eps=eps, weight_decay=wd, step=step)
        torch.cuda.synchronize()
        blobs.append(struct.pack("<5d2q", lr, b1, b2, eps, wd, step, a.n))
        for arr in (g, w, m, v, W.cpu().numpy().ravel(), M.cpu().numpy().ravel(), V.cpu().numpy().ravel()):
            blobs.append(np.ascontiguousarray(arr, dtype=np.float32).view(np.uint32).tobytes())
    tmp = a.out + ".partial"
    with open(tmp, "wb") as f:
        f.write(b"".join(blobs))
    os.replace(tmp, a.out)
    print(f"forge_golden: wrote {a.out}: {len(SETS)} sets x {a.n} elements")


if __name__ == "__main__":
    main()
