"""The ``one_vs_all`` solver: a binary logistic loss of every label, trained in mini-batches of BLAS products.

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

Threads: the members train side by side (they share no parameter), and a step's label work (the scores, loss,
gradients and Adam steps of the label rows and biases) is cut into blocks of :data:`LABEL_BLOCK` labels that
the member's thread and the threads beyond one a member take as they come, each block one kernel call without
the GIL (:func:`embkit._kernels.batch_rows.label_block`: its BLAS products and passes).  The blocks do not depend on
the thread count and their input gradients are summed in block order, so any number of threads trains the
same model.  The input side of a step (the batch's hidden vectors, the lazy Adam step of the feature rows it
uses) is kernels without the GIL too; a step's Python bookkeeping holds it.  A step has ``members x blocks``
tasks: more threads than that have nothing to do.

:class:`OneVsAll` is the solver :class:`~embkit.xc.classifier.ExtremeClassifier` asks, :class:`Logistic`
its loss and :class:`OneVsAllBatches` its trainer.
"""
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from embkit._kernels.batch_rows import adam_used_rows, batch_hidden, label_block
from embkit._kernels.losses import Loss
from embkit.core.checks import POSITIVE_INT, check_param
from embkit.core.threads import map_on_threads, map_with_helpers
from embkit.xc.heads import DEFAULT_HEADS
from embkit.xc.solver import Solver

__all__ = ["OneVsAll", "Logistic", "OneVsAllBatches", "member_scores", "initial_bias", "OPTIMIZER_ARRAYS",
           "LABEL_BLOCK", "MAX_THREADS"]

#: labels whose scores, gradients and Adam steps a step computes as one task of its threads
LABEL_BLOCK = 128
#: most threads the trainer uses (None: as many as a step has tasks, ``members x label blocks``)
MAX_THREADS = None

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


def _sigmoid(S, out=None):
    """``1 / (1 + e^-S)`` (``S`` clipped to [-30, 30]), a pass a ufunc, into ``out`` (None: a new array)."""
    out = np.clip(S, -30.0, 30.0, out=out)
    np.negative(out, out=out)
    np.exp(out, out=out)
    out += 1.0
    return np.reciprocal(out, out=out)


