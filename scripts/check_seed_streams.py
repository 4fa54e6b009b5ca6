#!/usr/bin/env python3
"""The seed discipline check: every random draw in the suites starts from a named stream.

The harness has one seed per run (forge-verify --seed; a test binary's --seed=N or FH_SEED),
and every draw comes from stream_seed(run_seed, "<owner>/<purpose>", index)
(kernels/common/seed_stream.h; scripts/seed_stream.py for the scripts). This check reads the
sources and fails on:
  - an old idiom: a hand-picked sub-seed tag (mix_seed), a seed xor-ed with a constant, or a
    seed shifted by an id (seed + k, seed * 2 + 1), which let two claims share a stream by
    accident;
  - a stream name that is not "<owner>/<purpose>" in [a-z0-9_], whose owner is neither a claim
    id of the registry nor a name in the file that draws from it (its file, function or suite);
  - one stream name drawn at two places: two draws would share one stream;
  - stream_seed / stream_state called without a literal name.
It also checks that the Python twin gives the C++ function's reference values (kept equal to
test_seed_streams.cpp's).
Usage: check_seed_streams.py ROOT       exit 0 when clean, 1 listing each finding
       check_seed_streams.py --self-test  plants each finding in a scratch tree and expects it
"""
import os
import re
import sys
import tempfile

# Where seeds are passed: the claims, the suites, the benchmarks, forge-verify, the references
# the claims draw through, and the scripts.
SCOPE = ["suites", "reference", "scripts"]
SOURCE_EXT = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh", ".py")
# The derivations kept as they were, each in one documented function: the external cases, which
# results files already answered mean (docs/EXTERNAL_PRODUCER.md, "How the inputs are drawn"),
# and the stagnation experiment's, on which its verdicts are calibrated.
LEGACY = {"suites/claims/external_common.cpp": "external_cases_v1_seed",
          "suites/claims/stagnation.cpp": "stagnation_calibrated_v1_seed"}
# Lines that xor a key on purpose: a test of the generator itself, not a draw.
KEY_TESTS = {"suites/cpu/test_bf16_philox.cpp": "base.seed ^"}  # one key bit flipped: Philox's avalanche
# Streams two producers draw on purpose, one site each, so that they read the same values: the
# convergence runs' training windows, in the harness (forge-model-step) and its torch reference.
SHARED = {"convergence_parity/train_windows": {"suites/model_step/token_data.h", "scripts/torch_train_reference.py"}}
# Files that define or test the discipline itself rather than draw from it.
DEFINITIONS = {"scripts/seed_stream.py", "scripts/check_seed_streams.py", "suites/cpu/test_seed_streams.cpp"}

IDIOMS = [
    ("a hand-picked sub-seed tag", re.compile(r"\bmix_seed\s*\(")),
    ("a seed xor-ed with a constant", re.compile(r"\b\w*seed\w*(\(\))?\s*\^|\^\s*\w*seed\w*\b(?!\s*\()")),
    ("a seed shifted by an id", re.compile(r"\b\w*seed\w*(\(\))?\s*[-+*]\s*[\w(]")),
]
CALL = re.compile(r"\b(stream_seed|stream_state)\s*\(")
LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')
NAME = re.compile(r"^[a-z0-9_]+/[a-z0-9_]+$")
CLAIM_ID = re.compile(r'^\s*\{"([a-z0-9_]+)",', re.M)

# (run seed, name, index) -> seed: the same values as suites/cpu/test_seed_streams.cpp.
REFERENCE = [
    (20261202, "prop1_twin/inputs", 0, 0xAE82AACE32084775),
    (20261202, "prop1_twin/inputs", 1, 0xEC73D8AD1F97F114),
    (0, "", 0, 0x7261E9031E12A9D7),
]


