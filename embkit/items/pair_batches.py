"""Item pairs with the exact full softmax in mini-batches of BLAS products (``ItemEmbedding(batch_size=...)``).

A chunk of the ``pairs`` driver is ``n`` draws from the co-occurrence entries in proportion to their counts
(numpy's generator instead of the kernel's alias table); the draws train in batches through
:func:`embkit.core.batched_softmax.softmax_step`, the context item's row as the hidden vector and the next item
as the class, as in the kernel.
"""
import numpy as np

from embkit.core.batched_softmax import BatchedTrainer, add_rows, batches, linear_lrs, softmax_step

__all__ = ["PairBatches"]


class PairBatches(BatchedTrainer):
    """A ``pairs`` trainer (``before_chunk`` / ``train_chunk``) for the batched full softmax.

    Parameters
    ----------
    W_in, W_out : float32 arrays (n_items, dim)
    contexts, targets : int32 arrays
        The stored entries of the co-occurrence matrix.
    weights : float array
        Count of every entry (draws are proportional to it).
    batch_size : int
    alpha, min_alpha, total_pairs, seed :
        As the ``pairs`` kernel's.
    """

    def __init__(self, W_in, W_out, contexts, targets, weights, batch_size, alpha, min_alpha, total_pairs, seed):
        self.W_in, self.W_out = W_in, W_out
        self.contexts, self.targets = np.asarray(contexts), np.asarray(targets)
        self.cumulative = np.cumsum(np.asarray(weights, dtype=np.float64))
        self.batch_size = batch_size
        self.alpha, self.min_alpha, self.total = alpha, min_alpha, total_pairs
        self.seed = seed

    def train_chunk(self, n_pairs, pairs_before, chunk_seed, n_threads):
        """Train ``n_pairs`` draws; returns ``(loss_sum, pairs, pairs)``."""
        if n_pairs <= 0:
            return 0.0, 0, 0
        rng = np.random.default_rng([self.seed, chunk_seed, 0])
        entries = np.searchsorted(self.cumulative, rng.random(n_pairs) * self.cumulative[-1], side="right")
        entries = np.minimum(entries, len(self.cumulative) - 1)
        lrs = linear_lrs(self.alpha, self.min_alpha, pairs_before + np.arange(n_pairs), self.total)
        loss = 0.0
        for start, stop in batches(n_pairs, self.batch_size):
            e = entries[start:stop]
            ctx = self.contexts[e]
            loss_b, dH = softmax_step(self.W_in[ctx], self.W_out, lrs[start:stop], targets=self.targets[e])
            add_rows(self.W_in, ctx, dH)
            loss += loss_b
        return loss, n_pairs, n_pairs
