"""Word vectors in the formats other tools read: word2vec text/binary export, and loading any vectors file."""
import os
import warnings
import zipfile

import numpy as np

from embkit.core import persist
from embkit.core.atomic import atomic_path
from embkit.core.read_errors import reading

__all__ = ["save_word2vec_format", "load_vectors"]


def save_word2vec_format(kv, path, binary=False, overwrite=True):
    """Export KeyedVectors ``kv`` in word2vec text or binary format, atomically."""
    with atomic_path(path, overwrite) as tmp:
        kv.save_word2vec_format(tmp, binary=binary)


def load_vectors(path, binary=None):
    """Load word vectors from an embkit model, a word2vec text/binary file or a gensim KeyedVectors file.

    ``binary=None`` sniffs the word2vec flavour from the file.  A gensim KeyedVectors file is a pickle:
    loading one runs code it contains, so load only files you trust.  A damaged file, a header that
    declares more vectors than the file holds, or vectors with NaN or infinity raise a ValueError naming
    the file.
    """
    from gensim.models import KeyedVectors

    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError("vectors file %r does not exist" % path)
    if zipfile.is_zipfile(path):
        model = persist.load(path)
        if not hasattr(model, "wv"):
            raise ValueError("%r holds an embkit %s, which has no word vectors" % (path, type(model).__name__))
        return model.wv
    with open(path, "rb") as fh:
        head = fh.read(2)
    if head[:1] == b"\x80":  # pickle protocol 2+: a gensim KeyedVectors.save file
        try:
            return KeyedVectors.load(path)
        except Exception as exc:  # noqa: BLE001 - unpickling damaged data raises anything
            raise ValueError("cannot read %r as a gensim KeyedVectors file: %s: %s"
                             % (path, type(exc).__name__, exc)) from exc
    if binary is None:
        binary = _sniff_binary(path)
    _check_header(path, binary)
    try:
        with reading(path, "vectors file"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)    # values beyond float32: refused below
            kv = KeyedVectors.load_word2vec_format(path, binary=binary)
    except (ValueError, UnicodeDecodeError, EOFError, OverflowError, IndexError) as exc:
        if path in str(exc):
            raise
        raise ValueError("cannot read %r as word2vec %s format: %s"
                         % (path, "binary" if binary else "text", exc)) from exc
    if not np.isfinite(kv.vectors).all():
        row = int(np.flatnonzero(~np.isfinite(kv.vectors).all(axis=1))[0])
        raise ValueError("%r: the vector of %r (number %d) holds NaN or infinity"
                         % (path, kv.index_to_key[row], row + 1))
    return kv


def _check_header(path, binary):
    """Refuse a ``count dimension`` header the file is too small to hold (gensim would allocate it first)."""
    from smart_open import open as sopen
    with reading(path, "vectors file"), sopen(path, "rb") as fh:
        header = fh.readline(256)
    fields = header.split()
    if len(fields) != 2 or not all(f.isdigit() for f in fields):
        raise ValueError("%s, line 1: expected the header '<count> <dimension>', got %r"
                         % (path, header[:80].decode("utf-8", "replace").rstrip()))
    count, dim = int(fields[0]), int(fields[1])
    if dim < 1:
        raise ValueError("%s, line 1: the dimension must be >= 1, got %d" % (path, dim))
    size = os.path.getsize(path)
    if path.endswith((".gz", ".bz2", ".xz")):
        size *= 1100  # the most a compressed byte can expand to
    # every vector takes at least a separator and 4 bytes a value (binary) or 2 (text: a digit and a blank)
    if count * (1 + dim * (4 if binary else 2)) > size:
        raise ValueError("%s, line 1: the header declares %d vectors of dimension %d, more than the file's %d "
                         "bytes can hold" % (path, count, dim, os.path.getsize(path)))


def _sniff_binary(path):
    """True if a word2vec file's first vector line is not plain text."""
    from smart_open import open as sopen
    with sopen(path, "rb") as fh:
        fh.readline()
        sample = fh.read(4096)
    if b"\x00" in sample:  # never in a text file; all-zero float32 vectors are valid UTF-8
        return True
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(sample) - 4  # a truncated multibyte char at the end is still text
    return False
