// forge-model-step: the model-shaped training step (kernels/gpu/model_step.h) measured on the GPU
// runner: peak memory from the tagged pool, a timeline of every phase, step times, the Eq. 6 and
// standard-path models for the same configuration (reference/memory_model.h), and digests of every
// linear's dX and of every weight and state (Remark 1 across runs). One configuration per process.
// The JSON carries the fields of scripts/forge_model_bench.py's (config, model, status, peak_bytes,
// median_ms, ...), so forge-verify --external-model reads both side by side.
//
// Usage:
//   forge-model-step --model llama31_8b|qwen3_14b|qwen3_0p6b|qwen3_1p7b|qwen3_4b|qwen3_8b|gpt2_124m|llama_30m|tiny [--layers N] [--tokens 512] [--tied]
//                    [--update fused|standard|standard_cublas] [--state bf16|fp32|int8]
//                    [--store bf16_rne|bf16_sr|fp32_master] [--steps 8] [--warmup 3] --out F.json [--force]
//   forge-model-step ... --capacity MAX --out F.json   the most layers (0..MAX) whose step fits
//   forge-model-step ... [--batch B] [--tp N] [--capacity-batch MAX]
//     a micro-batch of B sequences of --tokens each; one tensor-parallel rank of degree N
//     (reference/memory_model.h tp_rank_shape: its shard of every weight and activation; its
//     collectives are not run, one GPU having no peers, and the stand-in for NCCL's buffers,
//     tp_collective_bytes, is allocated outside the pool as NCCL's own are); --capacity-batch: the
//     largest micro-batch (0..MAX) whose step fits the GPU
//   forge-model-step --model llama_30m --train DIR [--seed S] [--lr 6e-4] [--steps 1000] [--eval-every 50]
//                    [--eval-batches 8] [--plant skip_one_update] [--dump-init W.bin] [--dump-grads G.bin] ... --out F.json
//     a convergence run (issue 33) on DIR's tokens (scripts/prepare_corpus.py): each step's loss and a
//     digest of every weight and state after it, the held-out loss every --eval-every steps
// --out follows forge-verify's report path policy (reports/report.h), checked before any GPU work.
// Exit: 0 measured, 1 the step failed (the JSON says how; out of memory included), 2 bad arguments
// or a refused --out, 3 internal error (the JSON could not be written after the measurement),
// 4 no GPU.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kernels/common/bf16.h"
#include "kernels/gpu/device_info.h"
#include "kernels/gpu/model_step.h"
#include "reference/memory_model.h"
#include "reports/report.h"
#include "suites/model_step/token_data.h"

