"""Training end to end: reproducibility, threads, planted structure, reports, and the training API."""
import numpy as np
import pytest
from gensim.models import KeyedVectors

from embkit import ItemEmbedding, Word2Vec
from embkit.core import registry
from embkit.text.vocab import DegenerateCorpusError

from _cases import pairings, refused

SMALL = dict(vector_size=16, min_count=1, window=3, epochs=3, sample=0)
# with subsampling on (the planted words have frequency 0.02: each is kept with probability ~0.27)
SUBSAMPLED = dict(SMALL, sample=1e-3)


# ----------------------------------------------------------------------------- determinism

@pytest.mark.parametrize("sg", [1, 0], ids=["skip-gram", "cbow"])
def test_seeded_single_thread_runs_are_bit_identical(planted, sg):
    _, sentences = planted
    a = Word2Vec(sentences, sg=sg, workers=1, seed=7, **SUBSAMPLED)
    b = Word2Vec(sentences, sg=sg, workers=1, seed=7, **SUBSAMPLED)
    assert np.array_equal(a.wv.vectors, b.wv.vectors)
    assert np.array_equal(a.syn1neg, b.syn1neg)
    assert a.last_report.epoch_loss == b.last_report.epoch_loss
    c = Word2Vec(sentences, sg=sg, workers=1, seed=8, **SUBSAMPLED)
    assert not np.array_equal(a.wv.vectors, c.wv.vectors)
    assert np.all(np.isfinite(c.wv.vectors))


def test_seeded_runs_identical_from_file_and_list(planted, tmp_path):
    # the same sentences read from a file and from a list give the same model
    _, sentences = planted
    path = tmp_path / "planted.txt"
    path.write_text("\n".join(" ".join(s) for s in sentences) + "\n")
    a = Word2Vec(sentences, sg=1, workers=1, seed=3, **SUBSAMPLED)
    b = Word2Vec(corpus_file=str(path), sg=1, workers=1, seed=3, **SUBSAMPLED)
    assert a.wv.index_to_key == b.wv.index_to_key
    assert np.array_equal(a.wv.vectors, b.wv.vectors)


def test_initial_vectors_depend_on_seed_only(planted):
    _, sentences = planted
    a = Word2Vec(seed=5, **SMALL).build_vocab(sentences)
    b = Word2Vec(seed=5, workers=2, **SMALL).build_vocab(sentences)
    assert np.array_equal(a.wv.vectors, b.wv.vectors)
    assert not np.any(a.syn1neg)
    assert np.max(np.abs(a.wv.vectors)) <= 0.5 / SMALL["vector_size"]


# ----------------------------------------------------------------------------- threads

@pytest.mark.parametrize("sg", [1, 0], ids=["skip-gram", "cbow"])
def test_two_threads_no_nan_and_same_quality(planted, purity, sg):
    groups, sentences = planted
    one = Word2Vec(sentences, sg=sg, workers=1, seed=1, **SMALL)
    two = Word2Vec(sentences, sg=sg, workers=2, seed=1, **SMALL)
    for model in (one, two):
        assert np.all(np.isfinite(model.wv.vectors)) and np.all(np.isfinite(model.syn1neg))
        assert model.last_report.words == SMALL["epochs"] * model.vocab.total_words
    assert two.last_report.examples == pytest.approx(one.last_report.examples, rel=0.05)
    assert two.last_report.epoch_loss[-1] == pytest.approx(one.last_report.epoch_loss[-1], rel=0.1)
    p1, _ = purity(one.wv, groups)
    p2, _ = purity(two.wv, groups)
    assert p1 >= 0.9 and p2 >= 0.9
    assert abs(p1 - p2) <= 0.1


def test_more_threads_than_sentences():
    sentences = [["alpha", "beta", "gamma", "delta"] * 5]
    model = Word2Vec(sentences, vector_size=8, min_count=1, workers=4, epochs=2, window=2, negative=2)
    assert np.all(np.isfinite(model.wv.vectors))
    assert model.last_report.words == 2 * 20


# ----------------------------------------------------------------------------- planted structure

@pytest.mark.parametrize("sg, shared", [(1, False), (0, False), (1, True), (0, True)],
                         ids=["skip-gram", "cbow", "skip-gram-shared-neg", "cbow-shared-neg"])
