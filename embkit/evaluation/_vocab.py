"""Vocabulary lookups shared by the similarity and analogy evaluations."""

import numpy as np


def n_candidates(kv, restrict_vocab):
    """Number of leading vocabulary entries that take part in an evaluation."""
    total = len(kv.index_to_key)
    if restrict_vocab is None:
        return total
    restrict_vocab = int(restrict_vocab)
    if restrict_vocab < 0:
        raise ValueError('restrict_vocab must be >= 0 or None, got %d' % restrict_vocab)
    return min(total, restrict_vocab)


def _fold(key):
    return key.upper() if isinstance(key, str) else key


def build_lookup(kv, restrict_vocab=None, case_insensitive=True):
    """Map words to row indices among the first `restrict_vocab` entries.

    Parameters
    ----------
    kv : gensim.models.KeyedVectors
        The vectors; ``kv.index_to_key`` gives the candidate order.
    restrict_vocab : int or None
        Only the first `restrict_vocab` keys are considered (all when None).
    case_insensitive : bool
        If True, keys are folded to upper case and a folded key maps to its
        first (lowest-index, normally most frequent) variant.

    Returns
    -------
    lookup : dict
        Folded (or exact) key -> row index.
    canonical : numpy.ndarray
        For each of the first ``n`` rows, the index the lookup gives for its
        folded key (``canonical[i] == i`` unless row `i` is a later case
        variant of an earlier key).
    """
    n = n_candidates(kv, restrict_vocab)
    keys = kv.index_to_key[:n]
    canonical = np.arange(n, dtype=np.int64)
    if not case_insensitive:
        return {key: i for i, key in enumerate(keys)}, canonical
    lookup = {}
    for i, key in enumerate(keys):
        first = lookup.setdefault(_fold(key), i)
        if first != i:
            canonical[i] = first
    return lookup, canonical


def fold_word(word, case_insensitive):
    """Fold a query word the same way :func:`build_lookup` folds keys."""
    return _fold(word) if case_insensitive else word


def row_norms(kv, n):
    """L2 norms of the first `n` rows, reusing ``kv.norms`` when it is filled in."""
    norms = getattr(kv, 'norms', None)
    if norms is not None and len(norms) == len(kv.vectors):
        return np.asarray(norms[:n])
    return np.linalg.norm(kv.vectors[:n], axis=1)


def unit_rows(vectors, norms):
    """Rows of `vectors` divided by `norms` (zero rows stay zero), as float32."""
    safe = np.where(norms > 0, norms, 1).astype(vectors.dtype, copy=False)
    out = vectors / safe[:, None]
    return np.ascontiguousarray(out, dtype=np.float32)