namespace {

using fh::gpu::ModelStep;
using fh::gpu::ModelStepConfig;
using fh::gpu::ModelStepStats;
using fh::gpu::TaggedPool;
using json = nlohmann::json;

struct Args {
  std::string model, out, update = "fused", state = "bf16", store = "bf16_rne";
  int64_t layers = -1, tokens = 512, capacity = -1, batch = 1, tp = 1, capacity_batch = -1;
  int steps = 8, warmup = 3;  // warm-up as scripts/forge_model_bench.py
  bool tied = false, force = false;
  // --train: the convergence run.
  std::string train_dir, plant, dump_init, dump_grads;
  uint64_t seed = 0x18ull;
  double lr = 6e-4;
  int64_t eval_every = 50, eval_batches = 8, trace_steps = 0;
  bool steps_given = false;
};

const char kUsage[] =
    "usage: forge-model-step --model llama31_8b|qwen3_14b|qwen3_0p6b|qwen3_1p7b|qwen3_4b|qwen3_8b|gpt2_124m|llama_30m|tiny [--layers N] [--tokens T] [--tied]\n"
    "         [--update fused|standard|standard_cublas] [--state bf16|fp32|int8]\n"
    "         [--store bf16_rne|bf16_sr|fp32_master] [--steps N] [--warmup W] [--capacity MAX]\n"
    "         [--batch B] [--tp N] [--capacity-batch MAX]\n"
    "         [--train DIR [--seed S] [--lr LR] [--eval-every K] [--eval-batches B] [--plant skip_one_update]\n"
    "          [--dump-init W.bin] [--dump-grads G.bin] [--trace-steps N]]\n"
    "         --out F.json [--force]\n"
    "--train DIR: a convergence run on DIR/train.u16 and DIR/heldout.u16 (scripts/prepare_corpus.py), --steps\n"
    "steps (default 1000) of AdamW at --lr from the weights of --seed, the held-out loss every K steps;\n"
    "--dump-init: the initial bf16 weights, for scripts/torch_train_reference.py --init-from (same path policy).\n"
    "--dump-grads: the standard path's first-step gradients (fp32), for torch_train_reference.py --compare-grads.\n"
    "--trace-steps N: for the first N steps, the largest change of a bf16 weight in the step and (INT8 state)\n"
    "the second moments decoding to zero (the INT8 divergence's measured cause; reads only).\n"
    "--tp N: one tensor-parallel rank's shard of the step (collectives not run; NCCL's buffers allocated\n"
    "outside the pool); --capacity-batch MAX: the largest micro-batch of --tokens sequences that fits.\n"
    "--out: absent or a regular file (never a directory, device or symbolic link), replaced only with\n"
    "--force; written to F.json.tmp.<pid> and renamed. Checked before any GPU work.\n"
    "Exit: 0 measured, 1 the step failed (the JSON says how), 2 bad arguments or a refused --out,\n"
    "3 internal error (the JSON could not be written), 4 no GPU.\n";

[[noreturn]] void usage(const std::string& why) {
  std::cerr << "forge-model-step: " << why << "\n" << kUsage;
  std::exit(2);
}

int64_t parse_int(const std::string& flag, const char* v, int64_t lo, int64_t hi) {
  char* end = nullptr;
  const long long x = std::strtoll(v, &end, 10);
  if (!*v || *end || x < lo || x > hi) usage(flag + " needs an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return x;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    const auto val = [&]() -> const char* {
      if (i + 1 >= argc) usage(f + " needs a value");
      return argv[++i];
    };
    if (f == "-h" || f == "--help") {
      std::cout << kUsage;
      std::exit(0);
    } else if (f == "--model") a.model = val();
    else if (f == "--out") a.out = val();
    else if (f == "--update") a.update = val();
    else if (f == "--state") a.state = val();
    else if (f == "--store") a.store = val();
    else if (f == "--layers") a.layers = parse_int(f, val(), 0, 1000);
    else if (f == "--tokens") a.tokens = parse_int(f, val(), 1, 1 << 16);
    else if (f == "--steps") a.steps = int(parse_int(f, val(), 1, 100000)), a.steps_given = true;
    else if (f == "--train") a.train_dir = val();
    else if (f == "--seed") a.seed = uint64_t(parse_int(f, val(), 0, int64_t(1) << 62));
    else if (f == "--eval-every") a.eval_every = parse_int(f, val(), 1, 100000);
    else if (f == "--eval-batches") a.eval_batches = parse_int(f, val(), 1, 1024);
    else if (f == "--plant") a.plant = val();
    else if (f == "--dump-init") a.dump_init = val();
    else if (f == "--dump-grads") a.dump_grads = val();
    else if (f == "--trace-steps") a.trace_steps = parse_int(f, val(), 1, 100000);
    else if (f == "--lr") {
      const char* v = val();
      char* end = nullptr;
      a.lr = std::strtod(v, &end);
      if (!*v || *end || !(a.lr > 0.0) || a.lr > 1.0) usage("--lr needs a number in (0, 1]");
    }
    else if (f == "--warmup") a.warmup = int(parse_int(f, val(), 0, 100));
    else if (f == "--capacity") a.capacity = parse_int(f, val(), 1, 1000);
    else if (f == "--batch") a.batch = parse_int(f, val(), 1, 4096);
    else if (f == "--tp") a.tp = parse_int(f, val(), 1, 64);
    else if (f == "--capacity-batch") a.capacity_batch = parse_int(f, val(), 1, 4096);
    else if (f == "--tied") a.tied = true;
    else if (f == "--force") a.force = true;
    else usage("unknown argument " + f);
  }
  if (a.model.empty() || a.out.empty()) usage("--model and --out are required");
  if (!a.plant.empty() && a.plant != "skip_one_update") usage("--plant: skip_one_update (the only planted defect here)");
  if (!a.plant.empty() && (a.train_dir.empty() || a.update != "fused")) usage("--plant needs --train and --update fused");
  if (a.steps > 1000 && a.train_dir.empty()) usage("--steps above 1000 only with --train");
  if (!a.train_dir.empty() && a.capacity > 0) usage("--train and --capacity are two modes: one at a time");
  if (a.capacity > 0 && a.capacity_batch > 0) usage("--capacity and --capacity-batch: one at a time");
  if (!a.train_dir.empty() && (a.batch != 1 || a.tp != 1 || a.capacity_batch > 0))
    usage("--train runs one sequence on one whole model: no --batch, --tp or --capacity-batch");
  if (!a.dump_init.empty() && a.train_dir.empty()) usage("--dump-init needs --train");
  if (!a.dump_grads.empty() && (a.train_dir.empty() || a.update == "fused"))
    usage("--dump-grads needs --train and the standard path (--update standard or standard_cublas)");
  if (!a.train_dir.empty() && !a.steps_given) a.steps = 1000;
  if (a.trace_steps > 0 && (a.train_dir.empty() || a.trace_steps > a.steps)) usage("--trace-steps needs --train and at most --steps");
  return a;
}

