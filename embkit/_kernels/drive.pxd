# What every driver (windows, pairs, rows) shares: the base class that cuts chunks into slices and trains them
# on the worker threads of a Pipeline, the checks of tables and ids, the learning-rate schedule, and the
# negatives of the current example, drawn one example ahead when the sampler ignores the query.
from libc.stdint cimport uint64_t, int32_t, int64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memset

from embkit._kernels.common cimport emb_prefetch_row
from embkit._kernels.hot cimport HotRows, HotSpec, hot_close, hot_flush, hot_open, hot_row_again
from embkit._kernels.losses cimport Loss, StepArgs, scratch_new, scratch_free
from embkit._kernels.samplers cimport Sampler


cdef extern from "sync.h" nogil:
    ctypedef struct emb_mutex:
        pass
    ctypedef struct emb_cond:
        pass
    int emb_mutex_init(emb_mutex *m)
    void emb_mutex_destroy(emb_mutex *m)
    void emb_mutex_lock(emb_mutex *m)
    void emb_mutex_unlock(emb_mutex *m)
    int emb_cond_init(emb_cond *c)
    void emb_cond_destroy(emb_cond *c)
    void emb_cond_wait(emb_cond *c, emb_mutex *m)
    int emb_cond_wait_ms(emb_cond *c, emb_mutex *m, int ms)
    void emb_cond_broadcast(emb_cond *c)


cdef struct SliceResult:
    double loss
    long long examples   # loss steps' examples
    long long units      # the driver's units (words, pairs, rows) the slice covered
    long long kept       # of which trained (after subsampling: gensim's effective words)
    int status           # 0, or -1 when the slice could not allocate its scratch buffers


cdef enum:
    SLICES_PER_THREAD = 4   # slices per thread a chunk is cut into when several threads share it
    MAX_IN_FLIGHT = 8       # chunks a pipeline holds at once


cdef struct RunConfig:
    # what every driver's slices read of the run (the first member of each driver's settings)
    float *W_in
    float *W_out
    int dim
    int negative               # negatives a step draws (0 when the loss draws none)
    int columns                # output rows one loss step may touch
    Py_ssize_t sampler_scratch # bytes of per-thread scratch the sampler needs
    double alpha               # learning rate at the start and the end of the run
    double min_alpha
    double total               # units the whole run trains (all epochs)
    double before              # units of the run trained before this chunk


cdef class ChunkJob:
    """One chunk handed to a pipeline: the driver's settings for it, its slices and their results."""
    cdef void *config            # the driver's per-chunk settings (its own struct, owned)
    cdef object keep             # the arrays ``config`` points into
    cdef Py_ssize_t *bounds      # n_slices + 1 boundaries, in the driver's slice units
    cdef SliceResult *results
    cdef int n_slices
    cdef int taken               # slices handed to a thread (under the pipeline's lock)
    cdef int remaining           # slices not finished (under the pipeline's lock)
    cdef uint64_t base_seed


cdef class Driver:
    cdef float[:, ::1] W_in              # the input and output tables, updated in place
    cdef float[:, ::1] W_out
    cdef readonly Loss loss
    cdef readonly Sampler sampler
    cdef uint64_t seed
    cdef readonly Py_ssize_t n_classes   # classes the output table has rows for
    cdef HotSpec hot
    cdef object hot_arrays
    cdef int train_slice(self, const void *config, Py_ssize_t begin, Py_ssize_t end, uint64_t seed,
                         SliceResult *out) noexcept nogil
    cdef ChunkJob open_chunk(self, tuple args, double before, int n_slices)
    cdef int set_run(self, RunConfig *run, float[:, ::1] W_in, float[:, ::1] W_out, Loss loss, Sampler sampler,
                     int negative, double alpha, double min_alpha, double total, uint64_t seed) except -1


cdef class Pipeline:
    cdef readonly Driver driver
    cdef readonly int n_threads
    cdef emb_mutex mutex
    cdef emb_cond work_ready         # a slice can be taken, or the workers must stop
    cdef emb_cond slice_done
    cdef void *jobs[MAX_IN_FLIGHT]   # ChunkJob pointers in submission order (references held in ``held``)
    cdef int first                   # index in ``jobs`` of the oldest job
    cdef int count
    cdef bint stopping               # workers leave once every submitted slice is taken
    cdef bint aborting               # workers leave after their current slice
    cdef bint synced
    cdef object held
    cdef list threads
    cdef void work(self) noexcept nogil
    cdef void *next_job(self) noexcept nogil
    cdef void train_next_slice(self, ChunkJob job) noexcept nogil
    cdef bint wait_oldest(self, ChunkJob job, int ms) noexcept nogil


cdef ChunkJob chunk_job(Py_ssize_t config_bytes, int n_slices, object keep)


