"""The kernel sampler (RF-softmax and Quadratic-softmax through a sum tree): feature maps, the tree's exact
distribution against its draws and log-probabilities, closeness to the softmax, updates, parameters, and
training with it end to end."""
import numpy as np
import pytest
from scipy import stats

from embkit import Word2Vec
from embkit.core import registry
from embkit._kernels.kernel_sampler import KernelSampler


def _unit(x):
    x = np.asarray(x, dtype=np.float64)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _problem(n=203, d=12, seed=0, scale=0.7):
    rng = np.random.default_rng(seed)
    W = (scale * rng.standard_normal((n, d))).astype(np.float32)
    q = (scale * rng.standard_normal(d)).astype(np.float32)
    return W, q


def _bound(W, **params):
    sampler = registry.make_sampler("kernel", counts=np.ones(W.shape[0]), n_classes=W.shape[0], **params)
    sampler.bind(W)
    return sampler


def _enumerate(sampler, W, q):
    """The draw distribution computed here from its definition: the node sums are checked against sums of
    the feature map, and each class gets the product of the branch probabilities on its root-to-leaf path
    times its in-bucket share.  Returns the probabilities and the number of node masses clamped."""
    n, b, L = sampler.n_classes, sampler.bucket, sampler.n_leaves
    S = sampler.node_sums.astype(np.float64)
    size = sampler.node_sizes
    phi_c = sampler.features(W.astype(np.float64))
    # which classes each node covers: leaf L + j is bucket j, an inner node the union of its children
    covered = [None] * (2 * L)
    for v in range(2 * L - 1, 0, -1):
        if v >= L:
            covered[v] = np.arange((v - L) * b, min((v - L + 1) * b, n))
        else:
            covered[v] = np.r_[covered[2 * v], covered[2 * v + 1]]
        assert size[v] == covered[v].size
        np.testing.assert_allclose(S[v], phi_c[covered[v]].sum(axis=0), rtol=1e-4, atol=1e-4)
    assert covered[1].size == n and np.array_equal(np.sort(covered[1]), np.arange(n))
    phi_q = sampler.features(q.astype(np.float64))[0]
    raw = (S @ phi_q)[1:]
    if sampler.kernel == "rff":
        lo, hi = size[1:] * np.exp(-2.0 * sampler.nu), size[1:]
    else:
        lo, hi = size[1:], np.inf
    mass = np.r_[np.nan, np.clip(raw, lo, hi)]
    clamped = int(np.sum((raw < lo) | (raw > hi)))
    p = np.empty(n)
    for c in range(n):
        leaf = L + c // b
        prob, v = 1.0, leaf
        while v > 1:
            parent = v // 2
            prob *= mass[v] / (mass[2 * parent] + mass[2 * parent + 1])
            v = parent
        members = np.arange((leaf - L) * b, min((leaf - L + 1) * b, n))
        k = sampler.kernel_values(q, W[members])
        p[c] = prob * k[c - members[0]] / k.sum()
    return p, clamped


def _check_draws(ids, p):
    observed = np.bincount(ids, minlength=p.size)
    # pool the classes expected fewer than 5 times, so the chi-square approximation holds
    expected = p * ids.size
    small = expected < 5
    obs = np.r_[observed[~small], observed[small].sum()]
    exp = np.r_[expected[~small], expected[small].sum()]
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    _, p_value = stats.chisquare(obs, exp)
    assert p_value > 1e-4, "chi-square p=%.2g" % p_value
    assert 0.5 * np.abs(observed / ids.size - p).sum() < 0.03


# ----------------------------------------------------------------------------- feature maps

