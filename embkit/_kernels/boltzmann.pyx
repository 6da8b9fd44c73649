# cython: cdivision=True
"""Samplers that follow the model's own scores: Boltzmann sampling and top-k hard negatives.

Boltzmann sampling (Tanielian et al., RecSys 2019, Eq. 8) draws a negative for the query ``h`` from

    Q(j) = D(j) exp(G(j) / T) / Z,        G(j) = <h, W_out[j]>,        Z = sum_j D(j) exp(G(j) / T),

with a *degeneracy* distribution ``D`` (uniform: UBS, or popularity: PBS) and a temperature ``T > 0``.
``T = inf`` gives ``D`` itself; uniform ``D`` with ``T = 1`` is the model's full softmax (the "Exp" baseline of
Rawat et al., NeurIPS 2019).

* :class:`ExactBoltzmann` scores every class once per call (``O(n d)``) and draws ``k`` i.i.d. ids by
  inverse CDF; its log-probabilities are exact.
* :class:`MHBoltzmann` runs an independent Metropolis-Hastings chain with proposals from ``D`` (an alias
  table), so a call costs ``O((burn_in + k * mh_steps) d)`` whatever ``n``; its log-probabilities are
  estimates.
* :class:`TopK` returns the ``k`` highest-scoring classes other than the target (a deterministic choice,
  not a distribution).

All three read the output table given to :meth:`Sampler.bind` directly (no cached copy), so they follow
training without a refresh.  ``draw`` keeps no state between calls: its working memory is the caller's
per-thread scratch and the stack.
"""
import math

import numpy as np

from libc.stdint cimport uint64_t
from libc.math cimport exp, log, fmin, INFINITY

from embkit._kernels.common cimport emb_dot_rows, emb_prefetch_row, rng_uniform
from embkit._kernels.samplers cimport Sampler, AliasSampler

cdef enum:
    BLOCK = 64      # classes scored per emb_dot_rows call (their ids and scores live on the stack)


cdef inline void _score_block(const float *query, const float *out, int dim, int first, int m,
                              float *scores) noexcept nogil:
    """``scores[b] = <query, out[first + b]>`` for ``b < m`` (``m <= BLOCK``)."""
    cdef int ids[BLOCK]
    cdef int b
    for b in range(m):
        ids[b] = first + b
    emb_dot_rows(query, out, ids, m, dim, scores)


