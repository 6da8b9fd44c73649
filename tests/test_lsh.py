"""The LSH negative sampler (``sampler='lsh'``): hashing, retrieval, padding, log-probabilities, rebuild
schedule, LSH Label vs LSH Embedding queries, parameter checks and training end to end."""
import threading

import numpy as np
import pytest
from scipy import stats

from embkit import Word2Vec
from embkit.core import registry
from embkit._kernels.lsh import N_PROBES, LSHSampler

FAMILIES = ["simhash", "dwta"]


def _unit_rows(rng, n, d):
    W = rng.standard_normal((n, d))
    return (W / np.linalg.norm(W, axis=1, keepdims=True)).astype(np.float32)


def _fold(keys, sampler):
    """Bucket of each uint64 key, as documented: the key itself, or Fibonacci hashing to bucket_bits."""
    if sampler.n_buckets == (2 ** sampler.K if sampler.family == "simhash" else sampler.bin_size ** sampler.K):
        return np.asarray(keys, dtype=np.int64)
    mul = 0x9E3779B97F4A7C15
    return np.array([((int(k) * mul) % 2 ** 64) >> (64 - sampler.bucket_bits) for k in keys], dtype=np.int64)


def _simhash_reference(sampler, X):
    """SimHash codes from numpy projections (float64); also returns the smallest |projection| per row."""
    P = X.astype(np.float64) @ sampler.projections.astype(np.float64).T          # m x (L K)
    bits = (P > 0).reshape(len(X), sampler.L, sampler.K).astype(np.uint64)
    keys = (bits << np.arange(sampler.K, dtype=np.uint64)).sum(axis=2)
    codes = np.stack([_fold(keys[:, t], sampler) for t in range(sampler.L)], axis=1)
    return codes, np.abs(P).min(axis=1)


def _dwta_reference(sampler, X):
    """DWTA codes in numpy: winner among the non-zero coordinates of each bin, densified by the probes."""
    bins, probes, bs = sampler.dwta_bins, sampler.dwta_probes, sampler.bin_size
    vals = X.astype(np.float64)[:, bins]                                          # m x (L K) x bin_size
    h = np.where(vals != 0, vals, -np.inf).argmax(axis=2)
    h[~(vals != 0).any(axis=2)] = -1
    dense = h.copy()
    for i in range(bins.shape[0]):
        for a in range(N_PROBES):
            todo = dense[:, i] < 0
            if not todo.any():
                break
            dense[todo, i] = h[todo, probes[i, a]]
    dense[dense < 0] = 0
    codes = np.empty((len(X), sampler.L), dtype=np.int64)
    for t in range(sampler.L):
        keys = np.zeros(len(X), dtype=np.uint64)
        for i in range(sampler.K):
            keys = keys * np.uint64(bs) + dense[:, t * sampler.K + i].astype(np.uint64)
        codes[:, t] = _fold(keys, sampler)
    return codes


def _bound(family, n=400, d=16, seed=0, **params):
    rng = np.random.default_rng(seed)
    W = _unit_rows(rng, n, d)
    sampler = LSHSampler(n, family=family, **params)
    sampler.bind(W)
    return sampler, W, rng


# ----------------------------------------------------------------------------- hashing

@pytest.mark.parametrize("K", [6, 12])          # 12 > bucket_bits = 10 for 400 classes: keys are folded
def test_simhash_bits_are_signs_of_projections(K):
    sampler, W, rng = _bound("simhash", K=K, L=5)
    X = np.vstack([W, _unit_rows(rng, 50, 16)])
    expected, margin = _simhash_reference(sampler, X)
    clear = margin > 1e-4           # float32 sums may differ from numpy's right at a zero projection
    assert clear.mean() > 0.9
    built = sampler.hash_rows(X)
    queried = np.array([sampler.py_hash(x) for x in X])
    np.testing.assert_array_equal(built[clear], expected[clear])
    np.testing.assert_array_equal(queried[clear], expected[clear])
    # the tables hold each class in the bucket of its code
    for t in range(sampler.L):
        for j in range(0, 400, 37):
            b = built[j, t]
            assert j in sampler.tables[t, sampler.offsets[t, b]:sampler.offsets[t, b + 1]]


