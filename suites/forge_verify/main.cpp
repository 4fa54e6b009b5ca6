// forge-verify: the audit. Runs every claim that this machine can judge for one configuration,
// prints a verdict table per claim, writes the HDF5 report, and exits non-zero on any failure.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "kernels/gpu/device_info.h"
#include "kernels/rules/hyper_fields.h"
#include "suites/forge_verify/git_revision.h"
#include "inputs/run_inputs.h"
#include "reports/summary_export.h"
#include "suites/claims/registry.h"
#include "suites/claims/external_common.h"
#include "suites/forge_verify/claim_scheduler.h"
#include "suites/forge_verify/cli_options.h"
#include "suites/forge_verify/console_table.h"
#include "suites/forge_verify/diff_main.h"
#include "suites/forge_verify/external_cases_main.h"

namespace fh {
namespace {

// Exit codes (--help says them). A claim that throws is its own `error` verdict, and the run
// goes on; it exits 3 like any other internal error.
constexpr int kExitFail = 1, kExitUsage = 2, kExitInternal = 3, kExitNotRunRequired = 4;

// Set once the claims start: from then on any exception is an internal error (exit 3), never
// a usage error, and the verdict table is printed before the report is written.
bool g_run_started = false;

// The verdict tables and the closing lines: suites/forge_verify/console_table.cpp (no line wider
// than kConsoleWidth).
void print_table(const ReportData& data) {
  std::fputs(console_tables(data).c_str(), stdout);
  std::fputs(("\n" + console_closing(data)).c_str(), stdout);
}

std::string describe_config(const VerifyConfig& cfg) {
  std::ostringstream o;
  o << "shape=" << cfg.out << "x" << cfg.in << "x" << cfg.tokens << " steps=" << cfg.steps
    << " seed=" << cfg.seed << " samples=" << cfg.rule_samples << " formats=";
  for (auto f : cfg.formats) o << state_format_name(f) << ",";
  o << " stores=";
  for (auto w : cfg.stores) o << weight_store_name(w) << ",";
  o << " rules=";
  for (const auto& r : cfg.rules) o << rule_name(r.id) << "{" << describe_hyper(r) << "};";
  return o.str();
}

void print_registry() {
  const auto& reg = claim_registry();
  size_t w_id = 5, w_opt = 7;
  for (const ClaimInfo& c : reg) {
    w_id = std::max(w_id, c.id.size());
    w_opt = std::max(w_opt, option_flags(c.options).size());
  }
  std::printf("%-*s  %-3s  %-*s  %s\n", int(w_id), "claim", "GPU", int(w_opt), "options", "paper statement / what it judges");
  for (const ClaimInfo& c : reg) {
    std::printf("%-*s  %-3s  %-*s  %s\n", int(w_id), c.id.c_str(), c.needs_gpu() ? "yes" : "no", int(w_opt),
                option_flags(c.options).c_str(), c.statement.c_str());
    std::printf("%-*s  %-3s  %-*s  %s\n", int(w_id), "", "", int(w_opt), "", c.what.c_str());
  }
}

// ---- interruption ----
// SIGINT/SIGTERM: the handler says which claims were running, removes this run's temporary
// files (the report is built in memory, so before the write there is nothing else on disk)
// and exits 128 + signal. Everything it touches is prepared beforehand: it only reads lock-free
// atomics and calls write, unlink and _exit (async-signal-safe), on whichever thread the
// signal lands.
constexpr size_t kPathMax = 4096;
char g_temp_paths[3][kPathMax] = {};           // report, JSON, JUnit temporary names ("" unused)
std::atomic<const char*> g_running[kMaxJobs];  // per worker: its claim's id (registry storage, lives forever), or null
std::atomic<int> g_phase{0};                   // 0 claims, 1 writing the outputs
static_assert(std::atomic<const char*>::is_always_lock_free);

void put(const char* s) {
  for (size_t n = std::strlen(s); n > 0;) {
    const ssize_t k = ::write(2, s, n);
    if (k <= 0) return;
    s += k;
    n -= size_t(k);
  }
}

extern "C" void on_interrupt(int sig) {
  put(sig == SIGINT ? "\nforge-verify: interrupted by SIGINT " : "\nforge-verify: interrupted by SIGTERM ");
  if (g_phase.load() == 0) {
    int n = 0;
    for (const auto& r : g_running) n += r.load() != nullptr;
    put(n == 0 ? "between claims" : n == 1 ? "during claim " : "during claims ");
    int k = 0;
    for (const auto& r : g_running)
      if (const char* id = r.load()) {
        if (k++ > 0) put(", ");
        put(id);
      }
    put("; no report written\n");
  } else {
    put("while writing the outputs; temporary files removed (a file under its final name is complete)\n");
  }
  for (auto& p : g_temp_paths)
    if (p[0]) ::unlink(p);
  ::_exit(128 + sig);
}

void install_interrupt_handlers(const std::vector<std::string>& outputs) {
  for (size_t i = 0; i < outputs.size() && i < 3; ++i)
    if (!outputs[i].empty()) {
      const std::string t = report_temp_path(outputs[i]);
      if (t.size() >= kPathMax) throw UsageError("output path too long: " + outputs[i]);
      std::memcpy(g_temp_paths[i], t.c_str(), t.size() + 1);
    }
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
}

// ---- progress heartbeat ----
// Long claims are silent between notes: every kBeatSeconds one line per running claim that has
// run that long says the claim, the time it has taken and the case it is on (when its runner
// says, progress_set_case, on the claim's own thread). Claims run on workers (--jobs); each
// worker's slot holds its claim while it runs.
class Heartbeat {
 public:
  Heartbeat(bool quiet, int workers) : slots_(size_t(workers)) {
    if (!quiet) thread_ = std::thread([this] { loop(); });
  }
  ~Heartbeat() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  // Called on the worker's thread as its claim starts and ends.
  void claim_started(int worker, const ClaimInfo& c) {
    std::lock_guard<std::mutex> lock(m_);
    Slot& s = slots_.at(size_t(worker));
    s.claim = c.id;
    s.thread = std::this_thread::get_id();
    s.started = std::chrono::steady_clock::now();
    g_running[worker] = c.id.c_str();
  }
  void claim_ended(int worker) {
    std::lock_guard<std::mutex> lock(m_);
    slots_.at(size_t(worker)).claim.clear();
    g_running[worker] = nullptr;
  }