def code_of(line, py):
    """The line without its comment (// or #) and without string literals' contents."""
    out, i, quote = [], 0, None
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\":
                i += 2
                continue
            if c == quote:
                quote = None
                out.append(c)
            i += 1
            continue
        if c in "\"'" and not (not py and c == "'"):
            quote = c
            out.append(c)
        elif (py and c == "#") or (not py and line.startswith("//", i)):
            break
        else:
            out.append(c)
        i += 1
    return "".join(out)


def call_args(text, start):
    """The text of the call's argument list that opens at text[start] == '('."""
    depth = 0
    for j in range(start, len(text)):
        if text[j] == "(":
            depth += 1
        elif text[j] == ")":
            depth -= 1
            if depth == 0:
                return text[start + 1:j]
    return text[start + 1:]


def name_argument(args):
    """The second top-level argument of a call's argument list (the stream's name)."""
    depth, parts, cur, quote = 0, [], [], None
    for c in args:
        if quote:
            cur.append(c)
            if c == quote:
                quote = None
            continue
        if c in "\"'":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(c)
    parts.append("".join(cur))
    return parts[1] if len(parts) > 1 else ""


def sources(root):
    for top in SCOPE:
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if f.endswith(SOURCE_EXT):
                    p = os.path.join(d, f)
                    yield os.path.relpath(p, root).replace(os.sep, "/"), p


def claim_ids(root):
    p = os.path.join(root, "suites/claims/registry.cpp")
    return set(CLAIM_ID.findall(open(p, encoding="utf-8").read())) if os.path.exists(p) else set()


def check(root):
    findings = []
    ids = claim_ids(root)
    where = {}  # stream name -> [rel:line]
    for rel, path in sources(root):
        if rel in DEFINITIONS:
            continue
        text = open(path, encoding="utf-8", errors="replace").read()
        py = rel.endswith(".py")
        for n, line in enumerate(text.splitlines(), 1):
            code = code_of(line, py)
            for what, rx in IDIOMS:
                if rel in KEY_TESTS and KEY_TESTS[rel] in code:
                    continue
                if rx.search(code) and not (rel in LEGACY and legacy_line(text, n, LEGACY[rel])):
                    findings.append("%s:%d: %s: %s" % (rel, n, what, line.strip()))
        for m in CALL.finditer(text):
            line_no = text.count("\n", 0, m.start()) + 1
            if re.match(r"\s*(constexpr|inline|def|FH_SPLITMIX_HD)\b", text[text.rfind("\n", 0, m.start()) + 1:m.start()]):
                continue  # a definition, not a draw
            names = LITERAL.findall(name_argument(call_args(text, m.end() - 1)))
            if not names:
                findings.append("%s:%d: %s without a literal stream name" % (rel, line_no, m.group(1)))
            stem = os.path.splitext(os.path.basename(rel))[0]
            for name in names:
                if not NAME.match(name):
                    findings.append("%s:%d: stream name '%s' is not <owner>/<purpose> in [a-z0-9_]" % (rel, line_no, name))
                    continue
                owner = name.split("/")[0]
                if owner not in ids and owner != stem and owner not in text.replace(name, ""):
                    findings.append("%s:%d: stream '%s': owner '%s' is no claim id and no name in %s"
                                    % (rel, line_no, name, owner, rel))
                where.setdefault(name, []).append("%s:%d" % (rel, line_no))
    for name, sites in sorted(where.items()):
        if name in SHARED and len(sites) == len(SHARED[name]) and {s.split(":")[0] for s in sites} == SHARED[name]:
            continue
        if len(sites) > 1:
            findings.append("stream '%s' is drawn at %d places (%s): two draws would share one stream"
                            % (name, len(sites), ", ".join(sites)))
    return findings


def legacy_line(text, n, func):
    """Whether line n lies in the body of the documented legacy function `func`."""
    lines = text.splitlines()
    for i, l in enumerate(lines):
        if re.search(r"\b%s\s*\(" % func, l) and re.match(r"\s*(uint64_t|inline|constexpr|static)", l):
            depth, j = 0, i
            while j < len(lines):
                depth += lines[j].count("{") - lines[j].count("}")
                if j + 1 == n:
                    return True
                if depth == 0 and "{" in "".join(lines[i:j + 1]):
                    break
                j += 1
    return False