fh::gpu::ModelUpdate parse_update(const std::string& s) {
  if (s == "fused") return fh::gpu::ModelUpdate::fused;
  if (s == "standard") return fh::gpu::ModelUpdate::standard;
  if (s == "standard_cublas") return fh::gpu::ModelUpdate::standard_cublas;
  usage("--update: fused, standard or standard_cublas");
}
fh::StateFormat parse_state(const std::string& s) {
  fh::StateFormat f;
  if (!fh::state_format_from_name(s, f)) usage("--state: bf16, fp32 or int8");
  return f;
}
fh::WeightStore parse_store(const std::string& s) {
  fh::WeightStore w;
  if (!fh::weight_store_from_name(s, w)) usage("--store: bf16_rne, bf16_sr or fp32_master");
  return w;
}

std::string hex(uint64_t v) {
  char b[20];
  std::snprintf(b, sizeof b, "%016llx", (unsigned long long)v);
  return b;
}

json phase_json(const TaggedPool::Phase& ph) {
  json tags = json::object();
  for (int t = 0; t < TaggedPool::kTags; ++t) tags[TaggedPool::tag_name(t)] = ph.tag_in_use[t];
  return {{"name", ph.name}, {"in_use", ph.in_use}, {"peak", ph.peak}, {"tagged_in_use", ph.tagged_in_use},
          {"tagged_peak", ph.tagged_peak}, {"device_used", ph.device_used}, {"outside_pool", ph.outside_pool},
          {"tags", tags}};
}

// Eq. 6 (fused) or the standard path's model for this configuration, with the activations the step
// held at its peak phase.
json memory_model_json(const fh::ModelShape& shape, const ModelStepConfig& cfg, int64_t activation_bytes) {
  fh::StepLayout l;
  l.state = cfg.state;
  l.store = cfg.store;
  l.state_slots = 2;  // AdamW
  l.grad_bytes = 4;   // the step materializes fp32 gradients
  const std::vector<fh::ParamShape> ps = fh::model_params(shape);
  const auto est = fh::step_memory(ps, l, cfg.update == fh::gpu::ModelUpdate::fused, activation_bytes);
  json terms = json::array();
  for (const auto& t : est.terms) terms.push_back({{"name", t.name}, {"formula", t.formula}, {"bytes", t.bytes}});
  return {{"terms", terms}, {"total", est.total()}, {"activation_bytes", activation_bytes},
          {"params", fh::param_count(ps)}};
}

