"""Training losses: one update step for a batch of inputs that share a target and a negative set.

A step receives ``m`` hidden vectors ``H[0..m)`` (one for a skip-gram pair or a CBOW window; the context
words of one centre word with shared negatives), the true class ``target`` and ``k`` sampled negatives (ids
and their log-probabilities under the sampler).  All scores are computed from the parameters as they are
when the step starts; the step then updates the output rows it touches in ``W_out`` with learning rate
``lr``, writes ``-lr * dL/dH[a]`` to ``dH[a]`` (``m x dim``; the driver applies it to the input rows) and
returns the loss summed over the batch.  The heavy lifting is two blocked C helpers shared by every loss:
``emb_scores`` (S = H O^T) and ``emb_batch_update`` (dH = G O, O += G^T H).

Sampled losses receive the negatives' log-probabilities ``neg_logq`` and the target's ``target_logq`` under
the sampler, for the logQ correction.  Negatives equal to the target are dropped (accidental hits); a
negative drawn several times counts that many times.  ``py_step`` exposes a step to tests.
"""
import numpy as np

from libc.stdlib cimport malloc, calloc, free
from libc.string cimport memset

from libc.math cimport exp, log, INFINITY

from embkit._kernels.common cimport (emb_scores, emb_batch_update, emb_sigmoid_log, emb_dot_ptrs,
                                     emb_row_update, emb_init_tables)

emb_init_tables()


cdef Scratch *scratch_new(int batch, int cols, int k) noexcept nogil:
    """Allocate step buffers (NULL on failure)."""
    cdef Scratch *s = <Scratch *> calloc(1, sizeof(Scratch))
    if s == NULL:
        return NULL
    s.batch = batch
    s.cols = cols
    s.scores = <float *> malloc(<size_t>batch * cols * sizeof(float))
    s.coef = <float *> malloc(<size_t>batch * cols * sizeof(float))
    s.rows = <float **> malloc(<size_t>cols * sizeof(float *))
    s.ids = <int *> malloc(<size_t>cols * sizeof(int))
    s.mult = <float *> malloc(<size_t>cols * sizeof(float))
    s.logq = <double *> malloc(<size_t>cols * sizeof(double))
    s.col = <int *> malloc(<size_t>(k + 1) * sizeof(int))
    if (s.scores == NULL or s.coef == NULL or s.rows == NULL or s.ids == NULL or s.col == NULL
            or s.mult == NULL or s.logq == NULL):
        scratch_free(s)
        return NULL
    return s


cdef void scratch_free(Scratch *s) noexcept nogil:
    if s != NULL:
        free(s.scores); free(s.coef); free(s.rows); free(s.ids); free(s.col); free(s.mult); free(s.logq)
        free(s.extra)
        free(s)


cdef inline int gather_columns(const StepArgs *a, bint with_logq, Scratch *w) noexcept nogil:
    """Column 0 is the target, then the distinct negatives with their multiplicity (and, ``with_logq``,
    their log-probabilities); ``w.col[j]`` maps negative j to its column (-1: equal to the target, dropped).
    Returns the number of columns."""
    cdef int c = 1, j, q, idx, target = a.target
    w.ids[0] = target
    w.rows[0] = out_row(a, target)
    w.mult[0] = 1.0
    w.logq[0] = a.target_logq if with_logq else 0.0
    for j in range(a.k):
        idx = a.neg[j]
        if idx == target:
            w.col[j] = -1
            continue
        q = 1
        while q < c and w.ids[q] != idx:
            q += 1
        if q == c:
            w.ids[c] = idx
            w.rows[c] = out_row(a, idx)
            w.mult[c] = 0.0
            w.logq[c] = a.neg_logq[j] if with_logq and a.neg_logq != NULL else 0.0
            c += 1
        w.mult[q] += 1.0
        w.col[j] = q
    return c


