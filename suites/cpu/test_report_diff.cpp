// forge-verify diff and the report's /benchmarks group: reports built in
// memory and written to a scratch directory, diffed against themselves and doctored copies;
// the Mann-Whitney U test against hand-computed values; the Google Benchmark JSON import.
// run_diff is called in process (diff_main.cpp is compiled into this suite); the real command
// line is scripts/test_forge_verify_diff.sh (CTest forge_verify_diff_cli).
#include <gtest/gtest.h>
#include <hdf5.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "reports/bench_import.h"
#include "reports/report.h"
#include "reports/report_diff.h"
#include "suites/forge_verify/diff_main.h"

namespace fh {
namespace {

namespace fs = std::filesystem;

struct Scratch {
  fs::path dir;
  Scratch() {
    std::string t = (fs::temp_directory_path() / "fh_report_diff_XXXXXX").string();
    dir = ::mkdtemp(t.data());
  }
  ~Scratch() { fs::remove_all(dir); }
  std::string operator/(const std::string& name) const { return (dir / name).string(); }
};

std::vector<double> scaled(std::vector<double> v, double f) {
  for (double& x : v) x *= f;
  return v;
}
const std::vector<double> kReps = {100000, 101000, 99000, 102000, 98000};  // ns, 5 repetitions

// The report the tests start from: two claims, a bitwise check, a bounded check with bitwise
// evidence (the kind grouping or split-K gives), an "at least" check, datasets, two benchmarks.
// `doctor` makes the changed copy: one verdict flipped, one count off zero, one benchmark 20% slower.
Report make_report(bool doctor) {
  Meta meta = Meta::unknown();
  meta.set("git_revision", "abc1234").set("gpu_name", doctor ? "NVIDIA H200 NVL" : "NVIDIA H200");
  Report r(meta);
  auto& c1 = r.add_case("alpha", "c1");
  c1.set_attr("rule", "adamw");
  c1.add_check(Check::passed("exact", "differing", 0, 0).bitwise(0, 0, ""));
  c1.add_check(doctor ? Check::failed("bounded", "max_rel_err", 2e-6, 1e-6, "over its bound")
                      : Check::passed("bounded", "max_rel_err", 1e-7, 1e-6));
  c1.add_check(Check::passed("power", "power", 0.95, 0.8).passes_if(PassIf::at_least));
  c1.add_f64("curve", {1.0, 2.0, 3.0}, "loss per step");
  auto& c2 = r.add_case("alpha", "c2");
  c2.add_check(doctor ? Check::passed("grouped", "max_rel_err", 1e-7, 1e-6).bitwise(4, 1, "element=(0,3)")
                      : Check::passed("grouped", "max_rel_err", 1e-7, 1e-6).bitwise(0, 0, ""));
  r.add_case("beta", "only").add_check(Check::passed("x", "err", 0.1, 1));
  r.add_benchmark({"bench_fused/out4096/manual_time", doctor ? scaled(kReps, 1.2) : kReps});
  r.add_benchmark({"bench_cublas/out4096/manual_time", kReps});
  return r;
}

// run_diff with its output captured.
struct DiffRun {
  int rc;
  std::string out, err;
};
DiffRun diff(std::vector<std::string> args) {
  args.insert(args.begin(), "diff");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  const int rc = run_diff(int(argv.size()), argv.data());
  DiffRun r{rc, testing::internal::GetCapturedStdout(), testing::internal::GetCapturedStderr()};
  return r;
}

const Change* find(const DiffResult& d, const std::string& kind, const std::string& path) {
  for (const auto& c : d.changes)
    if (c.kind == kind && c.path == path) return &c;
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// /benchmarks in the report
// ---------------------------------------------------------------------------------------------

TEST(ReportBenchmarks, RoundTripAndSchema) {
  Scratch s;
  Report r = make_report(false);
  r.write(s / "r.h5");
  EXPECT_TRUE(validate_report_schema(s / "r.h5").empty());
  const ReportData back = read_report(s / "r.h5");
  ASSERT_EQ(back.benchmarks.size(), 2u);
  EXPECT_EQ(back.benchmarks, r.snapshot().benchmarks);
  EXPECT_EQ(back.benchmarks[0].name, "bench_fused/out4096/manual_time");
  EXPECT_EQ(back.benchmarks[0].median_ns, 100000);
  EXPECT_EQ(back.benchmarks[0].unit, "ns");
}

TEST(ReportBenchmarks, ReportWithoutBenchmarksStaysValid) {
  Scratch s;
  Report r(Meta::unknown());
  r.add_case("c", "k").add_check(Check::passed("x", "err", 0, 1));
  r.write(s / "r.h5");
  EXPECT_TRUE(validate_report_schema(s / "r.h5").empty());
  EXPECT_TRUE(read_report(s / "r.h5").benchmarks.empty());
}

TEST(ReportBenchmarks, BuilderRefusesBadEntries) {
  Report r(Meta::unknown());
  EXPECT_THROW(r.add_benchmark({"", {1}}), std::invalid_argument);
  EXPECT_THROW(r.add_benchmark({"b", {1, NAN}}), std::invalid_argument);
  EXPECT_THROW(r.add_benchmark({"b", {1, 2, 3}, 1.0}), std::invalid_argument);  // median is 2
  EXPECT_THROW(r.add_benchmark({"b", {}, NAN}), std::invalid_argument);
  EXPECT_THROW(r.add_benchmark({"b", {1}, 1, "us"}), std::invalid_argument);
  r.add_benchmark({"b", {}, 5});  // aggregates-only JSON: a median and no repetitions
  EXPECT_THROW(r.add_benchmark({"b", {5}}), std::invalid_argument);  // duplicate
  EXPECT_THROW(r.add_case("benchmarks", "x"), std::invalid_argument);  // reserved claim name
  EXPECT_EQ(benchmark_key("a/b%c"), "a%2Fb%25c");
  EXPECT_EQ(median_of({4, 1, 3, 2}), 2.5);
}

// ---------------------------------------------------------------------------------------------
// Google Benchmark JSON
// ---------------------------------------------------------------------------------------------

// Google Benchmark's shape: five repetitions in us, then the aggregates, which are ignored
// except the median of a benchmark that has no repetitions.
const char* kBenchJson = R"({
  "context": {"date": "2026-12-03T16:48:55+00:00", "library_build_type": "release"},
  "benchmarks": [
    {"name": "f/manual_time", "run_name": "f/manual_time", "run_type": "iteration", "repetitions": 5,
     "repetition_index": 0, "real_time": 100.0, "cpu_time": 1.0, "time_unit": "us"},
    {"name": "f/manual_time", "run_name": "f/manual_time", "run_type": "iteration", "repetitions": 5,
     "repetition_index": 1, "real_time": 103.0, "cpu_time": 1.0, "time_unit": "us"},
    {"name": "f/manual_time", "run_name": "f/manual_time", "run_type": "iteration", "repetitions": 5,
     "repetition_index": 2, "real_time": 101.0, "cpu_time": 1.0, "time_unit": "us"},
    {"name": "f/manual_time", "run_name": "f/manual_time", "run_type": "iteration", "repetitions": 5,
     "repetition_index": 3, "real_time": 99.0, "cpu_time": 1.0, "time_unit": "us"},
    {"name": "f/manual_time", "run_name": "f/manual_time", "run_type": "iteration", "repetitions": 5,
     "repetition_index": 4, "real_time": 102.0, "cpu_time": 1.0, "time_unit": "us"},
    {"name": "f/manual_time_mean", "run_name": "f/manual_time", "run_type": "aggregate",
     "aggregate_name": "mean", "real_time": 101.0, "cpu_time": 1.0, "time_unit": "us"},
    {"name": "f/manual_time_median", "run_name": "f/manual_time", "run_type": "aggregate",
     "aggregate_name": "median", "real_time": 101.0, "cpu_time": 1.0, "time_unit": "us"},
    {"name": "g/manual_time_median", "run_name": "g/manual_time", "run_type": "aggregate",
     "aggregate_name": "median", "real_time": 2.5, "cpu_time": 1.0, "time_unit": "ms"},
    {"name": "g/manual_time_stddev", "run_name": "g/manual_time", "run_type": "aggregate",
     "aggregate_name": "stddev", "real_time": 0.1, "cpu_time": 1.0, "time_unit": "ms"}
  ]
})";

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST(BenchImport, RepetitionsInNsAndAggregatesOnlyMedian) {
  Scratch s;
  write_text(s / "b.json", kBenchJson);
  const auto b = read_benchmark_json(s / "b.json");
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].name, "f/manual_time");
  EXPECT_EQ(b[0].repetitions_ns, (std::vector<double>{100e3, 103e3, 101e3, 99e3, 102e3}));
  EXPECT_EQ(b[0].median_ns, 101e3);
  EXPECT_EQ(b[1].name, "g/manual_time");
  EXPECT_TRUE(b[1].repetitions_ns.empty());
  EXPECT_EQ(b[1].median_ns, 2.5e6);

  Report r(Meta::unknown());
  attach_benchmarks(r, s / "b.json");
  r.write(s / "r.h5");
  EXPECT_TRUE(validate_report_schema(s / "r.h5").empty());
  EXPECT_EQ(read_report(s / "r.h5").benchmarks, b);
}

