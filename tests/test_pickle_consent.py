"""No code runs from a file without consent: embkit's formats never unpickle, ``load_vectors`` and the command
line unpickle only when told, and ``Word2Vec.load`` reads a gensim pickle (gensim's semantics) only when the
file is not named as an embkit archive."""
import os
import pickle

import pytest
from gensim.models import KeyedVectors

from embkit import Word2Vec, load_vectors
from embkit.cli import main
from embkit.core.pickles import PickleRefused

SENTENCES = [["a", "b", "c"], ["b", "c", "a"]] * 5


class _Marker:
    """Unpickling this creates the file ``path``: proof that code from the file ran."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def hostile(tmp_path, name):
    path, marker = tmp_path / name, tmp_path / "ran"
    path.write_bytes(pickle.dumps(_Marker(str(marker)), protocol=4))
    return str(path), marker


@pytest.mark.parametrize("name", ["vectors.kv", "vectors.bin", "model.embkit"])
def test_load_vectors_never_unpickles_unless_told(tmp_path, name):
    path, marker = hostile(tmp_path, name)
    with pytest.raises(PickleRefused, match=r"%s.*(allow_pickle=True|named as an embkit archive)" % name):
        load_vectors(path)
    assert not marker.exists()


def test_an_embkit_name_is_never_unpickled_even_when_allowed(tmp_path):
    path, marker = hostile(tmp_path, "model.embkit")
    with pytest.raises(PickleRefused, match="named as an embkit archive"):
        load_vectors(path, allow_pickle=True)
    with pytest.raises(PickleRefused, match="named as an embkit archive"):
        Word2Vec.load(path)
    assert not marker.exists()


def test_consent_loads_a_gensim_keyedvectors_file(tmp_path):
    kv = KeyedVectors(3)
    kv.add_vectors(["x", "y"], [[1, 2, 3], [4, 5, 6]])
    path = str(tmp_path / "vectors.kv")
    kv.save(path)
    loaded = load_vectors(path, allow_pickle=True)
    assert loaded.index_to_key == ["x", "y"] and loaded.vectors.tolist() == kv.vectors.tolist()


def test_word2vec_load_reads_a_gensim_model_as_gensim_does(tmp_path):
    from gensim.models import Word2Vec as GensimWord2Vec
    path = str(tmp_path / "gensim.model")
    GensimWord2Vec(SENTENCES, vector_size=4, min_count=1, epochs=1, workers=1).save(path)
    assert Word2Vec.load(path).wv.index_to_key


def test_cli_refuses_a_pickle_and_says_how_to_consent(tmp_path, capsys):
    path, marker = hostile(tmp_path, "vectors.kv")
    assert main(["eval", path, "--suite", "ws353"]) == 1
    err = capsys.readouterr().err
    assert "vectors.kv" in err and "--allow-pickle" in err and len(err.strip().splitlines()) == 1
    assert not marker.exists()
    assert main(["eval", "--help"]) == 0
    assert "--allow-pickle" in capsys.readouterr().out


def test_cli_reads_a_pickle_with_consent(tmp_path, capsys):
    kv = KeyedVectors(2)
    kv.add_vectors(["tiger", "cat"], [[1, 0], [0.9, 0.1]])
    path = str(tmp_path / "vectors.kv")
    kv.save(path)
    assert main(["eval", path, "--suite", "ws353", "--allow-pickle", "-q"]) == 0
    assert "2 words" in capsys.readouterr().out
    assert os.path.exists(path)
