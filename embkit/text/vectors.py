"""Word vectors in the formats other tools read: word2vec text/binary export, and loading any vectors file."""
import os
import zipfile

from embkit.core import persist
from embkit.core.atomic import atomic_path

__all__ = ["save_word2vec_format", "load_vectors"]


def save_word2vec_format(kv, path, binary=False, overwrite=True):
    """Export KeyedVectors ``kv`` in word2vec text or binary format, atomically."""
    with atomic_path(path, overwrite) as tmp:
        kv.save_word2vec_format(tmp, binary=binary)


def load_vectors(path, binary=None):
    """Load word vectors from an embkit model, a word2vec text/binary file or a gensim KeyedVectors file.

    ``binary=None`` sniffs the word2vec flavour from the file.
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
        return KeyedVectors.load(path)
    if binary is None:
        binary = _sniff_binary(path)
    try:
        return KeyedVectors.load_word2vec_format(path, binary=binary)
    except (ValueError, UnicodeDecodeError, EOFError) as exc:
        raise ValueError("cannot read %r as word2vec %s format: %s"
                         % (path, "binary" if binary else "text", exc)) from exc


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
