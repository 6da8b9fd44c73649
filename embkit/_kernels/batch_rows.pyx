# cython: cdivision=True, boundscheck=False, wraparound=False
"""A mini-batch step on sparse rows, in place and without the GIL: hidden vectors, label blocks, Adam on rows.

A batch is a list ``rows`` of rows of a CSR matrix ``X`` (``indptr``, ``indices``, ``data``).  Its hidden
vectors read the columns ``c0 .. c0 + d`` of a table ``W`` (one row per feature): ``H[b] = sum_f X[r_b, f]
W[f, c0:c0 + d]``.  The gradient of the table is ``X_batch^T dH``, nonzero on the rows the batch uses only;
:func:`adam_used_rows` sums it row by row and takes an Adam step on those rows and their moments alone
(lazy Adam, as for sparse embeddings).  Every pass reads and writes the tables in place (no gathered copy of
the rows) without the GIL, so the one-vs-all trainer's members run side by side on threads.  Sums run in the
batch's order: a batch gives the same result on any thread.  :func:`label_block` is a whole step of a block of
labels of the one-vs-all loss (its scores, loss, gradients and Adam steps: three BLAS products and two passes),
so that the label blocks of a step run on threads with the GIL taken once a block.
"""
from libc.math cimport sqrtf
from libc.stdint cimport int32_t, int64_t
from libc.stdlib cimport calloc, malloc, free
from scipy.linalg.cython_blas cimport sgemm

from embkit._kernels.common cimport emb_axpy, emb_logistic_row, zeroed


cdef Py_ssize_t _check_batch(const int64_t[::1] indptr, const int32_t[::1] indices, Py_ssize_t n_data,
                             const int64_t[::1] rows, Py_ssize_t n_columns) except -1:
    """The stored entries of the batch's rows; ValueError unless every row of ``rows`` is a row of the CSR
    arrays (``n_data`` values) with columns below ``n_columns`` (the scan runs without the GIL)."""
    cdef Py_ssize_t n = indptr.shape[0] - 1, b, k, total = 0, bad_entry = -1
    cdef int64_t r = 0
    cdef int problem = 0
    if n < 0 or indptr[n] > indices.shape[0] or indptr[n] > n_data:
        raise ValueError("indptr does not fit the stored entries")
    with nogil:
        for b in range(rows.shape[0]):
            r = rows[b]
            if r < 0 or r >= n:
                problem = 1
                break
            if indptr[r] > indptr[r + 1]:
                problem = 2
                break
            for k in range(indptr[r], indptr[r + 1]):
                if indices[k] < 0 or indices[k] >= n_columns:
                    bad_entry = k
                    break
            if bad_entry >= 0:
                problem = 3
                break
            total += indptr[r + 1] - indptr[r]
    if problem == 1:
        raise ValueError("batch row %d is not a row of the %d-row matrix" % (r, n))
    if problem == 2:
        raise ValueError("indptr decreases at row %d" % r)
    if problem == 3:
        raise ValueError("row %d has column %d, beyond the %d columns" % (r, indices[bad_entry], n_columns))
    return total


cdef inline void adam_row(float *w, float *m, float *v, const float *g, int d, float step, float beta1,
                          float beta2, float eps) noexcept nogil:
    """One Adam step of ``d`` parameters ``w`` with moments ``m``, ``v`` and gradient ``g``."""
    cdef int j
    cdef float a1 = 1.0 - beta1, a2 = 1.0 - beta2
    for j in range(d):
        m[j] = beta1 * m[j] + a1 * g[j]
        v[j] = beta2 * v[j] + a2 * g[j] * g[j]
        w[j] -= step * m[j] / (sqrtf(v[j]) + eps)


def batch_hidden(const int64_t[::1] indptr not None, const int32_t[::1] indices not None,
                 const float[::1] data not None, const int64_t[::1] rows not None, const float[:, ::1] W not None,
                 Py_ssize_t c0, float[:, ::1] out not None):
    """``out[b] = sum_f X[rows[b], f] * W[f, c0:c0 + d]`` (``d = out.shape[1]``) for every row of the batch."""
    cdef Py_ssize_t n_rows = rows.shape[0], d = out.shape[1], b, k, j
    if out.shape[0] != n_rows or c0 < 0 or c0 + d > W.shape[1]:
        raise ValueError("out must be %d x d with columns c0 .. c0 + d of the table" % n_rows)
    _check_batch(indptr, indices, data.shape[0], rows, W.shape[0])
    with nogil:
        for b in range(n_rows):
            for j in range(d):
                out[b, j] = 0.0
            if d == 0:
                continue
            for k in range(indptr[rows[b]], indptr[rows[b] + 1]):
                emb_axpy(data[k], &W[indices[k], c0], &out[b, 0], <int>d)


