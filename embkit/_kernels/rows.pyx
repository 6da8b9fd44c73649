# cython: cdivision=True
"""The ``rows`` driver: sparse feature rows with label sets (extreme classification).

For example ``r`` the hidden vector is the weighted sum of its feature rows, ``h = sum_f x_rf W_in[f]``,
optionally L2-normalised and divided by a temperature: ``H = h / (|h| tau)``.  Each positive label of the
example (or one drawn at random, with ``one_label``) is a target of one loss step on ``H``, whose negatives
never include the example's other positive labels (they are dropped as accidental hits); the steps'
gradients are summed, taken back through the normalisation and added to the feature rows.  With
``normalize_classes`` the output rows a step touched are projected back onto the unit sphere afterwards,
so scores are cosines over ``tau`` (the RF-softmax setting).  Chunks of example ids are cut into slices
that the worker threads of :mod:`embkit._kernels.drive` train with their own random generators (Hogwild).
"""
import numpy as np

from cython.parallel cimport prange
from libc.math cimport sqrt
from libc.stdint cimport uint8_t, uint64_t, int32_t, int64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memset

from embkit._kernels.common cimport emb_axpy, emb_dot, emb_scale_copy, rng_below, zeroed
from embkit._kernels.drive cimport (ChunkJob, Driver, RunConfig, SliceResult, SliceSteps, chunk_job,
                                    check_ids, check_offsets, Negatives, linear_lr, steps_begin, steps_end, hot_tick,
                                    draw_negatives)
from embkit._kernels.hot cimport HotSpec, unit_row
from embkit._kernels.losses cimport Loss, StepArgs, out_row_again
from embkit._kernels.samplers cimport Sampler

cdef struct RowConfig:
    RunConfig run
    int n_labels
    const int64_t *x_ptr
    const int32_t *x_idx
    const float *x_val
    const int64_t *y_ptr
    const int32_t *y_idx
    const int32_t *order       # example ids of this chunk
    bint normalize
    bint normalize_classes
    bint one_label
    bint all_rows              # the loss touches every output row (full softmax)
    float inv_tau


cdef inline void renormalize_touched(const RowConfig *c, const StepArgs *a) noexcept nogil:
    """Project the output rows step ``a`` updated back onto the unit sphere."""
    cdef int j
    if c.all_rows:
        for j in range(c.n_labels):
            unit_row(c.run.W_out + <Py_ssize_t>j * c.run.dim, c.run.dim)
        return
    unit_row(out_row_again(a, a.target), c.run.dim)
    for j in range(a.k):
        unit_row(out_row_again(a, a.neg[j]), c.run.dim)


cdef inline bint in_sorted(const int32_t *a, int n, int x) noexcept nogil:
    """Whether ``x`` is in the ascending array ``a[0:n]`` (binary search)."""
    cdef int lo = 0, hi = n, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo < n and a[lo] == x


cdef inline void drop_other_positives(int *neg, int k, int label, const int32_t *labels, int n_lab) noexcept nogil:
    """Turn negatives that are other positive labels of the example into the target, which the losses drop
    (accidental hits): a multi-label example's own labels are never pushed down as its negatives."""
    cdef int j
    for j in range(k):
        if neg[j] != label and in_sorted(labels, n_lab, neg[j]):
            neg[j] = label