def test_dwta_hash_matches_reference_and_is_deterministic():
    sampler, W, rng = _bound("dwta", K=3, L=6, bin_size=4)
    X = np.vstack([W, _unit_rows(rng, 40, 16)])
    X[-20:, :12] = 0.0                               # sparse rows: some bins are empty and get densified
    X[-1] = 0.0                                      # all bins empty: code 0 in every table
    expected = _dwta_reference(sampler, X)
    np.testing.assert_array_equal(sampler.hash_rows(X), expected)
    np.testing.assert_array_equal(np.array([sampler.py_hash(x) for x in X]), expected)
    assert not np.any(expected[-1])
    # the same seed draws the same hash functions; another seed others
    again = LSHSampler(400, family="dwta", K=3, L=6, bin_size=4)
    again.bind(W)
    np.testing.assert_array_equal(again.hash_rows(X), expected)
    np.testing.assert_array_equal(again.tables, sampler.tables)
    other = LSHSampler(400, family="dwta", K=3, L=6, bin_size=4, seed=2)
    other.bind(W)
    assert not np.array_equal(other.hash_rows(X), expected)
    # each bin holds distinct coordinates
    bins = sampler.dwta_bins
    assert all(len(set(b)) == sampler.bin_size for b in bins)


@pytest.mark.parametrize("family", FAMILIES)
def test_identical_and_scaled_vectors_collide(family):
    sampler, W, rng = _bound(family)
    x = _unit_rows(rng, 1, 16)[0]
    codes = sampler.hash_rows(np.vstack([x, x, 3.0 * x, -x]))
    np.testing.assert_array_equal(codes[0], codes[1])
    np.testing.assert_array_equal(codes[0], codes[2])      # both families depend on direction only
    assert np.any(codes[0] != codes[3])


# ----------------------------------------------------------------------------- retrieval

@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("query", ["embedding", "label"])
def test_draws_hit_planted_near_duplicates(family, query):
    n, d, n_near = 5000, 32, 20
    rng = np.random.default_rng(3)
    W = _unit_rows(rng, n, d)
    q = _unit_rows(rng, 1, d)[0]
    near = rng.choice(n, n_near, replace=False)
    W[near] = q + 0.05 * rng.standard_normal((n_near, d)).astype(np.float32)
    sampler = LSHSampler(n, family=family, query=query)
    sampler.bind(W)
    target = int(near[0]) if query == "label" else 0
    ids, _, _ = sampler.py_draw(20_000, 5, target=target, query=q)
    assert target not in ids
    hit = np.isin(ids, near).mean()
    uniform = (n_near - (query == "label")) / (n - 1)
    assert hit > 25 * uniform, "near-duplicate rate %.4f vs uniform %.4f" % (hit, uniform)


# ----------------------------------------------------------------------------- padding

@pytest.mark.parametrize("family", FAMILIES)
def test_empty_buckets_are_padded_uniformly_without_the_target(family):
    n, d = 50, 16
    rng = np.random.default_rng(4)
    v = np.abs(rng.standard_normal(d)).astype(np.float32) + 0.1
    W = np.tile(v, (n, 1))                 # every class in one bucket per table
    sampler = LSHSampler(n, family=family, query="embedding", L=4)
    sampler.bind(W)
    # the opposite direction: another bucket in every table (DWTA: the winners move to other coordinates)
    q = -v
    assert np.all(sampler.py_hash(q) != sampler.py_hash(v))
    target = 7
    ids, logq, _ = sampler.py_draw(100_000, 11, target=target, query=q)
    assert ids.min() >= 0 and ids.max() < n and target not in ids
    counts = np.bincount(ids, minlength=n)
    assert stats.chisquare(np.delete(counts, target)).pvalue > 1e-4
    np.testing.assert_allclose(logq, np.log(1.0 / (n - 1)))
    # LSH Label with a target alone in its bucket: padded too, and never the target itself
    W[target] = -v
    label = LSHSampler(n, family=family, query="label", L=4)
    label.bind(W)
    ids, logq, _ = label.py_draw(5000, 12, target=target, query=v)
    assert target not in ids
    np.testing.assert_allclose(logq, np.log(1.0 / (n - 1)))