cdef class Loss:
    """Base class of the losses.

    The class constants say what every object of a loss class needs; the registry and the drivers derive
    everything else from them (which losses take a sampler, which samplers they accept):

    ``USES_NEGATIVES``
        The driver draws ``k`` negatives per example from a sampler (False: the loss normalises over the
        classes itself, as full and hierarchical softmax do).
    ``NEEDS_LOGQ``
        The loss corrects its logits by the sampler's log-probabilities, so it needs a sampler that is a
        distribution (not a deterministic choice such as top-k).
    ``NEEDS_QUERY_FREE``
        The loss accepts only samplers whose draws read no output row (its table holds more than the classes'
        rows, which an adaptive sampler would read as if they were).
    ``PRIVATE_ROWS``
        Its steps reach the rows of classes only through :func:`out_row`, so a driver may give each thread
        copies of the most used ones (``StepArgs.hot``, :mod:`embkit._kernels.hot`).
    ``CLASS_ROWS``
        The output table has a row per class (its first ``n_classes`` rows): a class's output vector, which
        ranking and prediction score (gensim's ``syn1neg``).
    ``TREE_ROWS``
        The output table holds the inner nodes of a Huffman tree over the classes (gensim's ``syn1``), and
        each class has a path of codes and points in it.
    ``STACKED``
        The table stacks both: the class rows first, then the tree's (``n_classes`` each).
    ``SCORES_ALL_CLASSES``
        Every step scores every class (no sampling), so batches of examples can train as BLAS products.

    ``uses_negatives``, ``needs_logq`` and ``private_rows`` are the same flags on each object, readable
    without the GIL.
    """
    USES_NEGATIVES = True
    NEEDS_LOGQ = False
    NEEDS_QUERY_FREE = False
    PRIVATE_ROWS = True
    CLASS_ROWS = True
    TREE_ROWS = False
    STACKED = False
    SCORES_ALL_CLASSES = False

    def __init__(self):
        self.uses_negatives = type(self).USES_NEGATIVES
        self.needs_logq = type(self).NEEDS_LOGQ
        self.private_rows = type(self).PRIVATE_ROWS

    cdef double step(self, StepArgs *a) noexcept nogil:
        return 0.0

    cpdef int columns(self, int k, int n_classes):
        """Most output rows one step touches."""
        return k + 1

    cpdef int output_rows(self, int n_classes):
        """Rows of the output table this loss trains for ``n_classes`` classes."""
        return n_classes

    cpdef Py_ssize_t classes_for_table(self, Py_ssize_t out_rows, Py_ssize_t n_classes=-1, str name=None) except -1:
        """Classes this loss scores with an output table of ``out_rows`` rows (``n_classes`` when given);
        ValueError (naming the loss ``name``) when the table lacks rows the loss trains for them, or, for
        ``n_classes``, has others."""
        cdef Py_ssize_t n = self._classes_for(out_rows) if n_classes < 0 else n_classes
        cdef Py_ssize_t need = self.output_rows(n)
        if need > out_rows or (n_classes >= 0 and need != out_rows):
            raise ValueError("W_out has %d rows, but the %s trains %d for its %d classes"
                             % (out_rows, "loss" if name is None else name + " loss", need, n))
        return n

    def check_sampler(self, sampler, int negative):
        """ValueError unless this loss has a sampler when it draws ``negative`` negatives."""
        require_sampler(type(self).__name__, self.uses_negatives, sampler is not None, negative)

    def py_step(self, H, int target, neg, float[:, ::1] W_out not None, float lr, neg_logq=None,
                double target_logq=0.0):
        """Run one step on Python arrays; returns ``(loss, dH)``.

        ``H`` is one hidden vector (1-d) or a batch of them (2-d, rows sharing the target and negatives).
        ``W_out`` is updated in place; ``dH = -lr * dL/dH`` has the shape of ``H``, which is not changed.
        With ``lr = 0`` nothing changes and the call only evaluates the loss.
        """
        H_arr = np.array(H, dtype=np.float32, copy=True, order="C")
        single = H_arr.ndim == 1
        H2 = np.ascontiguousarray(H_arr.reshape(1, -1) if single else H_arr)
        cdef int m = H2.shape[0]
        cdef int dim = H2.shape[1]
        if W_out.shape[1] != dim:
            raise ValueError("W_out has %d columns, H has %d" % (W_out.shape[1], dim))
        cdef int n_out = W_out.shape[0]
        neg_arr = np.ascontiguousarray(neg if neg is not None else [], dtype=np.intc)
        logq_arr = np.ascontiguousarray(
            neg_logq if neg_logq is not None else np.zeros(neg_arr.size), dtype=np.float64)
        cdef int k = neg_arr.shape[0]
        if logq_arr.shape[0] != k:
            raise ValueError("neg_logq has %d entries for %d negatives" % (logq_arr.shape[0], k))
        n_classes = self.classes_for_table(n_out)
        if not 0 <= target < n_classes or (k and (neg_arr.min() < 0 or neg_arr.max() >= n_classes)):
            raise IndexError("class id out of range [0, %d)" % n_classes)
        dH = np.zeros((m, dim), dtype=np.float32)
        cdef float[:, ::1] H_v = H2
        cdef float[:, ::1] dH_v = dH
        cdef int[::1] neg_v = np.concatenate([neg_arr, np.zeros(1, np.intc)])
        cdef double[::1] logq_v = np.concatenate([logq_arr, np.zeros(1)])
        cdef Scratch *work = scratch_new(m, self.columns(k, n_classes), k)
        cdef float **ptrs = <float **> malloc(m * sizeof(float *))
        if work == NULL or ptrs == NULL:
            scratch_free(work)
            free(ptrs)
            raise MemoryError()
        cdef int a
        for a in range(m):
            ptrs[a] = &H_v[a, 0]
        cdef StepArgs args
        args.hot = NULL
        args.H = ptrs
        args.m = m
        args.target = target
        args.neg = &neg_v[0]
        args.neg_logq = &logq_v[0]
        args.target_logq = target_logq
        args.k = k
        args.lr = lr
        args.W_out = &W_out[0, 0]
        args.dim = dim
        args.dH = &dH_v[0, 0]
        args.work = work
        cdef double loss
        try:
            with nogil:
                loss = self.step(&args)
        finally:
            scratch_free(work)
            free(ptrs)
        return loss, (dH[0] if single else dH)

    def _classes_for(self, n_out):
        return n_out