cdef int train_rows(const RowConfig *c, Loss loss, Sampler sampler, const HotSpec *spec, Py_ssize_t begin,
                    Py_ssize_t end, uint64_t seed, SliceResult *out) noexcept nogil:
    """Train the examples ``order[begin:end]``; -1 if out of memory."""
    cdef int dim = c.run.dim
    cdef SliceSteps st
    if steps_begin(&st, &c.run, spec, loss, sampler, 1) != 0:
        return -1
    cdef StepArgs *a = &st.a
    cdef float *h = <float *> malloc(dim * sizeof(float))
    cdef float *H = <float *> malloc(dim * sizeof(float))
    cdef float *g = <float *> malloc(dim * sizeof(float))
    if h == NULL or H == NULL or g == NULL:
        free(h); free(H); free(g); steps_end(&st)
        return -1
    cdef float *Hp = H
    a.H = &Hp
    cdef uint64_t rng = seed
    cdef double total_loss = 0.0
    cdef long long examples = 0, steps = 0
    cdef Py_ssize_t p, q, r, last
    cdef int n_lab
    cdef float norm = 1.0, scale, proj
    for p in range(begin, end):
        r = c.order[p]
        a.lr = linear_lr(c.run.alpha, c.run.min_alpha, c.run.before + p, c.run.total)
        n_lab = <int>(c.y_ptr[r + 1] - c.y_ptr[r])
        if n_lab == 0:
            continue
        memset(h, 0, dim * sizeof(float))
        for q in range(c.x_ptr[r], c.x_ptr[r + 1]):
            emb_axpy(c.x_val[q], c.run.W_in + <Py_ssize_t>c.x_idx[q] * dim, h, dim)
        scale = c.inv_tau
        if c.normalize:
            norm = sqrt(emb_dot(h, h, dim))
            if norm <= 0:
                continue
            scale = c.inv_tau / norm
        emb_scale_copy(scale, h, H, dim)
        memset(g, 0, dim * sizeof(float))
        hot_tick(&st)
        q = c.y_ptr[r]
        last = c.y_ptr[r + 1]
        if c.one_label:
            q += rng_below(&rng, n_lab)
            last = q + 1
        while q < last:
            a.target = c.y_idx[q]
            if a.k > 0:
                draw_negatives(sampler, &rng, H, &st)
                if n_lab > 1:
                    drop_other_positives(<int *> a.neg, a.k, a.target, c.y_idx + c.y_ptr[r], n_lab)
            total_loss += loss.step(a)
            if c.normalize_classes:
                renormalize_touched(c, a)
            emb_axpy(1.0, a.dH, g, dim)
            steps += 1
            q += 1
        # g = -lr dL/dH; dL/dh = scale (I - u u^T) dL/dH with u = h / |h| when normalised
        if c.normalize:
            proj = emb_dot(H, g, dim) / (c.inv_tau * c.inv_tau)   # (u . g) |H|^2 / |H|^2 with |H| = inv_tau
            emb_axpy(-proj, H, g, dim)
        for q in range(c.x_ptr[r], c.x_ptr[r + 1]):
            emb_axpy(scale * c.x_val[q], g, c.run.W_in + <Py_ssize_t>c.x_idx[q] * dim, dim)
        examples += 1
    free(h); free(H); free(g); steps_end(&st)
    out.loss = total_loss
    out.examples = steps
    out.units = end - begin
    out.kept = end - begin
    return 0


