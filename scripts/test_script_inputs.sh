#!/usr/bin/env bash
# CTest script_inputs: the scripts' door, with no build and no GPU. Each of render_summary.py,
# render_audit.py, render_memory_timeline.py and render_fidelity.py gets one case per class of bad
# input (a missing file, a folder, a FIFO, not HDF5, an HDF5 file that is not a report, a report of
# schema 4, newer than the scripts read) and of refused output (a folder, a symlink, a FIFO, a device, an existing file without
# --force, the same file as an input, a read-only folder); each must exit 2 with one line on
# stderr naming the file, no traceback, and leave every file as it was (no output, no temporary,
# nothing replaced). render_summary.py must keep a file it did not write in a page it wrote.
# seed_sweep.sh (against a stub forge-verify) must exit 2 on bad usage, never listing failing
# seeds, and report a GPU claim asked for without --gpu as not run (exit 4), never "no failures";
# nightly.sh must exit 2 with no arguments and on an FH_DIFF_* value that is not a number in range,
# before it writes anything; gpu_bundle.sh must refuse a PTX-only build folder and a kernel mutants' build (exit 1) and an
# FH_BUNDLE_VERIFY, FH_BUNDLE_MODEL_STEP or FH_BUNDLE_LIBS other than 0 or 1 or an FH_BUNDLE_XZ_PRESET not one digit or an FH_BUNDLE_OUT not *.tar.xz (exit 2, before any build); gpu_runner.sh
# must refuse an FH_NCU_CONFIGS entry that is not a configuration name (exit 2, before any work).
# Usage: scripts/test_script_inputs.sh   (FH_PYTHON: a python3 with h5py and matplotlib)
set -u
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
S="$ROOT/scripts"
T="$(mktemp -d)"
trap 'chmod -R u+w "$T" 2>/dev/null; rm -rf "$T"' EXIT
fails=0 oks=0 notrun=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
ok() { echo "ok: $*"; oks=$((oks + 1)); }

PY=""
for cand in ${FH_PYTHON:-} python3 /usr/bin/python3; do
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import h5py, matplotlib' >/dev/null 2>&1; then PY="$cand"; break; fi
done
[ -n "$PY" ] || { echo "test_script_inputs: no python3 with h5py and matplotlib (apt-get install -y python3-h5py python3-matplotlib)" >&2; exit 2; }

# ---- inputs: a small valid report (a timeline and an INT8 histogram to draw), and bad ones ----
mkdir -p "$T/in/dir" "$T/w"
"$PY" - "$T/in" <<'EOF' || { echo "test_script_inputs: could not write the fixtures" >&2; exit 2; }
import sys, h5py, numpy as np
d = sys.argv[1]
def report(path, schema):
    with h5py.File(path, "w") as f:
        f.attrs["schema_version"] = np.int64(schema)
        f.attrs["verdict"] = "pass"
        for k in ("n_pass", "n_fail", "n_not_run", "n_error"):
            f.attrs[k] = np.int64(1 if k == "n_pass" else 0)
        m = f.create_group("meta").attrs
        m["tool"], m["tool_version"], m["git_revision"], m["gpu_name"] = "forge-verify", "test", "abc1234", "none"
        c = f.create_group("eq6_memory_model").create_group("twin bf16")
        c.attrs["verdict"], c.attrs["timeline_phases"] = "pass", "start;forward;step"
        c.create_group("data")["timeline_twin_in_use"] = np.array([1, 3, 2], dtype=np.int64) << 20
        c["data"]["timeline_twin_peak"] = np.array([1, 4, 3], dtype=np.int64) << 20
        ch = c.create_group("checks").create_group("ran").attrs
        ch["verdict"], ch["metric"], ch["bound"], ch["pass_if"] = "pass", 0.0, 1.0, "<="
        h = f.create_group("prop4_int8").create_group("m block64")
        h.attrs["verdict"] = "pass"
        h.create_group("data")["err_over_bound_hist"] = np.arange(21, dtype=np.float64)
report(d + "/good.h5", 2)
report(d + "/schema4.h5", 4)
with h5py.File(d + "/notreport.h5", "w") as f:
    f.create_group("something")
EOF
echo "not an HDF5 file" > "$T/in/text.h5"
mkfifo "$T/in/fifo.h5"

