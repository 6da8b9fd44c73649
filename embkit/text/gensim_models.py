"""Full gensim ``Word2Vec`` models (pickles) read into embkit's ``Word2Vec``, and gensim's derived tables.

gensim itself unpickles the file (so every version gensim 4 loads, back to 1.x, loads here too); the
vocabulary, counts, settings and both output tables are then copied into an embkit model, which trains on
from there.  A gensim pickle runs code it contains when loaded: only ``Word2Vec.load`` reads one, and never a
file named as an embkit archive (:mod:`embkit.core.pickles`).
"""
import logging
import os
import pickle

import numpy as np

logger = logging.getLogger(__name__)

__all__ = ["GensimFileError", "load_gensim_model", "cum_table"]

#: gensim ``Word2Vec`` attributes that are embkit constructor parameters of the same meaning
_SETTINGS = ("vector_size", "alpha", "window", "min_count", "max_vocab_size", "sample", "seed", "workers",
             "min_alpha", "sg", "hs", "negative", "ns_exponent", "cbow_mean", "epochs", "null_word",
             "sorted_vocab", "batch_words", "compute_loss", "comment", "max_final_vocab", "shrink_windows")


class GensimFileError(ValueError, AttributeError):
    """A gensim file that does not hold a ``Word2Vec`` model, or that gensim cannot read.

    A ValueError naming the file; also the AttributeError gensim raises when a file holds another class.
    """


def load_gensim_model(cls, path, mmap=None):
    """The gensim ``Word2Vec`` saved at ``path`` as a model of class ``cls`` (embkit's ``Word2Vec``).

    Raises
    ------
    GensimFileError
        The file is truncated or damaged, holds another gensim class (``KeyedVectors``: use
        ``embkit.load_vectors``), or a model gensim cannot convert.
    """
    from gensim.models import KeyedVectors
    from gensim.models import Word2Vec as GensimWord2Vec
    from gensim.utils import SaveLoad

    path = os.fspath(path)
    try:
        loaded = SaveLoad.load(path, mmap=mmap)
    except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, IndexError, KeyError, TypeError,
            ValueError, OSError) as exc:
        raise GensimFileError("%r: gensim cannot read this file (truncated, damaged, or from an unsupported "
                              "gensim version): %s: %s" % (path, type(exc).__name__, exc)) from None
    if isinstance(loaded, KeyedVectors):
        raise GensimFileError("%r holds gensim KeyedVectors (word vectors only), not a Word2Vec model: load it "
                              "with embkit.load_vectors" % path)
    if not isinstance(loaded, GensimWord2Vec):
        raise GensimFileError("%r holds a gensim %s, not a Word2Vec model" % (path, type(loaded).__name__))
    try:
        # gensim upgrades old layouts in its own load; a file saved by an older gensim may still lack parts
        return _convert(cls, loaded, path)
    except (AttributeError, KeyError, ValueError, TypeError) as exc:
        raise GensimFileError("%r: cannot convert this gensim model: %s: %s" % (path, type(exc).__name__, exc)) \
            from None


def _convert(cls, g, path):
    from embkit.text.vocab import Vocab

    kv = g.wv
    params = {name: getattr(g, name) for name in _SETTINGS if hasattr(g, name)}
    params["vector_size"] = kv.vectors.shape[1]
    model = cls(**params)
    words = list(kv.index_to_key)
    if "count" in kv.expandos:
        counts = np.asarray(kv.expandos["count"], dtype=np.int64)
    else:
        counts = np.arange(len(words), 0, -1, dtype=np.int64)
        logger.warning("%s has no word counts; using ranks instead", path)
    model.vocab = Vocab(words, counts, raw_words=getattr(g, "corpus_total_words", None) or 0,
                        sentences=getattr(g, "corpus_count", None) or 0)
    n = len(words)
    outputs = []          # embkit's stacking: the words' output vectors first, then the tree's rows
    if model.negative:
        outputs.append(_table(g, "syn1neg", n, params["vector_size"]))
    if model.hs:
        outputs.append(_table(g, "syn1", n, params["vector_size"]))
        _check_tree(kv, counts, path)
    model._adopt_tables(np.ascontiguousarray(kv.vectors, dtype=np.float32), np.vstack(outputs))
    model.corpus_count = getattr(g, "corpus_count", None)
    model.corpus_total_words = getattr(g, "corpus_total_words", None)
    lockf = getattr(kv, "vectors_lockf", None)
    if lockf is not None:
        model.wv.vectors_lockf = np.asarray(lockf, dtype=np.float32)
    logger.info("loaded gensim Word2Vec %s: %d words, %d dimensions, loss %s", path, n, params["vector_size"],
                model.loss)
    return model


def _table(g, name, n, dim):
    table = getattr(g, name, None)
    if table is None or table.shape != (n, dim):
        raise ValueError("the model has %s set but its %s table is %s, not %d x %d"
                         % ("hs" if name == "syn1" else "negative", name,
                            "missing" if table is None else "of shape %s" % (table.shape,), n, dim))
    return np.asarray(table, dtype=np.float32)


def _check_tree(kv, counts, path):
    """Warn when gensim's stored Huffman paths differ from the tree embkit builds for the same counts."""
    from embkit._kernels.losses import huffman_paths

    if "point" not in kv.expandos:
        return
    offsets, points, _ = huffman_paths(counts)
    for i, theirs in enumerate(kv.expandos["point"]):
        if not np.array_equal(np.asarray(theirs), points[offsets[i]:offsets[i + 1]]):
            logger.warning("%s: gensim's Huffman tree differs from embkit's for the same counts (first at %r); "
                           "the hierarchical-softmax rows will be relearned", path, kv.index_to_key[i])
            return


def cum_table(counts, ns_exponent, domain=2 ** 31 - 1):
    """gensim's cumulative unigram table: ``domain * cumsum(count ** ns_exponent) / total`` as uint32."""
    weights = np.asarray(counts, dtype=np.float64) ** ns_exponent
    if weights.size == 0:
        return np.zeros(0, dtype=np.uint32)
    return np.round(np.cumsum(weights) / weights.sum() * domain).astype(np.uint32)
