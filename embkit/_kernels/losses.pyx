"""Training losses: one update step for one example, called without the GIL.

A step receives the hidden vector ``h``, the true class ``target`` and ``k`` sampled negatives (ids and
their log-probabilities under the sampler).  It updates the output rows it touches in ``W_out`` with
learning rate ``lr``, adds ``-lr * dL/dh`` to ``grad_h`` (the driver applies it to the input rows) and
returns the example's loss.  ``py_step`` exposes a step to tests.
"""
import numpy as np

from embkit._kernels.common cimport emb_dot, emb_dot_rows, emb_row_update, emb_sigmoid, emb_log_sigmoid, emb_init_tables

emb_init_tables()


cdef class Loss:
    """Base class of the losses."""

    cdef double step(self, const float *h, int target, const int *neg, const double *neg_logq, int k,
                     float lr, float *W_out, int dim, float *grad_h, float *work) noexcept nogil:
        return 0.0

    cpdef Py_ssize_t work_size(self, int k, int dim, int n_classes):
        """Scratch floats one step needs."""
        return k + 1

    def py_step(self, float[::1] h not None, int target, neg, float[:, ::1] W_out not None, float lr,
                neg_logq=None):
        """Run one step on Python arrays; returns ``(loss, grad_h)``.

        ``W_out`` is updated in place; ``grad_h`` is ``-lr * dL/dh``.  With ``lr = 0`` nothing changes and
        the call only evaluates the loss.
        """
        dim = h.shape[0]
        if W_out.shape[1] != dim:
            raise ValueError("W_out has %d columns, h has %d" % (W_out.shape[1], dim))
        if not 0 <= target < W_out.shape[0]:
            raise IndexError("target %d out of range" % target)
        neg_arr = np.ascontiguousarray(neg if neg is not None else [], dtype=np.intc)
        if neg_arr.size and (neg_arr.min() < 0 or neg_arr.max() >= W_out.shape[0]):
            raise IndexError("negative ids out of range")
        logq_arr = np.ascontiguousarray(
            neg_logq if neg_logq is not None else np.zeros(neg_arr.size), dtype=np.float64)
        grad = np.zeros(dim, dtype=np.float32)
        cdef float[::1] grad_v = grad
        cdef int[::1] neg_v = neg_arr
        cdef double[::1] logq_v = logq_arr
        cdef int k = neg_arr.shape[0]
        cdef const int *neg_p = &neg_v[0] if k > 0 else NULL
        cdef const double *logq_p = &logq_v[0] if k > 0 else NULL
        work = np.zeros(max(1, self.work_size(k, dim, W_out.shape[0])), dtype=np.float32)
        cdef float[::1] work_v = work
        cdef double loss
        with nogil:
            loss = self.step(&h[0], target, neg_p, logq_p, k, lr, &W_out[0, 0], dim, &grad_v[0], &work_v[0])
        return loss, grad


cdef class SGNS(Loss):
    """Skip-gram negative sampling (Mikolov et al. 2013): logistic loss on the target against k negatives.

    ``L = -log s(<h, w_t>) - sum_j log s(-<h, w_j>)``; a negative equal to the target is skipped, as in
    word2vec.
    """

    def __init__(self):
        self.uses_negatives = True
        self.needs_logq = False

    cdef double step(self, const float *h, int target, const int *neg, const double *neg_logq, int k,
                     float lr, float *W_out, int dim, float *grad_h, float *work) noexcept nogil:
        cdef float *row = W_out + <Py_ssize_t>target * dim
        cdef float f = emb_dot(h, row, dim)
        # all scores first (independent rows pipeline), then the updates
        emb_dot_rows(h, W_out, neg, k, dim, work)
        cdef double loss = -emb_log_sigmoid(f)
        emb_row_update(lr * (1.0 - emb_sigmoid(f)), h, row, grad_h, dim)
        cdef int j, c
        for j in range(k):
            c = neg[j]
            if c == target:
                continue
            f = work[j]
            loss -= emb_log_sigmoid(-f)
            emb_row_update(-lr * emb_sigmoid(f), h, W_out + <Py_ssize_t>c * dim, grad_h, dim)
        return loss
