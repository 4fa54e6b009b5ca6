#!/usr/bin/env python3
"""Compare two forge-harness HDF5 reports (reports/SCHEMA.md, schema_version 1): the nightly diff.

Usage:
  compare_reports.py BASE.h5 NEW.h5 [--rename-map FILE] [--ignore-datasets] [--ignore-reasons]
                     [--json OUT]

What is compared (everything that carries a verdict):
  - the set of claims, of cases per claim, of checks per case, of datasets per case;
  - every attribute of every check: verdict, metric_name, metric, bound, reason (unless
    --ignore-reasons), and the bitwise evidence differing, max_ulp, first_diff (an attribute
    present on one side only is a difference);
  - every case attribute (rule, shape, ...) and any attribute outside the schema;
  - unless --ignore-datasets: each dataset's dtype, shape, values and attributes (description).
Values compare exactly: doubles bit for bit (so 0.0 differs from -0.0), except that any NaN
equals any NaN; strings and integers by value; an attribute's HDF5 type is part of its value.
The aggregates (verdict and n_pass/n_fail/n_not_run of /, of each claim and of each case, and
n_cases) are derived from the checks; they are compared too but listed and counted apart, so
one flipped check shows as one difference and not ten. Order (creation order) is not compared.
/meta (git_revision, host, start_time_utc, ...) is provenance: its differences are printed for
information and never count.

--rename-map FILE: lines "kind old new" (kind: claim, case, check, metric_name, dataset, attr),
applied to BASE before comparing, all at once (so "a b" and "b a" swap). A name with spaces is
quoted ('...' or "..."); '#' starts a comment. claim/case/check/dataset rename those objects
wherever the name occurs, metric_name renames the value of checks' metric_name attribute, attr
renames case attributes. Every rename applied is printed. An entry that matches nothing, a
duplicate entry, or a rename that would make two names collide is an error (exit 2), so a stale
map cannot hide drift.

Output (stdout): the renames applied, one line per difference
("PATH: FIELD: base VALUE | new VALUE"), the informational /meta differences, and a final
summary line with the counts. --json OUT also writes all of it as JSON (atomically: a temporary
file in OUT's directory renamed onto OUT), only when the exit status is 0 or 1.

Exit status: 0 identical (apart from /meta), 1 any difference, 2 usage error or a file that
cannot be read or is not a schema-1 report (one message on stderr; nothing on stdout, no JSON).

Needs python3 with h5py and numpy (Debian: python3-h5py python3-numpy).
"""
import argparse
import json
import math
import os
import shlex
import struct
import sys

PROG = "compare_reports.py"
SCHEMA_VERSION = 1
AGGREGATES = ("verdict", "n_pass", "n_fail", "n_not_run")
CHECK_REQUIRED = ("verdict", "reason", "metric_name", "metric", "bound")
RENAME_KINDS = ("claim", "case", "check", "metric_name", "dataset", "attr")


class Fatal(Exception):
    """Exit status 2: usage error, unreadable file, not a report, bad rename map."""


def fail(msg):
    raise Fatal(msg)


try:
    import h5py
    import numpy as np
except ImportError as e:  # pragma: no cover - depends on the interpreter
    sys.stderr.write("%s: cannot import %s in %s (%s); install the Debian packages python3-h5py "
                     "python3-numpy, or run it with an interpreter that has them "
                     "(e.g. /usr/bin/python3 %s ...)\n"
                     % (PROG, e.name or "h5py/numpy", sys.executable, e, sys.argv[0]))
    sys.exit(2)


# ---------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------

class Value:
    """An attribute value: its type tag ('str', 'f64', 'i64', ...), an equality key and a display."""
    __slots__ = ("tag", "key", "py")

    def __init__(self, tag, key, py):
        self.tag, self.key, self.py = tag, key, py

    def __eq__(self, other):
        return isinstance(other, Value) and self.tag == other.tag and self.key == other.key

    def __ne__(self, other):
        return not self == other

    def show(self):
        return show_py(self.py, self.tag)

    def to_json(self):
        return json_py(self.py)


def float_key(x, fmt="<d"):
    x = float(x)
    return "nan" if math.isnan(x) else struct.pack(fmt, x)


