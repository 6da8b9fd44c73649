"""Errors of reading a file, turned into messages that name it.

Decompressors raise their own exceptions on a damaged ``.gz`` / ``.bz2`` / ``.xz`` file (``zlib.error``,
``EOFError``, ``lzma.LZMAError``) and I/O errors often carry no file name; :func:`reading` turns both into
a ``ValueError`` or ``OSError`` that names the file, so a reader never lets a bare one escape.
"""
import contextlib
import lzma
import zlib

__all__ = ["DECOMPRESS_ERRORS", "reading", "named_os_error"]

#: What the decompressors raise on damaged data (besides OSError, e.g. gzip.BadGzipFile).
DECOMPRESS_ERRORS = (EOFError, zlib.error, lzma.LZMAError)


def named_os_error(exc, path, what="file"):
    """An OSError like ``exc`` (same errno, hence the same subclass) whose message names ``path``."""
    message = "cannot read %s %r: %s" % (what, path, exc.strerror or exc)
    return OSError(exc.errno, message) if exc.errno else OSError(message)


@contextlib.contextmanager
def reading(path, what="file"):
    """Run the block with damaged-file and I/O errors re-raised naming ``path``.

    Errors whose message already names ``path`` pass unchanged.
    """
    path = str(path)
    try:
        yield
    except OSError as exc:
        if path in str(exc):
            raise
        raise named_os_error(exc, path, what) from exc
    except DECOMPRESS_ERRORS as exc:
        raise ValueError("%s %r is damaged (cannot decompress it: %s)" % (what, path, exc)) from exc
