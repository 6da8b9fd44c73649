"""Kernel primitives through their Python probes: sigmoid tables, dot product, loss steps, samplers.

Losses and samplers are looked up in :mod:`embkit.core.registry`, so one added there is tested here without a
new test: every loss gets the finite-difference check of its ``py_step`` contract
(``grad_h = -lr * dL/dh``, ``W_out`` moved by ``-lr * dL/dW_out``) and every sampler the check that its
draws follow its declared ``probabilities``.
"""
import math

import numpy as np
import pytest
from scipy import stats

from embkit.core import registry
from embkit._kernels import losses, samplers
from embkit._kernels.common import py_dot, py_log_sigmoid, py_sigmoid


# ----------------------------------------------------------------------------- common helpers

def test_sigmoid_tables_match_exact_functions():
    # float32 inputs over the table range [-8, 8] and beyond, where the exact formula is used
    x = np.linspace(-12.0, 12.0, 24001).astype(np.float32).astype(np.float64)
    sig = np.array([py_sigmoid(v) for v in x])
    logsig = np.array([py_log_sigmoid(v) for v in x])
    exact_sig = 1.0 / (1.0 + np.exp(-x))
    exact_logsig = -np.logaddexp(0.0, -x)
    # linear interpolation with 256 knots per unit, evaluated in float32: a few 1e-7 at most
    assert np.max(np.abs(sig - exact_sig)) < 1e-6
    assert np.max(np.abs(logsig - exact_logsig)) < 1e-6
    assert np.all(np.diff(sig) >= 0)
    assert py_sigmoid(0.0) == pytest.approx(0.5, abs=1e-7)
    # saturated tails stay finite and accurate
    assert py_sigmoid(100.0) == 1.0
    assert 0.0 <= py_sigmoid(-100.0) < 1e-40
    assert py_log_sigmoid(-100.0) == pytest.approx(-100.0)
    assert py_log_sigmoid(100.0) <= 0.0
    assert math.isnan(py_sigmoid(float("nan")))
    assert math.isnan(py_log_sigmoid(float("nan")))


@pytest.mark.parametrize("n", [1, 3, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 100, 300])
def test_dot_matches_numpy(n):
    rng = np.random.default_rng(n)
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    expected = float(np.dot(a.astype(np.float64), b.astype(np.float64)))
    assert py_dot(a, b) == pytest.approx(expected, rel=1e-5, abs=1e-5 * math.sqrt(n))


# ----------------------------------------------------------------------------- SGNS step

def _sgns_problem(seed=0, n_classes=12, dim=8, k=5, scale=0.5):
    rng = np.random.default_rng(seed)
    h = (scale * rng.standard_normal(dim)).astype(np.float32)
    W = (scale * rng.standard_normal((n_classes, dim))).astype(np.float32)
    target = 3
    neg = np.array([0, 5, 7, 9, 11][:k], dtype=np.intc)   # distinct, none equal to the target
    return h, W, target, neg


def _sgns_reference(h, W, target, neg):
    """Loss and gradients of SGNS in float64 with the exact sigmoid."""
    h = h.astype(np.float64)
    W = W.astype(np.float64)
    sig = lambda z: 1.0 / (1.0 + np.exp(-z))
    f_t = W[target] @ h
    loss = np.logaddexp(0.0, -f_t)
    d_h = -(1.0 - sig(f_t)) * W[target]
    d_W = np.zeros_like(W)
    d_W[target] += -(1.0 - sig(f_t)) * h
    for c in neg:
        if c == target:
            continue
        f = W[c] @ h
        loss += np.logaddexp(0.0, f)
        d_h += sig(f) * W[c]
        d_W[c] += sig(f) * h
    return loss, d_h, d_W


def _loss_at(loss_obj, h, W, target, neg, logq=None, target_logq=0.0):
    """Loss only: ``py_step`` with ``lr = 0`` on copies (nothing is updated)."""
    value, _ = loss_obj.py_step(np.ascontiguousarray(h, dtype=np.float32), target, neg,
                                np.array(W, dtype=np.float32, copy=True), 0.0, logq, target_logq)
    return value


