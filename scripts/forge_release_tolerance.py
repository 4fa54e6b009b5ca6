#!/usr/bin/env python3
"""The FORGE release's own correctness test, applied to one of its CUDA paths (issue 32, item 5).

tests/test_correctness.py (release commit 7cba611) compares a path with its `_reference_adamw_step`
(torch matmul, then AdamW in torch) by torch.testing.assert_close at its ATOL = RTOL = 5e-3; its bf16
test starts from a zero state at step 1. This script imports that reference and those tolerances
from the release (nothing copied) and runs them on PATH at the test's three shapes, for steps 1..3:
each step's reference starts from the path's own W, m, v before that step (the test's one-step
structure; from step 2 on the state is non-zero). Per step it records whether the release's test
would pass, and the largest absolute deviation of W, m and v.

Usage: forge_release_tolerance.py OUT.json --path NAME [--forge-src DIR] [--prebuilt DIR]
Runs on the GPU runner (torch, the release, CUTLASS's headers under DIR/cutlass for CUDA paths).
Exit: 0 written; 2 bad input or the path cannot run (nothing written).
"""
import argparse
import json
import os
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import forge_adapter as fa  # noqa: E402  (the paths, the release loader, --prebuilt)
import atomic_file  # noqa: E402

SHAPES = [(128, 256, 128), (64, 512, 256), (256, 1024, 512)]  # (BT, V, H): test_matches_reference's
HYPER = dict(lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.01)  # the test's values
STEPS = 3


def release_test_module(forge_src):
    """The release's tests/test_correctness.py; a stand-in for pytest's decorators when pytest is absent."""
    try:
        import pytest  # noqa: F401
    except ImportError:
        mark = types.SimpleNamespace(skipif=lambda *a, **k: (lambda f: f), parametrize=lambda *a, **k: (lambda f: f))
        sys.modules["pytest"] = types.SimpleNamespace(mark=mark)
    sys.path.insert(0, os.path.abspath(forge_src))
    import importlib
    return importlib.import_module("tests.test_correctness")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--path", required=True, choices=sorted(p for p in fa.PATHS if p.startswith("evt_sm90")))
    ap.add_argument("--forge-src", default="external_release/forge")
    ap.add_argument("--prebuilt")
    args = ap.parse_args()
    args.cases_filter = None
    try:
        atomic_file.check_output(args.out, [], True)
        env = fa.Env(args)
        tc = release_test_module(args.forge_src)
        call = fa.evt_sm90_step(env)  # --path is one of the Sm90 EVT paths (argparse choices)
    except (fa.BadInput, atomic_file.BadInput, ImportError, RuntimeError) as e:  # RuntimeError: its JIT build failed
        print("forge_release_tolerance: %s" % e, file=sys.stderr)
        return 2
    torch = env.torch
    atol, rtol = tc.ATOL, tc.RTOL
    rows = []
    for bt, vdim, h in SHAPES:
        torch.manual_seed(42)
        bf = torch.bfloat16
        w = torch.randn(vdim, h, device="cuda", dtype=bf)
        m = torch.zeros(vdim, h, device="cuda", dtype=bf)
        v = torch.zeros(vdim, h, device="cuda", dtype=bf)
        steps = []
        for step in range(1, STEPS + 1):
            go = torch.randn(bt, vdim, device="cuda", dtype=bf)
            x = torch.randn(bt, h, device="cuda", dtype=bf)
            state = "zero" if step == 1 else "non-zero"
            w_ref, m_ref, v_ref = tc._reference_adamw_step(go, x, w, m, v, step=step, **HYPER)
            call(go, x, w, m, v, step=step, **HYPER)
            torch.cuda.synchronize()
            verdicts = {}
            for name, got, ref in (("W", w, w_ref.to(w.dtype)), ("m", m, m_ref), ("v", v, v_ref)):
                try:
                    torch.testing.assert_close(got, ref.to(got.dtype), atol=atol, rtol=rtol)
                    ok = True
                except AssertionError:
                    ok = False
                verdicts[name] = {"passes": ok, "max_abs": float((got.float() - ref.float()).abs().max())}
            steps.append({"step": step, "state_before": state,
                          "release_test_passes": all(x["passes"] for x in verdicts.values()), "tensors": verdicts})
            print("%s %dx%dx%d step %d (%s state): release test %s; max |dW| %.3g |dm| %.3g |dv| %.3g" % (
                args.path, vdim, h, bt, step, state, "passes" if steps[-1]["release_test_passes"] else "FAILS",
                verdicts["W"]["max_abs"], verdicts["m"]["max_abs"], verdicts["v"]["max_abs"]), flush=True)
        rows.append({"BT": bt, "V": vdim, "H": h, "steps": steps})
    doc = {"path": args.path, "kernel": fa.PATHS[args.path]["kernel"], "release_test": "tests/test_correctness.py",
           "atol": atol, "rtol": rtol, "hyper": HYPER, "device": torch.cuda.get_device_name(), "shapes": rows}

    def work(tmp):
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
    atomic_file.replace_from_temp(args.out, work, prefix=".tolerance.", replace=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