cdef inline int check_objective(Py_ssize_t in_dim, Py_ssize_t out_dim, Py_ssize_t out_rows, Loss loss,
                                Sampler sampler, int negative) except -1:
    """The checks every driver makes of its tables, loss and sampler (ValueError naming the mismatch)."""
    if in_dim != out_dim:
        raise ValueError("W_in and W_out must have the same number of columns")
    loss.check_sampler(sampler, negative)
    if sampler is not None and sampler.n_classes != loss.classes_for_table(out_rows):
        raise ValueError("sampler has %d classes but W_out has %d rows for %d classes"
                         % (sampler.n_classes, out_rows, loss.classes_for_table(out_rows)))
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
    HotRows *hot         # the thread's copies of the hot rows, whose rows are prefetched instead (NULL: none)
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
        if ng.hot == NULL:
            emb_prefetch_row(ng.W_out + <Py_ssize_t>ids[j] * ng.dim, ng.dim)
        else:       # the row the step will read: a hot row's copy once it has one
            emb_prefetch_row(hot_row_again(ng.hot, ids[j]), ng.dim)


cdef struct SliceSteps:
    # what a slice's loss steps need besides the driver's settings: the step's arguments, the negatives
    # drawn for it and the thread's hot rows
    StepArgs a
    Negatives ng
    HotRows hot
    HotRows hot_in       # the thread's copies of the same classes' input rows, where the driver opened them


cdef inline void draw_negatives(Sampler sampler, uint64_t *rng, const float *query, SliceSteps *s) noexcept nogil:
    """Give the step (whose ``target`` is set) its ``k`` negatives and their log-probabilities.

    With a query-free sampler the set of the following example is drawn now, so its rows are in cache by
    the time it is needed (the draws come in the same order, so runs stay reproducible).
    """
    cdef Negatives *ng = &s.ng
    cdef StepArgs *a = &s.a
    cdef int half = 0
    if not ng.ahead:
        _draw_half(sampler, rng, query, a.target, ng, 0)
    else:
        if ng.ready:
            ng.cur = 1 - ng.cur
        else:
            _draw_half(sampler, rng, query, a.target, ng, ng.cur)
        _draw_half(sampler, rng, query, a.target, ng, 1 - ng.cur)
        ng.ready = True
        half = ng.cur
        if ng.logq != NULL:
            ng.tlq[half] = sampler.log_prob(a.target)     # drawn ahead: the target was not known then
    a.neg = ng.ids + half * ng.k
    a.neg_logq = NULL if ng.logq == NULL else ng.logq + half * ng.k
    a.target_logq = ng.tlq[half]


cdef inline int steps_begin(SliceSteps *s, const RunConfig *run, const HotSpec *spec, Loss loss, Sampler sampler,
                            int batch) noexcept nogil:
    """Allocate a slice's step buffers: ``dH`` for ``batch`` inputs, the loss's scratch for the run's columns
    and negatives a step, the negatives, and the thread's copies of the hot rows of ``spec`` (when the loss
    allows them); -1 when out of memory (nothing left allocated).
    """
    cdef int k = run.negative, dim = run.dim
    cdef float *W_out = run.W_out
    cdef StepArgs *a = &s.a
    cdef Negatives *ng = &s.ng
    cdef HotRows *hot = &s.hot
    memset(s, 0, sizeof(SliceSteps))        # no hot rows, no buffers yet (steps_end frees what is not NULL)
    a.W_out, a.dim, a.k, a.m = W_out, dim, k, 1
    a.dH = <float *> malloc(<size_t>batch * dim * sizeof(float))
    a.work = scratch_new(batch, run.columns, k)
    cdef int status = negatives_init(ng, sampler is not None and sampler.query_free, k, loss.needs_logq,
                                     run.sampler_scratch, W_out, dim)
    a.neg = ng.ids
    a.neg_logq = ng.logq
    if spec.n > 0 and loss.private_rows and status == 0:
        status = hot_open(hot, spec, W_out, dim, False)
        if status == 0:
            a.hot = ng.hot = hot
    if a.dH == NULL or a.work == NULL or status != 0:
        steps_end(s)
        return -1
    return 0


cdef inline void hot_tick(SliceSteps *s) noexcept nogil:
    """Count one example; flush the hot rows every ``hot.every``."""
    if s.hot.n:
        s.hot.since += 1
        if s.hot.since >= s.hot.every:
            hot_flush(&s.hot)
            if s.hot_in.n:
                hot_flush(&s.hot_in)


cdef inline void steps_end(SliceSteps *s) noexcept nogil:
    """Write the hot rows back and free what :func:`steps_begin` allocated."""
    cdef StepArgs *a = &s.a
    cdef HotRows *hot = &s.hot
    hot_close(hot)
    hot_close(&s.hot_in)
    a.hot = NULL
    free(a.dH)
    scratch_free(a.work)
    negatives_free(&s.ng)
    a.dH = NULL
    a.work = NULL
