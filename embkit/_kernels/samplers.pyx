"""Candidate samplers: draw ``k`` class ids and report their log-probabilities.

Every sampler is a ``cdef class`` whose ``draw`` runs without the GIL; the drivers call it once per
training example (or once per centre word with shared negatives).  ``py_draw`` exposes it to tests.
"""
import numpy as np

from libc.stdint cimport uint64_t, uint32_t, int32_t
from libc.math cimport log
from libc.stdlib cimport malloc, free

from embkit._kernels.common cimport rng_next


cdef class Sampler:
    """Base class: a distribution over ``n_classes`` ids, possibly conditioned on the example.

    ``draw`` fills ``ids[0:k]`` and, unless the pointers are NULL, ``logq[0:k]`` (log-probability of each
    draw) and ``target_logq`` (log-probability the sampler gives the true class); it returns the number
    drawn.  ``query`` is the example's hidden vector (NULL for query-free samplers) and ``target`` its true
    class.  ``scratch`` is per-thread memory of ``scratch_bytes()`` bytes.

    Adaptive samplers read the output table given to :meth:`bind` and rebuild what they derive from it in
    :meth:`refresh`, which trainers call between chunks (with the GIL, no kernel running).
    """

    def __init__(self, int n_classes):
        if n_classes < 1:
            raise ValueError("a sampler needs n_classes >= 1, got %d" % n_classes)
        self.n_classes = n_classes
        self.query_free = True
        self.exact_logq = True
        self.is_distribution = True

    cdef int draw(self, uint64_t *rng, const float *query, int target, int k, int *ids, double *logq,
                  double *target_logq, void *scratch) noexcept nogil:
        return 0

    cdef double log_prob(self, int idx) noexcept nogil:
        return 0.0

    cpdef Py_ssize_t scratch_bytes(self):
        """Per-thread scratch memory one draw needs."""
        return 0

    def bind(self, float[:, ::1] W_out not None):
        """Use ``W_out`` (n_classes x dim, float32, updated in place by training) as the class vectors."""
        if W_out.shape[0] != self.n_classes:
            raise ValueError("sampler has %d classes but the output table has %d rows"
                             % (self.n_classes, W_out.shape[0]))
        self.W_out = W_out.base if W_out.base is not None else W_out
        self.out = &W_out[0, 0]
        self.dim = W_out.shape[1]
        self.refresh(0.0)

    def refresh(self, double progress):
        """Rebuild what the sampler derives from the bound table; ``progress`` is the run's fraction done."""

    def update(self, *args, **kwargs):
        """Alias of :meth:`refresh` kept for callers of the earlier hook."""
        return self.refresh(*args, **kwargs)

    def py_draw(self, int k, uint64_t seed=1, int target=-1, query=None):
        """Draw ``k`` ids with a generator seeded by ``seed``; returns ``(ids, logq, target_logq)``.

        ``target_logq`` is None when ``target`` is -1.
        """
        if k < 0:
            raise ValueError("k must be >= 0, got %d" % k)
        if target >= self.n_classes:
            raise IndexError("target %d out of range [0, %d)" % (target, self.n_classes))
        cdef float[::1] q_v
        cdef const float *q = NULL
        if query is not None:
            q_arr = np.ascontiguousarray(query, dtype=np.float32)
            if self.W_out is not None and q_arr.shape[0] != self.dim:
                raise ValueError("query has %d dimensions, the class vectors %d" % (q_arr.shape[0], self.dim))
            q_v = q_arr
            q = &q_v[0]
        elif not self.query_free:
            raise ValueError("this sampler needs a query vector")
        ids = np.zeros(max(k, 1), dtype=np.intc)
        logq = np.zeros(max(k, 1), dtype=np.float64)
        cdef int[::1] ids_v = ids
        cdef double[::1] logq_v = logq
        cdef uint64_t state = seed
        cdef double tlq = 0.0
        cdef int got
        cdef Py_ssize_t nbytes = self.scratch_bytes()
        cdef void *scratch = malloc(nbytes) if nbytes > 0 else NULL
        if nbytes > 0 and scratch == NULL:
            raise MemoryError()
        try:
            with nogil:
                got = self.draw(&state, q, target, k, &ids_v[0], &logq_v[0], &tlq if target >= 0 else NULL,
                                scratch)
        finally:
            free(scratch)
        return ids[:got], logq[:got], (tlq if target >= 0 else None)

    def py_log_prob(self, int idx):
        """Log-probability of ``idx`` (query-free samplers)."""
        if not 0 <= idx < self.n_classes:
            raise IndexError("class id %d out of range [0, %d)" % (idx, self.n_classes))
        if not self.query_free:
            raise TypeError("%s probabilities depend on the query; use py_draw" % type(self).__name__)
        return self.log_prob(idx)


