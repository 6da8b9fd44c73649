"""Properties of the sampled losses that tie them to the full softmax they approximate (or relax)."""
import numpy as np
import pytest

from embkit.core import registry
from embkit._kernels import samplers

N, DIM = 40, 6


def _problem(seed=3):
    rng = np.random.default_rng(seed)
    h = rng.standard_normal(DIM).astype(np.float32)
    W = (0.8 * rng.standard_normal((N, DIM))).astype(np.float32)
    return h, W, 7


def _grad_h(loss, h, W, target, neg=(), logq=None, target_logq=0.0):
    """dL/dh from a step with a tiny learning rate (the step reports -lr * dL/dh)."""
    lr = 1e-3
    _, dh = loss.py_step(h, target, np.asarray(neg, dtype=np.intc), W.copy(), lr, logq, target_logq)
    return dh.astype(np.float64) / -lr


def _full_softmax_grad(h, W, target):
    s = W.astype(np.float64) @ h
    p = np.exp(s - s.max())
    p /= p.sum()
    return W.T.astype(np.float64) @ p - W[target]


def test_full_softmax_loss_and_gradient_match_numpy():
    h, W, t = _problem()
    loss = registry.make_loss("full_softmax")
    value, _ = loss.py_step(h, t, [], W.copy(), 0.0)
    s = W.astype(np.float64) @ h
    assert value == pytest.approx(-s[t] + np.log(np.exp(s).sum()), rel=1e-5)
    np.testing.assert_allclose(_grad_h(loss, h, W, t), _full_softmax_grad(h, W, t), rtol=2e-3, atol=2e-4)


@pytest.mark.parametrize("sampler_name", ["uniform", "unigram"])
def test_sampled_softmax_approaches_full_softmax_as_k_grows(sampler_name):
    # the logQ-corrected estimator is biased for small K; its bias shrinks as K grows
    h, W, t = _problem()
    counts = np.arange(1, N + 1) ** 2
    sampler = registry.make_sampler(sampler_name, counts=counts, n_classes=N)
    loss = registry.make_loss("sampled_softmax")
    exact = _full_softmax_grad(h, W, t)
    errors = []
    for k in (2, 20, 400):
        grads = []
        for rep in range(300 if k < 400 else 40):
            ids, logq, tlq = sampler.py_draw(k, seed=1000 * k + rep, target=t)
            grads.append(_grad_h(loss, h, W, t, ids, logq, tlq))
        errors.append(np.linalg.norm(np.mean(grads, axis=0) - exact) / np.linalg.norm(exact))
    assert errors[2] < errors[0]
    assert errors[2] < 0.05, errors


def test_relaxed_softmax_with_uniform_negatives_is_a_monte_carlo_softmax():
    # normalising over K uniform draws estimates the full normaliser up to the factor n / K
    h, W, t = _problem(5)
    sampler = samplers.uniform(N)
    loss = registry.make_loss("relaxed_softmax")
    s = W.astype(np.float64) @ h
    full = -s[t] + np.log(np.exp(s).sum())
    k = 4000
    ids, _, _ = sampler.py_draw(k, seed=9, target=t)
    value, _ = loss.py_step(h, t, ids, W.copy(), 0.0)
    kept = ids[ids != t]   # accidental hits are removed
    estimate = value + np.log(N / kept.size)
    assert estimate == pytest.approx(full, abs=0.05)
    np.testing.assert_allclose(_grad_h(loss, h, W, t, ids), _full_softmax_grad(h, W, t), atol=0.05)


def test_relaxed_softmax_has_no_logq_correction():
    h, W, t = _problem()
    loss = registry.make_loss("relaxed_softmax")
    neg = np.array([1, 2, 3], dtype=np.intc)
    a, _ = loss.py_step(h, t, neg, W.copy(), 0.0, np.array([-1.0, -2.0, -3.0]), -0.5)
    b, _ = loss.py_step(h, t, neg, W.copy(), 0.0, np.zeros(3), 0.0)
    assert a == b


def test_nce_uses_log_k_q_correction():
    h, W, t = _problem()
    loss = registry.make_loss("nce")
    neg = np.array([1, 2, 3], dtype=np.intc)
    logq = np.log(np.array([0.1, 0.2, 0.05]))
    tlq = np.log(0.3)
    value, _ = loss.py_step(h, t, neg, W.copy(), 0.0, logq, tlq)
    s = W.astype(np.float64) @ h
    o_t = s[t] - np.log(3 * 0.3)
    o = s[neg] - np.log(3 * np.exp(logq))
    expected = np.logaddexp(0, -o_t) + np.logaddexp(0, o).sum()
    assert value == pytest.approx(expected, rel=1e-5)


def test_sampled_softmax_removes_accidental_hits():
    h, W, t = _problem()
    loss = registry.make_loss("sampled_softmax")
    with_hit, _ = loss.py_step(h, t, np.array([1, t, 2], dtype=np.intc), W.copy(), 0.0, np.zeros(3), 0.0)
    without, _ = loss.py_step(h, t, np.array([1, 2], dtype=np.intc), W.copy(), 0.0, np.zeros(2), 0.0)
    assert with_hit == pytest.approx(without, rel=1e-6)


def test_hierarchical_softmax_probabilities_sum_to_one():
    # the product of the path decisions is a distribution over the classes
    rng = np.random.default_rng(2)
    counts = rng.integers(1, 100, size=N)
    loss = registry.make_loss("hs", counts=counts)
    W = (0.5 * rng.standard_normal((loss.output_rows(N), DIM))).astype(np.float32)
    h = rng.standard_normal(DIM).astype(np.float32)
    total = sum(np.exp(-loss.py_step(h, c, [], W.copy(), 0.0)[0]) for c in range(N))
    assert total == pytest.approx(1.0, rel=1e-4)


def test_huffman_paths_favour_frequent_classes():
    from embkit._kernels.losses import huffman_paths

    counts = np.array([1000, 1, 2, 500, 3, 250])
    offsets, points, codes = huffman_paths(counts)
    depth = np.diff(offsets)
    assert depth[0] <= depth[3] <= depth[1]
    assert points.max() == counts.size - 2 and set(np.unique(codes)) <= {0, 1}
    # every class has a distinct code
    paths = {tuple(codes[offsets[i]:offsets[i + 1]]) for i in range(counts.size)}
    assert len(paths) == counts.size
