// The external-producer interface end to end on the CPU: the harness writes the "ci"
// cases, producers that are not the project's kernel answer them (scripts/numpy_producer.py, a
// plain numpy step, and a C++ producer here that steps with the host model of torch's fused
// AdamW), and the ext_* claims judge the files. Each claim must pass on honest files and fail on
// a planted defect: a one-ulp change in W, a wrong order declaration, a corrupted INT8 code.
// Bad files (truncated, another cases file's results, a missing dataset) are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <hdf5.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "kernels/rules/adamw_torch_fused.h"
#include "inputs/external_io.h"
#include "suites/claims/claim_entries.h"
#include "suites/claims/external_common.h"

namespace fs = std::filesystem;

namespace {

using fh::ext::Tensor;

struct Dir {
  fs::path p;
  Dir() {
    p = fs::temp_directory_path() / ("fh_ext_" + std::to_string(::getpid()));
    fs::create_directories(p);
  }
  ~Dir() { fs::remove_all(p); }
  std::string operator/(const std::string& n) const { return (p / n).string(); }
};

const Dir& dir() {
  static Dir d;
  return d;
}

std::string cases_path() {
  static const std::string p = [] {
    const std::string c = dir() / "ci.h5";
    fh::write_external_cases(c, "ci", 20261203, "test");
    return c;
  }();
  return p;
}

// scripts/numpy_producer.py (the CI producer that is not the harness's kernel).
std::string numpy_results(const std::string& role, const std::string& plant = "") {
  const std::string out = dir() / ("np_" + role + (plant.empty() ? "" : "_" + plant) + ".h5");
  if (fs::exists(out)) return out;
  const std::string cmd = std::string(FH_PYTHON) + " " + FH_SOURCE_DIR + "/scripts/numpy_producer.py " + cases_path() +
                          " " + out + " --role " + role + (plant.empty() ? "" : " --plant " + plant) + " > /dev/null";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  return out;
}

// A C++ producer: G from the cases (the fused kernel's order), then torch.optim.AdamW(fused=True)'s
// step on the host, every adamw case with matching parameter and state dtypes.
std::string torch_model_results(const std::string& role, bool plant_one_ulp = false) {
  const std::string out = dir() / ("torch_model_" + role + (plant_one_ulp ? "_ulp" : "") + ".h5");
  if (fs::exists(out)) return out;
  const fh::ext::CasesFile cases(cases_path());
  fh::ext::ResultsHeader h;
  h.cases_id = cases.header().cases_id;
  h.producer = "torch_model";
  h.path = role == "reference" ? "torch_model_reference" : "torch_model_fused";
  h.role = role;
  h.order = {"mma_chain", 16, 1, 16};
  h.meta = {{"package", "host model"}, {"g_source", "cases:G"}};
  std::vector<fh::ext::ResultCaseOut> outs;
  bool planted = false;
  for (const auto& c : cases.cases()) {
    if (c.kind != "adamw") continue;
    fh::ext::ResultCaseOut rc;
    rc.id = c.id;
    if (c.weight_dtype != c.state_dtype) {
      rc.status = "unsupported";
      rc.error = "torch keeps the state in the parameter's dtype";
      outs.push_back(rc);
      continue;
    }
    fh::AdamWTorchFused::Hyper hp;
    hp.lr = c.lr; hp.beta1 = c.beta1; hp.beta2 = c.beta2; hp.eps = c.eps; hp.weight_decay = c.weight_decay;
    const Tensor G = cases.load(c.id, "G");
    Tensor w = cases.load(c.id, "W0"), m = cases.load(c.id, "m0"), v = cases.load(c.id, "v0");
    const int64_t n = c.out * c.in;
    std::vector<float> W, M, V;
    for (int64_t s = 0; s < c.steps; ++s) {
      const auto sc = fh::AdamWTorchFused::scalars(hp, c.first_step + s);
      std::vector<float> ws(static_cast<size_t>(n)), ms(ws), vs(ws);
      for (int64_t k = 0; k < n; ++k) {
        float p = w.value(k), st[2] = {m.value(k), v.value(k)};
        fh::AdamWTorchFused::update(sc, p, G.value(s * n + k), st);
        ws[size_t(k)] = p; ms[size_t(k)] = st[0]; vs[size_t(k)] = st[1];
      }
      w = Tensor::from_floats(w.dtype, {c.out, c.in}, ws);
      m = Tensor::from_floats(m.dtype, {c.out, c.in}, ms);
      v = Tensor::from_floats(v.dtype, {c.out, c.in}, vs);
      if (plant_one_ulp && !planted) {
        w.bytes[0] ^= 1;  // planted: one ulp (or one bit) in W[0, 0] of the first case's first step
        planted = true;
      }
      for (size_t k = 0; k < size_t(n); ++k) {
        W.push_back(w.value(int64_t(k)));
        M.push_back(m.value(int64_t(k)));
        V.push_back(v.value(int64_t(k)));
      }
    }
    rc.data["W"] = Tensor::from_floats(w.dtype, {c.steps, c.out, c.in}, W);
    rc.data["m"] = Tensor::from_floats(m.dtype, {c.steps, c.out, c.in}, M);
    rc.data["v"] = Tensor::from_floats(v.dtype, {c.steps, c.out, c.in}, V);
    rc.data["G"] = G;
    outs.push_back(rc);
  }
  fh::ext::write_results_file(out, h, outs);
  return out;
}

// A copy of a results file with `mutate` applied to one case's named dataset, or (fail_case) that
// case recorded as failed by the producer.
std::string mutated_copy(const std::string& in, const std::string& name, const std::string& case_id,
                         const std::string& dataset, const std::function<void(Tensor&)>& mutate,
                         bool fail_case = false, const std::string& as_variant = "") {
  const fh::ext::CasesFile cases(cases_path());
  const fh::ext::ResultsFile r(in, cases);
  fh::ext::ResultsHeader h{cases.header().cases_id, r.producer(), r.path_name(), r.role(), r.order(), r.meta()};
  if (!as_variant.empty()) {  // the same outputs as path as_variant, a variant of the input's path
    h.path = as_variant;
    h.meta["variant_of"] = r.path_name();
  }
  std::vector<fh::ext::ResultCaseOut> outs;
  for (const auto& rc : r.cases()) {
    fh::ext::ResultCaseOut o{rc.id, rc.status, rc.error, rc.detail, {}};
    if (fail_case && rc.id == case_id) {
      o.status = "failed";
      o.error = "planted: the kernel did not launch";
    } else if (rc.status == "ok")
      for (const auto& d : fh::ext::case_outputs(*cases.find(rc.id)))
        if (!d.optional || r.has(rc.id, d.name)) {
          o.data[d.name] = r.load(rc.id, d.name);
          if (rc.id == case_id && d.name == dataset) mutate(o.data[d.name]);
        }
    outs.push_back(o);
  }
  const std::string out = dir() / name;
  fh::ext::write_results_file(out, h, outs);
  return out;
}

fh::ReportData judge(void (*claim)(const fh::VerifyConfig&, fh::Report&, const fh::Progress&),
                     const std::vector<std::string>& results) {
  fh::VerifyConfig cfg;
  cfg.external_cases = cases_path();
  cfg.external_results = results;
  const fh::RunInputs inputs = fh::read_run_inputs(fh::input_paths_of(cfg));  // as forge-verify does, before the claim
  cfg.inputs = &inputs;
  fh::Report report(fh::Meta::unknown());
  claim(cfg, report, fh::Progress{true});
  return report.snapshot();
}

// Every check named `check` in the claim, as "case: verdict".
std::map<std::string, fh::Verdict> verdicts(const fh::ReportData& r, const std::string& claim, const std::string& check) {
  std::map<std::string, fh::Verdict> out;
  for (const auto& cl : r.claims)
    if (cl.name == claim)
      for (const auto& cs : cl.cases)
        for (const auto& ck : cs.checks)
          if (ck.name == check) out[cs.name] = ck.verdict;
  return out;
}

int count(const std::map<std::string, fh::Verdict>& m, fh::Verdict v) {
  int n = 0;
  for (const auto& [k, x] : m) n += x == v;
  return n;
}

TEST(ext_order_probe, NumpyProducerOrderIsIdentifiedAndAWrongDeclarationFails) {
  const auto r = judge(fh::claim_ext_order_probe, {numpy_results("fused")});
  const auto v = verdicts(r, "ext_order_probe", "g_matches_declared_order");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v.begin()->second, fh::Verdict::pass);
  const fh::CaseData* cs = r.find_case("ext_order_probe", "numpy_fused.probe_64x48_t70");
  ASSERT_NE(cs, nullptr);
  std::string identified;
  for (const auto& [k, val] : cs->attrs)
    if (k == "identified_order") identified = val;
  EXPECT_EQ(identified, "fp32_sequential");
  // Planted: the producer declares the tensor-core chain but sums sequentially in fp32.
  const auto bad = verdicts(judge(fh::claim_ext_order_probe, {numpy_results("fused", "wrong_order")}), "ext_order_probe",
                            "g_matches_declared_order");
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad.begin()->second, fh::Verdict::fail);
}