# run SCRIPT IN OUT [--force]: one script on one input and one output, with a time limit (a FIFO
# must not hang it); WRAP (empty, or setpriv dropping it) runs it without root's permission override.
WRAP=""
run() {
  local s="$1" in="$2" out="$3"; shift 3
  case "$s" in
    audit) timeout 60 $WRAP "$PY" "$S/render_audit.py" "$@" "$out" "$in" ;;
    timeline) timeout 60 $WRAP "$PY" "$S/render_memory_timeline.py" "$@" "$in" "$out" ;;
    summary) timeout 60 $WRAP "$PY" "$S/render_summary.py" "$in" -o "$out" "$@" ;;
    fidelity) timeout 60 $WRAP "$PY" "$S/render_fidelity.py" "$in" -o "$out" "$@" ;;
  esac
}
# What the folders hold (name, type, size, mtime, inode): a write, a temporary or a replacement
# changes it.
snap() { find "$T/in" "$T/w" -printf '%p %y %s %T@ %i\n' 2>/dev/null | sort; }
# refused WHAT NAMED_FILE SCRIPT IN OUT [ARGS]: exit 2, one stderr line naming NAMED_FILE, no
# traceback, nothing changed.
refused() {
  local what="$1" named="$2" before rc
  shift 2
  before="$(snap)"
  run "$@" > "$T/out.txt" 2> "$T/err.txt"; rc=$?
  local why=""
  [ $rc -eq 2 ] || why+=" exit $rc, want 2;"
  [ "$(wc -l < "$T/err.txt")" -eq 1 ] || why+=" stderr is not one line;"
  grep -qF -- "$named" "$T/err.txt" || why+=" the message does not name $named;"
  grep -q Traceback "$T/err.txt" && why+=" a traceback;"
  [ "$(snap)" = "$before" ] || why+=" files changed: $(diff <(echo "$before") <(snap) | grep '^[<>]' | head -3 | tr '\n' ' ');"
  if [ -n "$why" ]; then fail "$1 $what:$why stderr: $(head -c 400 "$T/err.txt")"
  else ok "$1 $what: exit 2 ($(cat "$T/err.txt"))"; fi
}

ext() { case "$1" in audit) echo md ;; timeline) echo png ;; *) echo d ;; esac; }

# ---- bad input: every script, every class; the output would be a fresh name ----
for s in summary audit timeline fidelity; do
  out="$T/w/new_$s.$(ext "$s")"
  refused "missing file" "$T/in/absent.h5" "$s" "$T/in/absent.h5" "$out"
  refused "a directory" "$T/in/dir" "$s" "$T/in/dir" "$out"
  refused "a FIFO" "$T/in/fifo.h5" "$s" "$T/in/fifo.h5" "$out"
  refused "not HDF5" "$T/in/text.h5" "$s" "$T/in/text.h5" "$out"
  refused "HDF5, not a report" "$T/in/notreport.h5" "$s" "$T/in/notreport.h5" "$out"
  refused "schema 4" "$T/in/schema4.h5" "$s" "$T/in/schema4.h5" "$out"
done

# ---- refused outputs ----
echo "previous" > "$T/w/exists.md"
echo "previous" > "$T/w/exists.png"
echo "target" > "$T/w/target.txt"
ln -s "$T/w/target.txt" "$T/w/link.out"
mkfifo "$T/w/fifo.out"
mkdir "$T/w/dir.out"
mkdir "$T/w/ro" && chmod 555 "$T/w/ro"
ln "$T/in/good.h5" "$T/w/hardlink.h5"  # the report under another name: same device and inode
G="$T/in/good.h5"
# A read-only folder binds root only without CAP_DAC_OVERRIDE: dropped with setpriv when root.
ro_ok=1 RO_WRAP=""
if [ "$(id -u)" = 0 ]; then
  if setpriv --bounding-set=-dac_override,-dac_read_search,-fowner true 2>/dev/null; then
    RO_WRAP="setpriv --bounding-set=-dac_override,-dac_read_search,-fowner"
  else ro_ok=0; fi