 private:
  static constexpr int kBeatSeconds = 10;
  struct Slot {
    std::string claim;  // "" when idle
    std::thread::id thread;
    std::chrono::steady_clock::time_point started;
  };
  void loop() {
    std::unique_lock<std::mutex> lock(m_);
    while (!cv_.wait_for(lock, std::chrono::seconds(kBeatSeconds), [this] { return stop_; })) {
      std::string lines;
      for (const Slot& s : slots_) {
        if (s.claim.empty()) continue;
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - s.started).count();
        if (secs < kBeatSeconds) continue;
        const std::string at = progress_case_of(s.thread);
        char head[64];
        std::snprintf(head, sizeof head, ": %.0f s", secs);
        lines += fit_line("        ... " + s.claim + head + (at.empty() ? "" : ", case " + at)) + "\n";
      }
      if (!lines.empty()) std::fputs(lines.c_str(), stderr);  // one write: no other line cuts in
    }
  }
  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<Slot> slots_;
  std::thread thread_;
};

// A planted defect for the isolation test (off unless set): FH_PLANT_THROWING_CLAIM=<claim id>
// makes that claim throw as it starts.
void maybe_plant_throw(const std::string& id) {
  const char* planted = std::getenv("FH_PLANT_THROWING_CLAIM");
  if (planted && id == planted) throw std::runtime_error("planted defect: FH_PLANT_THROWING_CLAIM=" + id);
}

// A planted defect for the exit-status test (off unless set): FH_PLANT_BROKEN_CONTRACT=<claim
// id> adds to that claim, after it ran, one bitwise contract with one differing element.
void maybe_plant_broken_contract(const std::string& id, Report& part) {
  const char* planted = std::getenv("FH_PLANT_BROKEN_CONTRACT");
  if (!planted || id != planted) return;
  const std::string why = "planted defect: FH_PLANT_BROKEN_CONTRACT=" + id;
  part.add_case(id, "planted broken contract")
      .add_check(judge("planted_bitwise", "differing", 1, 0, PassIf::at_most, why).bitwise(1, 1, "planted"));
}

// The machine as the claims' needs are judged against it. Test hooks (off unless set), so that a
// test on any machine can show a claim the machine cannot run and one it could run and did not:
// FH_VISIBLE_GPUS_FOR_TEST=N judges needs as if N sm_90 GPUs were visible (the claims still see
// the real device), and FH_NEEDS_GPUS_FOR_TEST=<claim id>:<n> declares that claim to need n GPUs.
struct Machine {
  MachineCaps caps;
  std::string hooked_claim;  // FH_NEEDS_GPUS_FOR_TEST's claim ("" when unset) and its GPUs
  int hooked_gpus = 0;