def test_tiny_class_sets():
    # two classes: the other one every time; one class: the target itself (documented: nothing else exists)
    for n in (2, 1):
        W = np.ones((n, 4), dtype=np.float32)
        sampler = LSHSampler(n, L=3)
        sampler.bind(W)
        ids, logq, tlq = sampler.py_draw(100, 1, target=0, query=W[0])
        assert np.all(ids == (1 if n == 2 else 0))
        np.testing.assert_allclose(logq, 0.0)
        assert np.isfinite(tlq)


def test_unbound_sampler_draws_uniformly():
    sampler = LSHSampler(30)
    ids, logq, _ = sampler.py_draw(3000, 1, target=4, query=np.zeros(8, np.float32))
    assert 4 not in ids and ids.min() >= 0 and ids.max() < 30
    np.testing.assert_allclose(logq, np.log(1.0 / 29))


# ----------------------------------------------------------------------------- log-probabilities

def _documented_q(sampler, x, target):
    """``Q(j) = (1/L) sum_t [j in B_t] / c_t + e / (L (n - 1))`` and the target's inclusion probability."""
    n, L = sampler.n_classes, sampler.L
    codes = sampler.py_hash(x)
    Q = np.zeros(n)
    empty_eligible, empty, incl = 0, 0, 0.0
    for t in range(L):
        bucket = sampler.tables[t, sampler.offsets[t, codes[t]]:sampler.offsets[t, codes[t] + 1]]
        others = bucket[bucket != target]
        if others.size:
            Q[others] += 1.0 / (L * others.size)
        else:
            empty_eligible += 1
        if bucket.size == 0:
            empty += 1
        if target in bucket:
            incl += 1.0 / (L * bucket.size)
    Q += empty_eligible / (L * (n - 1))
    Q[target] = 0.0
    incl = max(incl + empty / (L * n), 1.0 / (L * n))
    return Q, incl


@pytest.mark.parametrize("family, query", [("simhash", "label"), ("simhash", "embedding"),
                                           ("dwta", "label"), ("dwta", "embedding")])
def test_logq_is_the_documented_exact_probability(family, query):
    n, d = 40, 8
    rng = np.random.default_rng(5)
    W = _unit_rows(rng, n, d)
    sampler = LSHSampler(n, family=family, query=query, K=2, L=3, bin_size=2)
    sampler.bind(W)
    target = 9
    q = _unit_rows(rng, 1, d)[0]
    x = W[target] if query == "label" else q
    Q, incl = _documented_q(sampler, x, target)
    assert Q.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(sampler.probabilities(q, target), Q, rtol=1e-12, atol=1e-15)
    ids, logq, tlq = sampler.py_draw(200_000, 21, target=target, query=q)
    np.testing.assert_allclose(logq, np.log(Q[ids]), rtol=1e-12)
    assert tlq == pytest.approx(np.log(incl), rel=1e-12)
    # and the draws follow it
    counts = np.bincount(ids, minlength=n)
    assert counts[target] == 0
    support = Q > 0
    assert np.all(counts[~support] == 0)
    assert stats.chisquare(counts[support], Q[support] * ids.size).pvalue > 1e-4


def test_simhash_probabilities_follow_the_collision_probability():
    # averaged over random hash functions, a class at a smaller angle to the query is drawn more often,
    # as the paper's p ~ 1 - (1 - (1 - theta/pi)^K)^L says
    n, d = 200, 16
    rng = np.random.default_rng(6)
    W = _unit_rows(rng, n, d)
    q = _unit_rows(rng, 1, d)[0]
    W[:3] = [q + s * rng.standard_normal(d) for s in (0.1, 0.3, 0.7)]
    mean = np.zeros(n)
    for seed in range(60):
        sampler = LSHSampler(n, query="embedding", K=6, L=4, seed=seed)
        sampler.bind(W)
        mean += sampler.probabilities(q) / 60
    assert mean[0] > mean[1] > mean[2] > np.median(mean[3:])


