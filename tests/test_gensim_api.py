"""embkit's side of the gensim drop-in: online training, gensim model files, trim rules, loss reporting and
the bad inputs of gensim's API (gensim's own test module runs in test_gensim_suite.py)."""
import pickle

import numpy as np
import pytest
from gensim.models import KeyedVectors
from gensim.models import Word2Vec as GensimWord2Vec
from gensim.test.utils import common_texts
from gensim.utils import RULE_DISCARD, RULE_KEEP

from embkit import Word2Vec
from embkit.text.gensim_models import GensimFileError

NEW = [["computer", "artificial", "intelligence"], ["artificial", "trees"], ["human", "intelligence"],
       ["artificial", "graph"], ["intelligence"], ["artificial", "intelligence", "system"]]
TINY = dict(vector_size=8, min_count=1, workers=1, seed=3, sample=0)


@pytest.mark.parametrize("hs, negative", [(0, 5), (1, 0), (1, 3)])
def test_online_update_grows_vocabulary_and_keeps_weights(hs, negative):
    model = Word2Vec(common_texts, hs=hs, negative=negative, **TINY)
    n, before = len(model.wv), model.wv.vectors.copy()
    counts = dict(zip(model.wv.index_to_key, model.wv.expandos["count"]))
    model.build_vocab(NEW, update=True)
    assert len(model.wv) == n + 2 and model.wv.index_to_key[n:] == ["artificial", "intelligence"]
    assert model.wv.get_vecattr("graph", "count") == counts["graph"] + 1
    assert np.array_equal(model.wv.vectors[:n], before)             # known words keep their vectors
    assert model.corpus_count == len(NEW)
    rows = {(1, 0): n + 2, (0, 5): n + 2, (1, 3): 2 * (n + 2)}[(hs, negative)]
    assert model.W_out.shape == (rows, 8)
    if hs:
        assert model.syn1.shape == (n + 2, 8)
    fresh = model.wv.vectors[n:].copy()
    model.train(NEW, total_examples=model.corpus_count, epochs=model.epochs)
    assert not np.array_equal(model.wv.vectors[n:], fresh)          # the new words train
    assert np.isfinite(model.wv.vectors).all() and model.last_report.words == model.epochs * sum(map(len, NEW))


def test_update_before_any_vocabulary_is_refused():
    with pytest.raises(RuntimeError, match="build vocabulary before an online vocabulary update"):
        Word2Vec(**TINY).build_vocab(NEW, update=True)
    with pytest.raises(RuntimeError, match="build vocabulary"):
        Word2Vec(**TINY).build_vocab_from_freq({"a": 2}, update=True)


def test_train_needs_gensim_totals_and_epochs_for_a_given_corpus():
    model = Word2Vec(**TINY)
    model.build_vocab(common_texts)
    with pytest.raises(ValueError, match="total_examples or total_words"):
        model.train(common_texts, epochs=1)
    with pytest.raises(ValueError, match="explicit epochs"):
        model.train(common_texts, total_examples=9)
    with pytest.raises(ValueError, match="total_words must be a finite number > 0"):
        model.train(common_texts, total_words=float("nan"), epochs=1)


@pytest.mark.parametrize("verdict", [True, 3, "keep", None])
def test_trim_rule_must_return_a_rule_constant(verdict):
    with pytest.raises(ValueError, match="trim_rule returned %s for the word" % repr(verdict).replace("(", r"\(")):
        Word2Vec(common_texts, trim_rule=lambda word, count, min_count: verdict, **TINY)


def test_trim_rule_keeps_and_discards_against_min_count():
    def rule(word, count, min_count):
        return RULE_KEEP if word == "minors" else RULE_DISCARD if word == "graph" else 0
    model = Word2Vec(common_texts + [["once"]], **dict(TINY, min_count=3), trim_rule=rule)
    assert "minors" in model.wv and "graph" not in model.wv and "once" not in model.wv
    assert "system" in model.wv


def test_latest_training_loss_is_the_latest_epochs_and_callbacks_see_it():
    seen = []

    class Watch:
        def on_epoch_end(self, model):
            seen.append(model.get_latest_training_loss())

    model = Word2Vec(common_texts * 20, epochs=4, callbacks=[Watch()], **TINY)
    assert len(seen) == 4 and seen == model.loss_history and isinstance(seen[-1], float)
    assert model.get_latest_training_loss() == model.last_report.epoch_loss[-1] > 0
    assert seen[0] > seen[-1]                        # per epoch, not a running total


