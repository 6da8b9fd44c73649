"""Blending an item embedding's next-item scores with the co-occurrence counts it was trained on.

A history's blended score of item ``j`` is ``<u, W_out[j]> + w * log(1 + c_j)``, where ``u`` is the
recency-weighted sum of the history's context vectors, ``c = h @ C`` the same recency-weighted sum of the
rows ``C[i]`` of the history's items (``h``: the history's weights, :mod:`embkit.items.histories`) and
``w >= 0`` the blend weight.  The embedding score is a log-probability up to a constant, so the counts
enter on a log scale too; ``w = 0`` is the embedding alone.

``C`` is the training count matrix as :func:`blend_counts` prepares it: by default (``"cosine"``) each count
``c_ij`` divided by ``sqrt(n_i n_j)``, the geometric mean of its row's and its column's sums, and multiplied
by the mean of those sums, so that a pair of items of average popularity keeps its count while the pairs of
popular items, which the embedding's scores already favour, weigh less; ``"none"`` keeps the raw counts.

:func:`choose_count_weight` picks ``w`` from :data:`COUNT_WEIGHTS` by a validation metric; the prepared
counts and the weight are part of a trained :class:`~embkit.ItemEmbedding` (saved with it).
"""
import numpy as np
import scipy.sparse as sp

__all__ = ["COUNT_WEIGHTS", "COUNT_NORMS", "count_scores", "choose_count_weight", "blend_counts", "count_matrix_of",
           "check_count_matrix"]

#: The weights ``fit(validation=...)`` tries, smallest first (a tie keeps the smaller one).
COUNT_WEIGHTS = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
#: How :func:`blend_counts` prepares the counts: divided by the geometric mean of their row's and column's
#: sums (``"cosine"``, the default of ``ItemEmbedding(count_norm=...)``), or kept as they are (``"none"``).
COUNT_NORMS = ("cosine", "none")


def count_scores(weights, counts, weight):
    """``weight * log(1 + weights @ counts)`` as a dense float32 ``users x items`` array.

    Parameters
    ----------
    weights : scipy.sparse matrix (users x items)
        Recency weights of the histories.
    counts : scipy.sparse.csr_matrix (items x items)
        Co-occurrence counts, rows the context items.
    weight : float
    """
    summed = np.asarray((weights @ counts).toarray(), dtype=np.float32)
    return np.float32(weight) * np.log1p(summed)


def choose_count_weight(evaluate, metric, weights=COUNT_WEIGHTS):
    """The weight of ``weights`` with the highest ``evaluate(weight)[metric]`` (the first of equals), and
    the value of every weight tried as ``{weight: value}``."""
    tried = {}
    best, best_value = None, -np.inf
    for weight in weights:
        value = float(evaluate(weight)[metric])
        tried[float(weight)] = value
        if value > best_value:
            best, best_value = float(weight), value
    return best, tried


def blend_counts(matrix, norm="cosine"):
    """The float32 CSR matrix of the blend's ``C`` (see the module): counts prepared by ``norm``.

    Parameters
    ----------
    matrix : scipy.sparse matrix (items x items)
        Non-negative co-occurrence counts, rows the context items.
    norm : {"cosine", "none"}
        ``"cosine"``: ``c_ij * m / sqrt(n_i n_j)`` with ``n_i`` the sum of row ``i``, ``n_j`` the sum of column
        ``j`` (1 for an empty one) and ``m`` the counts' sum over the number of items; ``"none"``: ``c_ij``.

    Returns
    -------
    scipy.sparse.csr_matrix of float32
        Sorted indices, no stored zeros (:func:`count_matrix_of`).
    """
    if norm not in COUNT_NORMS:
        raise ValueError("count_norm must be one of %s, got %r" % (", ".join(map(repr, COUNT_NORMS)), norm))
    counts = sp.csr_matrix(matrix, dtype=np.float64, copy=True)
    if norm == "cosine":
        rows = np.asarray(counts.sum(axis=1)).ravel()
        cols = np.asarray(counts.sum(axis=0)).ravel()
        mean = counts.data.sum() / max(counts.shape[0], 1)
        counts = (sp.diags(mean / np.sqrt(np.maximum(rows, 1.0))) @ counts
                  @ sp.diags(1.0 / np.sqrt(np.maximum(cols, 1.0))))
    return count_matrix_of(counts)


def count_matrix_of(matrix):
    """The float32 CSR copy of a count matrix that a model keeps (sorted indices, no stored zeros)."""
    counts = sp.csr_matrix(matrix, dtype=np.float32, copy=True)
    counts.sum_duplicates()
    counts.eliminate_zeros()
    counts.sort_indices()
    return counts


def check_count_matrix(indptr, indices, data, n_items):
    """The ``n_items x n_items`` CSR matrix of saved arrays; ValueError naming what is wrong."""
    indptr, indices, data = np.asarray(indptr), np.asarray(indices), np.asarray(data)
    if indptr.ndim != 1 or len(indptr) != n_items + 1 or indptr.dtype.kind not in "iu":
        raise ValueError("the co-occurrence counts need %d row offsets, got %s of %s"
                         % (n_items + 1, indptr.shape, indptr.dtype))
    if (indptr[0] != 0 or np.any(np.diff(indptr) < 0) or indptr[-1] != len(indices)
            or len(indices) != len(data)):
        raise ValueError("the co-occurrence counts' row offsets do not match their %d entries" % len(data))
    if indices.dtype.kind not in "iu" or (len(indices) and (indices.min() < 0 or indices.max() >= n_items)):
        raise ValueError("the co-occurrence counts have a column outside the %d items" % n_items)
    if data.dtype.kind != "f" or not np.all(np.isfinite(data)) or (len(data) and data.min() < 0):
        raise ValueError("the co-occurrence counts must be finite numbers >= 0")
    return sp.csr_matrix((data.astype(np.float32), indices, indptr), shape=(n_items, n_items))
