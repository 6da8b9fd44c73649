"""The batch kernels of the one-vs-all trainer's input side against SciPy products and NumPy's Adam, and the sparse
Gram matrix of the least-squares head."""
import numpy as np
import pytest
import scipy.sparse as sp

from embkit._kernels.batch_rows import adam_used_rows, batch_hidden, batch_labels


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


def test_labels_are_the_dense_rows(batch):
    X, rows, _ = batch
    Y = sp.csr_matrix((X > 0.5).astype(np.float32))
    out = np.full((len(rows), X.shape[1]), 7.0, dtype=np.float32)
    batch_labels(*_csr(Y)[:2], rows, out)
    np.testing.assert_array_equal(out, Y[rows].toarray() > 0)


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