TEST(BenchImport, BadFilesNameTheFile) {
  Scratch s;
  const std::string full = kBenchJson;
  write_text(s / "trunc.json", full.substr(0, full.size() / 2));
  write_text(s / "text.json", "not json at all");
  write_text(s / "other.json", R"({"context": {}})");
  write_text(s / "no_time.json", R"({"benchmarks": [{"name": "x", "time_unit": "ns"}]})");
  write_text(s / "bad_unit.json", R"({"benchmarks": [{"name": "x", "real_time": 1, "time_unit": "min"}]})");
  for (const char* f : {"trunc.json", "text.json", "other.json", "no_time.json", "bad_unit.json", "missing.json"}) {
    try {
      read_benchmark_json(s / f);
      ADD_FAILURE() << f << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(s / f), std::string::npos) << e.what();
    }
  }
  Report r(Meta::unknown());
  EXPECT_THROW(attach_benchmarks(r, s / "trunc.json"), std::invalid_argument);
}

// What the fuzzers found at this door (suites/fuzz/regressions/bench_json): a
// run the report would refuse after every claim ran (a NUL in a name or an error message), a name
// long enough to overflow the claims' std::regex, and nesting deep enough to overflow any
// recursive walk. Each is refused here, naming the file and the field. A name made only of dots
// is fine: its /benchmarks member is percent-encoded.
TEST(BenchImport, WhatTheReportCannotTakeIsRefusedAtTheDoor) {
  Scratch s;
  const auto run = [](const std::string& fields) {
    return R"({"benchmarks": [{)" + fields + R"(, "real_time": 1.5, "time_unit": "us"}]})";
  };
  const std::pair<const char*, std::string> bad[] = {
      {"nul.json", run(R"("name": "a\u0000b")")},
      {"long.json", run(R"("name": "forge/)" + std::string(2000, 'a') + R"(/1x2x3")")},
      {"run_nul.json", run(R"("name": "a", "run_name": "a\u0000")")},
      {"error_nul.json", run(R"("name": "a", "error_occurred": true, "error_message": "x\u0000y")")},
      {"deep.json", R"({"benchmarks": [{"name": "a", "real_time": 1, "x": )" + std::string(100, '[') +
                        std::string(100, ']') + "}]}"},
  };
  const std::map<std::string, std::string> field = {{"nul.json", "\"name\" 'a\\x00b'"},
                                                    {"long.json", "2012 characters long, over the limit of 1024"},
                                                    {"run_nul.json", "\"run_name\""},
                                                    {"error_nul.json", "\"error_message\": text contains a NUL"},
                                                    {"deep.json", "nested more than 64 deep"}};
  for (const auto& [f, text] : bad) {
    write_text(s / f, text);
    try {
      read_benchmark_json(s / f);
      ADD_FAILURE() << f << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(s / f), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(field.at(f)), std::string::npos) << e.what();
    }
  }
  write_text(s / "dots.json", run(R"("name": "..")"));
  const auto b = read_benchmark_json(s / "dots.json");
  Report r(Meta::unknown());
  ASSERT_EQ(b.size(), 1u);
  EXPECT_NO_THROW(r.add_benchmark(b[0]));
}