  ClaimNeeds needs_of(const ClaimInfo& c) const {
    ClaimNeeds needs = c.needs;
    if (c.id == hooked_claim) needs.gpus = hooked_gpus;
    return needs;
  }
};

int test_hook_count(const char* name, const std::string& value) {
  if (value.empty() || value.size() > 3 || value.find_first_not_of("0123456789") != std::string::npos)
    throw UsageError(std::string(name) + ": not a count: '" + value + "'");
  return std::stoi(value);
}

// Throws UsageError for a bad hook value, before any claim runs.
Machine machine_of(const DeviceInfo& dev) {
  Machine m{.caps = {.gpus = dev.visible, .sm = dev.sm}};
  if (const char* n = std::getenv("FH_VISIBLE_GPUS_FOR_TEST")) {
    m.caps.gpus = test_hook_count("FH_VISIBLE_GPUS_FOR_TEST", n);
    m.caps.sm = m.caps.gpus ? kNeedsSm90Gpu.sm : 0;
  }
  if (const char* hook = std::getenv("FH_NEEDS_GPUS_FOR_TEST")) {
    const std::string h = hook;
    const size_t colon = h.rfind(':');
    if (colon == std::string::npos || !find_claim(h.substr(0, colon)))
      throw UsageError("FH_NEEDS_GPUS_FOR_TEST: want <claim id>:<GPUs>, got '" + h + "'");
    m.hooked_claim = h.substr(0, colon);
    m.hooked_gpus = test_hook_count("FH_NEEDS_GPUS_FOR_TEST", h.substr(colon + 1));
  }
  return m;
}

// Why claim `c` does not run here, as its not-run reason; "" when it runs. A machine that lacks
// what the claim needs makes it not applicable (no failure, not even under --require-gpu); one
// that has it but whose GPU does not work says why ("no GPU: ...").
std::string cannot_run(const ClaimInfo& c, const Machine& machine, const VerifyConfig& cfg) {
  const ClaimNeeds needs = machine.needs_of(c);
  if (const std::string unmet = unmet_need(needs, machine.caps); !unmet.empty())
    return "not applicable: " + unmet +
           (machine.caps.gpus == 0 && !cfg.gpu_reason.empty() ? "; " + cfg.gpu_reason : "");
  if (needs.gpus > 0 && !cfg.gpu_available) return "no GPU: " + cfg.gpu_reason;
  return "";
}

// One claim on a worker thread: its start line, its run into a Report of its own (declared like
// the run's), then its finish line with its verdict, time and the notes it made, in one write.
// Isolation: a claim that throws is that claim's error verdict; the others still run.
std::unique_ptr<Report> run_claim(const ClaimInfo& c, int index, int count, const VerifyConfig& cfg, const Meta& meta,
                                  const Machine& machine, Heartbeat& heartbeat, int worker) {
  auto part = std::make_unique<Report>(meta);
  for (const ClaimInfo& d : claim_registry()) part->declare_claim(d.id, d.datasets, d.findings);
  std::mutex notes_mutex;
  std::string notes;
  Progress progress{cfg.quiet, index, count};
  progress.note_sink = [&](const std::string& text) {
    std::lock_guard<std::mutex> lock(notes_mutex);
    notes += "        " + text + "\n";
  };
  const std::string tag = "[" + std::to_string(index) + "/" + std::to_string(count) + "] " + c.id;
  // One line: what the claim judges, cut to the console's width (--list-claims has it whole).
  const size_t lead = tag.size() + 2;
  progress.claim(c.id, fit_line(c.what, kConsoleWidth > lead + 20 ? kConsoleWidth - lead : 20));
  heartbeat.claim_started(worker, c);
  progress_set_case("");
  const auto t0 = std::chrono::steady_clock::now();
  std::string error;
  if (const std::string why = cannot_run(c, machine, cfg); !why.empty()) {
    part->add_case(c.id, "all").add_check(Check::not_run(c.id, why));
  } else {
    try {
      maybe_plant_throw(c.id);
      c.run(cfg, *part, progress);
      maybe_plant_broken_contract(c.id, *part);
    } catch (const std::exception& e) {
      error = e.what();
    } catch (...) {
      error = "unknown exception";
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  progress_set_case("");
  heartbeat.claim_ended(worker);
  std::string said;
  if (!error.empty()) {
    said = "forge-verify: internal error: claim " + c.id + " threw: " + error + " (recorded as its error verdict; going on)\n";
    part->add_case(c.id, "claim threw").add_check(Check::errored(c.id, error));
  }
  if (!cfg.quiet) {
    char took[64];
    std::snprintf(took, sizeof took, " (%.1f s)", secs);
    std::lock_guard<std::mutex> lock(notes_mutex);
    said = fit_line(tag + " finished: " + verdict_name(part->verdict()) + took) + "\n" + notes + said;
  }
  if (!said.empty()) std::fputs(said.c_str(), stderr);  // one write: another claim's lines never cut in
  return part;
}

int run(int argc, char** argv) {
  RunOptions opts;
  VerifyConfig cfg = parse_args(argc, argv, opts);
  switch (opts.list_mode) {
    case ListMode::text: print_registry(); return 0;
    case ListMode::markdown: std::fputs(registry_markdown().c_str(), stdout); return 0;
    case ListMode::json: std::fputs(registry_json().c_str(), stdout); return 0;
    case ListMode::none: break;
  }
  // Everything about the output paths, before any work: a run that cannot write its report
  // fails here, not after it spent its time.
  const WriteOptions write_options{.replace_existing = opts.force};
  const std::vector<std::string> outputs = {cfg.report_path, opts.json_path, opts.junit_path};
  for (const std::string& out : outputs) {
    if (out.empty()) continue;
    try {
      check_output_path("forge-verify", out, write_options);
    } catch (const ReportPathError& e) {
      throw UsageError(e.what());
    }
  }
  // Every input is parsed and validated in full now, once: a bad one is bad input, refused
  // before the run. The claims judge these values and never open the files.
  RunInputs inputs;
  try {
    RunInputPaths paths = input_paths_of(cfg);
    paths.bench_json = opts.bench_json;
    inputs = read_run_inputs(paths);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  cfg.inputs = &inputs;
  const ExternalRun* external = inputs.external.cases ? &inputs.external : nullptr;
  install_interrupt_handlers(outputs);
  const DeviceInfo dev = query_device_info();
  cfg.gpu_available = dev.available;
  cfg.gpu_reason = dev.available ? "" : dev.reason;
  const Machine machine = machine_of(dev);

  Meta meta = Meta::unknown();
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  meta.set("git_revision", kGitRevision).set("host", host).set("seed", std::to_string(cfg.seed))
      .set("configuration", describe_config(cfg)).set("gpu_name", dev.available ? dev.name : "none")
      .set("gpu_driver", dev.driver).set("cuda_runtime", dev.runtime).set("cublas", dev.cublas)
      .set("gpu_compute_capability", dev.compute_capability)
      .set("gpu_sm_count", std::to_string(dev.sm_count))
      .set("require_gpu", opts.require_gpu ? "yes" : "no")
      .set("tool", "forge-verify").set("tool_version", std::string("forge-verify ") + kGitRevision);
  std::vector<const ClaimInfo*> selected;
  for (const ClaimInfo& c : claim_registry())
    if (cfg.claims.empty() || std::find(cfg.claims.begin(), cfg.claims.end(), c.id) != cfg.claims.end())
      selected.push_back(&c);
  // Options given that a selected claim does not honour: said, and kept in /meta.
  std::string not_honoured;
  for (const ClaimInfo* c : selected)
    if (const uint32_t ignored = opts.given & ~c->options) {
      not_honoured += (not_honoured.empty() ? "" : "; ") + c->id + ": " + option_flags(ignored);
      std::fprintf(stderr, "forge-verify: note: %s does not honour %s (it runs its own fixed problem there)\n",
                   c->id.c_str(), option_flags(ignored).c_str());
    }
  meta.set("options_not_honoured", not_honoured.empty() ? "none" : not_honoured);
  // Workers for the claims (--jobs, capped at the claims' count): provenance only, the report's
  // content is the same for every number.
  const int count = int(selected.size());
  const int workers = std::max(1, std::min(opts.jobs > 0 ? opts.jobs : default_job_count(), count));
  meta.set("jobs", std::to_string(workers));
  // What was judged: each external file's provenance, under external.<path>.<key>.
  if (external) {
    meta.set("external.cases", cfg.external_cases + " (" + external->cases->header().cases_id + ")");
    for (const auto& r : external->results) {
      const std::string k = "external." + r->path_name() + ".";
      meta.set(k + "file", r->path()).set(k + "producer", r->producer()).set(k + "role", r->role())
          .set(k + "order_model", r->order().describe());
      for (const auto& [key, value] : r->meta()) meta.set(k + key, value);
    }
  }
  Report report(meta);
  for (const ClaimInfo& c : claim_registry()) report.declare_claim(c.id, c.datasets, c.findings);

  // The claims, side by side on --jobs workers (the rule and the thread-safety audit:
  // claim_scheduler.h). Each claim fills a Report of its own; they are absorbed here in registry
  // order after the last one ended, so the report does not depend on the number of workers.
  std::vector<JobKind> kinds;
  for (const ClaimInfo* c : selected)
    kinds.push_back({.gpu_lane = c->needs_gpu() && cfg.gpu_available, .exclusive = c->exclusive});
  std::vector<std::unique_ptr<Report>> parts(selected.size());
  const auto t0 = std::chrono::steady_clock::now();
  // The run's one seed, said once before any claim draws from it: every claim's random streams
  // derive from it (kernels/common/seed_stream.h), and /meta keeps it.
  if (!cfg.quiet) std::fprintf(stderr, "seed: 0x%016llx (--seed N to change)\n", (unsigned long long)cfg.seed);
  g_run_started = true;
  {
    Heartbeat heartbeat(cfg.quiet, workers);
    run_claim_jobs(kinds, workers, [&](size_t i, int worker) {
      parts[i] = run_claim(*selected[i], int(i) + 1, count, cfg, meta, machine, heartbeat, worker);
    });
  }
  for (auto& part : parts) report.absorb(std::move(*part));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (BenchmarkData& b : inputs.benchmarks) report.add_benchmark(std::move(b));
  const ReportData data = report.snapshot();
  print_table(data);

  // --require-gpu asserts that a GPU is here and that every GPU claim the machine can run ran: a
  // GPU claim that did not run fails the run (exit 4) unless it is not applicable here (it needs
  // more than the machine has: 2 GPUs on a one-GPU runner). With no GPU visible nothing excuses
  // it: the flag's own assertion failed, whichever claims were selected.
  std::vector<std::string> gpu_not_run;
  for (const ClaimInfo* c : selected)
    if (const ClaimData* cd = data.find_claim(c->id);
        c->needs_gpu() && cd && cd->verdict == Verdict::not_run &&
        (machine.caps.gpus == 0 || unmet_need(machine.needs_of(*c), machine.caps).empty()))
      gpu_not_run.push_back(c->id);
  const bool require_failed = opts.require_gpu && (machine.caps.gpus == 0 || !gpu_not_run.empty());
  int code = 0;
  if (data.counts.n_fail > 0) code = kExitFail;  // contracts only: a refuted finding never fails the run
  else if (data.counts.n_error > 0) code = kExitInternal;
  else if (require_failed) code = kExitNotRunRequired;
  if (require_failed) {
    std::string names;
    for (const auto& n : gpu_not_run) names += (names.empty() ? "" : ", ") + n;
    const std::string n = std::to_string(gpu_not_run.size());
    const std::string here = machine.caps.gpus > 0 && cfg.gpu_available ? "GPU present"
                             : "no GPU: " + (cfg.gpu_reason.empty() ? std::string("none visible") : cfg.gpu_reason);
    const std::string what = gpu_not_run.empty() ? "no GPU visible" : n + " GPU claim(s) not run";
    const std::string listed = names.empty() ? "" : ": " + names;
    std::fputs(wrap_paragraph("--require-gpu: " + what + listed, kConsoleWidth, "  ").c_str(), stdout);
    const std::string said = "forge-verify: --require-gpu: " + what + " (" + here + ")" + listed;
    std::fputs(wrap_paragraph(said, kConsoleWidth, "  ").c_str(), stderr);
  }
  std::fflush(stdout);  // the table is out before the report is written, whatever happens there

  g_phase = 1;
  report.write(cfg.report_path, write_options);
  std::printf("report: %s (%.1f s)\n", cfg.report_path.c_str(), secs);
  if (!opts.json_path.empty()) {
    const RunSummary run{.exit_code = code, .require_gpu = opts.require_gpu, .gpu_claims_not_run = gpu_not_run,
                         .report_path = cfg.report_path, .seconds = secs};
    write_text_file(opts.json_path, summary_json(data, run), write_options);
    std::printf("json: %s\n", opts.json_path.c_str());
  }
  if (!opts.junit_path.empty()) {
    write_text_file(opts.junit_path, junit_xml(data), write_options);
    std::printf("junit: %s\n", opts.junit_path.c_str());
  }
  return code;
}

}  // namespace

}  // namespace fh

// Exceptions to exit codes: bad usage or input before the run is 2; anything else (out of
// memory, a failed report write, any exception once the claims started) is 3, an internal
// error, never 1, which only a failed check gives.
int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "diff") return fh::run_diff(argc - 1, argv + 1);
  if (argc > 1 && std::string(argv[1]) == "external-cases") return fh::run_external_cases(argc - 1, argv + 1, fh::kGitRevision);
  try {
    return fh::run(argc, argv);
  } catch (const fh::UsageError& e) {
    std::fprintf(stderr, "forge-verify: %s\n", e.what());
    return fh::kExitUsage;
  } catch (const std::invalid_argument& e) {
    if (!fh::g_run_started) {
      std::fprintf(stderr, "forge-verify: invalid input: %s\n", e.what());
      return fh::kExitUsage;
    }
    std::fprintf(stderr, "forge-verify: internal error: %s\n", e.what());
    return fh::kExitInternal;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "forge-verify: internal error: %s\n", e.what());
    return fh::kExitInternal;
  } catch (...) {
    std::fprintf(stderr, "forge-verify: internal error: unknown exception\n");
    return fh::kExitInternal;
  }
}
