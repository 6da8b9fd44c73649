"""The best items of many score rows at once: blocked BLAS products, filtered items, parallel top-N.

Query vectors are scored against the target table in blocks of rows (one float32 matrix product each, at
most ``_BLOCK_CELLS`` scores at a time); filtered items get the score ``-inf``, and the ``n`` best items of
every row are picked on ``workers`` threads (:func:`embkit._kernels.rows.top_k_rows`; ties go to the lower
row).  A row with fewer than ``n`` items left is padded with row ``-1`` and score ``-inf``.
"""
import os

import numpy as np

from embkit._kernels.rows import top_k_rows

__all__ = ["top_items"]

#: float32 scores of one block.
_BLOCK_CELLS = 1 << 23


def top_items(queries, targets, n, seen=None, exclude=None, workers=None, extra=None):
    """The ``n`` best target rows of every query row, best first.

    Parameters
    ----------
    queries : numpy.ndarray (n_queries, d)
    targets : numpy.ndarray (n_items, d)
    n : int
        Items per row, at most ``n_items``.
    seen : scipy.sparse.csr_matrix, optional
        ``n_queries x n_items``: items filtered from each row.
    exclude : numpy.ndarray of int, optional
        Items filtered from every row.
    workers : int, optional
        Threads of the top-N selection (default: every CPU).
    extra : callable, optional
        ``extra(start, stop)`` returns ``(stop - start, n_items)`` scores added to those of the query rows
        ``start:stop`` (e.g. :func:`embkit.items.count_blend.count_scores`).

    Returns
    -------
    rows : numpy.ndarray of int64 (n_queries, n)
        Item rows, -1 where a row has fewer than ``n`` items left.
    scores : numpy.ndarray of float32 (n_queries, n)
        Their scores, ``-inf`` for the padding.
    """
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    OT = np.ascontiguousarray(targets, dtype=np.float32).T
    n_items = OT.shape[1]
    workers = (os.cpu_count() or 1) if workers is None else max(1, int(workers))
    rows = np.empty((len(queries), n), dtype=np.int64)
    scores = np.empty((len(queries), n), dtype=np.float32)
    step = max(1, _BLOCK_CELLS // max(n_items, 1))
    for start in range(0, len(queries), step):
        stop = min(start + step, len(queries))
        S = queries[start:stop] @ OT
        if extra is not None:
            S += extra(start, stop)
        if seen is not None:
            block = seen[start:stop]
            S[np.repeat(np.arange(stop - start), np.diff(block.indptr)), block.indices] = -np.inf
        if exclude is not None and len(exclude):
            S[:, exclude] = -np.inf
        rows[start:stop], scores[start:stop] = top_k_rows(S, n, workers)
    rows[scores == -np.inf] = -1
    return rows, scores