def require_sampler(str loss, bint uses_negatives, bint has_sampler, negative=None):
    """ValueError unless the loss named ``loss`` has a sampler when it draws negatives (``negative`` of them,
    None: some): the one rule of which losses need one."""
    if uses_negatives and not has_sampler and (negative is None or negative > 0):
        raise ValueError("the %s loss draws negatives and needs a sampler" % loss)


cdef class SGNS(Loss):
    """Skip-gram negative sampling (Mikolov et al. 2013): logistic loss on the target against k negatives.

    ``L = -log s(<h, w_t>) - sum_j log s(-<h, w_j>)``.  No logQ correction: the sampler shapes the
    objective (word2vec's unigram^0.75).
    """

    cdef double step(self, StepArgs *a) noexcept nogil:
        if a.m == 1:
            return self.step_one(a)
        cdef Scratch *w = a.work
        cdef int c = gather_columns(a, False, w)
        emb_scores(a.H, a.m, w.rows, c, w.scores, a.dim)
        cdef double loss = 0.0
        cdef int i
        for i in range(a.m):
            loss += logistic_coefficients(w.scores + i * c, w.mult, NULL, 0.0, c, a.lr, w.coef + i * c)
        emb_batch_update(a.H, a.m, w.rows, c, w.coef, a.dH, a.dim)
        return loss

    cdef double step_one(self, StepArgs *a) noexcept nogil:
        """The single-input step, row by row as word2vec does (a repeated negative updates twice)."""
        cdef int dim = a.dim, target = a.target, j
        cdef float *h = a.H[0]
        cdef float *dh = a.dH
        cdef float *S = a.work.scores
        cdef float **rows = a.work.rows
        cdef float logp, p
        rows[0] = out_row(a, target)
        for j in range(a.k):
            rows[j + 1] = out_row(a, a.neg[j])
        emb_dot_ptrs(h, rows, 1, dim, S)
        emb_dot_ptrs(h, rows + 1, a.k, dim, S + 1)
        memset(dh, 0, dim * sizeof(float))
        p = emb_sigmoid_log(S[0], &logp)
        cdef double loss = -logp
        emb_row_update(a.lr * (1.0 - p), h, rows[0], dh, dim)
        for j in range(a.k):
            if a.neg[j] == target:
                continue
            p = emb_sigmoid_log(S[j + 1], &logp)
            loss -= logp - S[j + 1]
            emb_row_update(-a.lr * p, h, rows[j + 1], dh, dim)
        return loss