def test_planted_topics_become_nearest_neighbours(planted, purity, sg, shared):
    groups, sentences = planted
    model = Word2Vec(sentences, sg=sg, shared_negatives=shared, workers=1, seed=2, **SMALL)
    mean, worst = purity(model.wv, groups)
    assert mean >= 0.9, "mean top-5 purity %.2f" % mean
    assert worst >= 0.6, "worst top-5 purity %.2f" % worst
    # the loss goes down over the epochs
    losses = model.last_report.epoch_loss
    assert losses[-1] < losses[0]


def test_planted_topics_cbow_sum(planted, purity):
    groups, sentences = planted
    model = Word2Vec(sentences, sg=0, cbow_mean=0, alpha=0.005, workers=1, seed=2, **SMALL)
    assert purity(model.wv, groups)[0] >= 0.9


@pytest.mark.parametrize("sampler", sorted(registry.SAMPLERS))
def test_every_sampler_trains(planted, purity, sampler):
    groups, sentences = planted
    model = Word2Vec(sentences, sg=1, sampler=sampler, workers=1, seed=2, **SMALL)
    assert np.all(np.isfinite(model.wv.vectors))
    assert purity(model.wv, groups)[0] >= 0.8


@pytest.mark.parametrize("loss, sampler", pairings())
@pytest.mark.parametrize("sg", [1, 0], ids=["sg", "cbow"])
def test_every_loss_and_sampler_pairing_trains(planted, purity, loss, sampler, sg):
    # any loss with any sampler in the windows driver: no NaN, and the planted topics are learnt
    groups, sentences = planted
    try:
        model = Word2Vec(sentences, sg=sg, loss=loss, sampler=sampler, workers=2, seed=2,
                         **dict(SMALL, epochs=5))
    except ValueError as exc:               # a pairing the registry refuses must say why
        assert refused(exc)
        pytest.skip(str(exc))
    assert np.all(np.isfinite(model.wv.vectors)) and np.all(np.isfinite(model.W_out))
    assert np.isfinite(model.last_report.epoch_loss[-1])
    if sampler == "topk":
        # only the hardest wrong classes as negatives: in a corpus of topics those are the topic's own
        # words, so they are pushed apart (the false-negative problem of hard negatives); no quality claim
        return
    assert purity(model.wv, groups)[0] >= 0.7


def test_untrained_model_has_no_structure(planted, purity):
    # the purity check is not vacuous: random initial vectors score near chance (9 of 49 are neighbours)
    groups, sentences = planted
    model = Word2Vec(seed=2, **SMALL).build_vocab(sentences)
    assert purity(model.wv, groups)[0] < 0.5


# ----------------------------------------------------------------------------- reports and the API

def test_training_report_counts(english_sentences):
    sentences = english_sentences * 5
    model = Word2Vec(sentences, vector_size=8, min_count=2, window=2, epochs=4, workers=1)
    report = model.last_report
    assert report.epochs == 4
    assert report.words == 4 * model.vocab.total_words
    assert report.raw_words == 4 * model.vocab.raw_words == 4 * 360
    assert report.examples > 0
    assert len(report.epoch_loss) == 4 and all(np.isfinite(report.epoch_loss))
    assert report.seconds >= 0


def test_keyed_vectors_interface(planted):
    _, sentences = planted
    model = Word2Vec(sentences, workers=1, **SMALL)
    wv = model.wv
    assert isinstance(wv, KeyedVectors)
    assert wv.vectors.dtype == np.float32 and wv.vectors.shape == (50, 16)
    assert wv.index_to_key == model.vocab.index_to_key
    assert [wv.get_vecattr(w, "count") for w in wv.index_to_key] == model.vocab.counts.tolist()
    assert wv.most_similar("t0w0", topn=3)[0][0] != "t0w0"
    assert "Word2Vec<" in repr(model)


