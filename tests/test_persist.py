"""Model files: embkit archives, word2vec text/binary export, gensim interoperability, atomic writes."""
import gzip
import os
import stat
import zipfile

import numpy as np
import pytest
from gensim.models import KeyedVectors

from embkit import Word2Vec, load_vectors
from embkit.core import atomic


TRAIN = dict(vector_size=12, min_count=1, window=3, epochs=2, workers=1, seed=5)


@pytest.fixture(scope="module")
def sentences():
    rng = np.random.default_rng(0)
    words = ["w%d" % i for i in range(40)] + ["caf\u00e9", "na\u00efve", "\u6f22\u5b57"]
    return [[words[i] for i in rng.zipf(1.5, 12) % len(words)] for _ in range(300)]


@pytest.fixture
def model(sentences):
    return Word2Vec(sentences, sampler="unigram", sampler_params={}, **TRAIN)


def _tmp_files(directory):
    return [n for n in os.listdir(directory) if n.startswith(".tmp-")]


# ----------------------------------------------------------------------------- embkit archives

def test_save_load_round_trip(model, tmp_path):
    path = tmp_path / "model.ekm"
    model.save(str(path))
    assert zipfile.is_zipfile(path)
    loaded = Word2Vec.load(str(path))
    assert loaded.wv.index_to_key == model.wv.index_to_key
    assert loaded.wv.key_to_index == model.wv.key_to_index
    for a, b in ((loaded.wv.vectors, model.wv.vectors), (loaded.syn1neg, model.syn1neg),
                 (loaded.vocab.counts, model.vocab.counts)):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a, b)
    assert loaded.vocab.raw_words == model.vocab.raw_words
    for name in Word2Vec._param_names():
        assert getattr(loaded, name) == getattr(model, name), name
    assert [loaded.wv.get_vecattr(w, "count") for w in loaded.wv.index_to_key] == model.vocab.counts.tolist()
    assert loaded.wv.vectors.flags.writeable and loaded.wv.vectors.flags.c_contiguous


def test_loaded_model_continues_training_exactly_like_the_original(model, sentences, tmp_path):
    path = tmp_path / "model.ekm"
    model.save(str(path))
    loaded = Word2Vec.load(str(path))
    before = loaded.wv.vectors.copy()
    model.train(corpus_iterable=list(sentences), total_examples=len(sentences), epochs=1)
    loaded.train(corpus_iterable=list(sentences), total_examples=len(sentences), epochs=1)
    assert loaded.last_report.words == model.last_report.words == model.vocab.total_words
    assert not np.array_equal(before, loaded.wv.vectors)
    # single thread, same seed, same state: the continued runs agree bit for bit
    assert np.array_equal(model.wv.vectors, loaded.wv.vectors)
    assert np.array_equal(model.syn1neg, loaded.syn1neg)
    # and from a file as well
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(" ".join(s) for s in sentences), encoding="utf-8")
    loaded.train(corpus_file=str(corpus), total_words=loaded.corpus_total_words, epochs=1)
    assert np.all(np.isfinite(loaded.wv.vectors))


def test_loaded_model_without_corpus_says_what_to_pass(model, tmp_path):
    path = tmp_path / "model.ekm"
    model.save(str(path))
    with pytest.raises(RuntimeError, match="corpus_iterable or corpus_file"):
        Word2Vec.load(str(path)).train()


def test_save_keeps_ordinary_file_permissions(model, tmp_path):
    # the file is written to a temporary file first; the result must still get open()'s usual mode
    reference = tmp_path / "reference"
    reference.write_text("x")
    path = tmp_path / "model.ekm"
    model.save(str(path))
    assert stat.S_IMODE(os.stat(path).st_mode) == stat.S_IMODE(os.stat(reference).st_mode)
    # replacing a file keeps that file's permissions
    os.chmod(path, 0o640)
    model.save(str(path))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    vec = tmp_path / "vectors.txt"
    model.save_word2vec_format(str(vec))
    assert stat.S_IMODE(os.stat(vec).st_mode) == stat.S_IMODE(os.stat(reference).st_mode)


