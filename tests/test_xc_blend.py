"""The closed-form heads, their blend with the one-vs-all scores chosen on held-out training rows, and the sparse
top-k kernel they use."""
import numpy as np
import pytest
import scipy.sparse as sp

from embkit import ExtremeClassifier
from embkit._kernels.rows import top_k_sparse_rows
from embkit.core import persist
from embkit.xc.blend import EXHAUSTIVE_POINTS, blend, choose_weights, precision_sum, simplex_grid, top_k
from embkit.xc.heads import HEADS, add_statistics, head_params
from embkit.xc.synthetic import make_xc


@pytest.fixture(scope="module")
def planted():
    return make_xc(n_labels=30, n_features=120, n_train=1500, n_test=400, values="tfidf", seed=5)


def _weighted(X):
    X = sp.csr_matrix(X, dtype=np.float32)
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    norms[norms == 0] = 1
    return sp.csr_matrix(sp.diags(1 / norms) @ X, dtype=np.float32)


def test_top_k_sparse_rows_matches_a_sort():
    rng = np.random.default_rng(0)
    M = sp.random(50, 40, density=0.2, format="csr", random_state=1, dtype=np.float32)
    M.data = rng.permutation(len(M.data)).astype(np.float32) - 100       # distinct, some negative
    ids, vals = top_k_sparse_rows(M.indptr.astype(np.int64), M.indices.astype(np.int32), M.data, 6, 2)
    for r in range(50):
        lo, hi = M.indptr[r], M.indptr[r + 1]
        order = np.argsort(-M.data[lo:hi])[:6]
        assert ids[r, :len(order)].tolist() == M.indices[lo:hi][order].tolist()
        assert (ids[r, len(order):] == -1).all()
        np.testing.assert_array_equal(vals[r, :len(order)], M.data[lo:hi][order])


def test_top_k_sparse_products_match_a_sorted_dense_product():
    from embkit._kernels.rows import top_k_sparse_products
    A = sp.random(40, 30, density=0.2, format="csr", random_state=1, dtype=np.float32)
    A.data -= 0.3                                   # some products negative, some rows of A empty
    A.eliminate_zeros()
    B = sp.random(30, 25, density=0.3, format="csr", random_state=3, dtype=np.float32)
    arrays = [np.asarray(a, dtype=t) for M in (A, B)
              for a, t in ((M.indptr, np.int64), (M.indices, np.int32), (M.data, np.float32))]
    dense = (A.toarray().astype(np.float64) @ B.toarray())
    for k, threads in ((1, 1), (4, 2), (30, 3)):
        ids, vals = top_k_sparse_products(*arrays, 25, k, threads)
        assert ids.shape == vals.shape == (40, k)
        for r in range(40):
            positive = np.flatnonzero(dense[r] > 1e-7)
            want = positive[np.argsort(-dense[r, positive], kind="stable")][:k]
            got = ids[r][ids[r] >= 0]
            np.testing.assert_allclose(vals[r, :len(got)], dense[r, got], rtol=1e-5)
            np.testing.assert_allclose(np.sort(dense[r, got]), np.sort(dense[r, want]), rtol=1e-5)
            assert (vals[r, len(got):] == 0).all() and len(got) == len(want)
    with pytest.raises(ValueError, match="beyond"):
        top_k_sparse_products(*arrays, 20, 3, 1)


@pytest.mark.parametrize("n_columns", [6, 6000])      # rows that reach most columns, and rows that reach few
def test_top_k_sparse_products_break_ties_by_the_lower_column(n_columns):
    from embkit._kernels.rows import top_k_sparse_products
    A = sp.csr_matrix(np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]], dtype=np.float32))
    B = sp.csr_matrix((np.array([1, 1, 1, -1, 0.5, 0.5], np.float32), ([0, 0, 1, 1, 0, 1], [5, 2, 2, 3, 4, 4])),
                      shape=(2, n_columns))
    arrays = [np.asarray(a, dtype=t) for M in (A, B)
              for a, t in ((M.indptr, np.int64), (M.indices, np.int32), (M.data, np.float32))]
    ids, vals = top_k_sparse_products(*arrays, n_columns, 4, 2)
    np.testing.assert_array_equal(ids, [[2, 5, 4, -1], [2, 4, -1, -1], [2, 4, 5, -1]])
    np.testing.assert_allclose(vals, [[1, 1, 0.5, 0], [2, 1, 0, 0], [2, 1, 1, 0]])