def check_twin(root):
    sys.path.insert(0, os.path.join(root, "scripts"))
    try:
        import seed_stream  # noqa: E402
    except ImportError as e:
        return ["scripts/seed_stream.py: cannot import: %s" % e]
    bad = []
    for run, name, index, want in REFERENCE:
        got = seed_stream.stream_seed(run, name, index)
        if got != want:
            bad.append("scripts/seed_stream.py: stream_seed(%d, '%s', %d) = 0x%016X, the C++ function gives 0x%016X"
                       % (run, name, index, got, want))
    return bad


PLANTS = {
    "suites/claims/a_tag.cpp": ("  CaseRng rng(mix_seed(cfg.seed, 7));\n", "a hand-picked sub-seed tag"),
    "suites/claims/b_xor.cpp": ("  sc.seed = cfg.seed ^ 0x5EEDull;\n", "a seed xor-ed with a constant"),
    "suites/cpu/test_c_shift.cpp": ("  auto c = make_wgrad_case(seed + uint64_t(k), 4, 4, 4);\n", "a seed shifted by an id"),
    "scripts/d_shift.py": ("seed = args.seed * 1000 + ci\n", "a seed shifted by an id"),
    "suites/claims/e_dup.cpp": ('  auto s = stream_seed(cfg.seed, "e_dup/inputs");\n  auto t = stream_seed(cfg.seed, "e_dup/inputs", 1);\n',
                                "drawn at 2 places"),
    "suites/claims/f_name.cpp": ('  auto s = stream_seed(cfg.seed, "f_name-inputs");\n', "is not <owner>/<purpose>"),
    "suites/claims/g_owner.cpp": ('  auto s = stream_seed(cfg.seed, "someone_else/inputs");\n', "is no claim id"),
    "suites/claims/h_nolit.cpp": ("  auto s = stream_seed(cfg.seed, name);\n", "without a literal stream name"),
}
CLEAN = ('  // seed ^ 0x1 in a comment is no draw\n'
         '  auto s = stream_seed(cfg.seed, "clean/inputs", uint64_t(k));\n'
         '  std::printf("seed %llu\\n", seed);\n'
         '  const std::string t = "seed " + std::to_string(seed);\n')


def self_test():
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "suites/claims"))
        os.makedirs(os.path.join(root, "suites/cpu"))
        os.makedirs(os.path.join(root, "scripts"))
        open(os.path.join(root, "suites/claims/registry.cpp"), "w").write('      {"clean", "x",\n')
        open(os.path.join(root, "suites/claims/clean.cpp"), "w").write(CLEAN)
        clean = check(root)
        if clean:
            print("self-test: a clean tree was flagged:", clean)
            return 1
        for rel, (body, _) in PLANTS.items():
            open(os.path.join(root, rel), "w").write(body)
        found = check(root)
        missed = [rel for rel, (_, what) in PLANTS.items()
                  if not any(f.find(os.path.basename(rel)) >= 0 and what in f or
                             (what.startswith("drawn") and what in f and "e_dup" in f) for f in found)]
        if missed:
            print("self-test: planted findings not seen:", missed, "\nfound:", "\n  ".join(found))
            return 1
        print("self-test: the check sees every planted finding:")
        for f in found:
            print("  " + f)
    return 0


def main(argv):
    if len(argv) == 2 and argv[1] == "--self-test":
        return self_test()
    if len(argv) != 2 or not os.path.isdir(argv[1]):
        print(__doc__.strip().splitlines()[-2].strip(), file=sys.stderr)
        return 2
    findings = check(argv[1]) + check_twin(argv[1])
    for f in findings:
        print(f)
    if findings:
        print("check_seed_streams: %d finding(s)" % len(findings))
        return 1
    print("check_seed_streams: every draw comes from a named stream")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
