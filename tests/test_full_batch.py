"""The batched BLAS full softmax of the windows and pairs drivers (``batch_size=``) against the kernels."""
import numpy as np
import pytest

from embkit import ItemEmbedding, Word2Vec
from embkit.core import registry
from embkit.core.batched_softmax import add_rows, softmax_step
from embkit.text.window_batches import window_pairs


def test_a_batch_of_one_is_the_kernels_step():
    rng = np.random.default_rng(0)
    h = rng.standard_normal(6).astype(np.float32)
    W = rng.standard_normal((9, 6)).astype(np.float32)
    loss = registry.make_loss("full_softmax", counts=np.ones(9), n_classes=9)
    W_kernel = W.copy()
    loss_k, dh_k = loss.py_step(h, 4, None, W_kernel, 0.3)
    W_batch = W.copy()
    loss_b, dH = softmax_step(h[None, :], W_batch, 0.3, targets=np.array([4]))
    assert loss_b == pytest.approx(loss_k, rel=1e-5)
    np.testing.assert_allclose(dH[0], dh_k, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(W_batch, W_kernel, rtol=1e-4, atol=1e-6)


def test_add_rows_sums_repeated_ids():
    W = np.zeros((4, 2), np.float32)
    add_rows(W, np.array([2, 0, 2, 2]), np.array([[1, 1], [5, 0], [2, 0], [0, 3]], np.float32))
    np.testing.assert_array_equal(W, [[5, 0], [0, 0], [3, 4], [0, 0]])


def test_window_pairs_are_the_kernels_examples():
    # window 2, no subsampling, no reduced windows: every pair within 2 positions of one sentence, centre-major
    ctx, centre, pos = window_pairs(np.array([5, 6, 7, 8, 9]), np.array([3, 5]), None, 2, False,
                                    np.random.default_rng(0))
    assert list(zip(centre.tolist(), ctx.tolist())) == [(5, 6), (5, 7), (6, 5), (6, 7), (7, 5), (7, 6), (8, 9),
                                                        (9, 8)]
    assert pos.tolist() == [0, 0, 1, 1, 2, 2, 3, 4]


def _sentences(n=200, vocab=30, length=12, seed=3):
    rng = np.random.default_rng(seed)
    return [["w%d" % w for w in rng.zipf(1.5, length) % vocab] for _ in range(n)]


def test_skipgram_batches_of_one_equal_the_kernel():
    # same examples in the same order (no subsampling, full windows, one thread, constant learning rate):
    # batch_size=1 is the per-example kernel's SGD
    kw = dict(sg=1, loss="full_softmax", negative=0, vector_size=8, window=2, min_count=1, sample=0,
              shrink_windows=False, shared_negatives=False, workers=1, epochs=1, alpha=0.05, min_alpha=0.05, seed=4)
    corpus = _sentences()
    kernel = Word2Vec(corpus, **kw)
    batch = Word2Vec(corpus, batch_size=1, **kw)
    np.testing.assert_allclose(batch.W_out, kernel.W_out, rtol=2e-3, atol=2e-4)
    np.testing.assert_allclose(batch.W_in, kernel.W_in, rtol=2e-3, atol=2e-4)
    assert batch.last_report.epoch_loss[0] == pytest.approx(kernel.last_report.epoch_loss[0], rel=1e-3)
    assert batch.last_report.examples == kernel.last_report.examples


def test_skipgram_mini_batches_learn():
    # sentences walk a cycle of 30 words: a word's context is its two neighbours on each side
    rng = np.random.default_rng(5)
    corpus = [["w%d" % ((s + i) % 30) for i in range(10)] for s in rng.integers(0, 30, 500)]
    kw = dict(sg=1, loss="full_softmax", negative=0, vector_size=16, window=2, min_count=1, sample=0, workers=2,
              epochs=4, alpha=0.05, seed=1, batch_size=64)
    model = Word2Vec(corpus, **kw)
    assert model.loss_history[-1] < model.loss_history[0] - 0.5
    assert model.loss_history[-1] < np.log(30) - 1.0


def test_pair_batches_of_one_equal_the_kernel():
    # one stored pair: every draw is the same, so both paths see the same examples
    kw = dict(loss="full_softmax", vector_size=8, epochs=1, workers=1, alpha=0.05, min_alpha=0.05, seed=2,
              progress=False)
    pairs = np.array([[0, 3, 40], [1, 1, 0], [3, 2, 0]])
    kernel = ItemEmbedding(**kw).fit(pairs)
    batch = ItemEmbedding(batch_size=1, **kw).fit(pairs)
    np.testing.assert_allclose(batch.W_out, kernel.W_out, rtol=2e-3, atol=2e-4)
    np.testing.assert_allclose(batch.W_in, kernel.W_in, rtol=2e-3, atol=2e-4)
    assert batch.last_report.epoch_loss[0] == pytest.approx(kernel.last_report.epoch_loss[0], rel=1e-3)


def test_pair_mini_batches_learn_the_successor():
    # item i is always followed by item (i + 1) mod n: the batched model ranks it first for most items
    n = 40
    pairs = np.array([[i, (i + 1) % n, 20] for i in range(n)])
    model = ItemEmbedding(loss="full_softmax", vector_size=16, epochs=20, alpha=0.1, batch_size=32,
                          progress=False).fit(pairs)
    scores = model.W_in @ model.W_out.T
    assert np.mean(scores.argmax(axis=1) == (np.arange(n) + 1) % n) > 0.9


@pytest.mark.parametrize("make, message", [
    (lambda: ItemEmbedding(loss="sgns", batch_size=8), "batch_size"),
    (lambda: ItemEmbedding(loss="full_softmax", batch_size=0), "batch_size"),
    (lambda: Word2Vec(loss="sgns", sg=1, batch_size=8), "batch_size"),
    (lambda: Word2Vec(loss="full_softmax", sg=0, negative=0, batch_size=8), "skip-gram"),
])
def test_batch_size_is_checked(make, message):
    with pytest.raises(ValueError, match=message):
        make()