# ----------------------------------------------------------------------------- rebuild schedule

@pytest.mark.parametrize("family", FAMILIES)
def test_rebuild_schedule_tracks_changed_vectors(family):
    sampler, W, rng = _bound(family, rebuild_initial=0.1, rebuild_decay=2.0)
    assert sampler.rebuilds == 1 and sampler.next_rebuild == pytest.approx(0.1)
    assert not sampler.refresh(0.0)                       # the trainer's first chunk: already built
    first = sampler.tables.copy()
    W[:] = _unit_rows(rng, *W.shape)                       # training moves the vectors in place
    # points 0.1, 0.1 + 0.2, 0.3 + 0.4: rebuilt exactly there
    for progress, rebuilt in [(0.05, False), (0.1, True), (0.2, False), (0.29, False), (0.3, True),
                              (0.69, False), (0.7, True), (0.99, False)]:
        before = sampler.rebuilds
        assert sampler.refresh(progress) == rebuilt, progress
        assert sampler.rebuilds == before + rebuilt
        if progress == 0.05:
            np.testing.assert_array_equal(sampler.tables, first)       # stale until the point
        if progress == 0.1:
            assert not np.array_equal(sampler.tables, first)
            fresh = LSHSampler(W.shape[0], family=family)
            fresh.bind(W)
            np.testing.assert_array_equal(sampler.tables, fresh.tables)
    assert sampler.next_rebuild == pytest.approx(1.5)
    # several points passed at once: one rebuild, the schedule moves past them
    s2, _, _ = _bound(family, rebuild_initial=0.01, rebuild_decay=1.0)
    assert s2.refresh(0.555) and s2.rebuilds == 2 and s2.next_rebuild == pytest.approx(0.56)
    # progress going back (a new run): rebuilt and the schedule restarts
    assert s2.refresh(0.0) and s2.next_rebuild == pytest.approx(0.01)


# ----------------------------------------------------------------------------- label vs embedding

@pytest.mark.parametrize("family", FAMILIES)
def test_label_queries_hash_the_target_vector_and_embedding_the_query(family):
    n, d = 300, 16
    rng = np.random.default_rng(8)
    W = _unit_rows(rng, n, d)
    q1, q2 = _unit_rows(rng, 2, d)
    label = LSHSampler(n, family=family, query="label")
    embed = LSHSampler(n, family=family, query="embedding")
    label.bind(W)
    embed.bind(W)
    target = 17
    a, la, ta = label.py_draw(500, 3, target=target, query=q1)
    b, lb, tb = label.py_draw(500, 3, target=target, query=q2)
    assert np.array_equal(a, b) and np.array_equal(la, lb) and ta == tb     # the query is not used
    c, lc, tc = embed.py_draw(500, 3, target=target, query=W[target])
    assert np.array_equal(a, c) and np.array_equal(la, lc) and ta == tc     # = embedding query w_target
    d1, _, _ = embed.py_draw(500, 3, target=target, query=q1)
    d2, _, _ = embed.py_draw(500, 3, target=target, query=q2)
    assert not np.array_equal(d1, d2)
    # LSH Label always finds the target in its own bucket when the tables are fresh
    codes = label.py_hash(W[target])
    for t in range(label.L):
        assert target in label.tables[t, label.offsets[t, codes[t]]:label.offsets[t, codes[t] + 1]]
    # without a target, LSH Label falls back to the query vector
    e, _, _ = label.py_draw(500, 3, target=-1, query=q1)
    f, _, _ = embed.py_draw(500, 3, target=-1, query=q1)
    assert np.array_equal(e, f)


