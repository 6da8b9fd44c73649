"""Extreme-classification metrics: P@k, nDCG@k, PSP@k and PSnDCG@k.

The definitions follow the Extreme Classification Repository (Bhatia et al.,
http://manikvarma.org/downloads/XC/XMLRepository.html) and Jain, Prabhu &
Varma, "Extreme Multi-label Loss Functions for Recommendation, Tagging,
Ranking & Other Missing Label Applications", KDD 2016.  For a row with true
label set ``y`` (``|y|`` labels) and predicted labels ``r_1, r_2, ...`` (best
first):

* ``P@k = (1/k) sum_{c<=k} [r_c in y]``
* ``nDCG@k = DCG@k / sum_{c<=min(k,|y|)} 1/log2(c+1)`` with
  ``DCG@k = sum_{c<=k} [r_c in y] / log2(c+1)``
* ``PSP@k``: as P@k with each hit weighted by ``1/p_l``, the inverse
  propensity of its label, and, as the repository reports it, divided by the
  best achievable value (the true labels with the largest ``1/p_l`` ranked
  first).  The normalisation is a ratio of sums over the rows.
  :attr:`XCResult.psp_unnormalised` holds the mean weighted precision itself.
* ``PSnDCG@k``: the same for nDCG (per-row normaliser of nDCG, then the ratio
  of sums of the predicted and the best propensity-weighted gains).

Propensities (Jain et al. 2016) come from the label frequencies ``N_l`` in a
training set of ``N`` rows: ``p_l = 1 / (1 + C (N_l + B)^-A)`` with
``C = (log N - 1) (B + 1)^A``.  The repository's recommended parameters:

==============================  =====  =====
data sets                         A      B
==============================  =====  =====
Amazon (e.g. Amazon-670K)        0.6    2.6
Wikipedia (e.g. Wiki10-31K)      0.5    0.4
all others (the default)         0.55   1.5
==============================  =====  =====

Conventions: rows without any true label are skipped (every metric averages
over the other rows) and counted in :attr:`XCResult.n_empty`; stored entries
of the label matrix are relevant whatever their value (explicit zeros are
dropped first).  With a score matrix, ties are broken in favour of the lower
label index.
"""

import numpy as np
import scipy.sparse as sp

from ._topk import top_labels
from .ranking_results import XCResult

__all__ = ['xc_metrics', 'propensity_scores', 'inverse_propensities', 'PROPENSITY_PARAMETERS']

#: The Extreme Classification Repository's propensity parameters ``(A, B)``.
PROPENSITY_PARAMETERS = {'amazon': (0.6, 2.6), 'wikipedia': (0.5, 0.4), 'default': (0.55, 1.5)}


def _binary_csr(labels, what):
    if not sp.issparse(labels):
        raise TypeError('%s must be a scipy.sparse matrix (CSR), got %s' % (what, type(labels).__name__))
    mat = sp.csr_matrix(labels, copy=True)
    if mat.ndim != 2:
        raise ValueError('%s must be 2-D' % what)
    mat.eliminate_zeros()
    mat.sum_duplicates()
    mat.data = np.ones(len(mat.data), dtype=np.float64)
    return mat


def inverse_propensities(train_labels, A=0.55, B=1.5):
    """``1 / p_l`` for every label: ``1 + C (N_l + B)^-A``, ``C = (log N - 1)(B + 1)^A``.

    Parameters
    ----------
    train_labels : scipy.sparse matrix of shape (N, L)
        Training label matrix; ``N_l`` is the number of rows with label ``l``.
    A, B : float, optional
        Parameters of the propensity model (see the module table).

    Returns
    -------
    numpy.ndarray of float64, shape (L,)

    Raises
    ------
    ValueError
        If ``A <= 0``, ``B <= 0`` or the training set has fewer than 3 rows
        (``C`` is then not positive and the model is meaningless).
    """
    mat = _binary_csr(train_labels, 'train_labels')
    return inverse_propensities_from_counts(np.bincount(mat.indices, minlength=mat.shape[1]), mat.shape[0], A, B)


def inverse_propensities_from_counts(label_counts, n_rows, A=0.55, B=1.5):
    """:func:`inverse_propensities` from the training rows per label ``N_l`` and the row count ``N``."""
    A, B = float(A), float(B)
    if not (A > 0 and B > 0):
        raise ValueError('propensity parameters must be positive, got A=%r, B=%r' % (A, B))
    n = int(n_rows)
    if n < 3:
        raise ValueError('propensities need a training set of at least 3 rows (log N > 1), got %d' % n)
    freq = np.asarray(label_counts, dtype=np.float64)
    C = (np.log(n) - 1.0) * (B + 1.0) ** A
    return 1.0 + C * (freq + B) ** -A


def propensity_scores(train_labels, A=0.55, B=1.5):
    """Propensity ``p_l = 1 / (1 + C (N_l + B)^-A)`` of every label (Jain et al. 2016).

    Parameters
    ----------
    train_labels : scipy.sparse matrix of shape (N, L)
        Training label matrix; ``N_l`` is the number of rows with label ``l``.
    A, B : float, optional
        Parameters of the propensity model: 0.6, 2.6 for Amazon data sets,
        0.5, 0.4 for Wikipedia ones, 0.55, 1.5 otherwise.

    Returns
    -------
    numpy.ndarray of float64, shape (L,)
        Values in (0, 1]: frequent labels close to 1, rare ones smaller.

    Raises
    ------
    ValueError
        As :func:`inverse_propensities`.
    """
    return 1.0 / inverse_propensities(train_labels, A, B)


