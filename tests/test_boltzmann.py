"""Boltzmann samplers (exact and Metropolis-Hastings), the exact softmax sampler and top-k hard negatives.

References are computed here in float64 numpy from the same class vectors: ``log Q(j) = log D(j) + G(j)/T -
log sum_i D(i) exp(G(i)/T)`` with ``G = W_out @ query``.
"""
import math

import numpy as np
import pytest
from scipy import stats

from embkit import Word2Vec
from embkit.core import registry
from embkit._kernels.boltzmann import ExactBoltzmann, MHBoltzmann, TopK

COUNTS = np.array([500, 1, 30, 7, 120, 3, 60, 15, 250, 2, 40, 9, 80, 5, 20, 1000, 4, 11, 6, 90] * 2,
                  dtype=np.int64)
N = COUNTS.size
DIM = 8


def _vectors(n=N, dim=DIM, seed=0, query_norm=1.5):
    """Unit-norm class vectors and a query of the given norm (scores in [-query_norm, query_norm])."""
    rng = np.random.default_rng(seed)
    W = rng.standard_normal((n, dim))
    W /= np.linalg.norm(W, axis=1, keepdims=True)
    q = rng.standard_normal(dim)
    q *= query_norm / np.linalg.norm(q)
    return W.astype(np.float32), q.astype(np.float32)


def _reference_logq(W, q, T, d_weights=None):
    """Exact log Q(j) in float64."""
    n = W.shape[0]
    d = np.full(n, 1.0 / n) if d_weights is None else d_weights / d_weights.sum()
    with np.errstate(divide="ignore"):
        x = np.log(d) + (W.astype(np.float64) @ q.astype(np.float64)) / T
    return x - np.logaddexp.reduce(x[np.isfinite(x)])


def _make(name, W=None, counts=COUNTS, **params):
    sampler = registry.make_sampler(name, counts=counts, n_classes=len(counts), **params)
    if W is not None and not sampler.query_free:
        sampler.bind(W)
    return sampler


def _tv(ids, p):
    return 0.5 * np.abs(np.bincount(ids, minlength=p.size) / ids.size - p).sum()


def _check_frequencies(ids, p):
    """Chi-square (p-value > 1e-4 for a correct sampler; the seed is fixed) and TV < 0.01."""
    observed = np.bincount(ids, minlength=p.size)
    assert np.all(observed[p == 0] == 0), "a class of probability 0 was drawn"
    support = p > 0
    chi2, p_value = stats.chisquare(observed[support], p[support] / p[support].sum() * ids.size)
    assert p_value > 1e-4, "chi-square %.1f, p=%.2g" % (chi2, p_value)
    assert _tv(ids, p) < 0.01


# ----------------------------------------------------------------------------- exact Boltzmann

@pytest.mark.parametrize("degeneracy, alpha", [("uniform", None), ("popularity", None), ("popularity", 0.5)])
@pytest.mark.parametrize("T", [0.25, 1.0, 4.0])
def test_exact_boltzmann_follows_eq8(degeneracy, alpha, T):
    W, q = _vectors()
    params = {"T": T, "degeneracy": degeneracy}
    if alpha is not None:
        params["alpha"] = alpha
    sampler = _make("boltzmann", W, **params)
    assert isinstance(sampler, ExactBoltzmann)
    assert not sampler.query_free and sampler.exact_logq and sampler.is_distribution
    weights = None if degeneracy == "uniform" else COUNTS.astype(np.float64) ** (1.0 if alpha is None else alpha)
    ref = _reference_logq(W, q, T, weights)
    np.testing.assert_allclose(sampler.log_probs(q), ref, rtol=1e-10, atol=1e-10)
    target = 4
    ids, logq, target_logq = sampler.py_draw(200_000, 2024, target=target, query=q)
    assert ids.shape == (200_000,)
    _check_frequencies(ids, np.exp(ref))
    # float32 scores in the kernel, float64 here
    np.testing.assert_allclose(logq, ref[ids], rtol=0, atol=2e-6 / T)
    assert target_logq == pytest.approx(ref[target], abs=2e-6 / T)


def test_exact_boltzmann_never_draws_zero_popularity():
    W, q = _vectors()
    counts = COUNTS.copy()
    counts[::3] = 0
    sampler = _make("boltzmann", W, counts=counts, degeneracy="popularity")
    ref = _reference_logq(W, q, 1.0, counts.astype(np.float64))
    ids, logq, _ = sampler.py_draw(100_000, 5, query=q)
    _check_frequencies(ids, np.exp(ref))
    np.testing.assert_allclose(logq, ref[ids], atol=2e-6)