def test_concurrent_draws_match_sequential_ones():
    sampler, W, rng = _bound("simhash", n=2000, d=32)
    Q = _unit_rows(rng, 4000, 32)
    targets = rng.integers(0, 2000, 4000)
    expected = [sampler.draw_many(10, Q, targets, seed=s)[:2] for s in range(4)]
    results = [None] * 4

    def work(s):
        results[s] = sampler.draw_many(10, Q, targets, seed=s)[:2]

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for (ids, lq), (eids, elq) in zip(results, expected):
        assert np.array_equal(ids, eids) and np.array_equal(lq, elq)
    assert not np.any(expected[0][0] == targets[:, None])


# ----------------------------------------------------------------------------- parameters

def test_registry_builds_lsh_with_defaults_and_params():
    s = registry.make_sampler("lsh", counts=np.ones(100), n_classes=100)
    assert (s.family, s.K, s.L, s.query, s.bin_size) == ("simhash", 8, 16, "label", 8)
    assert not s.query_free and s.exact_logq and s.is_distribution
    s = registry.make_sampler("lsh", counts=None, n_classes=100, family="dwta", L=4, query="embedding",
                              bin_size=4, rebuild_initial=0.2, rebuild_decay=1.0, seed=9)
    assert (s.family, s.K, s.L, s.query, s.bin_size, s.seed) == ("dwta", 5, 4, "embedding", 4, 9)
    assert (s.rebuild_initial, s.rebuild_decay) == (0.2, 1.0)


@pytest.mark.parametrize("params, name", [
    ({"K": 0}, "K"), ({"K": 65}, "K"), ({"K": 2.5}, "K"), ({"L": 0}, "L"), ({"L": True}, "L"),
    ({"family": "minhash"}, "family"), ({"query": "context"}, "query"), ({"bin_size": 1}, "bin_size"),
    ({"rebuild_initial": 0.0}, "rebuild_initial"), ({"rebuild_initial": 1.5}, "rebuild_initial"),
    ({"rebuild_decay": 0.5}, "rebuild_decay"), ({"seed": -1}, "seed"),
])
def test_bad_parameters_raise_value_error_naming_them(params, name):
    with pytest.raises(ValueError, match=r"^%s must be" % name):
        registry.make_sampler("lsh", counts=None, n_classes=10, **params)


def test_unknown_parameters_and_oversized_bins():
    with pytest.raises(TypeError, match="lsh got unknown parameters: bits, tables"):
        registry.make_sampler("lsh", counts=None, n_classes=10, bits=3, tables=2)
    sampler = LSHSampler(10, family="dwta", bin_size=16)
    with pytest.raises(ValueError, match="bin_size must be at most the vector dimension"):
        sampler.bind(np.ones((10, 8), dtype=np.float32))
    sampler = LSHSampler(10)
    sampler.bind(np.ones((10, 8), dtype=np.float32))
    with pytest.raises(ValueError, match="vectors have 5 dimensions, the hash functions 8"):
        sampler.py_hash(np.ones(5))
    with pytest.raises(ValueError, match="query has 5 dimensions"):
        sampler.py_draw(3, 1, target=-1, query=np.ones(5))
    # bound again to a wider table: new hash functions, tables rebuilt
    sampler.bind(np.ones((10, 12), dtype=np.float32))
    assert sampler.projections.shape == (sampler.K * sampler.L, 12) and sampler.rebuilds == 2


# ----------------------------------------------------------------------------- training

@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("loss", ["sgns", "nce", "sampled_softmax", "relaxed_softmax"])
def test_word2vec_trains_with_lsh(loss, workers):
    rng = np.random.default_rng(10)
    words = ["w%d" % i for i in range(60)]
    sentences = [[words[i] for i in rng.integers(0, 60, 12)] for _ in range(300)]
    for params in ({}, {"family": "dwta", "query": "embedding", "rebuild_initial": 0.2}):
        model = Word2Vec(sentences, sg=1, vector_size=16, epochs=2, min_count=1, workers=workers, seed=1,
                         loss=loss, sampler="lsh", sampler_params=params)
        assert np.all(np.isfinite(model.wv.vectors)) and np.all(np.isfinite(model.syn1neg))
        assert np.any(model.syn1neg)
        assert all(np.isfinite(model.last_report.epoch_loss))
