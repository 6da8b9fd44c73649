# Pieces every driver (windows, pairs, rows) shares: the learning-rate schedule, per-slice results and the
# negatives of the current example, drawn one example ahead when the sampler ignores the query.
from libc.stdint cimport uint64_t, int32_t, int64_t
from libc.stdlib cimport malloc, calloc, free

from embkit._kernels.common cimport emb_prefetch_row
from embkit._kernels.losses cimport Loss
from embkit._kernels.samplers cimport Sampler


cdef struct SliceResult:
    double loss
    long long examples
    long long words
    int status           # 0, or -1 when the slice could not allocate its scratch buffers


cdef enum:
    SLICES_PER_THREAD = 4   # slices per thread when several threads share a chunk (dynamic scheduling)


cdef inline int check_objective(Py_ssize_t in_dim, Py_ssize_t out_dim, Py_ssize_t out_rows, Loss loss,
                                Sampler sampler, int negative) except -1:
    """The checks every driver makes of its tables, loss and sampler (ValueError naming the mismatch)."""
    if in_dim != out_dim:
        raise ValueError("W_in and W_out must have the same number of columns")
    if loss.uses_negatives and negative > 0 and sampler is None:
        raise ValueError("this loss needs a sampler for its negatives")
    if sampler is not None and sampler.n_classes != loss._classes_for(out_rows):
        raise ValueError("sampler has %d classes but W_out has %d rows for %d classes"
                         % (sampler.n_classes, out_rows, loss._classes_for(out_rows)))
    return 0


cdef inline int check_ids(const int32_t[::1] ids, Py_ssize_t limit, str what) except -1:
    """IndexError unless every id is in ``[0, limit)``: ids index table rows in the nogil loops, unchecked."""
    cdef Py_ssize_t i, n = ids.shape[0]
    if n == 0:
        return 0
    cdef int32_t lo = ids[0], hi = ids[0], v
    with nogil:
        for i in range(1, n):
            v = ids[i]
            if v < lo:
                lo = v
            elif v > hi:
                hi = v
    if lo < 0 or hi >= limit:
        raise IndexError("%s must be in [0, %d), found %d" % (what, limit, lo if lo < 0 else hi))
    return 0


cdef inline int check_offsets(const int64_t[::1] ptr, Py_ssize_t n_items, str what) except -1:
    """ValueError unless ``ptr`` (CSR row pointers) starts at 0, never decreases and ends at ``n_items``."""
    cdef Py_ssize_t i, n = ptr.shape[0]
    cdef bint ok = n >= 1 and ptr[0] == 0 and ptr[n - 1] == n_items
    if ok:
        with nogil:
            for i in range(1, n):
                if ptr[i] < ptr[i - 1]:
                    ok = False
                    break
    if not ok:
        raise ValueError("%s row pointers must start at 0, never decrease and end at %d" % (what, n_items))
    return 0


cdef inline Py_ssize_t loss_classes(Loss loss, Py_ssize_t out_rows) except -1:
    """Classes ``loss`` scores with an output table of ``out_rows`` rows; ValueError if the table is too small."""
    cdef Py_ssize_t n = loss._classes_for(out_rows)
    if loss.output_rows(n) > out_rows:
        raise ValueError("W_out has %d rows, but the loss trains %d for its %d classes"
                         % (out_rows, loss.output_rows(n), n))
    return n


cdef inline int slice_count(int n_threads, int slice_index) except -1:
    """Slices of one chunk: ``n_threads * SLICES_PER_THREAD`` for an OpenMP call (``slice_index = -1``),
    ``n_threads`` when Python threads each train slice ``slice_index`` of them."""
    if slice_index >= n_threads:
        raise IndexError("slice_index %d >= n_threads %d" % (slice_index, n_threads))
    return n_threads if (slice_index >= 0 or n_threads == 1) else n_threads * SLICES_PER_THREAD


cdef inline SliceResult *slices_new(int n) except NULL:
    """Zeroed results of ``n`` slices (free them with ``free``)."""
    cdef SliceResult *res = <SliceResult *> calloc(n, sizeof(SliceResult))
    if res == NULL:
        raise MemoryError()
    return res