@pytest.mark.parametrize("nu", [1.0, 4.0])
def test_rff_features_estimate_the_exponential_kernel_with_error_shrinking_in_D(nu):
    rng = np.random.default_rng(0)
    n, d = 300, 16
    C = rng.standard_normal((n, d)).astype(np.float32)
    q = rng.standard_normal(d).astype(np.float32)
    exact = np.exp(nu * (_unit(C) @ _unit(q)))           # exp(nu <q, c>) on the unit vectors
    errors = []
    for D in (64, 512, 4096):
        sampler = _bound(C, kernel="rff", D=D, nu=nu, seed=5)
        assert sampler.n_features == 2 * D
        # the kernel the map estimates is the softmax kernel up to the constant exp(-nu)
        np.testing.assert_allclose(sampler.kernel_values(q, C), np.exp(-nu) * exact, rtol=1e-10)
        estimate = sampler.features(q.astype(np.float64)) @ sampler.features(C.astype(np.float64)).T
        # absolute error on the kernel's own scale, exp(nu (<q, c> - 1)) in (0, 1]
        errors.append(np.mean(np.abs(estimate[0] - np.exp(-nu) * exact)))
        # the C map draw uses is the same map
        np.testing.assert_allclose(sampler.query_features(q), sampler.features(q.astype(np.float64))[0],
                                   atol=2e-6)
        # it sees directions only
        np.testing.assert_allclose(sampler.features(3.0 * C[:5].astype(np.float64)),
                                   sampler.features(C[:5].astype(np.float64)), atol=1e-12)
    # Monte Carlo error ~ 1/sqrt(2 D): 8x smaller from 64 to 4096 projections
    assert errors[0] > errors[1] > errors[2]
    assert errors[2] < 0.015 and errors[0] / errors[2] > 4, errors
    if nu == 1.0:   # kernel values ~ exp(-1): a few percent relative error
        assert errors[2] / np.mean(np.exp(-nu) * exact) < 0.05


def test_quadratic_features_give_the_kernel_exactly():
    rng = np.random.default_rng(1)
    d, alpha = 9, 2.5
    C = rng.standard_normal((40, d))
    q = rng.standard_normal(d)
    sampler = _bound(C.astype(np.float32), kernel="quadratic", alpha=alpha)
    assert sampler.n_features == 1 + d * (d + 1) // 2
    estimate = sampler.features(C) @ sampler.features(q)[0]
    np.testing.assert_allclose(estimate, alpha * (C @ q) ** 2 + 1.0, rtol=1e-12)
    np.testing.assert_allclose(sampler.kernel_values(q, C), alpha * (C @ q) ** 2 + 1.0, rtol=1e-12)
    np.testing.assert_allclose(sampler.query_features(q.astype(np.float32)), sampler.features(q)[0],
                               rtol=1e-5, atol=1e-6)


# ----------------------------------------------------------------------------- the tree's distribution

@pytest.mark.parametrize("kernel, params", [("rff", {"D": 64, "nu": 4.0}), ("quadratic", {"alpha": 3.0})])
@pytest.mark.parametrize("bucket", [1, 5])
def test_draws_follow_the_tree_distribution(kernel, params, bucket):
    W, q = _problem()
    sampler = _bound(W, kernel=kernel, bucket=bucket, **params)
    assert not sampler.query_free and sampler.exact_logq and sampler.is_distribution
    p, clamped = _enumerate(sampler, W, q)
    if kernel == "rff" and bucket == 1:
        assert clamped > 0      # the case where the floor matters is covered
    if kernel == "quadratic":
        assert clamped == 0     # K >= 1: nothing to clamp
    assert np.all(p > 0) and p.sum() == pytest.approx(1.0, abs=1e-9)
    np.testing.assert_allclose(sampler.probabilities(q), p, rtol=1e-4)
    ids, logq, tlq = sampler.py_draw(200_000, 11, target=17, query=q)
    assert ids.min() >= 0 and ids.max() < W.shape[0]
    _check_draws(ids, p)
    # logq and target_logq are the log-probabilities of that same distribution
    np.testing.assert_allclose(logq, np.log(p[ids]), rtol=1e-5, atol=1e-5)
    assert tlq == pytest.approx(np.log(p[17]), rel=1e-5)
    targets = np.arange(W.shape[0])
    all_tlq = sampler.draw_many(3, np.tile(q, (targets.size, 1)), targets, seed=2).target_logq
    np.testing.assert_allclose(all_tlq, np.log(p), rtol=1e-5, atol=1e-5)


def test_quadratic_distribution_is_kernel_over_its_sum():
    W, q = _problem(n=150, seed=3)
    for bucket in (1, 4, 16):
        sampler = _bound(W, kernel="quadratic", alpha=10.0, bucket=bucket)
        K = 10.0 * (W.astype(np.float64) @ q.astype(np.float64)) ** 2 + 1.0
        np.testing.assert_allclose(sampler.probabilities(q), K / K.sum(), rtol=1e-5)
        ids, logq, _ = sampler.py_draw(2000, 4, query=q)
        np.testing.assert_allclose(logq, np.log(K[ids] / K.sum()), rtol=1e-5, atol=1e-5)


