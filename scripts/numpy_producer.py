#!/usr/bin/env python3
"""A small external producer in plain numpy (docs/EXTERNAL_PRODUCER.md, interface version 1).

CI runs it without a GPU so the external-producer judge always has a fused/two-phase pair to
compare. It sums G = dY^T X in the simplest order there is, `fp32_sequential`: for each output
element, one fp32 multiply and one fp32 add per token, in token order, from +0. The products of
two bf16 values are exact in fp32, so only the adds round.

Usage:
  numpy_producer.py CASES.h5 RESULTS.h5 --role fused|two_phase [--plant one_ulp_w|wrong_order|m_reads_v]

  --role fused       G is summed tile by tile (32x32) and each tile is stepped at once.
  --role two_phase   G is summed for the whole matrix first (and written as the optional `G`),
                     then the step runs as a separate pass. Same order per element, so the bits
                     must equal the fused role's (Proposition 1 in numpy's terms).
  --plant one_ulp_w  add 1 to the bits of W[0,0,0] of the first adamw case (a wrong result the
                     judge must catch).
  --plant wrong_order  declare order_model="mma_chain" (k16, no split) while still summing
                     fp32_sequential (the order-probe judge must catch it).
  --plant m_reads_v  a variant of the role's path (path numpy_<role>_m_reads_v, /meta variant_of
                     numpy_<role>): each step reads v where m belongs, the FORGE release's pooled
                     m/v staging in numpy's terms. From a zero state the first step is still exact;
                     every later one differs (the variant judge, ext_variant, must say so).

Exit status: 0 on success, 2 on bad input (missing file, wrong interface version, a case the
script cannot read). The output is written to a temp file in the same folder and renamed at the
end, so a failure leaves no half-written results file.

Runs on /usr/bin/python3 with h5py and numpy only. Every numpy op below is on float32 arrays (or
float32 scalars), so each one rounds to fp32 exactly once, like one fp32 instruction without FMA.
"""
import argparse
import os
import sys

import h5py
import numpy as np

import atomic_file  # scripts/atomic_file.py, beside this script

F32 = np.float32
INTERFACE_VERSION = 1
TILE = 32  # fused role: the (out, in) tile one "program" owns


class BadInput(Exception):
    """Input the script cannot work with; main() turns it into exit status 2."""


# ---------------------------------------------------------------------------
# bits <-> values
# ---------------------------------------------------------------------------

def bf16_bits_to_f32(bits):
    """bf16 (uint16 bits) -> float32: the bf16 bits are the top half of the fp32 bits."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(F32)


def f32_to_bf16_bits(x):
    """float32 -> bf16 bits, round to nearest even; NaN stays NaN (made quiet)."""
    u = np.asarray(x, dtype=F32).view(np.uint32).astype(np.uint64)  # uint64: no overflow on +bias
    is_nan = (u & 0x7FFFFFFF) > 0x7F800000
    lsb = (u >> 16) & 1
    rounded = (u + 0x7FFF + lsb) >> 16
    quiet_nan = (u >> 16) | 0x0040
    return np.where(is_nan, quiet_nan, rounded).astype(np.uint16)


def bits_to_f32(bits, dtype_name):
    """A tensor stored as bits in `dtype_name` ("bf16" or "fp32") -> float32 values."""
    if dtype_name == "bf16":
        return bf16_bits_to_f32(bits)
    if dtype_name == "fp32":
        return np.asarray(bits, dtype=np.uint32).view(F32)
    raise BadInput("unknown dtype '%s' (expected bf16 or fp32)" % dtype_name)


def f32_to_bits(x, dtype_name):
    """float32 values -> the bits of `dtype_name` (bf16 rounded to nearest even)."""
    if dtype_name == "bf16":
        return f32_to_bf16_bits(x)
    return np.ascontiguousarray(x, dtype=F32).view(np.uint32)


# ---------------------------------------------------------------------------
# the arithmetic
# ---------------------------------------------------------------------------

def grad_fp32_sequential(x, dy):
    """G[o, i] = sum over tokens t, in order, of dY[t, o] * X[t, i]; one fp32 mul and one fp32
    add per token, from +0. x: [T, in] float32, dy: [T, out] float32 -> [out, in] float32."""
    acc = np.zeros((dy.shape[1], x.shape[1]), dtype=F32)  # +0
    for t in range(x.shape[0]):
        prod = dy[t][:, None] * x[t][None, :]  # float32 * float32 -> float32 (exact for bf16 inputs)
        acc = acc + prod                        # one fp32 add per token
    return acc


class Hyper:
    """The step's scalars, rounded to fp32 as a kernel would receive them."""

    def __init__(self, case, t):
        self.b1 = F32(case.beta1)
        self.b2 = F32(case.beta2)
        self.lr = F32(case.lr)
        self.eps = F32(case.eps)
        self.wd = F32(case.weight_decay)
        # bias corrections computed in double, rounded once to fp32
        self.bc1 = F32(1.0 - case.beta1 ** t)
        self.bc2 = F32(1.0 - case.beta2 ** t)
        # the derived constants, each one fp32 operation
        self.one_minus_b1 = F32(1) - self.b1
        self.one_minus_b2 = F32(1) - self.b2
        self.decay = F32(1) - self.lr * self.wd


