"""Exact full softmax in mini-batches of BLAS products: the step every driver's batched path shares.

The per-example ``full_softmax`` kernel reads and writes every class row once per example, which is
memory-bound once the classes leave the cache.  Here a batch of ``b`` hidden vectors is scored at once
(``S = H W_out^T``), the softmax gradient of every positive label is summed, and the class rows are updated
with one product (``W_out -= lr G^T H``), so each class row is read and written once per batch.  Updates are
per-example SGD steps applied together at the end of the batch (the gradient of the batch's summed loss).
With ``b = 1`` a step is the per-example kernel's step.

The drivers build the hidden vectors and apply ``dH`` to their input rows: ``embkit.xc.row_batches`` (rows of
a sparse feature matrix), ``embkit.text.window_batches`` (skip-gram windows) and
``embkit.items.pair_batches`` (co-occurrence pairs).
"""
import numpy as np

from embkit.core import registry
from embkit.core.checks import POSITIVE_INT, check_param

__all__ = ["check_batch_size", "linear_lrs", "softmax_step", "add_rows", "batches", "to_unit_sphere"]


def check_batch_size(batch_size, loss):
    """ValueError unless ``batch_size`` is None, or a positive int with a loss that scores every class."""
    if batch_size is None:
        return
    check_param("batch_size", batch_size, *POSITIVE_INT)
    if not registry.loss_class(loss).SCORES_ALL_CLASSES:
        raise ValueError("batch_size applies to losses that score every class (%s) only: sampled losses train "
                         "per example in the kernels, got loss=%r"
                         % (", ".join(n for n, e in registry.LOSSES.items() if e.kernel.SCORES_ALL_CLASSES), loss))


def linear_lrs(alpha, min_alpha, done, total):
    """Learning rates (float32) after ``done`` (array) of ``total`` units: the kernels' linear schedule."""
    lr = alpha - (alpha - min_alpha) * (np.asarray(done, dtype=np.float64) / max(float(total), 1.0))
    return np.maximum(lr, min_alpha).astype(np.float32)


def softmax_step(H, W_out, lr, targets=None, label_rows=None, normalize_classes=False):
    """One full-softmax SGD step of a batch; updates ``W_out`` in place, returns ``(loss_sum, dH)``.

    Parameters
    ----------
    H : float32 array (b, dim)
        Hidden vectors as scored (the caller's normalisation and temperature already applied).
    W_out : float32 array (n_classes, dim)
    lr : float or float32 array (b,)
        Learning rate of every example.
    targets : int array (b,), optional
        One true class per example.
    label_rows : scipy.sparse csr (b, n_classes), optional
        Several true classes per example instead (each is a softmax loss of its own, as the ``rows``
        kernel takes a multi-label row).
    normalize_classes : bool
        Rescale the class rows to unit norm after the update.

    Returns
    -------
    loss_sum : float
        Summed cross-entropy of the batch, from the parameters as they were.
    dH : float32 array (b, dim)
        ``-lr * dL/dH``, computed from the class rows before the update.
    """
    b = len(H)
    lr = np.broadcast_to(np.asarray(lr, dtype=np.float32), (b,))
    if targets is not None:
        rows, labels = np.arange(b), np.asarray(targets)
        n_lab = np.ones(b, dtype=np.float32)
    else:
        rows = np.repeat(np.arange(b), np.diff(label_rows.indptr))
        labels = label_rows.indices
        n_lab = np.diff(label_rows.indptr).astype(np.float32)
    S = H @ W_out.T
    S -= S.max(axis=1, keepdims=True)
    np.exp(S, out=S)
    S /= S.sum(axis=1, keepdims=True)
    loss = float(-np.log(np.maximum(S[rows, labels], 1e-30)).sum())
    # G = lr * (n_labels * P - Y): the summed gradient of every positive label's softmax loss, scaled
    S *= (n_lab * lr)[:, None]
    if targets is not None:
        S[rows, labels] -= lr
    else:
        np.subtract.at(S, (rows, labels), lr[rows])
    dH = -(S @ W_out)                                # from the class rows as they were
    W_out -= S.T @ H
    if normalize_classes:
        to_unit_sphere(W_out)
    return loss, dH


def add_rows(W, ids, delta):
    """``W[ids] += delta`` with repeated ids summed (as sequential updates within a batch would add up)."""
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    starts = np.flatnonzero(np.r_[True, sorted_ids[1:] != sorted_ids[:-1]])
    W[sorted_ids[starts]] += np.add.reduceat(delta[order], starts, axis=0).astype(W.dtype, copy=False)


def batches(n, batch_size):
    """``(start, stop)`` of the consecutive batches of ``n`` examples."""
    for start in range(0, n, batch_size):
        yield start, min(start + batch_size, n)


class BatchedTrainer:
    """Base of the batched trainers: no sampler, so nothing to refresh between chunks."""

    def before_chunk(self, progress):
        """Nothing to refresh: the full softmax has no sampler."""


def to_unit_sphere(table):
    """Scale every row of ``table`` to unit L2 norm in place (a row of zeros stays zeros)."""
    table /= np.maximum(np.linalg.norm(table, axis=1, keepdims=True), 1e-12)