def test_rff_distribution_approaches_the_softmax_as_D_grows():
    rng = np.random.default_rng(2)
    n, d = 500, 16
    W = rng.standard_normal((n, d)).astype(np.float32)
    queries = rng.standard_normal((5, d)).astype(np.float32)
    for nu, bound in ((1.0, 0.012), (4.0, 0.12)):
        tv = {}
        for D in (64, 4096):
            sampler = _bound(W, kernel="rff", D=D, nu=nu, bucket=4, seed=3)
            tvs = []
            for q in queries:
                logits = nu * (_unit(W) @ _unit(q))
                softmax = np.exp(logits - logits.max())
                softmax /= softmax.sum()
                tvs.append(0.5 * np.abs(sampler.probabilities(q) - softmax).sum())
            tv[D] = max(tvs)
        assert tv[4096] < bound and tv[4096] < tv[64] / 3, (nu, tv)


def test_zero_output_table_gives_the_uniform_distribution():
    # word2vec starts with a zero output table: every class looks the same to both kernels
    W = np.zeros((37, 8), dtype=np.float32)
    q = np.random.default_rng(0).standard_normal(8).astype(np.float32)
    for kernel in ("rff", "quadratic"):
        sampler = _bound(W, kernel=kernel, bucket=3)
        np.testing.assert_allclose(sampler.probabilities(q), np.full(37, 1 / 37), rtol=1e-5)
        _, logq, tlq = sampler.py_draw(100, 1, target=0, query=np.zeros(8, np.float32))
        np.testing.assert_allclose(logq, -np.log(37), rtol=1e-5)


def test_non_finite_rows_and_queries_keep_probabilities_finite():
    W, q = _problem(n=60)
    W[7] = np.nan
    W[8, 0] = np.inf
    for kernel in ("rff", "quadratic"):
        sampler = _bound(W, kernel=kernel, bucket=4)
        for query in (q, np.full_like(q, np.nan)):
            ids, logq, tlq = sampler.py_draw(500, 3, target=7, query=query)
            assert np.all(np.isfinite(logq)) and np.isfinite(tlq)
            assert ids.min() >= 0 and ids.max() < 60


def test_unbound_sampler_draws_uniformly():
    sampler = KernelSampler(10)
    assert sampler.scratch_bytes() == 0
    ids, logq, tlq = sampler.py_draw(1000, 3, target=2, query=np.ones(4, np.float32))
    assert set(ids) == set(range(10))
    np.testing.assert_allclose(logq, -np.log(10))
    with pytest.raises(RuntimeError):
        sampler.probabilities(np.ones(4))


# ----------------------------------------------------------------------------- updates

