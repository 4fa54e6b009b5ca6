// The interleaved epilogue's pacing (kernels/gpu/fused_wgrad_coop_ilv.cuh), on the host too so that a
// CPU test can check it: at chunk c (0 .. nchunks - 1) of a tile's mainloop, the consumers have
// updated the previous tile's passes 0 .. ilv_passes_by(c, nchunks) - 1 (v46), or its elements
// 0 .. ilv_elements_by(c, nchunks) - 1 (v47), spread evenly, all of them by the last chunk (one left
// over would never be updated).
#pragma once
#include <cstdint>

#include "kernels/common/ieee_shim.h"

namespace fh::gpu {

constexpr int kIlvPasses = 32;  // one quad a consumer thread a pass over a 128 x 256 tile, 256 threads
constexpr int kIlvElements = 4 * kIlvPasses;  // a thread's elements of a tile, its passes' quads in order
FH_HD int ilv_passes_by(int64_t c, int64_t nchunks) { return int((c + 1) * kIlvPasses / nchunks); }
// v47: paced element by element (a quad's four elements may fall in different chunks).
FH_HD int ilv_elements_by(int64_t c, int64_t nchunks) { return int((c + 1) * kIlvElements / nchunks); }

}  // namespace fh::gpu
