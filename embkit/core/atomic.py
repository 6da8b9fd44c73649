"""Atomic file writes: a temporary file next to the target, renamed onto it only once complete."""
import contextlib
import os

__all__ = ["atomic_path"]


@contextlib.contextmanager
def atomic_path(path, overwrite=True):
    """Yield a temporary path next to ``path``; move it onto ``path`` when the block succeeds.

    The temporary name keeps ``path``'s suffix so libraries that pick compression by extension still
    do.  On any error (or interruption) the temporary file is removed and ``path`` is untouched.
    """
    path = os.fspath(path)
    if not overwrite and os.path.exists(path):
        raise FileExistsError("%r exists; pass overwrite=True (CLI: --overwrite) to replace it" % path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError("directory %r does not exist" % directory)
    tmp = _create_temp(directory, os.path.basename(path))
    try:
        if os.path.exists(path):  # keep the permissions of the file being replaced
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        yield tmp
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _create_temp(directory, name):
    """Create an empty ``.tmp-<random>-<name>`` in ``directory``, mode 0666 minus the umask like open().

    (``tempfile.mkstemp`` would make it 0600, and the saved file would keep that.)
    """
    while True:
        tmp = os.path.join(directory, ".tmp-%s-%s" % (os.urandom(6).hex(), name))
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return tmp
        except FileExistsError:
            continue
