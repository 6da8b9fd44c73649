"""Word vectors in the formats other tools read: word2vec text/binary export, and loading any vectors file
(embkit models, word2vec files, and gensim pickles when told)."""
import os

import numpy as np

from embkit.core import persist
from embkit.core.atomic import atomic_path
from embkit.core.file_kinds import identify, wrong_file
from embkit.core.pickles import check_consent
from embkit.text.word2vec_format import read_word2vec_format

__all__ = ["save_word2vec_format", "load_vectors"]


def save_word2vec_format(kv, path, binary=False, overwrite=True):
    """Export KeyedVectors ``kv`` in word2vec text or binary format, atomically."""
    with atomic_path(path, overwrite) as tmp:
        kv.save_word2vec_format(tmp, binary=binary)


def load_vectors(path, binary=None, allow_pickle=False, unicode_errors="strict", duplicates="error"):
    """Load word vectors from an embkit model, a word2vec text/binary file or (when told) a gensim KeyedVectors
    pickle; returns a ``gensim.models.KeyedVectors``.

    Parameters
    ----------
    path : str
        The file.  A ZIP archive is an embkit model; a pickle is gensim's ``KeyedVectors.save``; anything
        else is read as word2vec text or binary (:mod:`embkit.text.word2vec_format`: every row checked
        against the header).
    binary : bool or None
        The word2vec format; None decides it from the header and the whole first row.
    allow_pickle : bool
        Unpickle a gensim file.  Unpickling runs any code the file holds, so without this a pickle is a
        :class:`~embkit.core.pickles.PickleRefused` error; a file named ``*.embkit`` is never unpickled.
    unicode_errors : str
        How word2vec words that are not valid UTF-8 are decoded (``"strict"``: an error naming the row).
    duplicates : {"error", "first"}
        A word2vec word that repeats an earlier one is an error naming both rows, or (``"first"``) skipped
        with a warning counting the skipped rows.

    Raises
    ------
    ValueError
        Naming the file (and the line or vector) when it is damaged, a header declares other rows than the
        file holds, a row has another dimension, a word repeats, or a vector holds NaN or infinity.
    """
    path = os.fspath(path)
    if not os.path.exists(path) and "://" not in path:
        raise FileNotFoundError("vectors file %r does not exist" % path)
    kind = identify(path) if "://" not in path else None
    if kind is not None and kind.name == "archive":
        model = persist.load(path)
        if not hasattr(model, "wv"):
            raise ValueError("%r holds an embkit %s, which has no word vectors: %s.load reads it"
                             % (path, type(model).__name__, type(model).__name__))
        return model.wv
    if kind is not None and kind.name == "pickle":
        check_consent(path, allow_pickle, "pass allow_pickle=True")
        return _load_keyed_vectors(path)
    if kind is not None and kind.name in ("directory", "zip", "npy"):
        raise wrong_file(path, "a vectors file")
    words, vectors, _ = read_word2vec_format(path, binary, unicode_errors, duplicates)
    return keyed_vectors(words, vectors, count=len(words))


def keyed_vectors(words, vectors, count):
    """A ``gensim.models.KeyedVectors`` of ``words`` and their ``vectors`` (rows shared, not copied), with
    gensim's made-up word counts of a word2vec file (``count - index``)."""
    from gensim.models import KeyedVectors
    kv = KeyedVectors(vectors.shape[1], count=0, dtype=np.float32)
    kv.index_to_key = list(words)
    kv.key_to_index = {word: i for i, word in enumerate(kv.index_to_key)}
    kv.vectors = vectors
    kv.allocate_vecattrs(attrs=["count"], types=[np.int64])
    kv.expandos["count"][:] = count - np.arange(len(words), dtype=np.int64)
    return kv


def _load_keyed_vectors(path):
    """gensim's ``KeyedVectors.load`` of a pickle the caller consented to; ValueError naming a damaged one."""
    from gensim.models import KeyedVectors
    try:
        kv = KeyedVectors.load(path)
    except Exception as exc:  # noqa: BLE001 - unpickling damaged data raises anything
        raise ValueError("cannot read %r as a gensim KeyedVectors file: %s: %s"
                         % (path, type(exc).__name__, exc)) from exc
    if not isinstance(kv, KeyedVectors):
        raise ValueError("%r holds a %s, not gensim KeyedVectors" % (path, type(kv).__name__))
    if not np.isfinite(kv.vectors).all():
        row = int(np.flatnonzero(~np.isfinite(kv.vectors).all(axis=1))[0])
        raise ValueError("%r: the vector of %r (number %d) holds NaN or infinity"
                         % (path, kv.index_to_key[row], row + 1))
    return kv
