"""``ItemEmbedding`` as a recommender: the data's ids in and out of every query, user histories with recency
weighting, many users at once, similar items, leave-one-out evaluation, persistence of the ids, bad input."""
import numpy as np
import pytest
import scipy.sparse as sp

from embkit import ItemEmbedding
from embkit.core import persist
from embkit.evaluation import NextItemResult
from embkit.items.cooccurrence import PairCounts
from embkit.items.leave_one_out import HeldOut, leave_one_out
from embkit.items.timelines import Timelines

N_ITEMS = 30
#: integer ids that are not the rows (shuffled, sparse, some below N_ITEMS so a row read as an id would hit)
INT_IDS = list(np.random.default_rng(5).permutation(np.arange(3, 3 + 7 * N_ITEMS, 7)).tolist())
STR_IDS = ["movie-%s" % chr(65 + i) if i < 26 else "movie-%d" % i for i in range(N_ITEMS)]


def _counts(ids):
    """Chains: item r is usually followed by item r + 1 (mod n), so the next item of a row is known."""
    rng = np.random.default_rng(0)
    ctx = rng.integers(0, N_ITEMS, 6000)
    tgt = np.where(rng.random(6000) < 0.8, (ctx + 1) % N_ITEMS, rng.integers(0, N_ITEMS, 6000))
    matrix = sp.csr_matrix((np.ones(6000), (ctx, tgt)), shape=(N_ITEMS, N_ITEMS))
    return PairCounts.from_matrix(matrix, names=ids)


@pytest.fixture(scope="module", params=["int", "str"])
def trained(request):
    ids = INT_IDS if request.param == "int" else STR_IDS
    model = ItemEmbedding(vector_size=16, epochs=3, workers=1, seed=2, progress=False).fit(_counts(ids))
    return model, ids


def _row_ids(ids):
    return {row: item for row, item in enumerate(ids)}


# ----------------------------------------------------------------------------- ids in, ids out

def test_items_and_the_explicit_mapping(trained):
    model, ids = trained
    assert model.items == ids and all(type(x) is type(ids[0]) for x in model.items)
    rows = model.item_index([ids[4], ids[0]])
    assert rows.tolist() == [4, 0]
    assert model.item_index(ids[7]) == 7
    assert model.item_ids(rows).tolist() == [ids[4], ids[0]] and model.item_ids(3) == ids[3]


def test_recommend_answers_with_ids(trained):
    model, ids = trained
    got, scores = model.recommend(ids[5], N=3)
    assert got.tolist()[0] == ids[6]                          # the chain's next item, by id
    assert set(got.tolist()) <= set(ids) and np.all(np.diff(scores) <= 0) and scores.dtype == np.float32
    assert np.allclose(scores, model.scores(ids[5])[model.item_index(got)])


def test_recommend_many_answers_with_ids_and_matches_recommend(trained):
    model, ids = trained
    histories = [[ids[1], ids[2]], ids[9], [ids[20], ids[3], ids[4]]]
    got, scores = model.recommend_many(histories, N=4)
    assert got.shape == scores.shape == (3, 4)
    assert [row[0] for row in got.tolist()] == [ids[3], ids[10], ids[5]]
    for user, history in enumerate(histories):
        one, one_scores = model.recommend(history, N=4)
        assert one.tolist() == got[user].tolist() and np.allclose(one_scores, scores[user])


def test_similar_items_answers_with_ids(trained):
    model, ids = trained
    for space in ("both", "context", "target"):
        got, cosines = model.similar_items(ids[8], N=5, space=space)
        assert len(got) == 5 and ids[8] not in got.tolist() and set(got.tolist()) <= set(ids)
        assert np.all(np.diff(cosines) <= 1e-6) and np.all(np.abs(cosines) <= 1 + 1e-5)
    vectors = model.context_vectors + model.target_vectors
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    got, cosines = model.similar_items(ids[8], N=1)
    assert cosines[0] == pytest.approx(unit[8] @ unit[model.item_index(got[0])], abs=1e-5)


def test_scores_are_in_the_order_of_items(trained):
    model, ids = trained
    scores = model.scores([ids[2], ids[11]])
    want = (model.recency * model.context_vectors[2] + model.context_vectors[11]) @ model.target_vectors.T
    assert np.allclose(scores, want, atol=1e-5)


def test_keyed_vectors_are_keyed_by_id(trained):
    model, ids = trained
    kv = model.wv
    assert list(kv.index_to_key) == ids
    assert np.array_equal(kv[ids[3]], model.context_vectors[3])


