"""The count blend of ``ItemEmbedding``: embedding scores plus the weighted log of a history's co-occurrence
counts (cosine-normalised by default, or raw), the weight chosen on validation users or given, saved and loaded
with the counts, bad files refused."""
import numpy as np
import pytest
import scipy.sparse as sp

from embkit import ItemEmbedding
from embkit.core import persist
from embkit.items.cooccurrence import PairCounts
from embkit.items.count_blend import COUNT_WEIGHTS, blend_counts, check_count_matrix, choose_count_weight
from embkit.items.leave_one_out import HeldOut

N_ITEMS = 24
IDS = ["item-%02d" % i for i in range(N_ITEMS)]


def _counts(seed=0):
    """Item r is usually followed by item r + 1 (mod n)."""
    rng = np.random.default_rng(seed)
    ctx = rng.integers(0, N_ITEMS, 5000)
    tgt = np.where(rng.random(5000) < 0.8, (ctx + 1) % N_ITEMS, rng.integers(0, N_ITEMS, 5000))
    return PairCounts.from_matrix(sp.csr_matrix((np.ones(5000), (ctx, tgt)), shape=(N_ITEMS, N_ITEMS)), names=IDS)


def _chain_users(n_users=40, seed=1):
    """Held-out users whose next item follows the chain (histories of 1-3 items)."""
    rng = np.random.default_rng(seed)
    histories, targets = [], []
    for _ in range(n_users):
        start, length = int(rng.integers(N_ITEMS)), int(rng.integers(1, 4))
        histories.append([(start + k) % N_ITEMS for k in range(length)])
        targets.append((start + length) % N_ITEMS)
    offsets = np.concatenate([[0], np.cumsum([len(h) for h in histories])])
    return HeldOut(np.arange(n_users), np.concatenate(histories), offsets, np.array(targets), np.array(IDS),
                   "validation")


def _params(**extra):
    return dict(dict(vector_size=8, epochs=2, workers=1, seed=3, progress=False), **extra)


def _cosine(counts):
    """Each count times the mean row sum over the geometric mean of its row's and its column's sums, by hand."""
    dense = counts.matrix.toarray().astype(np.float64)
    rows, cols = dense.sum(axis=1), dense.sum(axis=0)
    return dense * (dense.sum() / len(dense)) / np.sqrt(np.outer(np.maximum(rows, 1), np.maximum(cols, 1)))


def _blended(counts, norm):
    return _cosine(counts) if norm == "cosine" else counts.matrix.toarray()


def _expected_scores(model, matrix, history, weight):
    """Embedding score plus ``weight * log1p`` of the recency-weighted rows of ``matrix`` (dense), by hand."""
    rows = [IDS.index(x) for x in history]
    ages = np.arange(len(rows))[::-1]
    r = model.recency ** ages
    query = (r[:, None] * model.context_vectors[rows]).sum(axis=0)
    summed = (r[:, None] * matrix[rows]).sum(axis=0)
    return model.target_vectors @ query + weight * np.log1p(summed)


@pytest.mark.parametrize("norm", ["cosine", "none"])
def test_a_given_weight_adds_the_log_counts_to_every_query(norm):
    counts = _counts()
    params = _params(count_weight=2.0) if norm == "cosine" else _params(count_weight=2.0, count_norm=norm)
    model = ItemEmbedding(**params).fit(counts)
    assert model.count_norm == norm
    assert model.blend_weight == 2.0 and model.blend_history == {} and model.pair_counts is not None
    history = [IDS[3], IDS[4], IDS[9]]
    expected = _expected_scores(model, _blended(counts, norm), history, 2.0)
    np.testing.assert_allclose(model.scores(history), expected, rtol=1e-4, atol=1e-4)
    ids, scores = model.recommend(history, N=5)
    order = [IDS[i] for i in np.argsort(-np.where(np.isin(IDS, history), -np.inf, expected), kind="stable")[:5]]
    assert ids.tolist() == order
    many_ids, many_scores = model.recommend_many([history, [IDS[0]]], N=5)
    assert many_ids[0].tolist() == ids.tolist() and np.allclose(many_scores[0], scores)


