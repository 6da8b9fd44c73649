"""Vocabulary counting and subsampling, encoding, and the corpus readers, on real files in tmp_path."""
import bz2
import gzip
import itertools
import os
import pathlib
from collections import Counter

import numpy as np
import pytest

from embkit.text.corpus import BLOCK_CHARS, IterableCorpus, TextCorpus, as_corpus, list_files
from embkit.text.vocab import Vocab, encode_chunks

# counts of the conftest ENGLISH corpus, worked out by hand: 72 tokens, 33 distinct words
ENGLISH_ORDER = (
    ["the", "cat"]                                    # 16, 5
    + ["on", "mat", "and", "dog", "a"]               # 4 each, in first-seen order
    + ["sat", "rug", "is", "park", "bird"]           # 2 each
    + ["are", "friends", "but", "likes", "red", "blue", "sunday", "ran", "to", "with", "ball", "did",
       "not", "run", "because", "was", "asleep", "sang", "in", "barked", "at"]   # 1 each
)
ENGLISH_COUNTS = [16, 5] + [4] * 5 + [2] * 5 + [1] * 21


# ----------------------------------------------------------------------------- counting

def test_exact_counts_and_order_from_file(english_file, english_text):
    vocab = Vocab.build(TextCorpus(english_file), min_count=1)
    assert vocab.index_to_key == ENGLISH_ORDER
    assert vocab.counts.tolist() == ENGLISH_COUNTS
    assert vocab.counts.dtype == np.int64
    assert vocab.raw_words == 72 == len(english_text.split())
    assert vocab.total_words == 72
    assert len(vocab) == 33
    assert all(vocab.key_to_index[w] == i for i, w in enumerate(vocab.index_to_key))
    # an independent count agrees word by word
    assert dict(zip(vocab.index_to_key, vocab.counts.tolist())) == Counter(english_text.split())


def test_counts_identical_from_list_and_file(english_file, english_sentences):
    from_file = Vocab.build(TextCorpus(english_file), min_count=1)
    from_list = Vocab.build(IterableCorpus(english_sentences), min_count=1)
    assert from_file.index_to_key == from_list.index_to_key
    assert np.array_equal(from_file.counts, from_list.counts)
    assert from_list.sentences == len(english_sentences)


def test_ties_keep_first_seen_order():
    sentences = [["z", "y", "x"], ["x", "w", "y"], ["v", "z"]]
    vocab = Vocab.build(IterableCorpus(sentences), min_count=1)
    # z, y, x twice (first seen in that order), then w, v once
    assert vocab.index_to_key == ["z", "y", "x", "w", "v"]
    assert vocab.counts.tolist() == [2, 2, 2, 1, 1]


def test_min_count(english_file):
    vocab = Vocab.build(TextCorpus(english_file), min_count=4)
    assert vocab.index_to_key == ["the", "cat", "on", "mat", "and", "dog", "a"]
    assert vocab.total_words == 16 + 5 + 4 * 5
    assert vocab.raw_words == 72           # dropped words still count as corpus tokens
    vocab = Vocab.build(TextCorpus(english_file), min_count=5)
    assert vocab.index_to_key == ["the", "cat"]


def test_max_vocab_size_prunes_like_word2vec():
    # worked by hand: pruning (after a sentence) drops counts <= min_reduce, then min_reduce grows
    sentences = [
        ["a", "a", "b"],   # {a:2, b:1}
        ["c"],             # {a:2, b:1, c:1} > 2 words: drop counts <= 1 -> {a:2}; min_reduce 2
        ["b", "b", "b"],   # {a:2, b:3}
        ["d"],             # {a:2, b:3, d:1} > 2: drop counts <= 2 -> {b:3}; min_reduce 3
        ["a"],             # {b:3, a:1}
    ]
    vocab = Vocab.build(IterableCorpus(sentences), min_count=1, max_vocab_size=2)
    assert vocab.index_to_key == ["b", "a"]
    assert vocab.counts.tolist() == [3, 1]
    assert vocab.raw_words == 9
    # without the bound every word survives
    full = Vocab.build(IterableCorpus(sentences), min_count=1)
    assert dict(zip(full.index_to_key, full.counts.tolist())) == {"a": 3, "b": 4, "c": 1, "d": 1}


