"""The ``pairs`` driver and ``ItemEmbedding``: exact step, planted structure, every pairing, API, bad input."""
import numpy as np
import pytest
import scipy.sparse as sp

from embkit import ItemEmbedding
from embkit.core import registry
from embkit._kernels.pairs import PairTrainer
from embkit._kernels.samplers import AliasSampler

from _cases import pairings, refused

N_GROUPS, GROUP = 6, 8
N_ITEMS = N_GROUPS * GROUP


def _planted(seed=0, n_pairs=40000, noise=0.05):
    """Items in groups; the next item after ``i`` is usually from ``i``'s group, and one step ahead of it
    within the group twice as often as the others (an asymmetric preference)."""
    rng = np.random.default_rng(seed)
    ctx = rng.integers(0, N_ITEMS, n_pairs)
    group = ctx // GROUP
    step = np.where(rng.random(n_pairs) < 0.3, 1, rng.integers(0, GROUP, n_pairs))
    tgt = group * GROUP + (ctx % GROUP + step) % GROUP
    wild = rng.random(n_pairs) < noise
    tgt[wild] = rng.integers(0, N_ITEMS, wild.sum())
    return sp.csr_matrix((np.ones(n_pairs), (ctx, tgt)), shape=(N_ITEMS, N_ITEMS))