def _gensim_model(tmp_path, **kw):
    g = GensimWord2Vec(common_texts * 10, vector_size=8, min_count=1, workers=1, seed=5, epochs=2, **kw)
    path = str(tmp_path / "gensim.model")
    g.save(path)
    return g, path


@pytest.mark.parametrize("kw", [dict(sg=1, hs=0, negative=5), dict(sg=0, hs=1, negative=0),
                                dict(sg=1, hs=1, negative=3)])
def test_gensim_model_loads_with_its_tables_and_trains_on(tmp_path, kw):
    g, path = _gensim_model(tmp_path, **kw)
    model = Word2Vec.load(path)
    assert model.wv.index_to_key == g.wv.index_to_key
    assert np.array_equal(model.wv.expandos["count"], g.wv.expandos["count"])
    assert np.array_equal(model.wv.vectors, g.wv.vectors)
    if g.negative:
        assert np.array_equal(model.syn1neg, g.syn1neg)
    if g.hs:
        assert np.array_equal(model.syn1, g.syn1)
        assert model.score([["human", "interface", "computer"]]).shape == (1,)
        # gensim reads log s(x) from a 1000-entry table indexed by truncation (a little lower than exact) and
        # skips |x| >= 6; embkit computes it exactly
        ours, theirs = model.score(common_texts[:3]), g.score(common_texts[:3])
        assert np.allclose(ours, theirs, rtol=0.05) and np.all(ours >= theirs - 1e-3)
    assert (model.sg, model.hs, model.negative, model.corpus_count) == (g.sg, g.hs, g.negative, g.corpus_count)
    model.train(common_texts, total_examples=len(common_texts), epochs=1)
    assert not np.array_equal(model.wv.vectors, g.wv.vectors)
    out = str(tmp_path / "converted.embkit")
    model.save(out)
    assert np.array_equal(Word2Vec.load(out).wv.vectors, model.wv.vectors)


def test_gensim_files_that_are_not_models_say_so(tmp_path):
    g, path = _gensim_model(tmp_path)
    with open(path, "rb") as fh:
        data = fh.read()
    cut = tmp_path / "cut.model"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(GensimFileError, match="cut.model.*gensim cannot read"):
        Word2Vec.load(str(cut))
    kv = str(tmp_path / "vectors.kv")
    g.wv.save(kv)
    with pytest.raises(GensimFileError, match="KeyedVectors.*load_vectors"):
        Word2Vec.load(kv)
    assert isinstance(KeyedVectors.load(kv), KeyedVectors)
    other = tmp_path / "other.pkl"
    other.write_bytes(pickle.dumps({"not": "a model"}, protocol=4))
    with pytest.raises(GensimFileError, match="other.pkl"):
        Word2Vec.load(str(other))


def test_load_is_called_on_the_class(tmp_path):
    model = Word2Vec(common_texts, **TINY)
    with pytest.raises(AttributeError, match="called on the class"):
        model.load(str(tmp_path / "x"))


def test_predict_output_word_and_gensim_shapes():
    model = Word2Vec(common_texts * 20, **TINY)
    top = model.predict_output_word(["system", "human"], topn=3)
    assert len(top) == 3 and abs(sum(p for _, p in model.predict_output_word(["system"], topn=12)) - 1) < 1e-6
    assert model.predict_output_word(["unknown"]) is None
    assert model.cum_table.shape == (len(model.wv),) and model.cum_table[-1] == 2 ** 31 - 1
    memory = model.estimate_memory()
    assert memory["vectors"] == 4 * 8 * len(model.wv) and memory["total"] == sum(
        v for k, v in memory.items() if k != "total")


def test_batch_words_keeps_small_chunks_on_one_thread():
    # gensim's batch_words: a chunk smaller than 2 x batch_words trains on one thread, so it is deterministic
    a = Word2Vec(common_texts * 5, **dict(TINY, workers=2))
    b = Word2Vec(common_texts * 5, **dict(TINY, workers=2))
    assert np.array_equal(a.wv.vectors, b.wv.vectors)
