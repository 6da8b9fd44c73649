"""gensim's own examples with only the import changed: every example in the docstrings of the installed
``gensim.models.word2vec`` (except those that download pretrained vectors) runs against embkit's
``Word2Vec``/``LineSentence``/``PathLineSentences`` and prints what gensim's docstring says it prints; and
further gensim idioms (unpacking ``train``, training on unknown words, joblib, process pools) run unchanged."""
import doctest
import multiprocessing
import re

import numpy as np
import pytest

import embkit

gensim_word2vec = pytest.importorskip("gensim.models.word2vec")

#: the names a gensim user imports from gensim, and embkit's class of the same name
REPLACED = ("Word2Vec", "LineSentence", "PathLineSentences")
_IMPORT = re.compile(r"from gensim\.models(?:\.word2vec)? import (%s)\b" % "|".join(REPLACED))


class _GensimOutput(doctest.OutputChecker):
    """gensim's expected output, except that an example gensim shows printing nothing may print the model
    itself: embkit's ``build_vocab`` returns the model (for chaining) where gensim's returns None."""

    def check_output(self, want, got, optionflags):
        if not want and got.startswith("Word2Vec<"):
            return True
        return super().check_output(want, got, optionflags)


def _docstring_tests():
    finder = doctest.DocTestFinder(exclude_empty=True)
    return sorted((t for t in finder.find(gensim_word2vec) if t.examples), key=lambda t: t.name)


@pytest.mark.parametrize("test", _docstring_tests(), ids=lambda t: t.name)
def test_gensim_docstring_examples_run_on_embkit(test, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)   # the examples save files to the working directory
    source = _IMPORT.sub(lambda m: "from embkit import %s" % m.group(1), test.docstring)
    globs = dict(vars(gensim_word2vec), **{name: getattr(embkit, name) for name in REPLACED})
    parsed = doctest.DocTestParser().get_doctest(source, globs, test.name, None, 0)
    downloads = [e for e in parsed.examples if "gensim.downloader" in e.source or "glove_vectors" in e.source]
    parsed.examples = [e for e in parsed.examples if e not in downloads]
    assert globs["Word2Vec"] is embkit.Word2Vec
    runner = doctest.DocTestRunner(checker=_GensimOutput(), optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    failures = []
    runner.run(parsed, out=failures.append)
    assert runner.failures == 0, "".join(failures)
    assert runner.tries == len(parsed.examples) > 0


def test_the_docstrings_train_embkit_models():
    names = {t.name for t in _docstring_tests()}
    assert {"gensim.models.word2vec", "gensim.models.word2vec.Word2Vec.train"} <= names


# ----------------------------------------------------------------------------- further idioms
SENTENCES = [["human", "interface", "computer"], ["survey", "user", "computer", "system", "response", "time"],
             ["eps", "user", "interface", "system"], ["system", "human", "system", "eps"],
             ["user", "response", "time"], ["trees"], ["graph", "trees"], ["graph", "minors", "trees"],
             ["graph", "minors", "survey"]] * 20


def _model():
    return embkit.Word2Vec(SENTENCES, vector_size=16, min_count=1, epochs=2, workers=1, seed=3)


def test_train_unpacks_as_gensims():
    model = _model()
    effective, raw = model.train(SENTENCES, total_examples=len(SENTENCES), epochs=1)
    assert raw == sum(map(len, SENTENCES)) and 0 < effective <= raw
    assert model.last_report is not None


def test_training_on_unknown_words_trains_nothing():
    model = _model()
    before = model.wv.vectors.copy()
    assert model.train([["hello", "world"]], total_examples=1, epochs=1) == (0, 2)
    np.testing.assert_array_equal(model.wv.vectors, before)


def _similarity(model):
    return float(model.wv.similarity("human", "computer"))


def test_joblib_dumps_loads_and_ships_models(tmp_path):
    joblib = pytest.importorskip("joblib")
    model = _model()
    path = str(tmp_path / "model.joblib")
    joblib.dump(model, path)
    loaded = joblib.load(path)
    np.testing.assert_array_equal(loaded.wv.vectors, model.wv.vectors)
    loaded.train(SENTENCES, total_examples=len(SENTENCES), epochs=1)
    shipped = joblib.Parallel(n_jobs=2, backend="loky")(joblib.delayed(_similarity)(model) for _ in range(2))
    assert shipped == [_similarity(model)] * 2


def test_a_process_pool_receives_models():
    model = _model()
    context = multiprocessing.get_context("spawn")
    with context.Pool(2) as pool:
        assert pool.map(_similarity, [model, model]) == [_similarity(model)] * 2
