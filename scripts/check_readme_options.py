#!/usr/bin/env python3
"""The README's list of forge-verify's options, kept in step with the command.

Usage: check_readme_options.py [ROOT] [--help-text FILE]

Reads, from the source tree at ROOT (default: this script's checkout), the options forge-verify's
parser accepts (suites/forge_verify/cli_options.cpp: the rows of option_rows(), `{"--name", ...`,
the one table the parser and --help read), its subcommands (the `std::string(argv[1]) == "name"`
dispatch in main.cpp's main()), the --help text (FILE: `forge-verify --help > FILE`, the built binary's own;
without it, the kHelpHead and kHelpTail raw strings and the rows' names) and the README's option
list (between `<!-- forge-verify options: begin` and `<!-- forge-verify options: end -->`).
It fails (exit 1, one line per difference) when
  - an accepted option is missing from --help or from the README's list,
  - the README's list names an option that neither forge-verify nor its subcommands accept,
  - a subcommand is missing from --help or from the README's list.
Exit 0 when they agree; 2 when a file or a marker is missing. No build needed (CTest
readme_options runs it on the built binary's --help as well).
"""
import os
import re
import sys

OPT = re.compile(r"(?<![\w-])(--[a-z][a-z0-9-]*)(?![\w])")
BEGIN, END = "<!-- forge-verify options: begin", "<!-- forge-verify options: end -->"


def die(msg):
    sys.stderr.write("check_readme_options.py: %s\n" % msg)
    sys.exit(2)


def read(path):
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError as e:
        die("%s: %s" % (path, e.strerror))


def accepted(src):
    return set(re.findall(r'\ba == "(--[a-z][a-z0-9-]*)"', src))


def table_rows(src):
    return set(re.findall(r'^\s*\{"(--[a-z][a-z0-9-]*)", "', src, re.M))


def main(argv):
    args = list(argv)
    help_file = None
    if "--help-text" in args:
        i = args.index("--help-text")
        if i + 1 >= len(args):
            die("--help-text needs a file")
        help_file = args[i + 1]
        del args[i:i + 2]
    if any(a.startswith("-") for a in args) or len(args) > 1:
        die("usage: check_readme_options.py [ROOT] [--help-text FILE]")
    root = args[0] if args else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    fv = os.path.join(root, "suites", "forge_verify")
    main_src = read(os.path.join(fv, "main.cpp"))
    cli_src = read(os.path.join(fv, "cli_options.cpp"))
    sub_src = read(os.path.join(fv, "diff_main.cpp")) + read(os.path.join(fv, "external_cases_main.cpp"))
    options = table_rows(cli_src)
    if not options:
        die("found no option in %s (option_rows()'s `{\"--name\", ...` rows)" % os.path.join(fv, "cli_options.cpp"))
    subcommands = set(re.findall(r'std::string\(argv\[1\]\) == "([a-z][a-z-]*)"', main_src))
    if help_file:
        help_text = read(help_file)
    else:
        parts = [re.search(r'const char\* %s = R"\((.*?)\)";' % name, cli_src, re.S) for name in ("kHelpHead", "kHelpTail")]
        if not all(parts):
            die("no kHelpHead / kHelpTail raw string in %s" % os.path.join(fv, "cli_options.cpp"))
        help_text = "\n".join([parts[0].group(1), " ".join(sorted(options)), parts[1].group(1)])
    readme = read(os.path.join(root, "README.md"))
    b, e = readme.find(BEGIN), readme.find(END)
    if b < 0 or e < b:
        die("README.md lacks the markers '%s ...' and '%s'" % (BEGIN, END))
    block = readme[b + len(BEGIN):e]
    block = block[block.find("-->") + 3:]  # the begin marker's own text is no part of the list

    problems = []
    in_help, in_readme = set(OPT.findall(help_text)), set(OPT.findall(block))
    for o in sorted(options - in_help):
        problems.append("%s: accepted by forge-verify, not in --help" % o)
    for o in sorted(options - in_readme):
        problems.append("%s: accepted by forge-verify, not in the README's option list" % o)
    for o in sorted(in_readme - options - accepted(sub_src) - table_rows(sub_src)):
        problems.append("%s: in the README's option list, accepted by neither forge-verify nor a subcommand" % o)
    for s in sorted(subcommands):
        if not re.search(r"\b%s\b" % re.escape(s), help_text):
            problems.append("subcommand %s: not in --help" % s)
        if not re.search(r"forge-verify %s\b" % re.escape(s), block):
            problems.append("subcommand %s: not in the README's option list (as `forge-verify %s ...`)" % (s, s))
    for p in problems:
        print("FAIL: " + p)
    print("check_readme_options: %d options, %d subcommands; %d difference(s)" % (len(options), len(subcommands),
                                                                               len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