TEST(ext_prop1, NumpyFusedEqualsItsTwoPhaseAndAOneUlpChangeFails) {
  const auto v = verdicts(judge(fh::claim_ext_prop1, {numpy_results("fused"), numpy_results("two_phase")}), "ext_prop1",
                          "fused_equals_two_phase");
  EXPECT_EQ(v.size(), 5u);
  EXPECT_EQ(count(v, fh::Verdict::pass), 5);
  const auto bad = verdicts(judge(fh::claim_ext_prop1, {numpy_results("fused", "one_ulp_w"), numpy_results("two_phase")}),
                            "ext_prop1", "fused_equals_two_phase");
  EXPECT_EQ(count(bad, fh::Verdict::fail), 1);
  EXPECT_EQ(count(bad, fh::Verdict::pass), 4);
  // A case the two-phase partner failed on is not run for the fused path's row (the partner's
  // failure is its own); one the fused path failed on is a failure.
  const std::string bad_partner = mutated_copy(numpy_results("two_phase"), "two_phase_failed.h5",
                                               "adamw_fp32_fp32_48x40_t37", "", {}, true);
  const auto ran = verdicts(judge(fh::claim_ext_prop1, {numpy_results("fused"), bad_partner}), "ext_prop1", "ran");
  ASSERT_EQ(ran.size(), 1u);
  EXPECT_EQ(ran.begin()->second, fh::Verdict::not_run);
  const std::string bad_fused = mutated_copy(numpy_results("fused"), "fused_failed.h5", "adamw_fp32_fp32_48x40_t37", "",
                                             {}, true);
  const auto ran2 = verdicts(judge(fh::claim_ext_prop1, {bad_fused, numpy_results("two_phase")}), "ext_prop1", "ran");
  ASSERT_EQ(ran2.size(), 1u);
  EXPECT_EQ(ran2.begin()->second, fh::Verdict::fail);
  // No two-phase file: not run, never a pass.
  const auto alone = judge(fh::claim_ext_prop1, {numpy_results("fused")});
  EXPECT_EQ(alone.find_claim("ext_prop1")->verdict, fh::Verdict::not_run);
}

