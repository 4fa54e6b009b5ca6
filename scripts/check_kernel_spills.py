#!/usr/bin/env python3
"""ptxas's register spills in the production fused kernels, against the recorded ceiling per kernel, and
its serialized wgmma (warning C7520), which no production kernel may have.

Compiles suites/cpu/ptxas_spill_probe.cu (AdamW's fused kernels for fp32, bf16 and INT8 state: the
cooperative kernel, its G-through-L2 and interleaved forms and both block-per-tile tiles) for sm_90a with the project's device flags and
-Xptxas -v, and fails when a kernel spills more bytes than CEILING allows. Why: a spill changes no
bit, so no bitwise suite sees it, but one in the cooperative kernel's 40-register producer slowed
every fused step by 5-10% on the runner (kernels/gpu/NOTES.md v39). Lower a ceiling when a kernel
spills less; raise one only with a runner measurement in NOTES.md. C7520 ("wgmma.mma_async instructions
are serialized due to program dependence on compiler-inserted WG.AR in divergent path"): ptxas waits for
every wgmma before the next, so the tensor cores stop overlapping; it too changes no bit (v51's try,
kernels/gpu/NOTES.md: a call left in a warp-role branch did it).

Usage: check_kernel_spills.py [--plant | --plant-serialized] --nvcc NVCC SOURCE_DIR
  --plant: compile with FH_PLANT_PRODUCER_SPILL (the producer keeps two more values live) and
           expect exactly the cooperative kernels (both forms) to fail (the check's own test).
  --plant-serialized: compile with FH_PLANT_WGMMA_SERIALIZED (the G-through-L2 form's staged piece not
           inlined) and expect exactly that form's fp32 and bf16 kernels serialized.
Exit: 0 within the ceilings and none serialized (or, with a plant, the plant caught), 1 otherwise, 2 bad usage.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

# Spill-store bytes allowed per (kernel, state format), as ptxas of CUDA 13.0 reports them.
CEILING = {
    ("coop", "fp32"): 0, ("coop", "bf16"): 0, ("coop", "int8"): 0,
    ("coop_l2g", "fp32"): 0, ("coop_l2g", "bf16"): 0, ("coop_l2g", "int8"): 0,
    # v48, opt-in (coop_l2g_epilogue_rows_fp below 128, off by default): the consumers' share of each
    # fp32 / bf16 tile inside the tile loop, at the 168 registers every role of this kernel compiles
    # for (no setmaxnreg: warpgroup 0 holds the producer and the epilogue warps). Recorded as built,
    # before any runner measurement (kernels/gpu/NOTES.md v48); the default kernels stay at 0. v49 (G
    # loaded with each epilogue batch) adds 8 / 12: measured, the form loses 10-15% at every share
    # and stays off (NOTES.md v48), so its spill moves no default. v50 (the G slice chosen at run
    # time) adds 12 in fp32, likewise.
    ("coop_l2g_share", "fp32"): 144, ("coop_l2g_share", "bf16"): 144,
    ("coop_ilv", "fp32"): 0, ("coop_ilv", "bf16"): 0,
    ("coop_split", "fp32"): 0, ("coop_split", "bf16"): 0, ("coop_split", "int8"): 0,
    # The split in waves (v44): no setmaxnreg (its epilogue warps share warpgroup 0 with the
    # producer), so all roles compile at 168 registers; a few values outside the mainloop spill.
    # Without the runtime planted-defect branches (issue 32) ptxas moved 4 bytes in fp32 (opt-in, off
    # by default: kernels/gpu/NOTES.md v45) and 4 / 12 fewer in bf16 / INT8.
    ("coop_split_waves", "fp32"): 20, ("coop_split_waves", "bf16"): 28, ("coop_split_waves", "int8"): 36,
    # The 128 x 128 block kernel: 24 / 28 bytes in fp32 / bf16 until its planted-defect branches left (v45).
    ("block128", "fp32"): 0, ("block128", "bf16"): 0, ("block128", "int8"): 12,
    ("block64", "fp32"): 0, ("block64", "bf16"): 0, ("block64", "int8"): 0,
}
FLAGS = ["-gencode=arch=compute_90a,code=sm_90a", "--fmad=false", "-Xcompiler=-ffp-contract=off",
         "--expt-relaxed-constexpr", "-O3", "-std=c++20", "-Xptxas", "-v", "-cubin"]


def kernel_key(name):
    kind = ("coop" if "fused_wgrad_coop_kernel" in name else
            ("coop_l2g_share" if "Lb1E" in name else "coop_l2g") if "fused_wgrad_coop_l2g_kernel" in name else
            "coop_ilv" if "fused_wgrad_coop_ilv_kernel" in name else
            "coop_split" if "fused_wgrad_coop_split_kernel" in name else
            "coop_split_waves" if "fused_wgrad_coop_split_waves_kernel" in name else
            "block128" if "WgradTileCfgILi128ELi128E" in name else
            "block64" if "WgradTileCfgILi64ELi64E" in name else None)
    fmt = re.search(r"StateFormatE([0-2])", name)
    if kind is None or fmt is None:
        return None
    return kind, ("fp32", "bf16", "int8")[int(fmt.group(1))]


def spills(log):
    """{(kernel, format): spill-store bytes} from ptxas -v output."""
    found, current = {}, None
    for line in log.splitlines():
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            current = kernel_key(m.group(1))
            continue
        m = re.search(r"(\d+) bytes spill stores", line)
        if m and current:
            found[current] = max(found.get(current, 0), int(m.group(1)))
            current = None
    return found


def serialized(log):
    """{(kernel, format)} whose wgmma ptxas serialized (C7520), from ptxas -v output."""
    found = set()
    for line in log.splitlines():
        m = re.search(r"C7520\).*function '(\S+)'", line)
        if m and kernel_key(m.group(1)):
            found.add(kernel_key(m.group(1)))
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    plants = ap.add_mutually_exclusive_group()
    plants.add_argument("--plant", action="store_true")
    plants.add_argument("--plant-serialized", action="store_true")
    ap.add_argument("--nvcc", required=True)
    ap.add_argument("source_dir")
    a = ap.parse_args()
    probe = os.path.join(a.source_dir, "suites/cpu/ptxas_spill_probe.cu")
    if not os.path.isfile(probe) or not os.access(a.nvcc, os.X_OK):
        print("check_kernel_spills: need SOURCE_DIR with %s and an executable --nvcc" % probe, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [a.nvcc, "-I", a.source_dir] + FLAGS + (["-DFH_PLANT_PRODUCER_SPILL"] if a.plant else [])
        cmd += ["-DFH_PLANT_WGMMA_SERIALIZED"] if a.plant_serialized else []
        cmd += [probe, "-o", os.path.join(tmp, "probe.cubin")]
        r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print("check_kernel_spills: nvcc failed (%d):\n%s" % (r.returncode, r.stderr[-4000:]))
        return 1
    found = spills(r.stderr + r.stdout)
    slow = serialized(r.stderr + r.stdout)
    missing = sorted(set(CEILING) - set(found))
    if missing:
        print("check_kernel_spills: ptxas reported nothing for %s (not checked)" % missing)
        return 1
    over = sorted(k for k in CEILING if found[k] > CEILING[k])
    for k in sorted(CEILING):
        print("%-9s %-5s %4d bytes spill stores (ceiling %d)%s%s" % (k[0], k[1], found[k], CEILING[k],
                                                                    "  OVER" if k in over else "",
                                                                    "  WGMMA SERIALIZED (C7520)" if k in slow else ""))
    if a.plant_serialized:
        want = {("coop_l2g", "fp32"), ("coop_l2g", "bf16")}
        if slow == want:
            print("check_kernel_spills --plant-serialized: the planted serialization was caught in %s" % sorted(slow))
            return 0
        print("check_kernel_spills --plant-serialized: expected exactly %s serialized, got %s" % (sorted(want), sorted(slow)))
        return 1
    if a.plant:
        # The plant is in the producer's loads (coop_load_tile), which both cooperative kernels share:
        # it must spill the cooperative kernel, whose producer has 40 registers (setmaxnreg), and
        # touch no other kernel but the G-through-L2 form and the split (168 registers a warp: it spills there or
        # not with the rest of that kernel's pressure, kernels/gpu/NOTES.md v41).
        want = [("coop", f) for f in ("bf16", "fp32", "int8")]
        if all(k in over for k in want) and all(k[0] in ("coop", "coop_l2g", "coop_l2g_share", "coop_ilv", "coop_split", "coop_split_waves") for k in over):
            print("check_kernel_spills --plant: the planted producer spill was caught in %s" % over)
            return 0
        print("check_kernel_spills --plant: expected %s (and at most G-through-L2 and split kernels) over the ceiling, "
              "got %s" % (want, over))
        return 1
    if over or slow:
        print("check_kernel_spills: FAIL: %d kernels spill more than their ceiling, %d with serialized wgmma"
              % (len(over), len(slow)))
        return 1
    print("check_kernel_spills: every kernel within its ceiling, no wgmma serialized")
    return 0


if __name__ == "__main__":
    sys.exit(main())