def test_heads_compute_what_they_say(planted):
    (train, test), params = planted, head_params({"l2": 0.5})
    A, B, Y = _weighted(train.X), _weighted(test.X), train.Y
    state = HEADS["least_squares"].fit(A, Y, params, 2)
    W = state["least_squares_weights"].astype(np.float64)
    A1 = np.hstack([A.toarray(), np.ones((A.shape[0], 1))])
    ridge = np.eye(A1.shape[1]) * 0.5
    ridge[-1, -1] = 0
    residual = (A1.T @ A1 + ridge) @ W - A1.T @ Y.toarray()
    assert np.abs(residual).max() < 1e-2 * np.abs(A1.T @ Y.toarray()).max()
    centroids = HEADS["centroids"].fit(A, Y, head_params({"centroid_threshold": 0}), 2)
    C = sp.csr_matrix((centroids["centroids_data"], centroids["centroids_indices"], centroids["centroids_indptr"]),
                      shape=tuple(centroids["centroids_shape"])).toarray()
    want = A.T.toarray() @ Y.toarray()
    np.testing.assert_allclose(C, want / np.linalg.norm(want, axis=0), rtol=1e-4, atol=1e-6)
    S = HEADS["neighbours"].scores(HEADS["neighbours"].fit(A, Y, params, 2), B, params, 2)
    cos = (B @ A.T).toarray()
    for r in (0, 3, 7):
        nearest = np.argsort(-cos[r])[:params["neighbours"]]
        w = np.maximum(cos[r, nearest], 0) ** params["neighbour_power"]
        np.testing.assert_allclose(S[r].toarray().ravel(), (w / w.sum()) @ Y[nearest].toarray(), rtol=1e-4,
                                   atol=1e-6)


def test_chosen_weights_are_the_best_of_the_grid(planted):
    train, _ = planted
    rng = np.random.default_rng(2)
    Y = train.Y[:300]
    good = Y.toarray() + rng.normal(0, 0.8, Y.shape).astype(np.float32)
    noise = rng.normal(0, 1, Y.shape).astype(np.float32)
    weights, value = choose_weights([noise, good], Y, steps=4)
    for w in simplex_grid(2, 4):
        assert value * 3 >= precision_sum(Y, top_k(blend([noise, good], w), 5)[0]) - 1e-9
    assert weights[1] > weights[0]
    assert value * 3 == pytest.approx(precision_sum(Y, top_k(blend([noise, good], weights), 5)[0]))


def test_a_large_grid_is_searched_to_a_point_no_neighbour_beats(planted):
    train, _ = planted
    rng = np.random.default_rng(4)
    Y = train.Y[:300]
    truth = Y.toarray()
    scores = [truth * rng.random() + rng.normal(0, s, truth.shape).astype(np.float32) for s in (0.6, 0.8, 1.0, 1.3)]
    assert len(simplex_grid(4, 10)) > EXHAUSTIVE_POINTS
    weights, value = choose_weights(scores, Y)
    assert value * 3 == pytest.approx(precision_sum(Y, top_k(blend(scores, weights), 5)[0]), abs=1e-9)
    here = np.array(weights)
    for w in simplex_grid(4, 10):
        if np.abs(np.array(w) - here).max() < 0.15 or all(round(10 * v) % 2 == 0 for v in w):
            assert value * 3 >= precision_sum(Y, top_k(blend(scores, w), 5)[0]) - 1e-9
    blocks = [lambda rows, S=S: S[rows] for S in scores]          # scores given a block of rows at a time
    assert choose_weights(blocks, Y) == (weights, value)
    assert choose_weights(blocks, Y, workers=3) == (weights, value)   # the blocks' scores computed on threads


