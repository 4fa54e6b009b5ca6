#!/usr/bin/env python3
"""Peak memory and step time of a Llama-3.1-8B-shaped training step: torch's fused AdamW against
the released FORGE package (`fused_grad_optimizer`), one configuration per process (so each
process's peak memory counts only its own configuration). This checks the README's memory/time
table (README:54-62; survey §7) under stated switches.

Usage:
  forge_model_bench.py --config torch_fused|torch_hooks|forge|forge_tma_ws|forge_int8
                       --model llama8b|qwen14b|qwen3_0p6b|qwen3_1p7b|qwen3_4b|qwen3_8b|gpt2_124m|tiny [--layers N] [--steps 20] [--forge-src DIR] --out OUT.json
  forge_model_bench.py --strict FILE.json   (rewrite an older file's bare NaN as null, in place)

  torch_fused   torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
  torch_hooks   optimizer in backward: one torch.optim.AdamW(fused=True) per parameter, stepped from
                its register_post_accumulate_grad_hook, the gradient freed right after
  forge         the README quickstart (README:102-121): every nn.Linear -> FusedLinear.from_linear(
                lin, "adamw"), a FusedOptimizerManager, torch.optim.AdamW(fused=True) for the rest;
                kernel.py switches left at the release's defaults (_kernel_mode="auto", no TMA)
  forge_tma_ws  forge with kernel._use_tma=True, kernel._use_tma_ws=True (K:1277,1291)
  forge_int8    forge with state_mode="int8" passed to from_linear (the manager's quantize_state
                has no effect, survey §5)

The model: random init directly on the GPU in bf16, model.train(), batch 1, sequence 512, random
token ids, loss = model(input_ids, labels=input_ids).loss. The first 3 steps are warm-up (Triton
autotuning happens there) and are left out of the median. Peak memory is over all steps, measured
from after the model build (torch.cuda.reset_peak_memory_stats).

Writes OUT.json (strict JSON: a non-finite loss is null, counted in nonfinite_losses) with status "ok", or status "failed" and the error (and what was measured before
it); exit status 0 or 1. Runs on the GPU runner (torch 2.11, triton 3.6, transformers 5.x).
"""
import argparse
import json
import math
import os
import statistics
import sys
import time
import traceback

import atomic_file  # scripts/atomic_file.py, beside this script

WARMUP = 3
SEQ = 512

MODELS = {
    # Llama-3.1-8B's shapes (untied embeddings, GQA 32/8)
    "llama8b": dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                    num_attention_heads=32, num_key_value_heads=8, vocab_size=128256),
    # Qwen3-14B's sizes on the Llama architecture (no qk-norm: 2 x 128 weights a layer, left out)
    "qwen14b": dict(hidden_size=5120, intermediate_size=17408, num_hidden_layers=40,
                    num_attention_heads=40, num_key_value_heads=8, head_dim=128, vocab_size=151936),
    # The Qwen3 family (config.json; tied embeddings up to 4B) and GPT-2 124M's sizes, all on the
    # Llama architecture as above (issue 33's family table); the harness's forge-model-step names.
    "qwen3_0p6b": dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28, num_attention_heads=16,
                       num_key_value_heads=8, head_dim=128, vocab_size=151936, tie_word_embeddings=True),
    "qwen3_1p7b": dict(hidden_size=2048, intermediate_size=6144, num_hidden_layers=28, num_attention_heads=16,
                       num_key_value_heads=8, head_dim=128, vocab_size=151936, tie_word_embeddings=True),
    "qwen3_4b": dict(hidden_size=2560, intermediate_size=9728, num_hidden_layers=36, num_attention_heads=32,
                     num_key_value_heads=8, head_dim=128, vocab_size=151936, tie_word_embeddings=True),
    "qwen3_8b": dict(hidden_size=4096, intermediate_size=12288, num_hidden_layers=36, num_attention_heads=32,
                     num_key_value_heads=8, head_dim=128, vocab_size=151936),
    "gpt2_124m": dict(hidden_size=768, intermediate_size=2048, num_hidden_layers=12, num_attention_heads=12,
                      num_key_value_heads=12, vocab_size=50257, tie_word_embeddings=True),
    # a quick smoke test of the same code
    "tiny": dict(hidden_size=256, intermediate_size=1024, num_hidden_layers=2,
                 num_attention_heads=4, num_key_value_heads=2, vocab_size=32000),
}