// ---------------------------------------------------------------------------------------------
// Mann-Whitney U: hand-computed values (scipy.stats.mannwhitneyu(..., method="asymptotic")
// gives the same p-values)
// ---------------------------------------------------------------------------------------------

TEST(MannWhitney, HandComputedValues) {
  // scipy's documented example. Pooled ranks 11:1 12:2 16:3 17:4 19:5 20:6 22:7 24:8 29:9, so
  // R(males) = 5+7+3+9+8 = 32, U = 32 - 5*6/2 = 17; mu = 10, var = 5*4*10/12, no ties;
  // z = (7 - 0.5)/sqrt(16.667) = 1.5922, p = erfc(z/sqrt 2) = 0.11134688653314041.
  auto r = mann_whitney_u({19, 22, 16, 29, 24}, {20, 11, 17, 12});
  EXPECT_EQ(r.u, 17);
  EXPECT_NEAR(r.p_value, 0.11134688653314041, 1e-12);
  // Ties: pooled 1 | 2 2 2 | 3 3 3 | 4 get ranks 1 | 3 3 3 | 6 6 6 | 8; R(a) = 1+3+3+6 = 13, U = 3;
  // mu = 8; tie term 2*(27-3) = 48, var = 16/12 * (9 - 48/56) = 10.857; z = 4.5/3.2950 = 1.3657;
  // p = 0.1720337089218229.
  r = mann_whitney_u({1, 2, 2, 3}, {2, 3, 3, 4});
  EXPECT_EQ(r.u, 3);
  EXPECT_NEAR(r.p_value, 0.1720337089218229, 1e-12);
  // Fully separated 5 vs 5: U = 0, mu = 12.5, var = 25*11/12, z = 12/4.7871 = 2.5067, p = 0.012186:
  // the smallest p five repetitions a side can give, below alpha 0.05.
  r = mann_whitney_u({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10});
  EXPECT_EQ(r.u, 0);
  EXPECT_NEAR(r.p_value, 0.012185780355344813, 1e-12);
  // Symmetric in its p-value, and all-equal samples are no evidence.
  EXPECT_NEAR(mann_whitney_u({6, 7, 8, 9, 10}, {1, 2, 3, 4, 5}).p_value, 0.012185780355344813, 1e-12);
  EXPECT_EQ(mann_whitney_u({3, 3, 3}, {3, 3, 3}).p_value, 1.0);
}

