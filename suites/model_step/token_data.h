// The convergence runs' data (issue 33): the token files scripts/prepare_corpus.py writes, and the
// windows a run reads: step s (from 1) trains on the T tokens from train_offset(seed, s, n, T) with
// the next T as labels; evaluation i of B reads the held-out window from heldout_offset(i, B, n, T).
// The training windows are the run seed's stream "convergence_parity/train_windows", draw `step`
// (kernels/common/seed_stream.h); scripts/torch_train_reference.py draws the same stream through the
// Python twin (scripts/seed_stream.py), so every path of a seed sees the same batches in the same
// order (scripts/check_seed_streams.py lets exactly these two sites share the stream).
#pragma once
#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/common/seed_stream.h"

namespace fh::train {

// Step `step`'s window start in n tokens (n > T): o in [0, n - T - 1], tokens o .. o + T - 1, labels o + 1 .. o + T.
constexpr int64_t train_offset(uint64_t run_seed, int64_t step, int64_t n, int64_t T) {
  return int64_t(stream_seed(run_seed, "convergence_parity/train_windows", uint64_t(step)) % uint64_t(n - T));
}
// Held-out window i of `batches`, evenly spaced over n tokens.
constexpr int64_t heldout_offset(int64_t i, int64_t batches, int64_t n, int64_t T) {
  return i * (n - T - 1) / batches;
}

// A token file: little-endian uint16 ids, each below vocab, at least min_tokens of them.
inline std::vector<int32_t> load_tokens(const std::string& path, int64_t vocab, int64_t min_tokens) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::invalid_argument(path + ": cannot be read (scripts/prepare_corpus.py writes it)");
  std::vector<unsigned char> b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (b.size() % 2) throw std::invalid_argument(path + ": an odd number of bytes, not uint16 ids");
  std::vector<int32_t> ids(b.size() / 2);
  for (size_t i = 0; i < ids.size(); ++i) {
    ids[i] = int32_t(b[2 * i]) | (int32_t(b[2 * i + 1]) << 8);
    if (ids[i] >= vocab)
      throw std::invalid_argument(path + ": token " + std::to_string(i) + " is " + std::to_string(ids[i]) +
                                  ", not below the model's vocabulary of " + std::to_string(vocab));
  }
  if (int64_t(ids.size()) < min_tokens)
    throw std::invalid_argument(path + ": " + std::to_string(ids.size()) + " tokens, fewer than the " +
                                std::to_string(min_tokens) + " a window needs");
  return ids;
}

// The window at o: tokens[o .. o + T - 1] and labels[o + 1 .. o + T].
inline void window(const std::vector<int32_t>& ids, int64_t o, int64_t T, std::vector<int32_t>& tokens,
                   std::vector<int32_t>& labels) {
  tokens.assign(ids.begin() + o, ids.begin() + o + T);
  labels.assign(ids.begin() + o + 1, ids.begin() + o + T + 1);
}

}  // namespace fh::train