def show_py(v, tag=None):
    if v is None:
        return "<absent>"
    if isinstance(v, str):
        s = json.dumps(v, ensure_ascii=False)
    elif isinstance(v, float):
        s = repr(v)
    else:
        s = str(v)
    if tag and tag not in ("str", "f64", "i64"):
        s += " (%s)" % tag
    return s


def json_py(v):
    if isinstance(v, float) and not math.isfinite(v):
        return repr(v)  # "nan", "inf", "-inf": JSON has no such numbers
    return v


def read_attr(obj, name):
    aid = obj.attrs.get_id(name)
    dt, shape = aid.dtype, aid.shape
    v = obj.attrs[name]
    if shape == () and h5py.check_string_dtype(dt) is not None:
        if isinstance(v, bytes):
            v = v.decode("utf-8", "surrogateescape")
        return Value("str", str(v), str(v))
    if shape == () and dt.kind == "f":
        fmt = {2: "<e", 4: "<f", 8: "<d"}.get(dt.itemsize)
        tag = "f64" if dt.itemsize == 8 else "f%d" % (8 * dt.itemsize)
        if fmt is None:
            return Value(tag, np.asarray(v).tobytes(), float(v))
        return Value(tag, float_key(v, fmt), float(v))
    if shape == () and dt.kind in "iu":
        tag = "i64" if (dt.kind == "i" and dt.itemsize == 8) else "%s%d" % (dt.kind, 8 * dt.itemsize)
        return Value(tag, int(v), int(v))
    # Outside the schema (arrays, enums, compounds, empty dataspaces): compared by type and bytes.
    tag = "%s%s" % (dt.str, "" if shape is None else list(shape))
    try:
        key = np.asarray(v).tobytes()
    except Exception:
        key = repr(v)
    return Value(tag, key, repr(v))


# ---------------------------------------------------------------------------------------------
# Reading a report into plain dictionaries (insertion-ordered), checking the schema's layout
# ---------------------------------------------------------------------------------------------

class Dataset:
    __slots__ = ("dtype", "shape", "values", "attrs")

    def __init__(self, dtype, shape, values, attrs):
        self.dtype, self.shape, self.values, self.attrs = dtype, shape, values, attrs


class Case:
    __slots__ = ("attrs", "checks", "datasets")

    def __init__(self):
        self.attrs, self.checks, self.datasets = {}, {}, {}


class Claim:
    __slots__ = ("attrs", "cases")

    def __init__(self):
        self.attrs, self.cases = {}, {}


class Report:
    __slots__ = ("path", "attrs", "meta", "claims")

    def __init__(self, path):
        self.path, self.attrs, self.meta, self.claims = path, {}, {}, {}


def attrs_of(obj):
    return {name: read_attr(obj, name) for name in obj.attrs}


def members(group, where):
    """(name, object) for each member, refusing soft and external links."""
    out = []
    for name in group:
        link = group.get(name, getlink=True)
        if not isinstance(link, h5py.HardLink):
            fail("%s/%s is a %s, not a group or dataset" % (where.rstrip("/"), name,
                                                           type(link).__name__))
        out.append((name, group[name]))
    return out


def want_group(obj, where, what):
    if not isinstance(obj, h5py.Group):
        fail("%s: expected a group (%s), found %s" % (where, what, type(obj).__name__))


def open_h5(path):
    try:
        return h5py.File(path, "r", locking=False)
    except TypeError:  # h5py older than 3.5 has no locking argument
        return h5py.File(path, "r")


def load(path, read_values):
    if not os.path.exists(path):
        fail("%s: no such file" % path)
    if not os.path.isfile(path):
        fail("%s: not a regular file" % path)
    if not os.access(path, os.R_OK):
        fail("%s: not readable" % path)
    try:
        is_h5 = h5py.is_hdf5(path)
    except Exception as e:
        fail("%s: cannot read: %s" % (path, e))
    if not is_h5:
        fail("%s: not an HDF5 file" % path)
    try:
        f = open_h5(path)
    except Exception as e:
        fail("%s: cannot open as HDF5 (truncated or corrupt?): %s" % (path, e))
    try:
        with f:
            return read_report(f, path, read_values)
    except Fatal as e:
        fail("%s: not a valid schema-%d report: %s" % (path, SCHEMA_VERSION, e))
    except Exception as e:
        fail("%s: cannot read (truncated or corrupt?): %s: %s" % (path, type(e).__name__, e))