def test_exact_boltzmann_target_logq_without_draws_and_seeding():
    W, q = _vectors()
    sampler = _make("boltzmann", W, T=0.5)
    ref = _reference_logq(W, q, 0.5)
    ids, _, tlq = sampler.py_draw(0, 1, target=7, query=q)
    assert ids.size == 0 and tlq == pytest.approx(ref[7], abs=1e-5)
    a = sampler.py_draw(50, 9, query=q)[0]
    assert np.array_equal(a, sampler.py_draw(50, 9, query=q)[0])
    assert not np.array_equal(a, sampler.py_draw(50, 10, query=q)[0])


def test_exact_boltzmann_scratch_is_n_doubles():
    assert ExactBoltzmann(1_000_000, 1.0).scratch_bytes() == 8_000_000
    assert ExactBoltzmann(1_000_000, math.inf).scratch_bytes() == 0
    assert MHBoltzmann(1_000_000, 1.0).scratch_bytes() == 0
    assert TopK(1_000_000).scratch_bytes() == 4_000_000


def test_softmax_exact_is_softmax_of_scores():
    W, q = _vectors(query_norm=3.0)
    sampler = _make("softmax_exact", W)
    assert isinstance(sampler, ExactBoltzmann) and sampler.temperature == 1.0
    scores = W.astype(np.float64) @ q.astype(np.float64)
    softmax = np.exp(scores - scores.max())
    softmax /= softmax.sum()
    np.testing.assert_allclose(np.exp(sampler.log_probs(q)), softmax, rtol=1e-10)
    ids, logq, tlq = sampler.py_draw(200_000, 77, target=0, query=q)
    _check_frequencies(ids, softmax)
    np.testing.assert_allclose(logq, np.log(softmax[ids]), atol=1e-5)
    assert tlq == pytest.approx(math.log(softmax[0]), abs=1e-5)


@pytest.mark.parametrize("method", ["exact", "mh"])
@pytest.mark.parametrize("degeneracy", ["uniform", "popularity"])
def test_infinite_temperature_is_the_degeneracy_distribution(method, degeneracy):
    sampler = _make("boltzmann", T=math.inf, degeneracy=degeneracy, method=method)
    assert sampler.query_free and sampler.exact_logq
    d = np.full(N, 1.0 / N) if degeneracy == "uniform" else COUNTS / COUNTS.sum()
    np.testing.assert_allclose(sampler.probabilities(), d, rtol=1e-12)
    ids, logq, tlq = sampler.py_draw(200_000, 31, target=3)
    _check_frequencies(ids, d)
    np.testing.assert_allclose(logq, np.log(d[ids]), rtol=1e-12)
    assert tlq == pytest.approx(math.log(d[3]), rel=1e-12)
    assert sampler.log_probs(ids=[3])[0] == pytest.approx(math.log(d[3]), rel=1e-12)


# ----------------------------------------------------------------------------- Metropolis-Hastings
#
# Bounds used below.  The chain is an independence sampler with proposal D and target pi; with
# w = max_j pi(j)/D(j) its law after t steps is within (1 - 1/w)^t of pi in total variation from any start
# (Liu 1996, Mengersen & Tweedie 1996).  Every recorded draw has made at least t = burn_in + mh_steps steps,
# so the law mu of a draw (averaged over the positions of a call) has TV(mu, pi) <= (1 - 1/w)^t = bias.
# The empirical distribution of the draws of C independent calls deviates from mu by
# E[TV] <= 0.5 sum_j sqrt(Var(f_j) / C) <= 0.5 sum_j sqrt(mu_j / C) <= 0.5 sqrt(n / C) (f_j: the fraction of
# a call's draws equal to j; 0 <= f_j <= 1, so Var(f_j) <= E[f_j] = mu_j, whatever the correlation of the
# draws inside a call; then Cauchy-Schwarz), and one call moves the empirical TV by at most 1/C, so by
# McDiarmid it exceeds its mean by more than sqrt(log(1/delta) / (2 C)) with probability below delta = 1e-6:
#     TV(empirical, mu) <= noise(n, C) = 0.5 sqrt(n / C) + sqrt(log(1e6) / (2 C))
#     TV(empirical, pi) <= bias + noise(n, C)            (each with probability >= 1 - 1e-6)
# ``MHBoltzmann.draw_law`` computes mu exactly (checked against the transition matrix below), so the
# kernel is also tested against the law of the chain it claims to run, not only against pi.

