# cython: cdivision=True
"""The ``pairs`` driver: (context item, target item) pairs drawn from a co-occurrence matrix.

Each step draws one stored entry ``(i, j)`` of the matrix with probability proportional to its count (an
alias table over the entries: O(1) per draw, memory O(nnz), no expanded pair list and no shuffling), takes
``h = W_in[i]`` and makes one loss step towards target ``j``.  An epoch is as many draws as the matrix has
pair occurrences.  A chunk of draws is split into slices trained by OpenMP threads with their own random
generator (Hogwild updates), as in the ``windows`` driver.
"""
from cython.parallel cimport prange
from libc.stdint cimport uint64_t, uint32_t, int32_t
from libc.stdlib cimport malloc, free

from embkit._kernels.common cimport emb_axpy, emb_prefetch_row, rng_next, mix_seed
from embkit._kernels.drive cimport (SliceResult, check_objective, check_ids, loss_classes, slice_count,
                                    slices_new, slices_total, Negatives, linear_lr, negatives_init,
                                    negatives_free, next_negatives, neg_ids, neg_logq)
from embkit._kernels.losses cimport Loss, Scratch, scratch_new, scratch_free
from embkit._kernels.samplers cimport Sampler, AliasSampler, AliasCell

cdef struct PairConfig:
    float *W_in
    float *W_out
    int dim
    const int32_t *ctx         # context item of every stored entry
    const int32_t *tgt         # target item of every stored entry
    const AliasCell *cells     # alias table over the entries, by count
    uint64_t n_entries
    int negative
    double alpha
    double min_alpha
    double total               # pairs the whole run trains
    double before              # pairs trained before this chunk
    int columns
    Py_ssize_t sampler_scratch


cdef inline uint64_t draw_entry(const PairConfig *c, uint64_t *rng) noexcept nogil:
    cdef uint64_t r = rng_next(rng)
    cdef uint64_t e = ((r >> 32) * c.n_entries) >> 32
    if <uint32_t>r >= c.cells[e].threshold:
        e = <uint64_t>c.cells[e].alias
    return e


cdef int train_pairs(const PairConfig *c, Loss loss, Sampler sampler, long long first, long long count,
                     uint64_t seed, SliceResult *out) noexcept nogil:
    """Train ``count`` pairs (the slice starting at pair ``first`` of the chunk); -1 if out of memory."""
    cdef int dim = c.dim
    cdef int k = c.negative
    cdef float *dH = <float *> malloc(dim * sizeof(float))
    cdef Scratch *work = scratch_new(1, c.columns, k)
    cdef Negatives ng
    cdef int ng_status = negatives_init(&ng, sampler is not None and sampler.query_free, k, loss.needs_logq,
                                        c.sampler_scratch, c.W_out, dim)
    if dH == NULL or work == NULL or ng_status != 0:
        free(dH); scratch_free(work); negatives_free(&ng)
        return -1
    cdef uint64_t rng = seed
    cdef double total_loss = 0.0
    cdef long long n
    cdef int half = 0, i, j
    cdef float *h
    cdef float lr = linear_lr(c.alpha, c.min_alpha, c.before + first, c.total)
    cdef uint64_t e = draw_entry(c, &rng), e_next
    for n in range(count):
        if (n & 1023) == 1023:
            lr = linear_lr(c.alpha, c.min_alpha, c.before + first + n, c.total)
        i = c.ctx[e]
        j = c.tgt[e]
        e_next = draw_entry(c, &rng)
        # the next pair's rows start loading while this one trains
        emb_prefetch_row(c.W_in + <Py_ssize_t>c.ctx[e_next] * dim, dim)
        emb_prefetch_row(c.W_out + <Py_ssize_t>c.tgt[e_next] * dim, dim)
        h = c.W_in + <Py_ssize_t>i * dim
        if k > 0:
            half = next_negatives(sampler, &rng, h, j, &ng)
        total_loss += loss.step(&h, 1, j, neg_ids(&ng, half), neg_logq(&ng, half), k, ng.tlq[half], lr,
                                c.W_out, dim, dH, work)
        emb_axpy(1.0, dH, h, dim)
        e = e_next
    free(dH); scratch_free(work); negatives_free(&ng)
    out.loss = total_loss
    out.examples = count
    out.words = count
    return 0