def test_evaluate_and_validation_take_held_out_ids(trained):
    model, ids = trained
    # three users whose next item follows the chain, in the model's ids, over a shuffled item index
    index = np.array(ids[::-1])
    pos = {item: k for k, item in enumerate(index.tolist())}
    histories = [[ids[1], ids[2]], [ids[7]], [ids[3], ids[12]]]
    targets = [ids[3], ids[8], ids[13]]
    items = np.array([pos[x] for h in histories for x in h])
    held = HeldOut(np.arange(3), items, [0, 2, 3, 5], np.array([pos[t] for t in targets]), index, "test")
    assert held.history_ids()[0].tolist() == histories[0] and held.target_ids().tolist() == targets
    result = model.evaluate(held, ks=(1, 10))
    assert isinstance(result, NextItemResult) and result.n_users == 3
    ranked, _ = model.recommend_many(held.history_ids(), N=1)
    assert result.hit[1] == pytest.approx(np.mean(ranked[:, 0] == np.array(targets)))
    again = ItemEmbedding(vector_size=8, epochs=2, workers=1, progress=False)
    again.fit(_counts(ids), validation=held, metric="hit10")
    assert again.best_epoch is not None and {"hit10", "ndcg10", "mpr"} <= set(again.history[0])


def test_a_checkpointed_leave_one_out_run_resumes(trained, tmp_path):
    # the run arguments a checkpoint keeps (metric "hit10" of leave-one-out validation) must pass resume's checks
    _, ids = trained
    index = np.array(ids)
    held = HeldOut(np.arange(2), np.array([1, 7]), [0, 1, 2], np.array([2, 8]), index, "validation")
    params = dict(vector_size=8, epochs=2, workers=1, seed=4, progress=False)
    whole = ItemEmbedding(**params).fit(_counts(ids), validation=held, metric="hit10")
    ItemEmbedding(checkpoint_dir=str(tmp_path), checkpoint_every="1 pairs", **params).fit(
        _counts(ids), validation=held, metric="hit10")
    resumed = ItemEmbedding.resume(str(tmp_path), _counts(ids), validation=held)
    np.testing.assert_array_equal(resumed.W_in, whole.W_in)


# ----------------------------------------------------------------------------- histories

def test_history_items_never_come_back_unless_asked(trained):
    model, ids = trained
    history = ids[:10]
    got, _ = model.recommend(history, N=N_ITEMS)
    assert len(got) == N_ITEMS - 10 and not set(got.tolist()) & set(history)
    got, _ = model.recommend(history, N=N_ITEMS, filter_seen=False)
    assert len(got) == N_ITEMS and set(history) <= set(got.tolist())
    got, _ = model.recommend(ids[0], N=N_ITEMS, exclude=[ids[1], ids[2]])
    assert len(got) == N_ITEMS - 3 and not {ids[0], ids[1], ids[2]} & set(got.tolist())


def test_recency_weights_the_history():
    model = ItemEmbedding(vector_size=16, epochs=3, workers=1, seed=2, recency=0.0, progress=False)
    model.fit(_counts(INT_IDS))
    ids = INT_IDS
    assert np.allclose(model.scores([ids[3], ids[4]]), model.scores(ids[4]))     # only the most recent counts
    model.recency = 1.0
    assert np.allclose(model.scores([ids[3], ids[4]]), model.scores(ids[3]) + model.scores(ids[4]), atol=1e-5)
    model.recency = 0.5
    repeated = model.scores([ids[4], ids[3], ids[4]])              # a repeated item adds up its weights
    assert np.allclose(repeated, 1.25 * model.scores(ids[4]) + 0.5 * model.scores(ids[3]), atol=1e-5)


def test_large_n_is_clipped_and_padded(trained):
    model, ids = trained
    got, scores = model.recommend(ids[0], N=10 * N_ITEMS)
    assert len(got) == N_ITEMS - 1
    many, many_scores = model.recommend_many([ids[:N_ITEMS - 2], [ids[0]]], N=10 * N_ITEMS)
    assert many.shape == (2, N_ITEMS)
    pad = -1 if isinstance(ids[0], int) else ""
    assert many[0].tolist()[2:] == [pad] * (N_ITEMS - 2) and np.all(many_scores[0, 2:] == -np.inf)
    assert np.all(np.isfinite(many_scores[1, :N_ITEMS - 1])) and many[1, -1] == pad


# ----------------------------------------------------------------------------- bad input

def test_unknown_ids_are_named(trained):
    model, ids = trained
    other = "zz" if isinstance(ids[0], int) else 12345
    for call in (lambda: model.recommend(other), lambda: model.recommend([ids[0], other]),
                 lambda: model.recommend_many([[ids[0]], [other]]), lambda: model.similar_items(other),
                 lambda: model.item_index(other), lambda: model.recommend(ids[0], exclude=[other]),
                 lambda: model.scores(other)):
        with pytest.raises(KeyError, match="unknown item %r" % (other,)):
            call()


