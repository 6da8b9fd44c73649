"""The ``rows`` driver and ``ExtremeClassifier``: exact step, planted labels, every pairing, API, bad input."""
import numpy as np
import pytest
import scipy.sparse as sp

from embkit import ExtremeClassifier
from embkit.core import registry
from embkit._kernels.rows import RowTrainer, top_k_rows

from _cases import pairings, refused

N_LABELS, N_FEATURES = 30, 120


def _planted(n, seed):
    """Each label owns 4 features; an example has 1-2 labels and 3 features of each plus 3 random ones."""
    rng = np.random.default_rng(seed)
    rows, cols, lrows, lcols = [], [], [], []
    for r in range(n):
        labels = rng.choice(N_LABELS, size=rng.integers(1, 3), replace=False)
        for lab in labels:
            lrows.append(r)
            lcols.append(lab)
            own = lab * 4 + rng.choice(4, 3, replace=False)
            rows.extend([r] * 3)
            cols.extend(own)
        noise = rng.integers(0, N_FEATURES, 3)
        rows.extend([r] * 3)
        cols.extend(noise)
    X = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(n, N_FEATURES))
    X.data[:] = 1.0                       # duplicates summed above: binary features
    Y = sp.csr_matrix((np.ones(len(lrows)), (lrows, lcols)), shape=(n, N_LABELS))
    return X, Y


@pytest.fixture(scope="module")
def planted():
    return _planted(3000, 0), _planted(500, 1)


def _p1(model, X, Y):
    return model.evaluate(X, Y).precision[1]


# ----------------------------------------------------------------------------- the driver's step

def _softmax_step(W_out, H, label, lr):
    s = W_out @ H
    p = np.exp(s - s.max())
    p /= p.sum()
    g = p.copy()
    g[label] -= 1.0
    return W_out - lr * np.outer(g, H), -lr * (W_out.T @ g), -np.log(p[label])