// forge_adamw: the forge set's AdamW and INT8 cases, no probe; the ci and forge sets unchanged.
TEST(ext_variant, TheForgeAdamwSetIsTheForgeSetWithoutItsProbes) {
  std::vector<std::string> forge, adamw;
  int64_t probes = 0;
  for (const auto& c : fh::external_case_specs("forge")) {
    if (c.kind == "order_probe") ++probes;
    else forge.push_back(c.id + "/" + std::to_string(c.steps) + "/" + c.state_dtype);
  }
  for (const auto& c : fh::external_case_specs("forge_adamw")) adamw.push_back(c.id + "/" + std::to_string(c.steps) + "/" + c.state_dtype);
  EXPECT_EQ(probes, 14);
  EXPECT_EQ(adamw, forge);
  EXPECT_EQ(adamw.size(), 13u);
  EXPECT_EQ(fh::external_case_specs("ci").size(), 6u);
  EXPECT_THROW(fh::external_case_specs("forge_probes"), std::invalid_argument);
}

// The release's pooled m/v staging in numpy's terms (numpy_producer.py --plant m_reads_v): every
// step reads v where m belongs. From the zero state the first step equals the base path; from
// step 1 on it differs; the case that starts from a non-zero state differs at step 0.
TEST(ext_variant, AVariantReadingVForMPartsFromItsBaseAtTheSecondStep) {
  const std::string variant = numpy_results("fused", "m_reads_v");
  const fh::ReportData r = judge(fh::claim_ext_variant, {numpy_results("fused"), variant});
  const auto v = verdicts(r, "ext_variant", "variant_equals_base");
  ASSERT_EQ(v.size(), 5u);  // the adamw and INT8 cases of the ci set
  EXPECT_EQ(count(v, fh::Verdict::fail), 5);
  auto first_step = [&](const std::string& case_id) {
    const fh::CaseData* cs = r.find_case("ext_variant", "numpy_fused_m_reads_v_vs_numpy_fused." + case_id);
    EXPECT_NE(cs, nullptr) << case_id;
    if (!cs) return int64_t(-2);
    for (const fh::Dataset& d : cs->datasets)
      if (d.name == "first_differing_step") return d.i64.at(0);
    return int64_t(-3);
  };
  EXPECT_EQ(first_step("adamw_bf16_bf16_48x40_t37"), 1);
  EXPECT_EQ(first_step("adamw_fp32_fp32_48x40_t37"), 1);
  EXPECT_EQ(first_step("adamw_bf16_bf16_late_48x40_t37"), 0);
  // The record says which state the case started from and where the two part.
  const fh::CaseData* late = r.find_case("ext_variant", "numpy_fused_m_reads_v_vs_numpy_fused.adamw_bf16_bf16_late_48x40_t37");
  const fh::CaseData* zero = r.find_case("ext_variant", "numpy_fused_m_reads_v_vs_numpy_fused.adamw_bf16_bf16_48x40_t37");
  ASSERT_TRUE(late && zero);
  auto attr = [](const fh::CaseData* cs, const std::string& key) {
    for (const auto& [k, val] : cs->attrs)
      if (k == key) return val;
    return std::string("absent");
  };
  EXPECT_EQ(attr(late, "state_at_first_step"), "non-zero (step 1000)");
  EXPECT_EQ(attr(zero, "state_at_first_step"), "zero");
  ASSERT_EQ(zero->checks.size(), 1u);
  EXPECT_NE(zero->checks[0].reason.find("parts from numpy_fused at step 1 (steps before it equal)"), std::string::npos)
      << zero->checks[0].reason;
  ASSERT_EQ(late->checks.size(), 1u);
  EXPECT_NE(late->checks[0].reason.find("at step 0"), std::string::npos) << late->checks[0].reason;
  // A case the variant failed on fails "ran"; one its base failed on is not run for the variant.
  const std::string failed_variant = mutated_copy(variant, "variant_failed.h5", "adamw_fp32_fp32_48x40_t37", "", {}, true);
  const auto ran = verdicts(judge(fh::claim_ext_variant, {numpy_results("fused"), failed_variant}), "ext_variant", "ran");
  ASSERT_EQ(ran.size(), 1u);
  EXPECT_EQ(ran.begin()->second, fh::Verdict::fail);
  const std::string failed_base = mutated_copy(numpy_results("fused"), "base_failed.h5", "adamw_fp32_fp32_48x40_t37", "", {}, true);
  const auto ran2 = verdicts(judge(fh::claim_ext_variant, {failed_base, variant}), "ext_variant", "ran");
  ASSERT_EQ(ran2.size(), 1u);
  EXPECT_EQ(ran2.begin()->second, fh::Verdict::not_run);
  // The base against itself as a variant passes: the check can pass, and names its base.
  const fh::ReportData same = judge(fh::claim_ext_variant, {numpy_results("fused"), mutated_copy(numpy_results("fused"),
                                    "np_fused_as_variant.h5", "", "", {}, false, "numpy_fused_self")});
  EXPECT_EQ(count(verdicts(same, "ext_variant", "variant_equals_base"), fh::Verdict::pass), 5);
  // The base missing: not run, never a pass; no variant at all: not run.
  EXPECT_EQ(judge(fh::claim_ext_variant, {variant}).find_claim("ext_variant")->verdict, fh::Verdict::not_run);
  EXPECT_EQ(judge(fh::claim_ext_variant, {numpy_results("fused")}).find_claim("ext_variant")->verdict, fh::Verdict::not_run);
}