def xc_metrics(true_labels, scores_or_topk, ks=(1, 3, 5), propensity=None, A=0.55, B=1.5, name='xc'):
    """P@k, nDCG@k and, with propensities, PSP@k and PSnDCG@k.

    Parameters
    ----------
    true_labels : scipy.sparse matrix of shape (n, L)
        Relevant labels of each row (stored entries).
    scores_or_topk : numpy.ndarray or scipy.sparse matrix
        Either a float score matrix of shape (n, L) (dense, or sparse with
        unstored labels never predicted), or an integer array of shape
        (n, K) of predicted label ids per row, best first, ``K >= max(ks)``;
        ``-1`` pads rows with fewer predictions.
    ks : sequence of int, optional
        Cut-offs.
    propensity : None, array-like of shape (L,) or scipy.sparse matrix, optional
        None skips the propensity-scored metrics; a vector gives the
        propensities ``p_l`` (in (0, 1]); a sparse matrix is the training label
        matrix they are computed from with `A` and `B`.
    A, B : float, optional
        Propensity model parameters (used with a training label matrix).
    name : str, optional
        Name in the result.

    Returns
    -------
    XCResult

    Raises
    ------
    ValueError
        On shape mismatches, label ids out of range or repeated within a row
        (row named), NaN scores, too few predictions for ``max(ks)``, or bad
        propensities.
    """
    Y = _binary_csr(true_labels, 'true_labels')
    n, L = Y.shape
    ks = tuple(sorted(set(int(k) for k in ks)))
    if not ks or ks[0] < 1:
        raise ValueError('ks must be positive integers, got %s' % (ks,))
    inv = _inverse(propensity, L, A, B)
    top = top_labels(scores_or_topk, n, L, ks[-1])
    result = XCResult(ks, n_labels=L, name=name)
    if inv is not None and sp.issparse(propensity):
        result.A, result.B = float(A), float(B)

    n_true = np.diff(Y.indptr)
    keep = n_true > 0
    result.n_rows, result.n_empty = int(keep.sum()), int((~keep).sum())
    hits = _hits(Y, top)[keep]
    n_true = n_true[keep]
    discount = 1.0 / np.log2(np.arange(2, ks[-1] + 2))
    ideal_dcg = np.cumsum(discount)  # ideal_dcg[c - 1]: best DCG with c relevant labels
    if result.n_rows:
        for k in ks:
            norm = ideal_dcg[np.minimum(n_true, k) - 1]
            result.precision[k] = float(hits[:, :k].sum(axis=1).mean() / k)
            result.ndcg[k] = float(((hits[:, :k] @ discount[:k]) / norm).mean())
    if inv is not None and result.n_rows:
        gains = hits * inv[np.maximum(top[keep], 0)]
        best = _best_gains(Y, inv, ks[-1])[keep]
        for k in ks:
            norm = ideal_dcg[np.minimum(n_true, k) - 1]
            result.psp_unnormalised[k] = float(gains[:, :k].sum(axis=1).mean() / k)
            result.psp[k] = float(gains[:, :k].sum() / best[:, :k].sum())
            result.psndcg[k] = float((((gains[:, :k] @ discount[:k]) / norm).sum())
                                     / ((best[:, :k] @ discount[:k]) / norm).sum())
    return result


def _inverse(propensity, n_labels, A, B):
    if propensity is None:
        return None
    if sp.issparse(propensity):
        if propensity.shape[1] != n_labels:
            raise ValueError('the training label matrix has %d labels, the test labels %d'
                             % (propensity.shape[1], n_labels))
        return inverse_propensities(propensity, A, B)
    p = np.asarray(propensity, dtype=np.float64).ravel()
    if p.shape != (n_labels,):
        raise ValueError('propensity must hold one value per label (%d), got shape %s'
                         % (n_labels, np.shape(propensity)))
    bad = ~((p > 0) & (p <= 1))
    if bad.any():
        raise ValueError('propensities must be in (0, 1]; label %d has %r' % (np.argmax(bad), p[bad][0]))
    return 1.0 / p


def _hits(Y, top):
    """``hits[r, c] = 1.0`` when ``top[r, c]`` is a true label of row ``r`` (-1 never is)."""
    n, L = Y.shape
    keys = np.repeat(np.arange(n, dtype=np.int64), np.diff(Y.indptr)) * L + Y.indices  # sorted
    wanted = np.arange(n, dtype=np.int64)[:, None] * L + top
    if not len(keys):
        return np.zeros(top.shape)
    at = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    return ((keys[at] == wanted) & (top >= 0)).astype(np.float64)


def _best_gains(Y, inv, k):
    """Per row, the `k` largest inverse propensities among its true labels, largest first (0-padded)."""
    n = Y.shape[0]
    rows = np.repeat(np.arange(n), np.diff(Y.indptr))
    weights = inv[Y.indices]
    order = np.lexsort((-weights, rows))
    rank = np.arange(len(rows)) - Y.indptr[rows[order]]
    take = rank < k
    best = np.zeros((n, k))
    best[rows[order][take], rank[take]] = weights[order][take]
    return best