cdef class PairTrainer:
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
    cdef float[:, ::1] W_in
    cdef float[:, ::1] W_out
    cdef const int32_t[::1] contexts
    cdef const int32_t[::1] targets
    cdef AliasSampler entries
    cdef Loss loss
    cdef Sampler sampler
    cdef PairConfig cfg
    cdef uint64_t seed

    def __init__(self, float[:, ::1] W_in not None, float[:, ::1] W_out not None,
                 const int32_t[::1] contexts not None, const int32_t[::1] targets not None,
                 AliasSampler entries not None, Loss loss not None, Sampler sampler, int negative,
                 double alpha, double min_alpha, double total_pairs, uint64_t seed):
        check_objective(W_in.shape[1], W_out.shape[1], W_out.shape[0], loss, sampler, negative)
        if contexts.shape[0] != targets.shape[0] or contexts.shape[0] != entries.n_classes:
            raise ValueError("contexts, targets and the entry distribution must have the same length")
        if contexts.shape[0] == 0:
            raise ValueError("no pairs to train on")
        check_ids(contexts, W_in.shape[0], "context ids")
        check_ids(targets, loss_classes(loss, W_out.shape[0]), "target ids")
        self.W_in = W_in
        self.W_out = W_out
        self.contexts = contexts
        self.targets = targets
        self.entries = entries
        self.loss = loss
        self.sampler = sampler
        self.seed = seed
        c = &self.cfg
        c.W_in = &W_in[0, 0]
        c.W_out = &W_out[0, 0]
        c.dim = W_in.shape[1]
        c.ctx = &contexts[0]
        c.tgt = &targets[0]
        c.cells = entries.cells
        c.n_entries = contexts.shape[0]
        c.negative = negative if loss.uses_negatives else 0
        c.alpha = alpha
        c.min_alpha = min_alpha
        c.total = total_pairs if total_pairs > 0 else 1.0
        c.columns = loss.columns(c.negative, W_out.shape[0])
        c.sampler_scratch = sampler.scratch_bytes() if sampler is not None else 0

    def before_chunk(self, double progress):
        """Let an adaptive sampler refresh what it derives from the output table (between chunks)."""
        if self.sampler is not None and not self.sampler.query_free:
            self.sampler.refresh(progress)

    def train_chunk(self, long long n_pairs, double pairs_before, uint64_t chunk_seed, int n_threads,
                    int slice_index=-1):
        """Train ``n_pairs`` draws; returns ``(loss_sum, pairs, pairs)``.

        Threads and slices work as in the ``windows`` driver: ``slice_index = -1`` runs every slice on
        ``n_threads`` OpenMP threads, ``slice_index = t`` only slice ``t`` of ``n_threads`` (GIL released).
        """
        if n_pairs <= 0:
            return 0.0, 0, 0
        cdef PairConfig c = self.cfg
        c.before = pairs_before
        cdef int n_slices = slice_count(n_threads, slice_index)
        cdef SliceResult *res = slices_new(n_slices)
        cdef int t
        cdef long long per = n_pairs // n_slices, extra = n_pairs % n_slices
        cdef Loss loss = self.loss
        cdef Sampler sampler = self.sampler
        cdef uint64_t base = mix_seed(self.seed, chunk_seed)
        try:
            if slice_index >= 0:
                t = slice_index
                with nogil:
                    res[t].status = train_pairs(&c, loss, sampler, t * per + (t if t < extra else extra),
                                                per + (1 if t < extra else 0), mix_seed(base, t), &res[t])
            else:
                for t in prange(n_slices, nogil=True, schedule="dynamic", chunksize=1, num_threads=n_threads):
                    res[t].status = train_pairs(&c, loss, sampler, t * per + (t if t < extra else extra),
                                                per + (1 if t < extra else 0), mix_seed(base, t), &res[t])
            return slices_total(res, n_slices)
        finally:
            free(res)
