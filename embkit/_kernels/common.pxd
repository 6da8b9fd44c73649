# Shared C-level helpers: vector math, sigmoid tables, the per-thread random number generator and zeroed memory.
from libc.stdint cimport uint64_t, uint32_t, int32_t, int64_t
from libc.stdlib cimport calloc

cdef extern from "vecmath.h" nogil:
    float emb_dot(const float *a, const float *b, int n)
    void emb_dot_rows(const float *h, const float *W, const int *ids, int m, int n, float *out)
    void emb_dot_ptrs(const float *h, float **rows, int m, int n, float *out)
    void emb_axpy(float a, const float *x, float *y, int n)
    void emb_axpy_rows(const float *coef, float **X, int m, float *y, int n)
    void emb_scores(float **H, int m, float **O, int c, float *S, int n)
    void emb_batch_update(float **H, int m, float **O, int c, const float *G, float *dH, int n)
    void emb_scale_copy(float a, const float *x, float *y, int n)
    void emb_row_update(float g, const float *h, float *out, float *grad, int n)
    float emb_sigmoid(float x)
    float emb_log_sigmoid(float x)
    float emb_sigmoid_log(float x, float *logsig)
    double emb_logistic_row(float *S, const float *b, int n, float scale)
    void emb_init_tables()
    void emb_prefetch_row(const float *row, int n)
    int EMBKIT_HAVE_OPENMP


cdef inline uint64_t rng_next(uint64_t *state) noexcept nogil:
    """Next 64 random bits (splitmix64: one word of state, passes BigCrush)."""
    cdef uint64_t z
    state[0] += <uint64_t>0x9E3779B97F4A7C15
    z = state[0]
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EB
    return z ^ (z >> 31)


cdef inline double rng_uniform(uint64_t *state) noexcept nogil:
    """Uniform double in [0, 1)."""
    return <double>(rng_next(state) >> 11) * (1.0 / 9007199254740992.0)


cdef inline uint32_t rng_below(uint64_t *state, uint32_t n) noexcept nogil:
    """Uniform integer in [0, n) (multiply-shift; bias below 2**-32)."""
    return <uint32_t>(((rng_next(state) >> 32) * <uint64_t>n) >> 32)


cdef uint64_t mix_seed(uint64_t a, uint64_t b) noexcept nogil


cdef inline void *zeroed(size_t n, size_t size) noexcept nogil:
    """``calloc(n, size)`` with every page of it written once, or NULL.  Memory read before it is written (a
    hash table's probes, an accumulator) would otherwise map each fresh page to the kernel's page of zeros,
    and the first write would replace it, flushing the page from every core that runs the process's other
    threads (8x the cost of a write on the 2-core VM; BENCHMARKS.md, "2 cores").  (``malloc`` and ``memset``
    would not do: compilers make them ``calloc``.)"""
    cdef char *p = <char *> calloc(n, size)
    cdef volatile char *page = <volatile char *> p
    cdef size_t at
    if p != NULL:
        for at in range(0, n * size, 4096):
            page[at] = 0
    return p
