"""The synthetic XC generator (embkit.xc.synthetic): shapes, determinism, label laws, learnability."""
import numpy as np
import pytest
import scipy.sparse as sp

from embkit.evaluation.xc import xc_metrics
from embkit.xc.synthetic import label_probabilities, label_signatures, make_xc

from _eval import run_xc_peers

SMALL = dict(n_labels=200, n_features=2000, n_train=4000, n_test=800)


@pytest.fixture(scope="module")
def small_sets():
    return {law: make_xc(label_law=law, seed=3, **SMALL) for law in ("zipf", "uniform")}


def test_shapes_and_types(small_sets):
    train, test = small_sets["zipf"]
    assert train.X.shape == (4000, 2000) and train.Y.shape == (4000, 200)
    assert test.X.shape == (800, 2000) and test.Y.shape == (800, 200)
    for data in (train, test):
        assert sp.isspmatrix_csr(data.X) and data.X.dtype == np.float32 and data.X.has_sorted_indices
        assert set(np.unique(data.X.data)) == {1.0} and set(np.unique(data.Y.data)) == {1.0}
        assert data.n_unlabelled == 0
    stats = train.stats()
    assert 2.0 < stats["avg_labels_per_point"] <= 3.0
    assert 30 < stats["avg_features_per_point"] < 60
    assert "label_law='zipf'" in train.source and train.source.endswith("train")


def test_deterministic_for_a_seed():
    a_train, a_test = make_xc(seed=7, **SMALL)
    b_train, b_test = make_xc(seed=7, **SMALL)
    c_train, _ = make_xc(seed=8, **SMALL)
    for a, b in ((a_train, b_train), (a_test, b_test)):
        assert (a.X != b.X).nnz == 0 and (a.Y != b.Y).nnz == 0
    assert (a_train.Y != c_train.Y).nnz > 0
    _, other_test = make_xc(seed=7, **dict(SMALL, n_train=100))
    assert (other_test.X != a_test.X).nnz == 0  # the test set does not depend on n_train


def test_label_laws(small_sets):
    zipf_freq = np.sort(small_sets["zipf"][0].label_frequencies())[::-1].astype(float)
    ranks = np.arange(1, 41)
    slope = np.polyfit(np.log(ranks), np.log(zipf_freq[:40]), 1)[0]
    assert -1.3 < slope < -0.7  # exponent 1, flattened a little by merging repeated labels
    uniform_freq = small_sets["uniform"][0].label_frequencies()
    assert uniform_freq.min() > 0 and uniform_freq.max() < 2 * uniform_freq.mean()
    assert zipf_freq.max() > 10 * zipf_freq.mean()
    p = label_probabilities(1000, "zipf", 1.5, seed=0)
    assert p.sum() == pytest.approx(1.0) and np.sort(p)[::-1][0] / np.sort(p)[::-1][9] == pytest.approx(10 ** 1.5)
    assert np.argmax(p) != 0 or np.argmax(label_probabilities(1000, "zipf", 1.5, seed=1)) != 0  # shuffled ids


def test_signatures_are_shared_and_planted():
    sig = label_signatures(1000, 50000, signature_size=16, feature_sharing=16.0, seed=0)
    assert sig.shape == (1000, 16) and sig.max() < 50000
    owners = np.bincount(sig.ravel())
    assert 12 < owners[owners > 0].mean() < 20  # each signature feature belongs to ~16 labels
    train, _ = make_xc(n_labels=1000, n_features=50000, n_train=3000, n_test=0, seed=0)
    row = int(np.argmax(np.diff(train.Y.indptr) > 0))
    labels = train.Y.indices[train.Y.indptr[row]:train.Y.indptr[row + 1]]
    features = set(train.X.indices[train.X.indptr[row]:train.X.indptr[row + 1]].tolist())
    assert features & set(sig[labels].ravel().tolist())


def _top(scores, k=5):
    scores = scores.toarray() if sp.issparse(scores) else scores
    return np.argsort(-scores, axis=1, kind="stable")[:, :k]


def test_learnable_but_not_from_one_feature(small_sets):
    for law, (train, test) in small_sets.items():
        counts = (train.X.T @ train.Y).toarray()  # feature x label co-occurrences
        freq = train.label_frequencies()
        # multinomial naive Bayes (add-one smoothing) on the co-occurrence counts
        log_p = np.log(counts + 1.0) - np.log(counts.sum(axis=0) + counts.shape[0])
        bayes = xc_metrics(test.Y, _top(test.X @ log_p)).precision[1]
        popular = xc_metrics(test.Y, np.tile(np.argsort(-freq)[:5], (test.n_points, 1))).precision[1]
        # one feature per point, the one whose co-occurrences point most to a single label
        df = np.asarray(train.X.sum(axis=0)).ravel()
        share = counts.max(axis=1) / np.maximum(df, 1)
        X = test.X
        best = np.array([X.indices[a:b][np.argmax(share[X.indices[a:b]])] for a, b in zip(X.indptr[:-1], X.indptr[1:])])
        single = xc_metrics(test.Y, _top(counts[best])).precision[1]
        chance = test.Y.nnz / test.n_points / test.n_labels
        assert 10 * chance < bayes < 0.97, (law, bayes)
        assert bayes > max(popular, single) + 0.15, (law, bayes, popular, single)
        assert np.mean(share[df >= 10] > 0.9) < 0.01  # no feature names a label


@pytest.mark.parametrize("values", ["count", "tfidf"])
def test_value_kinds(values):
    train, test = make_xc(values=values, seed=1, **dict(SMALL, n_train=500, n_test=100))
    if values == "count":
        assert train.X.data.min() >= 1 and train.X.data.max() > 1
        assert np.all(train.X.data == np.round(train.X.data))
    else:
        norms = np.sqrt(np.asarray(test.X.multiply(test.X).sum(axis=1)).ravel())
        assert np.allclose(norms, 1.0, atol=1e-5)


@pytest.mark.parametrize("kwargs, name", [
    (dict(n_labels=0), "n_labels"), (dict(label_law="pareto"), "label_law"), (dict(values="real"), "values"),
    (dict(labels_per_point=0.5), "labels_per_point"), (dict(feature_sharing=0), "feature_sharing"),
    (dict(signature_draws=0), "signature_draws"), (dict(n_test=-1), "n_test"),
])
def test_bad_parameters(kwargs, name):
    with pytest.raises(ValueError, match="^%s must be" % name):
        make_xc(**dict(SMALL, **kwargs))


def test_empty_sets():
    train, test = make_xc(n_labels=10, n_features=20, n_train=0, n_test=3)
    assert train.X.shape == (0, 20) and test.Y.shape == (3, 10)


def test_an_embedding_model_learns_it(tmp_path):
    """fastText (an average of feature embeddings scored against label vectors) learns the planted labels."""
    pytest.importorskip("fasttext")
    train, test = make_xc(label_law="uniform", seed=5, **dict(SMALL, n_train=3000, n_test=300))
    rows = run_xc_peers(train, test, tmp_path, "--loss", "ova", "--epoch", "30", "--lr", "0.5", "--dim", "32",
                        "--threads", "1")
    chance = test.Y.nnz / test.n_points / test.n_labels
    assert 10 * chance < float(rows["ova"]["P@1"]) / 100 < 0.99
