"""The batch kernels of the one-vs-all trainer (its input side and its label blocks) against SciPy products and
NumPy's loss and Adam, and the sparse Gram matrix of the least-squares head."""
import numpy as np
import pytest
import scipy.sparse as sp

from embkit._kernels.batch_rows import adam_used_rows, batch_hidden, label_block


def _csr(M):
    return M.indptr.astype(np.int64), M.indices.astype(np.int32), M.data.astype(np.float32)


@pytest.fixture
def batch():
    rng = np.random.default_rng(4)
    X = sp.random(60, 40, density=0.15, format="lil", random_state=4, dtype=np.float32)
    X[7] = 0                                    # a row without features
    X = sp.csr_matrix(X)
    X.eliminate_zeros()
    assert X[7].nnz == 0
    rows = np.array([3, 7, 11, 3, 59, 20], dtype=np.int64)      # a row twice: its features count twice
    W = rng.standard_normal((40, 12)).astype(np.float32)
    return X, rows, W


def test_hidden_vectors_are_the_batch_product(batch):
    X, rows, W = batch
    out = np.full((len(rows), 5), np.nan, dtype=np.float32)
    batch_hidden(*_csr(X), rows, W, 4, out)
    np.testing.assert_allclose(out, (X[rows] @ W[:, 4:9]), rtol=1e-5, atol=1e-6)


def _adam(W, M, V, g, step, b1, b2, eps):
    M[:] = b1 * M + (1 - b1) * g
    V[:] = b2 * V + (1 - b2) * g ** 2
    W -= step * M / (np.sqrt(V) + eps)


