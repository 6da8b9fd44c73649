"""Next-item prediction metrics of a context/target model: likelihood, MPR and Prec@k.

A model is two float32 tables: context (input) rows ``W`` and target (output)
rows ``O``; the score of a pair is ``G(i, j) = <W_i, O_j>`` and the model's
distribution of targets given a context is the full softmax ``g_i(j)``
(Eq. 1 of Tanielian & Vasile, "Relaxed Softmax for PU Learning", RecSys 2019).
For held-out pairs ``(i, j)``:

* **likelihood**: mean ``log g_i(j)`` (natural log), the perplexity
  ``exp(-mean log g_i(j))`` and the mean probability ``g_i(j)`` (the paper's
  Eq. 9).  Always over all targets, whatever `exclude` says.
* **exact MPR**: the fraction of the other candidate targets that score below
  ``j``, averaged over pairs.  Higher is better: 1 means ``j`` is ranked first,
  0.5 is chance.  This is the paper's convention (its MPR table reads ~90%).
* **approximate MPR** (Eq. 10): the same fraction among ``N = n_negatives``
  targets (default 100; the paper does not state its N) drawn uniformly, with
  replacement, from the candidates other than ``j`` (see :func:`draw_negatives`).
  Eq. 10 draws from all targets, ``j`` included; leaving ``j`` out makes the
  expectation of the approximate MPR exactly the exact MPR.
* **Prec@k**: the fraction of pairs whose true target is among the k best of
  all candidate targets.

Ties (a candidate scoring exactly as the true target) are resolved in
expectation over uniformly random tie-breaking: a tied candidate counts 1/2
for both MPRs, and when ``g`` candidates score higher and ``t`` tie, Prec@k
credits ``clip((k - g) / (t + 1), 0, 1)``.  (The strict ``>`` of Eq. 10 would
count ties as losses; they matter for untrained, e.g. all-zero, output rows.)

Candidates are all targets, minus, with `exclude`, the items marked as seen
for the pair's context (the true target itself is never excluded).

Speed: pairs are grouped by context, so the scores and the log-sum-exp of a
context are computed once however many pairs it has.  Blocks of contexts are
scored with one float32 BLAS product (at most 16M cells at a time), and ranks
come from counting the scores above the true target's, or from binary search
in the sorted row for contexts with several pairs (see :mod:`embkit.evaluation.ranking_scan`).
"""

import math

import numpy as np
import scipy.sparse as sp

from ._ties import top_k_credit
from .ranking_scan import scan_pairs
from .ranking_results import RankingResult

__all__ = ['evaluate_ranking', 'draw_negatives', 'check_tables', 'check_pairs', 'exclusion_matrix']

# ----------------------------------------------------------------------------- validation


def check_tables(context_vectors, target_vectors):
    """Validate the two tables; return them as C-contiguous float32 arrays.

    Raises
    ------
    ValueError
        If a table is not 2-D, is empty, the dimensions differ, or a value is
        not finite (the first bad row is named).
    """
    tables = []
    for label, table in (('context_vectors', context_vectors), ('target_vectors', target_vectors)):
        table = np.ascontiguousarray(table, dtype=np.float32)
        if table.ndim != 2:
            raise ValueError('%s must be a 2-D array (rows x dimensions), got shape %s'
                             % (label, table.shape))
        if table.shape[0] == 0:
            raise ValueError('%s is empty (0 rows): nothing to rank' % label)
        bad = ~np.isfinite(table).all(axis=1)
        if bad.any():
            raise ValueError('%s row %d holds a non-finite value' % (label, int(np.argmax(bad))))
        tables.append(table)
    if tables[0].shape[1] != tables[1].shape[1]:
        raise ValueError('context and target vectors differ in dimension: context_vectors is %d x %d, '
                         'target_vectors is %d x %d' % (tables[0].shape + tables[1].shape))
    return tables