cdef inline tuple slices_total(const SliceResult *res, int n):
    """``(loss, examples, words)`` summed over the slices; MemoryError if one could not allocate."""
    cdef double total = 0.0
    cdef long long examples = 0, words = 0
    cdef int t
    for t in range(n):
        if res[t].status != 0:
            raise MemoryError("could not allocate training scratch buffers")
        total += res[t].loss
        examples += res[t].examples
        words += res[t].words
    return total, examples, words


cdef inline float linear_lr(double alpha, double min_alpha, double done, double total) noexcept nogil:
    """Learning rate after ``done`` of ``total`` units of the run (linear decay, floored at ``min_alpha``)."""
    cdef double lr = alpha - (alpha - min_alpha) * (done / total)
    if lr < min_alpha:
        lr = min_alpha
    return <float>lr


cdef struct Negatives:
    int *ids             # 2 * k ids: the current set and the next one, drawn ahead
    double *logq         # 2 * k log-probabilities, or NULL when the loss does not use them
    double tlq[2]        # the target's log-probability, per half
    void *scratch        # the sampler's per-thread scratch
    const float *W_out   # output table, to prefetch the drawn rows
    int dim
    int k
    int cur              # which half is current
    bint ready           # the other half is already drawn
    bint ahead           # the sampler ignores the query, so sets may be drawn one example early


cdef inline int negatives_init(Negatives *ng, bint ahead, int k, bint with_logq, Py_ssize_t scratch,
                               const float *W_out, int dim) noexcept nogil:
    """Allocate the buffers of ``k`` negatives per example and ``scratch`` bytes of sampler scratch.

    ``ahead``: the sampler is query-free, so sets are drawn one example early.  Returns -1 when out of memory.
    """
    ng.k = k
    ng.W_out = W_out
    ng.dim = dim
    ng.cur = 0
    ng.ready = False
    ng.ahead = ahead
    ng.tlq[0] = ng.tlq[1] = 0.0
    ng.ids = <int *> malloc((2 * k + 1) * sizeof(int))
    ng.logq = <double *> malloc((2 * k + 1) * sizeof(double))
    ng.scratch = NULL
    if scratch > 0:
        ng.scratch = malloc(scratch)
    if ng.ids == NULL or ng.logq == NULL or (scratch > 0 and ng.scratch == NULL):
        negatives_free(ng)
        return -1
    if not with_logq:
        free(ng.logq)
        ng.logq = NULL
    return 0


cdef inline void negatives_free(Negatives *ng) noexcept nogil:
    free(ng.ids); free(ng.logq); free(ng.scratch)
    ng.ids = NULL
    ng.logq = NULL
    ng.scratch = NULL


cdef inline void _draw_half(Sampler sampler, uint64_t *rng, const float *query, int target, Negatives *ng,
                            int half) noexcept nogil:
    """Draw ``k`` negatives into one half and start loading their output rows into cache."""
    cdef int *ids = ng.ids + half * ng.k
    sampler.draw(rng, query, target, ng.k, ids, NULL if ng.logq == NULL else ng.logq + half * ng.k,
                 NULL if ng.logq == NULL else &ng.tlq[half], ng.scratch)
    cdef int j
    for j in range(ng.k):
        emb_prefetch_row(ng.W_out + <Py_ssize_t>ids[j] * ng.dim, ng.dim)


cdef inline int next_negatives(Sampler sampler, uint64_t *rng, const float *query, int target,
                               Negatives *ng) noexcept nogil:
    """Make the negatives of the current example available; return the half that holds them.

    With a query-free sampler the set of the following example is drawn now, so its rows are in cache by
    the time it is needed (the draws come in the same order, so runs stay reproducible).
    """
    if not ng.ahead:
        _draw_half(sampler, rng, query, target, ng, 0)
        return 0
    if ng.ready:
        ng.cur = 1 - ng.cur
    else:
        _draw_half(sampler, rng, query, target, ng, ng.cur)
    _draw_half(sampler, rng, query, target, ng, 1 - ng.cur)
    ng.ready = True
    if ng.logq != NULL:
        ng.tlq[ng.cur] = sampler.log_prob(target)     # drawn ahead: the target was not known then
    return ng.cur


cdef inline int *neg_ids(Negatives *ng, int half) noexcept nogil:
    return ng.ids + half * ng.k


cdef inline double *neg_logq(Negatives *ng, int half) noexcept nogil:
    return NULL if ng.logq == NULL else ng.logq + half * ng.k
