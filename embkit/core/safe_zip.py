"""Reading members of a ZIP archive that may be damaged or hostile (model files, checkpoints).

Every problem is a :class:`ValueError` naming the archive (and the member): a member name with ``..``,
an absolute path or a backslash, a repeated name, a size that the archive cannot hold (a "huge declared
size"), a member past the end of the file, a CRC mismatch, JSON that does not parse or nests too deeply,
and ``.npy`` members that are not plain numeric arrays (object or structured dtypes), whose header
disagrees with the member's size, or that are cut short.  Arrays are read straight into their final
buffer, so a member never costs more memory than the array it holds.
"""
import json
import os
import warnings
import zipfile
import zlib

import numpy as np

__all__ = ["ZIP_ERRORS", "check_members", "read_json", "read_npy"]

#: Exceptions of ``zipfile`` and the decompressors that mean "damaged archive".
ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, zlib.error, NotImplementedError,
              RuntimeError, UnicodeDecodeError)
#: Most bytes a member can inflate to per compressed byte (deflate's limit is about 1032).
_MAX_RATIO = 1100
_NUMERIC_KINDS = "biuf"


def _fail(path, message):
    return ValueError("%r is not a valid embkit archive: %s" % (os.fspath(path), message))


def _unsafe_name(name):
    parts = name.replace("\\", "/").split("/")
    return (not name or name.startswith("/") or "\\" in name or "\x00" in name or ".." in parts
            or (len(name) > 1 and name[1] == ":"))


def check_members(zf, path):
    """Check every member's name and declared sizes against the archive before anything is read.

    Raises
    ------
    ValueError
        Naming ``path`` and the first bad member.
    """
    archive_size = os.path.getsize(path)
    seen = set()
    for info in zf.infolist():
        name = info.filename
        if _unsafe_name(name):
            raise _fail(path, "member name %r is not a plain file name" % name)
        if name in seen:
            raise _fail(path, "member %r appears twice" % name)
        seen.add(name)
        if info.flag_bits & 0x1:
            raise _fail(path, "member %r is encrypted" % name)
        if info.header_offset + info.compress_size > archive_size:
            raise _fail(path, "member %r extends past the end of the file (truncated?)" % name)
        stored = info.compress_type == zipfile.ZIP_STORED
        limit = info.compress_size if stored else info.compress_size * _MAX_RATIO + 1024
        if info.file_size > limit:
            raise _fail(path, "member %r declares %d bytes, more than its %d stored bytes can hold"
                        % (name, info.file_size, info.compress_size))


def _member(zf, name, path):
    try:
        return zf.getinfo(name)
    except KeyError:
        raise _fail(path, "no member %r" % name) from None


def read_json(zf, name, path):
    """The JSON value of member ``name``."""
    _member(zf, name, path)
    try:
        return json.loads(zf.read(name).decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise _fail(path, "member %r is not valid JSON: %s" % (name, str(exc)[:200])) from None


def read_npy(zf, name, path):
    """The array of ``.npy`` member ``name``: numeric, native byte order, C-contiguous and writable."""
    info = _member(zf, name, path)
    with zf.open(info) as member, warnings.catch_warnings():
        warnings.simplefilter("ignore")      # numpy warns about headers written by Python 2
        try:
            version = np.lib.format.read_magic(member)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(member)
            elif version in ((2, 0), (3, 0)):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(member)
            else:
                raise ValueError("unknown .npy version %s" % (version,))
        except Exception as exc:  # noqa: BLE001 - numpy's header parser raises ValueError, TokenError, ...
            raise _fail(path, "member %r is not a .npy array: %s" % (name, str(exc)[:200])) from None
        if dtype.hasobject or dtype.fields is not None or dtype.kind not in _NUMERIC_KINDS or dtype.subdtype:
            raise _fail(path, "member %r holds %s values, not plain numbers" % (name, dtype))
        if len(shape) > 2 or any(n < 0 for n in shape):
            raise _fail(path, "member %r has shape %s (at most 2 dimensions)" % (name, shape))
        nbytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
        if member.tell() + nbytes != info.file_size:
            raise _fail(path, "member %r: its header declares shape %s of %s (%d bytes) but it holds %d"
                        % (name, shape, dtype, nbytes, info.file_size - member.tell()))
        array = np.empty(shape[::-1] if fortran else shape, dtype=dtype)
        view = memoryview(array.reshape(-1).view(np.uint8))
        done = 0
        while done < nbytes:
            got = member.readinto(view[done:])
            if not got:
                raise _fail(path, "member %r is cut short" % name)
            done += got
        if member.read(1):
            raise _fail(path, "member %r is longer than its header says" % name)
    if fortran:
        array = array.T
    return np.ascontiguousarray(array, dtype=dtype.newbyteorder("="))