MH_N, MH_DIM, MH_T = 1000, 16, 1.0


def _noise(n, calls):
    return 0.5 * math.sqrt(n / calls) + math.sqrt(math.log(1e6) / (2 * calls))


def _mh_problem(degeneracy):
    # unit class vectors in 16 dimensions, a query of norm 4: scores ~ N(0, 1), max about 3.2, so pi is far
    # from D (TV about 0.37) while w stays below 10 and the default chain (53 steps to the first draw)
    # has a bias below 0.003
    rng = np.random.default_rng(42)
    counts = rng.zipf(1.5, MH_N).clip(1, 10_000)
    W, q = _vectors(MH_N, MH_DIM, seed=42, query_norm=4.0)
    weights = None if degeneracy == "uniform" else counts.astype(np.float64)
    ref = _reference_logq(W, q, MH_T, weights)
    d = np.full(MH_N, 1.0 / MH_N) if weights is None else weights / weights.sum()
    w = np.max(np.exp(ref) / d)
    return counts, W, q, ref, d, w


def test_mh_draw_law_matches_transition_matrix():
    rng = np.random.default_rng(1)
    n = 30
    W = rng.standard_normal((n, 4)).astype(np.float32)
    W[6] = W[5]                          # a tie in pi / D
    q = rng.standard_normal(4).astype(np.float32)
    counts = rng.integers(0, 20, n).astype(np.float64)
    counts[0] = 0                        # outside the support of D
    for weights in (None, counts):
        sampler = MHBoltzmann(n, 0.5, weights, mh_steps=2, burn_in=3)
        sampler.bind(W)
        pi, d = np.exp(sampler.log_probs(q)), sampler.degeneracy
        P = np.zeros((n, n))
        for x in np.flatnonzero(d):
            for y in np.flatnonzero(d):
                a = min(1.0, (pi[y] / d[y]) / (pi[x] / d[x]))
                P[x, y] += d[y] * a
                P[x, x] += d[y] * (1.0 - a)
        k, mu, total = 4, d.copy(), np.zeros(n)
        for step in range(1, 3 + k * 2 + 1):
            mu = mu @ P
            if step > 3 and (step - 3) % 2 == 0:
                total += mu
        np.testing.assert_allclose(sampler.draw_law(q, k), total / k, atol=1e-9)


@pytest.mark.parametrize("weights", [None, "popularity"])
def test_mh_draws_follow_the_chain_law(weights):
    # a short chain at a low temperature: its law is far from pi, and the draws must follow that law
    W, q = _vectors(seed=3, query_norm=2.0)
    sampler = MHBoltzmann(N, 0.5, None if weights is None else COUNTS, mh_steps=2, burn_in=3)
    sampler.bind(W)
    pi = np.exp(sampler.log_probs(q))
    one = sampler.draw_law(q, 1)
    assert 0.5 * np.abs(one - pi).sum() > 0.05
    calls = 100_000
    d = sampler.draw_many(1, np.tile(q, (calls, 1)), seed=8)
    ids, drawn = d.ids, d.drawn
    assert np.all(drawn == 1)
    _check_frequencies(ids.ravel(), one)          # independent draws: chi-square against the exact law
    ids = sampler.draw_many(4, np.tile(q, (calls, 1)), seed=9).ids
    assert _tv(ids.ravel(), sampler.draw_law(q, 4)) < _noise(N, calls)


@pytest.mark.parametrize("degeneracy", ["uniform", "popularity"])
def test_mh_single_draws_within_bound_of_exact(degeneracy):
    counts, W, q, ref, d, w = _mh_problem(degeneracy)
    sampler = _make("boltzmann", W, counts=counts, T=MH_T, degeneracy=degeneracy, method="mh")
    assert isinstance(sampler, MHBoltzmann) and not sampler.exact_logq and not sampler.query_free
    pi = np.exp(ref)
    bias = (1.0 - 1.0 / w) ** (sampler.burn_in + sampler.mh_steps)
    assert 0.5 * np.abs(sampler.draw_law(q, 1) - pi).sum() <= bias
    calls = 100_000
    ids = sampler.draw_many(1, np.tile(q, (calls, 1)), seed=4).ids
    bound = bias + _noise(MH_N, calls)
    assert bound < 0.25 * 0.5 * np.abs(d - pi).sum(), "the bound must tell pi from D"
    assert _tv(ids.ravel(), pi) < bound, "TV %.4f, bound %.4f (w=%.1f)" % (_tv(ids.ravel(), pi), bound, w)