def test_max_vocab_size_bounds_words_held(english_sentences):
    # many distinct rare words: the bound holds and surviving counts never exceed the true ones
    sentences = [s + ["rare%d" % i] for i, s in enumerate(english_sentences * 20)]
    true = Counter(itertools.chain.from_iterable(sentences))
    vocab = Vocab.build(IterableCorpus(sentences), min_count=1, max_vocab_size=40)
    assert len(vocab) <= 40
    assert vocab.raw_words == sum(true.values())
    for word, count in zip(vocab.index_to_key, vocab.counts):
        assert count <= true[word]
    assert vocab.index_to_key[0] == "the"


def test_max_final_vocab(english_file):
    # counts 16, 5, 4 x5, 2 x5, 1 x21
    def words(n):
        return Vocab.build(TextCorpus(english_file), min_count=1, max_final_vocab=n).index_to_key

    assert words(2) == ["the", "cat"]
    assert words(7) == ENGLISH_ORDER[:7]
    # the 4s tie at the limit: the threshold rises above them (gensim's rule), so fewer words are kept
    assert words(5) == ["the", "cat"]
    assert words(12) == ENGLISH_ORDER[:12]
    assert words(1000) == ENGLISH_ORDER
    # min_count still applies when it is the stronger limit
    vocab = Vocab.build(TextCorpus(english_file), min_count=5, max_final_vocab=12)
    assert vocab.index_to_key == ["the", "cat"]


def test_max_final_vocab_matches_gensim(english_sentences):
    from gensim.models import Word2Vec as GensimWord2Vec
    sentences = english_sentences * 3
    for limit in (3, 7, 12):
        vocab = Vocab.build(IterableCorpus(sentences), min_count=1, max_final_vocab=limit)
        g = GensimWord2Vec(min_count=1, max_final_vocab=limit, vector_size=4)
        g.build_vocab(sentences)
        assert set(vocab.index_to_key) == set(g.wv.index_to_key)


# ----------------------------------------------------------------------------- subsampling

def _formula(counts, sample):
    f = counts / counts.sum()
    return np.minimum((np.sqrt(f / sample) + 1.0) * sample / f, 1.0)


@pytest.mark.parametrize("sample", [1e-1, 2e-2, 1e-2, 1e-3])
def test_keep_probabilities_follow_formula(english_file, sample):
    vocab = Vocab.build(TextCorpus(english_file), min_count=1)
    keep = vocab.keep_probabilities(sample)
    expected = _formula(vocab.counts.astype(np.float64), sample)
    if np.all(expected >= 1.0):
        assert keep is None
        return
    assert keep.dtype == np.float32 and keep.shape == (len(vocab),)
    np.testing.assert_allclose(keep, expected, rtol=1e-6)
    assert np.all(keep <= 1.0) and np.all(keep > 0)
    assert np.all(np.diff(keep) >= 0)       # rarer words are kept at least as often


def test_keep_probabilities_worked_example(english_file):
    vocab = Vocab.build(TextCorpus(english_file), min_count=1)
    keep = vocab.keep_probabilities(0.01)
    # "the": f = 16/72, sample 0.01 -> (sqrt(f/0.01) + 1) * 0.01 / f
    f = 16 / 72
    assert keep[0] == pytest.approx((np.sqrt(f / 0.01) + 1) * 0.01 / f, rel=1e-6)
    assert keep[0] == pytest.approx(0.2572, abs=1e-4)
    assert keep[-1] == 1.0                   # count 1: formula above 1, capped


def test_keep_probabilities_disabled_or_invalid(english_file):
    vocab = Vocab.build(TextCorpus(english_file), min_count=1)
    assert vocab.keep_probabilities(0) is None
    assert vocab.keep_probabilities(10.0) is None   # nothing frequent enough to drop
    with pytest.raises(ValueError, match="sample"):
        vocab.keep_probabilities(-1e-3)


