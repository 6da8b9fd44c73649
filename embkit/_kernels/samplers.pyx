"""Candidate samplers: draw ``k`` class ids and report their log-probabilities.

Every sampler is a ``cdef class`` whose ``draw`` runs without the GIL; the drivers call it once per
training example (or once per centre word with shared negatives).  ``py_draw`` exposes it to tests.
"""
import numpy as np

from libc.stdint cimport uint64_t, uint32_t, int32_t
from libc.math cimport log

from embkit._kernels.common cimport rng_next


cdef class Sampler:
    """Base class: a distribution over ``n_classes`` ids.

    Subclasses implement ``draw`` (fill ``ids[0:k]`` and, unless ``logq`` is NULL, ``logq[0:k]``; return
    the number drawn) and ``log_prob``.  ``query`` is the hidden vector of the example and ``target`` its true class; static
    samplers ignore both.
    """

    cdef int draw(self, uint64_t *rng, const float *query, int target, int k,
                  int *ids, double *logq) noexcept nogil:
        return 0

    cdef double log_prob(self, int idx) noexcept nogil:
        return 0.0

    def update(self, *args, **kwargs):
        """Hook for samplers that must see parameter changes; static samplers ignore it."""

    def py_draw(self, int k, uint64_t seed=1, int target=-1, float[::1] query=None):
        """Draw ``k`` ids with a fresh generator seeded by ``seed``; returns ``(ids, logq)``."""
        ids = np.empty(k, dtype=np.intc)
        logq = np.empty(k, dtype=np.float64)
        cdef int[::1] ids_v = ids
        cdef double[::1] logq_v = logq
        cdef uint64_t state = seed
        cdef const float *q = NULL
        if query is not None:
            q = &query[0]
        cdef int got
        if k == 0:
            return ids, logq
        with nogil:
            got = self.draw(&state, q, target, k, &ids_v[0], &logq_v[0])
        return ids[:got], logq[:got]

    def py_log_prob(self, int idx):
        """Log-probability of ``idx`` under the sampler."""
        if not 0 <= idx < self.n_classes:
            raise IndexError("class id %d out of range [0, %d)" % (idx, self.n_classes))
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
        self.n_classes = p.shape[0]
        self.query_free = True
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

    cdef int draw(self, uint64_t *rng, const float *query, int target, int k,
                  int *ids, double *logq) noexcept nogil:
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
