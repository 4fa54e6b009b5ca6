#include "reference/memory_model.h"

#include <algorithm>
#include <stdexcept>

namespace fh {

ModelShape model_shape(const std::string& name) {
  ModelShape s;
  s.name = name;
  if (name == "llama31_8b") {  // meta-llama/Llama-3.1-8B config.json
    s.hidden = 4096, s.intermediate = 14336, s.heads = 32, s.kv_heads = 8, s.head_dim = 128, s.vocab = 128256, s.layers = 32;
  } else if (name == "qwen3_14b") {  // Qwen/Qwen3-14B config.json
    s.hidden = 5120, s.intermediate = 17408, s.heads = 40, s.kv_heads = 8, s.head_dim = 128, s.vocab = 151936, s.layers = 40;
    s.qk_norm = true;
  } else if (name == "llama31_70b") {  // meta-llama/Llama-3.1-70B config.json
    s.hidden = 8192, s.intermediate = 28672, s.heads = 64, s.kv_heads = 8, s.head_dim = 128, s.vocab = 128256, s.layers = 80;
  } else if (name == "llama31_405b") {  // meta-llama/Llama-3.1-405B config.json
    s.hidden = 16384, s.intermediate = 53248, s.heads = 128, s.kv_heads = 8, s.head_dim = 128, s.vocab = 128256,
    s.layers = 126;
  } else if (name == "qwen3_0p6b") {  // Qwen/Qwen3-0.6B config.json (tied embeddings)
    s.hidden = 1024, s.intermediate = 3072, s.heads = 16, s.kv_heads = 8, s.head_dim = 128, s.vocab = 151936, s.layers = 28;
    s.qk_norm = true, s.tied = true;
  } else if (name == "qwen3_1p7b") {  // Qwen/Qwen3-1.7B (tied)
    s.hidden = 2048, s.intermediate = 6144, s.heads = 16, s.kv_heads = 8, s.head_dim = 128, s.vocab = 151936, s.layers = 28;
    s.qk_norm = true, s.tied = true;
  } else if (name == "qwen3_4b") {  // Qwen/Qwen3-4B (tied)
    s.hidden = 2560, s.intermediate = 9728, s.heads = 32, s.kv_heads = 8, s.head_dim = 128, s.vocab = 151936, s.layers = 36;
    s.qk_norm = true, s.tied = true;
  } else if (name == "qwen3_8b") {  // Qwen/Qwen3-8B
    s.hidden = 4096, s.intermediate = 12288, s.heads = 32, s.kv_heads = 8, s.head_dim = 128, s.vocab = 151936, s.layers = 36;
    s.qk_norm = true;
  } else if (name == "gpt2_124m") {  // GPT-2 124M on the Llama architecture: a gated MLP of 2048 holds GPT-2's 2 x 768 x 3072 (tied)
    s.hidden = 768, s.intermediate = 2048, s.heads = 12, s.kv_heads = 12, s.head_dim = 64, s.vocab = 50257, s.layers = 12;
    s.tied = true;
  } else if (name == "llama_30m") {  // the convergence runs' model (issue 33): Llama-shaped, ~29M parameters
    s.hidden = 512, s.intermediate = 1536, s.heads = 8, s.kv_heads = 4, s.head_dim = 64, s.vocab = 4096, s.layers = 8;
  } else if (name == "tiny") {
    s.hidden = 128, s.intermediate = 256, s.heads = 8, s.kv_heads = 8, s.head_dim = 16, s.vocab = 512, s.layers = 2;
  } else {
    throw std::invalid_argument("model_shape: unknown family '" + name + "' (llama31_8b, llama31_70b, llama31_405b, qwen3_14b, qwen3_0p6b, qwen3_1p7b, "
                                "qwen3_4b, qwen3_8b, gpt2_124m, llama_30m, tiny)");
  }
  return s;
}

const char* param_kind_name(ParamKind k) {
  switch (k) {
    case ParamKind::linear: return "linear";
    case ParamKind::embedding: return "embedding";
    case ParamKind::norm: return "norm";
    case ParamKind::tied_embedding: return "tied_embedding";
  }
  return "?";
}

std::vector<ParamShape> model_params(const ModelShape& s) {
  std::vector<ParamShape> v;
  const int64_t H = s.hidden, q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
  v.push_back({"embed", s.vocab, H, s.tied ? ParamKind::tied_embedding : ParamKind::embedding});
  for (int64_t l = 0; l < s.layers; ++l) {
    const std::string p = "layer" + std::to_string(l) + ".";
    v.push_back({p + "input_norm", 1, H, ParamKind::norm});
    v.push_back({p + "q", q, H, ParamKind::linear});
    v.push_back({p + "k", kv, H, ParamKind::linear});
    v.push_back({p + "v", kv, H, ParamKind::linear});
    if (s.qk_norm) {
      v.push_back({p + "q_norm", 1, s.head_dim, ParamKind::norm});
      v.push_back({p + "k_norm", 1, s.head_dim, ParamKind::norm});
    }
    v.push_back({p + "o", H, q, ParamKind::linear});
    v.push_back({p + "post_norm", 1, H, ParamKind::norm});
    v.push_back({p + "gate", s.intermediate, H, ParamKind::linear});
    v.push_back({p + "up", s.intermediate, H, ParamKind::linear});
    v.push_back({p + "down", H, s.intermediate, ParamKind::linear});
  }
  v.push_back({"final_norm", 1, H, ParamKind::norm});
  if (!s.tied) v.push_back({"lm_head", s.vocab, H, ParamKind::linear});
  return v;
}

int64_t param_count(const std::vector<ParamShape>& ps) {
  int64_t n = 0;
  for (const auto& p : ps) n += p.count();
  return n;
}

int64_t MemoryEstimate::total() const {
  int64_t n = 0;
  for (const auto& t : terms) n += t.bytes;
  return n;
}

int64_t MemoryEstimate::term(const std::string& name) const {
  for (const auto& t : terms)
    if (t.name == name) return t.bytes;
  return 0;
}

int64_t weight_bytes(const ParamShape& p, const StepLayout& l) {
  return p.count() * (l.store == WeightStore::fp32_master ? 6 : 2);
}

int64_t state_bytes(const ParamShape& p, const StepLayout& l) {
  switch (l.state) {
    case StateFormat::fp32: return p.count() * 4 * l.state_slots;
    case StateFormat::bf16: return p.count() * 2 * l.state_slots;
    case StateFormat::int8: return (p.count() + p.rows * ((p.cols + kInt8Block - 1) / kInt8Block) * 4) * l.state_slots;
  }
  return 0;
}

MemoryEstimate step_memory(const std::vector<ParamShape>& ps, const StepLayout& l, bool fused, int64_t activation_bytes) {
  int64_t w = 0, st = 0, g_fusable = 0, g_other = 0;
  for (const auto& p : ps) {
    w += weight_bytes(p, l);
    st += state_bytes(p, l);
    (p.fusable() ? g_fusable : g_other) += p.count() * l.grad_bytes;
  }
  MemoryEstimate e;
  e.terms.push_back({"weights", l.store == WeightStore::fp32_master ? "6P (fp32 master + bf16 copy)" : "2P", w});
  e.terms.push_back({"state", "kP", st});
  if (fused) {
    e.terms.push_back({"gradients_fused", "0 (Eq. 6)", 0});
    e.terms.push_back({"gradients_not_fusable", "embedding, norms, tied weight (outside Eq. 6's scope)", g_other});
    e.terms.push_back({"tile_workspace", "TR * TC * 4 * active tiles", l.tile_rows * l.tile_cols * 4 * l.active_tiles});
  } else {
    e.terms.push_back({"gradients", "P * gradient bytes", g_fusable + g_other});
  }
  e.terms.push_back({"activations", "sum |a_l| (the step's own)", activation_bytes});
  return e;
}

namespace {
// One block's saved activations (model_step.cu block_fwd): x_in and x_mid fp32; the norms' rstd fp32
// and outputs bf16; q, k, v, the attention output a bf16; the softmax P bf16 [heads, T, T] per
// sequence; gate and up fp32; m bf16.
int64_t block_activation_bytes(const ModelShape& s, int64_t batch, int64_t tokens) {
  const int64_t t = batch * tokens, H = s.hidden, I = s.intermediate, QD = s.heads * s.head_dim,
                KD = s.kv_heads * s.head_dim;
  return 2 * t * H * 4 + 2 * t * 4 + 2 * t * H * 2 + 2 * t * QD * 2 + 2 * t * KD * 2 +
         batch * s.heads * tokens * tokens * 2 + 2 * t * I * 4 + t * I * 2;
}
// After the blocks: the last block's output (fp32), the final norm's output (bf16) and rstd, the
// logits' gradient dlogits (bf16 [T, V]).
int64_t tail_activation_bytes(const ModelShape& s, int64_t batch, int64_t tokens) {
  const int64_t t = batch * tokens;
  return t * s.hidden * 4 + t * s.hidden * 2 + t * 4 + t * s.vocab * 2;
}
}  // namespace

int64_t step_activation_bytes(const ModelShape& s, int64_t batch, int64_t tokens) {
  return s.layers * block_activation_bytes(s, batch, tokens) + tail_activation_bytes(s, batch, tokens);
}

int64_t forward_end_workspace_bytes(const ModelShape& s, int64_t batch, int64_t tokens) {
  const int64_t t = batch * tokens;
  return t * s.vocab * 4 + t * 4;
}

double step_peak_bytes(const ModelShape& m, bool fused, int64_t batch, int64_t tokens, int gpus, int grad_bytes) {
  StepLayout l;  // bf16 weights and AdamW state
  l.grad_bytes = grad_bytes;
  return step_peak_bytes(m, l, fused, batch, tokens, gpus);
}

double step_peak_bytes(const ModelShape& m, const StepLayout& l, bool fused, int64_t batch, int64_t tokens, int gpus) {
  const std::vector<ParamShape> ps = model_params(m);
  const MemoryEstimate e = step_memory(ps, l, fused, 0);
  // The gradient a parameter holds from its backward to the step: every one on the standard path, the
  // unfused ones (embedding, norms, a tied weight) on the fused path; sharded over the GPUs.
  auto held_of = [&](const std::string& prefix) {
    double b = 0.0;
    for (const ParamShape& p : ps)
      if (p.name.rfind(prefix, 0) == 0 && (!fused || !p.fusable())) b += double(p.count() * l.grad_bytes) / gpus;
    return b;
  };
  const double block = double(block_activation_bytes(m, batch, tokens));
  double act = double(step_activation_bytes(m, batch, tokens)), held = 0.0;
  // The forward pass's end: the activations, the fp32 logits and the per-token losses.
  double peak = act + double(forward_end_workspace_bytes(m, batch, tokens));
  // Backward, as model_step.cu walks it: the head's gradient (a tied weight's too) while dlogits lives,
  // the final norm's; then each block's gradients beside its activations, which it then gives back;
  // an untied embedding's gradient last.
  held += held_of("lm_head") + (m.tied ? held_of("embed") : 0.0);
  peak = std::max(peak, act + held);
  held += held_of("final_norm");
  act -= double(tail_activation_bytes(m, batch, tokens));
  for (int64_t k = m.layers - 1; k >= 0; --k) {
    held += held_of("layer" + std::to_string(k) + ".");
    peak = std::max(peak, act + held);
    act -= block;
  }
  if (!m.tied) held += held_of("embed");
  peak = std::max(peak, act + held);
  return double(e.term("weights") + e.term("state")) / gpus + peak + double(e.term("tile_workspace"));
}

ModelShape tp_rank_shape(const ModelShape& s, int tp) {
  if (tp < 1 || s.heads % tp || s.kv_heads % tp || s.intermediate % tp)
    throw std::invalid_argument("tp_rank_shape: " + s.name + " at tensor-parallel degree " + std::to_string(tp) +
                                ": heads (" + std::to_string(s.heads) + "), KV heads (" + std::to_string(s.kv_heads) +
                                ") and the intermediate size (" + std::to_string(s.intermediate) +
                                ") must be multiples of it");
  if (tp == 1) return s;
  ModelShape r = s;
  r.name = s.name + "_tp" + std::to_string(tp) + "_rank";
  r.heads = s.heads / tp;
  r.kv_heads = s.kv_heads / tp;
  r.intermediate = s.intermediate / tp;
  const int64_t unit = int64_t(128) * tp;
  r.vocab = (s.vocab + unit - 1) / unit * unit / tp;
  return r;
}

int64_t tp_collective_bytes(int tp, const CollectiveBuffers& c) {
  return tp <= 1 ? 0 : int64_t(c.channels) * c.peers * c.buffer_bytes;
}

void check_single_consumer(const ParamShape& p) {
  if (p.fusable()) return;
  throw std::invalid_argument(p.name + " (" + param_kind_name(p.kind) +
                              "): not a single-consumer GEMM gradient, so a fused in-place update would apply a "
                              "partial gradient (Remark 1). Use the fallback: materialize its whole gradient, then "
                              "the standard step");
}

namespace {
int64_t& slot(std::vector<std::pair<std::string, int64_t>>& v, const std::string& tag) {
  for (auto& [k, x] : v)
    if (k == tag) return x;
  v.emplace_back(tag, 0);
  return v.back().second;
}
}  // namespace

void MemoryLedger::alloc(const std::string& tag, int64_t bytes) {
  int64_t& u = slot(in_use, tag);
  u += bytes;
  int64_t& p = slot(peak, tag);
  if (u > p) p = u;
  total_in_use += bytes;
  if (total_in_use > total_peak) total_peak = total_in_use;
  if (total_in_use > phase_peak) phase_peak = total_in_use;
}

void MemoryLedger::phase(const std::string& name) {
  timeline.push_back({name, total_in_use, std::max(phase_peak, total_in_use)});
  phase_peak = total_in_use;
}

std::string MemoryLedger::timeline_text() const {
  std::string s;
  for (const Phase& p : timeline)
    s += (s.empty() ? "" : "; ") + p.name + " " + std::to_string(p.in_use) + "/" + std::to_string(p.peak);
  return s;
}

void MemoryLedger::release(const std::string& tag, int64_t bytes) {
  int64_t& u = slot(in_use, tag);
  if (bytes > u) throw std::logic_error("MemoryLedger: releasing more " + tag + " bytes than are in use");
  u -= bytes;
  total_in_use -= bytes;
}

int64_t MemoryLedger::peak_of(const std::string& tag) const {
  for (const auto& [k, x] : peak)
    if (k == tag) return x;
  return 0;
}

void MemoryLedger::reset_peaks() {
  for (auto& [k, x] : peak) x = slot(in_use, k);
  total_peak = total_in_use;
}

}  // namespace fh