def test_weight_zero_is_the_embedding_alone_and_keeps_no_counts():
    counts = _counts()
    model = ItemEmbedding(**_params(count_weight=0)).fit(counts, validation=_chain_users())
    assert model.blend_weight == 0 and model.pair_counts is None and model.blend_history == {}
    np.testing.assert_allclose(model.scores([IDS[5]]), _expected_scores(model, _cosine(counts), [IDS[5]], 0.0),
                               rtol=1e-5)


def _popular_and_niche():
    """Item 0 is followed by the popular item 1 (which follows everything) more often than by the niche item 2."""
    dense = np.zeros((N_ITEMS, N_ITEMS))
    dense[3:, 1] = dense[1, 3:] = 40
    dense[0, 1] = dense[1, 0] = 10
    dense[0, 2] = dense[2, 0] = 6
    return PairCounts.from_matrix(sp.csr_matrix(dense), names=IDS)


def test_the_cosine_counts_prefer_a_niche_follower_to_a_popular_one():
    counts = _popular_and_niche()
    # a tiny learning rate: the vectors stay near zero, the counts decide
    raw = ItemEmbedding(**_params(count_weight=16.0, count_norm="none", alpha=1e-6)).fit(counts)
    cosine = ItemEmbedding(**_params(count_weight=16.0, alpha=1e-6)).fit(counts)
    assert raw.recommend([IDS[0]], N=1)[0].tolist() == [IDS[1]]
    assert cosine.recommend([IDS[0]], N=1)[0].tolist() == [IDS[2]]


def test_blend_counts_keeps_the_pairs_of_average_items_and_their_symmetry():
    counts = _popular_and_niche().matrix
    prepared = blend_counts(counts)
    assert prepared.dtype == np.float32 and (prepared != prepared.T).nnz == 0
    assert prepared[0, 2] > prepared[0, 1] and counts[0, 2] < counts[0, 1]
    # every row and column sums to the mean: the counts are kept as they are
    ring = sp.csr_matrix(np.roll(np.eye(N_ITEMS), 1, axis=1) * 7)
    np.testing.assert_allclose(blend_counts(ring).toarray(), ring.toarray())
    np.testing.assert_array_equal(blend_counts(counts, "none").toarray(), counts.toarray())
    with pytest.raises(ValueError, match="count_norm"):
        blend_counts(counts, "idf")


def test_without_validation_users_the_default_is_the_embedding_alone():
    model = ItemEmbedding(**_params()).fit(_counts())
    assert model.count_weight is None and model.blend_weight == 0 and model.pair_counts is None


def test_validation_chooses_the_weight_that_ranks_its_users_best():
    held = _chain_users()
    # one epoch at a tiny learning rate leaves the vectors near their random start: the counts know the chain
    model = ItemEmbedding(**_params(epochs=1, alpha=1e-5)).fit(_counts(), validation=held)
    tried = model.blend_history
    assert sorted(tried) == sorted(COUNT_WEIGHTS)
    assert model.blend_weight > 0 and tried[model.blend_weight] == max(tried.values())
    assert tried[model.blend_weight] > tried[0.0]
    # the stored weight is the one the model scores with
    assert model.evaluate(held, ks=(10,)).ndcg[10] == pytest.approx(tried[model.blend_weight])
    alone = ItemEmbedding(**_params(epochs=1, alpha=1e-5, count_weight=0)).fit(_counts(), validation=held)
    assert alone.evaluate(held, ks=(10,)).ndcg[10] == pytest.approx(tried[0.0])


def test_choose_count_weight_keeps_the_first_of_equals():
    values = {0.0: 0.1, 0.5: 0.3, 1.0: 0.3, 2.0: 0.2}
    best, tried = choose_count_weight(lambda w: {"ndcg10": values[w]}, "ndcg10", weights=list(values))
    assert best == 0.5 and tried == values


