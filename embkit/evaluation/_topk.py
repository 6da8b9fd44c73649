"""Top-k label ids per row from score matrices or from given predictions (for the XC metrics)."""

import numpy as np
import scipy.sparse as sp

__all__ = ['top_labels']

#: cells of one block of a dense score matrix processed at once.
_BLOCK_CELLS = 1 << 23


def top_labels(predictions, n_rows, n_labels, k):
    """The `k` best label ids of every row, best first, -1 where a row has fewer.

    Parameters
    ----------
    predictions : numpy.ndarray or scipy.sparse matrix
        Integer array (n_rows, K >= k) of label ids, best first, -1 for none;
        or a float/bool score matrix (n_rows, n_labels), dense or sparse
        (unstored entries are not predicted).  Exact score ties go to the
        lower label id.
    n_rows, n_labels : int
        Shape of the true label matrix.
    k : int
        Number of predictions wanted.

    Returns
    -------
    numpy.ndarray of int64, shape (n_rows, k)
    """
    if sp.issparse(predictions):
        return _from_sparse(predictions, n_rows, n_labels, k)
    arr = np.asarray(predictions)
    if arr.ndim != 2 or arr.shape[0] != n_rows:
        raise ValueError('predictions must have one row per row of true_labels (%d), got shape %s'
                         % (n_rows, arr.shape))
    if np.issubdtype(arr.dtype, np.integer):
        return _from_ids(arr, n_labels, k)
    if not (np.issubdtype(arr.dtype, np.floating) or arr.dtype == bool):
        raise ValueError('predictions must be integer label ids or float scores, got dtype %s' % arr.dtype)
    if arr.shape[1] != n_labels:
        raise ValueError('a score matrix must have one column per label (%d), got shape %s'
                         % (n_labels, arr.shape))
    out = np.full((n_rows, k), -1, dtype=np.int64)
    step = max(1, _BLOCK_CELLS // max(n_labels, 1))
    for r0 in range(0, n_rows, step):
        out[r0:r0 + step] = _dense_block(arr[r0:r0 + step], k, r0)
    return out


def _from_ids(arr, n_labels, k):
    if arr.shape[1] < k:
        raise ValueError('predictions hold %d label ids per row, fewer than k=%d (pad rows with -1 '
                         'or lower ks)' % (arr.shape[1], k))
    top = arr[:, :k].astype(np.int64)
    bad = (top < -1) | (top >= n_labels)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise ValueError('predicted label id %d (row %d, position %d) is out of range [0, %d)'
                         % (top[r, c], r, c, n_labels))
    ordered = np.sort(top, axis=1)
    dup = (ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] >= 0)
    if dup.any():
        r = int(np.argmax(dup.any(axis=1)))
        raise ValueError('row %d predicts label %d twice' % (r, ordered[r, 1:][dup[r]][0]))
    return top


def _check_nan(block, first_row):
    bad = np.isnan(block).any(axis=1) if block.dtype != bool else None
    if bad is not None and bad.any():
        raise ValueError('scores of row %d contain NaN' % (first_row + int(np.argmax(bad))))


def _dense_block(block, k, first_row):
    _check_nan(block, first_row)
    neg = -block.astype(np.float64 if block.dtype == np.float64 else np.float32)
    n, L = neg.shape
    if k >= L:
        out = np.full((n, k), -1, dtype=np.int64)
        out[:, :L] = np.argsort(neg, axis=1, kind='stable')
        return out
    cand = np.argpartition(neg, k - 1, axis=1)[:, :k]
    kth = np.take_along_axis(neg, cand, axis=1).max(axis=1)  # -(k-th largest score)
    at_least = np.count_nonzero(neg <= kth[:, None], axis=1)
    for r in np.flatnonzero(at_least > k):  # ties straddle rank k: keep the lowest ids
        above = np.flatnonzero(neg[r] < kth[r])
        tied = np.flatnonzero(neg[r] == kth[r])[:k - len(above)]
        cand[r] = np.concatenate([above, tied])
    cand.sort(axis=1)
    order = np.argsort(np.take_along_axis(neg, cand, axis=1), axis=1, kind='stable')
    return np.take_along_axis(cand, order, axis=1)


def _from_sparse(predictions, n_rows, n_labels, k):
    """Top-k of a CSR score matrix: rows are padded into dense blocks of their stored scores."""
    mat = sp.csr_matrix(predictions)
    if mat.shape != (n_rows, n_labels):
        raise ValueError('a sparse score matrix must have the shape of true_labels %s, got %s'
                         % ((n_rows, n_labels), mat.shape))
    mat.sum_duplicates()  # also sorts the column ids, so position order is label order
    lengths = np.diff(mat.indptr)
    out = np.full((n_rows, k), -1, dtype=np.int64)
    r0 = 0
    while r0 < n_rows:
        # as many rows as fit the budget when padded to their longest row
        widest = np.maximum.accumulate(lengths[r0:r0 + _BLOCK_CELLS])
        fits = np.flatnonzero(np.arange(1, len(widest) + 1) * np.maximum(widest, 1) <= _BLOCK_CELLS)
        r1 = r0 + (int(fits[-1]) + 1 if len(fits) else 1)
        out[r0:r1] = _sparse_block(mat, lengths, r0, r1, k)
        r0 = r1
    return out


def _sparse_block(mat, lengths, r0, r1, k):
    width = max(int(lengths[r0:r1].max()), 1)
    scores = np.full((r1 - r0, width), -np.inf, dtype=np.float64)
    labels = np.full((r1 - r0, width), -1, dtype=np.int64)
    rows = np.repeat(np.arange(r1 - r0), lengths[r0:r1])
    cols = np.arange(len(rows)) - np.repeat(mat.indptr[r0:r1] - mat.indptr[r0], lengths[r0:r1])
    stored = slice(mat.indptr[r0], mat.indptr[r1])
    scores[rows, cols] = mat.data[stored]
    labels[rows, cols] = mat.indices[stored]
    # padding sits after the stored entries, so ties with real -inf scores go to the stored ones
    positions = _dense_block(scores, k, r0)
    found = np.take_along_axis(labels, np.maximum(positions, 0), axis=1)
    found[positions < 0] = -1
    return found