def test_train_again_continues_from_current_vectors(planted):
    _, sentences = planted
    model = Word2Vec(sentences, workers=1, **SMALL)
    before = model.wv.vectors.copy()
    effective, raw = model.train(epochs=1)              # gensim's (effective words, raw words)
    report = model.last_report
    assert report.epochs == 1 and report.words == model.vocab.total_words
    assert (effective, raw) == (report.effective_words, report.raw_words) == (report.words, report.words)  # sample=0
    assert not np.array_equal(before, model.wv.vectors)
    # explicit schedule and a different corpus: its words are counted exactly
    model.train(corpus_iterable=sentences[:100] + [["unknown", "words"]], total_examples=101, epochs=2,
                start_alpha=0.01, end_alpha=0.001)
    report = model.last_report
    assert report.words == 2 * sum(len(s) for s in sentences[:100])
    assert report.raw_words == 2 * (sum(len(s) for s in sentences[:100]) + 2)


def test_a_corpus_without_a_known_word_trains_nothing_as_gensim(planted, caplog):
    _, sentences = planted
    model = Word2Vec(sentences, workers=1, **SMALL)
    before = model.wv.vectors.copy()
    with caplog.at_level("WARNING", logger="embkit"):
        assert model.train([["hello", "world"]], total_examples=1, epochs=1) == (0, 2)
        assert model.train([["hello", "world", "again"]], total_examples=1, epochs=2) == (0, 6)
    assert "no word of the vocabulary" in caplog.text
    np.testing.assert_array_equal(before, model.wv.vectors)


@pytest.mark.parametrize("source", ["iterable", "file"])
@pytest.mark.parametrize("corpus, reason", [([["a", "a", "a"]] * 10, "vocabulary has 1 word"),
                                            ([["a"], ["b"], ["c"]] * 10, "no sentence of the corpus has two")])
def test_a_degenerate_corpus_is_refused_with_the_reason(tmp_path, source, corpus, reason):
    kw = dict(vector_size=8, min_count=1, workers=1, epochs=2, progress=False)
    if source == "file":
        path = tmp_path / "corpus.txt"
        path.write_text("".join(" ".join(s) + "\n" for s in corpus))
        kw["corpus_file"] = str(path)
    else:
        kw["sentences"] = corpus
    with pytest.raises(DegenerateCorpusError, match=reason):
        Word2Vec(**kw)


def test_a_degenerate_new_corpus_is_refused_and_the_model_is_unchanged(planted):
    _, sentences = planted
    model = Word2Vec(sentences, workers=1, **SMALL)
    before = model.wv.vectors.copy()
    one_word_sentences = [[w] for s in sentences[:20] for w in s]
    with pytest.raises(DegenerateCorpusError, match="no sentence"):
        model.train(one_word_sentences, total_examples=len(one_word_sentences), epochs=1)
    with pytest.raises(DegenerateCorpusError, match="no sentence"):     # the vocabulary's corpus, encoded as it trains
        Word2Vec(one_word_sentences, workers=1, **SMALL)
    np.testing.assert_array_equal(before, model.wv.vectors)
    assert model.train(sentences[:20], total_examples=20, epochs=1)[0] > 0


def test_build_then_train_equals_constructor(planted):
    _, sentences = planted
    a = Word2Vec(sentences, workers=1, seed=4, **SMALL)
    b = Word2Vec(workers=1, seed=4, **SMALL)
    b.build_vocab(sentences)
    b.train()
    assert np.array_equal(a.wv.vectors, b.wv.vectors)


def test_train_before_build_vocab():
    with pytest.raises(RuntimeError, match="build_vocab"):
        Word2Vec(vector_size=8).train()


class _FailingCorpus:
    """A restartable corpus that can be told to fail part-way through a pass (a read error, Ctrl-C)."""

    def __init__(self, sentences):
        self.sentences = sentences
        self.fail_after = None

    def __iter__(self):
        for i, sentence in enumerate(self.sentences):
            if self.fail_after is not None and i >= self.fail_after:
                raise OSError("simulated read error")
            yield sentence


def test_train_after_an_interrupted_pass_trains_each_word_once_per_epoch(planted):
    # with bounded counting (max_vocab_size) the corpus is encoded during the first epoch; when that pass
    # is cut short, the next train() must not reuse the partial cache and then append the whole corpus to
    # it (epochs 2+ would see chunks twice)
    _, sentences = planted
    corpus = _FailingCorpus(sentences)
    model = Word2Vec(vector_size=8, min_count=1, workers=1, epochs=3, chunk_tokens=500, max_vocab_size=10**6)
    model.build_vocab(corpus)
    corpus.fail_after = len(sentences) // 2
    with pytest.raises(OSError, match="simulated"):
        model.train()
    corpus.fail_after = None
    model.train()
    report = model.last_report
    assert report.words == 3 * model.vocab.total_words
    assert report.raw_words == 3 * model.vocab.raw_words


