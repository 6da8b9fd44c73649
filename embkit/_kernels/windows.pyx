# cython: cdivision=True
"""The ``windows`` driver: skip-gram and CBOW over an encoded chunk of a token stream.

A chunk is an int32 array of word ids plus the end offset of every sentence in it.  It is cut into slices of
whole sentences with about equal token counts, which the worker threads of :mod:`embkit._kernels.drive`
train; threads update the shared tables without locks (Hogwild), each with its own random generator and
scratch buffers.
"""
import numpy as np

from libc.stdint cimport uint64_t, int32_t, int64_t
from libc.stdlib cimport calloc, malloc, free
from libc.string cimport memset

from embkit._kernels.common cimport emb_axpy, emb_scale_copy, emb_prefetch_row, rng_uniform, rng_below
from embkit._kernels.drive cimport (ChunkJob, Driver, RunConfig, SliceResult, SliceSteps, chunk_job,
                                    check_ids, Negatives, linear_lr, steps_begin, steps_end, hot_tick, draw_negatives)
from embkit._kernels.hot cimport HotRows, HotSpec, hot_close, hot_flush, hot_open, hot_row
from embkit._kernels.losses cimport Loss, StepArgs
from embkit._kernels.samplers cimport Sampler

cdef struct Config:
    RunConfig run
    const float *keep          # per-word keep probability (NULL: no subsampling)
    int window
    int shrink                 # draw a reduced window per centre word (word2vec); 0: always the full window
    const float *lockf         # per-word factor of input-row updates, indexed modulo lockf_len (NULL: all 1)
    Py_ssize_t lockf_len
    int sg
    int cbow_mean
    int shared_negatives
    const int32_t *tokens
    const int32_t *ends


cdef inline float learning_rate(const Config *c, Py_ssize_t pos) noexcept nogil:
    return linear_lr(c.run.alpha, c.run.min_alpha, c.run.before + pos, c.run.total)


cdef inline Py_ssize_t subsample(const Config *c, Py_ssize_t start, Py_ssize_t end, int32_t *buf,
                                  uint64_t *rng) noexcept nogil:
    """Copy sentence ``[start, end)`` into ``buf`` without the words subsampling drops; return its length."""
    cdef Py_ssize_t p, n = 0
    cdef int32_t w
    cdef float kp
    for p in range(start, end):
        w = c.tokens[p]
        if c.keep != NULL:
            kp = c.keep[w]
            if kp < 1.0 and kp < rng_uniform(rng):
                continue
        buf[n] = w
        n += 1
    return n


cdef struct Banks:
    # the sets of hot-row copies a thread deals its sentences to in turn (``HotSpec.banks``): set 0 is the
    # slice's own (``SliceSteps.hot`` and ``hot_in``), the others' output and input copies are ``extra``
    int n
    HotRows *extra          # 2 * (n - 1)
    long long since         # examples since the other sets were last written back


cdef inline int banks_open(Banks *b, SliceSteps *st, const HotSpec *spec, const Config *c) noexcept nogil:
    """Open the sets of copies beyond the slice's own; -1 when out of memory (:func:`banks_close` frees)."""
    b.n = spec.banks if st.hot.n and spec.banks > 1 else 1
    b.since = 0
    b.extra = NULL
    if b.n == 1:
        return 0
    b.extra = <HotRows *> calloc(2 * (b.n - 1), sizeof(HotRows))
    if b.extra == NULL:
        return -1
    cdef int k
    for k in range(b.n - 1):
        if hot_open(&b.extra[2 * k], spec, c.run.W_out, c.run.dim, False) != 0:
            return -1
        if spec.inputs and hot_open(&b.extra[2 * k + 1], spec, c.run.W_in, c.run.dim, True) != 0:
            return -1
    return 0


cdef inline HotRows *bank_out(Banks *b, SliceSteps *st, int k) noexcept nogil:
    return &st.hot if k == 0 else &b.extra[2 * (k - 1)]


