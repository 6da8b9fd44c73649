"""Reading members of a ZIP archive that may be damaged or hostile (model files, checkpoints).

Every problem is a :class:`ValueError` naming the archive (and the member): a member name with ``..``,
an absolute path or a backslash, a repeated name, a size that the archive cannot hold (a "huge declared
size", a stored member declaring other than its bytes, a compressed one inflating more than
:data:`MAX_RATIO` times), a member past the end of the file, a CRC mismatch, JSON that does not parse or
nests too deeply, and ``.npy`` members that are not plain numeric arrays (object or structured dtypes),
whose header disagrees with the member's size, or that are cut short.  An array's header is read first
(:func:`read_npy_header`), so its declared shape can be checked before its data is inflated; the data is
then read straight into its final buffer, never more than declared, so a member never costs more memory
than the array it holds.
"""
import json
import os
import warnings
import zipfile
import zlib

import numpy as np

__all__ = ["ZIP_ERRORS", "MAX_RATIO", "check_members", "read_json", "read_npy_header", "read_npy", "NpyHeader"]

#: Exceptions of ``zipfile`` and the decompressors that mean "damaged archive".
ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, zlib.error, NotImplementedError,
              RuntimeError, UnicodeDecodeError)
#: Most bytes a compressed member may inflate to per compressed byte.  embkit writes its archives stored
#: (not compressed); an archive compressed again by a zip tool inflates its tables about 1.1 times and its
#: JSON a few times, while a decompression bomb inflates about 1000 times.
MAX_RATIO = 100
#: Largest JSON member (config.json, vocab.json).
MAX_JSON_BYTES = 1 << 30
#: Bytes inflated per read of an array (a read never asks for more than the array still needs).
_CHUNK = 1 << 24
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
        if info.compress_type == zipfile.ZIP_STORED:
            if info.file_size != info.compress_size:
                raise _fail(path, "member %r is stored but declares %d bytes for its %d"
                            % (name, info.file_size, info.compress_size))
        elif info.file_size > info.compress_size * MAX_RATIO + 4096:
            raise _fail(path, "member %r would inflate %d bytes to %d, more than %d times (a decompression "
                        "bomb?); embkit writes its archives uncompressed"
                        % (name, info.compress_size, info.file_size, MAX_RATIO))


def _member(zf, name, path):
    try:
        return zf.getinfo(name)
    except KeyError:
        raise _fail(path, "no member %r" % name) from None


def read_json(zf, name, path, limit=MAX_JSON_BYTES):
    """The JSON value of member ``name`` (at most ``limit`` bytes, read in pieces: never more than declared)."""
    info = _member(zf, name, path)
    if info.file_size > limit:
        raise _fail(path, "member %r declares %d bytes, more than the %d a JSON member may hold"
                    % (name, info.file_size, limit))
    with zf.open(info) as member:
        data = _read_exactly(member, info.file_size, path, name)
        if member.read(1):
            raise _fail(path, "member %r is longer than it declares" % name)
    try:
        return json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise _fail(path, "member %r is not valid JSON: %s" % (name, str(exc)[:200])) from None


def read_npy_header(zf, name, path):
    """The declared array of ``.npy`` member ``name`` without reading its data (only the header is inflated).

    Returns
    -------
    NpyHeader
        Shape, dtype and layout, checked: plain numbers, at most 2 dimensions, and a size that is exactly
        the member's.
    """
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
        offset = member.tell()
    if dtype.hasobject or dtype.fields is not None or dtype.kind not in _NUMERIC_KINDS or dtype.subdtype:
        raise _fail(path, "member %r holds %s values, not plain numbers" % (name, dtype))
    if len(shape) > 2 or any(n < 0 for n in shape):
        raise _fail(path, "member %r has shape %s (at most 2 dimensions)" % (name, shape))
    nbytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
    if offset + nbytes != info.file_size:
        raise _fail(path, "member %r: its header declares shape %s of %s (%d bytes) but it holds %d"
                    % (name, shape, dtype, nbytes, info.file_size - offset))
    return NpyHeader(name, tuple(shape), dtype, fortran, offset, nbytes)


class NpyHeader:
    """What a ``.npy`` member declares: ``shape``, ``dtype``, ``fortran`` order, data ``offset`` and ``nbytes``."""

    def __init__(self, name, shape, dtype, fortran, offset, nbytes):
        self.name, self.shape, self.dtype, self.fortran = name, shape, dtype, fortran
        self.offset, self.nbytes = offset, nbytes

    @property
    def ndim(self):
        return len(self.shape)

    def __repr__(self):
        return "NpyHeader(%r, %s, %s)" % (self.name, self.shape, self.dtype)


def read_npy(zf, header, path):
    """The array ``header`` declares (:func:`read_npy_header`): numeric, native byte order, C-contiguous and
    writable, read straight into its final buffer (the member is never inflated past the declared size)."""
    name, shape, dtype = header.name, header.shape, header.dtype
    try:
        array = np.empty(shape[::-1] if header.fortran else shape, dtype=dtype)
    except MemoryError:
        raise MemoryError("%r: not enough memory for member %r, an array of shape %s (%d bytes)"
                          % (os.fspath(path), name, shape, header.nbytes)) from None
    view = memoryview(array.reshape(-1).view(np.uint8))
    with zf.open(_member(zf, name, path)) as member:
        _read_exactly(member, header.offset, path, name)
        done = 0
        while done < header.nbytes:
            got = member.readinto(view[done:done + _CHUNK])
            if not got:
                raise _fail(path, "member %r is cut short" % name)
            done += got
        if member.read(1):
            raise _fail(path, "member %r is longer than its header says" % name)
    if header.fortran:
        array = array.T
    return np.ascontiguousarray(array, dtype=dtype.newbyteorder("="))


def _read_exactly(member, n, path, name):
    data = member.read(n)
    if len(data) != n:
        raise _fail(path, "member %r is cut short" % name)
    return data