TEST(MannWhitney, BenchmarkVerdict) {
  const DiffOptions o;
  const BenchmarkData base{"b", kReps};
  // 20% slower, separated: significant and over the ratio.
  auto v = benchmark_verdict(base, {"b", scaled(kReps, 1.2)}, o);
  EXPECT_TRUE(v.tested && v.slower);
  EXPECT_NEAR(v.ratio, 1.2, 1e-12);
  // 3% slower, separated: significant but under the minimum ratio.
  v = benchmark_verdict(base, {"b", scaled(kReps, 1.03)}, o);
  EXPECT_TRUE(v.tested && !v.slower);
  // Median 20% slower but the samples overlap: not significant (U = 10, p = 0.68).
  v = benchmark_verdict(base, {"b", {95000, 120000, 150000, 80000, 121000}}, o);
  EXPECT_TRUE(v.tested);
  EXPECT_FALSE(v.slower) << v.note;
  // Two repetitions: the ratio alone decides, and the note says so.
  v = benchmark_verdict({"b", {100, 101}}, {"b", {110, 112}}, o);
  EXPECT_FALSE(v.tested);
  EXPECT_TRUE(v.slower);
  EXPECT_NE(v.note.find("ratio alone"), std::string::npos) << v.note;
  // Aggregates only (no repetitions): the ratio of the medians.
  v = benchmark_verdict({"b", {}, 100}, {"b", {}, 104}, o);
  EXPECT_FALSE(v.slower);
  // Faster is an improvement, never a regression.
  v = benchmark_verdict(base, {"b", scaled(kReps, 0.8)}, o);
  EXPECT_TRUE(v.faster && !v.slower);
}

// ---------------------------------------------------------------------------------------------
// diff_reports: the rules, on ReportData
// ---------------------------------------------------------------------------------------------

TEST(ReportDiff, SelfIsEmpty) {
  const ReportData r = make_report(false).snapshot();
  EXPECT_TRUE(diff_reports(r, r).changes.empty());
}

TEST(ReportDiff, DoctoredCopyNamesEachRegression) {
  const DiffResult d = diff_reports(make_report(false).snapshot(), make_report(true).snapshot());
  const Change* verdict = find(d, "verdict", "alpha/c1/bounded");
  const Change* count = find(d, "bitwise_count", "alpha/c2/grouped");
  const Change* bench = find(d, "benchmark", "benchmarks/bench_fused/out4096/manual_time");
  const Change* gpu = find(d, "meta", "meta/gpu_name");
  ASSERT_TRUE(verdict && count && bench && gpu);
  EXPECT_TRUE(verdict->regression);
  EXPECT_EQ(verdict->base_value, "pass");
  EXPECT_EQ(verdict->new_value, "fail");
  EXPECT_TRUE(count->regression);
  EXPECT_EQ(count->base_value, "0");
  EXPECT_EQ(count->new_value, "4");
  EXPECT_TRUE(bench->regression);
  EXPECT_FALSE(gpu->regression);  // provenance is information
  EXPECT_EQ(d.n_regressions(), 3u);
  EXPECT_EQ(find(d, "benchmark", "benchmarks/bench_cublas/out4096/manual_time"), nullptr);
}

// The smallest move off zero is a regression too: one differing element where the base had none
// (mutation catalog: diff_off_zero_by_one_ignored); a count that moves between non-zero values,
// or back to zero, is news, not a regression.
TEST(ReportDiff, BitwiseCountOffZeroByOneIsARegression) {
  auto report = [](int64_t differing) {
    Report r(Meta::unknown());
    r.add_case("alpha", "c").add_check(Check::passed("grouped", "max_rel_err", 1e-7, 1e-6)
                                           .bitwise(differing, differing ? 1 : 0, differing ? "element=(0,0)" : ""));
    return r.snapshot();
  };
  const DiffResult one = diff_reports(report(0), report(1));
  const Change* c = find(one, "bitwise_count", "alpha/c/grouped");
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->regression);
  EXPECT_EQ(c->new_value, "1");
  EXPECT_EQ(one.n_regressions(), 1u);
  for (auto [b, n] : {std::pair<int64_t, int64_t>{3, 1}, {1, 0}}) {
    const Change* moved = find(diff_reports(report(b), report(n)), "bitwise_count", "alpha/c/grouped");
    ASSERT_TRUE(moved) << b << " -> " << n;
    EXPECT_FALSE(moved->regression) << b << " -> " << n;
  }
}

// A check as a schema-1 report gives it back: pass_if absent, so "<=".
Check v1_check(const char* name, double metric, double bound) {
  Check c = Check::passed(name, "m", metric, bound);
  c.pass_if = PassIf::at_most;
  return c;
}

ReportData one_check(Check c) {
  Report r(Meta::unknown());
  r.add_case("k", "c").add_check(std::move(c));
  return r.snapshot();
}

// A schema-1 report's data, as read_report gives it: no pass_if, so a pass above its bound is
// stored as "<=" (the builder of version 2 refuses such a check, so it is put in by hand).
ReportData one_check_v1(Check c) {
  ReportData d = one_check(Check::passed(c.name, "m", 0, 1));
  d.schema_version = 1;
  d.claims[0].cases[0].checks[0] = std::move(c);
  return d;
}

