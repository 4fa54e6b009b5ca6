// Compiled only by scripts/test_kernel_spills.sh (never linked): the production fused kernels of one
// rule (AdamW) for each state format, so that ptxas reports their registers and spills. A spill in
// the cooperative kernel's 40-register producer slowed every fused step by 5-10% on the runner
// (kernels/gpu/NOTES.md v39) with no bit changed, so no bitwise suite can see it.
#include "kernels/gpu/wgrad_tma.h"
#include "kernels/gpu/fused_wgrad_update.cuh"
#include "kernels/rules/adamw.h"

namespace fh::gpu {
template void launch_fused_tile<AdamW, StateFormat::fp32, WeightStore::fp32_master>(
    const WgradTileArgs&, const AdamW::Scalars&, const ParamView&, TileShape, cudaStream_t);
template void launch_fused_tile<AdamW, StateFormat::bf16, WeightStore::bf16_rne>(
    const WgradTileArgs&, const AdamW::Scalars&, const ParamView&, TileShape, cudaStream_t);
template void launch_fused_tile<AdamW, StateFormat::int8, WeightStore::fp32_master>(
    const WgradTileArgs&, const AdamW::Scalars&, const ParamView&, TileShape, cudaStream_t);
}  // namespace fh::gpu