def read_report(f, path, read_values):
    r = Report(path)
    r.attrs = attrs_of(f)
    sv = r.attrs.get("schema_version")
    if sv is None:
        fail("/ has no schema_version attribute (not a forge-harness report)")
    if sv.tag != "i64" or sv.py != SCHEMA_VERSION:
        fail("schema_version is %s; this tool reads version %d" % (sv.show(), SCHEMA_VERSION))
    if "verdict" not in r.attrs:
        fail("/ has no verdict attribute")
    top = members(f, "/")
    if "meta" not in dict(top):
        fail("no /meta group")
    for name, obj in top:
        where = "/" + name
        if name == "meta":
            want_group(obj, where, "provenance")
            if len(obj):
                fail("/meta has members; it holds attributes only")
            r.meta = attrs_of(obj)
            continue
        want_group(obj, where, "a claim")
        claim = Claim()
        claim.attrs = attrs_of(obj)
        for case_name, cobj in members(obj, where):
            cwhere = where + "/" + case_name
            want_group(cobj, cwhere, "a case")
            case = Case()
            case.attrs = attrs_of(cobj)
            sub = dict(members(cobj, cwhere))
            for need in ("checks", "data"):
                if need not in sub:
                    fail("%s has no '%s' group" % (cwhere, need))
                want_group(sub[need], cwhere + "/" + need, need)
            extra = sorted(set(sub) - {"checks", "data"})
            if extra:
                fail("%s: unexpected member(s) %s" % (cwhere, ", ".join(extra)))
            for check_name, kobj in members(sub["checks"], cwhere + "/checks"):
                kwhere = cwhere + "/checks/" + check_name
                want_group(kobj, kwhere, "a check")
                if len(kobj):
                    fail("%s: a check has no members" % kwhere)
                attrs = attrs_of(kobj)
                missing = [a for a in CHECK_REQUIRED if a not in attrs]
                if missing:
                    fail("%s lacks attribute(s) %s" % (kwhere, ", ".join(missing)))
                case.checks[check_name] = attrs
            for ds_name, dobj in members(sub["data"], cwhere + "/data"):
                dwhere = cwhere + "/data/" + ds_name
                if not isinstance(dobj, h5py.Dataset):
                    fail("%s: expected a dataset, found %s" % (dwhere, type(dobj).__name__))
                values = np.asarray(dobj[()]) if read_values else None
                case.datasets[ds_name] = Dataset(dobj.dtype, tuple(dobj.shape), values,
                                                 attrs_of(dobj))
            claim.cases[case_name] = case
        r.claims[name] = claim
    return r


# ---------------------------------------------------------------------------------------------
# Rename map
# ---------------------------------------------------------------------------------------------

class Rename:
    def __init__(self, lineno, kind, old, new):
        self.lineno, self.kind, self.old, self.new = lineno, kind, old, new
        self.applied = []  # base paths where it applied

    def label(self):
        return "line %d: %s %s -> %s" % (self.lineno, self.kind, show_py(self.old),
                                         show_py(self.new))


def parse_rename_map(path):
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        fail("--rename-map %s: cannot read: %s" % (path, e))
    entries, seen = [], {}
    for lineno, line in enumerate(lines, 1):
        try:
            tok = shlex.split(line, comments=True)
        except ValueError as e:
            fail("--rename-map %s:%d: %s" % (path, lineno, e))
        if not tok:
            continue
        if len(tok) != 3:
            fail("--rename-map %s:%d: expected 'kind old new', got %d field(s): %s"
                 % (path, lineno, len(tok), line.strip()))
        kind, old, new = tok
        if kind not in RENAME_KINDS:
            fail("--rename-map %s:%d: unknown kind '%s' (one of: %s)"
                 % (path, lineno, kind, ", ".join(RENAME_KINDS)))
        if old == new:
            fail("--rename-map %s:%d: '%s' renamed to itself" % (path, lineno, old))
        if kind != "metric_name" and (not new or "/" in new or set(new) == {"."}):
            fail("--rename-map %s:%d: '%s' is not a valid name" % (path, lineno, new))
        if kind == "attr" and (old in AGGREGATES or new in AGGREGATES):
            fail("--rename-map %s:%d: %s is reserved and cannot be renamed"
                 % (path, lineno, ", ".join(n for n in (old, new) if n in AGGREGATES)))
        if kind == "claim" and new == "meta":
            fail("--rename-map %s:%d: claim name 'meta' is reserved" % (path, lineno))
        if (kind, old) in seen:
            fail("--rename-map %s:%d: %s '%s' already renamed on line %d"
                 % (path, lineno, kind, old, seen[(kind, old)]))
        seen[(kind, old)] = lineno
        entries.append(Rename(lineno, kind, old, new))
    return entries