def test_neighbours_score_the_same_on_any_number_of_threads(planted):
    from embkit.xc import heads
    train, test = planted
    head, params = heads.HEADS["neighbours"], heads.head_params({})
    A = sp.csr_matrix(train.X, dtype=np.float32)
    state = head.fit(A, train.Y, params, 1)
    B = sp.csr_matrix(test.X, dtype=np.float32)
    one = head.scores(state, B, params, workers=1)
    for workers in (1, 2, 3):
        again = head.scores(state, B, params, workers=workers)
        assert (abs(again - one) > 1e-6).nnz == 0


def test_the_blend_is_chosen_on_held_out_rows_and_saved(tmp_path, planted):
    train, test = planted
    plain = ExtremeClassifier(epochs=3, heads=(), workers=1, progress=False).fit(train)
    blended = ExtremeClassifier(epochs=3, workers=1, progress=False).fit(train)
    assert blended.heads == ("centroids", "least_squares", "neighbours")
    assert len(blended.blend_weights) == len(blended.blend_heads) + 1
    assert sum(blended.blend_weights) == pytest.approx(1.0) and min(blended.blend_weights) >= 0
    path = str(tmp_path / "m.ekm")
    blended.save(path)
    again = ExtremeClassifier.load(path)
    assert again.blend_heads == blended.blend_heads and again.blend_weights == blended.blend_weights
    np.testing.assert_array_equal(again.predict(test.X)[0], blended.predict(test.X)[0])
    if blended.blend_heads:
        assert (plain.predict(test.X)[0] != blended.predict(test.X)[0]).any()


def _held_out_rows(model, train):
    """The rows a blended ``model`` held out of its model's training (the split it draws itself)."""
    X = model._weighted(train.X)
    rows = np.flatnonzero((np.diff(train.Y.indptr) > 0) & (np.diff(X.indptr) > 0))
    return model._blend_split(X, train.Y, rows)[1]


def test_the_model_is_trained_once_and_never_on_the_held_out_rows(planted):
    # one epoch: the held-out rows' labels decide whether a second one runs (the blend's verdict), not the model
    train, _ = planted
    first = ExtremeClassifier(epochs=1, workers=1, progress=False).fit(train)
    held_out = _held_out_rows(first, train)
    assert 0 < len(held_out) < train.X.shape[0]
    Y = train.Y.tolil()
    Y[held_out] = Y[np.roll(held_out, 1)]          # other labels for the held-out rows only
    Y = sp.csr_matrix(Y)
    assert (Y != train.Y).nnz
    second = ExtremeClassifier(epochs=1, workers=1, progress=False).fit(train.X, Y)
    np.testing.assert_array_equal(first.W_in, second.W_in)
    np.testing.assert_array_equal(first.W_out, second.W_out)
    np.testing.assert_array_equal(first.label_biases, second.label_biases)
    changed = train.Y.tolil()
    changed[np.setdiff1d(np.arange(train.X.shape[0]), held_out)[:5]] = Y[held_out[:5]]
    third = ExtremeClassifier(epochs=1, workers=1, progress=False).fit(train.X, sp.csr_matrix(changed))
    assert (third.W_out != first.W_out).any()           # the other rows are trained on


@pytest.mark.parametrize("name", [name for name, head in HEADS.items()
                                  if head.statistics(sp.csr_matrix((2, 3), dtype=np.float32),
                                                     sp.csr_matrix((2, 4)), 1) is not None])
def test_a_head_refitted_from_added_statistics_is_the_head_of_all_rows(planted, name):
    train, _ = planted
    A, Y, head, params = _weighted(train.X), train.Y, HEADS[name], head_params({"centroid_threshold": 0})
    whole = head.fit(A, Y, params, 2)
    cut = 600
    parts = add_statistics(head.statistics(A[:cut], Y[:cut], 2), head.statistics(A[cut:], Y[cut:], 1))
    summed = head.fit(None, None, params, 1, statistics=parts)
    assert sorted(whole) == sorted(summed)
    for key in whole:
        np.testing.assert_allclose(summed[key], whole[key], rtol=1e-3, atol=1e-4 * np.abs(whole[key]).max())
    part = head.fit(A[:cut], Y[:cut], params, 1)
    assert any(part[key].shape != whole[key].shape or not np.allclose(part[key], whole[key]) for key in whole)


