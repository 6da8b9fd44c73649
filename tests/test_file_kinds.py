"""Every loader given a file it does not read names what the file is and the call that reads it (real files
of every format embkit meets: its archives and checkpoints, word2vec text, binary and gzip, gensim pickles,
NumPy arrays, directories), and no loader unpickles to find out."""
import gzip
import os
import pickle
import re
import subprocess
import sys

import numpy as np
import pytest

from embkit import ExtremeClassifier, ItemEmbedding, Word2Vec, load_vectors
from embkit.core.file_kinds import identify

SENTENCES = [["a", "b", "c", "d"], ["b", "c", "a", "e"]] * 20
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _MakesDirectory:
    """Unpickling this creates the directory ``path``: a witness that a loader ran the file's code."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return os.mkdir, (self.path,)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("kinds")
    model = Word2Vec(SENTENCES, vector_size=8, min_count=1, epochs=1, workers=1, seed=1)
    paths = {"archive": str(root / "w2v.embkit"), "text": str(root / "vectors.txt"),
             "binary": str(root / "vectors.bin"), "gz": str(root / "vectors.txt.gz"),
             "npy": str(root / "table.npy"), "empty_dir": str(root / "empty"),
             "checkpoints": str(root / "run"), "witness": str(root / "ran-code")}
    model.save(paths["archive"])
    model.wv.save_word2vec_format(paths["text"])
    model.wv.save_word2vec_format(paths["binary"], binary=True)
    with open(paths["text"], "rb") as src, gzip.open(paths["gz"], "wb") as dst:
        dst.write(src.read())
    np.save(paths["npy"], np.zeros((3, 8), dtype=np.float32))
    os.mkdir(paths["empty_dir"])
    Word2Vec(SENTENCES, vector_size=8, min_count=1, epochs=2, workers=1, seed=1,
             checkpoint_dir=paths["checkpoints"], checkpoint_every=1)
    paths["hostile"] = str(root / "model.pkl")
    with open(paths["hostile"], "wb") as fh:
        pickle.dump(_MakesDirectory(paths["witness"]), fh, protocol=4)
    gensim = pytest.importorskip("gensim")
    paths["gensim_model"], paths["gensim_kv"] = str(root / "gensim.model"), str(root / "gensim.kv")
    trained = gensim.models.Word2Vec(SENTENCES, vector_size=8, min_count=1, epochs=1, workers=1, seed=1)
    trained.save(paths["gensim_model"])
    trained.wv.save(paths["gensim_kv"])
    return paths


@pytest.mark.parametrize("name, kind, hint", [
    ("archive", "archive", "Word2Vec.load reads it"),
    ("text", "word2vec", "embkit.load_vectors reads it"),
    ("binary", "word2vec", "embkit.load_vectors reads it"),
    ("gz", "word2vec", "embkit.load_vectors reads it"),
    ("npy", "npy", None),
    ("empty_dir", "directory", None),
    ("gensim_model", "pickle", "Word2Vec.load reads it"),
    ("gensim_kv", "pickle", "embkit.load_vectors reads it with allow_pickle=True"),
])
def test_identify_names_the_format_and_its_reader(files, name, kind, hint):
    found = identify(files[name])
    assert (found.name, found.hint) == (kind, hint)


def test_a_pickle_is_named_by_its_class_without_running_it(files):
    found = identify(files["hostile"])
    assert found.name == "pickle" and "of posix.mkdir" in found.description
    assert not os.path.exists(files["witness"])


def test_a_checkpoint_directory_points_to_its_newest_file(files):
    found = identify(files["checkpoints"])
    newest = max((entry for entry in os.scandir(files["checkpoints"]) if entry.name.endswith(".embkit")),
                 key=lambda entry: (entry.stat().st_mtime, entry.name))
    assert found.name == "directory" and newest.path in found.hint
    assert identify(newest.path).description == "an embkit Word2Vec checkpoint"
    assert Word2Vec.load(newest.path).wv.vectors.shape == (5, 8)


@pytest.mark.parametrize("loader", [ItemEmbedding.load, ExtremeClassifier.load, Word2Vec.load])
@pytest.mark.parametrize("name, says", [
    ("text", "is a word2vec vectors file .*: embkit.load_vectors reads it"),
    ("gz", "is a word2vec vectors file .*: embkit.load_vectors reads it"),
    ("npy", "is a NumPy array file"),
    ("empty_dir", "is a directory, not an embkit model file"),
    ("checkpoints", "is a directory of \\d+ embkit archives?, not an embkit model file: pass one of its files"),
])
def test_model_loaders_name_what_they_got(files, loader, name, says):
    with pytest.raises(ValueError, match=says):
        loader(files[name])


@pytest.mark.parametrize("loader", [ItemEmbedding.load, ExtremeClassifier.load])
def test_model_loaders_point_other_models_and_pickles_to_their_reader(files, loader):
    with pytest.raises(ValueError, match="holds a Word2Vec model, not .*: Word2Vec.load reads it"):
        loader(files["archive"])
    with pytest.raises(ValueError, match="pickle of gensim.models.word2vec.Word2Vec .*: Word2Vec.load reads it"):
        loader(files["gensim_model"])
    with pytest.raises(ValueError, match="pickle of posix.mkdir"):
        loader(files["hostile"])
    assert not os.path.exists(files["witness"])


@pytest.mark.parametrize("name", ["archive", "text", "binary", "gz"])
def test_every_vectors_format_loads_alike(files, name):
    expected = Word2Vec.load(files["archive"]).wv
    kv = load_vectors(files[name])
    assert kv.index_to_key == expected.index_to_key
    np.testing.assert_allclose(kv.vectors, expected.vectors, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name, says", [
    ("npy", "is a NumPy array file .*, not a vectors file"),
    ("empty_dir", "is a directory, not a vectors file"),
    ("checkpoints", "is a directory of \\d+ embkit archives?, not a vectors file: pass one of its files"),
])
def test_load_vectors_names_what_it_got(files, name, says):
    with pytest.raises(ValueError, match=says):
        load_vectors(files[name])


def test_the_command_line_names_what_it_got(files):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    run = subprocess.run([sys.executable, "-m", "embkit", "eval", files["checkpoints"], "--suite", "ws353"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 1
    assert re.search("is a directory of \\d+ embkit archives?, not a vectors file: pass one of its files", run.stderr)
    run = subprocess.run([sys.executable, "-m", "embkit", "eval", files["hostile"], "--suite", "ws353"],
                         capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 1 and "--allow-pickle" in run.stderr
    assert not os.path.exists(files["witness"])