int count_nonfinite(const std::vector<double>& v) {
  return int(std::count_if(v.begin(), v.end(), [](double x) { return !std::isfinite(x); }));
}
// Losses as JSON, a non-finite one as null (JSON has no NaN).
json nullable(const std::vector<double>& v) {
  json out = json::array();
  for (double x : v) out.push_back(std::isfinite(x) ? json(x) : json(nullptr));
  return out;
}

// What one tensor-parallel rank's communicator holds outside the pool (tp_collective_bytes): allocated
// and touched for the life of the measurement, as NCCL's buffers would be; `allocated` is the device
// memory it took, read from cudaMemGetInfo around the allocation.
struct CollectiveStandIn {
  void* p = nullptr;
  int64_t allocated = 0;
  explicit CollectiveStandIn(int64_t bytes) {
    if (bytes <= 0) return;
    size_t free0 = 0, free1 = 0, total = 0;
    fh::gpu::cuda_check(cudaMemGetInfo(&free0, &total), "collectives: cudaMemGetInfo");
    fh::gpu::cuda_check(cudaMalloc(&p, size_t(bytes)), "collectives: cudaMalloc");
    fh::gpu::cuda_check(cudaMemset(p, 0, size_t(bytes)), "collectives: cudaMemset");
    fh::gpu::cuda_check(cudaMemGetInfo(&free1, &total), "collectives: cudaMemGetInfo");
    allocated = int64_t(free0) - int64_t(free1);
  }
  ~CollectiveStandIn() {
    if (p) cudaFree(p);
  }
  CollectiveStandIn(const CollectiveStandIn&) = delete;
  CollectiveStandIn& operator=(const CollectiveStandIn&) = delete;
};

// A dump of one value per parameter element (--dump-init's bf16 weights, --dump-grads's fp32
// gradients; scripts/torch_train_reference.py read_dump): a JSON line (`head`, with the model, the seed
// and each parameter's shape and offset in values) and then each parameter's values, `values(i)`'s
// little-endian bytes, in params() order.
template <class Values>
void write_param_dump(const Args& a, const std::string& path, json head, const ModelStep& m, Values values) {
  head["model"] = a.model;
  head["seed"] = a.seed;
  head["params"] = json::array();
  std::string bytes;
  int64_t offset = 0;
  for (size_t i = 0; i < m.params().size(); ++i) {
    const auto& p = m.params()[i];
    head["params"].push_back({{"name", p.name}, {"rows", p.rows}, {"cols", p.cols}, {"offset", offset}});
    bytes += values(i);
    offset += p.rows * p.cols;
  }
  fh::write_text_file(path, head.dump() + "\n" + bytes, fh::WriteOptions{.replace_existing = a.force});
}

// --trace-steps: per traced step, the largest |w_after - w_before| over every bf16 weight (null once
// one is not finite) and its parameter, and with INT8 state the second moments decoding to zero after
// the step (ModelStep::int8_zero_counts). Reads only.
class StepTrace {
 public:
  explicit StepTrace(bool int8) : int8_(int8) {
    if (int8_) doc_["v_zero"] = json::array(), doc_["v_zero_m_nonzero"] = json::array();
  }
  void before_step(const ModelStep& m) {
    before_.clear();
    for (size_t i = 0; i < m.params().size(); ++i) before_.push_back(m.weight_bits(i));
  }
  void after_step(const ModelStep& m) {
    double worst = 0.0;  // NaN once a weight is not finite
    std::string where = "none";
    for (size_t i = 0; i < m.params().size(); ++i) {
      const std::vector<uint16_t> after = m.weight_bits(i);
      for (size_t k = 0; k < after.size(); ++k) {
        const double d = std::fabs(double(value(after[k])) - double(value(before_[i][k])));
        if (!(d <= worst) && !std::isnan(worst)) worst = d, where = m.params()[i].name;
      }
    }
    doc_["max_abs_update"].push_back(std::isfinite(worst) ? json(worst) : json(nullptr));
    doc_["max_update_param"].push_back(where);
    if (int8_) {
      const ModelStep::Int8ZeroCounts z = m.int8_zero_counts();
      doc_["v_zero"].push_back(z.v_zero);
      doc_["v_zero_m_nonzero"].push_back(z.v_zero_m_nonzero);
    }
  }
  const json& doc() const { return doc_; }

