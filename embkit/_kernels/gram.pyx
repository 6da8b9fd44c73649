# cython: boundscheck=False, wraparound=False
"""The Gram matrix ``A^T A`` of a sparse matrix's rows, dense and in float64 (the least-squares head's sums).

Every row adds the products of its pairs of entries to the upper triangle (a row of ``k`` entries costs
``k (k + 1) / 2`` additions, against SciPy's sparse product that builds a sparse result first); the lower
triangle is mirrored at the end.  Products and sums are in float64, in the rows' order.
"""
import numpy as np

from libc.stdint cimport int32_t, int64_t


def sparse_gram(const int64_t[::1] indptr not None, const int32_t[::1] indices not None,
                const float[::1] data not None, Py_ssize_t n_columns):
    """``A^T A`` (float64, ``n_columns x n_columns``) of the CSR matrix ``A`` of these arrays, whose rows hold
    strictly increasing column ids below ``n_columns`` (ValueError otherwise)."""
    cdef Py_ssize_t n = indptr.shape[0] - 1, r, a, b, i, j
    if n < 0 or indptr[n] > indices.shape[0] or indptr[n] > data.shape[0]:
        raise ValueError("indptr does not fit the stored entries")
    for r in range(n):
        if indptr[r] > indptr[r + 1]:
            raise ValueError("indptr decreases at row %d" % r)
        for a in range(indptr[r], indptr[r + 1]):
            if indices[a] < 0 or indices[a] >= n_columns or (a > indptr[r] and indices[a] <= indices[a - 1]):
                raise ValueError("row %d: column ids must increase and lie below %d" % (r, n_columns))
    out = np.zeros((n_columns, n_columns), dtype=np.float64)
    cdef double[:, ::1] G = out
    cdef double x
    with nogil:
        for r in range(n):
            for a in range(indptr[r], indptr[r + 1]):
                x = data[a]
                i = indices[a]
                for b in range(a, indptr[r + 1]):
                    G[i, indices[b]] += x * data[b]
        for i in range(n_columns):
            for j in range(i):
                G[i, j] = G[j, i]
    return out
