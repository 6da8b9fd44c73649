"""Blending label scores: weighted sums of dense and sparse score matrices, their top k, and the weights that
rank held-out rows best.

:func:`choose_weights` searches a grid on the simplex (steps of ``1 / steps``) for the point whose blend has
the highest mean of P@1, P@3 and P@5 on rows the heads were not fitted on: every point of a grid of at most
:data:`EXHAUSTIVE_POINTS` points; of a larger grid (an even ``steps``), the points of the grid of half the
steps, then, from the best, a climb through the grid's neighbouring points (each weight at most one step
away) while one is better.  Ties go to the point found first, a grid being walked from the first matrix's
corner.  A blend ranks only each row's candidates (the labels some matrix ranks high), gathered once, so a
point of the grid costs little.
"""
import itertools
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp

from embkit._kernels.rows import top_k_rows, top_k_sparse_rows

__all__ = ["blend", "top_k", "candidates", "choose_weights", "simplex_grid", "precision_sum", "EXHAUSTIVE_POINTS"]

#: the most points of a weight grid that :func:`choose_weights` tries one by one
EXHAUSTIVE_POINTS = 64


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


def _integer_grid(n, steps):
    """Every tuple of ``n`` nonnegative integers summing to ``steps``, from the first coordinate's corner on."""
    return [p for p in itertools.product(range(steps, -1, -1), repeat=n) if sum(p) == steps]


def simplex_grid(n, steps):
    """Every weight vector of ``n`` nonnegative multiples of ``1 / steps`` summing to one, from the first
    coordinate's corner on."""
    return [tuple(v / steps for v in p) for p in _integer_grid(n, steps)]


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


#: rows x labels x score matrices densified at once while the candidates are gathered
_GATHER_CELLS = 1 << 24


def candidates(scores, Y, per_matrix, workers=1):
    """The labels a blend of ``scores`` may rank first: per row, the union of every matrix's top
    ``per_matrix`` labels.

    ``scores``: one entry per score matrix, the matrix (``n x L``, the rows of ``Y``) or a function of a
    slice of rows that computes those rows of it, so that every matrix is dense a block of rows at a time only.
    With ``workers`` above one the functions of a block run side by side on threads.

    Returns
    -------
    (values, hits, penalty)
        ``values``: a list of ``n x c`` float32 arrays, every matrix's scores of the candidates; ``hits``: the
        ``n x c`` boolean of candidates that are true labels in ``Y``; ``penalty``: ``n x c`` float32, 0 for
        a candidate and ``-inf`` for the padding (a label listed twice, or none).
    """
    n, n_labels = Y.shape
    Y = sp.csr_matrix(Y)
    c = per_matrix * len(scores)
    values = [np.zeros((n, c), dtype=np.float32) for _ in scores]
    hits = np.zeros((n, c), dtype=bool)
    penalty = np.zeros((n, c), dtype=np.float32)
    step = max(1, _GATHER_CELLS // max(n_labels * len(scores), 1))
    pool = ThreadPoolExecutor(min(workers, len(scores))) if workers > 1 and len(scores) > 1 else None
    try:
        for start in range(0, n, step):
            rows = slice(start, min(start + step, n))
            _gather(scores, rows, pool, Y, per_matrix, c, values, hits, penalty)
    finally:
        if pool is not None:
            pool.shutdown()
    return values, hits, penalty


def _gather(scores, rows, pool, Y, per_matrix, c, values, hits, penalty):
    """:func:`candidates` of the block ``rows``, into its output arrays (the scores of the block computed on
    ``pool``'s threads when there is one)."""
    n_labels = Y.shape[1]

    def part(S):
        return S(rows) if callable(S) else S[rows]

    parts = list(pool.map(part, scores)) if pool is not None else [part(S) for S in scores]
    dense = [S.toarray() if sp.issparse(S) else np.asarray(S, dtype=np.float32) for S in parts]
    ids = np.sort(np.hstack([top_k_rows(np.ascontiguousarray(D, dtype=np.float32), min(per_matrix, n_labels),
                                        1)[0] for D in dense]), axis=1)
    ids = np.hstack([ids, np.full((len(ids), c - ids.shape[1]), -1, dtype=np.int64)])
    unused = ids < 0
    unused[:, 1:] |= ids[:, 1:] == ids[:, :-1]
    safe = np.where(unused, 0, ids)
    r = np.arange(len(ids))[:, None]
    for V, D in zip(values, dense):
        V[rows] = D[r, safe]
    hits[rows] = (Y[rows].toarray()[r, safe] > 0) & ~unused
    penalty[rows] = np.where(unused, -np.inf, 0.0)


def choose_weights(scores, Y, steps=10, ks=(1, 3, 5), per_matrix=None, workers=1):
    """The weights (a tuple, one per score matrix) of the blend of ``scores`` (each ``n x L`` for the rows of
    ``Y``, or a function of a slice of rows computing those rows: see :func:`candidates`) whose top
    ``max(ks)`` has the highest sum of P@k, and that sum divided by ``len(ks)``.

    Every blend ranks the :func:`candidates` of a row (every matrix's top ``per_matrix`` labels, default
    ``4 * max(ks)``), which hold its top labels unless a label outside each matrix's top ranks first in
    the blend.
    """
    k = max(ks)
    values, hits, penalty = candidates(scores, Y, per_matrix or 4 * k, workers)
    n = max(len(hits), 1)
    rows = np.arange(len(hits))[:, None]
    blended = np.empty_like(penalty)
    tried = {}

    def value(point):           # the sum of P@k of the blend at an integer point of the grid
        if point not in tried:
            np.copyto(blended, penalty)
            for V, w in zip(values, point):
                if w:
                    np.add(blended, np.float32(w / steps) * V, out=blended)
            top, _ = top_k_rows(blended, k)         # one thread: the grid's loop is the outer one
            kept = np.maximum(top, 0)                 # -1 pads a row of fewer candidates than k
            found = (top >= 0) & hits[rows, kept] & np.isfinite(blended[rows, kept])
            tried[point] = float(sum(found[:, :j].sum() / (j * n) for j in ks))
        return tried[point]

    def best_of(points, best):
        for point in points:
            if best is None or value(point) > value(best) + 1e-12:
                best = point
        return best

    grid = _integer_grid(len(scores), steps)
    if len(grid) <= EXHAUSTIVE_POINTS or steps % 2:
        best = best_of(grid, None)
    else:
        best = best_of([tuple(2 * v for v in p) for p in _integer_grid(len(scores), steps // 2)], None)
        while True:
            near = [p for p in grid if p not in tried and max(abs(a - b) for a, b in zip(p, best)) <= 1]
            better = best_of(near, best)
            if better == best:
                break
            best = better
    return tuple(v / steps for v in best), value(best) / len(ks)