def test_negative_larger_than_vocabulary():
    # random samplers draw with replacement (gensim trains such models); a deterministic choice cannot
    model = Word2Vec([["a", "b", "c"]] * 5, vector_size=4, min_count=1, negative=10, sample=0, workers=1)
    assert model.last_report.examples > 0 and np.isfinite(model.wv.vectors).all()
    with pytest.raises(ValueError, match="negative=10 exceeds"):
        Word2Vec([["a", "b", "c"]], vector_size=4, min_count=1, negative=10, sampler="topk")


def test_hs_selects_hierarchical_softmax(planted, purity):
    # gensim's switch: hs=1 with negative=0 is hierarchical softmax; its output table (syn1) has a row per
    # word as gensim's, the inner nodes of the Huffman tree and one unused
    groups, sentences = planted
    model = Word2Vec(sentences, sg=1, hs=1, negative=0, workers=1, seed=2, **SMALL)
    assert model.loss == "hs"
    assert model.syn1.shape == (len(model.wv), SMALL["vector_size"]) and not model.syn1[-1].any()
    with pytest.raises(AttributeError, match="no syn1neg"):
        model.syn1neg
    assert purity(model.wv, groups)[0] >= 0.8


def test_hs_with_negative_sampling_trains_both(planted, purity, caplog):
    # gensim's hs=1 with negative > 0: both objectives, with gensim's warning; syn1 and syn1neg are views
    groups, sentences = planted
    model = Word2Vec(sentences, sg=1, hs=1, negative=5, workers=1, seed=2, **SMALL)
    assert "Both hierarchical softmax and negative sampling are activated" in caplog.text
    assert model.loss == "hs_sgns"
    n, d = len(model.wv), SMALL["vector_size"]
    assert model.syn1neg.shape == model.syn1.shape == (n, d) and model.W_out.shape == (2 * n, d)
    assert np.shares_memory(model.syn1, model.W_out) and model.syn1neg.any() and model.syn1.any()
    assert purity(model.wv, groups)[0] >= 0.8
    with pytest.raises(ValueError, match="cannot"):
        ItemEmbedding(loss="hs_sgns")


def test_sampler_with_a_loss_that_draws_no_negatives_is_refused():
    with pytest.raises(ValueError, match="draws no negatives"):
        Word2Vec(vector_size=8, loss="full_softmax", sampler="unigram")


def test_one_pass_scan_matches_counting_and_encoding(planted):
    # build_vocab reads the corpus once (scan_corpus); it must give the vocabulary of the counting pass
    # and the chunks of encoding the corpus with that vocabulary
    from embkit.text.corpus import IterableCorpus
    from embkit.text.scan import scan_corpus
    from embkit.text.vocab import Vocab, encode_chunks

    _, sentences = planted
    sentences = sentences + [["unseen-rare"], []]
    corpus = IterableCorpus(sentences)
    vocab, cache = scan_corpus(corpus, min_count=2, chunk_tokens=700)
    reference = Vocab.build(corpus, min_count=2)
    assert vocab.index_to_key == reference.index_to_key
    assert np.array_equal(vocab.counts, reference.counts)
    assert vocab.raw_words == reference.raw_words
    got = list(cache)
    want = list(encode_chunks(corpus, reference.key_to_index, 700))
    assert np.array_equal(np.concatenate([c.tokens for c in got]), np.concatenate([c.tokens for c in want]))
    lengths = lambda chunks: np.concatenate([np.diff(np.concatenate([[0], c.ends])) for c in chunks])
    assert np.array_equal(lengths(got), lengths(want))
    assert sum(c.raw_units for c in got) == reference.raw_words


def test_effective_words_are_those_left_by_subsampling(planted):
    _, sentences = planted
    model = Word2Vec(sentences, workers=2, **dict(SMALL, sample=1e-3))
    effective, raw = model.train(epochs=1)
    keep = model.vocab.keep_probabilities(1e-3)
    expected = float((model.vocab.counts * keep).sum())
    assert raw == model.last_report.raw_words and effective < model.last_report.words
    assert abs(effective - expected) < 0.05 * expected