def err_text(e, limit=2000):
    text = "%s: %s" % (type(e).__name__, e)
    return text if len(text) <= limit else text[:limit] + " [...]"


def build_model(torch, name, layers=None):
    """LlamaForCausalLM with random weights, allocated on the GPU in bf16 from the start."""
    from transformers import LlamaConfig, LlamaForCausalLM
    kw = dict(dict(tie_word_embeddings=False), **MODELS[name], max_position_embeddings=SEQ)
    if layers is not None:
        kw["num_hidden_layers"] = layers
    try:
        config = LlamaConfig(attn_implementation="sdpa", **kw)
    except TypeError:
        config = LlamaConfig(**kw)
        config._attn_implementation = "sdpa"
    # bf16 default dtype + cuda default device: parameters are born there (no fp32 or CPU copy)
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        model = LlamaForCausalLM(config)
    model = model.to(torch.bfloat16)  # a no-op when the default dtype took effect
    return model, config


def swap_linears(torch, model, state_mode):
    """The README's recipe: every nn.Linear becomes a FusedLinear sharing its weight."""
    from fused_grad_optimizer import FusedLinear
    targets = [(parent, child_name, child)
               for parent in model.modules()
               for child_name, child in parent.named_children()
               if isinstance(child, torch.nn.Linear)]
    # from_linear builds a fresh module whose own weight (module.py:50-51) is thrown away; under
    # the cuda device it is a short-lived bf16 GPU tensor instead of a big fp32 CPU one.
    with torch.device("cuda"):
        for parent, child_name, child in targets:
            fused = FusedLinear.from_linear(child, optimizer_type="adamw", state_mode=state_mode)
            setattr(parent, child_name, fused)
    return len(targets)


def run(args, result):
    import torch
    result["torch"] = torch.__version__
    try:
        import triton
        result["triton"] = triton.__version__
    except ImportError:
        result["triton"] = "not installed"
    import transformers
    result["transformers"] = transformers.__version__
    if not transformers.__version__.startswith("5."):
        result["warning"] = "expected transformers 5.x, found %s" % transformers.__version__
    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA device")
    result["device"] = torch.cuda.get_device_name()
    result["cuda"] = str(torch.version.cuda)

    forge = args.config.startswith("forge")
    if forge:
        sys.path.insert(0, os.path.join(os.path.abspath(args.forge_src), "src"))
        import fused_grad_optimizer.kernel as K
        if args.config == "forge_tma_ws":
            K._use_tma = True
            K._use_tma_ws = True
        result["forge_src"] = os.path.abspath(args.forge_src)
        result["forge_commit"] = args.forge_commit
        result["switches"] = {n: getattr(K, n) for n in ("_kernel_mode", "_use_tma", "_use_tma_ws", "_use_streamk")}

    t0 = time.perf_counter()
    model, config = build_model(torch, args.model, args.layers)
    result["layers"] = config.num_hidden_layers
    result["attn_implementation"] = str(getattr(model.config, "_attn_implementation", "unknown"))
    result["params"] = sum(p.numel() for p in model.parameters())

    if forge:
        from fused_grad_optimizer import FusedOptimizerManager
        state_mode = "int8" if args.config == "forge_int8" else None  # None: state in W's dtype
        result["fused_linears"] = swap_linears(torch, model, state_mode)
        result["state_mode"] = state_mode or "bf16 (the weight's dtype)"
        manager = FusedOptimizerManager(model)
        rest = manager.get_non_fused_params()
        result["fused_params"] = sum(p.numel() for p in model.parameters()) - sum(p.numel() for p in rest)
        optimizer = torch.optim.AdamW(rest, lr=args.lr, fused=True)
    elif args.config == "torch_hooks":
        manager = None
        per_param = {}
        for p in model.parameters():
            per_param[p] = torch.optim.AdamW([p], lr=args.lr, fused=True)

            def hook(param):
                per_param[param].step()
                per_param[param].zero_grad(set_to_none=True)
            p.register_post_accumulate_grad_hook(hook)
        optimizer = None
    else:
        manager = None
        optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, fused=True)
    torch.set_default_dtype(torch.float32)  # the build is over; leave torch's defaults as usual
    model.train()
    result["build_s"] = round(time.perf_counter() - t0, 2)

    gen = torch.Generator(device="cuda")
    gen.manual_seed(0)
    ids = torch.randint(0, config.vocab_size, (1, SEQ), device="cuda", generator=gen)

    torch.cuda.synchronize()
    result["model_bytes"] = torch.cuda.memory_allocated()  # weights (+ nothing else yet)
    torch.cuda.reset_peak_memory_stats()
    step_ms, losses = [], []
    result["step_ms"], result["losses"] = step_ms, losses  # partial results survive an exception
    for _ in range(args.steps):
        torch.cuda.synchronize()
        t_start = time.perf_counter()
        if manager is not None:
            manager.pre_step(lr=args.lr)  # lr (and defaults b1 .9, b2 .999, eps 1e-8, wd .01) for the fused layers
        loss = model(input_ids=ids, labels=ids, use_cache=False).loss
        loss.backward()  # FORGE (and torch_hooks) update their layers here
        if optimizer is not None:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        step_ms.append((time.perf_counter() - t_start) * 1e3)
        losses.append(float(loss.item()))
        result["peak_bytes"] = torch.cuda.max_memory_allocated()
        result["peak_reserved_bytes"] = torch.cuda.max_memory_reserved()

    timed = step_ms[WARMUP:] or step_ms
    result["median_ms"] = statistics.median(timed) if timed else None
    result["timed_steps"] = len(step_ms[WARMUP:])