@pytest.mark.parametrize("degeneracy", ["uniform", "popularity"])
def test_mh_draw_sets_within_bound_and_logq_estimate(degeneracy):
    counts, W, q, ref, d, w = _mh_problem(degeneracy)
    sampler = _make("boltzmann", W, counts=counts, T=MH_T, degeneracy=degeneracy, method="mh")
    pi = np.exp(ref)
    calls, k, target = 20_000, 20, 11
    ids, logq, _, drawn = sampler.draw_many(k, np.tile(q, (calls, 1)), np.full(calls, target), seed=6)
    assert np.all(drawn == k)
    bias = (1.0 - 1.0 / w) ** (sampler.burn_in + sampler.mh_steps)
    assert _tv(ids.ravel(), pi) < bias + _noise(MH_N, calls)
    # logq = log D + G/T - log Z_hat: within a call the error is one shift, log Z_hat - log Z
    shift = ref[ids] - logq
    np.testing.assert_allclose(shift - shift[:, :1], 0.0, atol=1e-5)
    errors = shift[:, 0]
    for c in range(5):
        one, lq, tlq = sampler.py_draw(k, 100 + c, target=target, query=q)
        assert tlq - lq[0] == pytest.approx(ref[target] - ref[one[0]], abs=1e-5)
    # Z_hat averages M = 1 + burn_in + k mh_steps i.i.d. terms exp(G/T), j ~ D: by the delta method
    # log Z_hat has standard deviation cv / sqrt(M) and bias about -cv^2 / (2M), cv the coefficient of
    # variation of exp(G/T) under D
    e = np.exp(W.astype(np.float64) @ q.astype(np.float64) / MH_T)
    cv = math.sqrt(np.sum(d * e ** 2) / np.sum(d * e) ** 2 - 1.0)
    m = 1 + sampler.burn_in + k * sampler.mh_steps
    sd = cv / math.sqrt(m)
    assert abs(errors.mean()) < 5 * sd / math.sqrt(calls) + cv ** 2 / m
    assert np.sqrt(np.mean(errors ** 2)) < 1.2 * sd
    # a usable estimate: on average the logq are within about 0.1 of the exact ones
    assert np.mean(np.abs(errors)) < 0.15


def test_mh_chain_settings():
    W, q = _vectors()
    sampler = _make("boltzmann", W, method="mh", mh_steps=1, burn_in=0)
    assert (sampler.mh_steps, sampler.burn_in) == (1, 0)
    ids, logq, tlq = sampler.py_draw(25, 3, target=2, query=q)
    assert ids.shape == (25,) and np.all((ids >= 0) & (ids < N)) and np.all(np.isfinite(logq))
    assert np.isfinite(tlq)
    default = _make("boltzmann", W, method="mh")
    assert (default.mh_steps, default.burn_in) == (3, 50)


# ----------------------------------------------------------------------------- top-k

def test_topk_returns_the_top_wrong_classes():
    W, q = _vectors(query_norm=2.0)
    sampler = _make("topk", W)
    assert not sampler.is_distribution and not sampler.query_free
    scores = W.astype(np.float64) @ q.astype(np.float64)
    order = np.argsort(-scores, kind="stable")
    for target in (int(order[0]), int(order[3]), int(order[-1])):
        for k in (1, 5, 12):
            ids, logq, tlq = sampler.py_draw(k, 1, target=target, query=q)
            expected = [c for c in order if c != target][:k]
            assert list(ids) == expected, "k=%d target=%d" % (k, target)
            assert np.all(logq == 0.0) and tlq == 0.0
    # deterministic: the seed does not matter
    assert np.array_equal(sampler.py_draw(5, 1, 0, q)[0], sampler.py_draw(5, 99, 0, q)[0])


def test_topk_asks_for_more_than_exist():
    W, q = _vectors()
    sampler = _make("topk", W)
    ids, _, _ = sampler.py_draw(N + 5, 1, target=3, query=q)
    assert ids.size == N - 1 and sorted(ids) == [c for c in range(N) if c != 3]
    ids, _, _ = sampler.py_draw(N, 1, query=q)
    assert sorted(ids) == list(range(N))


def test_topk_ties_prefer_smaller_ids():
    W = np.zeros((10, 4), dtype=np.float32)
    W[[2, 5, 7], 0] = 1.0
    sampler = TopK(10)
    sampler.bind(W)
    ids, _, _ = sampler.py_draw(4, 1, target=5, query=np.array([1, 0, 0, 0], dtype=np.float32))
    assert list(ids) == [2, 7, 0, 1]