cdef class RowTrainer(Driver):
    """Tables, examples, loss, sampler and settings of one run of the ``rows`` driver.

    Parameters
    ----------
    W_in : float32 C-contiguous array (n_features, dim)
        Feature rows.
    W_out : float32 C-contiguous array (n_labels, dim)
        Class rows (or hierarchical-softmax nodes).
    x_indptr, x_indices, x_data : CSR arrays (int64, int32, float32) of the feature matrix
    y_indptr, y_indices : CSR arrays (int64, int32) of the label matrix
    loss, sampler : Loss, Sampler
    negative : int
    normalize : bool
        L2-normalise the hidden vector.
    tau : float
        Temperature: scores are divided by it.
    normalize_classes : bool
        Keep the class rows on the unit sphere (projected after every step).
    one_label : bool
        Train on one positive label per example and visit (drawn at random) instead of all of them.
    alpha, min_alpha : float
        Learning rate at the start and end of the run (linear decay by examples trained).
    total_examples : float
        Examples the whole run visits (epochs x examples per epoch).
    seed : int
    """
    cdef object arrays
    cdef RowConfig cfg

    def __init__(self, float[:, ::1] W_in not None, float[:, ::1] W_out not None,
                 const int64_t[::1] x_indptr not None, const int32_t[::1] x_indices not None,
                 const float[::1] x_data not None, const int64_t[::1] y_indptr not None,
                 const int32_t[::1] y_indices not None, Loss loss not None, Sampler sampler, int negative,
                 bint normalize, double tau, bint normalize_classes, bint one_label, double alpha,
                 double min_alpha, double total_examples, uint64_t seed):
        self.set_run(&self.cfg.run, W_in, W_out, loss, sampler, negative, alpha, min_alpha, total_examples, seed)
        if x_indptr.shape[0] != y_indptr.shape[0]:
            raise ValueError("the feature and label matrices must have the same number of rows")
        if x_indices.shape[0] != x_data.shape[0]:
            raise ValueError("x_indices and x_data must have the same length")
        if not tau > 0:
            raise ValueError("tau must be > 0, got %r" % tau)
        if normalize_classes and loss.output_rows(W_out.shape[0]) != W_out.shape[0]:
            raise ValueError("normalize_classes needs one output row per class (not hierarchical softmax)")
        check_offsets(x_indptr, x_indices.shape[0], "feature")
        check_offsets(y_indptr, y_indices.shape[0], "label")
        check_ids(x_indices, W_in.shape[0], "feature ids")
        check_ids(y_indices, self.n_classes, "label ids")
        self.arrays = (x_indptr, x_indices, x_data, y_indptr, y_indices)
        c = &self.cfg
        c.n_labels = W_out.shape[0]
        c.x_ptr = &x_indptr[0]
        c.x_idx = &x_indices[0] if x_indices.shape[0] else NULL
        c.x_val = &x_data[0] if x_data.shape[0] else NULL
        c.y_ptr = &y_indptr[0]
        c.y_idx = &y_indices[0] if y_indices.shape[0] else NULL
        c.normalize = normalize
        c.normalize_classes = normalize_classes
        c.one_label = one_label
        c.all_rows = not loss.uses_negatives
        c.inv_tau = 1.0 / tau

    def hot_rows(self, ids=None, int every=1024, float scale=1.0, int limit=0):
        """:meth:`Driver.hot_rows`; with ``normalize_classes`` a written-back row is projected back onto the
        unit sphere, as a step's rows are."""
        Driver.hot_rows(self, ids, every, scale, limit)
        self.hot.unit = self.cfg.normalize_classes

    cdef int train_slice(self, const void *config, Py_ssize_t begin, Py_ssize_t end, uint64_t seed,
                         SliceResult *out) noexcept nogil:
        return train_rows(<const RowConfig *> config, self.loss, self.sampler, &self.hot, begin, end, seed, out)

    cdef ChunkJob open_chunk(self, tuple args, double before, int n_slices):
        """A chunk is ``(order,)``: int32 example (row) ids, cut into slices of equal counts.  Returns
        ``(loss_sum, label_steps, examples)`` when trained."""
        if len(args) != 1:
            raise TypeError("a rows chunk is (order,), got %d arrays" % len(args))
        cdef const int32_t[::1] order = args[0]
        cdef Py_ssize_t n = order.shape[0]
        if n == 0:
            return chunk_job(sizeof(RowConfig), 0, None)
        check_ids(order, (<object>self.arrays[0]).shape[0] - 1, "example ids")
        cdef ChunkJob job = chunk_job(sizeof(RowConfig), n_slices, args[0])
        cdef RowConfig *c = <RowConfig *> job.config
        c[0] = self.cfg
        c.order = &order[0]
        c.run.before = before
        cdef int t
        for t in range(n_slices + 1):
            job.bounds[t] = n * t // n_slices
        return job


cdef void top_of_row(const float *s, Py_ssize_t n, int k, int64_t *ids, float *vals) noexcept nogil:
    """The ``k`` largest of ``s[0:n]`` into ``ids``/``vals``, best first (ties: lower id first)."""
    cdef int filled = 0, a, b
    cdef Py_ssize_t j
    cdef float v
    for j in range(n):
        v = s[j]
        if filled == k and not v > vals[k - 1]:
            continue
        # insertion into the sorted top list (k is small)
        a = filled if filled < k else k - 1
        while a > 0 and v > vals[a - 1]:
            vals[a] = vals[a - 1]
            ids[a] = ids[a - 1]
            a -= 1
        vals[a] = v
        ids[a] = j
        if filled < k:
            filled += 1
    for b in range(filled, k):
        ids[b] = -1
        vals[b] = -1e38


