# cython: boundscheck=False, wraparound=False
"""The Gram matrix ``A^T A`` of a sparse matrix's rows, dense and in float64 (the least-squares head's sums).

Row ``i`` of the upper triangle is the sum, over the rows of ``A`` holding column ``i``, of that entry times the
row's entries at columns ``j >= i``: each output row is summed in one place (it stays in cache while its input
rows stream past, where summing input row by input row scatters over the whole matrix), the output rows are
shared out among threads, and every entry is summed over the input rows in their order, so the result is the
same on any number of threads.  The lower triangle is mirrored at the end.  Products and sums are in float64.
"""
import numpy as np

from cython.parallel cimport prange
from libc.stdint cimport int32_t, int64_t


def sparse_gram(const int64_t[::1] indptr not None, const int32_t[::1] indices not None,
                const float[::1] data not None, Py_ssize_t n_columns, int n_threads=1):
    """``A^T A`` (float64, ``n_columns x n_columns``) of the CSR matrix ``A`` of these arrays, whose rows hold
    strictly increasing column ids below ``n_columns`` (ValueError otherwise), over ``n_threads`` threads."""
    cdef Py_ssize_t n = indptr.shape[0] - 1, r, a, i, j, p
    if n < 0 or indptr[n] > indices.shape[0] or indptr[n] > data.shape[0]:
        raise ValueError("indptr does not fit the stored entries")
    for r in range(n):
        if indptr[r] > indptr[r + 1]:
            raise ValueError("indptr decreases at row %d" % r)
        for a in range(indptr[r], indptr[r + 1]):
            if indices[a] < 0 or indices[a] >= n_columns or (a > indptr[r] and indices[a] <= indices[a - 1]):
                raise ValueError("row %d: column ids must increase and lie below %d" % (r, n_columns))
    out = np.zeros((n_columns, n_columns), dtype=np.float64)
    # the columns' entries, rows in order (a counting sort of the entries by column): where each sits in A
    starts_array = np.zeros(n_columns + 1, dtype=np.int64)
    at_array = np.empty(indptr[n], dtype=np.int64)
    rows_array = np.empty(indptr[n], dtype=np.int64)
    cdef int64_t[::1] starts = starts_array, at = at_array, rows = rows_array
    cdef int64_t[::1] fill = np.zeros(n_columns, dtype=np.int64)
    cdef double[:, ::1] G = out
    cdef double x
    cdef double *row_i
    with nogil:
        for a in range(indptr[n]):
            starts[indices[a] + 1] += 1
        for i in range(n_columns):
            starts[i + 1] += starts[i]
        for r in range(n):
            for a in range(indptr[r], indptr[r + 1]):
                i = indices[a]
                p = starts[i] + fill[i]
                at[p] = a
                rows[p] = r
                fill[i] += 1
        for i in prange(n_columns, schedule="dynamic", num_threads=max(1, n_threads)):
            row_i = &G[i, 0]
            for p in range(starts[i], starts[i + 1]):
                x = data[at[p]]
                # the row's entries from column i on (they increase, and column i is at at[p])
                for j in range(at[p], indptr[rows[p] + 1]):
                    row_i[indices[j]] += x * data[j]
        for i in range(n_columns):
            for j in range(i):
                G[i, j] = G[j, i]
    return out