def adam_used_rows(const int64_t[::1] indptr not None, const int32_t[::1] indices not None,
                   const float[::1] data not None, const int64_t[::1] rows not None, const float[:, ::1] dH not None,
                   float[:, ::1] W not None, float[:, ::1] M not None, float[:, ::1] V not None, Py_ssize_t c0,
                   float step, float beta1, float beta2, float eps, int32_t[::1] slots not None):
    """An Adam step of the table rows the batch uses, on the columns ``c0 .. c0 + d`` (``d = dH.shape[1]``).

    The gradient of row ``f`` is ``sum_b X[rows[b], f] * dH[b]``; then ``M = beta1 M + (1 - beta1) g``,
    ``V = beta2 V + (1 - beta2) g^2`` and ``W -= step * M / (sqrt(V) + eps)`` on those rows and columns.
    ``slots``: an int32 scratch of a slot per table row, all -1 (and left so: a caller keeps one per thread).
    Returns the number of rows stepped.
    """
    cdef Py_ssize_t n_rows = rows.shape[0], d = dH.shape[1], n_table = W.shape[0], b, k, j, u
    cdef Py_ssize_t n_used = 0
    cdef int32_t f
    cdef float *G
    cdef int32_t *used
    if dH.shape[0] != n_rows:
        raise ValueError("dH must have a row per batch row")
    if (M.shape[0] != n_table or V.shape[0] != n_table or M.shape[1] != W.shape[1] or V.shape[1] != W.shape[1]
            or slots.shape[0] != n_table):
        raise ValueError("the moments and the slots must have the table's shape")
    if c0 < 0 or c0 + d > W.shape[1]:
        raise ValueError("columns %d .. %d are not the table's" % (c0, c0 + d))
    cdef Py_ssize_t n_entries = _check_batch(indptr, indices, data.shape[0], rows, n_table)
    if n_rows == 0 or d == 0:
        return 0
    used = <int32_t *> malloc(max(1, n_entries) * sizeof(int32_t))
    if used == NULL:
        raise MemoryError()
    with nogil:
        for b in range(n_rows):
            for k in range(indptr[rows[b]], indptr[rows[b] + 1]):
                f = indices[k]
                if slots[f] < 0:
                    slots[f] = <int32_t> n_used
                    used[n_used] = f
                    n_used += 1
        G = <float *> zeroed(max(1, n_used * d), sizeof(float))     # summed into before written: see zeroed
        if G != NULL:
            for b in range(n_rows):
                for k in range(indptr[rows[b]], indptr[rows[b] + 1]):
                    emb_axpy(data[k], &dH[b, 0], &G[slots[indices[k]] * d], <int>d)
            for u in range(n_used):
                f = used[u]
                adam_row(&W[f, c0], &M[f, c0], &V[f, c0], &G[u * d], <int>d, step, beta1, beta2, eps)
        for u in range(n_used):
            slots[used[u]] = -1
    free(used)
    if G == NULL:
        raise MemoryError()
    free(G)
    return n_used


