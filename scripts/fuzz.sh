#!/usr/bin/env bash
# Fuzzes every parser the harness exposes to files (suites/fuzz/fuzz_inputs.h):
#   results_file      an external producer's results file (HDF5)      fh::ext::ResultsFile
#   cases_file        an external-producer cases file (HDF5)          fh::ext::CasesFile
#   report            a report given to forge-verify diff (HDF5)      validate_report_schema, read_report, diff
#   bench_json        --bench-json, --external-timing                 read_benchmark_json, read_benchmark_errors
#   model_step_json   --model-step                                    read_model_step_json
#   model_bench_json  --external-model                                read_model_bench_json
#   convergence_run_json  --convergence-run                           read_convergence_run_json
#   rename_map        forge-verify diff --rename-map                  parse_rename_map, apply_renames
# with libFuzzer (clang-14, -fsanitize=fuzzer,address,undefined). Only the inputs/ and reports/
# sources the readers need are built (no CUDA, no MPFR), into build-fuzz/ (or $FH_FUZZ_DIR), incrementally.
# Each target first replays its regressions (suites/fuzz/regressions/<target>/: every crash or
# hang found so far, fixed), then fuzzes for SECONDS from its corpus (build-fuzz/corpus/<target>,
# kept between runs) and its seeds: the files the target generates (valid base files, recipes
# that plant known hostile inputs: out-of-range integers, non-finite values, invalid text, external
# links and storage, link cycles), the project's own files (scripts/testdata/, docs/) and
# suites/fuzz/seeds/<target>/. FH_JOBS targets at a time, one libFuzzer process each.
# A finding is: an exception other than the reader's clean refusal, a broken promise about an
# accepted input, a crash, a sanitizer report, an input slower than 5 s (-timeout=5), more
# than 2048 MB (-rss_limit_mb, also the largest single allocation). The input is kept in
# build-fuzz/artifacts/<target>/ (or $FH_FUZZ_ARTIFACTS/<target>/); fix the reader, then add it
# to suites/fuzz/regressions/<target>/.
# The HDF5 targets edit valid base files through the HDF5 API (recipes, fuzz_inputs.h). With
# FH_FUZZ_RAW_HDF5=1 they also take raw bytes as the file, which reaches HDF5 1.10.8's own parser:
# it overruns buffers on some corrupt files (a finding in libhdf5, labelled so; with
# FH_FUZZ_LIBHDF5_FATAL=0 it is listed and the target goes on, as scripts/nightly.sh runs it).
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 30; 0: build, seed and replay only)
#   FH_FUZZ_TARGETS="report bench_json"  only these targets     FH_JOBS  build jobs and targets at a time (default nproc)
# Exit status: 0 nothing found (libhdf5 findings, when not fatal, are listed); 1 a finding, or a
# regression that fails again; 2 bad usage or the build failed.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
usage() { echo "fuzz: $*" >&2; echo "usage: scripts/fuzz.sh [SECONDS_PER_TARGET]" >&2; exit 2; }
case "${1:-}" in -h|--help) sed -n '2,29p' "$0"; exit 0 ;; esac
[ $# -le 1 ] || usage "expected at most one argument, got $#"
SECS="${1:-30}"
[[ "$SECS" =~ ^[0-9]{1,6}$ ]] || usage "SECONDS_PER_TARGET '$SECS' is not a whole number of seconds"
OUT="${FH_FUZZ_DIR:-$ROOT/build-fuzz}"
ARTIFACTS="${FH_FUZZ_ARTIFACTS:-$OUT/artifacts}"
CXX="${FH_FUZZ_CXX:-clang++-14}"
JOBS="${FH_JOBS:-$(nproc)}"
ALL=(results_file cases_file report bench_json model_step_json model_bench_json convergence_run_json rename_map)
read -r -a TARGETS <<< "${FH_FUZZ_TARGETS:-${ALL[*]}}"
for t in "${TARGETS[@]}"; do
  [[ " ${ALL[*]} " == *" $t "* ]] || usage "unknown target '$t' (${ALL[*]})"
done
command -v "$CXX" >/dev/null 2>&1 || { echo "fuzz: $CXX not found (scripts/setup.sh installs clang-14 and libclang-rt-14-dev)" >&2; exit 2; }
command -v ninja >/dev/null 2>&1 || { echo "fuzz: ninja not found (scripts/setup.sh installs ninja-build)" >&2; exit 2; }
HDF5_CFLAGS="$(pkg-config --cflags hdf5 2>/dev/null)" && HDF5_LIBS="$(pkg-config --libs hdf5 2>/dev/null)" ||
  { echo "fuzz: pkg-config finds no hdf5 (libhdf5-dev)" >&2; exit 2; }

# ---- build (ninja: only what changed) ----
mkdir -p "$OUT" || exit 2
DEPS=(inputs/input_file inputs/text_rules inputs/benchmark_json inputs/external_bench inputs/external_io inputs/convergence_run_json
      inputs/hdf5_util reports/report_builder reports/report_read reports/report_write reports/report_path reports/report_diff
      oracles/evidence suites/fuzz/fuzz_inputs)
{
  echo "# Written by scripts/fuzz.sh; do not edit."
  echo "cxx = $CXX"
  echo "cflags = -std=c++20 -O1 -gline-tables-only -fno-omit-frame-pointer -ffp-contract=off -fsanitize=address,undefined -fno-sanitize-recover=all -fsanitize=fuzzer-no-link -I$ROOT $HDF5_CFLAGS"
  echo "ldflags = -fsanitize=fuzzer,address,undefined $HDF5_LIBS"
  echo "rule cc"
  echo "  command = nice -n 19 \$cxx \$cflags \$defines -MD -MF \$out.d -c \$in -o \$out"
  echo "  depfile = \$out.d"
  echo "  deps = gcc"
  echo "  description = CXX \$out"
  echo "rule ar"
  echo "  command = rm -f \$out && ar rcs \$out \$in"
  echo "rule link"
  echo "  command = nice -n 19 \$cxx \$in -o \$out \$ldflags"
  echo "  description = LINK \$out"
  objs=()
  for d in "${DEPS[@]}"; do
    echo "build obj/$d.o: cc $ROOT/$d.cpp"
    objs+=("obj/$d.o")
  done
  echo "build libfh_fuzz.a: ar ${objs[*]}"
  for t in "${ALL[@]}"; do
    echo "build obj/fuzz_main_$t.o: cc $ROOT/suites/fuzz/fuzz_main.cpp"
    echo "  defines = -DFH_FUZZ_TARGET=$t"
    echo "build fuzz_$t: link obj/fuzz_main_$t.o libfh_fuzz.a"
  done
} > "$OUT/build.ninja.new"
cmp -s "$OUT/build.ninja.new" "$OUT/build.ninja" 2>/dev/null || mv "$OUT/build.ninja.new" "$OUT/build.ninja"
rm -f "$OUT/build.ninja.new"
build_start=$SECONDS
bins=(); for t in "${TARGETS[@]}"; do bins+=("fuzz_$t"); done
ninja -C "$OUT" -j "$JOBS" "${bins[@]}" > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log" >&2; echo "fuzz: the build failed ($OUT/build.log)" >&2; exit 2; }
echo "fuzz: built ${#TARGETS[@]} targets in $((SECONDS - build_start)) s ($CXX, $OUT)"

# ---- seeds ----
seed_files() {  # the project's own files that are valid inputs of target $1
  case "$1" in
    report) echo "$ROOT/scripts/testdata/schema1_report.h5 $ROOT/docs/model_step/model_step_report.h5 $ROOT/docs/forge_audit/model_timing_report.h5" ;;
    bench_json) echo "$ROOT/scripts/testdata/bench_sample.json $ROOT/docs/forge_audit/timing_*.json" ;;
    model_step_json) echo "$ROOT/docs/model_step/json/harness_*.json $ROOT/docs/model_step/json/capacity_*.json" ;;
    model_bench_json) echo "$ROOT/docs/forge_audit/model_*.json $ROOT/docs/model_step/json/torch_*.json" ;;
    convergence_run_json) echo "$ROOT/docs/model_step/convergence/json/h_fused_int8_master_s1.json $ROOT/docs/model_step/convergence/json/t_fp32_from_harness_s1.json $ROOT/docs/model_step/convergence/json/r_forge_s1.json" ;;
  esac
}