def adamw_f32(w0, m0, v0, g, h):
    """One AdamW step, every op in fp32, in the order
    m = b1*m0 + (1-b1)*g; v = b2*v0 + ((1-b2)*g)*g; w = w0*(1-lr*wd) - (lr*(m/bc1)) / (sqrt(v/bc2)+eps).
    Returns the unrounded fp32 w, m, v (the caller rounds them to their storage dtypes)."""
    m = h.b1 * m0 + h.one_minus_b1 * g
    v = h.b2 * v0 + (h.one_minus_b2 * g) * g
    m_hat = m / h.bc1
    v_hat = v / h.bc2
    w = w0 * h.decay - (h.lr * m_hat) / (np.sqrt(v_hat) + h.eps)  # np.sqrt on float32 is correctly rounded
    return w.astype(F32), m.astype(F32), v.astype(F32)


def int8_dequant(q, scale, qblock, floor_zero):
    """int8 codes [out, in] and fp32 scales [out, in/qblock] -> float32 [out, in]."""
    x = q.astype(F32) * np.repeat(scale, qblock, axis=1)
    return np.maximum(x, F32(0)) if floor_zero else x


def int8_quant(x, qblock):
    """Per row, per qblock columns: scale = absmax/127 (1.0 if absmax is 0), q = rint(x/scale)
    (half to even) clipped to [-127, 127]."""
    rows, cols = x.shape
    blocks = x.reshape(rows, cols // qblock, qblock)
    absmax = np.max(np.abs(blocks), axis=2)
    scale = np.where(absmax == 0, F32(1.0), absmax / F32(127)).astype(F32)
    ratio = blocks / scale[:, :, None]
    ratio = np.where(np.isnan(ratio), F32(0), ratio)  # a NaN moment has no int8 code; store 0
    q = np.clip(np.rint(ratio), -127, 127).astype(np.int8)
    return q.reshape(rows, cols), scale


# ---------------------------------------------------------------------------
# reading the cases file
# ---------------------------------------------------------------------------

def as_str(value):
    """h5py returns vlen strings as str and fixed-length ones as bytes; accept both."""
    if isinstance(value, bytes):
        return value.decode("utf-8")
    if isinstance(value, np.ndarray) and value.shape == ():
        return as_str(value[()])
    return str(value)


class Case:
    """One /cases/<id> group: attributes as Python values, datasets read on demand."""

    def __init__(self, group, case_id):
        self.id = case_id
        self.group = group
        a = group.attrs
        try:
            self.kind = as_str(a["kind"])
            self.out = int(a["out"])
            self.inp = int(a["in"])
            self.tokens = int(a["tokens"])
            self.steps = int(a["steps"])
        except KeyError as e:
            raise BadInput("case '%s': missing attribute %s" % (case_id, e))
        if self.kind not in ("order_probe", "adamw", "adamw_int8"):
            raise BadInput("case '%s': unknown kind '%s'" % (case_id, self.kind))
        self.weight_dtype = as_str(a.get("weight_dtype", "bf16"))
        self.state_dtype = as_str(a.get("state_dtype", "none"))
        if self.kind != "order_probe":
            try:
                self.lr = float(a["lr"])
                self.beta1 = float(a["beta1"])
                self.beta2 = float(a["beta2"])
                self.eps = float(a["eps"])
                self.weight_decay = float(a["weight_decay"])
                self.first_step = int(a["first_step"])
            except KeyError as e:
                raise BadInput("case '%s': missing attribute %s" % (case_id, e))
        self.qblock = int(a["qblock"]) if "qblock" in a else 0
        if self.kind == "adamw_int8" and (self.qblock <= 0 or self.inp % self.qblock != 0):
            raise BadInput("case '%s': qblock %d does not divide in=%d" % (case_id, self.qblock, self.inp))

    def data(self, name, dtype, shape):
        """A dataset with its type and shape checked."""
        if name not in self.group:
            raise BadInput("case '%s': no dataset '%s'" % (self.id, name))
        arr = self.group[name][()]
        if arr.dtype != np.dtype(dtype) or arr.shape != tuple(shape):
            raise BadInput("case '%s': dataset '%s' is %s%s, expected %s%s"
                           % (self.id, name, arr.dtype, arr.shape, np.dtype(dtype), tuple(shape)))
        return arr

    def bits_dtype(self, dtype_name):
        return {"bf16": np.uint16, "fp32": np.uint32}[dtype_name]

    def step_inputs(self, s):
        """X[s], dY[s] as float32 ([T, in], [T, out])."""
        x = self.data("X", np.uint16, (self.steps, self.tokens, self.inp))
        dy = self.data("dY", np.uint16, (self.steps, self.tokens, self.out))
        return bf16_bits_to_f32(x[s]), bf16_bits_to_f32(dy[s])


# ---------------------------------------------------------------------------
# running the cases
# ---------------------------------------------------------------------------

def tiles(out, inp):
    """The (rows, cols) slices of the TILE x TILE tiles covering [out, in]."""
    for r in range(0, out, TILE):
        for c in range(0, inp, TILE):
            yield slice(r, min(r + TILE, out)), slice(c, min(c + TILE, inp))


def run_order_probe(case, grp):
    x, dy = case.step_inputs(0)
    g = grad_fp32_sequential(x, dy)
    grp.create_dataset("G", data=g.view(np.uint32))
    return "fp32_sequential G over the whole matrix"


def run_adamw(case, grp, role, m_reads_v=False):
    """kind adamw and adamw_int8. Returns the detail string."""
    shape = (case.out, case.inp)
    int8 = case.kind == "adamw_int8"
    if case.weight_dtype not in ("bf16", "fp32"):
        raise BadInput("case '%s': weight_dtype '%s'" % (case.id, case.weight_dtype))
    w_bits = case.data("W0", case.bits_dtype(case.weight_dtype), shape)
    w = bits_to_f32(w_bits, case.weight_dtype)
    if int8:
        sshape = (case.out, case.inp // case.qblock)
        mq = case.data("m0_q", np.int8, shape)
        vq = case.data("v0_q", np.int8, shape)
        ms = case.data("m0_scale", np.uint32, sshape).view(F32)
        vs = case.data("v0_scale", np.uint32, sshape).view(F32)
        m = int8_dequant(mq, ms, case.qblock, floor_zero=False)
        v = int8_dequant(vq, vs, case.qblock, floor_zero=True)
    else:
        if case.state_dtype not in ("bf16", "fp32"):
            raise BadInput("case '%s': state_dtype '%s'" % (case.id, case.state_dtype))
        sd = case.bits_dtype(case.state_dtype)
        m = bits_to_f32(case.data("m0", sd, shape), case.state_dtype)
        v = bits_to_f32(case.data("v0", sd, shape), case.state_dtype)

    out_w, out_m, out_v, out_ms, out_vs, out_g = [], [], [], [], [], []
    for s in range(case.steps):
        h = Hyper(case, case.first_step + s)
        x, dy = case.step_inputs(s)
        if m_reads_v:
            m = v  # planted: m's load lands where v's does
        if role == "two_phase":
            # phase 1: the whole G, materialized; phase 2: the step over the whole matrix
            g = grad_fp32_sequential(x, dy)
            out_g.append(g.view(np.uint32))
            w_new, m_new, v_new = adamw_f32(w, m, v, g, h)
        else:
            # fused: each tile's G lives only while that tile is stepped
            w_new = np.empty(shape, F32)
            m_new = np.empty(shape, F32)
            v_new = np.empty(shape, F32)
            for rs, cs in tiles(case.out, case.inp):
                g_tile = grad_fp32_sequential(x[:, cs], dy[:, rs])
                w_new[rs, cs], m_new[rs, cs], v_new[rs, cs] = adamw_f32(w[rs, cs], m[rs, cs], v[rs, cs], g_tile, h)

        # store, and carry the stored (rounded) values into the next step
        wb = f32_to_bits(w_new, case.weight_dtype)
        out_w.append(wb)
        w = bits_to_f32(wb, case.weight_dtype)
        if int8:
            # W used the unquantized new m, v above; now requantize the state
            mq, ms = int8_quant(m_new, case.qblock)
            vq, vs = int8_quant(v_new, case.qblock)
            out_m.append(mq)
            out_v.append(vq)
            out_ms.append(ms.view(np.uint32))
            out_vs.append(vs.view(np.uint32))
            m = int8_dequant(mq, ms, case.qblock, floor_zero=False)
            v = int8_dequant(vq, vs, case.qblock, floor_zero=True)
        else:
            mb = f32_to_bits(m_new, case.state_dtype)
            vb = f32_to_bits(v_new, case.state_dtype)
            out_m.append(mb)
            out_v.append(vb)
            m = bits_to_f32(mb, case.state_dtype)
            v = bits_to_f32(vb, case.state_dtype)

    grp.create_dataset("W", data=np.stack(out_w))
    if int8:
        grp.create_dataset("m_q", data=np.stack(out_m))
        grp.create_dataset("v_q", data=np.stack(out_v))
        grp.create_dataset("m_scale", data=np.stack(out_ms))
        grp.create_dataset("v_scale", data=np.stack(out_vs))
    else:
        grp.create_dataset("m", data=np.stack(out_m))
        grp.create_dataset("v", data=np.stack(out_v))
    if role == "two_phase":
        grp.create_dataset("G", data=np.stack(out_g))
        return "fp32_sequential G materialized [out,in], then a separate AdamW pass"
    return "fp32_sequential G per %dx%d tile, stepped in the same pass" % (TILE, TILE)


def plant_one_ulp(grp):
    """Add 1 to the bits of W[0,0,0] (wraps within the unsigned type)."""
    w = grp["W"][()]
    flat = w.reshape(-1)
    flat[0] = flat[0] + w.dtype.type(1)
    grp["W"][...] = w


def write_results(cases_path, tmp_path, role, plant):
    try:
        cf = h5py.File(cases_path, "r")
    except (OSError, IOError) as e:
        raise BadInput("cannot open cases file '%s' as HDF5: %s" % (cases_path, e))
    with cf:
        ver = cf.attrs.get("fh_external_interface")
        if ver is None or int(ver) != INTERFACE_VERSION:
            raise BadInput("'%s': fh_external_interface is %r, this producer implements %d"
                           % (cases_path, ver, INTERFACE_VERSION))
        if as_str(cf.attrs.get("file_kind", "")) != "cases":
            raise BadInput("'%s': file_kind is not \"cases\"" % cases_path)
        if "cases_id" not in cf.attrs or "cases" not in cf:
            raise BadInput("'%s': no cases_id attribute or no /cases group" % cases_path)
        cases_id = as_str(cf.attrs["cases_id"])

        with h5py.File(tmp_path, "w") as rf:
            rf.attrs["fh_external_interface"] = np.int64(INTERFACE_VERSION)
            rf.attrs["file_kind"] = "results"
            rf.attrs["cases_id"] = cases_id
            rf.attrs["producer"] = "numpy_reference"
            rf.attrs["path"] = "numpy_" + role + ("_m_reads_v" if plant == "m_reads_v" else "")
            rf.attrs["role"] = role
            if plant == "wrong_order":
                # a false claim: the sums are fp32_sequential
                rf.attrs["order_model"] = "mma_chain"
                rf.attrs["order_k_group"] = np.int64(16)
                rf.attrs["order_split_k"] = np.int64(1)
                rf.attrs["order_split_round"] = np.int64(16)
            else:
                rf.attrs["order_model"] = "fp32_sequential"

            meta = rf.create_group("meta")
            meta.attrs["package"] = "numpy"
            meta.attrs["version"] = np.__version__
            meta.attrs["commit"] = "none"
            meta.attrs["switches"] = "none" if plant is None else "plant=" + plant
            meta.attrs["triton"] = "none"
            meta.attrs["torch"] = "none"
            meta.attrs["cuda"] = "none"
            meta.attrs["device"] = "cpu"
            if plant == "m_reads_v":
                meta.attrs["variant_of"] = "numpy_" + role
            meta.attrs["g_source"] = ("own fp32_sequential materialized G" if role == "two_phase"
                                      else "own fp32_sequential, per tile, never materialized")

            out_cases = rf.create_group("cases")
            planted = False
            for case_id in sorted(cf["cases"].keys()):
                case = Case(cf["cases"][case_id], case_id)
                grp = out_cases.create_group(case_id)
                if case.kind == "order_probe":
                    detail = run_order_probe(case, grp)
                else:
                    detail = run_adamw(case, grp, role, m_reads_v=plant == "m_reads_v")
                grp.attrs["status"] = "ok"
                grp.attrs["detail"] = detail
                if plant == "one_ulp_w" and not planted and case.kind == "adamw":
                    plant_one_ulp(grp)
                    grp.attrs["detail"] = detail + "; PLANTED: W[0,0,0] bits + 1"
                    planted = True
                print("%s: %s ok" % (case_id, case.kind), flush=True)
            if plant == "one_ulp_w" and not planted:
                raise BadInput("--plant one_ulp_w: the cases file has no adamw case")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases")
    ap.add_argument("results")
    ap.add_argument("--role", required=True, choices=["fused", "two_phase"])
    ap.add_argument("--plant", choices=["one_ulp_w", "wrong_order", "m_reads_v"])
    args = ap.parse_args()

    if not os.path.isfile(args.cases):
        print("numpy_producer: cases file '%s' does not exist" % args.cases, file=sys.stderr)
        return 2
    try:
        atomic_file.replace_from_temp(args.results, lambda tmp: write_results(args.cases, tmp, args.role, args.plant),
                                      prefix=".numpy_producer.")
    except (BadInput, FileNotFoundError) as e:
        print("numpy_producer: %s" % e, file=sys.stderr)
        return 2
    print("numpy_producer: wrote %s (role %s%s)" % (args.results, args.role,
                                                     ", plant " + args.plant if args.plant else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
