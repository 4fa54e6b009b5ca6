// forge-model-step: the model-shaped training step (kernels/gpu/model_step.h) measured on the GPU
// runner: peak memory from the tagged pool, a timeline of every phase, step times, the Eq. 6 and
// standard-path models for the same configuration (reference/memory_model.h), and digests of every
// linear's dX and of every weight and state (Remark 1 across runs). One configuration per process.
// The JSON carries the fields of scripts/forge_model_bench.py's (config, model, status, peak_bytes,
// median_ms, ...), so forge-verify --external-model reads both side by side.
//
// Usage:
//   forge-model-step --model llama31_8b|qwen3_14b|tiny [--layers N] [--tokens 512] [--tied]
//                    [--update fused|standard|standard_cublas] [--state bf16|fp32|int8]
//                    [--store bf16_rne|bf16_sr|fp32_master] [--steps 8] [--warmup 3] --out F.json [--force]
//   forge-model-step ... --capacity MAX --out F.json   the most layers (0..MAX) whose step fits
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

#include "kernels/gpu/device_info.h"
#include "kernels/gpu/model_step.h"
#include "reference/memory_model.h"
#include "reports/report.h"

namespace {

using fh::gpu::ModelStep;
using fh::gpu::ModelStepConfig;
using fh::gpu::ModelStepStats;
using fh::gpu::TaggedPool;
using json = nlohmann::json;

struct Args {
  std::string model, out, update = "fused", state = "bf16", store = "bf16_rne";
  int64_t layers = -1, tokens = 512, capacity = -1;
  int steps = 8, warmup = 3;  // warm-up as scripts/forge_model_bench.py
  bool tied = false, force = false;
};

const char kUsage[] =
    "usage: forge-model-step --model llama31_8b|qwen3_14b|tiny [--layers N] [--tokens T] [--tied]\n"
    "         [--update fused|standard|standard_cublas] [--state bf16|fp32|int8]\n"
    "         [--store bf16_rne|bf16_sr|fp32_master] [--steps N] [--warmup W] [--capacity MAX]\n"
    "         --out F.json [--force]\n"
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
    else if (f == "--steps") a.steps = int(parse_int(f, val(), 1, 1000));
    else if (f == "--warmup") a.warmup = int(parse_int(f, val(), 0, 100));
    else if (f == "--capacity") a.capacity = parse_int(f, val(), 1, 1000);
    else if (f == "--tied") a.tied = true;
    else if (f == "--force") a.force = true;
    else usage("unknown argument " + f);
  }
  if (a.model.empty() || a.out.empty()) usage("--model and --out are required");
  return a;
}

fh::gpu::ModelUpdate parse_update(const std::string& s) {
  if (s == "fused") return fh::gpu::ModelUpdate::fused;
  if (s == "standard") return fh::gpu::ModelUpdate::standard;
  if (s == "standard_cublas") return fh::gpu::ModelUpdate::standard_cublas;
  usage("--update: fused, standard or standard_cublas");
}
fh::StateFormat parse_state(const std::string& s) {
  if (s == "bf16") return fh::StateFormat::bf16;
  if (s == "fp32") return fh::StateFormat::fp32;
  if (s == "int8") return fh::StateFormat::int8;
  usage("--state: bf16, fp32 or int8");
}
fh::WeightStore parse_store(const std::string& s) {
  if (s == "bf16_rne") return fh::WeightStore::bf16_rne;
  if (s == "bf16_sr") return fh::WeightStore::bf16_sr;
  if (s == "fp32_master") return fh::WeightStore::fp32_master;
  usage("--store: bf16_rne, bf16_sr or fp32_master");
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
  shape.tied = a.tied;
  shape.qk_norm = false;  // not modelled by the step (kernels/gpu/model_step.h)
  ModelStepConfig cfg;
  cfg.dims = {shape.hidden, shape.intermediate, shape.heads, shape.kv_heads, shape.head_dim, shape.vocab, shape.layers,
              a.tokens, a.tied};
  // torch's settings in scripts/forge_model_bench.py: AdamW lr 1e-4, betas (0.9, 0.999), eps 1e-8,
  // weight decay 0.01.
  std::get<fh::AdamW::Hyper>(cfg.rule.hyper).lr = 1e-4;
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
  const fh::DeviceInfo& dev = fh::query_device_info();
  if (!dev.available) {
    std::cerr << "forge-model-step: no GPU: " << dev.reason << "\n";
    return 4;
  }
  const std::string config = "harness_" + a.update + "_" + a.state + (a.store == "bf16_rne" ? "" : "_" + a.store) +
                             (a.tied ? "_tied" : "");
  json doc = {{"config", config}, {"model", a.model}, {"status", "ok"}, {"batch", 1}, {"seq", a.tokens},
              {"steps", a.steps}, {"warmup_steps", a.warmup}, {"dtype", "bf16"}, {"device", dev.name},
              {"update", a.update}, {"state", a.state}, {"store", a.store}, {"layers", shape.layers},
              {"tied", a.tied}, {"cublas", dev.cublas}, {"lr", 1e-4}, {"producer", "forge-model-step (kernels/gpu/model_step)"}};
  int rc = 0;
  try {
    if (a.capacity > 0) {
      // Binary search for the most layers whose model builds and runs two steps in the pool.
      json attempts = json::array();
      const auto fits = [&](int64_t layers) {
        ModelStepConfig c = cfg;
        c.dims.layers = layers;
        c.phase_marks = false;
        json at = {{"layers", layers}};
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
      int64_t lo = 0, hi = a.capacity;  // invariant: lo fits (0 layers: embedding and head only, assumed), hi+1 unknown
      if (fits(hi)) lo = hi;
      else {
        --hi;
        while (lo < hi) {
          const int64_t mid = (lo + hi + 1) / 2;
          if (fits(mid)) lo = mid;
          else hi = mid - 1;
        }
      }
      doc["config"] = config + "_capacity";
      doc["capacity_max_tried"] = a.capacity;
      doc["max_layers_fit"] = lo;
      doc["attempts"] = attempts;
    } else {
      cfg.digests = true;
      ModelStep m(cfg);
      doc["params"] = m.param_count();
      doc["fused_params"] = m.fused_param_count();
      doc["resident_bytes"] = m.resident_bytes();
      // A tied embedding / LM head keeps its whole fp32 gradient from the head's backward to the step.
      if (a.tied) doc["tied_gradient_bytes"] = shape.vocab * shape.hidden * 4;
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
      json ls = json::array();
      int nonfinite = 0;
      for (double l : losses) {
        if (std::isfinite(l)) ls.push_back(l);
        else { ls.push_back(nullptr); ++nonfinite; }
      }
      doc["losses"] = ls;
      doc["nonfinite_losses"] = nonfinite;
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