TEST(ext_corollary1, TorchArithmeticPassesNumpyArithmeticFailsAndAOneUlpChangeFails) {
  const std::string ref = torch_model_results("reference");
  // The torch-model producer has torch's arithmetic: only the order can differ (here it is the same).
  const auto r = judge(fh::claim_ext_corollary1, {torch_model_results("fused"), ref});
  const auto ok = verdicts(r, "ext_corollary1", "only_order_differs");
  EXPECT_EQ(count(ok, fh::Verdict::pass), 3) << "bf16/bf16, late bf16/bf16, fp32/fp32";
  EXPECT_EQ(count(verdicts(r, "ext_corollary1", "host_torch_model_reproduces_reference"), fh::Verdict::pass), 3);
  // numpy divides by the bias corrections and adds eps outside sqrt(v / bc2): not torch's
  // arithmetic. fp32 storage shows it, and so does bf16 from a non-zero state; at step 1 from zero
  // moments on this small case, bf16 rounding hides every difference (the check says so: pass).
  const auto np = verdicts(judge(fh::claim_ext_corollary1, {numpy_results("fused"), ref}), "ext_corollary1",
                           "only_order_differs");
  std::string listed;
  for (const auto& [k, x] : np) listed += k + "=" + fh::verdict_name(x) + " ";
  EXPECT_EQ(np.at("numpy_fused.adamw_fp32_fp32_48x40_t37"), fh::Verdict::fail) << listed;
  EXPECT_EQ(np.at("numpy_fused.adamw_bf16_bf16_late_48x40_t37"), fh::Verdict::fail) << listed;
  // Planted: one bit of W in the torch-model producer's first case.
  const auto bad = verdicts(judge(fh::claim_ext_corollary1, {torch_model_results("fused", true), ref}), "ext_corollary1",
                            "only_order_differs");
  EXPECT_EQ(count(bad, fh::Verdict::fail), 1);
  EXPECT_EQ(count(bad, fh::Verdict::pass), 2);
}

