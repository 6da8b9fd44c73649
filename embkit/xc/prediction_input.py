"""The rows a trained XC model is asked about, in the forms XC users have them, as a csr of the model's width.

:func:`feature_rows` accepts a sparse or dense matrix, or a list of rows each a dict ``{feature id: value}``
or a sequence of ``(feature id, value)`` pairs (napkinXC's and omikuji's form).  A matrix of fewer columns
than the model's features is widened (the missing features are zero).  A stored feature id beyond the
model's width is an error naming the row and the id, unless ``unknown_features="ignore"``, which drops such
entries with a warning; a matrix wider than the model whose extra columns are empty is narrowed with a
warning.
"""
import numbers
import warnings

import numpy as np
import scipy.sparse as sp

from embkit.core.checks import check_name, is_finite
from embkit.core.sparse_checks import check_sparse

__all__ = ["UNKNOWN_FEATURES", "feature_rows", "rows_from_list"]

#: values of ``unknown_features``: a feature id beyond the model's width is an error, or dropped with a warning
UNKNOWN_FEATURES = ("error", "ignore")


def _feature_id(value, row, what):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError("row %d: feature id %r is not an integer >= 0 (%s)" % (row, value, what))
    return int(value)


def _feature_value(value, row, feature):
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not is_finite(value):
        raise ValueError("row %d: feature %d has value %r, not a finite number" % (row, feature, value))
    return float(value)


def rows_from_list(rows):
    """A csr (float32) of a list of rows, each a dict ``{feature id: value}`` or a sequence of ``(feature id,
    value)`` pairs, as wide as its largest id + 1; a feature given twice in a row adds up.  ValueError naming
    the row of a malformed entry."""
    indptr, indices, data = [0], [], []
    for r, row in enumerate(rows):
        if isinstance(row, dict):
            pairs = row.items()
        elif isinstance(row, (str, bytes)) or not hasattr(row, "__iter__"):
            raise ValueError("row %d is %s, not a dict {feature: value} or a list of (feature, value) pairs"
                             % (r, type(row).__name__))
        else:
            pairs = row
        for pair in pairs:
            if isinstance(row, dict):
                feature, value = pair
            else:
                if isinstance(pair, (str, bytes)) or not hasattr(pair, "__len__") or len(pair) != 2:
                    raise ValueError("row %d: entry %r is not a (feature, value) pair" % (r, pair))
                feature, value = pair
            feature = _feature_id(feature, r, "a dict key" if isinstance(row, dict) else "a pair's first item")
            indices.append(feature)
            data.append(_feature_value(value, r, feature))
        indptr.append(len(indices))
    width = max(indices) + 1 if indices else 0
    X = sp.csr_matrix((np.asarray(data, dtype=np.float32), np.asarray(indices, dtype=np.int64),
                       np.asarray(indptr, dtype=np.int64)), shape=(len(indptr) - 1, width))
    X.sum_duplicates()
    return X


def feature_rows(X, n_features, unknown_features="error"):
    """``X`` as a csr (float32, sorted indices) of exactly ``n_features`` columns.

    Parameters
    ----------
    X : sparse matrix, array-like, or list of dicts / of lists of ``(feature id, value)`` pairs
    n_features : int
        The model's width.
    unknown_features : {"error", "ignore"}
        What a stored feature id ``>= n_features`` is: a ValueError naming the first row and id, or an entry
        dropped (with a warning saying how many).

    Warns
    -----
    UserWarning
        When ``X`` has more columns than ``n_features`` (or unknown entries were dropped).
    """
    check_name("unknown_features", unknown_features, UNKNOWN_FEATURES)
    if isinstance(X, (list, tuple)) and (len(X) == 0 or isinstance(X[0], dict)
                                         or (not sp.issparse(X[0]) and _is_pairs(X[0]))):
        X = rows_from_list(X)
    elif not sp.issparse(X):
        X = np.asarray(X, dtype=np.float32)
        if X.ndim != 2:
            raise ValueError("X must be 2-d (rows of features), got an array of shape %s" % (X.shape,))
        X = sp.csr_matrix(X)
    check_sparse(X, "the feature matrix X")
    X = sp.csr_matrix(X, dtype=np.float32)
    if X.nnz and not np.all(np.isfinite(X.data)):
        row = int(np.searchsorted(X.indptr, np.flatnonzero(~np.isfinite(X.data))[0], side="right") - 1)
        raise ValueError("row %d of X has a non-finite value" % row)
    width = X.shape[1]
    if width > n_features:
        beyond = X.indices >= n_features
        if beyond.any():
            first = int(np.flatnonzero(beyond)[0])
            row = int(np.searchsorted(X.indptr, first, side="right") - 1)
            if unknown_features == "error":
                raise ValueError("row %d has feature id %d, beyond the model's %d features (ids 0..%d); pass "
                                 "unknown_features='ignore' to drop such features"
                                 % (row, int(X.indices[first]), n_features, n_features - 1))
            warnings.warn("%d entries of feature ids beyond the model's %d features are dropped (the first in "
                          "row %d, id %d)" % (int(beyond.sum()), n_features, row, int(X.indices[first])),
                          stacklevel=3)
        else:
            warnings.warn("X has %d columns, the model %d features: the columns beyond are empty and dropped"
                          % (width, n_features), stacklevel=3)
        X = X[:, :n_features]
    elif width < n_features:
        X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(X.shape[0], n_features))
    X.sort_indices()
    return X


def _is_pairs(row):
    """Whether ``row`` looks like a sequence of ``(feature, value)`` pairs (rather than a dense row)."""
    if isinstance(row, np.ndarray):
        return False
    try:
        first = next(iter(row), None)
    except TypeError:
        return False
    return first is None or (hasattr(first, "__len__") and not isinstance(first, (str, bytes)))
