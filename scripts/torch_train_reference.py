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
--init-from W.bin (forge-model-step --train --dump-init): start from the harness's own initial bf16
weights instead (the config gets "_from_harness"): with --dtype fp32 the independent fp32 reference
the claim compares the harness's first loss with; with --compare-grads G.bin (forge-model-step --train
--update standard --dump-grads) also the harness's first-step gradients against this fp32 autograd's on
the same batch: per parameter ||G_harness - G_torch|| / ||G_torch|| (grad_rel_err).
--optimizer forge|forge_int8 --forge-src DIR: the released FORGE package (`fused_grad_optimizer`, its
source tree DIR holding src/; imported, never copied) trains the same model instead, as its README's
recipe does: each linear weight (q, k, v, o, gate, up, down, the LM head) behind a FusedLinear (state in
the weight's bf16, or state_mode "int8"), stepped inside backward by a FusedOptimizerManager; the
embedding and the norms by torch.optim.AdamW (fused). Path "forge_release"; bf16 and CUDA only.
Windows: token_data.h's (train_offset: the run seed's stream "convergence_parity/train_windows" through
scripts/seed_stream.py; heldout_offset), so step s of a seed reads the harness's batch. Output: the JSON forge-model-step --train writes (kind convergence_run,
path torch), without step digests.

Usage: torch_train_reference.py --data DIR --out F.json [--model llama_30m|tiny] [--dtype bf16|fp32]
       [--seed S] [--steps 1000] [--tokens 512] [--lr 6e-4] [--eval-every 50] [--eval-batches 8]
       [--device cuda|cpu] [--init-from W.bin [--compare-grads G.bin]]
       [--optimizer adamw|forge|forge_int8 --forge-src DIR]
Exit 0 trained, 1 the run failed (the JSON says how), 2 bad usage or input.
"""
import argparse
import json
import math
import os
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from seed_stream import stream_seed  # noqa: E402

SHAPES = {  # reference/memory_model.cpp model_shape
    "llama_30m": dict(hidden=512, intermediate=1536, heads=8, kv_heads=4, head_dim=64, vocab=4096, layers=8),
    "tiny": dict(hidden=128, intermediate=256, heads=8, kv_heads=8, head_dim=16, vocab=512, layers=2),
}


def train_offset(run_seed, step, n, T):
    return stream_seed(run_seed, "convergence_parity/train_windows", step) % (n - T)


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


def read_dump(path, kind, value_bytes):
    """forge-model-step's --dump-init (kind fh_model_weights, bf16 bits) and --dump-grads (fh_model_grads,
    fp32) files: a JSON line naming each parameter's shape and offset, then the little-endian values.
    Returns the head and, per parameter name, (rows, cols, its bytes)."""
    with open(path, "rb") as f:
        head = json.loads(f.readline().decode("utf-8"))
        data = f.read()
    if not isinstance(head, dict) or head.get("kind") != kind or not isinstance(head.get("params"), list):
        raise ValueError("%s: not an %s file" % (path, kind))
    out = {}
    for e in head["params"]:
        n = e["rows"] * e["cols"]
        if e["offset"] < 0 or value_bytes * (e["offset"] + n) > len(data):
            raise ValueError("%s: parameter %s runs past the data" % (path, e["name"]))
        out[e["name"]] = (e["rows"], e["cols"], data[value_bytes * e["offset"]: value_bytes * (e["offset"] + n)])
    return head, out


def grad_errors(torch, p, harness):
    """Per parameter: the Frobenius norm of the harness's gradient minus torch's over torch's."""
    if set(harness) != set(p):
        raise ValueError("the dumped gradients are not this model's: %s" % sorted(set(harness) ^ set(p))[:4])
    out = {}
    for name, t in p.items():
        rows, cols, raw = harness[name]
        g = torch.frombuffer(bytearray(raw), dtype=torch.float32).to(torch.float64)
        ref = t.grad.detach().to("cpu", torch.float64).reshape(-1)
        if g.numel() != ref.numel():
            raise ValueError("parameter %s: %d gradient values dumped for %d" % (name, g.numel(), ref.numel()))
        out[name] = float((g - ref).norm() / ref.norm()) if float(ref.norm()) > 0 else float((g - ref).norm())
    return out


def load_init(torch, p, init, device, dtype):
    """The parameters of build() set to the dumped bf16 values; names and shapes must match."""
    if set(init) != set(p):
        raise ValueError("the dumped parameters are not this model's: %s" % sorted(set(init) ^ set(p))[:4])
    with torch.no_grad():
        for name, t in p.items():
            rows, cols, raw = init[name]
            v = torch.frombuffer(bytearray(raw), dtype=torch.int16).view(torch.bfloat16)
            if v.numel() != t.numel():
                raise ValueError("parameter %s: %d values dumped for %d" % (name, v.numel(), t.numel()))
            t.copy_(v.reshape(t.shape).to(device=device, dtype=dtype))


LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def linear_names(shape):
    return ["layers.%d.%s" % (l, n) for l in range(shape["layers"]) for n in LINEARS] + ["lm_head"]