def top_k_rows(const float[:, ::1] scores not None, int k, int n_threads=1):
    """Indices and values of the ``k`` largest scores of every row, best first, over ``n_threads`` threads.

    Rows with fewer than ``k`` columns are padded with id -1.  NaN scores are never selected.
    """
    if k < 1:
        raise ValueError("k must be >= 1, got %d" % k)
    cdef Py_ssize_t n = scores.shape[0], m = scores.shape[1], r
    ids = np.empty((n, k), dtype=np.int64)
    vals = np.empty((n, k), dtype=np.float32)
    cdef int64_t[:, ::1] iv = ids
    cdef float[:, ::1] vv = vals
    if n == 0:
        return ids, vals
    for r in prange(n, nogil=True, schedule="static", num_threads=max(1, n_threads)):
        top_of_row(&scores[r, 0] if m > 0 else NULL, m, k, &iv[r, 0], &vv[r, 0])
    return ids, vals


def top_k_sparse_rows(const int64_t[::1] indptr not None, const int32_t[::1] indices not None,
                      const float[::1] data not None, int k, int n_threads=1):
    """The ``k`` largest stored values of every row of a CSR matrix and their column ids, best first, over
    ``n_threads`` threads.

    Only stored entries compete (a row's missing entries are not zeros here); rows with fewer than ``k``
    stored entries are padded with id -1.  Ties: the entry stored first wins.
    """
    if k < 1:
        raise ValueError("k must be >= 1, got %d" % k)
    cdef Py_ssize_t n = indptr.shape[0] - 1, r, j
    if n < 0 or (n > 0 and (indptr[n] > data.shape[0] or indptr[n] > indices.shape[0])):
        raise ValueError("indptr does not fit the stored entries")
    ids = np.empty((max(n, 0), k), dtype=np.int64)
    vals = np.empty((max(n, 0), k), dtype=np.float32)
    cdef int64_t[:, ::1] iv = ids
    cdef float[:, ::1] vv = vals
    cdef int b
    if n <= 0:
        return ids, vals
    for r in prange(n, nogil=True, schedule="dynamic", num_threads=max(1, n_threads)):
        top_of_row(&data[indptr[r]] if indptr[r + 1] > indptr[r] else NULL, indptr[r + 1] - indptr[r], k,
                   &iv[r, 0], &vv[r, 0])
        for b in range(k):
            if iv[r, b] >= 0:
                iv[r, b] = indices[indptr[r] + iv[r, b]]
    return ids, vals


cdef inline void push_best(float v, int64_t id, int k, int *filled, int64_t *ids, float *vals) noexcept nogil:
    """Offer ``(v, id)`` to the sorted list of the ``k`` best (higher value first, then lower id)."""
    cdef int a
    if filled[0] == k and not (v > vals[k - 1] or (v == vals[k - 1] and id < ids[k - 1])):
        return
    a = filled[0] if filled[0] < k else k - 1
    while a > 0 and (v > vals[a - 1] or (v == vals[a - 1] and id < ids[a - 1])):
        vals[a] = vals[a - 1]
        ids[a] = ids[a - 1]
        a -= 1
    vals[a] = v
    ids[a] = id
    if filled[0] < k:
        filled[0] += 1


