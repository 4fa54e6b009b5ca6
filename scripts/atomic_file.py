"""Write a file so that only a complete one ever gets its final name (shared by the producer,
adapter, bench and merge scripts): work(tmp) writes a temp file in the same folder, which is given
a normal file's mode and renamed into place on success, and removed on failure."""
import os
import tempfile


def replace_from_temp(final_path, work, prefix=".fh."):
    """Runs work(tmp); FileNotFoundError when final_path's folder does not exist."""
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
        os.replace(tmp, final_path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