def forward(torch, p, shape, tokens, labels, mm=None):
    """The mean cross-entropy; mm(name, x): x times the named linear weight transposed (default:
    the matrix product; the released package: its FusedLinear)."""
    F = torch.nn.functional
    mm = mm or (lambda name, h: h @ p[name].t())
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
        q = mm(pre + "q_proj", h).view(T, nh, hd).transpose(0, 1)
        k = mm(pre + "k_proj", h).view(T, kvh, hd).transpose(0, 1).repeat_interleave(nh // kvh, dim=0)
        v = mm(pre + "v_proj", h).view(T, kvh, hd).transpose(0, 1).repeat_interleave(nh // kvh, dim=0)
        s = (q.float() @ k.float().transpose(1, 2)) / math.sqrt(hd)
        a = torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1).to(dt) @ v
        x = x + mm(pre + "o_proj", a.transpose(0, 1).reshape(T, nh * hd)).float()
        h = norm(x, p[pre + "post_attention_layernorm"])
        m = (F.silu(mm(pre + "gate_proj", h).float()) * mm(pre + "up_proj", h).float()).to(dt)
        x = x + mm(pre + "down_proj", m).float()
    logits = mm("lm_head", norm(x, p["norm"])).float()
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
    ap.add_argument("--init-from", default="")
    ap.add_argument("--compare-grads", default="")
    ap.add_argument("--optimizer", default="adamw", choices=["adamw", "forge", "forge_int8"])
    ap.add_argument("--forge-src", default="")
    a = ap.parse_args()
    release = a.optimizer != "adamw"
    if release and (a.dtype != "bf16" or a.device != "cuda" or a.init_from or
                    not os.path.isdir(os.path.join(a.forge_src, "src", "fused_grad_optimizer"))):
        print("torch_train_reference.py: --optimizer %s needs --dtype bf16, --device cuda, no --init-from and "
              "--forge-src DIR holding src/fused_grad_optimizer" % a.optimizer, file=sys.stderr)
        return 2
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
    if a.compare_grads and (not a.init_from or a.dtype != "fp32"):
        print("torch_train_reference.py: --compare-grads needs --init-from and --dtype fp32", file=sys.stderr)
        return 2
    init = None
    if a.init_from:
        try:
            init_head, init = read_dump(a.init_from, "fh_model_weights", 2)
        except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
            print("torch_train_reference.py: --init-from: %s" % e, file=sys.stderr)
            return 2
    grads = None
    if a.compare_grads:
        try:
            grads = read_dump(a.compare_grads, "fh_model_grads", 4)[1]
        except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
            print("torch_train_reference.py: --compare-grads: %s" % e, file=sys.stderr)
            return 2
    import torch  # only now: a bad command line is refused without it

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dtype = torch.bfloat16 if a.dtype == "bf16" else torch.float32
    config = "torch_adamw_" + a.dtype + ("_from_harness" if init else "")
    if release:
        config = "forge_release_" + ("int8" if a.optimizer == "forge_int8" else "bf16")
    doc = {"kind": "convergence_run", "path": "forge_release" if release else "torch", "config": config, "model": a.model,
           "seed": a.seed, "lr": a.lr, "weight_decay": 0.01, "steps": a.steps, "seq": a.tokens, "batch": 1,
           "eval_every": a.eval_every, "eval_batches": a.eval_batches, "dtype": a.dtype, "torch": torch.__version__,
           "data": {"dir": a.data, "train_tokens": len(train), "heldout_tokens": len(held)}, "status": "ok",
           "producer": "scripts/torch_train_reference.py"}
    if init:
        doc["init_from"] = a.init_from
        doc["init_seed"] = init_head.get("seed")
    rc = 0
    try:
        dev = torch.device(a.device)
        doc["device"] = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"
        p = build(torch, shape, dtype, dev, a.seed)
        if init:
            load_init(torch, p, init, dev, dtype)
        doc["params"] = sum(t.numel() for t in p.values())
        mm, mods, manager, stepped = None, None, None, list(p.values())
        if release:  # the README's recipe on this model's linear weights
            sys.path.insert(0, os.path.join(os.path.abspath(a.forge_src), "src"))
            from fused_grad_optimizer import FusedLinear, FusedOptimizerManager
            mods = torch.nn.ModuleDict()
            for name in linear_names(shape):
                lin = FusedLinear(p[name].shape[1], p[name].shape[0], bias=False, optimizer_type="adamw",
                                  state_mode="int8" if a.optimizer == "forge_int8" else None)
                lin.weight = p[name]  # the module steps this very parameter
                mods[name.replace(".", "_")] = lin
            manager = FusedOptimizerManager(mods)
            doc["state"] = "int8" if a.optimizer == "forge_int8" else "bf16"
            doc["fused_linears"] = len(mods)
            doc["forge_src"] = os.path.abspath(a.forge_src)
            stepped = [t for n, t in p.items() if n not in set(linear_names(shape))]
            mm = lambda name, h: mods[name.replace(".", "_")](h)  # noqa: E731
        opt = torch.optim.AdamW(stepped, lr=a.lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01,
                                **({"fused": True} if dev.type == "cuda" else {}))
        T = a.tokens

        def batch(ids, o):
            t = torch.tensor(ids[o:o + T + 1], device=dev, dtype=torch.long)
            return t[:-1], t[1:]

        def evaluate():
            if mods is not None:
                mods.eval()  # FusedLinear's plain F.linear forward
            with torch.no_grad():
                e = sum(float(forward(torch, p, shape, *batch(held, heldout_offset(i, a.eval_batches, len(held), T)), mm))
                        for i in range(a.eval_batches)) / a.eval_batches
            if mods is not None:
                mods.train()
            return e

        losses, eval_steps, eval_losses = [], [0], [evaluate()]
        t0 = time.time()
        for s in range(1, a.steps + 1):
            if manager is not None:
                manager.pre_step(lr=a.lr)  # betas, eps and weight decay at the package's defaults: ours
            loss = forward(torch, p, shape, *batch(train, train_offset(a.seed, s, len(train), T)), mm)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if s == 1 and grads is not None:
                err = grad_errors(torch, p, grads)
                doc["grads_from"] = a.compare_grads
                doc["grad_rel_err"] = err
                doc["grad_rel_err_max"] = max(err.values())
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