# ---- replay, then fuzz ----
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$ROOT/suites/fuzz/lsan.supp:print_suppressions=0}"
export FH_FUZZ_RAW_HDF5="${FH_FUZZ_RAW_HDF5:-0}"
# What a failed libFuzzer run found, from its log $1: "kind|what|input".
finding() {
  local log="$1" what input kind=harness top
  what="$(grep -m1 -oE 'FUZZ FINDING in [a-z_]+: .*|ERROR: (libFuzzer|AddressSanitizer|UndefinedBehaviorSanitizer|LeakSanitizer): [a-zA-Z -]+|runtime error: .*' "$log" | head -1 | cut -c1-200)"
  input="$(grep -oE "Test unit written to [^ ]+" "$log" | tail -1 | sed 's/Test unit written to //')"
  # Where it happened: the first stack frame outside the sanitizers and libc. In libhdf5, the HDF5
  # library's own parser overran or crashed on a corrupt file (raw mode only): not a reader's code.
  top="$(sed -n '/ERROR: \(AddressSanitizer\|libFuzzer\|UndefinedBehaviorSanitizer\)/,$p' "$log" | grep -E '^ *#[0-9]+ 0x' |
         grep -vE '__interceptor_|__asan|__sanitizer|__ubsan|fuzzer::|/libc\.so|libc_start|__mem(cpy|move|set)|__str' | head -1)"
  case "$top" in *libhdf5*) kind=libhdf5 ;; esac
  echo "$kind|${what:-unknown}|$input"
}
# Scratch folders of fuzz processes that died (a crash skips the exit handler that removes them).
for d in "${TMPDIR:-/dev/shm}"/fh-fuzz-* /tmp/fh-fuzz-*; do
  [ -d "$d" ] || continue
  pid="${d##*/fh-fuzz-}" && pid="${pid%%-*}"
  [[ "$pid" =~ ^[0-9]+$ ]] && ! kill -0 "$pid" 2>/dev/null && rm -rf -- "$d"
