"""Atomic file writes: a temporary file next to the target, renamed onto it only once complete.

A writer holds an exclusive ``flock`` on its temporary file ``.tmp-<random>-<name>`` while it writes.  A
process killed mid-write (even by SIGKILL) leaves that file behind, but the kernel drops its lock, so the
next save to the same target knows the file is stale and removes it (:func:`remove_stale_temps`); the
temporary file of a save still running elsewhere keeps its lock and is left alone.  Disk-full, quota and
permission errors are re-raised naming the target and saying that the previous file is unchanged.
"""
import contextlib
import os
import re

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: no locks, so stale files are never removed
    fcntl = None

__all__ = ["atomic_path", "remove_stale_temps", "TEMP_PREFIX"]

TEMP_PREFIX = ".tmp-"
_TEMP = re.compile(r"\.tmp-[0-9a-f]{12}-(.+)\Z")


@contextlib.contextmanager
def atomic_path(path, overwrite=True):
    """Yield a temporary path next to ``path``; move it onto ``path`` when the block succeeds.

    The temporary name keeps ``path``'s suffix so libraries that pick compression by extension still
    do.  On any error (or interruption) the temporary file is removed and ``path`` is untouched; an
    ``OSError`` (disk full, file too large, permission, read-only file system) is re-raised naming
    ``path``.  An existing ``path`` that cannot be opened for writing is not replaced (a read-only file:
    PermissionError), as a plain write would not replace it.  Stale temporary files of ``path`` left by
    killed processes are removed first.
    """
    path = os.fspath(path)
    if not overwrite and os.path.exists(path):
        raise FileExistsError("%r exists; pass overwrite=True (CLI: --overwrite) to replace it" % path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError("directory %r does not exist" % directory)
    if os.path.exists(path):
        try:  # a plain write would be refused: so is the replacement (no truncation, nothing changes)
            os.close(os.open(path, os.O_WRONLY | getattr(os, "O_NONBLOCK", 0)))
        except OSError as exc:
            raise _save_error(exc, path, "the file is not writable: %s" % exc.strerror) from exc
    name = os.path.basename(path)
    remove_stale_temps(directory, name)
    try:
        tmp, lock = _create_temp(directory, name)
    except OSError as exc:
        raise _save_error(exc, path, "cannot create a file in %r" % directory) from exc
    try:
        if os.path.exists(path):  # keep the permissions of the file being replaced
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        yield tmp
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        _fsync_directory(directory)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError) and path not in str(exc):
            raise _save_error(exc, path, exc.strerror or str(exc)) from exc
        raise
    finally:
        os.close(lock)


def _save_error(exc, path, what):
    """An OSError like ``exc`` (same errno, so the same subclass) saying ``path`` was not written."""
    left = "the previous file is unchanged" if os.path.exists(path) else "nothing was written"
    message = "cannot save %r: %s (%s)" % (path, what, left)
    return OSError(exc.errno, message) if exc.errno else OSError(message)


def _create_temp(directory, name):
    """Create an empty ``.tmp-<random>-<name>`` in ``directory``, mode 0666 minus the umask like open(), and
    lock it; returns ``(path, fd holding the lock)``.

    (``tempfile.mkstemp`` would make it 0600, and the saved file would keep that.)
    """
    while True:
        tmp = os.path.join(directory, "%s%s-%s" % (TEMP_PREFIX, os.urandom(6).hex(), name))
        try:
            fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        if fcntl is None:
            return tmp, fd
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if os.path.samestat(os.fstat(fd), os.lstat(tmp)):
                return tmp, fd
        except FileNotFoundError:
            pass
        os.close(fd)  # a cleaner took it for stale between its creation and our lock: make another


def remove_stale_temps(directory, name=None):
    """Remove the temporary files of killed writers in ``directory`` (of target ``name``, or of any target).

    A temporary file is stale when no process holds its lock.  Returns the paths removed.
    """
    if fcntl is None:
        return []
    removed = []
    try:
        entries = os.listdir(directory)
    except OSError:
        return removed
    for entry in entries:
        m = _TEMP.match(entry)
        if m is None or (name is not None and m.group(1) != name):
            continue
        tmp = os.path.join(directory, entry)
        try:
            fd = os.open(tmp, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            if os.path.samestat(os.fstat(fd), os.lstat(tmp)):
                os.unlink(tmp)
                removed.append(tmp)
        except OSError:
            pass  # locked: a save in progress
        finally:
            os.close(fd)
    return removed


def _fsync_directory(directory):
    """Make the rename durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
