from libc.stdint cimport uint64_t, int32_t

cdef class Sampler:
    cdef readonly int n_classes
    cdef int draw(self, uint64_t *rng, const float *query, int target, int k,
                  int *ids, double *logq) noexcept nogil
    cdef double log_prob(self, int idx) noexcept nogil


cdef class AliasSampler(Sampler):
    cdef double[::1] prob
    cdef int32_t[::1] alias
    cdef double[::1] logp