TEST(ext_int8, NumpyCodesAreWithinHalfAStepAndACorruptedCodeFails) {
  const auto good = judge(fh::claim_ext_int8, {numpy_results("fused")});
  EXPECT_EQ(count(verdicts(good, "ext_int8", "codes_within_half_step"), fh::Verdict::pass), 1);
  EXPECT_EQ(count(verdicts(good, "ext_int8", "scale_is_absmax_over_127"), fh::Verdict::pass), 1);
  // Planted: one m code two steps off, and (separately) a scale doubled.
  const std::string code = mutated_copy(numpy_results("fused"), "int8_code.h5", "int8_32x128_t20", "m_q", [](Tensor& t) {
    t.bytes[100] = uint8_t(int8_t(t.bytes[100]) > 0 ? int8_t(t.bytes[100]) - 2 : int8_t(t.bytes[100]) + 2);
  });
  EXPECT_EQ(count(verdicts(judge(fh::claim_ext_int8, {code}), "ext_int8", "codes_within_half_step"), fh::Verdict::fail), 1);
  // Planted: one m code one step off, up and (separately) down, as an off-by-one or truncating
  // codec makes it: both are more than half a step from the true moment, and one of them a full
  // step or more (a judge that allowed a whole step would pass the other).
  for (int dir : {-1, 1}) {
    const std::string one = mutated_copy(numpy_results("fused"), dir < 0 ? "int8_code_down.h5" : "int8_code_up.h5",
                                         "int8_32x128_t20", "m_q", [dir](Tensor& t) {
                                           size_t i = 100;
                                           while (std::abs(int(int8_t(t.bytes[i]))) > 100) ++i;  // room both ways
                                           t.bytes[i] = uint8_t(int8_t(int(int8_t(t.bytes[i])) + dir));
                                         });
    EXPECT_EQ(count(verdicts(judge(fh::claim_ext_int8, {one}), "ext_int8", "codes_within_half_step"), fh::Verdict::fail), 1)
        << "one m code one step " << (dir < 0 ? "down" : "up");
  }
  // Planted: the same one-step error on a code of a hundred steps or more, where a slack relative to
  // |x| (1e-2 |x| would be over a step there) hides it; the judge's slack is fp32 rounding only.
  for (int dir : {-1, 1}) {
    bool found = false;
    const std::string big = mutated_copy(numpy_results("fused"), dir < 0 ? "int8_big_down.h5" : "int8_big_up.h5",
                                         "int8_32x128_t20", "m_q", [dir, &found](Tensor& t) {
                                           for (size_t i = 0; i < t.bytes.size() && !found; ++i) {
                                             const int q = int8_t(t.bytes[i]);
                                             if (std::abs(q) <= 100 || std::abs(q) >= 127) continue;
                                             t.bytes[i] = uint8_t(int8_t(q + dir));
                                             found = true;
                                           }
                                         });
    ASSERT_TRUE(found) << "no m code between 101 and 126 steps in the numpy file";
    EXPECT_EQ(count(verdicts(judge(fh::claim_ext_int8, {big}), "ext_int8", "codes_within_half_step"), fh::Verdict::fail), 1)
        << "one m code of over 100 steps one step " << (dir < 0 ? "down" : "up");
  }
  const std::string scale = mutated_copy(numpy_results("fused"), "int8_scale.h5", "int8_32x128_t20", "v_scale", [](Tensor& t) {
    uint32_t u;
    std::memcpy(&u, t.bytes.data() + 8, 4);
    u += 0x00800000u;  // x2
    std::memcpy(t.bytes.data() + 8, &u, 4);
  });
  EXPECT_EQ(count(verdicts(judge(fh::claim_ext_int8, {scale}), "ext_int8", "scale_is_absmax_over_127"), fh::Verdict::fail), 1);
  // Planted: one v scale NaN. Its ratios are NaN, which `r > worst` would skip: both checks must fail.
  const std::string nan_scale = mutated_copy(numpy_results("fused"), "int8_nan_scale.h5", "int8_32x128_t20", "v_scale", [](Tensor& t) {
    const uint32_t u = 0x7fc00000u;
    std::memcpy(t.bytes.data() + 8, &u, 4);
  });
  const auto nan_v = judge(fh::claim_ext_int8, {nan_scale});
  EXPECT_EQ(count(verdicts(nan_v, "ext_int8", "scale_is_absmax_over_127"), fh::Verdict::fail), 1);
  EXPECT_EQ(count(verdicts(nan_v, "ext_int8", "codes_within_half_step"), fh::Verdict::fail), 1);
}