done
# One target: regressions replayed, then SECS of fuzzing. Writes $OUT/logs/$t.summary (its summary
# lines) and $OUT/logs/$t.status (ok, finding, regression or error); what it says on stderr is
# shown after every target has ended.
fuzz_one() {
  local t="$1"
  local bin seeds corpus art log d dict opts regs nreg execs left harness libfindings attempt start rc n kind what input units line l
  local status="$OUT/logs/$t.status" summary_file="$OUT/logs/$t.summary"
  bin="$OUT/fuzz_$t"
  seeds="$OUT/seeds/$t" corpus="$OUT/corpus/$t" art="$ARTIFACTS/$t" log="$OUT/logs/$t.log"
  echo error > "$status"
  rm -rf "$seeds" && mkdir -p "$seeds" "$corpus" "$art" || return
  FH_FUZZ_WRITE_SEEDS="$seeds" "$bin" > /dev/null 2>"$log" || { cat "$log" >&2; echo "fuzz: $t: cannot write its seeds" >&2; return; }
  # shellcheck disable=SC2046
  for f in $(seed_files "$t") "$ROOT"/suites/fuzz/seeds/"$t"/*; do [ -f "$f" ] && cp "$f" "$seeds/"; done
  [ "$FH_FUZZ_RAW_HDF5" = 1 ] || rm -f "$seeds"/*.h5  # raw files only in raw mode (else they are recipes)
  dict=()
  case "$t" in *_json) d="$ROOT/suites/fuzz/dicts/json.dict" ;; *) d="$ROOT/suites/fuzz/dicts/$t.dict" ;; esac
  [ -f "$d" ] && dict=(-dict="$d")
  opts=(-timeout=5 -rss_limit_mb=2048 -artifact_prefix="$art/")
  # Regressions: each input once; any failure is a finding that came back.
  regs=("$ROOT"/suites/fuzz/regressions/"$t"/*)
  nreg=0
  if [ -e "${regs[0]}" ]; then
    nreg=${#regs[@]}
    if ! "$bin" "${opts[@]}" "${regs[@]}" > "$log.replay" 2>&1; then
      { grep -E '^Running' "$log.replay" | tail -1; grep -m3 -E 'FUZZ FINDING|ERROR:|runtime error' "$log.replay"; grep -E "#[0-9]+ .* $ROOT/" "$log.replay" | head -8; } >&2
      echo "fuzz: $t: a regression input fails again ($log.replay)" >&2
      echo "$t: A REGRESSION FAILS AGAIN ($log.replay)" > "$summary_file"
      echo regression > "$status"
      return
    fi
  fi
  if [ "$SECS" -eq 0 ]; then
    echo "$t: $nreg regressions replayed, no fuzzing" > "$summary_file"
    echo ok > "$status"
    return
  fi
  # Fuzz for SECS. A finding in libhdf5 (raw mode) with FH_FUZZ_LIBHDF5_FATAL=0 is listed and the
  # target restarted on the time left (at most 5 times); any other finding ends it.
  execs=0 left="$SECS" harness=""
  libfindings=()
  : > "$log"
  for attempt in 1 2 3 4 5 6; do
    start=$SECONDS
    "$bin" "${opts[@]}" "${dict[@]}" -max_total_time="$left" -print_final_stats=1 "$corpus" "$seeds" > "$log.$attempt" 2>&1
    rc=$?
    cat "$log.$attempt" >> "$log"
    n="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log.$attempt" | grep -o '[0-9]*$' | tail -1)"
    [ -z "$n" ] && n="$(grep -oE '^#[0-9]+' "$log.$attempt" | tail -1 | tr -d '#')"
    execs=$((execs + ${n:-0}))
    [ $rc -eq 0 ] && break
    IFS='|' read -r kind what input <<< "$(finding "$log.$attempt")"
    if [ "$kind" = libhdf5 ] && [ "${FH_FUZZ_LIBHDF5_FATAL:-1}" = 0 ]; then
      [[ " ${libfindings[*]} " == *"$what ($input)"* ]] || libfindings+=("$what ($input)")
      left=$((left - (SECONDS - start)))
      [ "$left" -gt 2 ] && continue
      break
    fi
    { grep -m3 -E 'FUZZ FINDING|ERROR:|runtime error' "$log.$attempt"; grep -E "#[0-9]+ .* $ROOT/" "$log.$attempt" | head -8; } >&2
    harness="$what ($input)$([ "$kind" = libhdf5 ] && echo ', in libhdf5')"
    break
  done
  rm -f "$log".[0-9]
  units="$(ls "$corpus" | wc -l)"
  line="$(printf '%-17s %9s executions in %s s, %s regressions replayed, corpus %s' "$t:" "$execs" "$SECS" "$nreg" "$units")"
  for l in "${libfindings[@]}"; do line+=$'\n'"fuzz:   libhdf5 finding (HDF5's own parser, not a reader's): $l"; done
  echo ok > "$status"
  if [ -n "$harness" ]; then
    echo "fuzz: $t: FINDING: $harness; log $log" >&2
    line+=$'\n'"fuzz:   FINDING: $harness"
    echo finding > "$status"
  fi
  printf '%s\n' "$line" > "$summary_file"
}
# The targets run side by side, FH_JOBS at a time (each is one libFuzzer process), so CI's fuzzing
# takes SECS x targets / jobs.
mkdir -p "$OUT/logs" || exit 2
for t in "${TARGETS[@]}"; do
  rm -f "$OUT/logs/$t.status" "$OUT/logs/$t.summary"
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
  fuzz_one "$t" 2> "$OUT/logs/$t.stderr" &
done
wait
failed=()
summary=()
for t in "${TARGETS[@]}"; do
  [ -s "$OUT/logs/$t.stderr" ] && cat "$OUT/logs/$t.stderr" >&2
  st="$(cat "$OUT/logs/$t.status" 2>/dev/null || echo error)"
  case "$st" in
    ok) ;;
    finding) failed+=("$t") ;;
    regression) failed+=("$t (regression)") ;;
    *) echo "fuzz: $t: the target did not run to its end" >&2; exit 2 ;;
  esac
  [ -f "$OUT/logs/$t.summary" ] && summary+=("$(cat "$OUT/logs/$t.summary")")
done
printf 'fuzz: %s\n' "${summary[@]}"
if ((${#failed[@]})); then
  echo "fuzz: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: no findings"