def test_a_table_shaped_array_of_another_shape_is_refused(tmp_path, planted):
    train, _ = planted
    model = ExtremeClassifier(epochs=1, workers=1, heads=("least_squares",), progress=False).fit(train)
    if "least_squares" not in model.blend_heads:
        model.blend_heads, model.blend_weights = ("least_squares",), (0.5, 0.5)
        model._head_state = HEADS["least_squares"].fit(_weighted(train.X), train.Y, model.head_params, 1)
    model._head_state["least_squares_weights"] = model._head_state["least_squares_weights"][:-2]
    path = str(tmp_path / "bad.ekm")
    model.save(path)
    with pytest.raises(ValueError, match="head_least_squares_weights has shape"):
        persist.load(path)


@pytest.mark.parametrize("kwargs, message", [
    (dict(heads=("nope",)), "heads must be a list of head names"), (dict(heads="centroids"), "heads must be a list"),
    (dict(heads=("centroids", "centroids")), "twice"), (dict(head_params={"l3": 1}), "unknown head_params key"),
    (dict(head_params={"l2": -1}), r"head_params\['l2'\]"), (dict(blend_validation=1.0), "blend_validation"),
    (dict(loss="hs", heads=("centroids",)), "output rows are not labels"),
])
def test_bad_blend_parameters_name_themselves(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ExtremeClassifier(**kwargs)


def test_too_few_rows_for_a_split_train_without_a_blend(planted):
    train, _ = planted
    model = ExtremeClassifier(epochs=1, workers=1, progress=False).fit(train.X[:30], train.Y[:30])
    assert model.blend_heads == () and model.blend_weights is None


def test_the_command_line_chooses_the_heads(tmp_path, planted):
    import io

    from embkit import cli
    from embkit.xc.data import write_xc
    train, test = planted
    paths = [str(tmp_path / name) for name in ("train.txt", "test.txt")]
    for path, data in zip(paths, planted):
        write_xc(path, data)
    for given, want in ((["--heads", "least_squares"], ("least_squares",)), (["--heads"], ()), ([], None)):
        out = str(tmp_path / ("m%d.ekm" % len(given)))
        assert cli.main(["xc", "-q", "--train", paths[0], "--test", paths[1], "--epochs", "1", "-o", out] + given,
                        out=io.StringIO()) == 0
        model = ExtremeClassifier.load(out)
        assert model.heads == (want if want is not None else ("centroids", "least_squares", "neighbours"))
        assert set(model.blend_heads) <= set(model.heads)


def test_head_arrays_are_bounded_by_the_saved_sizes(tmp_path, planted):
    train, _ = planted
    model = ExtremeClassifier(vector_size=8, ensemble=1, epochs=1, workers=1, heads=("neighbours",),
                              progress=False).fit(train)
    assert model.blend_heads == ("neighbours",)
    path = str(tmp_path / "small-tables.ekm")
    model.save(path)            # the training rows the head keeps are many times the tables' bytes
    assert ExtremeClassifier.load(path).blend_heads == ("neighbours",)
    model.n_train = 2           # the saved state now declares fewer training rows than the head holds
    model.save(path)
    with pytest.raises(ValueError, match=r"head_neighbour_\w+ has \d+ elements, more than"):
        persist.load(path)


def test_the_heads_see_tfidf_unit_rows_whatever_the_model_weighting(tmp_path, planted):
    train, test = planted
    kw = dict(vector_size=8, epochs=1, workers=1, heads=("centroids", "neighbours"), progress=False)
    weighted = ExtremeClassifier(**kw).fit(train)
    raw = ExtremeClassifier(feature_weighting="none", normalize_rows=False, **kw).fit(train)
    assert raw.feature_weight_vector is None and raw.blend_heads
    want = weighted._weighted(test.X)
    for model in (weighted, raw):
        got = model._head_rows(model._weighted(test.X))
        np.testing.assert_allclose(got.toarray(), want.toarray(), rtol=1e-5, atol=1e-6)
    path = str(tmp_path / "raw.ekm")
    raw.save(path)
    again = ExtremeClassifier.load(path)
    np.testing.assert_array_equal(again.predict(test.X)[0], raw.predict(test.X)[0])
    np.testing.assert_allclose(again._head_rows(again._weighted(test.X)).toarray(), want.toarray(), rtol=1e-5,
                               atol=1e-6)


def test_the_sampled_solver_blends_the_heads_unless_its_rows_are_not_labels():
    assert ExtremeClassifier(loss="sampled_softmax").heads == ("centroids", "least_squares", "neighbours")
    assert ExtremeClassifier(loss="hs").heads == ()


def test_the_one_vs_all_model_trains_fewer_epochs_when_heads_are_blended():
    from embkit.xc.one_vs_all import OneVsAll
    alone, blended = ExtremeClassifier(heads=()), ExtremeClassifier()
    assert alone.epochs == OneVsAll.DEFAULTS["epochs"]
    assert blended.epochs == OneVsAll.BLENDED_DEFAULTS["epochs"] != alone.epochs
    assert ExtremeClassifier(epochs=7).epochs == 7                  # a value given is kept


def _head_fits(planted, **params):
    from embkit.xc.head_fits import HeadFits
    train, _ = planted
    A, Y = _weighted(train.X), train.Y
    order = np.random.default_rng(3).permutation(A.shape[0])
    fitted, held_out = np.sort(order[300:]), np.sort(order[:300])
    return HeadFits(A, Y, fitted, held_out, tuple(HEADS), head_params(params), 2), A, Y, fitted, held_out


def _dense(S):
    return S.toarray() if sp.issparse(S) else np.asarray(S)


def test_heads_fitted_beside_training_equal_heads_fitted_after(planted):
    beside = _head_fits(planted)[0].start()
    after, A, Y, fitted, held_out = _head_fits(planted)
    params = head_params({})
    for name, head in HEADS.items():
        alone = head.fit(A[fitted], Y[fitted], params, 1)
        expected = _dense(head.scores(alone, A[held_out], params))
        for fits in (beside, after):
            scores = fits.held_out_scorer(name)
            np.testing.assert_allclose(_dense(scores(slice(None))), expected, rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(_dense(scores(slice(10, 20))), expected[10:20], rtol=1e-4, atol=1e-5)
        first, second = beside.whole_state(name), after.whole_state(name)
        assert sorted(first) == sorted(second) == sorted(head.fit(A, Y, params, 1))
        for key in first:
            np.testing.assert_array_equal(first[key], second[key])


def test_an_error_in_the_heads_thread_reaches_the_caller(planted):
    fits = _head_fits(planted)[0]
    fits.params = dict(fits.params, l2=-1e6)         # a Gram matrix that is not positive definite
    fits.start()
    with pytest.raises(np.linalg.LinAlgError):
        fits.whole_state("least_squares")


def test_a_fit_stopped_by_an_error_leaves_no_heads_thread(planted):
    import threading
    train, _ = planted

    def stop(epoch, report):
        raise RuntimeError("stopped by the caller")

    with pytest.raises(RuntimeError, match="stopped by the caller"):
        ExtremeClassifier(epochs=3, workers=2, progress=False).fit(train, on_epoch=stop)
    assert not [t for t in threading.enumerate() if t.name == "embkit-xc-heads"]


def test_the_model_stops_after_its_first_epoch_when_the_blend_leaves_it_out(planted):
    train, test = planted
    alone = ExtremeClassifier(epochs=3, workers=2, progress=False, heads=("least_squares",)).fit(train)
    assert alone.blend_weights[0] == 0 and alone.last_report.epochs == 1
    used = ExtremeClassifier(epochs=3, workers=2, progress=False, heads=("neighbours",)).fit(train)
    assert used.blend_weights[0] > 0 and used.last_report.epochs == 3
    # the stopped model predicts as the blend of its heads alone says
    one = ExtremeClassifier(epochs=1, workers=2, progress=False, heads=("least_squares",)).fit(train)
    np.testing.assert_array_equal(alone.predict(test.X, k=3)[0], one.predict(test.X, k=3)[0])
