"""One-vs-all training of the ``rows`` model in mini-batches of BLAS products (``loss="one_vs_all"``).

Every label is its own binary logistic problem on the score ``<h, W_out[j]> + b_j`` (a learned bias per
label), and every label of the set is a negative of every example: the exact one-vs-all loss, affordable
when a batch's ``batch x labels`` score block is (up to some 1e4 labels).  A batch of examples is scored
with one product, and the gradients of ``W_out``, of the biases and of the feature rows used by the batch
come from two more.  Steps are Adam's (first and second moments per parameter, bias-corrected) with the
learning rate decaying linearly over the run; the moments of feature rows are updated only for the rows a
batch uses (lazy Adam, as for sparse embeddings).

An ensemble of ``members`` independent models shares the tables: member ``m`` owns columns
``[m * d, (m + 1) * d)`` of both tables (``d = vector_size / members``) and row ``m`` of the biases, has
its own initialisation and visits every chunk in its own order.  Its probabilities are averaged at
prediction (:func:`member_scores`).
"""
import numpy as np
import scipy.sparse as sp

__all__ = ["OneVsAllBatches", "member_scores", "initial_bias", "OPTIMIZER_ARRAYS"]

_BETA1, _BETA2, _EPS = 0.9, 0.999, 1e-8

#: names of the optimizer's arrays (saved in checkpoints so a resumed run continues the same steps)
OPTIMIZER_ARRAYS = ("adam_step", "adam_m_in", "adam_v_in", "adam_m_out", "adam_v_out", "adam_m_bias",
                    "adam_v_bias")


def initial_bias(label_counts, n_rows):
    """Biases whose sigmoid is every label's training frequency (clipped to ``[1e-4, 0.5]``): the
    one-vs-all start that does not spend the first steps pushing thousands of negatives down."""
    p = np.clip(np.asarray(label_counts, dtype=np.float64) / max(n_rows, 1), 1e-4, 0.5)
    return np.log(p / (1.0 - p)).astype(np.float32)


