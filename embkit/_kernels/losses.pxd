from libc.stdint cimport int32_t, uint8_t

from embkit._kernels.hot cimport HotRows, hot_row, hot_row_again


cdef struct Scratch:
    # per-thread buffers of one step over a batch of up to `batch` inputs and `cols` output rows
    float *scores      # batch x cols
    float *coef        # batch x cols: gradient coefficients, already scaled by the learning rate
    float **rows       # cols output row pointers (distinct rows)
    int *ids           # cols output ids
    float *mult        # cols: how many draws each column stands for
    double *logq       # cols: the sampler's log-probability of each column's id
    int *col           # k: column of each negative (-1: the target drawn again, dropped)
    float *extra       # batch x dim, allocated by the first step that needs it (NULL before)
    int batch
    int cols


cdef struct StepArgs:
    # one loss step (fastText's ``Loss::forward`` state): m hidden vectors sharing a target and k negatives
    float **H                  # the m hidden vectors
    int m
    int target
    const int *neg             # the k negatives
    const double *neg_logq     # their log-probabilities under the sampler (NULL when the loss needs none)
    double target_logq         # the target's log-probability under the sampler
    int k
    float lr
    float *W_out               # the output table, whose rows the step updates
    int dim
    float *dH                  # m x dim: receives -lr dL/dH[a], which the driver applies to the input rows
    Scratch *work              # the thread's step buffers
    HotRows *hot               # the thread's own copies of the hot output rows (NULL: none; :func:`out_row`)


cdef inline float *out_row(const StepArgs *a, int idx) noexcept nogil:
    """The output row of class ``idx`` a step reads and updates: the thread's copy when it is hot and copied
    (:func:`embkit._kernels.hot.hot_row`)."""
    if a.hot != NULL:
        return hot_row(a.hot, idx)
    return a.W_out + <Py_ssize_t>idx * a.dim


cdef inline float *out_row_again(const StepArgs *a, int idx) noexcept nogil:
    """The row :func:`out_row` gave the step just taken for class ``idx`` (not counted as another step)."""
    if a.hot != NULL:
        return hot_row_again(a.hot, idx)
    return a.W_out + <Py_ssize_t>idx * a.dim


cdef Scratch *scratch_new(int batch, int cols, int k) noexcept nogil
cdef void scratch_free(Scratch *s) noexcept nogil


cdef class Loss:
    cdef readonly bint uses_negatives   # the driver draws negatives for it
    cdef readonly bint needs_logq       # it corrects by the sampler's log-probabilities
    cdef readonly bint private_rows     # its steps read and write class rows through out_row only
    cdef double step(self, StepArgs *a) noexcept nogil
    cpdef int columns(self, int k, int n_classes)
    cpdef int output_rows(self, int n_classes)
    cpdef Py_ssize_t classes_for_table(self, Py_ssize_t out_rows, Py_ssize_t n_classes=*, str name=*) except -1


cdef class SGNS(Loss):
    cdef double step_one(self, StepArgs *a) noexcept nogil


cdef class NCE(Loss):
    pass


cdef class SampledSoftmax(Loss):
    cdef readonly bint correct            # subtract log Q (sampled softmax) or not (relaxed softmax)
    cdef readonly bint remove_accidental_hits


cdef class RelaxedSoftmax(SampledSoftmax):
    pass


cdef class FullSoftmax(Loss):
    pass


cdef class HierarchicalSoftmax(Loss):
    cdef readonly object offsets, points, codes
    cdef int32_t[::1] off_v
    cdef int32_t[::1] pts_v
    cdef uint8_t[::1] codes_v
    cdef int max_depth
    cdef int n_leaves


cdef class HsNegative(Loss):
    cdef readonly HierarchicalSoftmax hs
    cdef readonly SGNS ns
    cdef readonly int n_classes