def test_a_row_number_is_not_an_id():
    model = ItemEmbedding(vector_size=8, epochs=1, workers=1, progress=False).fit(_counts(INT_IDS))
    row_only = next(r for r in range(N_ITEMS) if r not in INT_IDS)
    with pytest.raises(KeyError, match="unknown item %d" % row_only):
        model.recommend(row_only)
    with pytest.raises(KeyError, match=r"the item ids are int \(did you mean %d\?\)" % INT_IDS[0]):
        model.recommend(str(INT_IDS[0]))


def test_empty_histories_and_bad_counts_are_refused(trained):
    model, ids = trained
    with pytest.raises(ValueError, match="history is empty"):
        model.recommend([])
    with pytest.raises(ValueError, match="history 1 is empty"):
        model.recommend_many([[ids[0]], []])
    with pytest.raises(ValueError, match="no histories"):
        model.recommend_many([])
    with pytest.raises(TypeError, match="recommend()"):
        model.recommend_many(ids[0])
    for N in (0, -1, 2.5):
        with pytest.raises(ValueError, match="N must be"):
            model.recommend(ids[0], N=N)
    with pytest.raises(TypeError, match="one item id"):
        model.similar_items([ids[0], ids[1]])
    with pytest.raises(ValueError, match="space"):
        model.similar_items(ids[0], space="input")
    with pytest.raises(ValueError, match="recency"):
        ItemEmbedding(recency=1.5)


# ----------------------------------------------------------------------------- persistence

def test_ids_keep_their_type_through_save_and_load(trained, tmp_path):
    model, ids = trained
    path = tmp_path / "items.embkit"
    model.save(path)
    again = ItemEmbedding.load(path)
    assert again.items == ids and type(again.items[0]) is type(ids[0])
    assert again.recommend(ids[2], N=3)[0].tolist() == model.recommend(ids[2], N=3)[0].tolist()


def test_files_without_typed_ids_load_with_string_ids(tmp_path):
    model = ItemEmbedding(vector_size=8, epochs=1, workers=1, progress=False).fit(_counts(INT_IDS))
    path = tmp_path / "old.embkit"
    config = {"model": "ItemEmbedding", "params": model.get_params(), "state": {}}
    persist.save_archive(path, config, [str(x) for x in INT_IDS],
                         {"counts": model.counts, "W_in": model.W_in, "W_out": model.W_out})
    old = ItemEmbedding.load(path)
    assert old.items == [str(x) for x in INT_IDS]
    assert old.recommend(str(INT_IDS[0]), N=2)[0].tolist() == [str(x) for x in model.recommend(INT_IDS[0], N=2)[0]]


# ----------------------------------------------------------------------------- leave-one-out

def _timelines():
    # users: 4 items, 2 items, 1 item, 3 items (rows of a 5-item index with raw ids 100..104)
    return Timelines(np.array([0, 1, 2, 3, 4, 0, 2, 1, 2, 3]), np.array([0, 4, 6, 7, 10]),
                     np.array([10, 11, 12, 13]), np.array([100, 101, 102, 103, 104]), np.array([2, 2, 3, 2, 1]))


def test_leave_one_out_holds_out_the_last_and_second_to_last_items():
    split = leave_one_out(_timelines())
    assert split.test.users.tolist() == [10, 11, 13] and split.test.target_ids().tolist() == [103, 100, 103]
    assert [h.tolist() for h in split.test.history_ids()] == [[100, 101, 102], [104], [101, 102]]
    assert split.validation.users.tolist() == [10, 13] and split.validation.target_ids().tolist() == [102, 102]
    assert [h.tolist() for h in split.validation.history_ids()] == [[100, 101], [101]]
    train = split.train
    assert [train[u].tolist() for u in range(4)] == [[0, 1], [4], [2], [1]]
    assert train.item_counts.tolist() == [1, 2, 1, 0, 1] and train.item_ids.tolist() == [100, 101, 102, 103, 104]
    no_val = leave_one_out(_timelines(), validation=False)
    assert no_val.validation is None and [no_val.train[u].tolist() for u in range(4)] == [[0, 1, 2], [4], [2], [1, 2]]
    counts = PairCounts.from_timelines(split.train, window=2)
    assert counts.ids == [100, 101, 102, 103, 104]


def test_leave_one_out_needs_a_user_with_two_items():
    one_each = Timelines(np.array([0, 1]), np.array([0, 1, 2]), np.array([1, 2]), np.array([7, 8]), np.array([1, 1]))
    with pytest.raises(ValueError, match="two items"):
        leave_one_out(one_each)