fi
for s in audit timeline; do
  e="$(ext "$s")"
  refused "output is a directory" "$T/w/dir.out" "$s" "$G" "$T/w/dir.out" --force
  refused "output is a symlink" "$T/w/link.out" "$s" "$G" "$T/w/link.out" --force
  refused "output is a FIFO" "$T/w/fifo.out" "$s" "$G" "$T/w/fifo.out" --force
  refused "output is a device" "/dev/null" "$s" "$G" /dev/null --force
  refused "output exists, no --force" "$T/w/exists.$e" "$s" "$G" "$T/w/exists.$e"
  refused "output is the input (hard link)" "$T/w/hardlink.h5" "$s" "$G" "$T/w/hardlink.h5" --force
  refused "output is the input (other spelling)" "$T/in/../in/good.h5" "$s" "$G" "$T/in/../in/good.h5" --force
  if [ $ro_ok = 1 ]; then
    WRAP="$RO_WRAP"
    refused "read-only output folder" "$T/w/ro" "$s" "$G" "$T/w/ro/new.$e"
    WRAP=""
  else echo "NOT RUN: $s read-only output folder (root, and setpriv cannot drop CAP_DAC_OVERRIDE)"; notrun=$((notrun + 1)); fi
  # --force replaces an existing regular file, through a temporary renamed into place.
  before_ino="$(stat -c %i "$T/w/exists.$e")"
  if run "$s" "$G" "$T/w/exists.$e" --force > /dev/null 2> "$T/err.txt" && ! grep -qx previous "$T/w/exists.$e" &&
     [ "$(stat -c %i "$T/w/exists.$e")" != "$before_ino" ] && [ -z "$(find "$T/w" -maxdepth 1 -name '.*')" ]; then
    ok "$s --force replaces an existing file, no temporary left"
  else fail "$s --force: $(cat "$T/err.txt")"; fi
  echo "previous" > "$T/w/exists.$e"
done

# render_fidelity writes fixed names into OUTDIR: each refused name class, and the folder itself.
F="$T/w/figs"
mkdir -p "$F"
refused "output folder is a device" "/dev/null" fidelity "$G" /dev/null
mkdir "$F/int8_error_hist.png"
refused "figure name is a directory" "$F/int8_error_hist.png" fidelity "$G" "$F" --force
rmdir "$F/int8_error_hist.png" && ln -s "$T/w/target.txt" "$F/int8_error_hist.png"
refused "figure name is a symlink" "$F/int8_error_hist.png" fidelity "$G" "$F" --force
rm "$F/int8_error_hist.png" && mkfifo "$F/int8_error_hist.png"
refused "figure name is a FIFO" "$F/int8_error_hist.png" fidelity "$G" "$F" --force
rm "$F/int8_error_hist.png" && echo previous > "$F/int8_error_hist.png"
refused "figure exists, no --force" "$F/int8_error_hist.png" fidelity "$G" "$F"
rm "$F/int8_error_hist.png" && ln "$G" "$F/int8_error_hist.png"
refused "figure name is the input" "$F/int8_error_hist.png" fidelity "$F/int8_error_hist.png" "$F" --force
rm "$F/int8_error_hist.png"
if [ $ro_ok = 1 ]; then
  WRAP="$RO_WRAP"
  refused "read-only output folder" "$T/w/ro" fidelity "$G" "$T/w/ro"
  WRAP=""
else echo "NOT RUN: fidelity read-only output folder"; notrun=$((notrun + 1)); fi
run fidelity "$G" "$F" > /dev/null 2> "$T/err.txt" && [ -s "$F/int8_error_hist.png" ] && [ -z "$(find "$F" -maxdepth 1 -name '.*')" ] &&
  ok "fidelity draws into an empty folder" || fail "fidelity on a good report: $(cat "$T/err.txt")"

# render_summary writes a page folder.
P="$T/w/page"
run summary "$G" "$P" > /dev/null 2> "$T/err.txt" && [ -s "$P/index.html" ] && [ -s "$P/.render_summary.manifest" ] &&
  ok "summary writes a page with its manifest" || fail "summary on a good report: $(cat "$T/err.txt")"
mkdir "$T/w/user" && echo keep > "$T/w/user/notes.txt"
refused "output is a folder it did not write" "$T/w/user" summary "$G" "$T/w/user" --force
ln -s "$P" "$T/w/page.link"
refused "output is a symlink" "$T/w/page.link" summary "$G" "$T/w/page.link" --force
refused "output is a FIFO" "$T/w/fifo.out" summary "$G" "$T/w/fifo.out" --force
refused "output is a device" "/dev/null" summary "$G" /dev/null --force
refused "output is the input" "$T/w/hardlink.h5" summary "$G" "$T/w/hardlink.h5" --force
refused "page exists, no --force" "$P" summary "$G" "$P"
echo "my notes" > "$P/notes.txt"
refused "page holds a file it did not write" "notes.txt" summary "$G" "$P" --force
rm "$P/notes.txt"
cp "$P/index.html" "$T/index.saved" && echo "edited" >> "$P/index.html"
refused "page file changed since written" "index.html" summary "$G" "$P" --force
cp "$T/index.saved" "$P/index.html"
if [ $ro_ok = 1 ]; then
  WRAP="$RO_WRAP"
  refused "read-only output folder" "$T/w/ro" summary "$G" "$T/w/ro/page"
  WRAP=""
