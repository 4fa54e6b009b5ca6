// The convergence runs' data (issue 33): the token files scripts/prepare_corpus.py writes, and the
// windows a run reads: step s (from 1) trains on the T tokens from train_offset(seed, s, n, T) with
// the next T as labels; evaluation i of B reads the held-out window from heldout_offset(i, B, n, T).
// scripts/torch_train_reference.py reads the same windows (its splitmix64 and offsets are these),
// so every path of a seed sees the same batches in the same order.
#pragma once
#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace fh::train {

// SplitMix64's output for state x (Steele et al.; splitmix64(0) = 0xe220a8397b1dcdaf).
constexpr uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
// Step `step`'s window start in n tokens (n > T): o in [0, n - T - 1], tokens o .. o + T - 1, labels o + 1 .. o + T.
constexpr int64_t train_offset(uint64_t seed, int64_t step, int64_t n, int64_t T) {
  return int64_t(splitmix64(seed * 0x100000001b3ull ^ uint64_t(step)) % uint64_t(n - T));
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