@pytest.mark.parametrize("normalize, tau", [(False, 1.0), (True, 1.0), (True, 0.25)])
def test_one_example_full_softmax_step_matches_numpy(normalize, tau):
    # one example with two features (weights 2 and 0.5) and two labels: both label steps and the gradient
    # taken back through the normalisation and temperature, computed here in float64
    d, lr = 5, 0.2
    rng = np.random.default_rng(1)
    W_in = rng.standard_normal((6, d)).astype(np.float32)
    W_out = rng.standard_normal((4, d)).astype(np.float32)
    feats, vals, labels = np.array([1, 4]), np.array([2.0, 0.5]), [3, 0]
    h = (vals[:, None] * W_in[feats].astype(np.float64)).sum(0)
    norm = np.linalg.norm(h) if normalize else 1.0
    H = h / norm / tau
    O = W_out.astype(np.float64)
    g = np.zeros(d)
    want_loss = 0.0
    for lab in labels:
        O, dH, lval = _softmax_step(O, H, lab, lr)
        g += dH
        want_loss += lval
    if normalize:
        u = h / norm
        g = (g - u * (u @ g)) / (norm * tau)
    else:
        g = g / tau
    want_in = W_in.astype(np.float64).copy()
    for f, v in zip(feats, vals):
        want_in[f] += v * g
    trainer = RowTrainer(W_in, W_out, np.array([0, 2], np.int64), feats.astype(np.int32),
                         vals.astype(np.float32), np.array([0, 2], np.int64), np.array(labels, np.int32),
                         registry.make_loss("full_softmax"), None, 0, normalize, tau, False, False, lr, lr, 1.0, 0)
    total, steps, examples = trainer.train_chunk(np.array([0], np.int32), 0.0, 0, 1)
    assert (steps, examples) == (2, 1)
    assert total == pytest.approx(want_loss, rel=1e-4)
    np.testing.assert_allclose(W_out, O, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(W_in, want_in, rtol=1e-4, atol=1e-5)


def test_normalize_classes_keeps_unit_rows(planted):
    (X, Y), _ = planted
    model = ExtremeClassifier(vector_size=16, loss="sampled_softmax", sampler="uniform", negative=5, tau=0.2,
                              normalize_classes=True, epochs=1, progress=False).fit(X, Y)
    np.testing.assert_allclose(np.linalg.norm(model.label_vectors, axis=1), 1.0, rtol=1e-4)


def test_top_k_rows_matches_a_stable_sort():
    s = np.random.default_rng(0).integers(0, 50, (40, 300)).astype(np.float32)   # many ties
    ids, vals = top_k_rows(s, 7, 2)
    want = np.argsort(-s, axis=1, kind="stable")[:, :7]
    assert np.array_equal(ids, want)
    assert np.array_equal(vals, np.take_along_axis(s, want, 1))
    ids, _ = top_k_rows(np.ascontiguousarray(s[:, :3]), 5, 1)                    # fewer columns than k: padded with -1
    assert np.all(ids[:, 3:] == -1)


# ----------------------------------------------------------------------------- training

def test_planted_labels_are_predicted(planted):
    (X, Y), (Xt, Yt) = planted
    model = ExtremeClassifier(vector_size=32, loss="full_softmax", epochs=5, progress=False).fit(X, Y)
    assert _p1(model, Xt, Yt) >= 0.9
    res = model.evaluate(Xt, Yt)
    assert set(res.precision) == {1, 3, 5} and res.psp is not None


def test_untrained_model_is_at_chance(planted):
    (X, Y), (Xt, Yt) = planted
    model = ExtremeClassifier(vector_size=32, loss="full_softmax", epochs=1, alpha=1e-9, min_alpha=0, heads=(),
                              progress=False).fit(X, Y)
    model.label_vectors[...] = np.random.default_rng(0).standard_normal(model.label_vectors.shape)
    assert _p1(model, Xt, Yt) < 0.25


@pytest.mark.parametrize("loss, sampler", pairings())
def test_every_loss_and_sampler_pairing_trains(planted, loss, sampler):
    (X, Y), (Xt, Yt) = planted
    try:
        model = ExtremeClassifier(vector_size=16, loss=loss, sampler=sampler, negative=5, epochs=4, workers=2,
                                  progress=False).fit(X, Y)
    except ValueError as exc:
        assert refused(exc)
        pytest.skip(str(exc))
    assert np.all(np.isfinite(model.feature_vectors)) and np.all(np.isfinite(model.label_vectors))
    assert np.isfinite(model.last_report.epoch_loss[-1])
    if loss == "hs":
        with pytest.raises(NotImplementedError, match="hs"):
            model.predict(Xt)
        return
    if sampler == "topk":
        return                                   # hard negatives only: soundness, no quality claim
    # chance is about 0.05 and untrained tables score < 0.25; most pairings reach 0.9, but a few (nce with
    # model-dependent negatives at cosine / 0.1 scores) vary between Hogwild runs, hence the margin
    assert _p1(model, Xt, Yt) >= 0.5


def test_seeded_single_thread_runs_are_identical(planted):
    (X, Y), _ = planted
    kw = dict(vector_size=8, epochs=2, workers=1, seed=3, negative=5, progress=False)
    a = ExtremeClassifier(**kw).fit(X, Y)
    b = ExtremeClassifier(**kw).fit(X, Y)
    assert np.array_equal(a.feature_vectors, b.feature_vectors)
    assert np.array_equal(a.label_vectors, b.label_vectors)


def test_one_worker_trains_the_same_with_or_without_hot_label_rows(planted):
    (X, Y), _ = planted
    kw = dict(solver="sampled", vector_size=8, epochs=2, workers=1, seed=3, negative=5, heads=(), progress=False)
    a = ExtremeClassifier(**kw).fit(X, Y)                  # hot_rows=None: one worker has nothing to share
    b = ExtremeClassifier(hot_rows=0, **kw).fit(X, Y)
    assert np.array_equal(a.feature_vectors, b.feature_vectors)
    assert np.array_equal(a.label_vectors, b.label_vectors)


def test_hot_label_rows_are_the_most_frequent_labels_that_fit(planted, monkeypatch):
    from embkit.core import hot_rows
    (X, Y), _ = planted
    model = ExtremeClassifier(solver="sampled", vector_size=8, epochs=1, workers=2, heads=(), progress=False).fit(X, Y)
    by_count = np.argsort(-model.label_counts, kind="stable")

    def chosen(setting, workers=2):
        ids = hot_rows.class_hot_rows(setting, model.label_counts, model.W_out, workers)
        return None if ids is None else ids.tolist()
    assert chosen(None) == by_count.tolist()                    # every label fits 2 MiB
    monkeypatch.setattr(hot_rows, "HOT_ROW_BYTES", 5 * 2 * 8 * 4)  # five rows of 8 floats, and their base
    assert chosen(None) == by_count[:5].tolist()
    assert chosen(3) == by_count[:3].tolist()
    assert chosen(0) is None and chosen(None, workers=1) is None


@pytest.mark.parametrize("sampler, kept", [("uniform", 3), ("lsh", 3), ("topk", 0)])
def test_threads_keep_no_row_copies_a_sampler_scoring_the_live_table_would_not_see(sampler, kept):
    rng = np.random.default_rng(0)
    W_in = rng.standard_normal((6, 4)).astype(np.float32)
    W_out = rng.standard_normal((5, 4)).astype(np.float32)
    loss = "relaxed_softmax" if sampler == "topk" else "sampled_softmax"
    built, made = registry.build_objective(loss, sampler, np.ones(5, np.int64), 5, 2, W_out=W_out)
    trainer = RowTrainer(W_in, W_out, np.array([0, 1], np.int64), np.array([2], np.int32), np.ones(1, np.float32),
                         np.array([0, 1], np.int64), np.array([3], np.int32), built, made, 2, True, 0.5, False,
                         False, 0.1, 0.1, 1.0, 0)
    trainer.hot_rows(np.array([0, 3, 4], np.int32), 1024, 0.5)
    assert trainer.hot_row_count == kept           # top-k scores the live table at every draw: no copies


@pytest.mark.parametrize("hot_rows", [None, 0])
def test_threads_learn_the_planted_labels_with_or_without_hot_label_rows(planted, hot_rows):
    (X, Y), (Xt, Yt) = planted
    model = ExtremeClassifier(solver="sampled", vector_size=16, negative=5, epochs=4, workers=2, heads=(),
                              hot_rows=hot_rows, progress=False).fit(X, Y)
    assert _p1(model, Xt, Yt) >= 0.9


def test_hot_rows_belong_to_the_sampled_solver():
    with pytest.raises(ValueError, match="hot_rows must be an integer"):
        ExtremeClassifier(solver="sampled", hot_rows=-1).check_params()
    with pytest.raises(ValueError, match="hot_rows applies to solver='sampled'"):
        ExtremeClassifier(solver="one_vs_all", hot_rows=8).check_params()


def test_one_label_mode_takes_one_step_per_example(planted):
    (X, Y), (Xt, Yt) = planted
    kw = dict(vector_size=16, epochs=3, negative=5, loss="sampled_softmax", heads=(), progress=False)
    model = ExtremeClassifier(one_label=True, **kw).fit(X, Y)
    assert model.last_report.examples == 3 * X.shape[0]
    every = ExtremeClassifier(**kw).fit(X, Y)
    assert every.last_report.examples == 3 * Y.nnz
    assert _p1(model, Xt, Yt) >= 0.7


def test_rows_without_labels_are_skipped_and_counted(planted):
    (X, Y), _ = planted
    Y = Y.tolil()
    Y[:7] = 0
    model = ExtremeClassifier(vector_size=8, epochs=1, negative=5, heads=(), progress=False).fit(X, Y.tocsr())
    assert model.n_skipped == 7
    assert model.last_report.words == X.shape[0] - 7
    blended = ExtremeClassifier(vector_size=8, epochs=1, negative=5, progress=False).fit(X, Y.tocsr())
    assert blended.n_skipped == 7
    assert blended.last_report.words == X.shape[0] - 7 - round(blended.blend_validation * (X.shape[0] - 7))


def test_predict_matches_brute_force(planted):
    (X, Y), (Xt, _) = planted
    model = ExtremeClassifier(vector_size=16, epochs=2, negative=5, loss="sampled_softmax", progress=False,
                              tau=0.5, heads=()).fit(X, Y)
    ids, scores = model.predict(Xt, k=4, workers=2)
    H = Xt @ model.feature_vectors
    H = H / np.linalg.norm(H, axis=1, keepdims=True) / 0.5
    S = H @ model.label_vectors.T
    np.testing.assert_allclose(scores, -np.sort(-S, axis=1)[:, :4], rtol=1e-4, atol=1e-5)
    assert np.mean(ids[:, 0] == S.argmax(1)) > 0.99


def test_save_load_round_trip(planted, tmp_path):
    (X, Y), (Xt, Yt) = planted
    model = ExtremeClassifier(vector_size=8, epochs=1, negative=5, progress=False).fit(X, Y)
    model.save(tmp_path / "xc.embkit")
    again = ExtremeClassifier.load(tmp_path / "xc.embkit")
    assert np.array_equal(again.predict(Xt)[0], model.predict(Xt)[0])
    assert again.evaluate(Xt, Yt).psp == model.evaluate(Xt, Yt).psp


# ----------------------------------------------------------------------------- bad input

def test_bad_inputs(planted):
    (X, Y), _ = planted
    with pytest.raises(ValueError, match="rows"):
        ExtremeClassifier(negative=5, progress=False).fit(X, Y[:10])
    with pytest.raises(ValueError, match="no training row"):
        ExtremeClassifier(negative=5, progress=False).fit(X, sp.csr_matrix(Y.shape))
    model = ExtremeClassifier(vector_size=8, epochs=1, negative=5, progress=False).fit(X, Y)
    wider = sp.hstack([X, sp.csr_matrix(([1.0], ([3], [2])), shape=(X.shape[0], 5))], format="csr")
    with pytest.raises(ValueError, match="row 3 has feature id %d" % (X.shape[1] + 2)):
        model.predict(wider)
    with pytest.raises(ValueError, match="labels"):
        model.evaluate(X, Y[:, :5])
    with pytest.raises(RuntimeError, match="fit"):
        ExtremeClassifier().predict(X)


@pytest.mark.parametrize("kwargs, message", [
    (dict(tau=0), "tau"), (dict(vector_size=0), "vector_size"), (dict(loss="nope"), "unknown loss"),
    (dict(loss="hs", normalize_classes=True), "normalize_classes"), (dict(loss="sampled_softmax", negative=0), "negative"),
])
def test_bad_parameters_name_themselves(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ExtremeClassifier(**kwargs)


# ----------------------------------------------------------------------------- full softmax in mini-batches

@pytest.mark.parametrize("normalize, tau", [(False, 1.0), (True, 0.5)])
def test_batches_of_one_equal_the_kernel(planted, normalize, tau):
    # batch_size=1 applies each example's step before the next: the same SGD as the per-example kernel
    # (on single-label rows: the kernel takes a multi-label row's label steps one after the other)
    (X, Y), _ = planted
    one = np.flatnonzero(np.diff(Y.indptr) == 1)
    X, Y = X[one], Y[one]
    kw = dict(vector_size=8, loss="full_softmax", epochs=1, workers=1, normalize=normalize, tau=tau, seed=2,
              progress=False)
    kernel = ExtremeClassifier(**kw).fit(X[:300], Y[:300])
    batch = ExtremeClassifier(batch_size=1, **kw).fit(X[:300], Y[:300])
    np.testing.assert_allclose(batch.label_vectors, kernel.label_vectors, rtol=2e-3, atol=2e-4)
    np.testing.assert_allclose(batch.feature_vectors, kernel.feature_vectors, rtol=2e-3, atol=2e-4)
    assert batch.last_report.epoch_loss[0] == pytest.approx(kernel.last_report.epoch_loss[0], rel=1e-3)


def test_mini_batches_learn_the_planted_labels(planted):
    (X, Y), (Xt, Yt) = planted
    model = ExtremeClassifier(vector_size=32, loss="full_softmax", batch_size=32, epochs=5,
                              progress=False).fit(X, Y)
    assert _p1(model, Xt, Yt) >= 0.9


@pytest.mark.parametrize("normalize, tau", [(False, 1.0), (True, 0.1)])
def test_a_feature_shared_by_a_batch_moves_by_the_mean_of_its_steps(normalize, tau):
    # b copies of one example: each feature row moves as far as one example's step would move it (the mean
    # of the b equal steps, not their sum, which overshoots the rows that many examples of a batch share),
    # while the class rows still take the summed step
    from embkit.xc.row_batches import batch_step
    rng = np.random.default_rng(3)
    X = sp.csr_matrix(np.array([[1.0, 0.0, 1.0, 1.0, 0.0]], np.float32))
    Y = sp.csr_matrix(np.array([[0.0, 1.0, 0.0, 1.0]]))
    W_in = rng.standard_normal((5, 6)).astype(np.float32)
    W_out = rng.standard_normal((4, 6)).astype(np.float32)
    one_in, one_out = W_in.copy(), W_out.copy()
    batch_step(X, Y, one_in, one_out, 0.05, normalize, tau)
    b = 8
    many_in, many_out = W_in.copy(), W_out.copy()
    batch_step(sp.vstack([X] * b).tocsr(), sp.vstack([Y] * b).tocsr(), many_in, many_out, 0.05, normalize, tau)
    np.testing.assert_allclose(many_in - W_in, one_in - W_in, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(many_out - W_out, b * (one_out - W_out), rtol=1e-4, atol=1e-5)


def test_batch_size_needs_full_softmax():
    with pytest.raises(ValueError, match="batch_size"):
        ExtremeClassifier(loss="sgns", batch_size=8)


def test_other_positive_labels_are_never_negatives():
    # two labels, both positive for the only example, a sampler over those two classes: every negative is
    # an accidental hit, so each label step keeps only its positive term (log 2 at zero scores)
    W_in = np.ones((1, 4), np.float32)
    W_out = np.zeros((2, 4), np.float32)
    sampler = registry.make_sampler("uniform", counts=[1, 1], n_classes=2)
    trainer = RowTrainer(W_in, W_out, np.array([0, 1], np.int64), np.array([0], np.int32),
                         np.array([1.0], np.float32), np.array([0, 2], np.int64), np.array([0, 1], np.int32),
                         registry.make_loss("sgns"), sampler, 3, False, 1.0, False, False, 1e-9, 1e-9, 1.0, 0)
    total, steps, _ = trainer.train_chunk(np.array([0], np.int32), 0.0, 0, 1)
    assert steps == 2
    assert total == pytest.approx(2 * np.log(2), rel=1e-3)
