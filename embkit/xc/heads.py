"""Closed-form label scorers ("heads") blended with an ExtremeClassifier's scores: centroids, least squares,
neighbours.

A head is fitted from the weighted training rows ``A`` (csr float32, ``n x F``, as
:func:`~embkit.xc.features.weight_rows` gives them) and the labels ``Y`` (csr, ``n x L``) without gradient
steps, and scores weighted rows ``B`` against every label:

* :class:`Centroids` -- every label's centroid, the unit-norm sum of its training rows (the PIFA label
  representation of Parabel and XR-Linear), pruned of its entries below ``centroid_threshold``; a row's score
  for a label is its dot product with the centroid (sparse);
* :class:`LeastSquares` -- the ridge regression of the 0/1 label matrix on the rows and a constant,
  ``(A1^T A1 + l2 I) W = A1^T Y``, solved by a Cholesky factorisation of the ``(F + 1)^2`` Gram matrix (dense
  scores; only for at most ``max_gram_features`` features);
* :class:`Neighbours` -- the labels of the ``neighbours`` training rows of highest cosine, weighted by the
  cosine to the power ``neighbour_power`` and normalised to sum to one (sparse).

Heads are stateless objects (one serves every model): :meth:`Head.fit` returns the fitted arrays, which the
model keeps and saves, and :meth:`Head.scores` reads them.  A head fitted from sums over the rows says so by
its :meth:`Head.statistics` (None otherwise): the sums of two sets of rows add (:func:`add_statistics`), so
a head fitted on part of the rows is refitted on all of them without reading that part again.
:data:`HEADS` maps names to heads and :data:`HEAD_PARAMS` gives the parameters of ``head_params`` with their
defaults.
"""
import numpy as np
import scipy.linalg
import scipy.sparse as sp

from embkit._kernels.gram import sparse_gram
from embkit._kernels.rows import top_k_sparse_products
from embkit.core.threads import map_on_threads

__all__ = ["Head", "Centroids", "LeastSquares", "Neighbours", "HEADS", "HEAD_PARAMS", "DEFAULT_HEADS",
           "head_params", "blocked_sum", "add_statistics"]


def blocked_sum(product, n_rows, workers):
    """``sum(product(rows) for rows in blocks)`` over ``workers`` threads, the rows ``0..n_rows`` cut into one
    block per thread (scipy's sparse products release the GIL)."""
    cuts = np.linspace(0, n_rows, max(1, min(workers, n_rows)) + 1).astype(np.int64)
    parts = map_on_threads(product, [slice(a, b) for a, b in zip(cuts[:-1], cuts[1:])], workers)
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    return total


def add_statistics(first, second):
    """The :meth:`Head.statistics` of the rows of two calls together (element-wise sums)."""
    return tuple(a + b for a, b in zip(first, second))


def _csr_arrays(prefix, M):
    M = sp.csr_matrix(M)
    return {prefix + "_data": M.data.astype(np.float32), prefix + "_indices": M.indices.astype(np.int32),
            prefix + "_indptr": M.indptr.astype(np.int64), prefix + "_shape": np.array(M.shape, dtype=np.int64)}


def _csr(state, prefix):
    data = state[prefix + "_data"]
    return sp.csr_matrix((data if len(data) else np.zeros(0, np.float32), state[prefix + "_indices"],
                          state[prefix + "_indptr"]), shape=tuple(int(v) for v in state[prefix + "_shape"]))


class Head:
    """Base of the heads.

    Attributes
    ----------
    name : str
        The head's name in ``heads=``.
    params : tuple of str
        The keys of ``head_params`` it reads.
    sparse : bool
        Its scores are a csr matrix (missing entries score 0), else a dense array.
    linear : bool
        Its scores are ``B @ M + b`` for a matrix ``M`` (``F x L``) and biases ``b``: :meth:`linear_map`.
    """

    name = None
    params = ()
    sparse = False
    linear = False

    def unusable(self, n_features, n_labels, params):
        """Why the head cannot be fitted on data of this size (a sentence), or None."""
        return None

    def statistics(self, A, Y, workers):
        """Sums over the rows ``A`` and labels ``Y`` from which :meth:`fit` fits the head (a tuple of arrays
        that add across sets of rows), or None for a head fitted from the rows themselves."""
        return None

    def fit(self, A, Y, params, workers, statistics=None):
        """The fitted arrays (a dict of numpy arrays) of the rows ``A`` and labels ``Y``; a head with
        :meth:`statistics` takes them instead of the rows when given (``A`` and ``Y`` are then unread)."""
        raise NotImplementedError

    def scores(self, state, B, params, workers=1):
        """Scores of the weighted rows ``B`` (csr, ``n x F``) against every label: ``n x L``."""
        raise NotImplementedError

    def linear_map(self, state):
        """``(M, b)`` of a linear head: scores are ``B @ M + b`` (``M`` sparse or dense, ``b`` or None)."""
        raise NotImplementedError


