"""Training losses: one update step for a batch of inputs that share a target and a negative set.

A step receives ``m`` hidden vectors ``H[0..m)`` (one for a skip-gram pair or a CBOW window; the context
words of one centre word with shared negatives), the true class ``target`` and ``k`` sampled negatives (ids
and their log-probabilities under the sampler).  All scores are computed from the parameters as they are
when the step starts; the step then updates the output rows it touches in ``W_out`` with learning rate
``lr``, writes ``-lr * dL/dH[a]`` to ``dH[a]`` (``m x dim``; the driver applies it to the input rows) and
returns the loss summed over the batch.  The heavy lifting is two blocked C helpers shared by every loss:
``emb_scores`` (S = H O^T) and ``emb_batch_update`` (dH = G O, O += G^T H).

``py_step`` exposes a step to tests.
"""
import numpy as np

from libc.stdlib cimport malloc, calloc, free
from libc.string cimport memset

from embkit._kernels.common cimport (emb_scores, emb_batch_update, emb_sigmoid_log, emb_dot, emb_dot_rows,
                                     emb_row_update,
                                     emb_init_tables)

emb_init_tables()


cdef Scratch *scratch_new(int batch, int cols, int k) noexcept nogil:
    """Allocate step buffers (NULL on failure)."""
    cdef Scratch *s = <Scratch *> calloc(1, sizeof(Scratch))
    if s == NULL:
        return NULL
    s.batch = batch
    s.cols = cols
    s.scores = <float *> malloc(<size_t>batch * cols * sizeof(float))
    s.coef = <float *> malloc(<size_t>batch * cols * sizeof(float))
    s.rows = <float **> malloc(<size_t>cols * sizeof(float *))
    s.ids = <int *> malloc(<size_t>cols * sizeof(int))
    s.col = <int *> malloc(<size_t>(k + 1) * sizeof(int))
    if s.scores == NULL or s.coef == NULL or s.rows == NULL or s.ids == NULL or s.col == NULL:
        scratch_free(s)
        return NULL
    return s


cdef void scratch_free(Scratch *s) noexcept nogil:
    if s != NULL:
        free(s.scores); free(s.coef); free(s.rows); free(s.ids); free(s.col)
        free(s)


cdef inline int gather_columns(int target, const int *neg, int k, float *W_out, int dim,
                               Scratch *w) noexcept nogil:
    """Column 0 is the target, then the distinct negatives; ``w.col[j]`` maps negative j to its column
    (-1 when it equals the target and is skipped, as in word2vec).  Returns the number of columns."""
    cdef int c = 1, j, q, idx
    w.ids[0] = target
    w.rows[0] = W_out + <Py_ssize_t>target * dim
    for j in range(k):
        idx = neg[j]
        if idx == target:
            w.col[j] = -1
            continue
        q = 1
        while q < c and w.ids[q] != idx:
            q += 1
        if q == c:
            w.ids[c] = idx
            w.rows[c] = W_out + <Py_ssize_t>idx * dim
            c += 1
        w.col[j] = q
    return c