def check_pairs(pairs, n_contexts, n_targets, what='pair'):
    """Validate ``(context, target)`` id pairs; return two int64 arrays.

    Parameters
    ----------
    pairs : array-like of shape (n, 2)
        Integer ids.
    n_contexts, n_targets : int
        Valid ids are ``0 <= i < n_contexts`` and ``0 <= j < n_targets``.
    what : str, optional
        Word used in error messages.

    Raises
    ------
    ValueError
        For an empty set, a wrong shape, non-integer ids, or an id out of range
        (the index of the first bad pair is named).
    """
    arr = np.asarray(pairs)
    if arr.size == 0:
        raise ValueError('no %ss to evaluate (the %s set is empty)' % (what, what))
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError('%ss must have shape (n, 2) (context id, target id), got shape %s'
                         % (what, arr.shape))
    if not np.issubdtype(arr.dtype, np.integer):
        if np.issubdtype(arr.dtype, np.floating) and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise ValueError('%s ids must be integers, got dtype %s' % (what, arr.dtype))
    arr = arr.astype(np.int64, copy=False)
    for col, limit, label in ((0, n_contexts, 'context'), (1, n_targets, 'target')):
        bad = (arr[:, col] < 0) | (arr[:, col] >= limit)
        if bad.any():
            k = int(np.argmax(bad))
            raise ValueError('%s #%d: %s id %d is out of range [0, %d)'
                             % (what, k, label, arr[k, col], limit))
    return np.ascontiguousarray(arr[:, 0]), np.ascontiguousarray(arr[:, 1])


def exclusion_matrix(exclude, n_contexts, n_targets):
    """The seen items as a binary CSR matrix (sorted, duplicate-free), or None.

    Parameters
    ----------
    exclude : None, scipy.sparse matrix or array-like of shape (n, 2)
        A ``n_contexts x n_targets`` matrix whose stored non-zero entries mark
        excluded (context, target) items, or a list of such id pairs.
    """
    if exclude is None:
        return None
    if sp.issparse(exclude):
        if exclude.shape != (n_contexts, n_targets):
            raise ValueError('exclude must have shape (%d, %d) (contexts x targets), got %s'
                             % (n_contexts, n_targets, exclude.shape))
        mat = sp.csr_matrix(exclude, dtype=np.float64, copy=True)
        mat.eliminate_zeros()
    else:
        rows, cols = check_pairs(exclude, n_contexts, n_targets, what='excluded pair')
        mat = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n_contexts, n_targets))
    mat.sum_duplicates()  # also sorts the indices
    mat.data[:] = 1.0
    return mat


def _check_ks(ks):
    ks = tuple(int(k) for k in ks)
    if any(k < 1 for k in ks):
        raise ValueError('every k of ks must be >= 1, got %s' % (ks,))
    return tuple(sorted(set(ks)))


# ----------------------------------------------------------------------------- negatives

def _row_keys(excl):
    """``row * n_targets + column`` of every stored entry: sorted, since the CSR indices are."""
    lengths = np.diff(excl.indptr)
    rows = np.repeat(np.arange(excl.shape[0], dtype=np.int64), lengths)
    return rows * excl.shape[1] + excl.indices, lengths


def _excluded_counts(excl, contexts, targets):
    """Per pair: excluded items other than the target, and whether the target itself is marked."""
    keys, lengths = _row_keys(excl)
    wanted = contexts * excl.shape[1] + targets
    at = np.minimum(np.searchsorted(keys, wanted), max(len(keys) - 1, 0))
    hit = (keys[at] == wanted) if len(keys) else np.zeros(len(targets), dtype=bool)
    return lengths[contexts] - hit, hit


def draw_negatives(contexts, targets, n_targets, n_negatives, seed=0, exclude=None):
    """Draw the negatives of the approximate MPR.

    For each pair, `n_negatives` items are drawn uniformly and independently
    (with replacement) from the candidates other than the true target: all
    ``n_targets`` targets, minus the items `exclude` marks for the pair's
    context.  The draws depend only on the pairs, `seed` and `exclude`.

    Parameters
    ----------
    contexts, targets : numpy.ndarray of int
        The pairs.
    n_targets : int
        Number of targets.
    n_negatives : int
        Draws per pair.
    seed : int or None, optional
        Seed of :func:`numpy.random.default_rng`.
    exclude : scipy.sparse matrix, optional
        ``n_contexts x n_targets`` matrix of seen items (see :func:`exclusion_matrix`).

    Returns
    -------
    numpy.ndarray of shape (n_pairs, n_negatives)
        Item ids (int64); a pair without any other candidate gets a row of -1.
    """
    contexts = np.asarray(contexts, dtype=np.int64)
    targets = np.asarray(targets, dtype=np.int64)
    rng = np.random.default_rng(seed)
    if exclude is not None:
        exclude = exclusion_matrix(sp.csr_matrix(exclude), exclude.shape[0], n_targets)
    if exclude is None:
        n_allowed = np.full(len(targets), n_targets - 1, dtype=np.int64)
    else:
        others, hit = _excluded_counts(exclude, contexts, targets)
        n_allowed = n_targets - 1 - others
    r = rng.integers(0, np.maximum(n_allowed, 1)[:, None], size=(len(targets), n_negatives))
    if exclude is None:
        r += r >= targets[:, None]
    else:
        r = _nth_allowed(exclude, contexts, targets, hit, r)
    r[n_allowed == 0] = -1
    return r