class Centroids(Head):
    """Label centroids: the unit-norm sum of a label's weighted training rows, pruned below a threshold."""

    name = "centroids"
    params = ("centroid_threshold",)
    sparse = True
    linear = True

    def statistics(self, A, Y, workers):
        """``(A^T Y,)``: every label's sum of its rows (csr, ``F x L``)."""
        Yf = sp.csr_matrix(Y, dtype=np.float32)
        return (sp.csr_matrix(blocked_sum(lambda rows: A[rows].T @ Yf[rows], A.shape[0], workers)),)

    def fit(self, A, Y, params, workers, statistics=None):
        CT, = self.statistics(A, Y, workers) if statistics is None else statistics
        CT = sp.csr_matrix(CT, dtype=np.float32, copy=True)
        norms = np.sqrt(np.bincount(CT.indices, weights=CT.data.astype(np.float64) ** 2, minlength=CT.shape[1]))
        norms[norms == 0] = 1.0
        CT.data /= norms[CT.indices].astype(np.float32)
        threshold = params["centroid_threshold"]
        if threshold > 0:
            CT.data[CT.data < threshold] = 0.0
            CT.eliminate_zeros()
        CT.sort_indices()
        return _csr_arrays("centroids", CT)

    def scores(self, state, B, params, workers=1):
        return sp.csr_matrix(B @ _csr(state, "centroids"))

    def linear_map(self, state):
        return _csr(state, "centroids"), None


class LeastSquares(Head):
    """Ridge regression of the labels on the rows and a constant (a Cholesky solve of the Gram matrix)."""

    name = "least_squares"
    params = ("l2", "max_gram_features")
    linear = True

    def unusable(self, n_features, n_labels, params):
        limit = params["max_gram_features"]
        if n_features > limit:
            return ("least squares needs the %d x %d Gram matrix of the features: more than max_gram_features "
                    "(%d)" % (n_features, n_features, limit))
        return None

    def statistics(self, A, Y, workers):
        """``(G, R)``: the Gram matrix ``A1^T A1`` (float64, ``(F + 1)^2``: :func:`~embkit._kernels.gram.sparse_gram`)
        and ``A1^T Y`` (``(F + 1) x L``) of the rows with a constant column appended."""
        A1 = sp.csr_matrix(sp.hstack([A, np.ones((A.shape[0], 1), dtype=np.float32)], format="csr"),
                           dtype=np.float32)
        A1.sum_duplicates()             # strictly increasing column ids per row, as the Gram kernel takes them
        Yf = sp.csr_matrix(Y, dtype=np.float32)
        G = sparse_gram(A1.indptr.astype(np.int64), A1.indices.astype(np.int32), A1.data, A1.shape[1], workers)
        R = blocked_sum(lambda rows: (A1[rows].T @ Yf[rows]).toarray(), A1.shape[0], workers)
        return G, R

    def fit(self, A, Y, params, workers, statistics=None):
        G, R = self.statistics(A, Y, workers) if statistics is None else statistics
        G = G.copy()
        G[np.diag_indices(len(G) - 1)] += params["l2"]     # the constant's weight is left unpenalised ...
        G[-1, -1] += 1e-6 * max(G[-1, -1], 1.0)           # ... but for a tiny ridge that keeps G definite
        # the sums are float64; the ridge keeps G well conditioned, so it is factored in float32 (half the time)
        factor = scipy.linalg.cho_factor(G.astype(np.float32), overwrite_a=True, check_finite=False)
        W = scipy.linalg.cho_solve(factor, np.asarray(R, dtype=np.float32), check_finite=False)
        return {"least_squares_weights": np.asarray(W, dtype=np.float32)}

    def scores(self, state, B, params, workers=1):
        W = state["least_squares_weights"]
        return np.asarray(B @ W[:-1]) + W[-1]

    def linear_map(self, state):
        W = state["least_squares_weights"]
        return W[:-1], W[-1]