def rename_keys(d, table, where, what):
    """d with its keys renamed through table (old -> Rename); refuses collisions."""
    out, origin = {}, {}
    for k, v in d.items():
        ren = table.get(k)
        nk = ren.new if ren else k
        if nk in out:
            fail("--rename-map: renaming gives two %ss named '%s' in %s (from '%s' and '%s')"
                 % (what, nk, where or "/", origin[nk], k))
        if ren:
            ren.applied.append(join(where, k))
        out[nk], origin[nk] = v, k
    return out


def join(*parts):
    return "/".join(p for p in parts if p)


def apply_renames(base, entries):
    t = {k: {e.old: e for e in entries if e.kind == k} for k in RENAME_KINDS}
    # Every location is named by BASE's original names.
    orig_claims = list(base.claims.items())
    base.claims = rename_keys(base.claims, t["claim"], "", "claim")
    for (claim_name, claim) in orig_claims:
        orig_cases = list(claim.cases.items())
        claim.cases = rename_keys(claim.cases, t["case"], claim_name, "case")
        for case_name, case in orig_cases:
            cpath = join(claim_name, case_name)
            case.attrs = rename_keys(case.attrs, t["attr"], cpath, "case attribute")
            for check_name, attrs in case.checks.items():
                mn = attrs.get("metric_name")
                if mn is not None and mn.tag == "str" and mn.py in t["metric_name"]:
                    e = t["metric_name"][mn.py]
                    e.applied.append(join(cpath, "checks", check_name))
                    attrs["metric_name"] = Value("str", e.new, e.new)
            case.checks = rename_keys(case.checks, t["check"], cpath + "/checks", "check")
            case.datasets = rename_keys(case.datasets, t["dataset"], cpath + "/data", "dataset")
    unmatched = [e for e in entries if not e.applied]
    if unmatched:
        fail("--rename-map: %d entr%s matched nothing in %s (stale map?):\n  %s"
             % (len(unmatched), "y" if len(unmatched) == 1 else "ies", base.path,
                "\n  ".join(e.label() for e in unmatched)))
    return [(e, p) for e in entries for p in e.applied]


# ---------------------------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------------------------

class Diff:
    __slots__ = ("cls", "path", "field", "base", "new", "note")

    def __init__(self, cls, path, field, base, new, note=""):
        self.cls, self.path, self.field = cls, path, field
        self.base, self.new, self.note = base, new, note

    def line(self):
        s = "%s: %s: base %s | new %s" % (self.path, self.field, self.base, self.new)
        return s + ("  (%s)" % self.note if self.note else "")

    def to_json(self):
        return {"class": self.cls, "path": self.path, "field": self.field,
                "base": self.base, "new": self.new, "note": self.note}


