"""The blocked scan behind :func:`embkit.evaluation.evaluate_ranking`.

Pairs are grouped by context.  A block of contexts is scored against every
target with one float32 BLAS product (at most ``SCORE_BUDGET`` cells), and
from that block come, for each of its pairs, the number of targets scoring
above and at least as high as the true target, the log-sum-exp of the row,
and the comparisons with the pair's negatives and excluded items.  Blocks run
on a small thread pool: BLAS, sorting and numpy's element-wise loops release
the GIL.
"""

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

__all__ = ['scan_pairs', 'SCORE_BUDGET']

#: float32 cells of one block of scores (64 MiB).
SCORE_BUDGET = 16 * 1024 * 1024
#: contexts with at least this many pairs have their score row sorted (else: compared per pair).
SORT_MIN_PAIRS = 3
#: pairs whose per-pair gathers (negatives, exclusions) are done at once.
PAIR_CHUNK = 1 << 15


def scan_pairs(W, O, contexts, targets, excl, negatives, workers=None):
    """Rank statistics of every pair.

    Parameters
    ----------
    W, O : numpy.ndarray
        Context and target tables (C-contiguous float32, same width).
    contexts, targets : numpy.ndarray of int64
        The pairs (validated).
    excl : scipy.sparse.csr_matrix or None
        Excluded items per context (sorted, duplicate-free).
    negatives : numpy.ndarray or None
        ``(n_pairs, n_negatives)`` item ids, -1 for "none".
    workers : int or None
        Threads; None uses the CPU count, at most 4.

    Returns
    -------
    greater, ties : numpy.ndarray of int64
        Candidates (the target and excluded items left out) scoring above, and
        exactly as, the true target.
    log_lik : numpy.ndarray of float64
        ``log g_i(j)`` under the full softmax over all targets.
    beaten : numpy.ndarray of float64 or None
        Negatives scoring below the target, plus 1/2 per tie.
    """
    n_pairs, n_targets = len(targets), len(O)
    scan = _Scan(W, O, contexts, targets, excl, negatives)
    rows = max(1, SCORE_BUDGET // n_targets)
    starts = range(0, len(scan.uniq), rows)
    workers = min(4, os.cpu_count() or 1) if workers is None else max(1, int(workers))
    if workers == 1 or len(starts) == 1:
        for u0 in starts:
            scan.block(u0, min(u0 + rows, len(scan.uniq)))
    else:
        with ThreadPoolExecutor(max_workers=min(workers, len(starts))) as pool:
            jobs = [pool.submit(scan.block, u0, min(u0 + rows, len(scan.uniq))) for u0 in starts]
            for job in jobs:
                job.result()
    assert n_pairs == len(scan.greater)
    return scan.greater, scan.ties, scan.log_lik, scan.beaten


class _Scan:
    """Inputs, outputs and per-thread buffers of one scan.

    Contexts are visited by decreasing number of pairs, so that in every block
    the rows worth sorting come first and, among the others, the rows with
    more than ``r`` pairs form a prefix for every ``r``.
    """

    def __init__(self, W, O, contexts, targets, excl, negatives):
        self.W, self.OT, self.n_targets = W, O.T, len(O)
        self.contexts, self.targets, self.excl, self.negatives = contexts, targets, excl, negatives
        n_pairs = len(targets)
        self.greater = np.zeros(n_pairs, dtype=np.int64)
        self.ties = np.zeros(n_pairs, dtype=np.int64)
        self.log_lik = np.zeros(n_pairs, dtype=np.float64)
        self.beaten = np.zeros(n_pairs, dtype=np.float64) if negatives is not None else None
        by_id = np.argsort(contexts, kind='stable')
        uniq, first, counts = np.unique(contexts[by_id], return_index=True, return_counts=True)
        rank = np.empty(len(uniq), dtype=np.int64)
        visit = np.argsort(-counts, kind='stable')
        rank[visit] = np.arange(len(uniq))
        self.order = by_id[np.argsort(np.repeat(rank, counts), kind='stable')]
        self.uniq, self.counts = uniq[visit], counts[visit]
        self.bounds = np.append(0, np.cumsum(self.counts))
        self.local = threading.local()

    def _buffer(self, name, rows, dtype):
        """A per-thread (rows x n_targets) buffer, reused across blocks."""
        buf = getattr(self.local, name, None)
        if buf is None or buf.shape[0] < rows:
            buf = np.empty((rows, self.n_targets), dtype=dtype)
            setattr(self.local, name, buf)
        return buf[:rows]

    def block(self, u0, u1):
        """Score contexts ``uniq[u0:u1]`` and fill in the statistics of their pairs."""
        n = self.n_targets
        S = self._buffer('scores', u1 - u0, np.float32)
        np.matmul(self.W[self.uniq[u0:u1]], self.OT, out=S)
        flat = S.reshape(-1)
        p0, p1 = self.bounds[u0], self.bounds[u1]
        idx = self.order[p0:p1]
        counts = self.counts[u0:u1]
        starts = self.bounds[u0:u1] - p0
        local = np.repeat(np.arange(u1 - u0), counts)
        tg = self.targets[idx]
        pos = flat[local * n + tg]
        for c0 in range(0, p1 - p0, PAIR_CHUNK):
            c = slice(c0, min(c0 + PAIR_CHUNK, p1 - p0))
            if self.negatives is not None:
                self.beaten[idx[c]] = _beaten(flat, n, local[c], pos[c], self.negatives[idx[c]])
            if self.excl is not None:
                g_ex, t_ex = _excluded(flat, n, local[c], pos[c], self.excl, self.contexts[idx[c]], tg[c])
                self.greater[idx[c]] -= g_ex
                self.ties[idx[c]] -= t_ex
        g = np.empty(p1 - p0, dtype=np.int64)
        ge = np.empty(p1 - p0, dtype=np.int64)
        # Rows of contexts with few pairs: compare the row with each target's score,
        # in rounds (round r takes the r-th pair of every row that has one).
        n_sorted = int(np.count_nonzero(counts >= SORT_MIN_PAIRS))
        F = self._buffer('flags', u1 - u0 - n_sorted, bool)
        for r in range(int(counts[n_sorted:].max(initial=0))):
            rows = n_sorted + int(np.count_nonzero(counts[n_sorted:] > r))
            at = starts[n_sorted:rows] + r
            col = pos[at][:, None]
            np.greater(S[n_sorted:rows], col, out=F[:rows - n_sorted])
            g[at] = np.count_nonzero(F[:rows - n_sorted], axis=1)
            np.greater_equal(S[n_sorted:rows], col, out=F[:rows - n_sorted])
            ge[at] = np.count_nonzero(F[:rows - n_sorted], axis=1)
        # Rows of contexts with many pairs: sort once, then binary-search each target's score.
        if n_sorted:
            S[:n_sorted].sort(axis=1)
            for k in range(n_sorted):
                c = slice(starts[k], starts[k] + counts[k])
                g[c] = n - S[k].searchsorted(pos[c], side='right')
                ge[c] = n - S[k].searchsorted(pos[c], side='left')
        self.greater[idx] += g
        self.ties[idx] += ge - g - 1  # the target ties with itself
        self.log_lik[idx] = pos.astype(np.float64) - _logsumexp_rows(S)[local]


def _beaten(flat, n, local, pos, neg):
    """Negatives scoring below the target, plus 1/2 per tie (a -1 negative counts nothing)."""
    valid = neg >= 0
    vals = flat[local[:, None] * n + np.where(valid, neg, 0)]
    col = pos[:, None]
    return (((vals < col) + 0.5 * (vals == col)) * valid).sum(axis=1)


def _logsumexp_rows(S):
    """``log(sum(exp(row)))`` of every row, in float64; overwrites `S`.

    Rows are shifted by their maximum only when it lies outside [-80, 80]:
    otherwise no float32 ``exp`` overflows and the largest term is a normal
    number, so the shift (a full pass over the block) is not needed.
    """
    top = S.max(axis=1)
    shift = np.where(np.abs(top) > _EXP_SAFE, top, 0).astype(np.float32)
    if shift.any():
        S -= shift[:, None]
    np.exp(S, out=S)
    return shift.astype(np.float64) + np.log(S.sum(axis=1, dtype=np.float64))


#: float32 ``exp`` is finite below 88.7 and normal above -87.3.
_EXP_SAFE = 80.0


def _excluded(flat, n, local, pos, excl, contexts, targets):
    """Per pair: excluded items (other than the target) scoring above, and equal to, the target."""
    starts = excl.indptr[contexts]
    lengths = excl.indptr[contexts + 1] - starts
    if not lengths.any():
        return 0, 0
    owner = np.repeat(np.arange(len(contexts)), lengths)
    offsets = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    items = excl.indices[np.repeat(starts, lengths) + offsets]
    keep = items != targets[owner]
    owner, items = owner[keep], items[keep]
    vals = flat[local[owner] * n + items]
    above = np.bincount(owner, weights=vals > pos[owner], minlength=len(contexts))
    equal = np.bincount(owner, weights=vals == pos[owner], minlength=len(contexts))
    return above.astype(np.int64), equal.astype(np.int64)
