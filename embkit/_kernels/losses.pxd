from libc.stdint cimport int32_t


cdef struct Scratch:
    # per-thread buffers of one step over a batch of up to `batch` inputs and `cols` output rows
    float *scores      # batch x cols
    float *coef        # batch x cols: gradient coefficients, already scaled by the learning rate
    float **rows       # cols output row pointers (distinct rows)
    int *ids           # cols output ids
    int *col           # k: column of each negative (-1: skipped)
    int batch
    int cols


cdef Scratch *scratch_new(int batch, int cols, int k) noexcept nogil
cdef void scratch_free(Scratch *s) noexcept nogil


cdef class Loss:
    cdef readonly bint uses_negatives
    cdef readonly bint needs_logq
    cdef double step(self, float **H, int m, int target, const int *neg, const double *neg_logq, int k,
                     float lr, float *W_out, int dim, float *dH, Scratch *work) noexcept nogil
    cpdef int columns(self, int k, int n_classes)


cdef class SGNS(Loss):
    cdef double step_one(self, const float *h, int target, const int *neg, int k, float lr, float *W_out,
                         int dim, float *dh, float *S) noexcept nogil