cdef class Loss:
    """Base class of the losses."""

    cdef double step(self, float **H, int m, int target, const int *neg, const double *neg_logq, int k,
                     float lr, float *W_out, int dim, float *dH, Scratch *work) noexcept nogil:
        return 0.0

    cpdef int columns(self, int k, int n_classes):
        """Most output rows one step touches."""
        return k + 1

    def py_step(self, H, int target, neg, float[:, ::1] W_out not None, float lr, neg_logq=None):
        """Run one step on Python arrays; returns ``(loss, dH)``.

        ``H`` is one hidden vector (1-d) or a batch of them (2-d, rows sharing the target and negatives).
        ``W_out`` is updated in place; ``dH = -lr * dL/dH`` has the shape of ``H``, which is not changed.
        With ``lr = 0`` nothing changes and the call only evaluates the loss.
        """
        H_arr = np.array(H, dtype=np.float32, copy=True, order="C")
        single = H_arr.ndim == 1
        H2 = np.ascontiguousarray(H_arr.reshape(1, -1) if single else H_arr)
        cdef int m = H2.shape[0]
        cdef int dim = H2.shape[1]
        if W_out.shape[1] != dim:
            raise ValueError("W_out has %d columns, H has %d" % (W_out.shape[1], dim))
        neg_arr = np.ascontiguousarray(neg if neg is not None else [], dtype=np.intc)
        logq_arr = np.ascontiguousarray(
            neg_logq if neg_logq is not None else np.zeros(neg_arr.size), dtype=np.float64)
        cdef int k = neg_arr.shape[0]
        if not 0 <= target < W_out.shape[0] or (k and (neg_arr.min() < 0 or neg_arr.max() >= W_out.shape[0])):
            raise IndexError("class id out of range [0, %d)" % W_out.shape[0])
        dH = np.zeros((m, dim), dtype=np.float32)
        cdef float[:, ::1] H_v = H2
        cdef float[:, ::1] dH_v = dH
        cdef int[::1] neg_v = np.concatenate([neg_arr, np.zeros(1, np.intc)])
        cdef double[::1] logq_v = np.concatenate([logq_arr, np.zeros(1)])
        cdef Scratch *work = scratch_new(m, self.columns(k, W_out.shape[0]), k)
        cdef float **ptrs = <float **> malloc(m * sizeof(float *))
        if work == NULL or ptrs == NULL:
            scratch_free(work)
            free(ptrs)
            raise MemoryError()
        cdef int a
        for a in range(m):
            ptrs[a] = &H_v[a, 0]
        cdef double loss
        try:
            with nogil:
                loss = self.step(ptrs, m, target, &neg_v[0], &logq_v[0], k, lr, &W_out[0, 0], dim,
                                 &dH_v[0, 0], work)
        finally:
            scratch_free(work)
            free(ptrs)
        return loss, (dH[0] if single else dH)


cdef class SGNS(Loss):
    """Skip-gram negative sampling (Mikolov et al. 2013): logistic loss on the target against k negatives.

    ``L = -log s(<h, w_t>) - sum_j log s(-<h, w_j>)``.  A negative equal to the target is skipped, as in
    word2vec; a negative drawn twice counts twice.
    """

    def __init__(self):
        self.uses_negatives = True
        self.needs_logq = False

    cdef double step(self, float **H, int m, int target, const int *neg, const double *neg_logq, int k,
                     float lr, float *W_out, int dim, float *dH, Scratch *work) noexcept nogil:
        if m == 1:
            return self.step_one(H[0], target, neg, k, lr, W_out, dim, dH, work.scores)
        cdef int c = gather_columns(target, neg, k, W_out, dim, work)
        cdef float *S = work.scores
        cdef float *G = work.coef
        emb_scores(H, m, work.rows, c, S, dim)
        cdef double loss = 0.0
        cdef float s, p, logp
        cdef int a, j, q
        for a in range(m):
            s = S[a * c]
            p = emb_sigmoid_log(s, &logp)
            loss -= logp
            G[a * c] = lr * (1.0 - p)
            for q in range(1, c):
                G[a * c + q] = 0.0
            for j in range(k):
                q = work.col[j]
                if q < 0:
                    continue
                s = S[a * c + q]
                p = emb_sigmoid_log(s, &logp)
                loss -= logp - s            # log s(-x) = log s(x) - x
                G[a * c + q] -= lr * p
        emb_batch_update(H, m, work.rows, c, G, dH, dim)
        return loss

    cdef inline double step_one(self, const float *h, int target, const int *neg, int k, float lr, float *W_out,
                                int dim, float *dh, float *S) noexcept nogil:
        """The single-input step, row by row as word2vec does (duplicate negatives update twice)."""
        cdef float *row = W_out + <Py_ssize_t>target * dim
        cdef float logp, p
        cdef float s = emb_dot(h, row, dim)
        emb_dot_rows(h, W_out, neg, k, dim, S)
        memset(dh, 0, dim * sizeof(float))
        p = emb_sigmoid_log(s, &logp)
        cdef double loss = -logp
        emb_row_update(lr * (1.0 - p), h, row, dh, dim)
        cdef int j
        for j in range(k):
            if neg[j] == target:
                continue
            s = S[j]
            p = emb_sigmoid_log(s, &logp)
            loss -= logp - s
            emb_row_update(-lr * p, h, W_out + <Py_ssize_t>neg[j] * dim, dh, dim)
        return loss