class Logistic(Loss):
    """The loss of the one_vs_all solver: a binary logistic loss of every label on its score,
    ``log(1 + e^S) - y S``.

    A :class:`~embkit._kernels.losses.Loss` by its capability constants and its output table (one row per
    label, every label scored, no sampler), without a per-example kernel step: :class:`OneVsAllBatches`
    trains it, a block of labels at a time (:func:`~embkit._kernels.batch_rows.label_block`).
    """

    name = "logistic"
    USES_NEGATIVES, NEEDS_LOGQ, NEEDS_QUERY_FREE, PRIVATE_ROWS = False, False, False, False
    CLASS_ROWS, TREE_ROWS, STACKED, SCORES_ALL_CLASSES = True, False, False, True


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
    loss : Logistic
        The loss whose gradient a step takes.
    X, Y : scipy.sparse.csr_matrix
        Weighted features and binary labels of the training rows (``Y`` with each label once a row, as
        :class:`~embkit.xc.classifier.ExtremeClassifier` prepares it).
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

    def __init__(self, loss, X, Y, W_in, W_out, bias, state, batch_size, members, alpha, min_alpha,
                 total_examples, normalize, tau, seed, learn_bias=True):
        self.loss, self.learn_bias = loss, learn_bias
        self.X, self.Y, self.W_in, self.W_out, self.bias, self.state = X, Y, W_in, W_out, bias, state
        self.batch_size, self.members = batch_size, members
        self.alpha, self.min_alpha, self.total = alpha, min_alpha, total_examples
        self.normalize, self.tau, self.seed = normalize, np.float32(tau), seed
        # the CSR arrays as the batch kernels take them, and a row-slot scratch per member (one thread each)
        self._csr_x = (X.indptr.astype(np.int64), X.indices.astype(np.int32), X.data.astype(np.float32))
        self._csr_y = (Y.indptr.astype(np.int64), Y.indices.astype(np.int32))
        self._slots = [np.full(len(W_in), -1, dtype=np.int32) for _ in range(members)]

    def before_chunk(self, progress):
        """Nothing to refresh: every label is a negative."""

    def train_chunk(self, order, examples_before, chunk_seed, n_threads):
        """Train the rows ``order`` on ``n_threads`` threads (at most :data:`MAX_THREADS`); returns ``(loss_sum,
        label_steps, examples)``."""
        n_labels = len(self.W_out)
        blocks = [(lo, min(lo + LABEL_BLOCK, n_labels)) for lo in range(0, n_labels, LABEL_BLOCK)]
        threads = max(1, min(int(n_threads), self.members * len(blocks), MAX_THREADS or n_threads))
        # the members' threads, and helpers that take label blocks of any member's step beside them
        helpers = threads - min(threads, self.members) if len(blocks) > 1 else 0
        label_pool = ThreadPoolExecutor(helpers) if helpers else None
        try:
            def member(m):
                return self._train_member(m, order, examples_before, chunk_seed, blocks, label_pool, helpers)

            losses = map_on_threads(member, range(self.members), threads)
        finally:
            if label_pool is not None:
                label_pool.shutdown()
        return sum(losses) / self.members, int(np.diff(self.Y.indptr)[order].sum()), len(order)

    def _train_member(self, m, order, examples_before, chunk_seed, blocks, label_pool, helpers):
        """Member ``m``'s steps over the rows ``order`` (in its own permutation); returns its loss sum."""
        d = self.W_in.shape[1] // self.members
        cols = slice(m * d, (m + 1) * d)
        rng = np.random.default_rng([self.seed, m, chunk_seed])
        mine = (order if self.members == 1 else rng.permutation(order)).astype(np.int64)
        loss = 0.0
        for start in range(0, len(mine), self.batch_size):
            idx = mine[start:start + self.batch_size]
            position = examples_before + start + len(idx) / 2.0
            lr = max(self.alpha - (self.alpha - self.min_alpha) * position / max(self.total, 1.0), self.min_alpha)
            loss += self._step(idx, cols, m, lr, blocks, label_pool, helpers)
        return loss

    def _step(self, idx, cols, m, lr, blocks, label_pool, helpers):
        X, d = self._csr_x, cols.stop - cols.start
        H = np.empty((len(idx), d), dtype=np.float32)
        batch_hidden(*X, idx, self.W_in, cols.start, H)
        if self.normalize:
            U, norms = _unit(H)
            H = U / self.tau
        st = self.state
        st["adam_step"][m] += 1
        t = float(st["adam_step"][m])
        step = lr * np.sqrt(1.0 - _BETA2 ** t) / (1.0 - _BETA1 ** t)

        dH_blocks = np.empty((len(blocks), len(idx), d), dtype=np.float32)

        def labels(b):
            lo, hi = blocks[b]
            return label_block(H, *self._csr_y, idx, self.W_out, st["adam_m_out"], st["adam_v_out"], self.bias,
                               st["adam_m_bias"], st["adam_v_bias"], m, lo, hi, cols.start, step, _BETA1, _BETA2,
                               _EPS, self.learn_bias, dH_blocks[b])

        losses = map_with_helpers(labels, len(blocks), label_pool, helpers)
        loss = sum(losses)                      # in block order: the same sums on any number of threads
        dH = dH_blocks.sum(axis=0) if len(blocks) > 1 else dH_blocks[0]
        if self.normalize:
            dH /= self.tau
            dH -= U * np.einsum("ij,ij->i", U, dH)[:, None]
            dH /= norms
        adam_used_rows(*X, idx, np.ascontiguousarray(dH, dtype=np.float32), self.W_in, st["adam_m_in"],
                       st["adam_v_in"], cols.start, step, _BETA1, _BETA2, _EPS, self._slots[m])
        return loss