def test_samplers_need_bound_vectors():
    for sampler in (ExactBoltzmann(5), MHBoltzmann(5), TopK(5)):
        with pytest.raises(RuntimeError, match="bind"):
            sampler.py_draw(2, 1, query=np.zeros(4, dtype=np.float32))
        with pytest.raises(ValueError, match="query"):
            sampler.bind(np.zeros((5, 4), dtype=np.float32))
            sampler.py_draw(2, 1)


# ----------------------------------------------------------------------------- parameters and pairing

@pytest.mark.parametrize("params, match", [
    ({"T": 0}, "T"), ({"T": -1.0}, "T"), ({"T": float("nan")}, "T"), ({"T": "hot"}, "T"), ({"T": True}, "T"),
    ({"degeneracy": "zipf"}, "degeneracy"), ({"method": "gibbs"}, "method"),
    ({"method": "mh", "mh_steps": 0}, "mh_steps"), ({"method": "mh", "mh_steps": 1.5}, "mh_steps"),
    ({"method": "mh", "burn_in": -1}, "burn_in"), ({"mh_steps": 2}, "mh_steps"), ({"burn_in": 10}, "burn_in"),
    ({"degeneracy": "popularity", "alpha": -0.5}, "alpha"),
    ({"degeneracy": "popularity", "alpha": float("inf")}, "alpha"), ({"alpha": 0.75}, "alpha"),
])
def test_boltzmann_rejects_bad_parameters(params, match):
    with pytest.raises(ValueError, match=match):
        registry.make_sampler("boltzmann", counts=COUNTS, n_classes=N, **params)


def test_popularity_needs_counts():
    with pytest.raises(ValueError, match="counts"):
        registry.make_sampler("boltzmann", counts=None, n_classes=N, degeneracy="popularity")


@pytest.mark.parametrize("name", ["boltzmann", "softmax_exact", "topk"])
def test_builders_reject_unknown_parameters(name):
    with pytest.raises(TypeError, match="temperature"):
        registry.make_sampler(name, counts=COUNTS, n_classes=N, temperature=2.0)


@pytest.mark.parametrize("loss_name", ["sampled_softmax", "nce"])
def test_topk_cannot_serve_logq_corrected_losses(loss_name):
    loss = registry.make_loss(loss_name)
    with pytest.raises(ValueError, match="log-probabilities.*TopK|TopK.*log"):
        registry.check_pairing(loss, TopK(N), 5, N)
    with pytest.raises(ValueError, match="deterministically"):
        Word2Vec(_SENTENCES, sg=1, vector_size=16, epochs=1, min_count=1, workers=1, loss=loss_name,
                 sampler="topk")
    for ok in ("sgns", "relaxed_softmax"):
        registry.check_pairing(registry.make_loss(ok), TopK(N), 5, N)


# ----------------------------------------------------------------------------- end to end

_SENTENCES = [s.split() for s in (
    "the cat sat on the mat and the dog sat on the rug",
    "a dog and a cat are friends but the cat likes the mat",
    "the rug is red and the mat is blue",
    "on sunday the dog ran to the park with a ball",
    "the cat did not run because the cat was asleep on the mat",
    "a bird sang in the park and the dog barked at the bird",
)] * 20

_SAMPLERS = {
    "boltzmann_exact": ("boltzmann", {"T": 0.5, "degeneracy": "popularity"}),
    "boltzmann_mh": ("boltzmann", {"method": "mh", "mh_steps": 2, "burn_in": 10}),
    "softmax_exact": ("softmax_exact", {}),
    "topk": ("topk", {}),
}


def _cases():
    for loss_name in ("sgns", "nce", "sampled_softmax", "relaxed_softmax"):
        for key in _SAMPLERS:
            if key == "topk" and loss_name in ("nce", "sampled_softmax"):
                continue   # refused by check_pairing, tested above
            yield pytest.param(loss_name, key, id="%s-%s" % (loss_name, key))


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("loss_name, key", list(_cases()))
def test_word2vec_trains_with_boltzmann_samplers(loss_name, key, workers):
    sampler, params = _SAMPLERS[key]
    model = Word2Vec(_SENTENCES, sg=1, vector_size=16, epochs=2, min_count=1, window=3, negative=5,
                     workers=workers, seed=3, loss=loss_name, sampler=sampler, sampler_params=params)
    report = model.last_report
    assert report.examples > 0
    assert np.all(np.isfinite(report.epoch_loss))
    assert np.all(np.isfinite(model.wv.vectors)) and np.all(np.isfinite(model.syn1neg))
    assert np.any(model.syn1neg != 0.0)
