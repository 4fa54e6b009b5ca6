// The tagged cudaMallocAsync pool (kernels/gpu/tagged_pool.h).
#include "kernels/gpu/tagged_pool.h"

#include <algorithm>
#include <stdexcept>

#include "kernels/gpu/gpu_api.h"

namespace fh::gpu {

const char* TaggedPool::tag_name(int t) {
  static const char* names[kTags] = {"weights", "state", "gradients", "gradients_unfused", "activations", "workspace"};
  if (t < 0 || t >= kTags) throw std::invalid_argument("TaggedPool: no tag " + std::to_string(t));
  return names[t];
}

TaggedPool::TaggedPool(cudaStream_t stream) : stream_(stream) {
  int dev = 0;
  cuda_check(cudaGetDevice(&dev), "TaggedPool: cudaGetDevice");
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = dev;
  cuda_check(cudaMemPoolCreate(&pool_, &props), "TaggedPool: cudaMemPoolCreate");
  uint64_t keep = UINT64_MAX;  // never hand memory back to the device between phases
  cuda_check(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrReleaseThreshold, &keep), "TaggedPool: release threshold");
  int off = 0;  // peaks must repeat run to run: no reuse that depends on timing
  cuda_check(cudaMemPoolSetAttribute(pool_, cudaMemPoolReuseAllowOpportunistic, &off), "TaggedPool: opportunistic reuse");
  cuda_check(cudaMemPoolSetAttribute(pool_, cudaMemPoolReuseAllowInternalDependencies, &off),
             "TaggedPool: internal-dependency reuse");
}

TaggedPool::~TaggedPool() {
  for (const Block& b : live_) cudaFreeAsync(b.p, stream_);
  cudaStreamSynchronize(stream_);
  if (pool_) cudaMemPoolDestroy(pool_);
}

void* TaggedPool::alloc(Tag tag, int64_t bytes) {
  if (tag < 0 || tag >= kTags || bytes < 0) throw std::invalid_argument("TaggedPool::alloc: bad tag or size");
  void* p = nullptr;
  if (bytes == 0) return nullptr;
  const cudaError_t e = cudaMallocFromPoolAsync(&p, size_t(bytes), pool_, stream_);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free allocation error so the caller can report and go on
    throw std::runtime_error(std::string("TaggedPool::alloc: ") + tag_name(tag) + " " + std::to_string(bytes) +
                             " bytes: " + cudaGetErrorName(e) + " (" + std::to_string(tagged_total_) +
                             " bytes in use)");
  }
  live_.push_back({p, int(tag), bytes});
  in_use_[tag] += bytes;
  peak_[tag] = std::max(peak_[tag], in_use_[tag]);
  tagged_total_ += bytes;
  tagged_phase_peak_ = std::max(tagged_phase_peak_, tagged_total_);
  return p;
}

void TaggedPool::release(void* p) {
  if (!p) return;
  const auto it = std::find_if(live_.begin(), live_.end(), [&](const Block& b) { return b.p == p; });
  if (it == live_.end()) throw std::logic_error("TaggedPool::release: pointer not from this pool");
  cuda_check(cudaFreeAsync(p, stream_), "TaggedPool: cudaFreeAsync");
  in_use_[it->tag] -= it->bytes;
  tagged_total_ -= it->bytes;
  live_.erase(it);
}

void TaggedPool::reset_tag_peaks() {
  for (int t = 0; t < kTags; ++t) peak_[t] = in_use_[t];
}

int64_t TaggedPool::reserved() const {
  uint64_t v = 0;
  cuda_check(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrReservedMemCurrent, &v), "TaggedPool: reserved");
  return int64_t(v);
}

const TaggedPool::Phase& TaggedPool::phase(const std::string& name) {
  cuda_check(cudaStreamSynchronize(stream_), ("TaggedPool: phase " + name).c_str());
  Phase ph;
  ph.name = name;
  uint64_t used = 0, high = 0;
  cuda_check(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemCurrent, &used), "TaggedPool: used");
  cuda_check(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemHigh, &high), "TaggedPool: used high");
  uint64_t zero = 0;  // writing 0 resets the high-water mark to the current use
  cuda_check(cudaMemPoolSetAttribute(pool_, cudaMemPoolAttrUsedMemHigh, &zero), "TaggedPool: reset used high");
  ph.in_use = int64_t(used);
  ph.peak = int64_t(high);
  ph.tagged_in_use = tagged_total_;
  ph.tagged_peak = tagged_phase_peak_;
  tagged_phase_peak_ = tagged_total_;
  for (int t = 0; t < kTags; ++t) ph.tag_in_use[t] = in_use_[t];
  size_t free_b = 0, total_b = 0;
  cuda_check(cudaMemGetInfo(&free_b, &total_b), "TaggedPool: cudaMemGetInfo");
  ph.device_used = int64_t(total_b - free_b);
  ph.outside_pool = ph.device_used - reserved();
  timeline_.push_back(ph);
  return timeline_.back();
}

}  // namespace fh::gpu
