from libc.stdint cimport uint64_t, uint32_t, int32_t


cdef class Sampler:
    cdef readonly int n_classes
    cdef readonly bint query_free     # draws depend on neither the query nor the target
    cdef readonly bint exact_logq     # logq are the draws' true log-probabilities (not an estimate)
    cdef readonly bint is_distribution  # False for deterministic choices (top-k): no logq to correct by
    cdef readonly bint refreshes      # derives tables from W_out that refresh() rebuilds between chunks
    cdef readonly object W_out        # the bound output table (adaptive samplers), or None
    cdef float *out                   # its rows
    cdef int dim
    cdef int draw(self, uint64_t *rng, const float *query, int target, int k, int *ids, double *logq,
                  double *target_logq, void *scratch) noexcept nogil
    cdef double log_prob(self, int idx) noexcept nogil
    cpdef Py_ssize_t scratch_bytes(self)


cdef struct AliasCell:
    uint32_t threshold    # keep the column if the low 32 random bits are below this
    int32_t alias         # otherwise take this id


cdef class AliasSampler(Sampler):
    cdef object _cells    # bytes-backed numpy array owning the table
    cdef AliasCell *cells
    cdef double[::1] logp