cdef inline void _score_ids(const float *query, const float *out, int dim, const int *ids, int m,
                            double *dest, double scale) noexcept nogil:
    """``dest[i] = scale * <query, out[ids[i]]>`` for ``i < m``, ``BLOCK`` rows at a time."""
    cdef float scores[BLOCK]
    cdef int blk, i0, i, b
    for blk in range((m + BLOCK - 1) // BLOCK):
        i0 = blk * BLOCK
        b = m - i0 if m - i0 < BLOCK else BLOCK
        emb_dot_rows(query, out, ids + i0, b, dim, scores)
        for i in range(b):
            dest[i0 + i] = scale * scores[i]


cdef class Boltzmann(Sampler):
    """Common part of the Boltzmann samplers: the degeneracy ``D`` and the temperature.

    Parameters
    ----------
    n_classes : int
    T : float
        Temperature, ``> 0``; ``float('inf')`` makes the sampler draw from ``D`` (query-free, alias table).
    weights : array_like or None
        Non-negative weights of ``D`` (normalised here); None for the uniform distribution.

    Attributes
    ----------
    temperature : float
    prior : AliasSampler
        ``D`` as an alias table (the ``T = inf`` sampler and the MH proposal).
    """
    QUERY_FREE = False
    cdef readonly double temperature
    cdef readonly AliasSampler prior
    cdef double inv_t
    cdef double[::1] logd
    cdef bint uniform_d

    def __init__(self, int n_classes, T=1.0, weights=None):
        T = float(T)
        if not T > 0:      # also rejects NaN
            raise ValueError("T (temperature) must be > 0 (float('inf') for the degeneracy distribution "
                             "itself), got %r" % T)
        self.uniform_d = weights is None
        if weights is None:
            weights = np.ones(n_classes)
        elif np.asarray(weights).shape != (n_classes,):
            raise ValueError("the degeneracy weights must have n_classes=%d entries, got shape %s"
                             % (n_classes, np.asarray(weights).shape))
        self.prior = AliasSampler(weights)
        Sampler.__init__(self, n_classes)
        self.logd = self.prior.logp
        self.temperature = T
        self.inv_t = 0.0 if math.isinf(T) else 1.0 / T
        self.query_free = math.isinf(T)

    cdef double log_prob(self, int idx) noexcept nogil:
        # only meaningful for T = inf (query-free), where Q = D
        return self.logd[idx]

    @property
    def degeneracy(self):
        """The normalised degeneracy distribution ``D``."""
        return self.prior.probabilities()

    def _log_probs(self, query, target):
        """Exact ``log Q(j)`` of every class for ``query`` (``D`` itself when ``T = inf``).

        The reference the samplers are tested against; ``O(n d)``, float64 rows a block at a time.  The
        target does not change the law (a draw equal to it is dropped by the losses as an accidental hit).
        """
        logd = np.asarray(self.logd)
        if self.query_free:
            return logd.copy()
        if query is None:
            raise ValueError("%s needs a query vector" % type(self).__name__)
        table = np.asarray(self.W_out)
        q = np.asarray(query, dtype=np.float64)
        scores = np.concatenate([table[i:i + 65536].astype(np.float64) @ q
                                 for i in range(0, self.n_classes, 65536)])
        with np.errstate(invalid="ignore"):
            x = logd + scores * self.inv_t
        top = np.max(x)
        return x - (top + np.log(np.sum(np.exp(x - top))))


cdef class ExactBoltzmann(Boltzmann):
    """Exact Boltzmann sampling: ``Q(j) ∝ D(j) exp(<query, W_out[j]> / T)``.

    Each call scores all ``n`` classes (``O(n d)``), keeps the cumulative weights in the per-thread scratch
    (``n`` doubles) and draws ``k`` i.i.d. ids from them by binary search (``O(log n)`` each).  ``logq`` and
    ``target_logq`` are exact, up to float32 rounding of the scores (the drawn ids are re-scored for them,
    so with Hogwild training a row another thread moves during the call may differ by that update).
    With ``T = inf`` it is ``D`` drawn from an alias table and needs no query.  Uniform ``D`` with ``T = 1``
    samples from the model's full softmax.

    Parameters
    ----------
    n_classes : int
    T : float, default 1.0
        Temperature, ``> 0`` or ``float('inf')``.
    weights : array_like or None
        Weights of the degeneracy distribution ``D`` (None: uniform).
    """

    def __init__(self, int n_classes, T=1.0, weights=None):
        Boltzmann.__init__(self, n_classes, T, weights)

    cpdef Py_ssize_t scratch_bytes(self):
        """``n_classes`` doubles (the cumulative weights); nothing when ``T = inf``."""
        return 0 if self.query_free else <Py_ssize_t>self.n_classes * sizeof(double)

    cdef int draw(self, uint64_t *rng, const float *query, int target, int k, int *ids, double *logq,
                  double *target_logq, void *scratch) noexcept nogil:
        if self.query_free:
            return self.prior.draw(rng, query, target, k, ids, logq, target_logq, scratch)
        if self.out == NULL or query == NULL or (k <= 0 and target_logq == NULL):
            return 0
        cdef double *cum = <double *> scratch
        cdef float scores[BLOCK]
        cdef int n = self.n_classes
        cdef int blk, j0, b, m, i, lo, hi, mid, last = 0
        cdef double x, top = -INFINITY, total = 0.0, u, log_z
        # pass 1: log-weights log D(j) + G(j)/T and their maximum
        for blk in range((n + BLOCK - 1) // BLOCK):
            j0 = blk * BLOCK
            m = n - j0 if n - j0 < BLOCK else BLOCK
            _score_block(query, self.out, self.dim, j0, m, scores)
            for b in range(m):
                x = scores[b] * self.inv_t
                if not self.uniform_d:
                    x += self.logd[j0 + b]
                cum[j0 + b] = x
                if x > top:
                    top = x
        # pass 2: cumulative weights relative to the maximum (so the largest weight is 1)
        for j0 in range(n):
            x = exp(cum[j0] - top)
            if x > 0.0:
                last = j0
            total += x
            cum[j0] = total
        log_z = top + log(total)      # with uniform D, the 1/n cancels between weight and Z
        # inverse CDF: the first j with cum[j] > u; zero-weight classes are never chosen
        for i in range(k):
            u = rng_uniform(rng) * total
            lo = 0
            hi = last
            while lo < hi:
                mid = (lo + hi) >> 1
                if cum[mid] > u:
                    hi = mid
                else:
                    lo = mid + 1
            ids[i] = lo
        if logq != NULL and k > 0:
            _score_ids(query, self.out, self.dim, ids, k, logq, self.inv_t)
            for i in range(k):
                logq[i] += (0.0 if self.uniform_d else self.logd[ids[i]]) - log_z
        if target_logq != NULL and target >= 0:
            _score_ids(query, self.out, self.dim, &target, 1, target_logq, self.inv_t)
            target_logq[0] += (0.0 if self.uniform_d else self.logd[target]) - log_z
        return k


cdef class MHBoltzmann(Boltzmann):
    """Boltzmann sampling by independent Metropolis-Hastings: per-draw cost independent of ``n``.

    The chain targets ``pi(j) ∝ D(j) exp(G(j)/T)`` with proposals drawn from ``D`` (alias table), so the
    acceptance probability of a move from ``cur`` to ``new`` is ``min(1, exp((G(new) - G(cur)) / T))``
    and a step costs one ``d``-dimensional dot product.  Each call starts a fresh chain from a draw of ``D``,
    discards the first ``burn_in`` steps and then records the state after every ``mh_steps`` further steps,
    ``k`` times: ``1 + burn_in + k * mh_steps`` scores per call, i.e. ``mh_steps + (1 + burn_in) / k`` per
    draw.  Proposals do not depend on the chain, so they are drawn and scored in blocks (their rows
    prefetched together).

    Accuracy.  With ``w = max_j pi(j) / D(j) = max_j exp(G(j)/T) / E_D[exp(G/T)]`` the independence sampler
    satisfies ``TV(law after t steps, pi) <= (1 - 1/w)^t`` from any start (Liu 1996; Mengersen & Tweedie
    1996), so every recorded draw is within ``(1 - 1/w)^(burn_in + mh_steps)`` of ``pi`` in total variation.
    ``w`` grows with the spread of the scores over ``T``: peaked distributions (low ``T``, trained vectors
    with large norms) need a longer ``burn_in``, or ``ExactBoltzmann``.  Successive draws of one call are
    correlated (a rejected step repeats the state); ``mh_steps`` thins them.

    Log-probabilities (``exact_logq`` is False).  ``logq[i] = log D(j) + G(j)/T - log Z_hat`` with
    ``Z_hat = (1/M) sum_m exp(G(p_m)/T)`` over the ``M = 1 + burn_in + k * mh_steps`` proposals ``p_m`` of
    the call.  The proposals are i.i.d. draws of ``D`` whatever was accepted, so ``Z_hat`` is an unbiased
    estimate of ``Z = sum_j D(j) exp(G(j)/T) = E_{j~D}[exp(G(j)/T)]`` with relative standard deviation
    ``cv / sqrt(M)``, ``cv`` the coefficient of variation of ``exp(G/T)`` under ``D``; ``log Z_hat`` is the
    same for every id of a call, so the error shifts all of a call's ``logq`` (and ``target_logq``) by the
    same amount.  ``G`` of a drawn id is the score computed when it was proposed.  Estimates above 0 (a
    probability above 1, possible when ``Z_hat`` underestimates ``Z``) are clamped to 0.

    Parameters
    ----------
    n_classes : int
    T : float, default 1.0
        Temperature, ``> 0`` or ``float('inf')`` (then draws come from ``D`` directly).
    weights : array_like or None
        Weights of ``D`` (None: uniform).
    mh_steps : int, default 3
        Chain steps between two recorded draws (thinning), ``>= 1``.
    burn_in : int, default 50
        Chain steps discarded before the first of them, ``>= 0``.
    """
    EXACT_LOGQ = False
    cdef readonly int mh_steps
    cdef readonly int burn_in

    def __init__(self, int n_classes, T=1.0, weights=None, mh_steps=3, burn_in=50):
        _check_int("mh_steps", mh_steps, 1)
        _check_int("burn_in", burn_in, 0)
        Boltzmann.__init__(self, n_classes, T, weights)
        self.mh_steps = mh_steps
        self.burn_in = burn_in
        self.exact_logq = self.query_free    # at T = inf it draws D exactly

    cdef int draw(self, uint64_t *rng, const float *query, int target, int k, int *ids, double *logq,
                  double *target_logq, void *scratch) noexcept nogil:
        if self.query_free:
            return self.prior.draw(rng, query, target, k, ids, logq, target_logq, scratch)
        if self.out == NULL or query == NULL or (k <= 0 and target_logq == NULL):
            return 0
        cdef int prop[BLOCK]
        cdef float scores[BLOCK]
        cdef long long total = 1 + <long long>self.burn_in + <long long>(k if k > 0 else 0) * self.mh_steps
        cdef long long s, since
        cdef int pos = 0, avail = 0, b, cur = 0, rec = 0, j
        cdef double g, g_cur = 0.0, z_top = -INFINITY, z_sum = 0.0, log_z
        for s in range(total):
            if pos == avail:
                avail = <int>(total - s) if total - s < BLOCK else BLOCK
                self.prior.draw(rng, NULL, -1, avail, prop, NULL, NULL, NULL)
                for b in range(avail):
                    emb_prefetch_row(self.out + <Py_ssize_t>prop[b] * self.dim, self.dim)
                emb_dot_rows(query, self.out, prop, avail, self.dim, scores)
                pos = 0
            j = prop[pos]
            g = scores[pos] * self.inv_t
            pos += 1
            # running log-sum-exp of the proposals' exp(G/T), for Z_hat
            if g > z_top:
                z_sum = z_sum * exp(z_top - g) + 1.0
                z_top = g
            else:
                z_sum += exp(g - z_top)
            # the first proposal is the initial state; then Metropolis-Hastings moves
            if s == 0 or g >= g_cur or rng_uniform(rng) < exp(g - g_cur):
                cur = j
                g_cur = g
            since = s - self.burn_in
            if since > 0 and since % self.mh_steps == 0:
                ids[rec] = cur
                if logq != NULL:
                    logq[rec] = g_cur
                rec += 1
        log_z = z_top + log(z_sum / <double>total)
        # an estimate above log 1 is impossible: clamp it (an underestimated Z would otherwise give a
        # well-scored target a log-probability > 0 and a logQ-corrected loss extreme logits)
        if logq != NULL:
            for b in range(rec):
                logq[b] = fmin(logq[b] + self.logd[ids[b]] - log_z, 0.0)
        if target_logq != NULL and target >= 0:
            _score_ids(query, self.out, self.dim, &target, 1, target_logq, self.inv_t)
            target_logq[0] = fmin(target_logq[0] + self.logd[target] - log_z, 0.0)
        return rec


    def draw_law(self, query, int k=1):
        """Exact distribution of one draw of a ``k``-draw call (averaged over the ``k`` positions), numpy.

        The chain's law is propagated step by step from its start ``mu_0 = D``:
        ``mu'(y) = D(y) sum_x mu(x) min(1, r(y)/r(x)) + mu(y) (1 - a(y))`` with ``r = pi / D`` and ``a(y)`` the
        acceptance probability from ``y``; with the classes sorted by ``r`` each step is a pair of prefix sums,
        ``O(n)`` after one ``O(n log n)`` sort.  Used to measure the chain's bias without sampling noise.
        """
        if k < 1:
            raise ValueError("k must be >= 1, got %d" % k)
        log_pi = np.asarray(self.log_probs(query), dtype=np.float64)
        if self.query_free:
            return np.exp(log_pi)
        d = np.asarray(self.prior.probabilities())
        support = d > 0
        pi, d = np.exp(log_pi[support]), d[support]
        order = np.argsort(log_pi[support] - np.log(d), kind="stable")
        pi, d = pi[order], d[order]
        r = pi / d
        below = np.searchsorted(r, r, side="right") - 1     # last class with r(x) <= r(y)
        # acceptance from y: sum_{r(z) >= r(y)} D(z) + sum_{r(z) < r(y)} pi(z) / r(y)
        first_equal = np.searchsorted(r, r, side="left")
        d_tail = np.concatenate([np.cumsum(d[::-1])[::-1], [0.0]])
        pi_head = np.concatenate([[0.0], np.cumsum(pi)])
        accept = d_tail[first_equal] + pi_head[first_equal] / r
        mu = d.copy()
        total = np.zeros_like(mu)
        for step in range(1, self.burn_in + k * self.mh_steps + 1):
            c_mu = np.cumsum(mu)
            c_ratio = np.cumsum(mu / r)
            moved = d * (c_mu[below] + r * (c_ratio[len(c_ratio) - 1] - c_ratio[below]))
            mu = moved + mu * (1.0 - accept)
            since = step - self.burn_in
            if since > 0 and since % self.mh_steps == 0:
                total += mu
        law = np.zeros(self.n_classes)
        law[np.flatnonzero(support)[order]] = total / k
        return law

cdef inline bint _worse(const float *s, int a, int b) noexcept nogil:
    """Class ``a`` ranks below class ``b``: lower score, or the same score and a larger id."""
    return s[a] < s[b] or (s[a] == s[b] and a > b)


cdef inline void _sift_down(int *heap, int size, int i, const float *s) noexcept nogil:
    """Restore the min-heap (worst class at the root) below position ``i``."""
    cdef int child, item = heap[i]
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and _worse(s, heap[child + 1], heap[child]):
            child += 1
        if not _worse(s, heap[child], item):
            break
        heap[i] = heap[child]
        i = child
    heap[i] = item


cdef inline void _sift_up(int *heap, int i, const float *s) noexcept nogil:
    cdef int parent, item = heap[i]
    while i > 0:
        parent = (i - 1) >> 1
        if not _worse(s, item, heap[parent]):
            break
        heap[i] = heap[parent]
        i = parent
    heap[i] = item


cdef class TopK(Sampler):
    """The ``k`` classes with the highest scores ``<query, W_out[j]>``, the target excluded ("hard" negatives).

    A deterministic choice, not a distribution (``is_distribution`` is False): ``logq`` and ``target_logq``
    are filled with 0.0, and losses that correct by ``log Q`` (sampled softmax, NCE) refuse it.  Each call
    scores all classes into the per-thread scratch (``n`` floats, ``O(n d)``) and keeps the best ``k`` in a
    min-heap built in ``ids`` (``O(n log k)``); the ids come out best first, ties broken by the smaller id.

    At most ``n - 1`` wrong classes exist: when ``k`` is larger, the ids after them repeat the target (which
    the losses drop as accidental hits), and the return value counts the real ones only.

    Parameters
    ----------
    n_classes : int
    """

    QUERY_FREE = False
    EXACT_LOGQ = False
    IS_DISTRIBUTION = False

    def __init__(self, int n_classes):
        Sampler.__init__(self, n_classes)

    cpdef Py_ssize_t scratch_bytes(self):
        """``n_classes`` floats (the scores)."""
        return <Py_ssize_t>self.n_classes * sizeof(float)

    cdef int draw(self, uint64_t *rng, const float *query, int target, int k, int *ids, double *logq,
                  double *target_logq, void *scratch) noexcept nogil:
        if self.out == NULL or query == NULL or k <= 0:
            if target_logq != NULL:
                target_logq[0] = 0.0
            return 0
        cdef float *s = <float *> scratch
        cdef int n = self.n_classes
        cdef int blk, j0, m, j, size = 0, last
        cdef int wanted = n - 1 if 0 <= target < n else n
        if wanted > k:
            wanted = k
        for blk in range((n + BLOCK - 1) // BLOCK):
            j0 = blk * BLOCK
            m = n - j0 if n - j0 < BLOCK else BLOCK
            _score_block(query, self.out, self.dim, j0, m, s + j0)
        for j in range(n):
            if j == target:
                continue
            if size < wanted:
                ids[size] = j
                size += 1
                _sift_up(ids, size - 1, s)
            elif size > 0 and _worse(s, ids[0], j):
                ids[0] = j
                _sift_down(ids, size, 0, s)
        # heap sort: move the worst to the back, so the ids end up best first
        for last in range(size - 1, 0, -1):
            j = ids[0]
            ids[0] = ids[last]
            ids[last] = j
            _sift_down(ids, last, 0, s)
        for j in range(size, k):
            ids[j] = target if target >= 0 else ids[j % size]
        if logq != NULL:
            for j in range(k):
                logq[j] = 0.0
        if target_logq != NULL:
            target_logq[0] = 0.0
        return size

def _check_int(name, value, low):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError("%s must be an integer >= %d, got %r" % (name, low, value))
