"""Ids out of range, malformed sparse matrices and non-finite numbers are refused before a nogil loop
reads or writes a table (each case below once crashed the interpreter, wrote outside a table, or trained
a NaN model without a word)."""
import re

import numpy as np
import pytest
import scipy.sparse as sp

from embkit import ExtremeClassifier, ItemEmbedding, Word2Vec
from embkit._kernels.pairs import PairTrainer
from embkit._kernels.rows import RowTrainer
from embkit._kernels.samplers import AliasSampler
from embkit._kernels.windows import WindowTrainer
from embkit.core import registry

SENTENCES = [["a", "b", "c", "d"]] * 20


def unchecked_csr(shape, indices, indptr, data=None):
    """A CSR matrix built without scipy's index checks (as a user's own or edited arrays can be)."""
    m = sp.csr_matrix(shape, dtype=np.float64)
    m.indices = np.asarray(indices, dtype=np.int32)
    m.indptr = np.asarray(indptr, dtype=np.int32)
    m.data = np.ones(len(indices)) if data is None else np.asarray(data, dtype=np.float64)
    return m


def items(**kwargs):
    return ItemEmbedding(vector_size=4, epochs=1, workers=1, negative=2, progress=False, **kwargs)


def xc(**kwargs):
    return ExtremeClassifier(vector_size=4, epochs=1, workers=1, negative=1, progress=False, **kwargs)


# ----------------------------------------------------------------------------- models

@pytest.mark.parametrize("indices, match", [([1, 4000000], "indices must be < 5"), ([1, -3], "indices must be >= 0")])
def test_item_matrix_with_indices_out_of_its_shape(indices, match):
    with pytest.raises(ValueError, match="co-occurrence matrix is not a valid csr matrix: " + match):
        items().fit(unchecked_csr((5, 5), indices, [0, 1, 2, 2, 2, 2]))


def test_item_ids_and_counts_beyond_what_a_run_can_index():
    with pytest.raises(ValueError, match="pair id 1099511627776 is too large"):
        items().fit(np.array([[0, 2 ** 40], [1, 2]]))
    with pytest.raises(ValueError, match="sum to 1e\\+300 pairs"):
        items().fit(unchecked_csr((5, 5), [1, 2], [0, 1, 2, 2, 2, 2], [1.0, 1e300]))


@pytest.mark.parametrize("which", ["X", "Y"])
def test_xc_matrices_with_indices_out_of_their_shape(which):
    good = {"X": sp.csr_matrix(np.ones((3, 4))), "Y": sp.csr_matrix(np.eye(3))}
    good[which] = unchecked_csr((3, 4 if which == "X" else 3), [0, 1, 100000], [0, 1, 2, 3])
    with pytest.raises(ValueError, match="the %s matrix.* is not a valid csr matrix"
                       % ("feature" if which == "X" else "label")):
        xc().fit(good["X"], good["Y"])


def test_xc_row_pointers_that_go_back():
    X = unchecked_csr((3, 4), [0, 1, 2], [0, 3, 1, 3])
    with pytest.raises(ValueError, match="feature matrix X is not a valid csr matrix"):
        xc().fit(X, sp.csr_matrix(np.eye(3)))


def test_xc_non_finite_labels():
    with pytest.raises(ValueError, match="label matrix has non-finite values"):
        xc().fit(sp.csr_matrix(np.ones((3, 4))), sp.csr_matrix(np.eye(3) * np.nan))


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -5])
def test_word2vec_total_words_must_be_a_real_count(value):
    model = Word2Vec(SENTENCES, vector_size=4, min_count=1, epochs=1, workers=1, negative=2)
    with pytest.raises(ValueError, match="total_words must be a finite number > 0"):
        model.train(SENTENCES, total_words=value)
    assert np.isfinite(model.wv.vectors).all()


def test_a_diverged_model_is_not_saved(tmp_path):
    model = Word2Vec(SENTENCES, vector_size=4, min_count=1, epochs=1, workers=1, negative=2)
    model.W_in[0, 0] = np.nan
    with pytest.raises(ValueError, match="refusing to save .* W_in holds NaN"):
        model.save(str(tmp_path / "m.embkit"))
    assert not list(tmp_path.iterdir())