cdef class NCE(Loss):
    """Noise-contrastive estimation: logistic loss on logits corrected by ``log(k Q(j))``.

    ``L = -log s(o_t) - sum_j log s(-o_j)`` with ``o_j = <h, w_j> - log(k Q(j))`` (Gutmann & Hyvarinen;
    the candidate-sampling overview's NCE with the logQ correction).  With it the scores estimate
    unnormalised log-probabilities, whatever the sampler.
    """
    NEEDS_LOGQ = True

    cdef double step(self, StepArgs *a) noexcept nogil:
        cdef Scratch *w = a.work
        cdef int c = gather_columns(a, True, w)
        emb_scores(a.H, a.m, w.rows, c, w.scores, a.dim)
        cdef double logk = log(a.k) if a.k > 0 else 0.0
        cdef double loss = 0.0
        cdef int i
        for i in range(a.m):
            loss += logistic_coefficients(w.scores + i * c, w.mult, w.logq, logk, c, a.lr, w.coef + i * c)
        emb_batch_update(a.H, a.m, w.rows, c, w.coef, a.dH, a.dim)
        return loss


cdef inline double logistic_coefficients(const float *S, const float *mult, const double *logq, double logk,
                                         int c, float lr, float *G) noexcept nogil:
    """Logistic loss of one input: column 0 (the target) positive, the others negative, each counted
    ``mult[q]`` times, on logits ``S[q] - logq[q] - logk`` (no correction when ``logq`` is NULL).  Writes
    ``G = lr * (label - s(o))`` per column and returns the loss."""
    cdef double loss = 0.0
    cdef float o, p, logp
    cdef int q
    for q in range(c):
        o = S[q] if logq == NULL else <float>(S[q] - logq[q] - logk)
        p = emb_sigmoid_log(o, &logp)
        if q == 0:
            loss -= logp
            G[0] = lr * (1.0 - p)
        else:
            loss -= mult[q] * (logp - o)        # log s(-o) = log s(o) - o
            G[q] = -lr * mult[q] * p
    return loss


cdef inline double softmax_coefficients(const float *S, const float *mult, const double *offset, int c,
                                        float lr, float *G) noexcept nogil:
    """Softmax over the logits ``S[q] - offset[q]`` (column q counted ``mult[q]`` times), column 0 being the
    target: writes ``G = lr * (onehot(0) - p)`` and returns ``-log p_target``."""
    cdef double mx = -INFINITY, z = 0.0, o
    cdef int q
    for q in range(c):
        o = S[q] - (offset[q] if offset != NULL else 0.0)
        if mult[q] > 0 and o > mx:
            mx = o
    for q in range(c):
        o = S[q] - (offset[q] if offset != NULL else 0.0)
        G[q] = <float>(mult[q] * exp(o - mx))
        z += G[q]
    cdef double loss = log(z) + mx - (S[0] - (offset[0] if offset != NULL else 0.0))
    for q in range(c):
        G[q] = <float>(-lr * G[q] / z)
    G[0] += lr
    return loss


cdef class SampledSoftmax(Loss):
    """Sampled softmax (Jean et al. 2015): softmax over the target and the k negatives on the logits
    ``<h, w_j> - log Q(j)``, so the gradient estimates the full softmax's.

    Negatives equal to the target are removed (``remove_accidental_hits``; otherwise they count in the
    normaliser).  The target itself is part of the normalising set.
    """
    NEEDS_LOGQ = True

    def __init__(self, bint remove_accidental_hits=True):
        Loss.__init__(self)
        self.correct = type(self).NEEDS_LOGQ
        self.remove_accidental_hits = remove_accidental_hits

    cdef double step(self, StepArgs *a) noexcept nogil:
        cdef Scratch *w = a.work
        cdef int c = gather_columns(a, True, w)
        cdef int j
        if not self.remove_accidental_hits:
            for j in range(a.k):
                if w.col[j] < 0:
                    w.mult[0] += 1.0     # the target drawn as a negative also counts in the normaliser
        cdef float *S = w.scores
        cdef float *G = w.coef
        emb_scores(a.H, a.m, w.rows, c, S, a.dim)
        cdef double loss = 0.0
        cdef int i
        for i in range(a.m):
            loss += softmax_coefficients(S + i * c, w.mult, w.logq if self.correct else NULL, c, a.lr, G + i * c)
        emb_batch_update(a.H, a.m, w.rows, c, G, a.dH, a.dim)
        return loss


