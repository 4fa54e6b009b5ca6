"""Write a file so that only a complete one ever gets its final name (shared by the producer,
adapter, bench, merge and render scripts): work(tmp) writes a temp file in the same folder, which
is given a normal file's mode and renamed into place on success, and removed on failure.

Also the scripts' file policy, so that every script refuses the same things the same way:
check_input accepts only an existing regular file (a folder, FIFO, device or socket is refused
before it is opened, so a FIFO cannot hang a script); check_output refuses an output that is a
folder, symlink, device, FIFO or socket, an existing file unless force, a file that is one of the
run's inputs (same device and inode: another spelling or a hard link is caught), and a missing or
read-only folder. A refusal raises BadInput, whose message names the file; the scripts print it
as one line and exit 2.
"""
import errno
import os
import stat
import sys
import tempfile


class BadInput(Exception):
    """Bad input or a refused output (the message names the file): exit 2, nothing written."""


def file_kind(mode):
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link"),
                       (stat.S_ISREG, "a regular file")):
        if test(mode):
            return name
    return "not a regular file"


def check_input(path, what="input"):
    """The stat of path when it is a readable regular file (symlinks followed), else BadInput."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise BadInput("%s: no such %s file" % (path, what))
    except OSError as e:
        raise BadInput("%s: cannot read the %s file (%s)" % (path, what, e.strerror))
    if not stat.S_ISREG(st.st_mode):
        raise BadInput("%s: the %s is %s, not a regular file" % (path, what, file_kind(st.st_mode)))
    if not os.access(path, os.R_OK):
        raise BadInput("%s: the %s file is not readable" % (path, what))
    return st


def same_file(path, inputs):
    """The input that is the same file as path (device and inode), or None."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    for p in inputs:
        try:
            ist = os.stat(p)
        except OSError:
            continue
        if (ist.st_dev, ist.st_ino) == (st.st_dev, st.st_ino):
            return p
    return None


def check_output(path, inputs=(), force=False):
    """Refuses (BadInput) an output path the scripts must not write; see the module's text."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise BadInput("%s: the output's folder %s does not exist" % (path, folder))
    if not os.access(folder, os.W_OK | os.X_OK):
        raise BadInput("%s: the output's folder %s is not writable" % (path, folder))
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise BadInput("%s: the output is %s: refused (only a regular file is replaced)" % (path, file_kind(st.st_mode)))
    twin = same_file(path, inputs)
    if twin is not None:
        raise BadInput("%s: the output is the same file as the input %s: refused" % (path, twin))
    if not force:
        raise BadInput("%s: the output exists (--force replaces it)" % path)


def replace_from_temp(final_path, work, prefix=".fh.", replace=True):
    """Runs work(tmp); FileNotFoundError when final_path's folder does not exist. With
    replace=False the temp file is hard-linked to final_path, which fails (BadInput) when a file
    of that name appeared meanwhile, instead of renamed over it."""
    out_dir = os.path.dirname(os.path.abspath(final_path))
    if not os.path.isdir(out_dir):
        raise FileNotFoundError("output folder '%s' does not exist" % out_dir)
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=".tmp", dir=out_dir)
    os.close(fd)
    try:
        work(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes it 0600
        if replace:
            os.replace(tmp, final_path)
        else:
            try:
                os.link(tmp, final_path)
            except FileExistsError:
                raise BadInput("%s: a file of that name appeared while it was written: not replaced" % final_path)
            except OSError as e:
                if e.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                    raise
                # A filesystem without hard links: the check and the rename are as close as it allows.
                if os.path.lexists(final_path):
                    raise BadInput("%s: a file of that name appeared while it was written: not replaced" % final_path)
                os.replace(tmp, final_path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_output(final_path, work, inputs=(), force=False, prefix=".fh."):
    """check_output, then replace_from_temp without replacing anything unless force. An OSError on
    the way (a full disk, a folder made read-only meanwhile, root on a read-only mount) becomes
    BadInput naming the file."""
    check_output(final_path, inputs, force)
    try:
        replace_from_temp(final_path, work, prefix=prefix, replace=force)
    except OSError as e:
        raise BadInput("%s: cannot write it (%s)" % (final_path, e.strerror or e))


# The report schema versions the scripts read (reports/SCHEMA.md: 3 is current, 1 and 2 still read).
REPORT_SCHEMAS = (1, 2, 3)


def open_report(path):
    """An open h5py.File of a forge-harness report (a regular file, HDF5, /meta, a verdict and a
    schema_version the scripts read), else BadInput naming the file and what is wrong."""
    import numbers
    check_input(path, "report")
    try:
        import h5py
    except ImportError:
        raise BadInput("%s: cannot be read: the Python module h5py is missing (Debian: apt-get install python3-h5py)"
                       % path)
    try:
        f = h5py.File(path, "r")
    except Exception as e:  # h5py raises OSError, and others on some damaged files
        raise BadInput("%s is not an HDF5 file (%s)" % (path, str(e).splitlines()[0] if str(e) else type(e).__name__))
    try:
        if "schema_version" not in f.attrs or "verdict" not in f.attrs or not isinstance(f.get("meta"), h5py.Group):
            raise BadInput("%s is HDF5 but not a forge-harness report (no schema_version, verdict or /meta; "
                           "see reports/SCHEMA.md)" % path)
        v = f.attrs["schema_version"]
        if not isinstance(v, numbers.Integral) or int(v) not in REPORT_SCHEMAS:
            raise BadInput("%s: report schema_version %r, these scripts read %s (reports/SCHEMA.md)"
                           % (path, v.tolist() if hasattr(v, "tolist") else v,
                              " and ".join(str(s) for s in REPORT_SCHEMAS)))
    except BaseException:
        f.close()
        raise
    return f


def run_main(prog, main, *args):
    """Exits with main(*args)'s status; BadInput -> its message as one line on stderr and 2, any
    other exception -> one 'internal error' line and 3. The scripts never show a traceback."""
    try:
        rc = main(*args)
    except BadInput as e:
        sys.stderr.write("%s: %s\n" % (prog, " ".join(str(e).split())))
        rc = 2
    except KeyboardInterrupt:
        sys.stderr.write("%s: interrupted\n" % prog)
        rc = 130
    except Exception as e:
        sys.stderr.write("%s: internal error: %s: %s\n" % (prog, type(e).__name__, " ".join(str(e).split())))
        rc = 3
    sys.exit(rc)


def parse_positional(argv, usage, n_min, n_max):
    """(positionals, force) of argv[1:]: --force anywhere, -h prints usage, '--' ends the options;
    an unknown option or a wrong count is BadInput (exit 2) with the usage."""
    pos, force, opts = [], False, True
    for a in argv[1:]:
        if opts and a == "--":
            opts = False
        elif opts and a == "--force":
            force = True
        elif opts and a in ("-h", "--help"):
            print(usage)
            sys.exit(0)
        elif opts and a.startswith("-") and a != "-":
            raise BadInput("unknown option %s (usage: %s)" % (a, usage))
        else:
            pos.append(a)
    if not n_min <= len(pos) <= n_max:
        raise BadInput("expected %s arguments, got %d (usage: %s)"
                       % (n_min if n_min == n_max else "%d to %d" % (n_min, n_max), len(pos), usage))
    return pos, force