TEST(ExternalFiles, BadFilesAreRefusedWithTheirName) {
  const fh::ext::CasesFile cases(cases_path());
  // Truncated.
  const std::string good = numpy_results("fused");
  const std::string trunc = dir() / "trunc.h5";
  fs::copy_file(good, trunc, fs::copy_options::overwrite_existing);
  fs::resize_file(trunc, fs::file_size(good) / 2);
  try {
    fh::ext::ResultsFile r(trunc, cases);
    ADD_FAILURE() << "a truncated file was accepted";
  } catch (const fh::ext::ExternalFileError& e) {
    EXPECT_NE(std::string(e.what()).find("trunc.h5"), std::string::npos) << e.what();
  }
  // Results of another cases file.
  const std::string other = dir() / "other_cases.h5";
  fh::write_external_cases(other, "ci", 1, "other");
  EXPECT_THROW(fh::ext::ResultsFile(good, fh::ext::CasesFile(other)), fh::ext::ExternalFileError);
  // A dataset of the wrong shape.
  const std::string shape = mutated_copy(good, "bad_shape.h5", "adamw_bf16_bf16_48x40_t37", "W", [](Tensor& t) {
    t.shape = {t.shape[0], t.shape[1] * t.shape[2]};
  });
  try {
    fh::ext::ResultsFile r(shape, cases);
    ADD_FAILURE() << "a dataset of the wrong shape was accepted";
  } catch (const fh::ext::ExternalFileError& e) {
    EXPECT_NE(std::string(e.what()).find("/cases/adamw_bf16_bf16_48x40_t37/W"), std::string::npos) << e.what();
  }
  // Not an HDF5 file at all.
  const std::string junk = dir() / "junk.h5";
  std::ofstream(junk) << "not hdf5";
  EXPECT_THROW(fh::ext::ResultsFile(junk, cases), fh::ext::ExternalFileError);
}

