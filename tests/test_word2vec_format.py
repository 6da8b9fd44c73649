"""embkit's word2vec reader against gensim's on valid files: the same keys, bit-identical vectors, the same
made-up counts (gensim's ``KeyedVectors.load_word2vec_format``)."""
import struct

import numpy as np
import pytest
from gensim.models import KeyedVectors

from embkit import load_vectors
from embkit.text.word2vec_format import read_word2vec_format


def random_vectors(seed, n=300, dim=7):
    rng = np.random.default_rng(seed)
    words = ["w%d%s" % (i, ["", "\u00e9", "\u4e2d", "_x", "\U0001f600"][i % 5]) for i in range(n)]
    scale = 10.0 ** rng.integers(-30, 30, (n, 1))
    kv = KeyedVectors(dim)
    kv.add_vectors(words, (rng.standard_normal((n, dim)) * scale).astype(np.float32))
    return kv


def same_as_gensim(path, binary):
    theirs = KeyedVectors.load_word2vec_format(path, binary=binary)
    ours = load_vectors(path)
    assert ours.index_to_key == theirs.index_to_key
    assert ours.vectors.dtype == np.float32 and ours.vectors.shape == theirs.vectors.shape
    assert np.array_equal(ours.vectors.view(np.uint32), theirs.vectors.view(np.uint32))
    assert np.array_equal(ours.expandos["count"], theirs.expandos["count"])
    return ours


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("name, binary", [("v.txt", False), ("v.bin", True), ("v.txt.gz", False),
                                          ("v.bin.bz2", True)])
def test_files_gensim_writes(tmp_path, seed, name, binary):
    path = str(tmp_path / name)
    random_vectors(seed).save_word2vec_format(path, binary=binary)
    same_as_gensim(path, binary)


def test_word2vec_c_binary_with_a_line_feed_after_each_vector(tmp_path):
    kv = random_vectors(5, n=50, dim=3)
    rows = b"".join(w.encode() + b" " + kv[w].astype("<f4").tobytes() + b"\n" for w in kv.index_to_key)
    path = tmp_path / "c.bin"
    path.write_bytes(b"50 3\n" + rows)
    same_as_gensim(str(path), True)


def test_text_written_by_other_tools(tmp_path):
    """fastText's .vec (a blank after the last value), CRLF line ends, many digits."""
    kv = random_vectors(6, n=40, dim=4)
    lines = ["%s %s \r\n" % (w, " ".join("%.17g" % x for x in kv[w])) for w in kv.index_to_key]
    path = tmp_path / "v.vec"
    path.write_bytes(("40 4\r\n" + "".join(lines)).encode())
    ours = load_vectors(str(path))
    assert ours.index_to_key == kv.index_to_key
    assert np.array_equal(ours.vectors, kv.vectors)


def test_the_first_row_decides_text_or_binary(tmp_path):
    text = tmp_path / "v.data"
    text.write_bytes(b"2 2\n\xc3\xa9t\xc3\xa9 1 2\nb 3 4\n")
    assert read_word2vec_format(str(text))[2] is False
    binary = tmp_path / "b.data"
    binary.write_bytes(b"2 2\na " + struct.pack("<2f", 0.0, 0.0) + b"b " + struct.pack("<2f", 1.5, -2.0))
    words, vectors, is_binary = read_word2vec_format(str(binary))
    assert is_binary and words == ["a", "b"] and vectors.tolist() == [[0, 0], [1.5, -2]]