cdef class RelaxedSoftmax(SampledSoftmax):
    """Relaxed Softmax (Tanielian & Vasile 2019, Eq. 5): softmax over the target and the k negatives without
    the logQ correction, so the normaliser is the sum over the sampled set.

    The target is part of the normalising set (with Eq. 5's set of negatives alone the loss is unbounded
    below), and negatives equal to the target are removed.
    """
    NEEDS_LOGQ = False

    def __init__(self):
        SampledSoftmax.__init__(self, remove_accidental_hits=True)


cdef class FullSoftmax(Loss):
    """Exact softmax cross-entropy over every class (O(n d) a step; for outputs up to ~100k rows)."""
    USES_NEGATIVES = False
    PRIVATE_ROWS = False
    SCORES_ALL_CLASSES = True

    cpdef int columns(self, int k, int n_classes):
        return n_classes

    cdef double step(self, StepArgs *a) noexcept nogil:
        cdef Scratch *w = a.work
        cdef int c = w.cols, q, i
        for q in range(c):
            w.rows[q] = a.W_out + <Py_ssize_t>q * a.dim
            w.mult[q] = 1.0
        # put the target in column 0 (softmax_coefficients' convention) by swapping it with row 0
        w.rows[0] = a.W_out + <Py_ssize_t>a.target * a.dim
        w.rows[a.target] = a.W_out
        cdef float *S = w.scores
        cdef float *G = w.coef
        emb_scores(a.H, a.m, w.rows, c, S, a.dim)
        cdef double loss = 0.0
        for i in range(a.m):
            loss += softmax_coefficients(S + i * c, w.mult, NULL, c, a.lr, G + i * c)
        emb_batch_update(a.H, a.m, w.rows, c, G, a.dH, a.dim)
        return loss


cdef class HierarchicalSoftmax(Loss):
    """Hierarchical softmax on a Huffman tree of the class counts (word2vec's ``hs=1``).

    The output table holds one row per inner node (``n_classes - 1``) plus one that no path uses, so that it
    has a row per class as word2vec's and gensim's ``syn1`` (and converts to and from theirs as it is); a
    class's probability is the product
    of the logistic decisions along its path.  ``L = -sum_l log s((1 - 2 code_l) <h, node_l>)``.

    Parameters
    ----------
    counts : array_like
        Class frequencies (the tree gives frequent classes short paths).
    """

    USES_NEGATIVES = False
    PRIVATE_ROWS = False
    CLASS_ROWS = False
    TREE_ROWS = True

    def __init__(self, counts):
        Loss.__init__(self)
        offsets, points, codes = huffman_paths(counts)
        self.offsets, self.points, self.codes = offsets, points, codes
        self.off_v, self.pts_v, self.codes_v = offsets, points, codes
        self.n_leaves = len(offsets) - 1
        self.max_depth = int(np.diff(offsets).max()) if self.n_leaves > 0 else 0

    cpdef int columns(self, int k, int n_classes):
        return max(1, self.max_depth)

    cpdef int output_rows(self, int n_classes):
        return max(1, n_classes)

    def _classes_for(self, n_out):
        return self.n_leaves

    cdef double step(self, StepArgs *a) noexcept nogil:
        cdef Scratch *w = a.work
        cdef int start = self.off_v[a.target], c = self.off_v[a.target + 1] - start, q, i
        if c == 0:                                     # a single class: nothing to learn
            memset(a.dH, 0, <size_t>a.m * a.dim * sizeof(float))
            return 0.0
        for q in range(c):
            w.rows[q] = a.W_out + <Py_ssize_t>self.pts_v[start + q] * a.dim
        cdef float *S = w.scores
        cdef float *G = w.coef
        emb_scores(a.H, a.m, w.rows, c, S, a.dim)
        cdef double loss = 0.0
        cdef float s, p, logp, sign
        for i in range(a.m):
            for q in range(c):
                sign = 1.0 - 2.0 * self.codes_v[start + q]     # code 0: go "positive", 1: "negative"
                s = sign * S[i * c + q]
                p = emb_sigmoid_log(s, &logp)
                loss -= logp
                G[i * c + q] = a.lr * sign * (1.0 - p)
        emb_batch_update(a.H, a.m, w.rows, c, G, a.dH, a.dim)
        return loss


