"""Bad input: every way a user can get it wrong ends in a clear error (or, for damaged text, in a warning and
correct training), never in a crash, a hang, a silent wrong model or a destroyed file."""
import math
import os
import zipfile

import numpy as np
import pytest

from embkit import Word2Vec
from embkit.core import registry

TINY = dict(vector_size=8, min_count=1, window=2, epochs=1, workers=1)


@pytest.fixture(scope="module")
def sentences():
    rng = np.random.default_rng(1)
    words = ["w%d" % i for i in range(30)]
    return [[words[i] for i in rng.integers(0, 30, 8)] for _ in range(200)]


@pytest.fixture
def model(sentences):
    return Word2Vec(sentences, **TINY)


def _tmp_files(directory):
    return [n for n in os.listdir(directory) if n.startswith(".tmp-")]


# ----------------------------------------------------------------------------- empty corpora

def test_empty_file(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_bytes(b"")
    with pytest.raises(ValueError, match="empty"):
        Word2Vec(corpus_file=str(path), **TINY)


def test_blank_lines_only(tmp_path):
    path = tmp_path / "blank.txt"
    path.write_text("\n  \n\t\n\n")
    with pytest.raises(ValueError, match="empty"):
        Word2Vec(corpus_file=str(path), **TINY)


@pytest.mark.parametrize("sentences", [[], [[]], [[], []]], ids=["no-sentences", "one-empty", "two-empty"])
def test_empty_list(sentences):
    with pytest.raises(ValueError, match="empty"):
        Word2Vec(sentences, **TINY)


def test_nothing_left_after_min_count(tmp_path):
    path = tmp_path / "rare.txt"
    path.write_text("every word here is seen once\n")
    with pytest.raises(ValueError, match="min_count=5") as info:
        Word2Vec(corpus_file=str(path), vector_size=8, min_count=5)
    assert "lower min_count" in str(info.value)
    with pytest.raises(ValueError, match="min_count=3"):
        Word2Vec([["a", "b", "a"], ["b", "c"]], vector_size=8, min_count=3)


# ----------------------------------------------------------------------------- damaged and huge files

def test_invalid_utf8_is_replaced_counted_and_trained(tmp_path):
    rng = np.random.default_rng(0)
    lines = []
    for i in range(300):
        words = ["word%d" % j for j in rng.integers(0, 20, 8)]
        lines.append(" ".join(words).encode())
    lines[10] = b"caf\xe9 " + lines[10]                 # latin-1 byte
    lines[50] = lines[50] + b" \xff\xfe\xfd"             # garbage bytes
    lines[99] = b"trunc\xe2\x82 " + lines[99]            # truncated 3-byte sequence
    path = tmp_path / "damaged.txt"
    path.write_bytes(b"\n".join(lines) + b"\n")
    model = Word2Vec(corpus_file=str(path), **TINY)
    assert model.corpus.stats.replaced_chars >= 3
    assert "caf\ufffd" in model.wv.key_to_index
    assert model.wv.get_vecattr("caf\ufffd", "count") == 1
    assert model.vocab.raw_words == 300 * 8 + 3
    assert model.last_report.words == model.vocab.total_words
    assert np.all(np.isfinite(model.wv.vectors))


def test_one_million_tokens_on_a_single_line(tmp_path):
    rng = np.random.default_rng(0)
    n = 1_000_000
    words = np.array(["w%d" % i for i in range(3000)])
    ids = rng.zipf(1.2, n) % 3000
    tokens = words[ids].astype(object)
    tokens[::200] = ["rare%d" % i for i in range(n // 200)]  # 5000 words seen once: below min_count
    path = tmp_path / "oneline.txt"
    path.write_text(" ".join(tokens))                    # no newline at all
    assert os.path.getsize(path) > 3 * (1 << 20)        # several 1 MiB read blocks
    epochs = 2
    model = Word2Vec(corpus_file=str(path), vector_size=8, window=2, negative=2, min_count=5, epochs=epochs,
                     workers=2)
    ids[::200] = -1
    counts = np.bincount(ids[ids >= 0], minlength=3000)
    in_vocab = int(counts[counts >= 5].sum())
    assert in_vocab <= n - n // 200                        # some words are too rare to be kept
    assert model.vocab.raw_words == n
    assert model.vocab.total_words == in_vocab
    assert len(model.vocab) == int(np.sum(counts >= 5))
    assert model.last_report.words == epochs * in_vocab
    assert model.last_report.raw_words == epochs * n
    assert np.all(np.isfinite(model.wv.vectors))


# ----------------------------------------------------------------------------- paths

def test_missing_path(tmp_path):
    missing = str(tmp_path / "no-such-corpus.txt")
    with pytest.raises(FileNotFoundError, match="no-such-corpus.txt"):
        Word2Vec(corpus_file=missing, **TINY)
    with pytest.raises(FileNotFoundError, match="no-such-corpus.txt"):
        Word2Vec(missing, **TINY)                          # a str as sentences is a path
    model = Word2Vec([["a", "b", "c", "d", "e", "f"]], **TINY)
    with pytest.raises(FileNotFoundError, match="no-such-corpus.txt"):
        model.train(corpus_file=missing, total_words=6, epochs=1)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root reads files whatever their permissions")
def test_unreadable_path(tmp_path):
    path = tmp_path / "secret.txt"
    path.write_text("some words\n")
    os.chmod(path, 0)
    try:
        with pytest.raises(PermissionError, match="secret.txt"):
            Word2Vec(corpus_file=str(path), **TINY)
    finally:
        os.chmod(path, 0o644)


# ----------------------------------------------------------------------------- parameters

BAD_PARAMS = [
    ("vector_size", 0, r"an integer in \[1, "),
    ("vector_size", -5, r"an integer in \[1, "),
    ("vector_size", 10.0, r"an integer in \[1, "),
    ("vector_size", "100", r"an integer in \[1, "),
    ("vector_size", None, r"an integer in \[1, "),
    ("vector_size", True, r"an integer in \[1, "),
    ("window", 0, r"an integer in \[1, "),
    ("window", 2.5, r"an integer in \[1, "),
    ("negative", -1, r"an integer in \[0, "),
    ("negative", "5", r"an integer in \[0, "),
    ("sample", -1e-3, "a finite number >= 0"),
    ("sample", float("nan"), "a finite number >= 0"),
    ("sample", "1e-3", "a finite number >= 0"),
    ("alpha", 0, "a finite number > 0"),
    ("alpha", -0.025, "a finite number > 0"),
    ("alpha", float("inf"), "a finite number > 0"),
    ("alpha", "0.025", "a finite number > 0"),
    ("workers", 0, r"an integer in \[1, "),
    ("workers", -2, r"an integer in \[1, "),
    ("workers", 2.0, r"an integer in \[1, "),
    ("workers", "4", r"an integer in \[1, "),
    ("epochs", 0, r"an integer in \[1, "),
    ("min_count", -1, r"an integer in \[0, "),
    ("seed", -1, r"an integer in \[0, "),
    ("min_alpha", -1e-4, r"a number in \[0, alpha\]"),
    ("min_alpha", 0.5, r"a number in \[0, alpha\]"),
    ("max_vocab_size", 0, r"an integer in \[1, "),
    ("max_final_vocab", 0, r"an integer in \[1, "),
    ("max_sentence_length", 0, r"an integer in \[1, "),
    ("chunk_tokens", 0, r"an integer in \[1, "),
    ("ns_exponent", float("nan"), "a finite number"),
    ("sg", 2, "0 or 1"),
    ("cbow_mean", 3, "0 or 1"),
    ("hs", 5, "0 or 1"),
]


@pytest.mark.parametrize("name, value, rule", BAD_PARAMS,
                         ids=["%s=%r" % (n, v) for n, v, _ in BAD_PARAMS])
def test_invalid_parameter(name, value, rule):
    with pytest.raises(ValueError, match="%s must be %s" % (name, rule)) as info:
        Word2Vec(**{name: value})
    if not isinstance(value, float) or math.isfinite(value):
        assert repr(value) in str(info.value)


def test_invalid_parameters_checked_before_reading_the_corpus(tmp_path):
    # a bad parameter fails at once, even with a corpus that would take time to read
    with pytest.raises(ValueError, match="window"):
        Word2Vec(corpus_file=str(tmp_path / "does-not-matter.txt"), window=0)


def test_invalid_train_arguments(model):
    with pytest.raises(ValueError, match=r"epochs must be an integer in \[1, "):
        model.train(epochs=0)
    with pytest.raises(ValueError, match="start_alpha must be a finite number > 0"):
        model.train(start_alpha=-1.0)


def test_negative_zero_needs_another_loss():
    with pytest.raises(ValueError, match="negative must be >= 1 for the sgns loss"):
        Word2Vec(negative=0)


def test_unknown_loss_lists_valid_ones():
    valid = ", ".join(sorted(registry.LOSSES))
    with pytest.raises(ValueError, match="unknown loss 'softmaxx'; valid losses: %s" % valid):
        Word2Vec(loss="softmaxx")
    with pytest.raises(ValueError, match="valid losses: %s" % valid):
        registry.make_loss("softmaxx")
    with pytest.raises(ValueError, match="valid losses"):
        registry.make_loss(["not", "hashable"])


def test_unknown_sampler_lists_valid_ones():
    valid = ", ".join(sorted(registry.SAMPLERS))
    assert "unigram" in valid and "uniform" in valid
    with pytest.raises(ValueError, match="unknown sampler 'zipf'; valid samplers: %s" % valid):
        Word2Vec(sampler="zipf")
    with pytest.raises(ValueError, match="valid samplers: %s" % valid):
        registry.make_sampler("zipf", counts=[1, 2], n_classes=2)


def test_unknown_loss_and_sampler_parameters(sentences):
    with pytest.raises(ValueError, match="loss_params .* sgns got unknown parameters: margin"):
        Word2Vec(sentences, loss_params={"margin": 1.0}, **TINY)
    with pytest.raises(ValueError, match="sampler_params .* unigram got unknown parameters: temperature"):
        Word2Vec(sentences, sampler_params={"temperature": 2.0}, **TINY)


# ----------------------------------------------------------------------------- sentences of the wrong shape

def test_generator_sentences_explain_restartable_iterables():
    sentences = (line.split() for line in ["a b c", "d e f"])
    with pytest.raises(TypeError, match="restartable iterable") as info:
        Word2Vec(sentences, **TINY)
    assert "generator" in str(info.value)
    with pytest.raises(TypeError, match="restartable"):
        Word2Vec(iter([["a", "b"]]), **TINY)


def test_str_sentence():
    with pytest.raises(TypeError, match="sentence 0 is a str, not a list of tokens"):
        Word2Vec(["the cat sat", "on the mat"], **TINY)
    with pytest.raises(TypeError, match="sentence 2 is a str"):
        Word2Vec([["ok"], ["fine"], "not split"], **TINY)


# ----------------------------------------------------------------------------- divergence

@pytest.mark.parametrize("sg", [1, 0], ids=["skip-gram", "cbow"])
@pytest.mark.parametrize("alpha", [1e30, 1e3])
def test_divergence_suggests_lower_alpha(sentences, sg, alpha):
    # with such a learning rate the first updates overflow float32, and the loss becomes NaN or inf
    with pytest.raises(FloatingPointError, match="lower alpha") as info:
        Word2Vec(sentences, sg=sg, alpha=alpha, **TINY)
    message = str(info.value)
    assert "diverged" in message and ("alpha=%g" % (alpha / 10)) in message


def test_divergence_with_two_threads(sentences):
    with pytest.raises(FloatingPointError, match="lower alpha"):
        Word2Vec(sentences, alpha=1e30, **dict(TINY, workers=2))


# ----------------------------------------------------------------------------- output files

@pytest.mark.parametrize("kind", ["model", "text", "binary"])
def test_existing_file_not_overwritten_without_permission(model, tmp_path, kind):
    path = tmp_path / "out"
    path.write_bytes(b"previous content")
    with pytest.raises(FileExistsError, match="overwrite"):
        if kind == "model":
            model.save(str(path), overwrite=False)
        else:
            model.save_word2vec_format(str(path), binary=kind == "binary", overwrite=False)
    assert path.read_bytes() == b"previous content"
    assert _tmp_files(tmp_path) == []
    # with permission it is replaced
    if kind == "model":
        model.save(str(path), overwrite=True)
        assert zipfile.is_zipfile(path)
    else:
        model.save_word2vec_format(str(path), binary=kind == "binary", overwrite=True)
        assert path.read_bytes() != b"previous content"


def test_save_into_missing_directory(model, tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        model.save(str(tmp_path / "no" / "such" / "dir" / "m.ekm"))


def _interrupt_after_partial_write(monkeypatch):
    """Make numpy's array writer write half of an array's bytes and then raise KeyboardInterrupt.

    Fault injection (the one mock of the suite): a real Ctrl-C or a full disk cannot be produced at a
    precise point of a write in a test, so numpy's writer is wrapped to stop part-way through the data of
    the first array, which is what an interrupted save looks like on disk.  Returns the list of the
    (temporary) files it wrote into, to check that the fault really happened mid-write.
    """
    written = []

    def interrupted(fp, array, *args, **kwargs):
        np.lib.format.write_array_header_1_0(fp, np.lib.format.header_data_from_array_1_0(array))
        data = array.tobytes()
        fp.write(data[:len(data) // 2])
        written.append(fp)
        raise KeyboardInterrupt

    monkeypatch.setattr(np.lib.format, "write_array", interrupted)
    return written


def test_interrupted_save_leaves_previous_model_intact(model, sentences, tmp_path, monkeypatch):
    path = tmp_path / "model.ekm"
    model.save(str(path))
    previous = path.read_bytes()
    model.train(corpus_iterable=sentences, total_examples=len(sentences), epochs=1)   # a changed model to save over it
    written = _interrupt_after_partial_write(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        model.save(str(path))
    monkeypatch.undo()
    assert len(written) == 1                                  # it stopped inside the first array
    assert path.read_bytes() == previous
    assert _tmp_files(tmp_path) == []
    assert sorted(os.listdir(tmp_path)) == ["model.ekm"]
    loaded = Word2Vec.load(str(path))
    assert loaded.wv.index_to_key == model.wv.index_to_key
    # the now-working save replaces it
    model.save(str(path))
    assert np.array_equal(Word2Vec.load(str(path)).wv.vectors, model.wv.vectors)


def test_interrupted_first_save_creates_nothing(model, tmp_path, monkeypatch):
    written = _interrupt_after_partial_write(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        model.save(str(tmp_path / "model.ekm"))
    assert len(written) == 1
    assert os.listdir(tmp_path) == []