def _unit(A):
    norms = np.linalg.norm(A, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return A / norms, norms


def _sigmoid(S):
    return 1.0 / (1.0 + np.exp(-np.clip(S, -30.0, 30.0)))


def member_scores(H, W_out, bias, members, normalize, tau):
    """Scores of the hidden vectors ``H`` (already normalised and divided by ``tau`` as ``embed`` gives them)
    against every label: the logits of a single model, or the mean probability of the ensemble's members."""
    if members == 1:
        return H @ W_out.T + bias[0]
    d = W_out.shape[1] // members
    S = np.zeros((len(H), len(W_out)), dtype=np.float32)
    for m in range(members):
        cols = slice(m * d, (m + 1) * d)
        h = H[:, cols]
        if normalize:       # a member's hidden vector is normalised on its own columns
            h = _unit(h * np.float32(tau))[0] / np.float32(tau)
        S += _sigmoid(h @ W_out[:, cols].T + bias[m])
    return S / np.float32(members)


class OneVsAllBatches:
    """A ``rows`` trainer (``before_chunk`` / ``train_chunk``) of the one-vs-all loss with Adam steps.

    Parameters
    ----------
    X, Y : scipy.sparse.csr_matrix
        Weighted features and binary labels of the training rows.
    W_in, W_out, bias : numpy.ndarray
        The tables (updated in place); ``bias`` is ``(members, n_labels)``.
    state : dict
        The optimizer's arrays (:data:`OPTIMIZER_ARRAYS`), updated in place; zeros for a fresh run.
    batch_size, members : int
    alpha, min_alpha, total_examples : float
        Linear learning-rate decay over the run's examples.
    normalize, tau :
        Hidden vectors L2-normalised (per member) and divided by ``tau``.
    seed : int
    learn_bias : bool
        Step the biases (else they keep their values).
    """

    def __init__(self, X, Y, W_in, W_out, bias, state, batch_size, members, alpha, min_alpha, total_examples,
                 normalize, tau, seed, learn_bias=True):
        self.learn_bias = learn_bias
        self.X, self.Y, self.W_in, self.W_out, self.bias, self.state = X, Y, W_in, W_out, bias, state
        self.batch_size, self.members = batch_size, members
        self.alpha, self.min_alpha, self.total = alpha, min_alpha, total_examples
        self.normalize, self.tau, self.seed = normalize, np.float32(tau), seed

    def before_chunk(self, progress):
        """Nothing to refresh: every label is a negative."""

    def train_chunk(self, order, examples_before, chunk_seed, n_threads):
        """Train the rows ``order``; returns ``(loss_sum, label_steps, examples)``."""
        loss = 0.0
        d = self.W_in.shape[1] // self.members
        for m in range(self.members):
            rng = np.random.default_rng([self.seed, m, chunk_seed])
            mine = order if self.members == 1 else rng.permutation(order)
            for start in range(0, len(mine), self.batch_size):
                idx = mine[start:start + self.batch_size]
                position = examples_before + start + len(idx) / 2.0
                lr = max(self.alpha - (self.alpha - self.min_alpha) * position / max(self.total, 1.0),
                         self.min_alpha)
                loss += self._step(idx, slice(m * d, (m + 1) * d), m, lr)
        return loss / self.members, int(np.diff(self.Y.indptr)[order].sum()), len(order)

    def _step(self, idx, cols, m, lr):
        Xb = self.X[idx]
        Yb = self.Y[idx].toarray()
        # the feature rows the batch uses, and the batch with its columns renumbered to them
        mask = np.zeros(self.X.shape[1], dtype=bool)
        mask[Xb.indices] = True
        used = np.flatnonzero(mask)
        where = np.cumsum(mask) - 1
        Xc = sp.csr_matrix((Xb.data, where[Xb.indices], Xb.indptr), shape=(len(idx), len(used)))
        w_in = self.W_in[used, cols]
        W_out = self.W_out[:, cols]
        H = np.asarray(Xc @ w_in, dtype=np.float32)
        if self.normalize:
            U, norms = _unit(H)
            H = U / self.tau
        S = H @ W_out.T
        S += self.bias[m]
        G = _sigmoid(S)
        # binary cross-entropy of every label: log(1 + e^S) - y S = -log(1 - sigmoid(S)) - y S
        loss = float(-np.log(np.maximum(1.0 - G, 1e-30)).sum() - S[Yb > 0].sum())
        G -= Yb
        G /= np.float32(len(idx))
        dH = G @ W_out
        if self.normalize:
            dH /= self.tau
            dH -= U * np.einsum("ij,ij->i", U, dH)[:, None]
            dH /= norms
        g_in = np.asarray(Xc.T @ dH, dtype=np.float32)
        st = self.state
        st["adam_step"][m] += 1
        t = float(st["adam_step"][m])
        step = lr * np.sqrt(1.0 - _BETA2 ** t) / (1.0 - _BETA1 ** t)
        _adam(W_out, G.T @ H, st["adam_m_out"][:, cols], st["adam_v_out"][:, cols], step)
        if self.learn_bias:
            _adam(self.bias[m], G.sum(axis=0), st["adam_m_bias"][m], st["adam_v_bias"][m], step)
        mo, ve = st["adam_m_in"][used, cols], st["adam_v_in"][used, cols]
        _adam(w_in, g_in, mo, ve, step)
        self.W_in[used, cols], st["adam_m_in"][used, cols], st["adam_v_in"][used, cols] = w_in, mo, ve
        return loss


def _adam(param, grad, m, v, step):
    """One Adam step on ``param`` in place (``m``, ``v`` are its moments, updated in place; ``grad`` is
    overwritten)."""
    m *= _BETA1
    m += (1.0 - _BETA1) * grad
    v *= _BETA2
    np.multiply(grad, grad, out=grad)
    grad *= 1.0 - _BETA2
    v += grad
    np.sqrt(v, out=grad)                 # grad is scratch from here on
    grad += _EPS
    np.divide(m, grad, out=grad)
    grad *= step
    param -= grad