cdef class HsNegative(Loss):
    """Hierarchical softmax and negative sampling trained together (gensim's ``hs=1`` with ``negative > 0``).

    Each step adds the gradients of both objectives, computed from the same hidden vectors, as word2vec
    does.  The output table stacks the two tables: rows ``[0, n)`` are the words' output vectors (gensim's
    ``syn1neg``, as with every loss that has one row per class), rows ``[n, 2n)`` the tree's (``syn1``).
    Samplers that read the output table do not apply.

    Parameters
    ----------
    counts : array_like
        Class frequencies (the Huffman tree).
    """

    USES_NEGATIVES = True
    NEEDS_QUERY_FREE = True
    PRIVATE_ROWS = False
    TREE_ROWS = True
    STACKED = True

    def __init__(self, counts):
        Loss.__init__(self)
        self.hs = HierarchicalSoftmax(counts)
        self.ns = SGNS()
        self.n_classes = self.hs.n_leaves

    cpdef int columns(self, int k, int n_classes):
        return max(self.hs.columns(0, n_classes), k + 1)

    cpdef int output_rows(self, int n_classes):
        return 2 * n_classes

    def _classes_for(self, n_out):
        return self.n_classes

    cdef double step(self, StepArgs *a) noexcept nogil:
        cdef Scratch *w = a.work
        cdef Py_ssize_t i, size = <Py_ssize_t>a.m * a.dim
        if w.extra == NULL:
            w.extra = <float *> malloc(<size_t>w.batch * a.dim * sizeof(float))
            if w.extra == NULL:
                return INFINITY        # reported as divergence by the epoch loop
        cdef double loss = self.ns.step(a)
        # the tree's step: its own rows (the second half of the table), no negatives, its own gradient
        cdef StepArgs tree = a[0]
        tree.neg = NULL
        tree.neg_logq = NULL
        tree.k = 0
        tree.target_logq = 0.0
        tree.W_out = a.W_out + <Py_ssize_t>self.n_classes * a.dim
        tree.dH = w.extra
        loss += self.hs.step(&tree)
        for i in range(size):
            a.dH[i] += w.extra[i]
        return loss


def huffman_paths(counts):
    """Huffman tree of ``counts``: per class the inner nodes on its path (root first) and the branch codes.

    Returns ``(offsets, points, codes)`` in CSR form: class ``i``'s path is ``points[offsets[i]:offsets[i+1]]``
    (inner node ids in ``[0, n - 1)``) with codes ``codes[...]`` (0 or 1).
    """
    import heapq

    c = np.asarray(counts, dtype=np.float64)
    n = c.shape[0]
    if n == 0:
        raise ValueError("hierarchical softmax needs at least one class")
    if n == 1:
        return np.zeros(2, np.int32), np.zeros(0, np.int32), np.zeros(0, np.uint8)
    heap = [(c[i], i) for i in range(n)]
    heapq.heapify(heap)
    parent = np.zeros(2 * n - 1, dtype=np.int64)
    branch = np.zeros(2 * n - 1, dtype=np.uint8)
    nxt = n
    while len(heap) > 1:
        c1, a = heapq.heappop(heap)
        c2, b = heapq.heappop(heap)
        parent[a] = parent[b] = nxt
        branch[b] = 1
        heapq.heappush(heap, (c1 + c2, nxt))
        nxt += 1
    root = 2 * n - 2
    paths = []
    for i in range(n):
        pts, cds = [], []
        node = i
        while node != root:
            cds.append(branch[node])
            node = parent[node]
            pts.append(node - n)            # inner node id
        pts.reverse()
        cds.reverse()
        paths.append((pts, cds))
    lengths = np.array([len(p) for p, _ in paths], dtype=np.int64)
    offsets = np.zeros(n + 1, dtype=np.int32)
    offsets[1:] = np.cumsum(lengths)
    points = np.fromiter((v for p, _ in paths for v in p), dtype=np.int32, count=int(offsets[-1]))
    codes = np.fromiter((v for _, cd in paths for v in cd), dtype=np.uint8, count=int(offsets[-1]))
    return offsets, points, codes
