// Every device allocation of a measured step from one cudaMallocAsync memory pool, tagged by what it
// holds. The pool's own high-water mark (cudaMemPoolAttrUsedMemHigh) is the measured
// peak; the tags are the host's bookkeeping of the same allocations, so a peak can be split into
// weights, state, gradients, activations and workspace. Opportunistic and internal-dependency reuse
// are off so that the same step gives the same peak run to run. What the pool cannot see -- the CUDA
// context, the cuBLAS handle's own allocations, loaded kernel modules -- shows as the device's used
// memory (cudaMemGetInfo) minus the pool's reserved memory, recorded at each phase boundary.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fh::gpu {

class TaggedPool {
 public:
  // Tags, in the order the report lists them. gradients: the linear weights' materialized G (Eq. 6's
  // zero term: none on the fused path); gradients_unfused: the gradients no path fuses (embedding,
  // norm weights, a tied weight); activations: what the forward pass saves for backward; workspace:
  // transients (activation gradients, attention scores, logits) and cuBLAS's workspace.
  enum Tag : int { weights = 0, state, gradients, gradients_unfused, activations, workspace, kTags };
  static const char* tag_name(int t);

  explicit TaggedPool(cudaStream_t stream);
  ~TaggedPool();
  TaggedPool(const TaggedPool&) = delete;
  TaggedPool& operator=(const TaggedPool&) = delete;

  // Stream-ordered allocation from the pool; throws std::runtime_error (out of memory included).
  void* alloc(Tag tag, int64_t bytes);
  void release(void* p);  // null is a no-op; p must come from alloc
  template <class T> T* alloc_n(Tag tag, int64_t n) { return static_cast<T*>(alloc(tag, n * int64_t(sizeof(T)))); }

  // A phase boundary: synchronizes the stream, reads the pool's used memory and its high-water mark
  // since the last boundary, resets the mark (to the current use), and records the tags' use.
  struct Phase {
    std::string name;
    int64_t in_use = 0, peak = 0;           // the pool: bytes in use now, highest since the last boundary
    int64_t tagged_in_use = 0, tagged_peak = 0;  // the tags' sum (requested bytes), now and highest
    int64_t tag_in_use[kTags] = {};
    int64_t device_used = 0;                // cudaMemGetInfo: total - free
    int64_t outside_pool = 0;               // device_used - the pool's reserved memory
  };
  const Phase& phase(const std::string& name);
  const std::vector<Phase>& timeline() const { return timeline_; }
  void clear_timeline() { timeline_.clear(); }

  int64_t tag_in_use(int t) const { return in_use_[t]; }
  int64_t tag_peak(int t) const { return peak_[t]; }  // highest since reset_tag_peaks
  void reset_tag_peaks();
  int64_t reserved() const;  // cudaMemPoolAttrReservedMemCurrent

 private:
  cudaMemPool_t pool_ = nullptr;
  cudaStream_t stream_ = nullptr;
  struct Block { void* p; int tag; int64_t bytes; };
  std::vector<Block> live_;
  int64_t in_use_[kTags] = {}, peak_[kTags] = {};
  int64_t tagged_total_ = 0, tagged_phase_peak_ = 0;
  std::vector<Phase> timeline_;
};

}  // namespace fh::gpu
