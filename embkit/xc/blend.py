"""Blending label scores: weighted sums of dense and sparse score matrices, their top k, and the weights that
rank held-out rows best.

:func:`choose_weights` tries every point of a grid on the simplex (steps of ``1 / steps``) and keeps the one
whose blend has the highest mean of P@1, P@3 and P@5 on rows the heads were not fitted on; ties go to the
point found first, the grid being walked from the first head's corner.
"""
import itertools

import numpy as np
import scipy.sparse as sp

from embkit._kernels.rows import top_k_rows, top_k_sparse_rows

__all__ = ["blend", "top_k", "choose_weights", "simplex_grid", "precision_sum"]


def blend(scores, weights):
    """``sum(w * S)`` over the score matrices with a nonzero weight: dense if any of them is, else csr."""
    total = None
    for S, w in zip(scores, weights):
        if w == 0:
            continue
        part = S * np.float32(w)
        total = part if total is None else total + part
    if total is None:
        raise ValueError("every blend weight is zero")
    return sp.csr_matrix(total, dtype=np.float32) if sp.issparse(total) else np.asarray(total, dtype=np.float32)


def top_k(S, k, n_threads=1):
    """``(ids int64, scores float32)`` of the ``k`` best labels of every row of ``S`` (dense or csr), best
    first; a sparse row with fewer than ``k`` stored scores is padded with id -1."""
    if sp.issparse(S):
        S = sp.csr_matrix(S)
        return top_k_sparse_rows(S.indptr.astype(np.int64), S.indices.astype(np.int32), S.data.astype(np.float32),
                                 k, n_threads)
    return top_k_rows(np.ascontiguousarray(S, dtype=np.float32), k, n_threads)


def simplex_grid(n, steps):
    """Every weight vector of ``n`` nonnegative multiples of ``1 / steps`` summing to one, from the first
    coordinate's corner on."""
    points = [p for p in itertools.product(range(steps, -1, -1), repeat=n) if sum(p) == steps]
    return [tuple(v / steps for v in p) for p in points]


def precision_sum(Y, ids, ks=(1, 3, 5)):
    """``sum over k of P@k`` of the top labels ``ids`` (``n x max(ks)``, -1 for none) against ``Y`` (csr)."""
    Y = sp.csr_matrix(Y)
    n_labels = np.int64(Y.shape[1])
    truth = np.repeat(np.arange(Y.shape[0], dtype=np.int64), np.diff(Y.indptr)) * n_labels + Y.indices
    truth.sort()
    asked = np.arange(len(ids), dtype=np.int64)[:, None] * n_labels + ids
    where = np.minimum(np.searchsorted(truth, asked), max(len(truth) - 1, 0))
    hit = (ids >= 0) & (truth[where] == asked) if len(truth) else np.zeros(ids.shape, dtype=bool)
    return float(sum(hit[:, :k].sum() / (k * max(len(ids), 1)) for k in ks))


def choose_weights(scores, Y, steps=10, ks=(1, 3, 5), n_threads=1):
    """The weights (a tuple, one per score matrix) of the blend of ``scores`` (each ``n x L`` for the rows of
    ``Y``) whose top ``max(ks)`` has the highest sum of P@k, and that sum divided by ``len(ks)``."""
    best, best_value = None, -1.0
    for weights in simplex_grid(len(scores), steps):
        ids, _ = top_k(blend(scores, weights), max(ks), n_threads)
        value = precision_sum(Y, ids, ks)
        if value > best_value + 1e-12:
            best, best_value = weights, value
    return best, best_value / len(ks)