def _finite_differences(loss_obj, h, W, target, neg, logq=None, eps=4e-3, target_logq=0.0):
    """Central differences of the loss in every coordinate of ``h`` and of ``W_out``.

    The perturbed points are rounded to float32, so the step actually taken is used as denominator.
    """
    def diff(vec_of, n):
        out = np.zeros(n)
        for i in range(n):
            plus, minus, step = vec_of(i)
            out[i] = (plus - minus) / step
        return out

    def h_point(i):
        hp, hm = h.copy(), h.copy()
        hp[i] = np.float32(h[i] + eps)
        hm[i] = np.float32(h[i] - eps)
        return (_loss_at(loss_obj, hp, W, target, neg, logq, target_logq),
                _loss_at(loss_obj, hm, W, target, neg, logq, target_logq), float(hp[i]) - float(hm[i]))

    def w_point(i):
        r, c = divmod(i, W.shape[1])
        Wp, Wm = W.copy(), W.copy()
        Wp[r, c] = np.float32(W[r, c] + eps)
        Wm[r, c] = np.float32(W[r, c] - eps)
        return (_loss_at(loss_obj, h, Wp, target, neg, logq, target_logq),
                _loss_at(loss_obj, h, Wm, target, neg, logq, target_logq), float(Wp[r, c]) - float(Wm[r, c]))

    return diff(h_point, h.size), diff(w_point, W.size).reshape(W.shape)


# the kernels are float32 with a table sigmoid: finite differences of such a loss are good to ~2e-4
FD_ATOL = 1e-3
FD_RTOL = 5e-3


def test_sgns_loss_matches_formula():
    loss_obj = losses.SGNS()
    for seed in range(5):
        h, W, target, neg = _sgns_problem(seed)
        ref_loss, _, _ = _sgns_reference(h, W, target, neg)
        assert _loss_at(loss_obj, h, W, target, neg) == pytest.approx(ref_loss, rel=1e-5, abs=1e-5)