// A results file that declares `order` and answers no case with data (so only its root is judged).
std::string results_declaring(const std::string& name, const fh::ext::DeclaredOrder& order) {
  const fh::ext::CasesFile cases(cases_path());
  const fh::ext::ResultsHeader h{cases.header().cases_id, "planted", "planted_path", "fused", order, {}};
  const std::string out = dir() / name;
  fh::ext::write_results_file(out, h, {{cases.cases()[0].id, "unsupported", "planted: declares an order only", "", {}}});
  return out;
}

// Every declared-order integer is checked over its whole range when the file is opened: 2^62
// truncated to int was 0 and a division by it killed forge-verify (SIGFPE); 2^31 and a split_k
// of 2^40 passed and made every ext_* claim throw.
TEST(ExternalFiles, DeclaredOrderIsRangeCheckedWhenOpened) {
  const fh::ext::CasesFile cases(cases_path());
  const std::pair<fh::ext::DeclaredOrder, const char*> bad[] = {
      {{"mma_chain", int64_t(1) << 62, 1, 16}, "order_k_group"},
      {{"mma_chain", int64_t(1) << 31, 1, 16}, "order_k_group"},
      {{"mma_chain", 0, 1, 16}, "order_k_group"},
      {{"mma_chain", 65, 1, 16}, "order_k_group"},
      {{"mma_chain", 16, int64_t(1) << 40, 16}, "order_split_k"},
      {{"mma_chain", 16, -1, 16}, "order_split_k"},
      {{"mma_chain", 16, 2, int64_t(1) << 40}, "order_split_round"},
  };
  int k = 0;
  for (const auto& [order, field] : bad) {
    const std::string name = "order_" + std::to_string(k++) + ".h5";
    const std::string file = results_declaring(name, order);
    try {
      fh::ext::ResultsFile r(file, cases);
      ADD_FAILURE() << order.describe() << " was accepted";
    } catch (const fh::ext::ExternalFileError& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  }
  // The ends of the ranges are taken, and make a valid reduction order.
  const fh::ext::ResultsFile ok(results_declaring("order_ok.h5", {"mma_chain", 64, fh::ext::kMaxDeclaredSplit, 1}), cases);
  EXPECT_NO_THROW(fh::to_reduction_order(ok.order()));
}

// A cases file's hyperparameters are checked when it is opened: NaN, infinite or negative values
// were accepted.
TEST(ExternalFiles, CaseHyperparametersAreCheckedWhenOpened) {
  const std::pair<const char*, void (*)(fh::ext::CaseSpec&)> bad[] = {
      {"lr", [](fh::ext::CaseSpec& c) { c.lr = std::nan(""); }},
      {"beta2", [](fh::ext::CaseSpec& c) { c.beta2 = INFINITY; }},
      {"eps", [](fh::ext::CaseSpec& c) { c.eps = -1; }},
      {"beta1", [](fh::ext::CaseSpec& c) { c.beta1 = 1; }},
  };
  for (const auto& [field, plant] : bad) {
    fh::ext::CaseSpec c = fh::external_case_specs("ci")[1];  // an adamw case
    plant(c);
    const std::string file = dir() / (std::string("cases_bad_") + field + ".h5");
    fh::ext::write_cases_file(file, {"bad", "ci", "test", 1}, {c},
                              [](const fh::ext::CaseSpec& s) { return fh::external_case_inputs(s, 1); });
    try {
      fh::ext::CasesFile f(file);
      ADD_FAILURE() << field << " out of range was accepted";
    } catch (const fh::ext::ExternalFileError& e) {
      EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  }
}

// A results file holds its own data. Each plant below reaches into another file whose data is a
// valid answer (the order probe's G, zeros), so a reader that followed it would accept the file:
// "a fused result can be another file's data, or any readable file". Each is refused when the
// file is opened, naming the file and the object, and nothing is followed.
TEST(ExternalFiles, DataInOtherFilesIsRefusedNotFollowed) {
  const fh::ext::CasesFile cases(cases_path());
  const auto probe_it = std::find_if(cases.cases().begin(), cases.cases().end(),
                                    [](const fh::ext::CaseSpec& c) { return c.kind == "order_probe"; });
  ASSERT_NE(probe_it, cases.cases().end()) << "the cases file has no order probe";
  const fh::ext::CaseSpec& probe = *probe_it;
  const fh::ext::Tensor zeros = Tensor::make(fh::ext::Dtype::fp32, {probe.out, probe.in});
  const std::string good = dir() / "probe_good.h5", raw = dir() / "probe_g.raw";
  fh::ext::write_results_file(good, {cases.header().cases_id, "planted", "planted_path", "fused", {}, {}},
                              {{probe.id, "ok", "", "", {{"G", zeros}}}});
  ASSERT_NO_THROW(fh::ext::ResultsFile(good, cases));
  std::ofstream(raw, std::ios::binary).write(reinterpret_cast<const char*>(zeros.bytes.data()), std::streamsize(zeros.bytes.size()));
  const std::string group = "/cases/" + probe.id, g_path = group + "/G";
  const hsize_t dims[2] = {hsize_t(probe.out), hsize_t(probe.in)};
  // A dataset G of the right type and shape whose creation properties `set` fills.
  const auto dataset_g = [&](hid_t g, const std::function<void(hid_t dcpl, hid_t space)>& set) {
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE), space = H5Screate_simple(2, dims, nullptr);
    set(dcpl, space);
    H5Dclose(H5Dcreate2(g, "G", H5T_STD_U32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT));
    H5Sclose(space);
    H5Pclose(dcpl);
  };
  struct Plant {
    const char* name;
    std::string object, message;
    std::function<void(hid_t g)> plant;  // g: the probe's group, its G removed when the plant replaces it
  };
  const Plant plants[] = {
      {"external_link", g_path, "is an external link to '" + good + ":" + g_path + "'",
       [&](hid_t g) { H5Lcreate_external(good.c_str(), g_path.c_str(), g, "G", H5P_DEFAULT, H5P_DEFAULT); }},
      {"external_storage", g_path, "keeps its data in external files",
       [&](hid_t g) {
         dataset_g(g, [&](hid_t dcpl, hid_t) { H5Pset_external(dcpl, raw.c_str(), 0, hsize_t(zeros.bytes.size())); });
       }},
      {"virtual", g_path, "is a virtual dataset",
       [&](hid_t g) {
         dataset_g(g, [&](hid_t dcpl, hid_t space) { H5Pset_virtual(dcpl, space, good.c_str(), g_path.c_str(), space); });
       }},
      // G is kept; a stray soft link nobody reads (nothing else would notice it).
      {"dangling_soft_link", group + "/note", "is a soft link to '/nowhere', which resolves to no object",
       [&](hid_t g) { H5Lcreate_soft("/nowhere", g, "note", H5P_DEFAULT, H5P_DEFAULT); }},
  };
  for (const Plant& p : plants) {
    const std::string file = dir() / (std::string("probe_") + p.name + ".h5");
    fs::copy_file(good, file, fs::copy_options::overwrite_existing);
    const hid_t f = H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0) << p.name;
    const hid_t g = H5Gopen2(f, group.c_str(), H5P_DEFAULT);
    if (p.object == g_path) H5Ldelete(g, "G", H5P_DEFAULT);
    p.plant(g);
    H5Gclose(g);
    ASSERT_GE(H5Fclose(f), 0) << p.name;
    try {
      fh::ext::ResultsFile r(file, cases);
      ADD_FAILURE() << p.name << ": the file was accepted (its data came from another file)";
    } catch (const fh::ext::ExternalFileError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("'" + file + "'"), std::string::npos) << what;
      EXPECT_NE(what.find(p.object + ": " + p.message), std::string::npos) << what;
    }
  }
}

}  // namespace