cdef class AliasSampler(Sampler):
    """O(1) draws from a fixed distribution with Walker/Vose alias tables.

    Parameters
    ----------
    weights : array_like
        Non-negative weights, one per class (normalised here).
    """

    def __init__(self, weights):
        w = np.asarray(weights, dtype=np.float64)
        if w.ndim != 1 or w.shape[0] == 0:
            raise ValueError("sampler weights must be a non-empty 1-d array")
        if not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
            raise ValueError("sampler weights must be finite, non-negative and not all zero")
        p = w / w.sum()
        Sampler.__init__(self, p.shape[0])
        prob, alias = _build_alias(p)
        cells = np.empty(self.n_classes, dtype=[("threshold", np.uint32), ("alias", np.int32)])
        # threshold 2**32 - 1 stands for "always keep" (prob 1); the 2**-32 loss is below float precision
        cells["threshold"] = np.minimum(np.floor(prob * 4294967296.0), 4294967295.0).astype(np.uint32)
        cells["alias"] = alias
        self._cells = cells
        cdef unsigned char[::1] raw = cells.view(np.uint8).reshape(-1)
        self.cells = <AliasCell *> &raw[0]
        with np.errstate(divide="ignore"):
            self.logp = np.log(p)

    cdef int draw(self, uint64_t *rng, const float *query, int target, int k, int *ids, double *logq,
                  double *target_logq, void *scratch) noexcept nogil:
        cdef int i, c
        cdef uint64_t r
        cdef uint64_t n = self.n_classes
        cdef AliasCell cell
        for i in range(k):
            r = rng_next(rng)
            c = <int>(((r >> 32) * n) >> 32)
            cell = self.cells[c]
            # the low 32 bits decide between the column and its alias
            if <uint32_t>r >= cell.threshold:
                c = cell.alias
            ids[i] = c
        if logq != NULL:
            for i in range(k):
                logq[i] = self.logp[ids[i]]
        if target_logq != NULL and target >= 0:
            target_logq[0] = self.logp[target]
        return k

    cdef double log_prob(self, int idx) noexcept nogil:
        return self.logp[idx]

    @property
    def probabilities(self):
        """The normalised class probabilities."""
        return np.exp(np.asarray(self.logp))


def _build_alias(p):
    """Vose's alias method: return ``(prob, alias)`` for the normalised probabilities ``p``."""
    n = p.shape[0]
    scaled = p * n
    prob = np.ones(n, dtype=np.float64)
    alias = np.arange(n, dtype=np.int32)
    small = [i for i in np.flatnonzero(scaled < 1.0)]
    large = [i for i in np.flatnonzero(scaled >= 1.0)]
    while small and large:
        s = small.pop()
        l = large[len(large) - 1]
        prob[s] = scaled[s]
        alias[s] = l
        scaled[l] = scaled[l] + scaled[s] - 1.0
        if scaled[l] < 1.0:
            large.pop()
            small.append(l)
    # numerical leftovers: columns that are full on their own
    for i in small + large:
        prob[i] = 1.0
    return prob, alias


def unigram(counts, double alpha=0.75):
    """Unigram distribution raised to ``alpha`` (1 = popularity, 0.75 = word2vec, 0 = uniform)."""
    c = np.asarray(counts, dtype=np.float64)
    if np.any(c < 0):
        raise ValueError("counts must be non-negative")
    return AliasSampler(np.power(c, alpha))


def uniform(int n):
    """Uniform distribution over ``n`` classes."""
    if n < 1:
        raise ValueError("uniform sampler needs n >= 1, got %d" % n)
    return AliasSampler(np.ones(n))


def log_uniform(int n):
    """Log-uniform (Zipfian) distribution over ids sorted by decreasing frequency, as TensorFlow's
    ``log_uniform_candidate_sampler``: ``P(i) = log((i + 2) / (i + 1)) / log(n + 1)``."""
    if n < 1:
        raise ValueError("log_uniform sampler needs n >= 1, got %d" % n)
    i = np.arange(n, dtype=np.float64)
    return AliasSampler(np.log((i + 2.0) / (i + 1.0)))