class Comparer:
    def __init__(self, ignore_datasets, ignore_reasons):
        self.ignore_datasets = ignore_datasets
        self.ignore_reasons = ignore_reasons
        self.diffs = []
        self.meta = []
        self.n = {"claims": 0, "cases": 0, "checks": 0, "datasets": 0}

    def add(self, cls, path, field, base, new, note=""):
        self.diffs.append(Diff(cls, path, field, base, new, note))

    def attrs(self, path, base, new, classify, prefix=""):
        for name in list(base) + [k for k in new if k not in base]:
            cls = classify(name)
            if cls is None:
                continue
            b, n = base.get(name), new.get(name)
            if b is None or n is None or b != n:
                self.add(cls, path or "/", (prefix if cls == "content" else "") + name,
                         b.show() if b is not None else "<absent>",
                         n.show() if n is not None else "<absent>")

    def presence(self, path, what, in_base, summary):
        self.add("content", path, what, summary if in_base else "<absent>",
                 "<absent>" if in_base else summary,
                 "%s only in %s" % (what, "base (removed)" if in_base else "new (added)"))

    def keyed(self, base, new):
        """(name, in_base, in_new) over base's order, then new's additions."""
        for k in base:
            yield k, True, k in new
        for k in new:
            if k not in base:
                yield k, False, True

    def report(self, base, new):
        self.attrs("/", base.attrs, new.attrs,
                   lambda a: "aggregate" if a in AGGREGATES else "content")
        for k in list(base.meta) + [k for k in new.meta if k not in base.meta]:
            b, n = base.meta.get(k), new.meta.get(k)
            if b is None or n is None or b != n:
                self.meta.append(Diff("meta", "/meta", k,
                                      b.show() if b is not None else "<absent>",
                                      n.show() if n is not None else "<absent>"))
        for name, ib, inew in self.keyed(base.claims, new.claims):
            if not (ib and inew):
                c = (base if ib else new).claims[name]
                self.presence(name, "claim", ib, "%d case(s), %d check(s)" % (
                    len(c.cases), sum(len(x.checks) for x in c.cases.values())))
                continue
            self.claim(name, base.claims[name], new.claims[name])

    def claim(self, path, b, n):
        self.n["claims"] += 1
        self.attrs(path, b.attrs, n.attrs,
                   lambda a: "aggregate" if a in AGGREGATES + ("n_cases",) else "content")
        for name, ib, inew in self.keyed(b.cases, n.cases):
            cpath = path + "/" + name
            if not (ib and inew):
                c = (b if ib else n).cases[name]
                self.presence(cpath, "case", ib, "%d check(s), %d dataset(s)"
                              % (len(c.checks), len(c.datasets)))
                continue
            self.case(cpath, b.cases[name], n.cases[name])

    def case(self, path, b, n):
        self.n["cases"] += 1
        self.attrs(path, b.attrs, n.attrs,
                   lambda a: "aggregate" if a in AGGREGATES else "content", prefix="attr ")
        for name, ib, inew in self.keyed(b.checks, n.checks):
            kpath = path + "/checks/" + name
            if not (ib and inew):
                v = (b if ib else n).checks[name].get("verdict")
                self.presence(kpath, "check", ib, "verdict %s" % (v.show() if v else "?"))
                continue
            self.n["checks"] += 1
            self.attrs(kpath, b.checks[name], n.checks[name],
                       lambda a: None if (a == "reason" and self.ignore_reasons) else "content")
        if self.ignore_datasets:
            return
        for name, ib, inew in self.keyed(b.datasets, n.datasets):
            dpath = path + "/data/" + name
            if not (ib and inew):
                d = (b if ib else n).datasets[name]
                self.presence(dpath, "dataset", ib, "%s %s" % (d.dtype.str, list(d.shape)))
                continue
            self.dataset(dpath, b.datasets[name], n.datasets[name])

    def dataset(self, path, b, n):
        self.n["datasets"] += 1
        same_type = b.dtype == n.dtype
        if not same_type:
            self.add("content", path, "dtype", b.dtype.str, n.dtype.str)
        if b.shape != n.shape:
            self.add("content", path, "shape", list(b.shape), list(n.shape))
        if same_type and b.shape == n.shape:
            self.values(path, b.values, n.values)
        self.attrs(path, b.attrs, n.attrs, lambda a: "content", prefix="attr ")

    def values(self, path, a, b):
        if a.size == 0:
            return
        kind = a.dtype.kind
        if kind == "f":
            ua = np.ascontiguousarray(a).view("u%d" % a.dtype.itemsize)
            ub = np.ascontiguousarray(b).view("u%d" % b.dtype.itemsize)
            eq = (ua == ub) | (np.isnan(a) & np.isnan(b))
        elif kind in "iubOSU":
            eq = a == b
        else:
            if a.tobytes() == b.tobytes():
                return
            eq = np.zeros(a.shape, dtype=bool)
        ne = ~np.asarray(eq)
        count = int(np.count_nonzero(ne))
        if count == 0:
            return
        first = tuple(int(i) for i in np.argwhere(ne)[0]) if ne.ndim else ()
        note = "%d of %d element(s) differ, first at index %s" % (count, a.size, list(first))
        if kind in "fiu":
            with np.errstate(all="ignore"):
                d = np.abs(a[ne].astype(np.float64) - b[ne].astype(np.float64))
            d = d[np.isfinite(d)]
            if d.size:
                note += ", max |difference| %r" % float(d.max())

        def at(x):
            v = x[first] if first else x[()]
            return show_py(v.item() if hasattr(v, "item") else v)
        self.add("content", path, "values", at(a), at(b), note)


# ---------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------