def test_load_rejects_other_files(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not a model\n")
    with pytest.raises(ValueError, match="not an embkit model"):
        Word2Vec.load(str(text))
    other_zip = tmp_path / "other.zip"
    with zipfile.ZipFile(other_zip, "w") as zf:
        zf.writestr("readme.txt", "hello")
    with pytest.raises(ValueError, match="not an embkit model"):
        Word2Vec.load(str(other_zip))
    with pytest.raises(FileNotFoundError, match="missing.ekm"):
        Word2Vec.load(str(tmp_path / "missing.ekm"))


def test_save_before_build_vocab(tmp_path):
    with pytest.raises(RuntimeError, match="nothing to save"):
        Word2Vec(vector_size=8).save(str(tmp_path / "m.ekm"))
    assert os.listdir(tmp_path) == []


# ----------------------------------------------------------------------------- word2vec format

def test_word2vec_text_export_round_trip(model, tmp_path):
    path = tmp_path / "vectors.txt"
    model.save_word2vec_format(str(path))
    with open(path, encoding="utf-8") as fh:
        header = fh.readline().split()
        first = fh.readline().split()
    assert header == [str(len(model.wv)), str(model.vector_size)]
    assert first[0] == model.wv.index_to_key[0] and len(first) == model.vector_size + 1
    kv = KeyedVectors.load_word2vec_format(str(path), binary=False)
    assert kv.index_to_key == model.wv.index_to_key
    # the text holds the printed digits of each float32: equal to that precision
    np.testing.assert_allclose(kv.vectors, model.wv.vectors, rtol=1e-6, atol=1e-7)
    ours = load_vectors(str(path))
    assert ours.index_to_key == model.wv.index_to_key
    np.testing.assert_allclose(ours.vectors, model.wv.vectors, rtol=1e-6, atol=1e-7)


def test_word2vec_binary_export_round_trip(model, tmp_path):
    path = tmp_path / "vectors.bin"
    model.save_word2vec_format(str(path), binary=True)
    kv = KeyedVectors.load_word2vec_format(str(path), binary=True)
    assert kv.index_to_key == model.wv.index_to_key
    assert np.array_equal(kv.vectors, model.wv.vectors)
    ours = load_vectors(str(path))
    assert np.array_equal(ours.vectors, model.wv.vectors)


def test_word2vec_compressed_export(model, tmp_path):
    path = tmp_path / "vectors.txt.gz"
    model.save_word2vec_format(str(path))
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        assert fh.readline().split() == [str(len(model.wv)), str(model.vector_size)]
    kv = load_vectors(str(path))
    np.testing.assert_allclose(kv.vectors, model.wv.vectors, rtol=1e-6, atol=1e-7)
    binary = tmp_path / "vectors.bin.gz"
    model.save_word2vec_format(str(binary), binary=True)
    assert np.array_equal(load_vectors(str(binary)).vectors, model.wv.vectors)


def test_load_vectors_sniffs_the_format(model, tmp_path):
    text, binary, archive, pickled = (str(tmp_path / n) for n in ("v.txt", "v.bin", "m.ekm", "kv.pkl"))
    model.save_word2vec_format(text)
    model.save_word2vec_format(binary, binary=True)
    model.save(archive)
    model.wv.save(pickled)
    # no extension hints: the content decides
    for src in (text, binary, archive, pickled):
        os.replace(src, src + ".data")
    for src, exact in ((text, False), (binary, True), (archive, True), (pickled, True)):
        kv = load_vectors(src + ".data", allow_pickle=src == pickled)
        assert kv.index_to_key == model.wv.index_to_key, src
        if exact:
            assert np.array_equal(kv.vectors, model.wv.vectors), src
        else:
            np.testing.assert_allclose(kv.vectors, model.wv.vectors, rtol=1e-6, atol=1e-7)
    # an explicit flag is honoured
    assert np.array_equal(load_vectors(binary + ".data", binary=True).vectors, model.wv.vectors)


def test_load_vectors_binary_with_zero_vectors(tmp_path):
    # all-zero float32 vectors are NUL bytes, which are valid UTF-8: still recognised as binary
    kv = KeyedVectors(4)
    kv.add_vectors(["a", "b", "c"], np.zeros((3, 4), dtype=np.float32))
    path = str(tmp_path / "zeros.bin")
    kv.save_word2vec_format(path, binary=True)
    loaded = load_vectors(path)
    assert loaded.index_to_key == ["a", "b", "c"]
    assert np.array_equal(loaded.vectors, kv.vectors)


def test_load_vectors_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing.bin"):
        load_vectors(str(tmp_path / "nothing.bin"))
    garbage = tmp_path / "garbage.txt"
    garbage.write_text("this is not\na vectors file\n")
    with pytest.raises(ValueError, match="garbage.txt"):
        load_vectors(str(garbage))


# ----------------------------------------------------------------------------- atomic writes
# (refusing to overwrite and interrupted saves are in test_bad_input.py)

def test_atomic_path_cleans_up_on_error(tmp_path):
    target = tmp_path / "target.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic.atomic_path(str(target)) as tmp:
            with open(tmp, "w") as fh:
                fh.write("new partial")
            raise RuntimeError("failed while writing")
    assert target.read_text() == "old"
    assert _tmp_files(tmp_path) == []
    with atomic.atomic_path(str(target)) as tmp:
        assert os.path.dirname(tmp) == str(tmp_path) and tmp.endswith("target.txt")
        with open(tmp, "w") as fh:
            fh.write("new")
    assert target.read_text() == "new"
    assert _tmp_files(tmp_path) == []
