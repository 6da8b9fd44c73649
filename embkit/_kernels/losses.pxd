cdef class Loss:
    cdef readonly bint uses_negatives
    cdef double step(self, const float *h, int target, const int *neg, const double *neg_logq, int k,
                     float lr, float *W_out, int dim, float *grad_h) noexcept nogil


cdef class SGNS(Loss):
    pass