def write_json_atomic(path, obj):
    d = os.path.dirname(os.path.abspath(path))
    tmp = os.path.join(d, ".%s.tmp.%d" % (os.path.basename(path), os.getpid()))
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(obj, fh, indent=1, ensure_ascii=False, allow_nan=False)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except (OSError, ValueError) as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        fail("--json %s: cannot write: %s" % (path, e))


def main(argv):
    ap = argparse.ArgumentParser(
        prog=PROG, description="Compare two forge-harness HDF5 reports (reports/SCHEMA.md). "
        "Exit 0 identical, 1 different, 2 error.")
    ap.add_argument("base", metavar="BASE.h5")
    ap.add_argument("new", metavar="NEW.h5")
    ap.add_argument("--rename-map", metavar="FILE",
                    help="lines 'kind old new' applied to BASE first (kind: %s)"
                    % ", ".join(RENAME_KINDS))
    ap.add_argument("--ignore-datasets", action="store_true",
                    help="do not compare the per-case datasets under data/")
    ap.add_argument("--ignore-reasons", action="store_true",
                    help="do not compare the checks' reason attribute")
    ap.add_argument("--json", metavar="OUT", help="also write the result as JSON to OUT")
    args = ap.parse_args(argv)  # exits 2 with a usage message on a usage error

    entries = parse_rename_map(args.rename_map) if args.rename_map else []
    base = load(args.base, not args.ignore_datasets)
    new = load(args.new, not args.ignore_datasets)
    applied = apply_renames(base, entries) if args.rename_map else []

    cmp_ = Comparer(args.ignore_datasets, args.ignore_reasons)
    cmp_.report(base, new)
    content = [d for d in cmp_.diffs if d.cls == "content"]
    aggregate = [d for d in cmp_.diffs if d.cls == "aggregate"]
    total = len(cmp_.diffs)
    status = 1 if total else 0

    summary = ("summary: compared %d claim(s), %d case(s), %d check(s), %d dataset(s)%s; "
               "%d difference(s) (%d content, %d aggregate); %d /meta difference(s) "
               "(informational); %s"
               % (cmp_.n["claims"], cmp_.n["cases"], cmp_.n["checks"], cmp_.n["datasets"],
                  " (datasets ignored)" if args.ignore_datasets else "", total, len(content),
                  len(aggregate), len(cmp_.meta), "DIFFERENT" if status else "IDENTICAL"))

    if args.json:
        write_json_atomic(args.json, {
            "base": args.base, "new": args.new, "identical": status == 0,
            "options": {"rename_map": args.rename_map, "ignore_datasets": args.ignore_datasets,
                        "ignore_reasons": args.ignore_reasons},
            "renames_applied": [{"line": e.lineno, "kind": e.kind, "old": e.old, "new": e.new,
                                 "at": p} for e, p in applied],
            "differences": [d.to_json() for d in content],
            "aggregate_differences": [d.to_json() for d in aggregate],
            "meta_differences": [{"key": d.field, "base": d.base, "new": d.new}
                                 for d in cmp_.meta],
            "counts": dict(cmp_.n, differences=total, content_differences=len(content),
                           aggregate_differences=len(aggregate),
                           meta_differences=len(cmp_.meta)),
            "summary": summary,
        })

    out = ["base: %s" % args.base, "new:  %s" % args.new]
    if applied:
        out.append("renames applied to base (%d):" % len(applied))
        out += ["  %s %s -> %s at %s  [map line %d]" % (e.kind, show_py(e.old), show_py(e.new),
                                                         p, e.lineno) for e, p in applied]
    if content:
        out.append("differences (%d):" % len(content))
        out += ["  " + d.line() for d in content]
    if aggregate:
        out.append("aggregate differences (%d; verdicts and counts derived from the checks):"
                   % len(aggregate))
        out += ["  " + d.line() for d in aggregate]
    if not total:
        out.append("no differences")
    if cmp_.meta:
        out.append("/meta differences (%d, informational, not counted):" % len(cmp_.meta))
        out += ["  meta %s: base %s | new %s" % (d.field, d.base, d.new) for d in cmp_.meta]
    out.append(summary)
    sys.stdout.write("\n".join(out) + "\n")
    sys.stdout.flush()
    return status


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Fatal as e:
        sys.stderr.write("%s: error: %s\n" % (PROG, e))
        sys.exit(2)
