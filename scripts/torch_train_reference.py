#!/usr/bin/env python3
"""The convergence runs' torch reference (issue 33): the model forge-model-step trains, written in
PyTorch, trained by torch.optim.AdamW on the same windows of the same corpus.

The model (kernels/gpu/model_step.h): token embedding; per block RMSNorm (eps 1e-5), q / k / v
projections, causal softmax attention over grouped KV heads (no rotary embedding), o projection,
RMSNorm, SiLU-gated MLP (gate, up, down); final RMSNorm, an untied LM head, mean cross-entropy over
the T tokens (batch 1). Weights N(0, 0.02) from torch's generator at --seed, norms 1 (the same
distribution as the harness, not the same draws: runs are compared across seeds). AdamW with the
harness's hyperparameters (betas 0.9 / 0.999, eps 1e-8, weight decay 0.01), fused on CUDA.
--dtype bf16: weights, gradients and moments bf16 (torch's bf16 training, the paper's baseline);
fp32: all fp32 with TF32 off (the precision floor's other end).
Windows: token_data.h's splitmix64 offsets (train_offset / heldout_offset), so step s of a seed
reads the harness's batch. Output: the JSON forge-model-step --train writes (kind convergence_run,
path torch), without step digests.

Usage: torch_train_reference.py --data DIR --out F.json [--model llama_30m|tiny] [--dtype bf16|fp32]
       [--seed S] [--steps 1000] [--tokens 512] [--lr 6e-4] [--eval-every 50] [--eval-batches 8]
       [--device cuda|cpu]
Exit 0 trained, 1 the run failed (the JSON says how), 2 bad usage or input.
"""
import argparse
import json
import math
import os
import struct
import sys
import time

MASK64 = (1 << 64) - 1
SHAPES = {  # reference/memory_model.cpp model_shape
    "llama_30m": dict(hidden=512, intermediate=1536, heads=8, kv_heads=4, head_dim=64, vocab=4096, layers=8),
    "tiny": dict(hidden=128, intermediate=256, heads=8, kv_heads=8, head_dim=16, vocab=512, layers=2),
}


