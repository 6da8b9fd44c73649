# cython: cdivision=True
"""The ``pairs`` driver: (context item, target item) pairs drawn from a co-occurrence matrix.

Each step draws one stored entry ``(i, j)`` of the matrix with probability proportional to its count (an
alias table over the entries: O(1) per draw, memory O(nnz), no expanded pair list and no shuffling), takes
``h = W_in[i]`` and makes one loss step towards target ``j``.  An epoch is as many draws as the matrix has
pair occurrences.  A chunk of draws is cut into slices that the worker threads of
:mod:`embkit._kernels.drive` train with their own random generators (Hogwild updates).
"""
from libc.stdint cimport uint64_t, uint32_t, int32_t
from libc.stdlib cimport malloc, free

from embkit._kernels.common cimport emb_axpy, emb_prefetch_row, rng_next
from embkit._kernels.drive cimport (ChunkJob, Driver, RunConfig, SliceResult, SliceSteps, chunk_job,
                                    check_ids, Negatives, linear_lr, steps_begin, steps_end, hot_tick, draw_negatives)
from embkit._kernels.hot cimport HotSpec
from embkit._kernels.losses cimport Loss, StepArgs
from embkit._kernels.samplers cimport Sampler, AliasSampler, AliasCell

cdef struct PairConfig:
    RunConfig run
    const int32_t *ctx         # context item of every stored entry
    const int32_t *tgt         # target item of every stored entry
    const AliasCell *cells     # alias table over the entries, by count
    uint64_t n_entries


cdef inline uint64_t draw_entry(const PairConfig *c, uint64_t *rng) noexcept nogil:
    cdef uint64_t r = rng_next(rng)
    cdef uint64_t e = ((r >> 32) * c.n_entries) >> 32
    if <uint32_t>r >= c.cells[e].threshold:
        e = <uint64_t>c.cells[e].alias
    return e


cdef int train_pairs(const PairConfig *c, Loss loss, Sampler sampler, const HotSpec *spec, long long first,
                     long long count, uint64_t seed, SliceResult *out) noexcept nogil:
    """Train ``count`` pairs (the slice starting at pair ``first`` of the chunk); -1 if out of memory."""
    cdef int dim = c.run.dim
    cdef int k = c.run.negative
    cdef SliceSteps st
    if steps_begin(&st, &c.run, spec, loss, sampler, 1) != 0:
        return -1
    cdef StepArgs *a = &st.a
    cdef float *dH = a.dH
    cdef uint64_t rng = seed
    cdef double total_loss = 0.0
    cdef long long n
    cdef float *h
    a.H = &h
    a.lr = linear_lr(c.run.alpha, c.run.min_alpha, c.run.before + first, c.run.total)
    cdef uint64_t e = draw_entry(c, &rng), e_next
    for n in range(count):
        if (n & 1023) == 1023:
            a.lr = linear_lr(c.run.alpha, c.run.min_alpha, c.run.before + first + n, c.run.total)
        h = c.run.W_in + <Py_ssize_t>c.ctx[e] * dim
        a.target = c.tgt[e]
        e_next = draw_entry(c, &rng)
        # the next pair's rows start loading while this one trains
        emb_prefetch_row(c.run.W_in + <Py_ssize_t>c.ctx[e_next] * dim, dim)
        emb_prefetch_row(c.run.W_out + <Py_ssize_t>c.tgt[e_next] * dim, dim)
        hot_tick(&st)
        if k > 0:
            draw_negatives(sampler, &rng, h, &st)
        total_loss += loss.step(a)
        emb_axpy(1.0, dH, h, dim)
        e = e_next
    steps_end(&st)
    out.loss = total_loss
    out.examples = count
    out.units = count
    out.kept = count
    return 0


cdef class PairTrainer(Driver):
    """Tables, pair distribution, loss, sampler and settings of one run of the ``pairs`` driver.

    Parameters
    ----------
    W_in, W_out : float32 C-contiguous arrays (n_items, dim)
        Context (input) and target (output) tables, updated in place.
    contexts, targets : int32 arrays (n_entries,)
        The stored entries of the co-occurrence matrix.
    entries : AliasSampler
        Distribution over the entries (proportional to their counts).
    loss, sampler : Loss, Sampler
    negative : int
        Negatives per pair.
    alpha, min_alpha : float
        Learning rate at the start and end of the run (linear decay by pairs trained).
    total_pairs : float
        Pairs the whole run trains (epochs x pairs per epoch).
    seed : int
    """
    cdef const int32_t[::1] contexts
    cdef const int32_t[::1] targets
    cdef AliasSampler entries
    cdef PairConfig cfg

    def __init__(self, float[:, ::1] W_in not None, float[:, ::1] W_out not None,
                 const int32_t[::1] contexts not None, const int32_t[::1] targets not None,
                 AliasSampler entries not None, Loss loss not None, Sampler sampler, int negative,
                 double alpha, double min_alpha, double total_pairs, uint64_t seed):
        self.set_run(&self.cfg.run, W_in, W_out, loss, sampler, negative, alpha, min_alpha, total_pairs, seed)
        if contexts.shape[0] != targets.shape[0] or contexts.shape[0] != entries.n_classes:
            raise ValueError("contexts, targets and the entry distribution must have the same length")
        if contexts.shape[0] == 0:
            raise ValueError("no pairs to train on")
        check_ids(contexts, W_in.shape[0], "context ids")
        check_ids(targets, self.n_classes, "target ids")
        self.contexts = contexts
        self.targets = targets
        self.entries = entries
        c = &self.cfg
        c.ctx = &contexts[0]
        c.tgt = &targets[0]
        c.cells = entries.cells
        c.n_entries = contexts.shape[0]

    cdef int train_slice(self, const void *config, Py_ssize_t begin, Py_ssize_t end, uint64_t seed,
                         SliceResult *out) noexcept nogil:
        return train_pairs(<const PairConfig *> config, self.loss, self.sampler, &self.hot, begin, end - begin, seed,
                           out)

    cdef ChunkJob open_chunk(self, tuple args, double before, int n_slices):
        """A chunk is ``(n_pairs,)``: that many draws, cut into slices of equal counts."""
        if len(args) != 1:
            raise TypeError("a pairs chunk is (n_pairs,), got %d values" % len(args))
        cdef long long n_pairs = args[0]
        if n_pairs <= 0:
            return chunk_job(sizeof(PairConfig), 0, None)
        cdef ChunkJob job = chunk_job(sizeof(PairConfig), n_slices, None)
        cdef PairConfig *c = <PairConfig *> job.config
        c[0] = self.cfg
        c.run.before = before
        cdef int t
        for t in range(n_slices + 1):
            job.bounds[t] = n_pairs * t // n_slices
        return job