else echo "NOT RUN: summary read-only output folder"; notrun=$((notrun + 1)); fi
old_ino="$(stat -c %i "$P/index.html")"
run summary "$G" "$P" --force > /dev/null 2> "$T/err.txt" && [ "$(stat -c %i "$P/index.html")" != "$old_ino" ] &&
  [ -z "$(find "$T/w" -maxdepth 1 -name '.page.*')" ] && ok "summary --force replaces its own page, nothing left aside" ||
  fail "summary --force on its own page: $(cat "$T/err.txt")"

# The versions the scripts read end at the one reports/SCHEMA.md documents.
doc="$(sed -n '1s/^# Report schema, version \([0-9]*\)$/\1/p' "$ROOT/reports/SCHEMA.md")"
reads="$(cd "$S" && "$PY" -c 'import atomic_file; print(max(atomic_file.REPORT_SCHEMAS))')"
[ -n "$doc" ] && [ "$doc" = "$reads" ] && ok "the scripts read up to schema $reads, the version reports/SCHEMA.md documents" ||
  fail "reports/SCHEMA.md documents schema '$doc', the scripts read up to $reads (atomic_file.REPORT_SCHEMAS)"

# ---- seed_sweep.sh against a stub forge-verify: claims cpu_a (CPU) and gpu_a (GPU), both seeded ----
cat > "$T/fv" <<'EOF'
#!/usr/bin/env bash
if [ "${1:-}" = --list-claims-json ]; then
  echo '{"claims": [{"id": "cpu_a", "options": ["--seed"], "needs_gpu": false},
                    {"id": "gpu_a", "options": ["--seed"], "needs_gpu": true}]}'
  exit 0
fi
claim="" seed="" gpu=0
while [ $# -gt 0 ]; do
  case "$1" in
    --claim) claim="$2"; shift 2 ;; --seed) seed="$2"; shift 2 ;; --report) shift 2 ;; --quiet) shift ;;
    --require-gpu) gpu=1; shift ;;
    --shape) printf '%s\n' "$2" >> "${FH_STUB_LOG:-/dev/null}"; shift 2 ;;
    *) echo "forge-verify: unknown option '$1'" >&2; exit 2 ;;
  esac
done
echo "$seed" >> "${FH_STUB_SEEDS:-/dev/null}"
[ "$claim" = gpu_a ] && [ $gpu = 1 ] && { echo "forge-verify: gpu_a did not run (no GPU)" >&2; exit 4; }
[ "$seed" = "${FH_STUB_FAIL_SEED:-none}" ] && { echo "  gpu_a sr fail 1.0 <= 0.5"; exit 1; }
exit 0
EOF
chmod +x "$T/fv"
# sweep WHAT WANT_RC GREP_STDOUT+STDERR ARGS...: rc, a line matching, and never a "failing" seed
# count above 0 unless expected.
sweep() {
  local what="$1" want="$2" pat="$3"; shift 3
  FH_SWEEP_DIR="$T/sweep" timeout 60 bash "$S/seed_sweep.sh" --bin "$T/fv" --jobs 2 "$@" > "$T/sw.out" 2>&1; local rc=$?
  local why=""
  [ $rc -eq "$want" ] || why+=" exit $rc, want $want;"
  grep -qE -- "$pat" "$T/sw.out" || why+=" no line matches '$pat';"
  [ "$want" = 1 ] || ! grep -qE '[1-9][0-9]* failing' "$T/sw.out" || why+=" reported failing seeds;"
  [ "$want" = 0 ] || ! grep -q 'no failures' "$T/sw.out" || why+=" said 'no failures';"
  if [ -n "$why" ]; then fail "seed_sweep $what:$why output: $(head -c 400 "$T/sw.out")"
  else ok "seed_sweep $what: exit $rc ($(grep -m1 -E -- "$pat" "$T/sw.out"))"; fi
}
sweep "unknown option" 2 "unknown option '--frist'" 3 --frist 5
sweep "option without its value" 2 "--first needs a value" 3 --first
sweep "non-numeric --first" 2 "--first must be" 3 --first abc
sweep "octal-looking --first" 2 "--first must be" 3 --first 010
sweep "--first = 2^63" 2 "below 2\^63" 1 --first 9223372036854775808
sweep "--first + N past 2^63" 2 "below 2\^63" 2 --first 9223372036854775807
sweep "N of 0" 2 "N must be" 0
sweep "N out of range" 2 "N must be" 99999999999999999999
sweep "unknown claim" 2 "no such claim.*nope" 2 --claims nope
sweep "forge-verify refuses ARGS" 2 "refused the run's options.*--bogus" 2 --claims cpu_a -- --bogus
sweep "GPU claim without --gpu" 4 "gpu_a +NOT RUN" 2 --claims cpu_a,gpu_a
sweep "GPU claim finds no GPU" 4 "NOT RUN \(no GPU\)" 2 --claims gpu_a --gpu
FH_STUB_FAIL_SEED=2 sweep "a failing seed is still a failure" 1 "seed 2: exit 1" 3 --claims cpu_a
rm -f "$T/seeds"
FH_STUB_SEEDS="$T/seeds" sweep "the last seed below 2^63 runs" 0 "no failures" 1 --first 9223372036854775807 --claims cpu_a
grep -qx 9223372036854775807 "$T/seeds" 2>/dev/null && ok "seed_sweep passes seed 2^63-1 unchanged" ||
  fail "seed_sweep passed seeds '$(cat "$T/seeds" 2>/dev/null)', want 9223372036854775807"
