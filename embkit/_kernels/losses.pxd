cdef class Loss:
    cdef readonly bint uses_negatives
    cdef readonly bint needs_logq
    cdef double step(self, const float *h, int target, const int *neg, const double *neg_logq, int k,
                     float lr, float *W_out, int dim, float *grad_h, float *work) noexcept nogil
    cpdef Py_ssize_t work_size(self, int k, int dim, int n_classes)


cdef class SGNS(Loss):
    pass
