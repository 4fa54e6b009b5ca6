// The one evidence vocabulary (DESIGN contract 7): what oracles return, what claims hand to the
// report, what reports/ writes. A check is pass, fail or not-run (with its reason), with its
// metric and bound, and for a bitwise check how many elements differ, the largest ulp distance
// and the first differing coordinate. A claim that threw is `error` (its message the reason):
// never a pass. Nothing here computes a value that is judged.
//
// Two kinds of check, never mixed: a contract (the harness's own bitwise identities, the bounds
// it proves, its self-checks and planted defects) passes or fails, and a fail breaks the run; a
// finding (a statement of the paper or of an external release) is confirmed, refuted or
// inconclusive, and a refutation is what the audit found, not a broken harness. Both are decided
// by the one judge below: a finding's confirmed, refuted and inconclusive are its pass, fail and
// not-run under their own words, so that no second rule decides them.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace fh {

enum class Verdict { pass, fail, not_run, error };
const char* verdict_name(Verdict v);           // "pass", "fail", "not-run", "error"
Verdict parse_verdict(std::string_view name);  // inverse; throws std::invalid_argument

enum class CheckKind { contract, finding };
const char* check_kind_name(CheckKind k);           // "contract", "finding"
CheckKind parse_check_kind(std::string_view name);  // inverse; throws std::invalid_argument
// The word a check's verdict is shown and stored as: a contract's verdict_name, or a finding's
// "confirmed" (pass), "refuted" (fail), "inconclusive" (not-run) or "error".
const char* verdict_word(Verdict v, CheckKind k);
// inverse for a check of kind k; throws std::invalid_argument on a word of the other kind's vocabulary.
Verdict parse_verdict_word(std::string_view word, CheckKind k);

// Which way a bounded check passes: metric <= bound (the default: an error within its bound, a
// count of differing elements at most 0), metric < bound, metric >= bound (a power, a count to
// be reached) or metric > bound. Shown in the verdict table and kept in the report.
enum class PassIf { at_most, below, at_least, above };
const char* pass_if_name(PassIf p);           // "<=", "<", ">=", ">"
PassIf parse_pass_if(std::string_view name);  // inverse; throws std::invalid_argument
// metric `pass_if` bound, the comparison alone (the judge below and the report's direction check).
bool on_passing_side(double metric, double bound, PassIf pass_if);

// Aggregation rule used at every level: fail if any contract fails, else error if any check is
// an error, else pass if anything was judged (a contract passed, a finding confirmed or
// refuted), else not-run (so an empty set is not-run). A refutation never makes a fail: it is
// counted apart (n_refuted) and shown beside the verdict. n_pass, n_fail and n_not_run count
// contracts; n_confirmed, n_refuted and n_inconclusive count findings; n_error counts both.
struct Counts {
  int64_t n_pass = 0, n_fail = 0, n_not_run = 0, n_error = 0;
  int64_t n_confirmed = 0, n_refuted = 0, n_inconclusive = 0;
  Verdict verdict() const;
  void add(Verdict v, CheckKind k = CheckKind::contract);
  Counts& operator+=(const Counts& o);
  friend bool operator==(const Counts&, const Counts&) = default;
};

// One check's verdict and its evidence. Unmeasured doubles are NaN.
struct Check {
  std::string name;
  Verdict verdict = Verdict::not_run;
  CheckKind kind = CheckKind::contract;  // a finding is declared in its claim's registry row
  std::string reason;       // required for not-run ("no GPU") and error (the message); optional otherwise
  PassIf pass_if = PassIf::at_most;  // pass and fail checks: which side of the bound passes
  std::string metric_name;  // required for pass/fail, e.g. "max_rel_err", "differing"
  double metric = std::numeric_limits<double>::quiet_NaN();
  double bound = std::numeric_limits<double>::quiet_NaN();  // required (not NaN) for pass/fail
  // Bitwise evidence, present when differing >= 0.
  int64_t differing = -1;   // number of differing elements; -1: not a bitwise check
  double max_ulp = 0;       // largest ulp distance among them
  std::string first_diff;   // first differing coordinate, e.g. "tile=(2,0) element=(5,17) step=3"

  bool has_bitwise() const { return differing >= 0; }
  const char* word() const { return verdict_word(verdict, kind); }

  static Check passed(std::string name, std::string metric_name, double metric, double bound);
  static Check failed(std::string name, std::string metric_name, double metric, double bound,
                      std::string reason = {});
  static Check not_run(std::string name, std::string reason);
  static Check errored(std::string name, std::string message);  // the claim threw `message`
  // Sets the pass direction (default at_most): Check::passed(...).passes_if(PassIf::at_least).
  Check& passes_if(PassIf p);
  // Makes the check a finding (its claim's registry row must declare the name).
  Check& as_finding();
  // Adds bitwise evidence to a check made by one of the factories above.
  Check& bitwise(int64_t differing, double max_ulp, std::string first_diff);
};

// ---- the one judge ----
// Every pass or fail is decided here, from the metric, its bound and the side that passes, and
// that side is recorded with the verdict, so a check's relation cannot disagree with it. A metric
// that is not finite never passes (NaN: nothing was measured). A fail keeps `reason`; when the
// metric's non-finiteness alone decided, the reason says so first.
Check judge(std::string name, std::string metric_name, double metric, double bound, PassIf pass_if,
            std::string reason = {});
// judge, and `also` must hold too: a condition the metric does not carry (a precondition such as
// "a step was compared", or elements an oracle judged one by one while the metric shows the worst
// ratio). A pass still needs the metric on its passing side; on a fail `reason` says what failed.
// Not a way to pass a hand-made verdict in: use judge when the metric decides alone.
Check judge_and(std::string name, std::string metric_name, double metric, double bound, PassIf pass_if,
                bool also, std::string reason);
// A yes/no check (it ran, it fits): metric 0 when ok, else 1, against bound 0 ("<=").
Check judge_true(std::string name, std::string metric_name, bool ok, std::string reason = {});

// One case's outcome as a claim runner gathers it before it becomes a Check (case_check below):
// a bitwise case (bound 0, metric = differing), a bounded case (metric <= bound), or not run.
struct ClaimCaseResult {
  std::string claim, case_name;
  bool pass = false;
  bool not_run = false;    // the case could not run (note says why); pass is then false
  int64_t differing = 0;   // bitwise cases: elements that differ (summed over arrays and steps)
  double max_ulp = 0;      // largest ulp distance among them (+inf when a NaN differs)
  std::string first_diff;  // the first differing coordinate: array, step, element, tile, bits
  // Bounded cases: metric <= bound (> 0) is the verdict. Bitwise cases: bound = 0 and
  // metric = differing. planted_defects cases: metric = failing cases of the claim, bound = 0.
  double metric = 0, bound = 0;
  std::string metric_name;           // bounded cases: what metric measures ("metric" when unset)
  PassIf pass_if = PassIf::at_most;  // bounded cases: which side of the bound passes
  std::string note;
};

// The judge of a runner's case (judge_and's rule): records metric, bound and direction in r and
// decides r.pass from them. A fail's reason is r's note or first_diff, as case_check maps it.
void judge_case(ClaimCaseResult& r, double metric, double bound, PassIf pass_if, bool also = true);

// The Check of a runner's case, named `check_name`: a bitwise result (bound 0 and metric ==
// differing) carries its bitwise evidence, a not-run result its reason. The only mapping from
// ClaimCaseResult to Check.
Check case_check(const ClaimCaseResult& r, const std::string& check_name);

}  // namespace fh