def top_k_sparse_products(const int64_t[::1] a_indptr not None, const int32_t[::1] a_indices not None,
                          const float[::1] a_data not None, const int64_t[::1] b_indptr not None,
                          const int32_t[::1] b_indices not None, const float[::1] b_data not None,
                          Py_ssize_t n_columns, int k, int n_threads=1):
    """The ``k`` largest positive entries of every row of the product ``A @ B`` of two CSR matrices, and their
    columns, best first (ties: the lower column first), without forming the product, over ``n_threads``
    threads.

    ``A`` is ``n x m`` and ``B`` ``m x n_columns`` (e.g. query rows against an inverted index of training
    rows).  A row of the product is summed into a dense accumulator of its thread, in the order of ``A``'s
    entries and then ``B``'s, then read back (every column, or the columns it reached when they are few);
    entries that are not positive never compete, and a row with fewer than ``k`` positive entries is padded
    with id -1 and value 0.
    """
    if k < 1:
        raise ValueError("k must be >= 1, got %d" % k)
    cdef Py_ssize_t n = a_indptr.shape[0] - 1, m = b_indptr.shape[0] - 1, r, e, f, j, t
    if n < 0 or m < 0 or a_indptr[n] > a_indices.shape[0] or a_indptr[n] > a_data.shape[0] \
            or b_indptr[m] > b_indices.shape[0] or b_indptr[m] > b_data.shape[0]:
        raise ValueError("an indptr does not fit its stored entries")
    for e in range(a_indptr[n]):
        if a_indices[e] < 0 or a_indices[e] >= m:
            raise ValueError("A has column %d, beyond B's %d rows" % (a_indices[e], m))
    for e in range(b_indptr[m]):
        if b_indices[e] < 0 or b_indices[e] >= n_columns:
            raise ValueError("B has column %d, beyond its %d columns" % (b_indices[e], n_columns))
    ids = np.full((n, k), -1, dtype=np.int64)
    vals = np.zeros((n, k), dtype=np.float32)
    if n == 0 or n_columns == 0:
        return ids, vals
    cdef int64_t[:, ::1] iv = ids
    cdef float[:, ::1] vv = vals
    cdef int threads = max(1, min(n_threads, n))
    cdef float *acc
    cdef uint8_t *seen
    cdef int32_t *touched
    cdef Py_ssize_t n_touched, reach, per = (n + threads - 1) // threads
    cdef int32_t c
    cdef float x
    cdef int filled, failed = 0
    for t in prange(threads, nogil=True, schedule="static", num_threads=threads):
        acc = <float *> zeroed(n_columns, sizeof(float))        # read before written: see zeroed
        seen = <uint8_t *> zeroed(n_columns, sizeof(uint8_t))
        touched = <int32_t *> malloc(n_columns * sizeof(int32_t))
        if acc == NULL or seen == NULL or touched == NULL:
            failed += 1
        else:
            for r in range(t * per, min(n, (t + 1) * per)):
                reach = 0
                for e in range(a_indptr[r], a_indptr[r + 1]):
                    reach = reach + b_indptr[a_indices[e] + 1] - b_indptr[a_indices[e]]
                filled = 0
                if 8 * reach >= n_columns:          # many sums a column: read every column back
                    for e in range(a_indptr[r], a_indptr[r + 1]):
                        f = a_indices[e]
                        x = a_data[e]
                        for j in range(b_indptr[f], b_indptr[f + 1]):
                            acc[b_indices[j]] += x * b_data[j]
                    for j in range(n_columns):
                        if acc[j] > 0.0:
                            push_best(acc[j], j, k, &filled, &iv[r, 0], &vv[r, 0])
                        acc[j] = 0.0
                else:                               # few: list the columns reached
                    n_touched = 0
                    for e in range(a_indptr[r], a_indptr[r + 1]):
                        f = a_indices[e]
                        x = a_data[e]
                        for j in range(b_indptr[f], b_indptr[f + 1]):
                            c = b_indices[j]
                            if not seen[c]:
                                seen[c] = 1
                                touched[n_touched] = c
                                n_touched = n_touched + 1
                            acc[c] += x * b_data[j]
                    for j in range(n_touched):
                        c = touched[j]
                        if acc[c] > 0.0:
                            push_best(acc[c], c, k, &filled, &iv[r, 0], &vv[r, 0])
                        acc[c] = 0.0
                        seen[c] = 0
        free(acc); free(seen); free(touched)
    if failed:
        raise MemoryError()
    return ids, vals