rm -f "$T/shape"
FH_STUB_LOG="$T/shape" sweep "ARGS pass quoted" 0 "no failures" 1 --claims cpu_a -- --shape '64x96 *'
[ "$(cat "$T/shape" 2>/dev/null)" = '64x96 *' ] && ok "seed_sweep passes an ARG with a blank and a glob as one word" ||
  fail "seed_sweep split or globbed an ARG: '$(cat "$T/shape" 2>/dev/null)'"

# ---- nightly.sh: bad usage exits 2 before it writes anything ----
night() {  # night WHAT PATTERN ENV... -- ARGS...
  local what="$1" pat="$2" envs=()
  shift 2
  while [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  env "${envs[@]}" FH_BUNDLE="$T/no_bundle.tar" timeout 60 bash "$S/nightly.sh" "$@" > "$T/n.out" 2>&1; local rc=$?
  if [ $rc -eq 2 ] && grep -qE -- "$pat" "$T/n.out" && [ ! -e "$T/night" ]; then ok "nightly $what: exit 2 ($(grep -m1 -E -- "$pat" "$T/n.out"))"
  else fail "nightly $what: exit $rc, OUTDIR $([ -e "$T/night" ] && echo made || echo absent), output: $(head -c 300 "$T/n.out")"; fi
}
night "no arguments" "usage: scripts/nightly.sh" --
night "three arguments" "got 3 arguments" -- "$T/night" "$T/base" extra
night "FH_DIFF_ALPHA with an option spliced in" "FH_DIFF_ALPHA='0.05 --strict'" "FH_DIFF_ALPHA=0.05 --strict" -- "$T/night"
night "FH_DIFF_MIN_RATIO a glob" "FH_DIFF_MIN_RATIO='\*'" "FH_DIFF_MIN_RATIO=*" -- "$T/night"
night "FH_DIFF_ALPHA out of range" "FH_DIFF_ALPHA='2'" "FH_DIFF_ALPHA=2" -- "$T/night"
night "FH_DIFF_MARGIN negative" "FH_DIFF_MARGIN='-0.1'" "FH_DIFF_MARGIN=-0.1" -- "$T/night"

# ---- gpu_bundle.sh: a PTX-only build folder (FH_DEVICE_SASS=OFF, as CI builds) is never packed ----
mkdir -p "$T/ptx_build" && echo "FH_DEVICE_SASS:BOOL=OFF" > "$T/ptx_build/CMakeCache.txt" && touch "$T/ptx_build/build.ninja"
FH_BUILD_DIR="$T/ptx_build" timeout 60 bash "$S/gpu_bundle.sh" > "$T/b.out" 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q "FH_DEVICE_SASS=OFF (PTX only)" "$T/b.out"; then
  ok "gpu_bundle PTX-only build: exit 1 ($(head -n1 "$T/b.out"))"
else fail "gpu_bundle PTX-only build: exit $rc, output: $(head -c 300 "$T/b.out")"; fi
# ---- gpu_bundle.sh: a kernel mutants' build (one rule family) is never packed either ----
mkdir -p "$T/mutant_build" && printf 'FH_DEVICE_SASS:BOOL=ON\nFH_GPU_RULE_FAMILY:STRING=adamw\n' > "$T/mutant_build/CMakeCache.txt" && touch "$T/mutant_build/build.ninja"
FH_BUILD_DIR="$T/mutant_build" timeout 60 bash "$S/gpu_bundle.sh" > "$T/b.out" 2>&1; rc=$?
if [ $rc -eq 1 ] && grep -q "FH_GPU_RULE_FAMILY (a kernel mutants' build" "$T/b.out"; then
  ok "gpu_bundle mutant build: exit 1"
else fail "gpu_bundle mutant build: exit $rc, output: $(head -c 300 "$T/b.out")"; fi

# FH_BUNDLE_VERIFY, FH_BUNDLE_MODEL_STEP and FH_BUNDLE_LIBS are 0 or 1, checked before any build ("yes"
# would have bundled no forge-verify or forge-model-step, "no" kept the fallback libraries).
for var in FH_BUNDLE_VERIFY FH_BUNDLE_MODEL_STEP FH_BUNDLE_LIBS; do
  for bad in yes no 2 ' 1'; do
    env "$var=$bad" FH_BUILD_DIR="$T/ptx_build" timeout 60 bash "$S/gpu_bundle.sh" > "$T/b.out" 2>&1; rc=$?
    if [ $rc -eq 2 ] && grep -q "$var='$bad'" "$T/b.out"; then ok "gpu_bundle $var='$bad': exit 2"
    else fail "gpu_bundle $var='$bad': exit $rc, output: $(head -c 300 "$T/b.out")"; fi
  done
done

# FH_BUNDLE_XZ_PRESET is one digit ("-9e" would have reached xz as a preset it cannot parse, after the build).
for bad in 10 x -9e; do
  FH_BUNDLE_XZ_PRESET="$bad" FH_BUILD_DIR="$T/ptx_build" timeout 60 bash "$S/gpu_bundle.sh" > "$T/b.out" 2>&1; rc=$?
  if [ $rc -eq 2 ] && grep -q "FH_BUNDLE_XZ_PRESET='$bad'" "$T/b.out"; then ok "gpu_bundle FH_BUNDLE_XZ_PRESET='$bad': exit 2"
  else fail "gpu_bundle FH_BUNDLE_XZ_PRESET='$bad': exit $rc, output: $(head -c 300 "$T/b.out")"; fi
done
# FH_BUNDLE_OUT names a .tar.xz (the runner scripts unpack it with tar -xf).
FH_BUNDLE_OUT="$T/b.tgz" FH_BUILD_DIR="$T/ptx_build" timeout 60 bash "$S/gpu_bundle.sh" > "$T/b.out" 2>&1; rc=$?
if [ $rc -eq 2 ] && grep -q "FH_BUNDLE_OUT='$T/b.tgz'" "$T/b.out" && [ ! -e "$T/b.tgz" ]; then ok "gpu_bundle FH_BUNDLE_OUT=b.tgz: exit 2"
else fail "gpu_bundle FH_BUNDLE_OUT=b.tgz: exit $rc, output: $(head -c 300 "$T/b.out")"; fi

# ---- gpu_runner.sh: FH_NCU_CONFIGS names configurations, checked before the OUTDIR is made ----
for bad in 'adamw.*' 'adamw_int8_fp32' 'adamw_fp16_fp32_master'; do
  FH_NCU_CONFIGS="adamw_fp32_fp32_master $bad" timeout 60 bash "$S/gpu_runner.sh" "$T/ncu_out" > "$T/n.out" 2>&1; rc=$?
  if [ $rc -eq 2 ] && grep -q "FH_NCU_CONFIGS: '$bad'" "$T/n.out" && [ ! -e "$T/ncu_out" ]; then
    ok "gpu_runner FH_NCU_CONFIGS '$bad': exit 2 before any work"
  else fail "gpu_runner FH_NCU_CONFIGS '$bad': exit $rc, output: $(head -c 300 "$T/n.out")"; fi
done

echo "test_script_inputs: $oks ok, $fails failed, $notrun not run"
[ $fails -eq 0 ]
