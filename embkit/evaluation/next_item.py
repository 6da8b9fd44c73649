"""Leave-one-out next-item metrics: Hit@k, NDCG@k, Prec@k and MPR over the full catalogue.

Each user has one held-out item and a set of seen items (their history).  Every item is scored for the
user; the seen items other than the held-out one are filtered out, and the held-out item is ranked against
all the remaining items (no sampled negatives).  This is the protocol of the leave-one-out evaluations of
RecBole and of the SASRec/BERT4Rec papers run over the full item set.  Ties get their expected credit under
uniformly random tie-breaking (:mod:`embkit.evaluation._ties`).

The scores come from two tables (``user_vectors @ target_vectors.T``, scored in blocks) or from a function
that returns a block of score rows, so models that are not two tables (co-occurrence counts, say) are
scored by the same code.
"""
import numpy as np
import scipy.sparse as sp

from ._ties import dcg_credit, top_k_credit
from .ranking_results import NextItemResult

__all__ = ["evaluate_next_items", "DEFAULT_KS"]

#: Cut-offs reported by default.
DEFAULT_KS = (1, 5, 10, 20)
#: float32 cells of one block of scores.
_BLOCK_CELLS = 1 << 23


def _score_blocks(scores, n_users, n_items):
    """``(block(start, stop), n_items)`` of the ``scores`` argument of :func:`evaluate_next_items`."""
    if isinstance(scores, tuple):
        U = np.ascontiguousarray(scores[0], dtype=np.float32)
        OT = np.ascontiguousarray(scores[1], dtype=np.float32).T
        if U.ndim != 2 or OT.ndim != 2 or U.shape[1] != OT.shape[0]:
            raise ValueError("user_vectors (%s) and target_vectors (%s) must be 2-D tables of one width"
                             % (U.shape, OT.T.shape))
        scores, n_items = (lambda start, stop: U[start:stop] @ OT), OT.shape[1]
        n_rows = U.shape[0]
    elif callable(scores):
        if n_items is None:
            raise ValueError("n_items is needed with a score function")
        return scores, int(n_items)
    else:
        matrix = np.asarray(scores)
        if matrix.ndim != 2:
            raise ValueError("scores must be 2-D (users x items), got shape %s" % (matrix.shape,))
        scores, (n_rows, n_items) = (lambda start, stop: matrix[start:stop]), matrix.shape
    if n_rows != n_users:
        raise ValueError("%d score rows for %d held-out items" % (n_rows, n_users))
    return scores, n_items


def evaluate_next_items(scores, targets, seen=None, ks=DEFAULT_KS, name="held-out items", n_items=None):
    """Rank each user's held-out item against every unseen item.

    Parameters
    ----------
    scores : (user_vectors, target_vectors), 2-D array or callable
        Two tables whose product scores every item for every user, the ``users x items`` scores, or a
        function ``scores(start, stop)`` returning the ``(stop - start, n_items)`` scores of users
        ``start:stop``.
    targets : array-like of int
        The held-out item (a column of the scores) of each user.
    seen : scipy.sparse matrix, optional
        ``users x items``; the stored entries of row ``u`` are filtered from user ``u``'s ranking (the
        held-out item itself never is).
    ks : sequence of int
        Cut-offs of Hit@k, NDCG@k and Prec@k.
    name : str
        Name of the held-out set in the result.
    n_items : int, optional
        Number of items: needed with a score function only.

    Returns
    -------
    NextItemResult

    Raises
    ------
    ValueError
        No users, a target outside the catalogue, a ``seen`` matrix of another shape, non-finite scores,
        or a cut-off below 1.
    """
    targets = np.asarray(targets)
    n_users = len(targets)
    if n_users == 0 or targets.ndim != 1:
        raise ValueError("targets must be a non-empty 1-d array (one held-out item per user), got shape %s"
                         % (targets.shape,))
    scores, n_items = _score_blocks(scores, n_users, n_items)
    if not np.issubdtype(targets.dtype, np.integer) or targets.min() < 0 or targets.max() >= n_items:
        raise ValueError("held-out items must be integer columns in [0, %d)" % n_items)
    ks = tuple(sorted({int(k) for k in ks}))
    if not ks or ks[0] < 1:
        raise ValueError("every k of ks must be >= 1, got %s" % (ks,))
    if seen is not None:
        if seen.shape != (n_users, n_items):
            raise ValueError("seen must have shape (%d, %d) (users x items), got %s"
                             % (n_users, n_items, seen.shape))
        seen = sp.csr_matrix(seen, copy=True)
        seen.sum_duplicates()
    greater = np.empty(n_users, dtype=np.int64)
    ties = np.empty(n_users, dtype=np.int64)
    candidates = np.full(n_users, n_items - 1, dtype=np.int64)
    n_filtered = 0
    step = max(1, _BLOCK_CELLS // max(n_items, 1))
    for start in range(0, n_users, step):
        stop = min(start + step, n_users)
        S = np.array(scores(start, stop), dtype=np.float32)
        if not np.isfinite(S).all():
            raise ValueError("the scores of users %d to %d hold non-finite values" % (start, stop - 1))
        local = np.arange(stop - start)
        pos = S[local, targets[start:stop]]
        if seen is not None:
            block = seen[start:stop]
            rows = np.repeat(local, np.diff(block.indptr))
            drop = block.indices != targets[start:stop][rows]
            S[rows[drop], block.indices[drop]] = -np.inf
            filtered = np.bincount(rows[drop], minlength=stop - start)
            candidates[start:stop] -= filtered
            n_filtered += int(filtered.sum())
        greater[start:stop] = np.count_nonzero(S > pos[:, None], axis=1)
        ties[start:stop] = np.count_nonzero(S == pos[:, None], axis=1) - 1
    result = NextItemResult(name, n_users, n_items, n_filtered=n_filtered, n_ties=int((ties > 0).sum()))
    for k in ks:
        result.hit[k] = float(top_k_credit(greater, ties, k).mean())
        result.ndcg[k] = float(dcg_credit(greater, ties, k).mean())
        result.precision[k] = result.hit[k] / k
    ranked = candidates > 0
    if ranked.any():
        below = candidates - greater - 0.5 * ties
        result.mpr = float((below[ranked] / candidates[ranked]).mean())
    return result