def _gensim_keep(sentences, min_count, sample, words):
    from gensim.models import Word2Vec as GensimWord2Vec
    g = GensimWord2Vec(min_count=min_count, sample=sample, vector_size=4)
    g.build_vocab(sentences)
    assert set(g.wv.index_to_key) == set(words)
    return np.array([g.wv.get_vecattr(w, "sample_int") / 2.0 ** 32 for w in words]), g


@pytest.mark.parametrize("sample", [5e-2, 1e-2])
def test_keep_probabilities_equal_gensim(english_sentences, sample):
    vocab = Vocab.build(IterableCorpus(english_sentences), min_count=1)
    gensim_keep, g = _gensim_keep(english_sentences, 1, sample, vocab.index_to_key)
    keep = vocab.keep_probabilities(sample)
    keep = np.ones(len(vocab)) if keep is None else keep
    assert np.any(gensim_keep < 1)
    np.testing.assert_allclose(keep, gensim_keep, rtol=1e-6, atol=1e-7)
    assert [g.wv.get_vecattr(w, "count") for w in vocab.index_to_key] == vocab.counts.tolist()


@pytest.mark.parametrize("sample", [1e-3, 1e-4])
def test_keep_probabilities_equal_gensim_on_wikipedia(shared_data, sample):
    path = os.path.join(shared_data, "corpora", "enwiki-sample.txt.gz")
    if not os.path.exists(path):
        pytest.skip("enwiki-sample.txt.gz not in the shared data")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        sentences = [line.split() for line in itertools.islice(fh, 10)]
    vocab = Vocab.build(IterableCorpus(sentences), min_count=2)
    gensim_keep, g = _gensim_keep(sentences, 2, sample, vocab.index_to_key)
    keep = vocab.keep_probabilities(sample)
    assert np.sum(gensim_keep < 1) > 10
    np.testing.assert_allclose(keep, gensim_keep, rtol=1e-6, atol=1e-7)
    assert [g.wv.get_vecattr(w, "count") for w in vocab.index_to_key] == vocab.counts.tolist()


# ----------------------------------------------------------------------------- encoding

def test_encode_chunks_drops_unknown_words_and_empty_sentences():
    key_to_index = {"a": 0, "b": 1, "c": 2}
    sentences = [["a", "x", "b"], ["y", "z"], [], ["c", "c"], ["b"]]
    chunks = list(encode_chunks(sentences, key_to_index, chunk_tokens=3))
    tokens = np.concatenate([c.tokens for c in chunks])
    assert tokens.tolist() == [0, 1, 2, 2, 1]
    assert sum(c.raw_units for c in chunks) == 8
    for chunk in chunks:
        assert chunk.tokens.dtype == np.int32 and chunk.ends.dtype == np.int32
        assert chunk.ends[-1] == len(chunk)
    # sentence boundaries survive: [a b] [c c] | [b]
    assert [c.ends.tolist() for c in chunks] == [[2, 4], [1]]


def test_encode_chunks_bounded_size(english_sentences):
    vocab = Vocab.build(IterableCorpus(english_sentences), min_count=2)
    chunks = list(vocab.encode(IterableCorpus(english_sentences * 10), chunk_tokens=50))
    assert len(chunks) > 3
    longest = max(len(s) for s in english_sentences)
    assert all(len(c) < 50 + longest for c in chunks)
    assert sum(len(c) for c in chunks) == 10 * vocab.total_words
    assert sum(c.raw_units for c in chunks) == 10 * vocab.raw_words


# ----------------------------------------------------------------------------- corpus readers

LINES = ["first sentence here", "", "  second\tsentence  with  tabs ", "third"]
EXPECTED = [["first", "sentence", "here"], ["second", "sentence", "with", "tabs"], ["third"]]