class OneVsAll(Solver):
    """The one_vs_all solver: :class:`Logistic` in Adam steps on BLAS mini-batches, with an ensemble.

    Its defaults were chosen on a validation split of Bibtex and Delicious (see BENCHMARKS.md and RESULTS.md):
    two members of 128 dimensions, alpha 0.01 (Adam's step size), 10 epochs alone and 4 with heads asked for
    (:attr:`BLENDED_DEFAULTS`: the heads carry much of the quality), 256 examples per step, tf-idf weighted
    and L2-normalised rows, raw hidden vectors (tau 1), a bias per label.  It takes no sampler: every label
    is a negative.
    """

    name = "one_vs_all"
    default_loss = Logistic.name
    losses = (Logistic.name,)
    default_heads = DEFAULT_HEADS
    DEFAULTS = {"vector_size": 256, "alpha": 0.01, "epochs": 10, "normalize": False, "tau": 1.0, "batch_size": 256,
                "feature_weighting": "tfidf", "normalize_rows": True, "ensemble": 2, "normalize_classes": False}
    #: the defaults that differ when heads are blended
    BLENDED_DEFAULTS = {"epochs": 4}
    def blas_threads(self, model):
        """1: the trainer's threads run the members and the label blocks, each with a single-threaded BLAS (the
        products are small: threaded BLAS on them costs more than it gives, and much more on a busy machine)."""
        return 1

    def defaults(self, loss, heads=()):
        return dict(self.DEFAULTS, **(self.BLENDED_DEFAULTS if heads else {}))

    def loss_class(self, loss):
        return Logistic

    def check_params(self, model):
        check_param("batch_size", model.batch_size, *POSITIVE_INT)
        if model.vector_size % model.ensemble:
            raise ValueError("vector_size (%d) must be a multiple of ensemble (%d): every member gets "
                             "vector_size / ensemble columns" % (model.vector_size, model.ensemble))
        for name in ("normalize_classes", "one_label", "hot_rows"):
            if getattr(model, name):
                raise ValueError("%s applies to solver='sampled' (the registry's losses), not to solver=%r"
                                 % (name, self.name))

    def check_objective(self, model):
        if model.sampler is not None:
            raise ValueError("solver=%r takes every label as a negative: it has no sampler (got %r); use "
                             "solver='sampled' with loss='sgns' and a sampler for sampled or hard negatives"
                             % (self.name, model.sampler))

    def build_loss(self, model, counts, n_classes):
        return Logistic()

    def objective(self, model, counts, n_classes):
        return Logistic(), None

    def fresh_state(self, model, n_rows):
        """Members' input rows drawn N(0, 1/d) (each member from its own seed), zero label rows, biases at the
        labels' log-odds (zeros without ``label_bias``) and zero Adam moments."""
        d = model.vector_size // model.ensemble
        for m in range(model.ensemble):
            rng = np.random.default_rng([model.seed, m])
            model.W_in[:, m * d:(m + 1) * d] = rng.standard_normal((len(model.W_in), d), dtype=np.float32) / np.sqrt(d)
        model.W_out[:] = 0.0
        bias = initial_bias(model.label_counts, n_rows) if model.label_bias \
            else np.zeros(len(model.label_counts), np.float32)
        biases = np.tile(bias, (model.ensemble, 1))
        state = {"adam_step": np.zeros(model.ensemble, np.int64)}
        for name, like in (("in", model.W_in), ("out", model.W_out), ("bias", biases)):
            state["adam_m_" + name] = np.zeros_like(like)
            state["adam_v_" + name] = np.zeros_like(like)
        return biases, state

    def optimizer_state(self, arrays):
        if all(name in arrays for name in OPTIMIZER_ARRAYS):
            return {name: np.array(arrays[name]) for name in OPTIMIZER_ARRAYS}
        return None

    def trainer(self, model, X, Y, loss, sampler, alpha, min_alpha, total):
        return OneVsAllBatches(loss, X, Y, model.W_in, model.W_out, model.label_biases, model._optimizer,
                               model.batch_size, model.ensemble, alpha, min_alpha, total, model.normalize, model.tau,
                               model.seed, learn_bias=model.label_bias)

    def scores(self, model, H):
        return member_scores(H, model.label_vectors, model.label_biases, model.ensemble, model.normalize,
                             model.tau)