def test_the_blend_round_trips_through_save_and_load(tmp_path):
    model = ItemEmbedding(**_params(count_weight=1.0)).fit(_counts())
    path = tmp_path / "blend.embkit"
    model.save(path)
    again = ItemEmbedding.load(path)
    assert again.blend_weight == 1.0 and again.count_weight == 1.0 and again.count_norm == "cosine"
    assert (again.pair_counts != model.pair_counts).nnz == 0
    history = [IDS[1], IDS[2]]
    np.testing.assert_allclose(again.scores(history), model.scores(history), rtol=1e-6)
    assert again.recommend(history, N=4)[0].tolist() == model.recommend(history, N=4)[0].tolist()


def _archive(model, path, state, drop=(), change=None, params=None):
    arrays = dict(model._arrays(), W_in=model.W_in, W_out=model.W_out)
    for key in drop:
        arrays.pop(key)
    arrays.update(change or {})
    persist.save_archive(path, {"model": "ItemEmbedding", "params": params or model.get_params(), "state": state},
                         model._words(), arrays)
    return path


def test_a_file_from_before_count_norm_blends_the_raw_counts_it_holds(tmp_path):
    model = ItemEmbedding(**_params(count_weight=1.0, count_norm="none")).fit(_counts())
    params = {k: v for k, v in model.get_params().items() if k != "count_norm"}
    loaded = ItemEmbedding.load(_archive(model, tmp_path / "before.embkit", model._state(), params=params))
    assert loaded.count_norm == "none" and loaded.blend_weight == 1.0
    history = [IDS[1], IDS[2]]
    np.testing.assert_allclose(loaded.scores(history), model.scores(history), rtol=1e-6)


def test_bad_blend_files_are_refused_naming_the_file(tmp_path):
    model = ItemEmbedding(**_params(count_weight=1.0)).fit(_counts())
    missing = _archive(model, tmp_path / "missing.embkit", {"blend_weight": 1.0}, drop=["pair_counts.data"])
    with pytest.raises(ValueError, match="missing.embkit.*no co-occurrence counts"):
        ItemEmbedding.load(missing)
    bad_column = model.pair_counts.indices.copy()
    bad_column[0] = N_ITEMS + 5
    outside = _archive(model, tmp_path / "outside.embkit", {"blend_weight": 1.0},
                       change={"pair_counts.indices": bad_column})
    with pytest.raises(ValueError, match="outside.embkit.*column outside"):
        ItemEmbedding.load(outside)
    negative = _archive(model, tmp_path / "negative.embkit", {"blend_weight": -1.0})
    with pytest.raises(ValueError, match="negative.embkit.*blend_weight"):
        ItemEmbedding.load(negative)
    # a file from before the blend (no state field, no counts) loads as the embedding alone
    old = _archive(model, tmp_path / "old.embkit", {}, drop=["pair_counts.indptr", "pair_counts.indices",
                                                            "pair_counts.data"])
    loaded = ItemEmbedding.load(old)
    assert loaded.blend_weight == 0.0 and loaded.pair_counts is None


def test_check_count_matrix_names_what_is_wrong():
    m = sp.csr_matrix(np.array([[0, 2.0], [1.0, 0]], dtype=np.float32))
    assert (check_count_matrix(m.indptr, m.indices, m.data, 2) != m).nnz == 0
    with pytest.raises(ValueError, match="row offsets"):
        check_count_matrix(m.indptr[:-1], m.indices, m.data, 2)
    with pytest.raises(ValueError, match=">= 0"):
        check_count_matrix(m.indptr, m.indices, -m.data, 2)


def test_an_unknown_count_norm_is_refused_by_name():
    with pytest.raises(ValueError, match="count_norm must be one of 'cosine', 'none'"):
        ItemEmbedding(count_norm="idf")


def test_a_negative_count_weight_is_refused_by_name():
    with pytest.raises(ValueError, match="count_weight"):
        ItemEmbedding(count_weight=-0.5)
    with pytest.raises(ValueError, match="count_weight"):
        ItemEmbedding(count_weight=float("nan"))