def test_text_file_one_sentence_per_line(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("\n".join(LINES), encoding="utf-8")      # no final newline
    corpus = TextCorpus(str(path))
    assert list(corpus) == EXPECTED
    assert list(corpus) == EXPECTED                            # restartable
    assert corpus.stats.replaced_chars == 0
    # CRLF line ends are the same sentences
    crlf = tmp_path / "crlf.txt"
    crlf.write_bytes(("\r\n".join(LINES) + "\r\n").encode())
    assert list(TextCorpus(str(crlf))) == EXPECTED


def test_pathlib_and_str_paths(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("a b\n", encoding="utf-8")
    assert list(as_corpus(path)) == [["a", "b"]]
    assert list(as_corpus(str(path))) == [["a", "b"]]
    assert list(as_corpus(corpus_file=pathlib.Path(path))) == [["a", "b"]]
    assert isinstance(as_corpus(path), TextCorpus)


@pytest.mark.parametrize("suffix, opener", [(".gz", gzip.open), (".bz2", bz2.open)])
def test_compressed_files(tmp_path, suffix, opener, english_text, english_sentences):
    path = tmp_path / ("english.txt" + suffix)
    with opener(path, "wt", encoding="utf-8") as fh:
        fh.write(english_text)
    assert list(TextCorpus(str(path))) == english_sentences
    vocab = Vocab.build(TextCorpus(str(path)), min_count=1)
    assert vocab.index_to_key == ENGLISH_ORDER and vocab.counts.tolist() == ENGLISH_COUNTS


def test_directory_sorted_and_hidden_files_skipped(tmp_path):
    d = tmp_path / "corpus"
    d.mkdir()
    (d / "b.txt").write_text("bee one\nbee two\n")
    (d / "a.txt").write_text("ay one\n")
    (d / "c.txt.gz").write_bytes(gzip.compress(b"sea one\n"))
    (d / ".hidden").write_text("hidden words\n")
    (d / "sub").mkdir()
    (d / "sub" / "inner.txt").write_text("inner words\n")
    corpus = TextCorpus(str(d))
    assert [os.path.basename(f) for f in corpus.files] == ["a.txt", "b.txt", "c.txt.gz"]
    assert list(corpus) == [["ay", "one"], ["bee", "one"], ["bee", "two"], ["sea", "one"]]
    assert corpus.stats.files == corpus.files


def test_directory_files_without_final_newline_stay_separate(tmp_path):
    # a file that ends inside a line (trailing blank, no newline) must not run on into the next file
    d = tmp_path / "corpus"
    d.mkdir()
    (d / "1.txt").write_text("x y z ")
    (d / "2.txt").write_text("p q\nr s")
    (d / "3.txt").write_text("t u")
    assert list(TextCorpus(str(d))) == [["x", "y", "z"], ["p", "q"], ["r", "s"], ["t", "u"]]


def test_empty_directory_is_an_error(tmp_path):
    d = tmp_path / "empty"
    d.mkdir()
    (d / ".only-hidden").write_text("x\n")
    with pytest.raises(ValueError, match="no files"):
        TextCorpus(str(d))


def _long_line_tokens(n_chars, seed=0):
    """Tokens of 1 to 12 letters whose joined length exceeds ``n_chars`` (so blocks cut inside tokens)."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words = ["".join(letters[rng.integers(0, 26, rng.integers(1, 13))]) for _ in range(3000)]
    lengths = np.array([len(w) + 1 for w in words])
    ids = rng.integers(0, len(words), int(n_chars / lengths.mean() * 1.2) + 10)
    n = int(np.searchsorted(np.cumsum(lengths[ids]), n_chars, side="right")) + 1
    assert n <= ids.size
    return [words[i] for i in ids[:n]]


def test_text8_style_single_line_split_without_losing_tokens(tmp_path):
    tokens = _long_line_tokens(int(2.5 * BLOCK_CHARS))
    path = tmp_path / "text8"
    path.write_text(" " + " ".join(tokens))                   # text8 starts with a blank, has no newline
    limit = 1000
    pieces = list(TextCorpus(str(path), max_sentence_length=limit))
    assert list(itertools.chain.from_iterable(pieces)) == tokens
    assert all(len(p) == limit for p in pieces[:-1])          # consecutive full pieces...
    assert 1 <= len(pieces[-1]) <= limit                      # ...then the remainder
    assert len(pieces) == -(-len(tokens) // limit)
    # counting sees the same tokens
    vocab = Vocab.build(TextCorpus(str(path)), min_count=1)
    assert vocab.raw_words == len(tokens)
    assert dict(zip(vocab.index_to_key, vocab.counts.tolist())) == Counter(tokens)


def test_long_line_followed_by_short_lines(tmp_path):
    # a > 1 MiB line, then ordinary lines, then another long line: boundaries and tokens all preserved
    long1 = _long_line_tokens(BLOCK_CHARS + 12345, seed=1)
    long2 = _long_line_tokens(BLOCK_CHARS // 2, seed=2)
    lines = [long1, ["short", "one"], [], ["short", "two"], long2, ["end"]]
    path = tmp_path / "mixed.txt"
    path.write_text("\n".join(" ".join(line) for line in lines) + "\n")
    limit = 777
    expected = []
    for line in lines:
        expected.extend(line[s:s + limit] for s in range(0, len(line), limit))
    assert list(TextCorpus(str(path), max_sentence_length=limit)) == expected


def test_block_boundary_on_a_blank(tmp_path):
    # tokens of 7 letters + a blank: a block of BLOCK_CHARS (a multiple of 8) ends exactly on a blank,
    # so the carried remainder is empty; then the file itself ends on a blank without a newline
    n = 2 * BLOCK_CHARS // 8
    assert BLOCK_CHARS % 8 == 0
    tokens = ["w%06d" % (i % 5000) for i in range(n)]
    path = tmp_path / "edge.txt"
    path.write_text("".join(t + " " for t in tokens))
    assert os.path.getsize(path) == 2 * BLOCK_CHARS
    limit = 3000
    pieces = list(TextCorpus(str(path), max_sentence_length=limit))
    assert list(itertools.chain.from_iterable(pieces)) == tokens
    assert all(len(p) == limit for p in pieces[:-1])
    # the same file in a directory, followed by another: its last piece stays its own sentence
    d = tmp_path / "dir"
    d.mkdir()
    os.replace(path, d / "1.txt")
    (d / "2.txt").write_text("next file\n")
    pieces = list(TextCorpus(str(d), max_sentence_length=limit))
    assert pieces[-1] == ["next", "file"]
    assert list(itertools.chain.from_iterable(pieces[:-1])) == tokens


def test_sentences_from_python_list():
    sentences = [["a", "b"], ("c", "d", "e"), [], ["f"] * 7]
    corpus = IterableCorpus(sentences, max_sentence_length=3)
    out = list(corpus)
    assert out == [["a", "b"], ["c", "d", "e"], [], ["f"] * 3, ["f"] * 3, ["f"]]
    assert list(corpus) == out
    assert as_corpus(sentences) is not None and isinstance(as_corpus(sentences), IterableCorpus)
    vocab = Vocab.build(IterableCorpus(sentences), min_count=1)
    assert vocab.raw_words == 12 and vocab.index_to_key[0] == "f"


def test_iterable_corpus_rejects_generators_and_strings():
    with pytest.raises(TypeError, match="restartable"):
        IterableCorpus(s.split() for s in ["a b", "c"])
    with pytest.raises(TypeError, match="restartable"):
        IterableCorpus(iter([["a"]]))
    with pytest.raises(TypeError, match="sentence 1 is a str"):
        list(IterableCorpus([["a"], "b c"]))
    with pytest.raises(TypeError, match="bytes"):
        list(IterableCorpus([b"a b"]))


def test_as_corpus_needs_exactly_one_source(tmp_path):
    with pytest.raises(ValueError, match="exactly one"):
        as_corpus()
    with pytest.raises(ValueError, match="exactly one"):
        as_corpus([["a"]], corpus_file=str(tmp_path))


def test_invalid_utf8_replaced_and_counted(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"caf\xe9 ok\nbad \xff\xfe bytes \xc3\n")
    corpus = TextCorpus(str(path))
    sentences = list(corpus)
    assert corpus.stats.replaced_chars == 4
    assert sentences[0] == ["caf\ufffd", "ok"]
    assert len(sentences[1]) == 4 and sentences[1][0] == "bad"


def test_list_files(tmp_path):
    f = tmp_path / "x.txt"
    f.write_text("a\n")
    assert list_files(str(f)) == [str(f)]
    assert list_files("https://example.com/corpus.txt") == ["https://example.com/corpus.txt"]
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        list_files(str(tmp_path / "nope.txt"))
