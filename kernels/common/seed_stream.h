// Named random streams derived from one run seed (Eigen's test/main.h discipline): the run has
// one seed, parsed once and printed once, and every random draw starts from
// stream_seed(run_seed, "<owner>/<purpose>", index), where the owner is a claim id, a suite or a
// helper and the purpose says what the draws are for ("prop1_twin/inputs"). Two owners then
// share a stream only by naming the same stream, which scripts/check_seed_streams.py forbids,
// and a failure is reproduced from the printed seed and the stream's name.
#pragma once
#include <cstdint>
#include <string_view>

#include "kernels/common/splitmix64.h"

namespace fh {

// FNV-1a (64 bit) of the name's bytes: fixed by the bytes alone, so a stream keeps its meaning
// on every platform and compiler.
constexpr uint64_t stream_name_hash(std::string_view name) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (char c : name) {
    h ^= uint64_t(static_cast<unsigned char>(c));
    h *= 0x100000001B3ull;
  }
  return h;
}

// The state of stream `name` under `run_seed`: the splitmix64 finalizer of the run seed and the
// name's hash, so neighbouring run seeds or names give unrelated streams.
constexpr uint64_t stream_state(uint64_t run_seed, std::string_view name) {
  return splitmix64_mix(run_seed ^ splitmix64_mix(stream_name_hash(name)));
}

// Draw `index` of the stream whose state is `state`: the (index+1)-th splitmix64 output from it,
// so distinct indexes give distinct draws. Also on the device, for kernels that draw per element
// from a state the host computed.
FH_SPLITMIX_HD constexpr uint64_t stream_draw(uint64_t state, uint64_t index) {
  return splitmix64_mix(state + (index + 1) * 0x9E3779B97F4A7C15ull);
}

// The seed of draw `index` of stream `name` under `run_seed`.
constexpr uint64_t stream_seed(uint64_t run_seed, std::string_view name, uint64_t index = 0) {
  return stream_draw(stream_state(run_seed, name), index);
}

}  // namespace fh