# ----------------------------------------------------------------------------- kernels

def _sgns(n):
    return registry.make_loss("sgns"), registry.make_sampler("uniform", counts=np.ones(n, np.int64), n_classes=n)


def test_window_driver_refuses_word_ids_beyond_its_tables():
    W_in, W_out = np.zeros((4, 8), np.float32), np.zeros((4, 8), np.float32)
    loss, sampler = _sgns(4)
    trainer = WindowTrainer(W_in, W_out, None, loss, sampler, 2, True, True, 2, False, 0.1, 0.0, 100.0, 1)
    ends = np.array([3], np.int32)
    for bad in (7, -1):
        with pytest.raises(IndexError, match=r"word ids must be in \[0, 4\), found %d" % bad):
            trainer.train_chunk(np.array([0, bad, 1], np.int32), ends, 0.0, 1, 1)
    with pytest.raises(ValueError, match="sentence ends must be >= 0 and never decrease"):
        trainer.train_chunk(np.array([0, 1, 2], np.int32), np.array([2, 1, 3], np.int32), 0.0, 1, 1)
    assert not W_in.any() and not W_out.any()


def test_hierarchical_softmax_needs_its_output_rows():
    loss = registry.make_loss("hs", counts=np.array([5, 4, 3, 2]), n_classes=4)     # trains 4 rows
    with pytest.raises(ValueError, match="W_out has 1 rows, but the loss trains 4 for its 4 classes"):
        WindowTrainer(np.zeros((4, 8), np.float32), np.zeros((1, 8), np.float32), None, loss, None, 2, True, True,
                      0, False, 0.1, 0.0, 100.0, 1)


def test_pair_driver_refuses_ids_beyond_its_tables():
    loss, sampler = _sgns(4)
    W = np.zeros((4, 8), np.float32)
    for contexts, targets, what in (([0, 9], [1, 2], "context"), ([0, 1], [1, -2], "target")):
        with pytest.raises(IndexError, match="%s ids must be in" % what):
            PairTrainer(W, W.copy(), np.array(contexts, np.int32), np.array(targets, np.int32),
                        AliasSampler(np.ones(2)), loss, sampler, 2, 0.1, 0.0, 10.0, 1)


@pytest.mark.parametrize("case, match", [
    ("feature id", r"feature ids must be in \[0, 4\)"),
    ("label id", r"label ids must be in \[0, 3\)"),
    ("pointers", "feature row pointers must start at 0"),
])
def test_row_driver_refuses_malformed_examples(case, match):
    loss, sampler = _sgns(3)
    x_ptr, x_idx = np.array([0, 2, 3], np.int64), np.array([0, 3, 1], np.int32)
    y_ptr, y_idx = np.array([0, 1, 2], np.int64), np.array([0, 2], np.int32)
    if case == "feature id":
        x_idx = np.array([0, 4, 1], np.int32)
    elif case == "label id":
        y_idx = np.array([0, 3], np.int32)
    else:
        x_ptr = np.array([0, 4, 3], np.int64)
    with pytest.raises((IndexError, ValueError), match=match):
        RowTrainer(np.zeros((4, 8), np.float32), np.zeros((3, 8), np.float32), x_ptr, x_idx,
                   np.ones(3, np.float32), y_ptr, y_idx, loss, sampler, 1, True, 1.0, False, False, 0.1, 0.0, 10.0, 1)


@pytest.mark.parametrize("token", [["nested"], None, 3], ids=["list", "None", "int"])
@pytest.mark.parametrize("bounded", [False, True], ids=["scan", "max_vocab_size"])
def test_tokens_that_are_not_strings(token, bounded):
    sentences = [["a", token, "b"]] * 5
    kwargs = dict(max_vocab_size=100) if bounded else {}
    with pytest.raises(TypeError, match="tokens must be strings; .* holds " + re.escape(repr(token))):
        Word2Vec(sentences, vector_size=4, min_count=1, workers=1, negative=1, **kwargs)
    model = Word2Vec(SENTENCES, vector_size=4, min_count=1, epochs=1, workers=1, negative=2)
    if token is not None and not isinstance(token, int):
        with pytest.raises(TypeError, match="tokens must be strings"):
            model.train(sentences, total_examples=len(sentences), epochs=1)