@pytest.mark.parametrize("learn_bias", [True, False])
def test_a_label_block_step_is_numpys_logistic_step(batch, learn_bias):
    X, rows, _ = batch
    rng = np.random.default_rng(7)
    n, d, members, member, lo, hi, c0 = len(rows), 6, 2, 1, 5, 17, 6
    Y = sp.csr_matrix((X > 0.4).astype(np.float32))         # 40 labels; row 7 has none, row 3 is twice in the batch
    H = (3 * rng.standard_normal((n, d))).astype(np.float32)
    W = rng.standard_normal((40, 12)).astype(np.float32)
    M, V = rng.standard_normal(W.shape).astype(np.float32), rng.random(W.shape).astype(np.float32)
    bias = rng.standard_normal((members, 40)).astype(np.float32)
    Mb, Vb = rng.standard_normal(bias.shape).astype(np.float32), rng.random(bias.shape).astype(np.float32)
    step, b1, b2, eps = 0.01, 0.9, 0.999, 1e-8
    # NumPy in float64: scores, binary cross-entropy, gradients, Adam
    cols = slice(c0, c0 + d)
    Wb = W[lo:hi, cols].astype(np.float64)
    S = H.astype(np.float64) @ Wb.T + bias[member, lo:hi]
    Yb = Y[rows].toarray()[:, lo:hi]
    want_loss = (np.logaddexp(0.0, S) - Yb * S).sum()
    G = (1.0 / (1.0 + np.exp(-S)) - Yb) / n
    want_dH = G @ Wb
    We, Me, Ve = W.astype(np.float64), M.astype(np.float64), V.astype(np.float64)
    _adam(We[lo:hi, cols], Me[lo:hi, cols], Ve[lo:hi, cols], G.T @ H.astype(np.float64), step, b1, b2, eps)
    be, Mbe, Vbe = bias.astype(np.float64), Mb.astype(np.float64), Vb.astype(np.float64)
    if learn_bias:
        _adam(be[member, lo:hi], Mbe[member, lo:hi], Vbe[member, lo:hi], G.sum(axis=0), step, b1, b2, eps)
    dH = np.full((n, d), np.nan, dtype=np.float32)
    loss = label_block(H, *_csr(Y)[:2], rows, W, M, V, bias, Mb, Vb, member, lo, hi, c0, step, b1, b2, eps,
                       learn_bias, dH)
    assert loss == pytest.approx(want_loss, rel=1e-5)
    np.testing.assert_allclose(dH, want_dH, rtol=1e-4, atol=1e-6)
    for got, want in ((W, We), (M, Me), (V, Ve), (bias, be), (Mb, Mbe), (Vb, Vbe)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    # nothing outside the block moved: other labels, other columns, the other member's biases
    outside = np.ones(W.shape, bool)
    outside[lo:hi, cols] = False
    assert (W[outside] == We[outside].astype(np.float32)).all()
    assert (bias[0] == be[0].astype(np.float32)).all()


def test_a_label_block_refuses_what_does_not_fit(batch):
    X, rows, _ = batch
    Y = sp.csr_matrix((X > 0.4).astype(np.float32))
    n, d = len(rows), 4
    W = np.zeros((40, 8), np.float32)
    bias = np.zeros((2, 40), np.float32)

    def call(lo=0, hi=10, c0=0, member=0, H=None, dH=None, labels=None):
        return label_block(np.zeros((n, d), np.float32) if H is None else H, *_csr(labels if labels is not None
                           else Y)[:2], rows, W, np.zeros_like(W), np.zeros_like(W), bias, np.zeros_like(bias),
                           np.zeros_like(bias), member, lo, hi, c0, 0.01, 0.9, 0.999, 1e-8, True,
                           np.zeros((n, d), np.float32) if dH is None else dH)
    with pytest.raises(ValueError, match="labels 30 .. 41"):
        call(lo=30, hi=41)
    with pytest.raises(ValueError, match="columns 6 .. 10"):
        call(c0=6)
    with pytest.raises(ValueError, match="member 2"):
        call(member=2)
    with pytest.raises(ValueError, match="must agree"):
        call(dH=np.zeros((n, d + 1), np.float32))
    with pytest.raises(ValueError, match="beyond the 40 columns"):
        call(labels=sp.csr_matrix(np.ones((60, 41), np.float32)))
    assert call(lo=5, hi=5) == 0.0


def test_an_adam_step_moves_the_used_rows_as_numpy_does(batch):
    X, rows, W = batch
    rng = np.random.default_rng(5)
    dH = rng.standard_normal((len(rows), 6)).astype(np.float32)
    M = rng.standard_normal(W.shape).astype(np.float32)
    V = rng.random(W.shape).astype(np.float32)
    step, b1, b2, eps = 0.01, 0.9, 0.999, 1e-8
    grad = np.asarray(X[rows].T @ dH)
    used = np.unique(X[rows].indices)
    Me, Ve, We = M.copy(), V.copy(), W.copy()
    cols = slice(3, 9)
    Me[used, cols] = b1 * M[used, cols] + (1 - b1) * grad[used]
    Ve[used, cols] = b2 * V[used, cols] + (1 - b2) * grad[used] ** 2
    We[used, cols] -= step * Me[used, cols] / (np.sqrt(Ve[used, cols]) + eps)
    slots = np.full(len(W), -1, dtype=np.int32)
    n_used = adam_used_rows(*_csr(X), rows, dH, W, M, V, 3, step, b1, b2, eps, slots)
    assert n_used == len(used)
    np.testing.assert_allclose(M, Me, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(V, Ve, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(W, We, rtol=1e-5, atol=1e-6)
    assert (W[np.setdiff1d(np.arange(len(W)), used)] == We[np.setdiff1d(np.arange(len(W)), used)]).all()
    assert (slots == -1).all()


@pytest.mark.parametrize("rows, message", [([60], "not a row"), ([-1], "not a row")])
def test_a_row_outside_the_matrix_is_refused(batch, rows, message):
    X, _, W = batch
    out = np.zeros((1, 4), dtype=np.float32)
    with pytest.raises(ValueError, match=message):
        batch_hidden(*_csr(X), np.array(rows, dtype=np.int64), W, 0, out)


def test_a_column_beyond_the_table_is_refused(batch):
    X, rows, W = batch
    with pytest.raises(ValueError, match="beyond the 30 columns"):
        batch_hidden(*_csr(X), rows, W[:30], 0, np.zeros((len(rows), 4), dtype=np.float32))
    with pytest.raises(ValueError, match="columns"):
        batch_hidden(*_csr(X), rows, W, 10, np.zeros((len(rows), 4), dtype=np.float32))


def test_the_sparse_gram_matrix_is_the_product_in_float64():
    from embkit._kernels.gram import sparse_gram
    A = sp.random(50, 20, density=0.3, format="csr", random_state=6, dtype=np.float32)
    G = sparse_gram(*_csr(A), 20)
    want = A.toarray().astype(np.float64).T @ A.toarray().astype(np.float64)
    np.testing.assert_allclose(G, want, rtol=1e-12, atol=1e-12)
    assert G.dtype == np.float64 and (G == G.T).all()
    np.testing.assert_array_equal(sparse_gram(*_csr(A), 20, 3), G)       # the same sums on any thread count
    unsorted = _csr(A)
    indices = unsorted[1].copy()
    row = np.flatnonzero(np.diff(A.indptr) >= 2)[0]
    a = A.indptr[row]
    indices[a], indices[a + 1] = indices[a + 1], indices[a]
    with pytest.raises(ValueError, match="column ids must increase"):
        sparse_gram(unsorted[0], indices, unsorted[2], 20)
    with pytest.raises(ValueError, match="below 10"):
        sparse_gram(*_csr(A), 10)