def splitmix64(x):
    z = (x + 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def train_offset(seed, step, n, T):
    return splitmix64(((seed * 0x100000001B3) & MASK64) ^ step) % (n - T)


def heldout_offset(i, batches, n, T):
    return i * (n - T - 1) // batches


def load_tokens(path, vocab, min_tokens):
    with open(path, "rb") as f:
        b = f.read()
    if len(b) % 2:
        raise ValueError("%s: an odd number of bytes, not uint16 ids" % path)
    ids = list(struct.unpack("<%dH" % (len(b) // 2), b))
    if ids and max(ids) >= vocab:
        raise ValueError("%s: a token id %d not below the model's vocabulary of %d" % (path, max(ids), vocab))
    if len(ids) < min_tokens:
        raise ValueError("%s: %d tokens, fewer than the %d a window needs" % (path, len(ids), min_tokens))
    return ids


def build(torch, shape, dtype, device, seed):
    g = torch.Generator(device="cpu").manual_seed(seed)
    H, I, nh, kvh, hd, V, L = (shape[k] for k in ("hidden", "intermediate", "heads", "kv_heads", "head_dim", "vocab", "layers"))

    def w(rows, cols):
        return torch.nn.Parameter((torch.randn(rows, cols, generator=g) * 0.02).to(device=device, dtype=dtype))

    def ones(n):
        return torch.nn.Parameter(torch.ones(n, device=device, dtype=dtype))

    p = {"embed_tokens": w(V, H)}
    for l in range(L):
        pre = "layers.%d." % l
        p[pre + "input_layernorm"] = ones(H)
        p[pre + "q_proj"] = w(nh * hd, H)
        p[pre + "k_proj"] = w(kvh * hd, H)
        p[pre + "v_proj"] = w(kvh * hd, H)
        p[pre + "o_proj"] = w(H, nh * hd)
        p[pre + "post_attention_layernorm"] = ones(H)
        p[pre + "gate_proj"] = w(I, H)
        p[pre + "up_proj"] = w(I, H)
        p[pre + "down_proj"] = w(H, I)
    p["norm"] = ones(H)
    p["lm_head"] = w(V, H)
    return p


def forward(torch, p, shape, tokens, labels):
    F = torch.nn.functional
    H, nh, kvh, hd, L = (shape[k] for k in ("hidden", "heads", "kv_heads", "head_dim", "layers"))
    T = tokens.shape[0]
    dt = p["embed_tokens"].dtype

    def norm(x, gw):  # fp32 statistics, the result in the weights' type
        r = torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5)
        return (x.float() * r * gw.float()).to(dt)

    x = p["embed_tokens"][tokens].float()
    mask = torch.ones(T, T, device=tokens.device, dtype=torch.bool).tril()
    for l in range(L):
        pre = "layers.%d." % l
        h = norm(x, p[pre + "input_layernorm"])
        q = (h @ p[pre + "q_proj"].t()).view(T, nh, hd).transpose(0, 1)
        k = (h @ p[pre + "k_proj"].t()).view(T, kvh, hd).transpose(0, 1).repeat_interleave(nh // kvh, dim=0)
        v = (h @ p[pre + "v_proj"].t()).view(T, kvh, hd).transpose(0, 1).repeat_interleave(nh // kvh, dim=0)
        s = (q.float() @ k.float().transpose(1, 2)) / math.sqrt(hd)
        a = torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1).to(dt) @ v
        x = x + (a.transpose(0, 1).reshape(T, nh * hd) @ p[pre + "o_proj"].t()).float()
        h = norm(x, p[pre + "post_attention_layernorm"])
        m = (F.silu((h @ p[pre + "gate_proj"].t()).float()) * (h @ p[pre + "up_proj"].t()).float()).to(dt)
        x = x + (m @ p[pre + "down_proj"].t()).float()
    logits = (norm(x, p["norm"]) @ p["lm_head"].t()).float()
    return F.cross_entropy(logits, labels)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", default="llama_30m", choices=sorted(SHAPES))
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp32"])
    ap.add_argument("--seed", type=int, default=0x18)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--tokens", type=int, default=512)
    ap.add_argument("--lr", type=float, default=6e-4)
    ap.add_argument("--eval-every", type=int, default=50)
    ap.add_argument("--eval-batches", type=int, default=8)
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    if a.steps < 1 or a.tokens < 1 or a.eval_every < 1 or a.eval_batches < 1 or not 0 < a.lr <= 1 or a.seed < 0:
        print("torch_train_reference.py: --steps, --tokens, --eval-every, --eval-batches >= 1, --lr in (0, 1], "
              "--seed >= 0", file=sys.stderr)
        return 2
    if os.path.isdir(a.out):
        print("torch_train_reference.py: --out %s is a folder" % a.out, file=sys.stderr)
        return 2
    shape = SHAPES[a.model]
    try:
        train = load_tokens(os.path.join(a.data, "train.u16"), shape["vocab"], a.tokens + 1)
        held = load_tokens(os.path.join(a.data, "heldout.u16"), shape["vocab"], a.tokens + 1)
    except (OSError, ValueError) as e:
        print("torch_train_reference.py: %s" % e, file=sys.stderr)
        return 2
    import torch  # only now: a bad command line is refused without it

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32
    doc = {"kind": "convergence_run", "path": "torch", "config": "torch_adamw_" + a.dtype, "model": a.model,
           "seed": a.seed, "lr": a.lr, "weight_decay": 0.01, "steps": a.steps, "seq": a.tokens, "batch": 1,
           "eval_every": a.eval_every, "eval_batches": a.eval_batches, "dtype": a.dtype, "torch": torch.__version__,
           "data": {"dir": a.data, "train_tokens": len(train), "heldout_tokens": len(held)}, "status": "ok",
           "producer": "scripts/torch_train_reference.py"}
    rc = 0
    try:
        dev = torch.device(a.device)
        doc["device"] = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"
        p = build(torch, shape, dtype, dev, a.seed)
        doc["params"] = sum(t.numel() for t in p.values())
        opt = torch.optim.AdamW(list(p.values()), lr=a.lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01,
                                **({"fused": True} if dev.type == "cuda" else {}))
        T = a.tokens

        def batch(ids, o):
            t = torch.tensor(ids[o:o + T + 1], device=dev, dtype=torch.long)
            return t[:-1], t[1:]

        def evaluate():
            with torch.no_grad():
                return sum(float(forward(torch, p, shape, *batch(held, heldout_offset(i, a.eval_batches, len(held), T))))
                           for i in range(a.eval_batches)) / a.eval_batches

        losses, eval_steps, eval_losses = [], [0], [evaluate()]
        t0 = time.time()
        for s in range(1, a.steps + 1):
            loss = forward(torch, p, shape, *batch(train, train_offset(a.seed, s, len(train), T)))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(float(loss))
            if s % a.eval_every == 0 or s == a.steps:
                eval_steps.append(s)
                eval_losses.append(evaluate())
                print("torch_train_reference: step %d train %.4f held-out %.4f" % (s, losses[-1], eval_losses[-1]),
                      file=sys.stderr)
        doc["seconds"] = time.time() - t0
        fin = [x if math.isfinite(x) else None for x in losses]
        efin = [x if math.isfinite(x) else None for x in eval_losses]
        doc.update({"train_loss": fin, "eval_steps": eval_steps, "eval_loss": efin,
                    "nonfinite_losses": fin.count(None) + efin.count(None)})
    except Exception as e:  # the run failed: say how, in the JSON
        doc["status"] = "failed"
        doc["error"] = "%s: %s" % (type(e).__name__, e)
        rc = 1
    tmp = a.out + ".tmp.%d" % os.getpid()
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(tmp, a.out)
    return rc


if __name__ == "__main__":
    sys.exit(main())