def _group_precision(model, topn=GROUP - 1):
    hits = 0
    for i in range(N_ITEMS):
        top, _ = model.recommend(i, N=topn)
        hits += np.sum(top // GROUP == i // GROUP)
    return hits / (N_ITEMS * topn)


@pytest.fixture(scope="module")
def planted_split():
    return _planted(0), _planted(1, n_pairs=5000)


# ----------------------------------------------------------------------------- the driver's step

def test_one_pair_full_softmax_step_matches_numpy():
    # a matrix with one entry: every draw is that pair, and full softmax draws no negatives, so one
    # kernel step is deterministic and equals the softmax gradient step computed here
    n, d, lr = 5, 4, 0.3
    rng = np.random.default_rng(0)
    W_in = rng.standard_normal((n, d)).astype(np.float32)
    W_out = rng.standard_normal((n, d)).astype(np.float32)
    i, j = 2, 4
    h = W_in[i].astype(np.float64)
    s = W_out.astype(np.float64) @ h
    p = np.exp(s - s.max())
    p /= p.sum()
    g = p.copy()
    g[j] -= 1.0
    want_out = W_out - lr * np.outer(g, h)
    want_in = W_in.astype(np.float64).copy()
    want_in[i] -= lr * (W_out.astype(np.float64).T @ g)
    loss = registry.make_loss("full_softmax")
    trainer = PairTrainer(W_in, W_out, np.array([i], np.int32), np.array([j], np.int32), AliasSampler([1.0]),
                          loss, None, 0, lr, lr, 1.0, 0)
    total, pairs, _ = trainer.train_chunk(1, 0.0, 0, 1)
    assert pairs == 1
    assert total == pytest.approx(-np.log(p[j]), rel=1e-4)
    np.testing.assert_allclose(W_out, want_out, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(W_in, want_in, rtol=1e-4, atol=1e-5)


def test_pairs_are_drawn_in_proportion_to_counts():
    # with sgns and lr 0 nothing changes, and the loss of a pair depends only on which pair it is: use a
    # two-entry matrix whose pairs have distinct losses and recover the draw frequency from the mean loss
    d = 4
    W_in = np.zeros((3, d), np.float32)
    W_in[0] = 1.0
    W_out = np.zeros((3, d), np.float32)
    W_out[1] = 1.0                                    # pair (0, 1) scores 4, pair (0, 2) scores 0
    loss = registry.make_loss("full_softmax")
    trainer = PairTrainer(W_in, W_out, np.array([0, 0], np.int32), np.array([1, 2], np.int32),
                          AliasSampler([3.0, 1.0]), loss, None, 0, 1e-9, 1e-9, 1.0, 3)
    total, pairs, _ = trainer.train_chunk(40000, 0.0, 0, 2)
    s = np.array([0.0, 4.0, 0.0])
    l01 = -(4.0 - np.log(np.exp(s).sum()))
    l02 = -(0.0 - np.log(np.exp(s).sum()))
    share = (total / pairs - l02) / (l01 - l02)
    assert pairs == 40000
    assert share == pytest.approx(0.75, abs=0.01)


# ----------------------------------------------------------------------------- training

def test_planted_groups_are_recommended(planted_split):
    train, test = planted_split
    model = ItemEmbedding(vector_size=16, epochs=5, workers=2, seed=1, progress=False).fit(train)
    assert _group_precision(model) >= 0.85
    res = model.evaluate(test)
    assert res.mpr_approx > 0.8
    # the asymmetric preference is learnt: the item one step ahead beats the one behind
    ahead = [model.scores(i)[(i // GROUP) * GROUP + (i % GROUP + 1) % GROUP] for i in range(N_ITEMS)]
    behind = [model.scores(i)[(i // GROUP) * GROUP + (i % GROUP - 1) % GROUP] for i in range(N_ITEMS)]
    assert np.mean(np.array(ahead) > np.array(behind)) > 0.8


def test_random_tables_score_at_chance(planted_split):
    # the group-precision check is not vacuous: random tables score near chance (1/6)
    train, test = planted_split
    model = ItemEmbedding(vector_size=16, epochs=1, alpha=1e-9, min_alpha=0, progress=False, seed=1).fit(train)
    model.target_vectors[...] = np.random.default_rng(0).standard_normal(model.target_vectors.shape)
    assert _group_precision(model) < 0.35


@pytest.mark.parametrize("loss, sampler", pairings())
def test_every_loss_and_sampler_pairing_trains(planted_split, loss, sampler):
    train, _ = planted_split
    try:
        model = ItemEmbedding(vector_size=16, loss=loss, sampler=sampler, epochs=4, workers=2, seed=1,
                              progress=False).fit(train)
    except ValueError as exc:
        assert refused(exc)
        pytest.skip(str(exc))
    assert np.all(np.isfinite(model.context_vectors)) and np.all(np.isfinite(model.target_vectors))
    assert np.isfinite(model.last_report.epoch_loss[-1])
    if loss == "hs":     # no per-item output rows to rank by; the context vectors still work
        with pytest.raises(NotImplementedError, match="hs"):
            model.recommend(0)
        assert len(model.similar_items(0, N=3, space="context")[0]) == 3
        return
    if sampler == "topk":
        return     # soundness only (see the windows test)
    assert _group_precision(model) >= 0.6


def test_seeded_single_thread_runs_are_identical(planted_split):
    train, _ = planted_split
    a = ItemEmbedding(vector_size=8, epochs=2, workers=1, seed=4, progress=False).fit(train)
    b = ItemEmbedding(vector_size=8, epochs=2, workers=1, seed=4, progress=False).fit(train)
    assert np.array_equal(a.context_vectors, b.context_vectors)
    assert np.array_equal(a.target_vectors, b.target_vectors)
    c = ItemEmbedding(vector_size=8, epochs=2, workers=1, seed=5, progress=False).fit(train)
    assert not np.array_equal(a.context_vectors, c.context_vectors)


def test_threads_copy_the_most_counted_items_when_asked(planted_split, monkeypatch):
    from embkit.core.hot_rows import HOT_PENDING_STEPS, pair_hot_rows
    from embkit.items import item_embedding
    counts = np.array([5, 50, 1, 20, 7])
    assert list(pair_hot_rows(2, counts, 4)["ids"]) == [1, 3] and pair_hot_rows(2, counts, 4)["limit"] == \
        HOT_PENDING_STEPS // 4
    assert len(pair_hot_rows(99, counts, 2)["ids"]) == 5
    assert pair_hot_rows(2, counts, 1)["ids"] is None and pair_hot_rows(0, counts, 4)["ids"] is None
    assert pair_hot_rows(None, counts, 4)["ids"] is None                   # the default: the threads share
    taken = []

    def spy(setting, counts, workers):
        taken.append(pair_hot_rows(setting, counts, workers)["ids"])
        return pair_hot_rows(setting, counts, workers)
    monkeypatch.setattr(item_embedding, "pair_hot_rows", spy)
    train, _ = planted_split
    model = ItemEmbedding(vector_size=16, epochs=5, workers=3, seed=1, hot_rows=12, progress=False).fit(train)
    assert taken and len(taken[0]) == 12
    assert set(taken[0]) == set(np.argsort(-model.counts, kind="stable")[:12])
    assert _group_precision(model) >= 0.85                                  # the copies keep the model
    one = [ItemEmbedding(vector_size=8, epochs=2, workers=1, seed=4, hot_rows=h, progress=False).fit(train)
           for h in (None, 12)]
    assert np.array_equal(one[0].target_vectors, one[1].target_vectors)    # one worker keeps no copies


def test_report_counts_pairs_per_epoch(planted_split):
    train, _ = planted_split
    model = ItemEmbedding(vector_size=8, epochs=3, progress=False, chunk_pairs=1000).fit(train)
    report = model.last_report
    assert report.words == 3 * int(train.sum())
    assert len(report.epoch_seconds) == 3 and all(t > 0 for t in report.epoch_seconds)


def test_validation_history_and_early_stopping(planted_split):
    train, test = planted_split
    model = ItemEmbedding(vector_size=8, epochs=6, alpha=0.05, progress=False)
    model.fit(train, validation=test, metric="mpr_approx", patience=1, keep="best")
    assert 1 <= len(model.history) <= 6
    assert [row["epoch"] for row in model.history] == list(range(1, len(model.history) + 1))
    best = max(model.history, key=lambda r: r["mpr_approx"])
    assert model.best_epoch == best["epoch"]
    # the kept tables are the best epoch's: evaluating them again gives its score
    assert model.evaluate(test).mpr_approx == pytest.approx(best["mpr_approx"], abs=1e-9)


def test_the_kept_tables_are_the_mean_from_the_best_epoch_on(planted_split):
    train, test = planted_split

    class Tables:                       # any object with gensim's callback methods
        def __init__(self):
            self.seen = []

        def on_epoch_end(self, model):
            self.seen.append((model.W_in.copy(), model.W_out.copy()))

    tables = Tables()
    # a constant, large step: the validation score moves up and down, so an epoch before the last is best
    model = ItemEmbedding(vector_size=8, epochs=5, alpha=0.3, min_alpha=0.3, workers=1, progress=False,
                          callbacks=[tables], count_weight=0)
    model.fit(train, validation=test, metric="prec5")
    best = model.best_epoch
    assert len(tables.seen) == 5 and best is not None and best < 5
    kept = tables.seen[best - 1:]
    np.testing.assert_allclose(model.W_in, np.mean([t[0] for t in kept], axis=0), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(model.W_out, np.mean([t[1] for t in kept], axis=0), rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="keep must be one of average, best"):
        ItemEmbedding(vector_size=8, epochs=1, progress=False).fit(train, validation=test, keep="last")


def test_best_epoch_averages_the_epochs_after_the_best():
    from types import SimpleNamespace
    from embkit.core.validation import BestEpoch
    model = SimpleNamespace(W_in=np.zeros((2, 3), np.float32), W_out=np.zeros((2, 3), np.float32))
    scores = iter([0.1, 0.5, 0.4, 0.7, 0.6, 0.65])
    tracker = BestEpoch(model, lambda epoch, report: {"m": next(scores)}, "m", keep="average")
    for epoch in range(6):
        model.W_in[...] = epoch
        model.W_out[...] = 10 * epoch
        tracker(epoch, None)
    assert tracker.best_epoch == 4
    state = tracker.get_state()
    again = BestEpoch(model, None, "m", keep="average")
    again.set_state(state)
    tracker.restore()
    np.testing.assert_allclose(model.W_in, np.mean([3, 4, 5]))        # epochs 4, 5, 6 (W_in 3, 4, 5)
    np.testing.assert_allclose(model.W_out, np.mean([30, 40, 50]))
    model.W_in[...] = model.W_out[...] = -1
    again.restore()                     # a checkpoint's state restores the same mean
    np.testing.assert_allclose(model.W_in, 4.0)


# ----------------------------------------------------------------------------- API

def test_inputs_array_and_names(planted_split):
    train, _ = planted_split
    coo = train.tocoo()
    rows = np.column_stack([coo.row, coo.col, coo.data])
    names = ["item%d" % i for i in range(N_ITEMS)]
    model = ItemEmbedding(vector_size=8, epochs=2, progress=False).fit(rows, items=names)
    assert model.items == names
    similar, cosines = model.similar_items("item3", N=3)
    assert len(similar) == 3 and set(similar) <= set(names) - {"item3"} and np.all(np.diff(cosines) <= 0)
    assert model.wv.vectors.shape == (N_ITEMS, 8)
    top, scores = model.recommend("item3", N=4, exclude=["item4"])
    assert len(top) == 4 and not {"item3", "item4"} & set(top) and np.all(np.diff(scores) <= 0)


def test_save_load_round_trip(planted_split, tmp_path):
    train, test = planted_split
    model = ItemEmbedding(vector_size=8, epochs=1, loss="relaxed_softmax", sampler="uniform",
                          progress=False).fit(train)
    path = tmp_path / "items.embkit"
    model.save(path)
    again = ItemEmbedding.load(path)
    assert np.array_equal(again.context_vectors, model.context_vectors)
    assert again.items == model.items and again.loss == "relaxed_softmax"
    assert again.evaluate(test).mpr == model.evaluate(test).mpr


# ----------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("pairs, message", [
    (sp.csr_matrix((3, 4)), "square"),
    (sp.csr_matrix((4, 4)), "no pairs"),
    (sp.csr_matrix(np.array([[0, -1], [1, 0]])), ">= 0"),
    (np.array([[0, 1, 2, 3]]), "(n, 2) or (n, 3)"),
    (np.array([[0, -1]]), ">= 0"),
])
def test_bad_pairs_are_refused(pairs, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        ItemEmbedding(progress=False).fit(pairs)


def test_unknown_items_and_out_of_range_pairs(planted_split):
    train, _ = planted_split
    model = ItemEmbedding(vector_size=8, epochs=1, progress=False).fit(train)
    with pytest.raises(KeyError, match="unknown item 'nope'"):
        model.recommend("nope")
    with pytest.raises(KeyError, match="unknown item %d" % (N_ITEMS + 3)):
        model.similar_items(N_ITEMS + 3)
    with pytest.raises(KeyError, match="unknown item %d" % (N_ITEMS + 1)):
        model.evaluate(np.array([[0, N_ITEMS + 1]]))
    with pytest.raises(ValueError, match="items"):
        model.evaluate(sp.csr_matrix(([1.0], ([0], [N_ITEMS])), shape=(N_ITEMS + 1, N_ITEMS + 1)))


@pytest.mark.parametrize("kwargs, message", [
    (dict(vector_size=0), "vector_size"), (dict(alpha=-1.0), "alpha"), (dict(loss="nope"), "unknown loss"),
    (dict(sampler="nope"), "unknown sampler"), (dict(loss="full_softmax", sampler="uniform"), "no negatives"),
    (dict(negative=0), "negative"), (dict(epochs=0), "epochs"), (dict(hot_rows=-1), "hot_rows"),
])
def test_bad_parameters_name_themselves(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ItemEmbedding(**kwargs)


def test_unfitted_model_says_so():
    with pytest.raises(RuntimeError, match="fit"):
        ItemEmbedding().recommend(0)