 private:
  static float value(uint16_t bits) { return fh::bf16_to_float(fh::bf16::from_bits(bits)); }
  bool int8_;
  json doc_ = {{"max_abs_update", json::array()}, {"max_update_param", json::array()}};
  std::vector<std::vector<uint16_t>> before_;
};

// The convergence run (--train): a.steps steps on the training windows of a.seed, each step's loss
// and the digest of every weight and state after it (fused == standard bit for bit shows as equal
// digests at every step), and the mean held-out loss over a.eval_batches windows at step 0, every
// a.eval_every steps and at the end. Throws on bad data (the caller records the failure).
void train_run(const Args& a, const ModelStepConfig& cfg, json& doc) {
  const int64_t T = cfg.dims.tokens, V = cfg.dims.vocab;
  const std::vector<int32_t> train = fh::train::load_tokens(a.train_dir + "/train.u16", V, T + 1);
  const std::vector<int32_t> held = fh::train::load_tokens(a.train_dir + "/heldout.u16", V, T + 1);
  std::ifstream corpus(a.train_dir + "/corpus.json");
  if (corpus) {
    const json c = json::parse(corpus, nullptr, false);
    if (c.is_object() && c.contains("files")) doc["corpus"] = c["files"];
  }
  ModelStep m(cfg);
  m.set_marks(false, false);
  if (!a.dump_init.empty()) {
    write_param_dump(a, a.dump_init, {{"kind", "fh_model_weights"}}, m, [&](size_t i) {
      std::string bits;
      for (uint16_t b : m.weight_bits(i)) bits.push_back(char(b & 0xff)), bits.push_back(char(b >> 8));
      return bits;
    });
    doc["dumped_init"] = a.dump_init;
  }
  doc["params"] = m.param_count();
  doc["fused_params"] = m.fused_param_count();
  doc["data"] = {{"dir", a.train_dir}, {"train_tokens", train.size()}, {"heldout_tokens", held.size()}};
  std::vector<int32_t> tok, lab;
  auto eval = [&]() {
    double sum = 0.0;
    for (int64_t i = 0; i < a.eval_batches; ++i) {
      fh::train::window(held, fh::train::heldout_offset(i, a.eval_batches, int64_t(held.size()), T), T, tok, lab);
      m.set_batch(tok, lab);
      sum += double(m.eval_loss());
    }
    return sum / double(a.eval_batches);
  };
  auto digest = [&]() {
    uint64_t h = 0xcbf29ce484222325ull;
    for (uint64_t d : m.weight_digests()) h = (h ^ d) * 0x100000001b3ull;
    for (uint64_t d : m.state_digests()) h = (h ^ d) * 0x100000001b3ull;
    return hex(h);
  };
  std::vector<double> losses, eval_losses;
  std::vector<int64_t> eval_steps;
  json digests = json::array();
  const bool int8 = cfg.state == fh::StateFormat::int8;
  StepTrace trace(int8);
  if (!a.dump_grads.empty()) m.capture_gradients(true);
  eval_steps.push_back(0);
  eval_losses.push_back(eval());
  for (int64_t s = 1; s <= a.steps; ++s) {
    fh::train::window(train, fh::train::train_offset(a.seed, s, int64_t(train.size()), T), T, tok, lab);
    m.set_batch(tok, lab);
    const bool traced = s <= a.trace_steps;
    if (traced) trace.before_step(m);
    losses.push_back(double(m.step(s).loss));
    if (traced) trace.after_step(m);
    if (s == 1 && !a.dump_grads.empty()) {  // the first step's gradients, fp32 (x86-64: little-endian)
      write_param_dump(a, a.dump_grads, {{"kind", "fh_model_grads"}, {"step", 1}}, m, [&](size_t i) {
        const std::vector<float>& g = m.gradients()[i];
        if (int64_t(g.size()) != m.params()[i].rows * m.params()[i].cols)
          throw std::logic_error("--dump-grads: no gradient for " + m.params()[i].name);
        return std::string(reinterpret_cast<const char*>(g.data()), g.size() * 4);
      });
      doc["dumped_grads"] = a.dump_grads;
      m.capture_gradients(false);
    }
    digests.push_back(digest());
    if (s % a.eval_every == 0 || s == a.steps) {
      eval_steps.push_back(s);
      eval_losses.push_back(eval());
      std::cerr << "forge-model-step: step " << s << " train " << losses.back() << " held-out " << eval_losses.back() << "\n";
    }
  }
  const int nonfinite = count_nonfinite(losses) + count_nonfinite(eval_losses);
  if (int8) {
    // The INT8 gap's first suspect: second moments that decode to zero (AdamW's slot 1), whose
    // update is then m / eps.
    const ModelStep::Int8ZeroCounts z = m.int8_zero_counts();
    doc["int8_v_zero"] = z.v_zero;
    doc["int8_v_total"] = z.total;
  }
  doc["train_loss"] = nullable(losses);
  doc["eval_steps"] = eval_steps;
  doc["eval_loss"] = nullable(eval_losses);
  doc["step_digests"] = digests;
  if (a.trace_steps > 0) doc["trace"] = trace.doc();
  doc["nonfinite_losses"] = nonfinite;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  fh::ModelShape shape;
  try {
    shape = fh::model_shape(a.model);
  } catch (const std::exception& e) {
    usage(e.what());
  }
  if (a.layers >= 0) shape.layers = a.layers;
  shape.tied = shape.tied || a.tied;  // the family's own tie (Qwen3 up to 4B, GPT-2), or --tied
  shape.qk_norm = false;  // not modelled by the step (kernels/gpu/model_step.h)
  try {
    shape = fh::tp_rank_shape(shape, int(a.tp));  // the rank's shard (tp 1: the whole model)
  } catch (const std::invalid_argument& e) {
    usage(std::string("--tp: ") + e.what());
  }
  ModelStepConfig cfg;
  cfg.dims = {shape.hidden, shape.intermediate, shape.heads, shape.kv_heads, shape.head_dim, shape.vocab, shape.layers,
              a.tokens, a.batch, shape.tied};
  // torch's settings in scripts/forge_model_bench.py: AdamW lr 1e-4, betas (0.9, 0.999), eps 1e-8,
  // weight decay 0.01.
  std::get<fh::AdamW::Hyper>(cfg.rule.hyper).lr = a.train_dir.empty() ? 1e-4 : a.lr;
  if (!a.train_dir.empty()) cfg.seed = a.seed;
  cfg.defects.skip_one_update = a.plant == "skip_one_update";
  cfg.update = parse_update(a.update);
  cfg.state = parse_state(a.state);
  cfg.store = parse_store(a.store);
  // Everything about --out before the GPU is touched: a run that cannot keep its measurement
  // (an 8B step takes minutes) is refused here.
  const fh::WriteOptions write_options{.replace_existing = a.force};
  try {
    fh::check_output_path("forge-model-step", a.out, write_options);
  } catch (const fh::ReportPathError& e) {
    usage(std::string("--out: ") + e.what());
  }
  for (const auto& [flag, path] : {std::pair<const char*, const std::string*>{"--dump-init", &a.dump_init},
                                    {"--dump-grads", &a.dump_grads}}) {
    if (path->empty()) continue;
    try {
      fh::check_output_path("forge-model-step", *path, write_options);
    } catch (const fh::ReportPathError& e) {
      usage(std::string(flag) + ": " + e.what());
    }
  }
  const fh::DeviceInfo& dev = fh::query_device_info();
  if (!dev.available) {
    std::cerr << "forge-model-step: no GPU: " << dev.reason << "\n";
    return 4;
  }
  const std::string config = "harness_" + a.update + "_" + a.state + (a.store == "bf16_rne" ? "" : "_" + a.store) +
                             (shape.tied ? "_tied" : "") + (a.tp > 1 ? "_tp" + std::to_string(a.tp) : "") +
                             (a.batch > 1 ? "_b" + std::to_string(a.batch) : "") + (a.plant.empty() ? "" : "_planted_" + a.plant);
  json doc = {{"config", config}, {"model", a.model}, {"status", "ok"}, {"batch", a.batch}, {"seq", a.tokens},
              {"steps", a.steps}, {"warmup_steps", a.warmup}, {"dtype", "bf16"}, {"device", dev.name},
              {"update", a.update}, {"state", a.state}, {"store", a.store}, {"layers", shape.layers},
              {"tied", shape.tied}, {"cublas", dev.cublas}, {"lr", a.train_dir.empty() ? 1e-4 : a.lr},
              {"producer", "forge-model-step (kernels/gpu/model_step)"}};
  if (!a.train_dir.empty()) {
    doc["kind"] = "convergence_run";
    doc["path"] = "harness";
    doc["seed"] = a.seed;
    doc["eval_every"] = a.eval_every;
    doc["eval_batches"] = a.eval_batches;
    doc["weight_decay"] = std::get<fh::AdamW::Hyper>(cfg.rule.hyper).weight_decay;
    if (!a.plant.empty()) doc["planted"] = a.plant;
  }
  const int64_t collective_bytes = fh::tp_collective_bytes(int(a.tp));
  if (a.tp > 1) {
    doc["tp"] = a.tp;
    doc["rank_shape"] = {{"heads", shape.heads}, {"kv_heads", shape.kv_heads}, {"intermediate", shape.intermediate},
                         {"vocab", shape.vocab}, {"hidden", shape.hidden}, {"layers", shape.layers}};
    doc["collective_bytes_modeled"] = collective_bytes;
  }
  int rc = 0;
  try {
    size_t free_b = 0, total_b = 0;
    fh::gpu::cuda_check(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
    doc["device_total_bytes"] = int64_t(total_b);
    doc["device_used_at_start"] = int64_t(total_b - free_b);  // the CUDA context and whatever else runs
    const CollectiveStandIn collectives(collective_bytes);
    if (a.tp > 1) doc["collective_bytes_allocated"] = collectives.allocated;
    if (!a.train_dir.empty()) {
      train_run(a, cfg, doc);
    } else if (a.capacity > 0 || a.capacity_batch > 0) {
      // Binary search for the most layers (--capacity) or the largest micro-batch (--capacity-batch)
      // whose model builds and runs two steps in the pool.
      const bool over_batch = a.capacity_batch > 0;
      json attempts = json::array();
      const auto fits = [&](int64_t n) {
        ModelStepConfig c = cfg;
        (over_batch ? c.dims.batch : c.dims.layers) = n;
        c.phase_marks = false;
        json at = {{over_batch ? "batch" : "layers", n}};
        try {
          ModelStep m(c);
          m.step(1);
          const ModelStepStats s = m.step(2);
          at["fits"] = true;
          at["peak_bytes"] = s.pool_peak;
          at["device_used"] = s.timeline.back().device_used;
        } catch (const std::exception& e) {
          at["fits"] = false;
          at["error"] = e.what();
        }
        std::cerr << "forge-model-step: capacity " << at.dump() << "\n";
        attempts.push_back(at);
        return at["fits"].get<bool>();
      };
      // invariant: lo fits (0 layers: embedding and head only, assumed; batch 0: nothing), hi+1 unknown
      int64_t lo = 0, hi = over_batch ? a.capacity_batch : a.capacity;
      if (fits(hi)) lo = hi;
      else {
        --hi;
        while (lo < hi) {
          const int64_t mid = (lo + hi + 1) / 2;
          if (fits(mid)) lo = mid;
          else hi = mid - 1;
        }
      }
      doc["config"] = config + (over_batch ? "_capacity_batch" : "_capacity");
      doc["attempts"] = attempts;
      if (over_batch) {
        doc["capacity_batch_max_tried"] = a.capacity_batch;
        doc["max_batch_fit"] = lo;
      } else {
        doc["capacity_max_tried"] = a.capacity;
        doc["max_layers_fit"] = lo;
      }
    } else {
      cfg.digests = true;
      ModelStep m(cfg);
      doc["params"] = m.param_count();
      doc["fused_params"] = m.fused_param_count();
      doc["resident_bytes"] = m.resident_bytes();
      // A tied embedding / LM head keeps its whole fp32 gradient from the head's backward to the step.
      if (shape.tied) doc["tied_gradient_bytes"] = shape.vocab * shape.hidden * 4;
      std::vector<double> step_ms, losses;
      int64_t peak = 0, outside = 0, reserved_peak = 0;
      json tag_peaks = json::object();
      for (int s = 1; s <= a.steps; ++s) {
        m.set_marks(s == 1, s == 1);  // later steps: no synchronization inside the timed step, no digests
        const ModelStepStats st = m.step(s);
        step_ms.push_back(st.ms);
        losses.push_back(std::isfinite(st.loss) ? double(st.loss) : NAN);
        peak = std::max(peak, st.pool_peak);
        for (const auto& ph : st.timeline) {
          outside = std::max(outside, ph.outside_pool);
          reserved_peak = std::max(reserved_peak, ph.device_used - ph.outside_pool);
        }
        if (s == 1) {
          json tl = json::array(), dx = json::array();
          for (const auto& ph : st.timeline) tl.push_back(phase_json(ph));
          for (uint64_t d : st.dx_digests) dx.push_back(hex(d));
          doc["timeline"] = tl;
          doc["dx_digests_step1"] = dx;
          for (int t = 0; t < TaggedPool::kTags; ++t) tag_peaks[TaggedPool::tag_name(t)] = st.tag_peak[t];
          doc["tag_peaks"] = tag_peaks;
          doc["memory_model"] = memory_model_json(shape, cfg, st.tag_peak[TaggedPool::activations]);
          std::cerr << "forge-model-step: step 1 peak " << st.pool_peak << " bytes, loss " << st.loss << "\n";
        }
        doc["step_ms"] = step_ms;
        doc["peak_bytes"] = peak;
      }
      doc["losses"] = nullable(losses);
      doc["nonfinite_losses"] = count_nonfinite(losses);
      std::vector<double> timed(step_ms.begin() + std::min<size_t>(step_ms.size(), size_t(a.warmup)), step_ms.end());
      if (timed.empty()) timed = step_ms;
      std::sort(timed.begin(), timed.end());
      doc["median_ms"] = timed[timed.size() / 2];
      doc["timed_steps"] = timed.size();
      doc["peak_reserved_bytes"] = reserved_peak;
      doc["outside_pool_bytes"] = outside;
      json wd = json::array(), sd = json::array(), names = json::array();
      const auto w = m.weight_digests(), sdg = m.state_digests();
      for (size_t i = 0; i < w.size(); ++i) {
        wd.push_back(hex(w[i]));
        sd.push_back(hex(sdg[i]));
        names.push_back(m.params()[i].name);
      }
      doc["param_names"] = names;
      doc["weight_digests"] = wd;
      doc["state_digests"] = sd;
    }
  } catch (const std::exception& e) {
    doc["status"] = "failed";
    doc["error"] = e.what();
    rc = 1;
  }
  try {
    fh::write_text_file(a.out, doc.dump(1) + "\n", write_options);
  } catch (const std::exception& e) {
    // --out was checked before the measurement: a failure now is not the arguments' fault.
    std::cerr << "forge-model-step: internal error: --out: " << e.what() << "\n";
    return 3;
  }
  std::cerr << "forge-model-step: " << config << " " << doc["status"].get<std::string>()
            << (doc.contains("peak_bytes") ? " peak " + doc["peak_bytes"].dump() : "")
            << (doc.contains("median_ms") ? " median_ms " + doc["median_ms"].dump() : "")
            << (doc.contains("error") ? " error " + doc["error"].get<std::string>() : "") << "\n";
  return rc;
}
