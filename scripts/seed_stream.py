"""Named random streams for the scripts: the Python twin of kernels/common/seed_stream.h.

stream_seed(run_seed, "<owner>/<purpose>", index) gives the same 64-bit seed as the C++
function, so a script's draws follow the harness's one seed discipline (one run seed, printed,
every draw from a named stream). scripts/check_seed_streams.py checks both against the same
reference values.
"""

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def splitmix64_mix(z):
    z &= MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def stream_name_hash(name):
    """FNV-1a (64 bit) of the name's UTF-8 bytes."""
    h = 0xCBF29CE484222325
    for b in name.encode("utf-8"):
        h = ((h ^ b) * 0x100000001B3) & MASK
    return h


def stream_seed(run_seed, name, index=0):
    state = splitmix64_mix((run_seed & MASK) ^ splitmix64_mix(stream_name_hash(name)))
    return splitmix64_mix(state + ((index + 1) * GOLDEN & MASK))
