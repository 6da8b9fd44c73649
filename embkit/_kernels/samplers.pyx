"""Candidate samplers: draw ``k`` class ids and report their log-probabilities.

Every sampler is a ``cdef class`` whose ``draw`` runs without the GIL; the drivers call it once per
training example (or once per centre word with shared negatives).  ``draw_many`` and ``log_probs`` expose
every sampler the same way to Python (tests, benchmarks).
"""
from collections import namedtuple

import numpy as np

from libc.stdint cimport uint64_t, uint32_t, int32_t
from libc.math cimport log
from libc.stdlib cimport malloc, free

from embkit._kernels.common cimport rng_next


Draws = namedtuple("Draws", "ids logq target_logq drawn")
Draws.__doc__ = """What :meth:`Sampler.draw_many` returns: ``(m, k)`` ids and log-probabilities, the ``(m,)``
log-probabilities of the targets (None without targets) and the ``(m,)`` number each call drew."""


cdef class Sampler:
    """Base class: a distribution over ``n_classes`` ids, possibly conditioned on the example.

    ``draw`` fills ``ids[0:k]`` and, unless the pointers are NULL, ``logq[0:k]`` (log-probability of each
    draw) and ``target_logq`` (log-probability the sampler gives the true class); it returns the number
    drawn.  ``query`` is the example's hidden vector (NULL for query-free samplers) and ``target`` its true
    class.  ``scratch`` is per-thread memory of ``scratch_bytes()`` bytes.

    The class constants say what every object of a sampler class does; the registry's pairing check reads
    them (``query_free``, ``exact_logq`` and ``is_distribution`` are the same flags on each object, readable
    without the GIL, and may be narrower than the class's, e.g. a Boltzmann sampler at ``T = inf`` is
    query-free):

    ``QUERY_FREE``
        Draws depend on neither the query nor the target (static distributions; drivers draw them ahead).
    ``EXACT_LOGQ``
        The reported log-probabilities are the draws' true ones, not estimates.
    ``IS_DISTRIBUTION``
        Draws are random with known log-probabilities (False for deterministic choices such as top-k, which
        losses that correct by ``log Q`` refuse).
    ``REFRESHES``
        The sampler derives tables from the bound output table and rebuilds them in :meth:`refresh`, so its
        draws read state that training must not change under them: trainers refresh it between chunks and
        never train the next chunk while it is being refreshed.

    Adaptive samplers read the output table given to :meth:`bind` and rebuild what they derive from it in
    :meth:`refresh`, which trainers call between chunks (with the GIL, no kernel running).

    Every sampler has the same Python interface: :meth:`draw_many` (one ``draw`` call per query, in C) and
    :meth:`log_probs` / :meth:`probabilities` (the law of one draw for a query and target).
    """
    QUERY_FREE = True
    EXACT_LOGQ = True
    IS_DISTRIBUTION = True
    REFRESHES = False
    #: an adaptive sampler that draws uniformly until it is bound (instead of refusing to draw)
    DRAWS_UNBOUND = False

    def __init__(self, int n_classes):
        if n_classes < 1:
            raise ValueError("a sampler needs n_classes >= 1, got %d" % n_classes)
        self.n_classes = n_classes
        self.query_free = type(self).QUERY_FREE
        self.exact_logq = type(self).EXACT_LOGQ
        self.is_distribution = type(self).IS_DISTRIBUTION
        self.refreshes = type(self).REFRESHES

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

    def get_state(self):
        """What the sampler derived from the bound table since :meth:`bind`, as ``{name: number or array}``.

        With :meth:`set_state` after ``bind`` on the same table it makes a resumed run draw exactly as the
        uninterrupted one would have (checkpoints).  Samplers that derive nothing return ``{}``.
        """
        return {}

    def set_state(self, state):
        """Restore what :meth:`get_state` returned (after :meth:`bind`)."""
        if state:
            raise ValueError("%s keeps no state, got %s" % (type(self).__name__, ", ".join(sorted(state))))

    # ------------------------------------------------------------------ the Python interface
    def _check_ready(self, drawing=False):
        if not self.query_free and self.W_out is None and not (drawing and type(self).DRAWS_UNBOUND):
            raise RuntimeError("%s needs the class vectors: call bind(W_out) first" % type(self).__name__)

    def _query_vector(self, query):
        """``query`` as a float32 vector of the class vectors' dimension (None stays None)."""
        if query is None:
            return None
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
        if self.W_out is not None and q.shape[0] != self.dim:
            raise ValueError("query has %d dimensions, the class vectors %d" % (q.shape[0], self.dim))
        return q

    def draw_many(self, int k, queries=None, targets=None, uint64_t seed=1, n=None, bint with_logq=True):
        """One ``draw`` call of ``k`` ids per query, in a compiled loop without the GIL.

        Parameters
        ----------
        k : int
            Ids per call (``>= 0``).
        queries : array_like (m, dim), optional
            One hidden vector per call; needed unless the sampler is query-free or draws from the
            target's own vector (LSH label queries).
        targets : array_like of int (m,), optional
            The true class of each call (``-1``: none); their log-probabilities are returned.
        seed : int
            Seed of the generator, which runs on through the calls.
        n : int, optional
            Number of calls when neither ``queries`` nor ``targets`` gives it (default 1).
        with_logq : bool
            Compute the log-probabilities (False measures the cost of the ids alone).

        Returns
        -------
        Draws
            ``ids`` (m, k) intc, ``logq`` (m, k) float64 (None without ``with_logq``), ``target_logq``
            (m,) float64 (None without ``targets``), ``drawn`` (m,) intc.
        """
        if k < 0:
            raise ValueError("k must be >= 0, got %d" % k)
        self._check_ready(drawing=True)
        Q = None
        if queries is not None:
            Q = np.ascontiguousarray(np.atleast_2d(np.asarray(queries, dtype=np.float32)))
            if self.W_out is not None and Q.shape[1] != self.dim:
                raise ValueError("queries have %d dimensions, the class vectors %d" % (Q.shape[1], self.dim))
        m = Q.shape[0] if Q is not None else (len(targets) if targets is not None else (1 if n is None else n))
        T = (np.full(m, -1, dtype=np.intc) if targets is None
             else np.ascontiguousarray(np.asarray(targets).reshape(-1), dtype=np.intc))
        if T.shape[0] != m:
            raise ValueError("%d targets for %d queries" % (T.shape[0], m))
        if m and (T.min() < -1 or T.max() >= self.n_classes):
            raise IndexError("targets must be class ids in [0, %d) or -1" % self.n_classes)
        if Q is None and not self.query_free and not self._draws_without_query(T):
            raise ValueError("%s needs one query vector per call" % type(self).__name__)
        ids = np.zeros((m, max(k, 1)), dtype=np.intc)
        logq = np.zeros((m, max(k, 1)), dtype=np.float64)
        tlq = np.zeros(max(m, 1), dtype=np.float64)
        drawn = np.zeros(max(m, 1), dtype=np.intc)
        cdef int[:, ::1] ids_v = ids
        cdef double[:, ::1] logq_v = logq
        cdef double[::1] tlq_v = tlq
        cdef int[::1] drawn_v = drawn
        cdef int[::1] t_v = T if m else np.zeros(1, dtype=np.intc)
        cdef float[:, ::1] q_v = Q if (Q is not None and m) else np.zeros((1, 1), dtype=np.float32)
        cdef bint has_q = Q is not None
        cdef bint want_logq = with_logq
        cdef Py_ssize_t c, calls = m
        cdef uint64_t state = seed
        cdef Py_ssize_t nbytes = self.scratch_bytes()
        cdef void *scratch = malloc(nbytes) if nbytes > 0 else NULL
        if nbytes > 0 and scratch == NULL:
            raise MemoryError()
        try:
            with nogil:
                for c in range(calls):
                    drawn_v[c] = self.draw(&state, &q_v[c, 0] if has_q else NULL, t_v[c], k, &ids_v[c, 0],
                                           &logq_v[c, 0] if want_logq else NULL,
                                           &tlq_v[c] if t_v[c] >= 0 else NULL, scratch)
        finally:
            free(scratch)
        return Draws(ids[:, :k], logq[:, :k] if with_logq else None,
                     None if targets is None else tlq[:m], drawn[:m])

    def _draws_without_query(self, targets):
        """Whether calls with these targets need no query vector (overridden by LSH label queries)."""
        return False

    def py_draw(self, int k, uint64_t seed=1, int target=-1, query=None):
        """One ``draw`` call of ``k`` ids: ``(ids, logq, target_logq)`` (``target_logq`` None for -1)."""
        d = self.draw_many(k, None if query is None else self._query_vector(query)[None, :],
                           None if target < 0 else [target], seed=seed)
        got = d.drawn[0]
        return d.ids[0, :got], d.logq[0, :got], (None if target < 0 else float(d.target_logq[0]))

    def log_probs(self, query=None, target=-1, ids=None):
        """``log Q(j)`` of one draw for ``query`` and ``target``, for every class or for ``ids`` (float64).

        Exact where the sampler's law is known in closed form; samplers whose draws only approximate their
        law (``exact_logq`` False) return the law they target.  Deterministic samplers (``is_distribution``
        False) have none and raise TypeError.
        """
        if not self.is_distribution:
            raise TypeError("%s picks classes deterministically: it has no log-probabilities"
                            % type(self).__name__)
        if not -1 <= target < self.n_classes:
            raise IndexError("target %d out of range [0, %d)" % (target, self.n_classes))
        self._check_ready()
        out = np.asarray(self._log_probs(self._query_vector(query), target), dtype=np.float64)
        if ids is None:
            return out
        sel = np.asarray(ids)
        if sel.size and (sel.min() < 0 or sel.max() >= self.n_classes):
            raise IndexError("class ids must be in [0, %d)" % self.n_classes)
        return out[sel]

    def probabilities(self, query=None, target=-1):
        """``exp(log_probs(query, target))``: the probability of each class in one draw."""
        return np.exp(self.log_probs(query, target))

    def _log_probs(self, query, target):
        """The log-probabilities of every class (subclasses; ``query`` is checked, or None)."""
        raise NotImplementedError("%s does not expose its law" % type(self).__name__)


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

    def _log_probs(self, query, target):
        return np.array(self.logp)


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
