#!/usr/bin/env python3
"""What a PyTorch user gets for one linear layer's weight step on this GPU, beside forge-bench:
torch.mm for dW (= dY^T X) then torch.optim.AdamW(fused=True), with fp32 parameters and moments
and with bf16 parameters and moments, and torch.mm alone. CUDA events around one step, the L2
flushed before each, warm-up steps first; medians of --reps. Writes Google Benchmark JSON
(one entry per repetition, names torch/<what>/out<O>_in<I>_T<T>) so the same tools read both.

Usage: torch_layer_timing.py OUT.json [--shapes 4096x4096x512,...] [--reps 50]
Exit: 0 written, 2 bad usage or no CUDA device (nothing written).
"""
import argparse
import datetime
import json
import os
import statistics
import sys


def parse_shapes(text):
    shapes = []
    for s in text.split(","):
        try:
            out, inp, T = (int(v) for v in s.lower().split("x"))
        except ValueError:
            raise SystemExit("torch_layer_timing: --shapes: '%s' is not OUTxINxT" % s)
        if min(out, inp, T) < 1:
            raise SystemExit("torch_layer_timing: --shapes: '%s' has a dimension below 1" % s)
        shapes.append((out, inp, T))
    return shapes


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--shapes", default="4096x4096x512,4096x4096x2048,4096x4096x8192")
    ap.add_argument("--reps", type=int, default=50)
    a = ap.parse_args()
    if a.reps < 1:
        print("torch_layer_timing: --reps must be >= 1", file=sys.stderr)
        return 2
    shapes = parse_shapes(a.shapes)
    if os.path.isdir(a.out):
        print("torch_layer_timing: %s is a directory" % a.out, file=sys.stderr)
        return 2
    import torch
    if not torch.cuda.is_available():
        print("torch_layer_timing: no CUDA device", file=sys.stderr)
        return 2
    flush = torch.empty(2 * 64 * 1024 * 1024, dtype=torch.uint8, device="cuda")
    benchmarks = []

    def timed(name, step, warmup=5):
        for _ in range(warmup):
            step()
        torch.cuda.synchronize()
        times = []
        for k in range(a.reps):
            flush.fill_(k & 0xFF)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            step()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e6)  # ms -> ns
        for k, ns in enumerate(times):
            benchmarks.append({"name": name, "run_name": name, "run_type": "iteration", "repetitions": a.reps,
                               "repetition_index": k, "threads": 1, "iterations": 1, "real_time": ns,
                               "cpu_time": ns, "time_unit": "ns"})
        print("%s: median %.1f us" % (name, statistics.median(times) / 1e3), flush=True)

    for out, inp, T in shapes:
        tag = "out%d_in%d_T%d" % (out, inp, T)
        x = torch.randn(T, inp, device="cuda").to(torch.bfloat16)
        dy = torch.randn(T, out, device="cuda").to(torch.bfloat16)
        timed("torch/mm/" + tag, lambda: torch.mm(dy.t(), x))
        for dtype, label in ((torch.float32, "fp32"), (torch.bfloat16, "bf16")):
            w = torch.nn.Parameter(torch.randn(out, inp, device="cuda", dtype=dtype) * 0.02)
            opt = torch.optim.AdamW([w], lr=1e-4, fused=True)

            def step():
                w.grad = torch.mm(dy.t(), x).to(dtype)
                opt.step()
            timed("torch/mm_adamw_%s/%s" % (label, tag), step)
            del w, opt
        del x, dy
        torch.cuda.empty_cache()
    doc = {"context": {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                       "torch": torch.__version__, "device": torch.cuda.get_device_name(),
                       "timing": "CUDA events around one step, L2 flushed before each, 5 warm-up steps, "
                                 "%d repetitions" % a.reps},
           "benchmarks": benchmarks}
    tmp = a.out + ".tmp.%d" % os.getpid()
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