def strict(doc):
    """Strict JSON: a non-finite number (a NaN loss) becomes null; nonfinite_losses counts them."""
    def clean(x):
        if isinstance(x, float) and not math.isfinite(x):
            return None
        if isinstance(x, list):
            return [clean(v) for v in x]
        if isinstance(x, dict):
            return {k: clean(v) for k, v in x.items()}
        return x
    out = clean(doc)
    if "losses" in doc:
        out["nonfinite_losses"] = sum(1 for v in doc["losses"] if not math.isfinite(v))
    return out


def write_json(path, doc):
    def work(tmp):
        with open(tmp, "w") as f:
            json.dump(strict(doc), f, indent=1, allow_nan=False)
    atomic_file.replace_from_temp(path, work, prefix=".forge_model_bench.")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--strict":
        # An earlier run's file written with bare NaN: the same data as strict JSON, in place.
        with open(sys.argv[2]) as f:
            write_json(sys.argv[2], json.load(f))
        return 0
    ap = argparse.ArgumentParser(description="Llama-shaped step: torch fused AdamW vs FORGE")
    ap.add_argument("--config", required=True, choices=["torch_fused", "torch_hooks", "forge", "forge_tma_ws", "forge_int8"])
    ap.add_argument("--model", required=True, choices=sorted(MODELS))
    ap.add_argument("--layers", type=int, default=None, help="override the family's layer count")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--forge-src", default="../forge_release", help="the release's source tree (holds src/)")
    ap.add_argument("--forge-commit", default="7cba611")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    if not os.path.isdir(os.path.dirname(os.path.abspath(args.out))):
        print("forge_model_bench: the folder of --out does not exist", file=sys.stderr)
        return 2

    result = {"config": args.config, "model": args.model, "steps": args.steps, "warmup_steps": WARMUP,
              "batch": 1, "seq": SEQ, "dtype": "bf16", "status": "ok"}
    rc = 0
    try:
        run(args, result)
    except Exception as e:  # OOM included: the JSON says what happened and what was measured
        result["status"] = "failed"
        result["error"] = err_text(e)
        result["traceback"] = traceback.format_exc()[-4000:]
        try:
            import torch
            if torch.cuda.is_available():
                result["peak_bytes"] = torch.cuda.max_memory_allocated()
                result["peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
        except Exception:
            pass
        rc = 1
    write_json(args.out, result)
    summary = {k: result.get(k) for k in ("config", "model", "status", "peak_bytes", "median_ms", "error")}
    print("forge_model_bench: " + json.dumps(summary), flush=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