def label_block(const float[:, ::1] H not None, const int64_t[::1] y_indptr not None,
                const int32_t[::1] y_indices not None, const int64_t[::1] rows not None, float[:, ::1] W not None,
                float[:, ::1] M not None, float[:, ::1] V not None, float[:, ::1] bias not None,
                float[:, ::1] Mb not None, float[:, ::1] Vb not None, Py_ssize_t member, Py_ssize_t lo, Py_ssize_t hi,
                Py_ssize_t c0, float step, float beta1, float beta2, float eps, bint learn_bias,
                float[:, ::1] dH not None):
    """One step of the binary logistic loss of the labels ``lo .. hi`` on a batch; returns its loss sum.

    ``H`` (``n x d``): the batch's hidden vectors; the batch's labels are the rows ``rows`` of a CSR label
    matrix (``y_indptr``, ``y_indices``: a set of labels a row, no duplicates).  With ``Wb = W[lo:hi, c0:c0 + d]``
    and the biases ``bias[member, lo:hi]``: the scores ``S = H Wb^T + bias``, the loss ``sum log(1 + e^S) -
    y S``, ``G = (sigmoid(S) - Y) / n``; ``dH = G Wb`` is written to ``dH`` (with the rows before the step),
    then Adam steps ``Wb`` with ``G^T H`` (moments ``M``, ``V`` at the same places) and, with ``learn_bias``,
    the biases with ``G``'s column sums (moments ``Mb``, ``Vb``).  Sums of a block run in a fixed order: the
    same on any thread.
    """
    cdef Py_ssize_t n = H.shape[0], d = H.shape[1], b = hi - lo, i, j
    cdef int64_t r, k
    cdef int32_t label
    cdef float *S
    cdef float *gW
    cdef float *gb
    cdef float inv_n, one = 1.0, zero = 0.0
    cdef double loss = 0.0
    cdef int bn, nn, dn, lda, ldd
    if rows.shape[0] != n or dH.shape[0] != n or dH.shape[1] != d:
        raise ValueError("H (%d x %d), rows (%d) and dH (%d x %d) must agree"
                         % (n, d, rows.shape[0], dH.shape[0], dH.shape[1]))
    if lo < 0 or hi < lo or hi > W.shape[0] or c0 < 0 or c0 + d > W.shape[1]:
        raise ValueError("labels %d .. %d and columns %d .. %d are not the table's" % (lo, hi, c0, c0 + d))
    if M.shape[0] != W.shape[0] or V.shape[0] != W.shape[0] or M.shape[1] != W.shape[1] or V.shape[1] != W.shape[1]:
        raise ValueError("the moments must have the table's shape")
    if (bias.shape[1] != W.shape[0] or Mb.shape[0] != bias.shape[0] or Vb.shape[0] != bias.shape[0]
            or Mb.shape[1] != bias.shape[1] or Vb.shape[1] != bias.shape[1]):
        raise ValueError("the biases and their moments must be members x %d labels" % W.shape[0])
    if member < 0 or member >= bias.shape[0]:
        raise ValueError("member %d is not a row of the %d members' biases" % (member, bias.shape[0]))
    _check_batch(y_indptr, y_indices, y_indices.shape[0], rows, W.shape[0])
    if n == 0 or b == 0 or d == 0:
        for i in range(n):
            for j in range(d):
                dH[i, j] = 0.0
        return 0.0
    S = <float *> malloc(n * b * sizeof(float))
    gW = <float *> malloc(b * d * sizeof(float))
    gb = <float *> calloc(b, sizeof(float))
    if S == NULL or gW == NULL or gb == NULL:
        free(S)
        free(gW)
        free(gb)
        raise MemoryError()
    bn, nn, dn, lda, ldd = <int>b, <int>n, <int>d, <int>W.shape[1], <int>d
    inv_n = 1.0 / n
    with nogil:
        # S (n x b, row-major) = H Wb^T: column-major, S^T = Wb H^T
        sgemm("T", "N", &bn, &nn, &dn, &one, &W[lo, c0], &lda, <float *>&H[0, 0], &ldd, &zero, S, &bn)
        for i in range(n):
            r = rows[i]
            for k in range(y_indptr[r], y_indptr[r + 1]):      # - y S
                label = y_indices[k]
                if lo <= label < hi:
                    loss -= S[i * b + label - lo] + bias[member, label]
            # log(1 + e^s) and G = (sigmoid(s) - y) / n of the row: the labels' -1 / n next
            loss += emb_logistic_row(&S[i * b], &bias[member, lo], <int>b, inv_n)
            for k in range(y_indptr[r], y_indptr[r + 1]):
                label = y_indices[k]
                if lo <= label < hi:
                    S[i * b + label - lo] -= inv_n
        # dH (n x d) = G Wb: column-major, dH^T = Wb^T G^T
        sgemm("N", "N", &dn, &nn, &bn, &one, &W[lo, c0], &lda, S, &bn, &zero, &dH[0, 0], &ldd)
        # gW (b x d) = G^T H: column-major, gW^T = H^T G
        sgemm("N", "T", &dn, &bn, &nn, &one, <float *>&H[0, 0], &ldd, S, &bn, &zero, gW, &ldd)
        for j in range(b):
            adam_row(&W[lo + j, c0], &M[lo + j, c0], &V[lo + j, c0], &gW[j * d], <int>d, step, beta1, beta2, eps)
        if learn_bias:
            for i in range(n):
                for j in range(b):
                    gb[j] += S[i * b + j]
            adam_row(&bias[member, lo], &Mb[member, lo], &Vb[member, lo], gb, <int>b, step, beta1, beta2, eps)
    free(S)
    free(gW)
    free(gb)
    return loss
