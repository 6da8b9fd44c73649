from libc.stdint cimport uint64_t, uint32_t, int32_t

cdef class Sampler:
    cdef readonly int n_classes
    cdef readonly bint query_free     # draws do not depend on the query or the target
    cdef int draw(self, uint64_t *rng, const float *query, int target, int k,
                  int *ids, double *logq) noexcept nogil
    cdef double log_prob(self, int idx) noexcept nogil


cdef struct AliasCell:
    uint32_t threshold    # keep the column if the low 32 random bits are below this
    int32_t alias         # otherwise take this id


cdef class AliasSampler(Sampler):
    cdef object _cells    # bytes-backed numpy array owning the table
    cdef AliasCell *cells
    cdef double[::1] logp