TEST(ReportDiff, MarginShrinkBothDirections) {
  auto margin_regressed = [](Check b, Check n, double fraction = 0.5) {
    DiffOptions o;
    o.margin_fraction = fraction;
    const Change* c = find(diff_reports(one_check(b), one_check(n), o), "margin", "k/c/x");
    return c && c->regression;
  };
  // "at most": margin (bound - metric)/bound 0.9 -> 0.4 shrank 56% (> 50%); -> 0.6 shrank 33%.
  EXPECT_TRUE(margin_regressed(Check::passed("x", "e", 1e-7, 1e-6), Check::passed("x", "e", 6e-7, 1e-6)));
  EXPECT_FALSE(margin_regressed(Check::passed("x", "e", 1e-7, 1e-6), Check::passed("x", "e", 4e-7, 1e-6)));
  EXPECT_TRUE(margin_regressed(Check::passed("x", "e", 1e-7, 1e-6), Check::passed("x", "e", 4e-7, 1e-6), 0.25));
  // "at least" (pass_if): margin (metric - bound)/bound 0.1875 -> 0.0625 shrank 67%; -> 0.125 33%.
  auto at_least = [](double m) { return Check::passed("x", "power", m, 0.8).passes_if(PassIf::at_least); };
  EXPECT_TRUE(margin_regressed(at_least(0.95), at_least(0.85)));
  EXPECT_FALSE(margin_regressed(at_least(0.95), at_least(0.9)));
  // A metric that grows is no shrink for "at least" (it would be for "at most").
  EXPECT_FALSE(margin_regressed(at_least(0.85), at_least(0.95)));
  // Schema 1 (no pass_if): passed with metric > bound, so "at least" is inferred.
  auto v1_regressed = [](Check b, Check n) {
    const Change* c = find(diff_reports(one_check_v1(b), one_check_v1(n)), "margin", "k/c/x");
    return c && c->regression;
  };
  EXPECT_TRUE(v1_regressed(v1_check("x", 0.95, 0.8), v1_check("x", 0.85, 0.8)));
  EXPECT_FALSE(v1_regressed(v1_check("x", 0.85, 0.8), v1_check("x", 0.95, 0.8)));
}

TEST(ReportDiff, VerdictsClaimsAndCases) {
  auto regressed = [](Check b, Check n, const char* kind = "verdict", const char* path = "k/c/x") {
    const Change* c = find(diff_reports(one_check(b), one_check(n)), kind, path);
    EXPECT_TRUE(c) << kind;
    return c && c->regression;
  };
  const Check pass = Check::passed("x", "e", 0.1, 1);
  // pass -> error and pass -> not-run regress (a claim whose only check became not-run is one
  // became_not_run line for the claim); not-run -> pass and fail -> pass do not.
  EXPECT_TRUE(regressed(pass, Check::errored("x", "boom")));
  EXPECT_TRUE(regressed(pass, Check::not_run("x", "no GPU"), "became_not_run", "k"));
  EXPECT_FALSE(regressed(Check::not_run("x", "no GPU"), pass));
  EXPECT_FALSE(regressed(Check::failed("x", "e", 2, 1), pass));
  EXPECT_TRUE(regressed(Check::not_run("x", "no GPU"), Check::failed("x", "e", 2, 1)));

  // A claim that disappeared regresses; one that appeared is information.
  Report a(Meta::unknown()), b(Meta::unknown());
  a.add_case("gone", "c").add_check(pass);
  a.add_case("kept", "c").add_check(pass);
  a.add_case("kept", "c2").add_check(pass);
  b.add_case("kept", "c").add_check(pass);
  b.add_case("new", "c").add_check(pass);
  DiffResult d = diff_reports(a.snapshot(), b.snapshot());
  ASSERT_TRUE(find(d, "disappeared", "gone") && find(d, "appeared", "new") && find(d, "disappeared", "kept/c2"));
  EXPECT_TRUE(find(d, "disappeared", "gone")->regression);
  EXPECT_TRUE(find(d, "disappeared", "kept/c2")->regression);
  EXPECT_FALSE(find(d, "appeared", "new")->regression);
  EXPECT_EQ(d.n_regressions(), 2u);
  // The reverse: "gone" and kept/c2 appear (information), "new" disappears (the one regression).
  EXPECT_EQ(diff_reports(b.snapshot(), a.snapshot()).n_regressions(), 1u);
  // A check that went pass -> not-run while its case still passes is a verdict regression.
  Report c(Meta::unknown()), e(Meta::unknown());
  c.add_case("k", "c").add_check(pass).add_check(Check::passed("y", "e", 0.1, 1));
  e.add_case("k", "c").add_check(pass).add_check(Check::not_run("y", "no GPU"));
  const Change* y = find(diff_reports(c.snapshot(), e.snapshot()), "verdict", "k/c/y");
  ASSERT_TRUE(y);
  EXPECT_TRUE(y->regression);
}

// Findings (DESIGN contract 7): a refutation is not a regression in itself, a finding that
// changes once judged is, in either direction, and written to a file and read back it still is
// (the doctored copy: the same report with the refutation turned into a confirmation).
// Planted defect: in report_diff.cpp's check(), `finding ? judged(b.verdict) || ...` made
// `finding ? false` lets the changed findings through (the EXPECT_TRUEs below fail).
Report one_finding(Check c) {
  Report r(Meta::unknown());
  r.declare_claim("k", {}, {"x"});
  r.add_case("k", "c").add_check(std::move(c));
  return r;
}