def test_sgns_step_gradients_match_analytic():
    loss_obj = losses.SGNS()
    lr = 0.25
    for seed in range(5):
        h, W, target, neg = _sgns_problem(seed)
        _, d_h, d_W = _sgns_reference(h, W, target, neg)
        W_work = W.copy()
        h_before = h.copy()
        _, grad_h = loss_obj.py_step(h, target, neg, W_work, lr)
        assert np.array_equal(h, h_before), "py_step must not modify h"
        np.testing.assert_allclose(grad_h, -lr * d_h, rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(W_work - W, -lr * d_W, rtol=1e-4, atol=1e-6)
        # rows that are neither the target nor a negative are untouched
        untouched = np.setdiff1d(np.arange(W.shape[0]), np.r_[neg, target])
        assert np.array_equal(W_work[untouched], W[untouched])


def test_sgns_step_gradients_match_finite_differences():
    loss_obj = losses.SGNS()
    lr = 0.5
    for seed in range(3):
        h, W, target, neg = _sgns_problem(seed)
        fd_h, fd_W = _finite_differences(loss_obj, h, W, target, neg)
        W_work = W.copy()
        _, grad_h = loss_obj.py_step(h, target, neg, W_work, lr)
        # dL/dh
        np.testing.assert_allclose(grad_h / -lr, fd_h, rtol=FD_RTOL, atol=FD_ATOL)
        # dL/dW_out, rows of the target and of each negative (all other rows have zero gradient)
        step_W = (W_work.astype(np.float64) - W) / -lr
        for row in np.r_[target, neg]:
            np.testing.assert_allclose(step_W[row], fd_W[row], rtol=FD_RTOL, atol=FD_ATOL,
                                       err_msg="row %d" % row)
        np.testing.assert_allclose(step_W, fd_W, rtol=FD_RTOL, atol=FD_ATOL)
        # and the finite differences agree with the float64 formula
        _, d_h, d_W = _sgns_reference(h, W, target, neg)
        np.testing.assert_allclose(fd_h, d_h, rtol=FD_RTOL, atol=FD_ATOL)
        np.testing.assert_allclose(fd_W, d_W, rtol=FD_RTOL, atol=FD_ATOL)


def test_sgns_saturated_scores_outside_table():
    # scores far outside [-8, 8]: exact sigmoid branch, finite loss, no NaN gradients
    loss_obj = losses.SGNS()
    h, W, target, neg = _sgns_problem(1, scale=3.0)
    ref_loss, d_h, d_W = _sgns_reference(h, W, target, neg)
    assert np.max(np.abs(W.astype(np.float64) @ h.astype(np.float64))) > 8
    W_work = W.copy()
    value, grad_h = loss_obj.py_step(h, target, neg, W_work, 0.1)
    assert value == pytest.approx(ref_loss, rel=1e-4)
    np.testing.assert_allclose(grad_h, -0.1 * d_h, rtol=1e-3, atol=1e-5)
    np.testing.assert_allclose(W_work - W, -0.1 * d_W, rtol=1e-3, atol=1e-5)


def test_sgns_negative_equal_to_target_is_skipped():
    loss_obj = losses.SGNS()
    h, W, target, neg = _sgns_problem(2)
    with_target = np.r_[neg[:2], target, neg[2:]].astype(np.intc)
    W_a, W_b = W.copy(), W.copy()
    loss_a, grad_a = loss_obj.py_step(h, target, neg, W_a, 0.3)
    loss_b, grad_b = loss_obj.py_step(h, target, with_target, W_b, 0.3)
    assert loss_b == loss_a
    assert np.array_equal(grad_b, grad_a)
    assert np.array_equal(W_b, W_a)     # the target row moved once, as a positive only
    # only negatives equal to the target: the step is the positive part alone
    W_c = W.copy()
    loss_c, grad_c = loss_obj.py_step(h, target, [target, target], W_c, 0.3)
    W_d = W.copy()
    loss_d, grad_d = loss_obj.py_step(h, target, [], W_d, 0.3)
    assert loss_c == loss_d and np.array_equal(grad_c, grad_d) and np.array_equal(W_c, W_d)


def test_sgns_repeated_negatives_count_once_each_draw():
    # a negative drawn twice contributes twice to the loss, and the step is still the exact gradient
    loss_obj = losses.SGNS()
    h, W, target, _ = _sgns_problem(4)
    neg = np.array([5, 5, 7, 9, 5], dtype=np.intc)
    ref_loss, d_h, d_W = _sgns_reference(h, W, target, neg)
    assert _loss_at(loss_obj, h, W, target, neg) == pytest.approx(ref_loss, rel=1e-5)
    fd_h, fd_W = _finite_differences(loss_obj, h, W, target, neg)
    np.testing.assert_allclose(fd_h, d_h, rtol=FD_RTOL, atol=FD_ATOL)
    np.testing.assert_allclose(fd_W, d_W, rtol=FD_RTOL, atol=FD_ATOL)
    # the output rows move by the summed updates of all copies
    lr = 0.25
    W_work = W.copy()
    loss_obj.py_step(h, target, neg, W_work, lr)
    np.testing.assert_allclose(W_work - W, -lr * d_W, rtol=1e-4, atol=1e-6)
    # the input gradient may take a repeated row as already moved by its earlier copy (word2vec's
    # row-by-row order), which differs from dL/dh by O(lr): compare at a small learning rate
    lr = 1e-3
    _, grad_h = loss_obj.py_step(h, target, neg, W.copy(), lr)
    np.testing.assert_allclose(grad_h / -lr, d_h, rtol=FD_RTOL, atol=FD_ATOL)


def test_sgns_zero_learning_rate_changes_nothing():
    loss_obj = losses.SGNS()
    h, W, target, neg = _sgns_problem(3)
    W_work = W.copy()
    _, grad_h = loss_obj.py_step(h, target, neg, W_work, 0.0)
    assert np.array_equal(W_work, W)
    assert not np.any(grad_h)


def test_py_step_rejects_bad_ids():
    loss_obj = losses.SGNS()
    h, W, target, neg = _sgns_problem(0)
    with pytest.raises(IndexError):
        loss_obj.py_step(h, W.shape[0], neg, W, 0.1)
    with pytest.raises(IndexError):
        loss_obj.py_step(h, target, [0, W.shape[0]], W, 0.1)
    with pytest.raises(ValueError):
        loss_obj.py_step(h[:4].copy(), target, neg, W, 0.1)


# ----------------------------------------------------------------------------- every registered loss

def _loss_ids():
    return sorted(registry.LOSSES)


LOSS_COUNTS = np.arange(1, 13) ** 2       # class popularity for losses that need it (the hs tree)


def _loss_problem(name, seed, k=5):
    """A loss, its inputs and the sampler log-probabilities it needs, for a 12-class problem."""
    loss_obj = registry.make_loss(name, counts=LOSS_COUNTS)
    n_classes, dim = LOSS_COUNTS.size, 8
    h, W, target, neg = _sgns_problem(seed, n_classes=n_classes, dim=dim, k=k)
    rows = loss_obj.output_rows(n_classes)
    if rows > W.shape[0]:                      # a loss with two stacked output tables
        W = np.vstack([W, W[::-1]])
    W = W[:rows].copy()
    logq, target_logq = None, 0.0
    if loss_obj.needs_logq:
        sampler = samplers.unigram(np.arange(1, n_classes + 1), 0.75)
        logq = sampler.log_probs(ids=neg)
        target_logq = float(sampler.log_probs(ids=[target])[0])
    if not loss_obj.uses_negatives:
        neg = np.zeros(0, dtype=np.intc)
        logq = None
    return loss_obj, h, W, target, neg, logq, target_logq


@pytest.mark.parametrize("name", _loss_ids())
def test_registered_loss_step_is_gradient_of_its_loss(name):
    """The ``py_step`` contract for any loss: its updates are ``-lr`` times the loss's gradients."""
    loss_obj, h, W, target, neg, logq, tlq = _loss_problem(name, 7)
    fd_h, fd_W = _finite_differences(loss_obj, h, W, target, neg, logq, target_logq=tlq)
    lr = 0.5
    W_work = W.copy()
    value, grad_h = loss_obj.py_step(h, target, neg, W_work, lr, logq, tlq)
    assert np.isfinite(value)
    assert value == pytest.approx(_loss_at(loss_obj, h, W, target, neg, logq, tlq), rel=1e-6)
    np.testing.assert_allclose(grad_h / -lr, fd_h, rtol=FD_RTOL, atol=FD_ATOL)
    np.testing.assert_allclose((W_work.astype(np.float64) - W) / -lr, fd_W, rtol=FD_RTOL, atol=FD_ATOL)


@pytest.mark.parametrize("name", _loss_ids())
def test_registered_loss_batch_step_matches_single_steps(name):
    """A step over a batch of inputs sharing target and negatives (``py_step`` with a 2-d ``H``, used for
    shared negatives): its loss and input gradients are those of the single steps at the same point, and
    ``W_out`` moves by the sum of their updates (all computed from the rows as they were)."""
    loss_obj, _, W, _, _, logq, tlq = _loss_problem(name, 11)
    rng = np.random.default_rng(11)
    m, dim = 3, W.shape[1]
    H = (0.5 * rng.standard_normal((m, dim))).astype(np.float32)
    target, neg = 3, np.array([0, 5, 7, 9, 11], dtype=np.intc)
    if loss_obj.needs_logq:
        sampler = samplers.unigram(np.arange(1, 13), 0.75)
        logq = sampler.log_probs(ids=neg)
    if not loss_obj.uses_negatives:
        neg, logq = np.zeros(0, dtype=np.intc), None
    lr = 1e-2
    W_batch = W.copy()
    loss_batch, grad_H = loss_obj.py_step(H, target, neg, W_batch, lr, logq, tlq)
    assert grad_H.shape == H.shape
    total = 0.0
    delta = np.zeros(W.shape, dtype=np.float64)
    for a in range(m):
        W_single = W.copy()
        value, grad = loss_obj.py_step(H[a].copy(), target, neg, W_single, lr, logq, tlq)
        total += value
        delta += W_single.astype(np.float64) - W
        np.testing.assert_allclose(grad_H[a], grad, rtol=1e-4, atol=1e-7)
    assert loss_batch == pytest.approx(total, rel=1e-5)
    np.testing.assert_allclose(W_batch.astype(np.float64) - W, delta, rtol=1e-3, atol=1e-6)


# ----------------------------------------------------------------------------- samplers

COUNTS = np.array([500, 1, 30, 7, 120, 3, 60, 15, 250, 2, 40, 9, 80, 5, 20, 1000, 4, 11, 6, 90], dtype=np.int64)
N_DRAWS = 200_000


def _declared(counts, alpha):
    w = counts.astype(np.float64) ** alpha
    return w / w.sum()


def _sampler_cases():
    """(id, builder name, extra params, expected probabilities or None) for every registered sampler."""
    cases = []
    for name in sorted(registry.SAMPLERS):
        if name == "unigram":
            for alpha in (0.75, 1.0, 0.0):
                cases.append(pytest.param(name, {"ns_exponent": alpha}, _declared(COUNTS, alpha),
                                          id="unigram-%g" % alpha))
        elif name == "uniform":
            cases.append(pytest.param(name, {}, np.full(COUNTS.size, 1.0 / COUNTS.size), id="uniform"))
        else:  # a sampler added later: checked against its own declared probabilities
            cases.append(pytest.param(name, {}, None, id=name))
    return cases


def _check_frequencies(ids, p, n_draws):
    observed = np.bincount(ids, minlength=p.size)
    assert observed.sum() == n_draws
    assert np.all(observed[p == 0] == 0), "a class of probability 0 was drawn"
    support = p > 0
    expected = p[support] * n_draws
    chi2, p_value = stats.chisquare(observed[support], expected)
    # a correct sampler fails this with probability 1e-4 (and the seed is fixed)
    assert p_value > 1e-4, "chi-square %.1f, p=%.2g" % (chi2, p_value)
    tv = 0.5 * np.abs(observed / n_draws - p).sum()
    assert tv < 0.01


def _ready(sampler, dim=8, seed=0):
    """Bind an adaptive sampler to random class vectors; returns a query for ``py_draw`` (None if static)."""
    if sampler.query_free:
        return None
    rng = np.random.default_rng(seed)
    sampler.bind((0.3 * rng.standard_normal((sampler.n_classes, dim))).astype(np.float32))
    return (0.3 * rng.standard_normal(dim)).astype(np.float32)


@pytest.mark.parametrize("name, params, expected", _sampler_cases())
def test_sampler_draws_follow_declared_probabilities(name, params, expected):
    """The contract of every sampler, through the one Python interface (``draw_many``, ``log_probs``).

    A distribution's draws follow its ``probabilities`` for the query and target (chi-square where its
    log-probabilities are exact, total variation where its draws only approximate its law), and the
    ``logq`` / ``target_logq`` it reports are those of that law; a deterministic choice returns the best
    wrong classes and has no log-probabilities.
    """
    sampler = registry.make_sampler(name, counts=COUNTS, n_classes=COUNTS.size, **params)
    assert sampler.n_classes == COUNTS.size
    query = _ready(sampler)
    target = 4
    if not sampler.is_distribution:
        with pytest.raises(TypeError, match="deterministically"):
            sampler.log_probs(query, target)
        k = 5
        ids = sampler.draw_many(k, np.tile(query, (3, 1)), [target] * 3).ids
        scores = np.asarray(sampler.W_out) @ query
        scores[target] = -np.inf
        best = np.argsort(-scores, kind="stable")[:k]
        assert all(np.array_equal(row, best) for row in ids)
        return
    p = sampler.probabilities(query, target)
    assert p.shape == (COUNTS.size,)
    assert np.all(p >= 0) and p.sum() == pytest.approx(1.0, abs=1e-9)
    if expected is not None:
        np.testing.assert_allclose(p, expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(sampler.log_probs(query, target, ids=[0, 7, 19]), np.log(p[[0, 7, 19]]),
                               rtol=1e-12)
    # one draw per call, so the draws are independent whatever a sampler does within a call
    queries = None if query is None else np.tile(query, (N_DRAWS, 1))
    ids, logq, tlq, drawn = sampler.draw_many(1, queries, np.full(N_DRAWS, target), seed=12345)
    assert ids.shape == (N_DRAWS, 1) and np.all(drawn == 1)
    assert ids.min() >= 0 and ids.max() < COUNTS.size
    if sampler.exact_logq:
        _check_frequencies(ids.ravel(), p, N_DRAWS)
        np.testing.assert_allclose(logq.ravel(), np.log(p[ids.ravel()]), rtol=1e-5, atol=1e-6)
        if p[target] > 0:
            np.testing.assert_allclose(tlq, math.log(p[target]), rtol=1e-5)
        else:   # a sampler that never draws the target reports a finite stand-in for the logQ correction
            assert np.all(np.isfinite(tlq))
    else:   # estimated log-probabilities and approximate draws (Metropolis-Hastings)
        observed = np.bincount(ids.ravel(), minlength=p.size) / N_DRAWS
        assert 0.5 * np.abs(observed - p).sum() < 0.02
        assert np.all(np.isfinite(logq)) and np.all(logq <= 0.0)
    with pytest.raises(IndexError):
        sampler.log_probs(query, target, ids=[COUNTS.size])


@pytest.mark.parametrize("name", sorted(registry.SAMPLERS))
def test_sampler_draws_are_seeded(name):
    sampler = registry.make_sampler(name, counts=COUNTS, n_classes=COUNTS.size)
    query = _ready(sampler)
    a, la, _ = sampler.py_draw(1000, 7, query=query)
    b, lb, _ = sampler.py_draw(1000, 7, query=query)
    c, _, _ = sampler.py_draw(1000, 8, query=query)
    assert np.array_equal(a, b) and np.array_equal(la, lb)
    if sampler.is_distribution:
        assert not np.array_equal(a, c)
    empty, _, _ = sampler.py_draw(0, 7, query=query)
    assert empty.size == 0


@pytest.mark.parametrize("name", sorted(registry.SAMPLERS))
def test_sampler_builders_reject_unknown_parameters(name):
    with pytest.raises(TypeError, match="no_such_param"):
        registry.make_sampler(name, counts=COUNTS, n_classes=COUNTS.size, no_such_param=1)


def test_unigram_never_draws_zero_count_classes():
    counts = COUNTS.copy()
    counts[::3] = 0
    for alpha in (0.75, 1.0):
        sampler = samplers.unigram(counts, alpha)
        ids, _, _ = sampler.py_draw(N_DRAWS, 99)
        _check_frequencies(ids, _declared(counts, alpha), N_DRAWS)


def test_sampler_rejects_invalid_weights():
    with pytest.raises(ValueError):
        samplers.AliasSampler([])
    with pytest.raises(ValueError):
        samplers.AliasSampler([1.0, -1.0])
    with pytest.raises(ValueError):
        samplers.AliasSampler([0.0, 0.0])
    with pytest.raises(ValueError):
        samplers.AliasSampler([1.0, float("nan")])
    with pytest.raises(ValueError):
        samplers.uniform(0)
    with pytest.raises(ValueError):
        samplers.unigram([3, -1])


def test_alias_sampler_on_many_classes():
    # a Zipf-like vocabulary the size of a real one: the alias table stays exact
    counts = (1e6 / np.arange(1, 5001)).astype(np.int64) + 1
    sampler = samplers.unigram(counts, 0.75)
    p = _declared(counts, 0.75)
    np.testing.assert_allclose(sampler.probabilities(), p, rtol=1e-12)
    ids, _, _ = sampler.py_draw(400_000, 3)
    observed = np.bincount(ids, minlength=counts.size)
    # head classes individually, the tail pooled
    head = 50
    expected = np.r_[p[:head], p[head:].sum()] * ids.size
    _, p_value = stats.chisquare(np.r_[observed[:head], observed[head:].sum()], expected)
    assert p_value > 1e-4