def _nth_allowed(excl, contexts, targets, hit, r):
    """The r-th (0-based) item not in ``excl[context]`` and not the target, in increasing order."""
    n = excl.shape[1]
    # The r-th item outside a sorted set E is r + #{k : E[k] - k <= r}; the shifted keys
    # E[k] - k are non-decreasing within a row, so one searchsorted serves every row.
    lengths = np.diff(excl.indptr)
    shifted = excl.indices - (np.arange(len(excl.indices)) - np.repeat(excl.indptr[:-1], lengths))
    keys = np.repeat(np.arange(excl.shape[0], dtype=np.int64), lengths) * n + shifted
    base = excl.indptr[contexts][:, None]
    row_key = contexts[:, None] * n

    def outside(rank):
        return rank + np.searchsorted(keys, row_key + rank, side='right') - base

    item = outside(r)
    # skip the target when it is not already excluded: take the next outside item instead
    bump = ~hit[:, None] & (item >= targets[:, None])
    if bump.any():
        item[bump] = outside(r + 1)[bump]
    return item


# ----------------------------------------------------------------------------- evaluation

def evaluate_ranking(context_vectors, target_vectors, pairs, ks=(5, 15, 50), n_negatives=100, seed=0,
                     exclude=None, name='pairs', workers=None):
    """Likelihood, exact and approximate MPR and Prec@k of held-out (context, target) pairs.

    See the module docstring for the definitions, the tie rule and the
    treatment of excluded items.

    Parameters
    ----------
    context_vectors : array-like of shape (n_contexts, d)
        Context (input) rows, e.g. ``model.wv.vectors``; cast to float32.
    target_vectors : array-like of shape (n_targets, d)
        Target (output) rows, one per class, e.g. ``model.syn1neg``.
    pairs : array-like of int, shape (n_pairs, 2)
        ``(context id, target id)`` rows.
    ks : sequence of int, optional
        Cut-offs of Prec@k.
    n_negatives : int, optional
        Uniform negatives per pair for the approximate MPR (0 skips it).
    seed : int or None, optional
        Seed of the negative draws (:func:`draw_negatives`).
    exclude : None, scipy.sparse matrix or array-like of shape (n, 2), optional
        Seen items to leave out of the rankings (see :func:`exclusion_matrix`);
        the likelihood is always over all targets.
    name : str, optional
        Name of the pair set in the result.
    workers : int, optional
        Threads scoring blocks of contexts concurrently (default: the number
        of CPUs, at most 4); the result does not depend on it.

    Returns
    -------
    RankingResult

    Raises
    ------
    ValueError
        For tables of different dimensions, empty or non-finite tables, an
        empty pair set, ids out of range (the pair is named), a bad `exclude`
        or a negative `n_negatives`.
    """
    W, O = check_tables(context_vectors, target_vectors)
    contexts, targets = check_pairs(pairs, len(W), len(O))
    ks = _check_ks(ks)
    n_negatives = int(n_negatives)
    if n_negatives < 0:
        raise ValueError('n_negatives must be >= 0, got %d' % n_negatives)
    excl = exclusion_matrix(exclude, len(W), len(O))
    n_targets = len(O)
    if excl is None:
        n_others = np.full(len(targets), n_targets - 1, dtype=np.int64)
        n_excluded = 0
    else:
        excluded, _ = _excluded_counts(excl, contexts, targets)
        n_others = n_targets - 1 - excluded
        n_excluded = int(excluded.sum())
    negatives = (draw_negatives(contexts, targets, n_targets, n_negatives, seed, excl)
                 if n_negatives else None)

    greater, ties, log_lik, beaten = scan_pairs(W, O, contexts, targets, excl, negatives, workers)

    result = RankingResult(name, len(targets), n_targets, n_negatives=n_negatives,
                           seed=seed if n_negatives else None, n_excluded=n_excluded)
    result.log_likelihood = float(log_lik.mean())
    result.perplexity = math.exp(-result.log_likelihood) if -result.log_likelihood < 709 else math.inf
    result.likelihood = float(np.exp(log_lik).mean())
    ranked = n_others > 0
    result.n_without_negatives = int((~ranked).sum())
    if ranked.any():
        below = n_others - greater - ties + 0.5 * ties
        result.mpr = float((below[ranked] / n_others[ranked]).mean())
        if negatives is not None:
            result.mpr_approx = float(beaten[ranked].mean() / n_negatives)
    for k in ks:
        result.precision[k] = float(top_k_credit(greater, ties, k).mean())
    result.n_ties = int((ties > 0).sum())
    return result