TEST(ReportDiff, AChangedFindingIsARegression) {
  const Check confirmed = Check::passed("x", "ratio", 0.8, 1).passes_if(PassIf::below);
  const Check refuted = Check::failed("x", "ratio", 1.2, 1, "slower").passes_if(PassIf::below);
  const Check inconclusive = Check::not_run("x", "no timing at this shape");
  auto change = [](const Check& b, const Check& n) {
    const DiffResult d = diff_reports(one_finding(b).snapshot(), one_finding(n).snapshot());
    const Change* c = find(d, "finding", "k/c/x");
    return c ? std::optional<Change>(*c) : std::nullopt;
  };
  ASSERT_TRUE(change(refuted, confirmed));
  EXPECT_TRUE(change(refuted, confirmed)->regression);
  EXPECT_EQ(change(refuted, confirmed)->base_value, "refuted");
  EXPECT_EQ(change(refuted, confirmed)->new_value, "confirmed");
  ASSERT_TRUE(change(confirmed, refuted));
  EXPECT_TRUE(change(confirmed, refuted)->regression);
  // A first judgement is news, not a regression; a finding that is no longer judged regresses.
  ASSERT_TRUE(change(inconclusive, refuted));
  EXPECT_FALSE(change(inconclusive, refuted)->regression);
  // The same refutation in both runs is no change at all.
  EXPECT_TRUE(diff_reports(one_finding(refuted).snapshot(), one_finding(refuted).snapshot()).changes.empty());
  // A check the registry reclassified (contract fail -> finding refuted) is information only.
  const DiffResult k = diff_reports(one_check(refuted), one_finding(refuted).snapshot());
  ASSERT_TRUE(find(k, "kind", "k/c/x"));
  EXPECT_FALSE(find(k, "kind", "k/c/x")->regression);
  EXPECT_EQ(k.n_regressions(), 0u);

  // On files, through the command line: the doctored copy exits 1 and names the finding.
  Scratch s;
  one_finding(refuted).write(s / "refuted.h5");
  one_finding(confirmed).write(s / "confirmed.h5");
  const DiffRun r = diff({s / "refuted.h5", s / "confirmed.h5"});
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("REGRESSION finding k/c/x [verdict]: refuted -> confirmed  (the finding changed"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(diff({s / "refuted.h5", s / "refuted.h5"}).rc, 0);
}

TEST(ReportDiff, RenameMap) {
  Report a(Meta::unknown()), b(Meta::unknown());
  a.add_case("old_claim", "c").add_check(Check::passed("x", "e", 0.1, 1));
  b.add_case("new_claim", "c").add_check(Check::passed("x", "e", 0.1, 1));
  ReportData base = a.snapshot();
  const auto renames = parse_rename_map("# deliberate\nclaim old_claim 'new_claim'\n");
  EXPECT_EQ(apply_renames(base, renames).size(), 1u);
  EXPECT_TRUE(diff_reports(base, b.snapshot()).changes.empty());
  ReportData again = a.snapshot();
  EXPECT_THROW(apply_renames(again, parse_rename_map("case nothing_here x\n")), std::invalid_argument);
  EXPECT_THROW(parse_rename_map("claim a\n"), std::invalid_argument);
  EXPECT_THROW(parse_rename_map("colour a b\n"), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// run_diff: files, exit codes, messages, --json
// ---------------------------------------------------------------------------------------------

TEST(RunDiff, SelfExitsZeroAndWritesJson) {
  Scratch s;
  make_report(false).write(s / "base.h5");
  const DiffRun r = diff({s / "base.h5", s / "base.h5", "--json", s / "out.json"});
  EXPECT_EQ(r.rc, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("0 changes, 0 regressions"), std::string::npos) << r.out;
  std::ifstream j(s / "out.json");
  const std::string text((std::istreambuf_iterator<char>(j)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"regressed\": false"), std::string::npos) << text;
}

TEST(RunDiff, DoctoredCopyExitsOneNamingEachChange) {
  Scratch s;
  make_report(false).write(s / "base.h5");
  make_report(true).write(s / "new.h5");
  const DiffRun r = diff({s / "base.h5", s / "new.h5", "--json", s / "out.json"});
  EXPECT_EQ(r.rc, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("REGRESSION verdict alpha/c1/bounded: pass -> fail"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("REGRESSION bitwise_count alpha/c2/grouped [differing]: 0 -> 4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("REGRESSION benchmark benchmarks/bench_fused/out4096/manual_time"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("info       meta meta/gpu_name"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3 regressions"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(s / "out.json"));
  // A stricter alpha than five repetitions can reach: the benchmark is no longer a regression.
  const DiffRun strict = diff({s / "base.h5", s / "new.h5", "--alpha", "0.01"});
  EXPECT_NE(strict.out.find("2 regressions"), std::string::npos) << strict.out;
}

TEST(RunDiff, CorruptInputsExitTwoWithNoJson) {
  Scratch s;
  make_report(false).write(s / "base.h5");
  {  // truncated: the first half of a real report
    std::ifstream in(s / "base.h5", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    write_text(s / "trunc.h5", bytes.substr(0, bytes.size() / 2));
  }
  write_text(s / "text.h5", "this is not HDF5\n");
  {  // HDF5, but not a report of a schema this reader knows
    hid_t f = H5Fcreate((s / "other.h5").c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(f, "schema_version", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    const int64_t v = 99;
    H5Awrite(a, H5T_NATIVE_INT64, &v);
    H5Aclose(a);
    H5Sclose(sp);
    H5Fclose(f);
  }
  for (const char* bad : {"trunc.h5", "text.h5", "other.h5", "missing.h5"}) {
    for (bool bad_is_new : {false, true}) {
      const std::string json = s / "out.json";
      const DiffRun r = bad_is_new ? diff({s / "base.h5", s / bad, "--json", json})
                                   : diff({s / bad, s / "base.h5", "--json", json});
      EXPECT_EQ(r.rc, 2) << bad << r.out << r.err;
      EXPECT_NE(r.err.find(s / bad), std::string::npos) << r.err;
      EXPECT_NE(r.err.find(bad_is_new ? "NEW" : "BASE"), std::string::npos) << r.err;
      EXPECT_FALSE(fs::exists(json)) << bad;
      EXPECT_TRUE(r.out.empty()) << r.out;
    }
  }
  const DiffRun other = diff({s / "base.h5", s / "other.h5"});
  EXPECT_NE(other.err.find("schema_version is 99"), std::string::npos) << other.err;
}

// --json never replaces an input, compared by device and inode: "--json BASE" replaced the
// baseline report with JSON (the nightly baseline was one slip away).
TEST(RunDiff, JsonThatIsAnInputIsRefused) {
  Scratch s;
  make_report(false).write(s / "base.h5");
  make_report(true).write(s / "new.h5");
  fs::create_hard_link(s / "new.h5", s / "new_link.h5");
  const auto bytes = [](const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  const std::string base_before = bytes(s / "base.h5"), new_before = bytes(s / "new.h5");
  const std::string dotted = (s.dir / "." / "base.h5").string();
  for (const auto& [json, role] : std::vector<std::pair<std::string, std::string>>{
           {s / "base.h5", "BASE"}, {dotted, "BASE"}, {s / "new_link.h5", "NEW"}}) {
    const DiffRun r = diff({s / "base.h5", s / "new.h5", "--json", json});
    EXPECT_EQ(r.rc, 2) << json << r.err;
    EXPECT_NE(r.err.find("--json '" + json + "' is the input " + role), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << "compared before refusing: " << r.out;
  }
  EXPECT_EQ(bytes(s / "base.h5"), base_before);
  EXPECT_EQ(bytes(s / "new.h5"), new_before);
  // A rename map that is not a regular file is refused without waiting on it.
  const DiffRun dir_map = diff({s / "base.h5", s / "new.h5", "--rename-map", s.dir.string()});
  EXPECT_EQ(dir_map.rc, 2);
  EXPECT_NE(dir_map.err.find("is a directory, not a regular file"), std::string::npos) << dir_map.err;
}

// A report holds its own data: a dataset stored in another file (a raw file that holds the very
// values, so a reader that followed it found a valid report, diffed it and wrote the JSON) or an
// external link (listed only as "soft or external links", after being followed) is refused
// before anything is opened by name: exit 2, the report and the object named, no JSON.
TEST(RunDiff, ReportsThatReachIntoOtherFilesAreRefused) {
  Scratch s;
  make_report(false).write(s / "base.h5");
  const std::vector<double> curve = {1.0, 2.0, 3.0};  // make_report's alpha/c1 "curve"
  write_text(s / "curve.raw", std::string(reinterpret_cast<const char*>(curve.data()), curve.size() * sizeof(double)));
  const std::string curve_path = "/alpha/c1/data/curve";
  const std::pair<const char*, std::string> plants[] = {
      {"external_storage", curve_path + ": keeps its data in external files"},
      {"external_link", curve_path + ": is an external link to '" + s / "base.h5" + ":" + curve_path + "'"},
  };
  for (const auto& [plant, message] : plants) {
    const std::string doctored = s / (std::string(plant) + ".h5");
    fs::copy_file(s / "base.h5", doctored);
    const hid_t f = H5Fopen(doctored.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    const hid_t data = H5Gopen2(f, "/alpha/c1/data", H5P_DEFAULT);
    H5Ldelete(data, "curve", H5P_DEFAULT);
    if (std::string(plant) == "external_link") {
      H5Lcreate_external((s / "base.h5").c_str(), curve_path.c_str(), data, "curve", H5P_DEFAULT, H5P_DEFAULT);
    } else {
      const hsize_t n = curve.size();
      const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE), space = H5Screate_simple(1, &n, nullptr);
      H5Pset_external(dcpl, (s / "curve.raw").c_str(), 0, n * sizeof(double));
      H5Dclose(H5Dcreate2(data, "curve", H5T_IEEE_F64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT));
      H5Sclose(space);
      H5Pclose(dcpl);
    }
    H5Gclose(data);
    ASSERT_GE(H5Fclose(f), 0);
    for (bool doctored_is_new : {true, false}) {
      const DiffRun r = doctored_is_new ? diff({s / "base.h5", doctored, "--json", s / "out.json"})
                                        : diff({doctored, s / "base.h5", "--json", s / "out.json"});
      EXPECT_EQ(r.rc, 2) << plant << r.out << r.err;
      EXPECT_NE(r.err.find(std::string(doctored_is_new ? "NEW" : "BASE") + " '" + doctored + "' is not a valid report: " +
                           message), std::string::npos) << plant << ": " << r.err;
      EXPECT_TRUE(r.out.empty()) << plant << ": compared: " << r.out;
      EXPECT_FALSE(fs::exists(s / "out.json")) << plant;
    }
    EXPECT_THROW(read_report(doctored), std::runtime_error) << plant;
  }
}

// A dataset declared larger than what the file stores (found by fuzzing:
// suites/fuzz/regressions/report): never written, it reads as its fill value, so 2^31-1 doubles
// took 16 GiB from a file of kilobytes, and 2^32 x 2^32 elements wrapped to 0 and the report was
// accepted with a shape its values did not have. Refused now: exit 2, the object named, no JSON.
TEST(RunDiff, ADatasetLargerThanItsStoredDataIsRefused) {
  Scratch s;
  make_report(false).write(s / "base.h5");
  const std::pair<const char*, std::vector<hsize_t>> plants[] = {{"long.h5", {(hsize_t(1) << 31) - 1}},
                                                                  {"wraps.h5", {hsize_t(1) << 32, hsize_t(1) << 32}}};
  for (const auto& [name, dims] : plants) {
    const std::string doctored = s / name;
    fs::copy_file(s / "base.h5", doctored);
    const hid_t f = H5Fopen(doctored.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    const hid_t data = H5Gopen2(f, "/alpha/c1/data", H5P_DEFAULT);
    H5Ldelete(data, "curve", H5P_DEFAULT);
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE), space = H5Screate_simple(int(dims.size()), dims.data(), nullptr);
    const std::vector<hsize_t> chunk(dims.size(), 64);
    H5Pset_chunk(dcpl, int(chunk.size()), chunk.data());
    H5Dclose(H5Dcreate2(data, "curve", H5T_IEEE_F64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT));
    H5Sclose(space);
    H5Pclose(dcpl);
    H5Gclose(data);
    ASSERT_GE(H5Fclose(f), 0);
    const DiffRun r = diff({s / "base.h5", doctored, "--json", s / "out.json"});
    EXPECT_EQ(r.rc, 2) << name << r.out << r.err;
    EXPECT_NE(r.err.find("NEW '" + doctored + "' is not a valid report: /alpha/c1/data/curve: dataset declares "),
              std::string::npos) << r.err;
    EXPECT_NE(r.err.find("but stores 0 bytes of them in the file"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(s / "out.json")) << name;
    EXPECT_THROW(read_report(doctored), std::runtime_error) << name;
  }
}

// --json OUT follows forge-verify's report path policy, checked before the reports are read: an
// existing file is replaced only with --force (it was replaced silently), never a non-regular
// file, and no temporary name is left behind.
TEST(RunDiff, JsonReplacesAnExistingFileOnlyWithForce) {
  Scratch s;
  make_report(false).write(s / "base.h5");
  const std::string b = s / "base.h5", out = s / "out.json";
  write_text(out, "the user's own file");
  fs::create_directories(s / "folder.json");
  const DiffRun kept = diff({b, b, "--json", out});
  EXPECT_EQ(kept.rc, 2) << kept.err;
  EXPECT_NE(kept.err.find("forge-verify diff: --json: report path '" + out +
                          "' already exists and is not replaced unless asked (--force replaces an existing regular file)"),
            std::string::npos) << kept.err;
  EXPECT_TRUE(kept.out.empty()) << "compared before refusing: " << kept.out;
  std::ifstream before(out);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(before)), std::istreambuf_iterator<char>()), "the user's own file");
  const DiffRun folder = diff({b, b, "--json", s / "folder.json", "--force"});
  EXPECT_EQ(folder.rc, 2) << folder.err;
  EXPECT_NE(folder.err.find("is a directory"), std::string::npos) << folder.err;
  EXPECT_TRUE(fs::is_directory(s / "folder.json"));

  const DiffRun forced = diff({b, b, "--json", out, "--force"});
  EXPECT_EQ(forced.rc, 0) << forced.err;
  std::ifstream after(out);
  const std::string text((std::istreambuf_iterator<char>(after)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"regressed\": false"), std::string::npos) << text;
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(s.dir)) names.insert(e.path().filename().string());
  EXPECT_EQ(names, (std::set<std::string>{"base.h5", "out.json", "folder.json"})) << "a temporary file was left";
}

TEST(RunDiff, BadUsageExitsTwo) {
  Scratch s;
  make_report(false).write(s / "base.h5");
  const std::string b = s / "base.h5";
  for (const auto& args : std::vector<std::vector<std::string>>{
           {b}, {b, b, b}, {b, b, "--alpha", "1.5"}, {b, b, "--min-ratio", "0.9"},
           {b, b, "--margin-fraction", "x"}, {b, b, "--json"}, {b, b, "--frobnicate"},
           {b, b, "--rename-map", s / "no_such.map"}}) {
    const DiffRun r = diff(args);
    EXPECT_EQ(r.rc, 2) << r.err;
    EXPECT_NE(r.err.find("forge-verify diff: "), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace fh