class Neighbours(Head):
    """The labels of the nearest training rows (cosine), weighted by a power of the cosine."""

    name = "neighbours"
    params = ("neighbours", "neighbour_power")
    sparse = True

    def fit(self, A, Y, params, workers, statistics=None):
        arrays = _csr_arrays("neighbour_rows_t", sp.csr_matrix(A.T))           # F x n: B @ it is the cosines
        Yb = sp.csr_matrix(Y, dtype=np.float32)
        arrays.update({"neighbour_labels_indices": Yb.indices.astype(np.int32),
                       "neighbour_labels_indptr": Yb.indptr.astype(np.int64),
                       "neighbour_labels_shape": np.array(Yb.shape, dtype=np.int64)})
        return arrays

    def scores(self, state, B, params, workers=1):
        AT = _csr(state, "neighbour_rows_t")
        shape = tuple(int(v) for v in state["neighbour_labels_shape"])
        indices = state["neighbour_labels_indices"]
        Y = sp.csr_matrix((np.ones(len(indices), np.float32), indices, state["neighbour_labels_indptr"]), shape=shape)
        k = min(int(params["neighbours"]), max(AT.shape[1], 1))
        B = sp.csr_matrix(B)
        # the k best cosines of every row, summed row by row without forming the rows x training rows product
        arrays = [np.asarray(a, dtype=t) for M in (B, AT)
                  for a, t in ((M.indptr, np.int64), (M.indices, np.int32), (M.data, np.float32))]
        ids, sims = top_k_sparse_products(*arrays, AT.shape[1], k, max(1, int(workers)))
        keep = ids >= 0                   # a cosine that is not positive is no evidence: never listed
        weights = np.where(keep, sims, 0.0).astype(np.float64) ** params["neighbour_power"]
        totals = weights.sum(axis=1, keepdims=True)
        np.divide(weights, totals, out=weights, where=totals > 0)
        rows = np.repeat(np.arange(len(ids)), keep.sum(axis=1))
        W = sp.csr_matrix((weights[keep].astype(np.float32), (rows, ids[keep])), shape=(len(ids), shape[0]))
        return sp.csr_matrix(W @ Y)


#: ``heads=`` names -> the heads
HEADS = {head.name: head for head in (Centroids(), LeastSquares(), Neighbours())}
#: the heads of ``heads=None``
DEFAULT_HEADS = ("centroids", "least_squares", "neighbours")
#: ``head_params`` keys and their defaults
HEAD_PARAMS = {"centroid_threshold": 0.05, "l2": 1.0, "max_gram_features": 10000, "neighbours": 20,
               "neighbour_power": 4.0}
_CHECKS = {"centroid_threshold": (lambda v: 0 <= v < 1, "a number in [0, 1)"),
           "l2": (lambda v: v > 0, "a positive number"),
           "max_gram_features": (lambda v: v >= 0 and float(v).is_integer(), "an integer >= 0"),
           "neighbours": (lambda v: v >= 1 and float(v).is_integer(), "an integer >= 1"),
           "neighbour_power": (lambda v: v > 0, "a positive number")}


def head_params(given):
    """:data:`HEAD_PARAMS` updated by ``given``; ValueError naming an unknown key or a bad value."""
    given = dict(given or {})
    unknown = sorted(set(given) - set(HEAD_PARAMS))
    if unknown:
        raise ValueError("unknown head_params key %r; valid keys: %s" % (unknown[0], ", ".join(sorted(HEAD_PARAMS))))
    params = dict(HEAD_PARAMS, **given)
    for key, (ok, what) in _CHECKS.items():
        value = params[key]
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                or not np.isfinite(value) or not ok(value):
            raise ValueError("head_params[%r] must be %s, got %r" % (key, what, value))
    return params