cdef inline HotRows *bank_in(Banks *b, SliceSteps *st, int k) noexcept nogil:
    return &st.hot_in if k == 0 else &b.extra[2 * (k - 1) + 1]


cdef inline void banks_sentence(Banks *b, SliceSteps *st, Py_ssize_t n) noexcept nogil:
    """At the start of a sentence of ``n`` examples: write the other sets back once ``hot.every`` examples
    have passed since they last were (the slice's own set goes back on its own, :func:`hot_tick`)."""
    cdef int k
    if b.since >= st.hot.every:
        for k in range(1, b.n):
            hot_flush(bank_out(b, st, k))
            if bank_in(b, st, k).n:
                hot_flush(bank_in(b, st, k))
        b.since = 0
    b.since += n


cdef inline void banks_close(Banks *b) noexcept nogil:
    """Write back and free the sets beyond the slice's own."""
    cdef int i
    if b.extra != NULL:
        for i in range(2 * (b.n - 1)):
            hot_close(&b.extra[i])
    free(b.extra)
    b.extra = NULL


cdef int train_sentences(const Config *c, Loss loss, Sampler sampler, const HotSpec *spec, Py_ssize_t s_begin,
                         Py_ssize_t s_end, uint64_t slice_seed, SliceResult *out) noexcept nogil:
    """Train sentences ``[s_begin, s_end)`` of the chunk; returns -1 if scratch allocation failed."""
    cdef int dim = c.run.dim
    cdef int k = c.run.negative if loss.uses_negatives else 0
    cdef int batch = 2 * c.window if c.sg and c.shared_negatives else 1
    cdef Py_ssize_t start = 0 if s_begin == 0 else c.ends[s_begin - 1]
    cdef Py_ssize_t max_len = 0
    cdef Py_ssize_t s
    for s in range(s_begin, s_end):
        if c.ends[s] - (0 if s == 0 else c.ends[s - 1]) > max_len:
            max_len = c.ends[s] - (0 if s == 0 else c.ends[s - 1])
    cdef SliceSteps st
    if steps_begin(&st, &c.run, spec, loss, sampler, batch) != 0:
        return -1
    cdef StepArgs *a = &st.a
    cdef HotRows *hin = &st.hot_in
    if st.hot.n and spec.inputs and hot_open(hin, spec, c.run.W_in, dim, True) != 0:
        steps_end(&st)
        return -1
    cdef Banks banks
    cdef int bank = 0
    cdef long long dealt = 0
    if banks_open(&banks, &st, spec, c) != 0:
        banks_close(&banks); steps_end(&st)
        return -1
    cdef float *dH = a.dH
    cdef int32_t *buf = <int32_t *> malloc((max_len + 1) * sizeof(int32_t))
    cdef float *hid = <float *> malloc(dim * sizeof(float))
    cdef float **rows = <float **> malloc(2 * c.window * sizeof(float *))
    cdef float *lock = <float *> malloc(2 * c.window * sizeof(float))   # update factor of each context row
    if buf == NULL or hid == NULL or rows == NULL or lock == NULL:
        free(buf); free(hid); free(rows); free(lock); banks_close(&banks); steps_end(&st)
        return -1

    cdef uint64_t rng = slice_seed
    cdef double total_loss = 0.0
    cdef long long examples = 0, words = 0, kept = 0
    cdef Py_ssize_t end, i, j, lo, hi, n
    cdef int b, m
    cdef const float *query
    for s in range(s_begin, s_end):
        end = c.ends[s]
        a.lr = learning_rate(c, start)
        n = subsample(c, start, end, buf, &rng)
        words += end - start
        kept += n
        if banks.n > 1:             # a sentence a set of copies, in turn
            banks_sentence(&banks, &st, n)
            bank = dealt % banks.n
            dealt += 1
            a.hot = st.ng.hot = bank_out(&banks, &st, bank)
            hin = bank_in(&banks, &st, bank)
        for i in range(n):
            if (i & 1023) == 1023:
                a.lr = learning_rate(c, start + (i * (end - start)) // n)
            a.target = buf[i]
            hot_tick(&st)        # before the rows are taken: a flush writes the copies back and lets them go
            b = rng_below(&rng, c.window) if c.shrink else 0
            lo = i - c.window + b
            if lo < 0:
                lo = 0
            hi = i + c.window + 1 - b
            if hi > n:
                hi = n
            m = 0
            for j in range(lo, hi):
                if j != i:
                    rows[m] = hot_row(hin, buf[j]) if hin.n else c.run.W_in + <Py_ssize_t>buf[j] * dim
                    lock[m] = 1.0 if c.lockf == NULL else c.lockf[buf[j] % c.lockf_len]
                    m += 1
            if m == 0:
                continue
            if c.sg and batch > 1:
                # the centre's context words share one negative set: one mini-batch step; a sampler that
                # needs a query gets the mean of the context rows
                if k > 0:
                    query = NULL
                    if not st.ng.ahead:
                        memset(hid, 0, dim * sizeof(float))
                        for j in range(m):
                            emb_axpy(1.0 / m, rows[j], hid, dim)
                        query = hid
                    draw_negatives(sampler, &rng, query, &st)
                a.H = rows
                a.m = m
                total_loss += loss.step(a)
                for j in range(m):
                    emb_axpy(lock[j], dH + j * dim, rows[j], dim)
                examples += m
            elif c.sg:
                a.m = 1
                for j in range(m):
                    if j + 1 < m:
                        emb_prefetch_row(rows[j + 1], dim)
                    if k > 0:
                        draw_negatives(sampler, &rng, rows[j], &st)
                    a.H = &rows[j]
                    total_loss += loss.step(a)
                    emb_axpy(lock[j], dH, rows[j], dim)
                examples += m
            else:
                # CBOW: the hidden vector is the mean (or sum) of the context rows
                memset(hid, 0, dim * sizeof(float))
                for j in range(m):
                    emb_axpy(1.0, rows[j], hid, dim)
                if c.cbow_mean:
                    emb_scale_copy(1.0 / m, hid, hid, dim)
                if k > 0:
                    draw_negatives(sampler, &rng, hid, &st)
                a.H = &hid
                a.m = 1
                total_loss += loss.step(a)
                for j in range(m):
                    emb_axpy(lock[j], dH, rows[j], dim)
                examples += 1
        start = end
    banks_close(&banks)
    free(buf); free(hid); free(rows); free(lock); steps_end(&st)
    out.loss = total_loss
    out.examples = examples
    out.units = words
    out.kept = kept
    return 0


cdef int check_sentence_ends(const int32_t[::1] ends) except -1:
    """ValueError unless sentence ends are positive and never decrease (sentences are read between them)."""
    cdef Py_ssize_t i
    cdef bint ok = ends[0] >= 0
    with nogil:
        for i in range(1, ends.shape[0]):
            if ends[i] < ends[i - 1]:
                ok = False
                break
    if not ok:
        raise ValueError("sentence ends must be >= 0 and never decrease")
    return 0


def split_slices(const int32_t[::1] ends, int n_threads):
    """Sentence index boundaries that cut a chunk into ``n_threads`` slices of about equal tokens."""
    n_sent = ends.shape[0]
    total = ends[n_sent - 1] if n_sent else 0
    bounds = np.empty(n_threads + 1, dtype=np.intc)
    bounds[0] = 0
    ends_np = np.asarray(ends)
    for t in range(1, n_threads):
        bounds[t] = int(np.searchsorted(ends_np, total * t // n_threads, side="left"))
        if bounds[t] < bounds[t - 1]:
            bounds[t] = bounds[t - 1]
    bounds[n_threads] = n_sent
    return bounds


cdef class WindowTrainer(Driver):
    """Tables, loss, sampler and settings of one training run of the ``windows`` driver.

    Parameters
    ----------
    W_in, W_out : float32 C-contiguous arrays (n_words, dim)
        Input and output tables, updated in place.
    keep : float32 array or None
        Per-word keep probability for subsampling.
    loss, sampler : Loss, Sampler
    window, sg, cbow_mean, negative, shared_negatives : int
    alpha, min_alpha : float
        Learning rate at the start and end of the run (linear decay by global progress).
    total_words : float
        Words the whole run trains (epochs x words per epoch): the denominator of progress.
    seed : int
    lockf : float32 array or None
        Factor of every input-row update per word id, indexed modulo its length (gensim's
        ``vectors_lockf``: 0 freezes a word's vector); None updates every row fully.
    shrink_windows : bool
        Draw a reduced window in ``[1, window]`` per centre word (word2vec); False always uses ``window``.
    """
    cdef float[::1] keep
    cdef float[::1] lockf
    cdef Config cfg
    cdef Py_ssize_t n_ids   # word ids index W_in rows and are the classes of the loss

    def __init__(self, float[:, ::1] W_in not None, float[:, ::1] W_out not None, keep, Loss loss not None,
                 Sampler sampler, int window, bint sg, bint cbow_mean, int negative, bint shared_negatives,
                 double alpha, double min_alpha, double total_words, uint64_t seed, lockf=None,
                 bint shrink_windows=True):
        self.set_run(&self.cfg.run, W_in, W_out, loss, sampler, negative, alpha, min_alpha, total_words, seed)
        self.n_ids = min(W_in.shape[0], self.n_classes)
        if keep is not None:
            self.keep = np.ascontiguousarray(keep, dtype=np.float32)
            if self.keep.shape[0] != W_in.shape[0]:
                raise ValueError("keep has %d entries for %d words" % (self.keep.shape[0], W_in.shape[0]))
            self.cfg.keep = &self.keep[0]
        else:
            self.cfg.keep = NULL
        self.cfg.window = window
        self.cfg.shrink = shrink_windows
        self.cfg.lockf = NULL
        self.cfg.lockf_len = 0
        if lockf is not None:
            self.lockf = np.ascontiguousarray(lockf, dtype=np.float32).reshape(-1)
            if self.lockf.shape[0] == 0:
                raise ValueError("lockf is empty: give one factor, or one per word")
            self.cfg.lockf = &self.lockf[0]
            self.cfg.lockf_len = self.lockf.shape[0]
        self.cfg.sg = sg
        self.cfg.cbow_mean = cbow_mean
        self.cfg.shared_negatives = shared_negatives

    cdef int train_slice(self, const void *config, Py_ssize_t begin, Py_ssize_t end, uint64_t seed,
                         SliceResult *out) noexcept nogil:
        return train_sentences(<const Config *> config, self.loss, self.sampler, &self.hot, begin, end, seed, out)

    cdef ChunkJob open_chunk(self, tuple args, double before, int n_slices):
        """A chunk is ``(tokens, ends)``: int32 word ids and the end offset of each sentence; its slices are
        runs of whole sentences with about equal token counts."""
        if len(args) != 2:
            raise TypeError("a windows chunk is (tokens, ends), got %d arrays" % len(args))
        cdef const int32_t[::1] tokens = args[0]
        cdef const int32_t[::1] ends = args[1]
        if ends.shape[0] == 0:
            return chunk_job(sizeof(Config), 0, None)
        if ends[ends.shape[0] - 1] != tokens.shape[0]:
            raise ValueError("the last sentence end (%d) must equal the chunk length (%d)"
                             % (ends[ends.shape[0] - 1], tokens.shape[0]))
        check_ids(tokens, self.n_ids, "word ids")
        check_sentence_ends(ends)
        cdef ChunkJob job = chunk_job(sizeof(Config), n_slices, (args[0], args[1]))
        cdef Config *c = <Config *> job.config
        c[0] = self.cfg
        c.tokens = &tokens[0]
        c.ends = &ends[0]
        c.run.before = before
        cdef int[::1] bounds = split_slices(ends, n_slices)
        cdef int t
        for t in range(n_slices + 1):
            job.bounds[t] = bounds[t]
        return job