@pytest.mark.parametrize("kernel", ["rff", "quadratic"])
def test_update_rows_and_refresh_match_a_full_rebuild(kernel):
    W, q = _problem(n=500, d=10, seed=4)
    sampler = _bound(W, kernel=kernel, bucket=3)
    assert sampler.last_refresh == ("full", 500)
    rng = np.random.default_rng(9)
    changed = np.array([0, 1, 250, 499, 333])
    W[changed] = rng.standard_normal((changed.size, W.shape[1])).astype(np.float32)
    sampler.update_rows(changed)
    fresh = _bound(W.copy(), kernel=kernel, bucket=3)
    np.testing.assert_allclose(sampler.node_sums, fresh.node_sums, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(sampler.probabilities(q), fresh.probabilities(q), rtol=1e-5)
    # refresh finds the rows that changed since (update_rows already took the first ones)
    sampler.refresh(0.5)
    assert sampler.last_refresh == ("incremental", 0)
    W[[42, 43]] *= -2.0
    sampler.refresh(0.5)
    assert sampler.last_refresh == ("incremental", 2)
    np.testing.assert_allclose(sampler.node_sums, _bound(W.copy(), kernel=kernel, bucket=3).node_sums,
                               rtol=1e-6, atol=1e-6)
    # many changes: a full rebuild
    W[:] = rng.standard_normal(W.shape).astype(np.float32)
    sampler.refresh(0.9)
    assert sampler.last_refresh == ("full", 500)
    np.testing.assert_allclose(sampler.node_sums, _bound(W.copy(), kernel=kernel, bucket=3).node_sums,
                               rtol=1e-6, atol=1e-6)
    with pytest.raises(IndexError):
        sampler.update_rows([500])


def test_memory_figures():
    assert KernelSampler.tree_bytes(10 ** 6, 512, 16) == 256_000_000
    assert KernelSampler.tree_bytes(10 ** 6, 512, 64) == 64_000_000
    W, _ = _problem(n=100, d=8)
    sampler = _bound(W, kernel="rff", D=32, bucket=10)
    assert sampler.node_sums.shape == (20, 64)
    assert sampler.memory_bytes >= KernelSampler.tree_bytes(100, 64, 10)


# ----------------------------------------------------------------------------- parameters

@pytest.mark.parametrize("params, name", [
    ({"D": 0}, "D"), ({"D": -3}, "D"), ({"D": 2.5}, "D"), ({"D": True}, "D"),
    ({"nu": 0.0}, "nu"), ({"nu": -1.0}, "nu"), ({"nu": float("inf")}, "nu"), ({"nu": 1000.0}, "nu"),
    ({"nu": "4"}, "nu"),
    ({"kernel": "gaussian"}, "kernel"), ({"kernel": None}, "kernel"),
    ({"kernel": "quadratic", "alpha": -1.0}, "alpha"), ({"kernel": "quadratic", "alpha": float("nan")}, "alpha"),
    ({"bucket": 0}, "bucket"), ({"seed": -1}, "seed"),
    ({"kernel": "quadratic", "D": 64}, "D"), ({"kernel": "quadratic", "nu": 2.0}, "nu"),
    ({"alpha": 5.0}, "alpha"),
])
def test_bad_values_raise_value_error_naming_the_parameter(params, name):
    with pytest.raises(ValueError, match=r"\b%s\b" % name):
        registry.make_sampler("kernel", counts=np.ones(20), n_classes=20, **params)


def test_unknown_parameters_raise_type_error_naming_them():
    with pytest.raises(TypeError, match="temperature"):
        registry.make_sampler("kernel", counts=np.ones(20), n_classes=20, temperature=2.0)
    with pytest.raises(TypeError, match="bucket_size.*dim|dim.*bucket_size"):
        registry.make_sampler("kernel", counts=np.ones(20), n_classes=20, dim=3, bucket_size=2)


def test_registered_with_its_parameters():
    sampler = registry.make_sampler("kernel", counts=np.ones(20), n_classes=20, kernel="rff", D=7, nu=2.0,
                                    bucket=3, seed=4)
    assert (sampler.kernel, sampler.D, sampler.nu, sampler.bucket, sampler.seed) == ("rff", 7, 2.0, 3, 4)
    sampler = registry.make_sampler("kernel", counts=np.ones(20), n_classes=20, kernel="quadratic", alpha=0.5)
    assert (sampler.kernel, sampler.alpha) == ("quadratic", 0.5)


# ----------------------------------------------------------------------------- training

@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("loss", ["sgns", "nce", "sampled_softmax", "relaxed_softmax"])
@pytest.mark.parametrize("kernel", ["rff", "quadratic"])
def test_word2vec_trains_with_the_kernel_sampler(planted, kernel, loss, workers):
    _, sentences = planted
    params = {"kernel": kernel, "D": 32} if kernel == "rff" else {"kernel": kernel, "alpha": 10.0}
    model = Word2Vec(sentences[:300], sg=1, vector_size=16, epochs=2, min_count=1, workers=workers, seed=3,
                     loss=loss, sampler="kernel", sampler_params=params, negative=5)
    assert np.all(np.isfinite(model.wv.vectors)) and np.all(np.isfinite(model.syn1neg))
    assert np.all(np.isfinite(model.last_report.epoch_loss))
    assert np.any(model.syn1neg)


def test_word2vec_kernel_sampler_without_shared_negatives_and_cbow(planted):
    _, sentences = planted
    for sg, shared in ((1, False), (0, False)):
        model = Word2Vec(sentences[:300], sg=sg, vector_size=16, epochs=2, min_count=1, workers=1, seed=3,
                         loss="sampled_softmax", sampler="kernel", shared_negatives=shared)
        assert np.all(np.isfinite(model.wv.vectors)) and np.all(np.isfinite(model.syn1neg))
        assert np.all(np.isfinite(model.last_report.epoch_loss))
