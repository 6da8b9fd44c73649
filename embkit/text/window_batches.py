"""Skip-gram with the exact full softmax in mini-batches of BLAS products (``Word2Vec(batch_size=...)``).

A chunk of the ``windows`` driver (word ids and sentence ends) is turned into its (context, centre) pairs
with numpy, in the kernel's order (centre by centre, context words left to right), with the same
subsampling and reduced windows, drawn from numpy's generator instead of the kernel's.  The pairs then train
in batches through :func:`embkit.core.batched_softmax.softmax_step`: the context word's input row is the hidden
vector and the centre word is the class, as in the kernel's skip-gram.
"""
import numpy as np

from embkit.core.batched_softmax import BatchedTrainer, add_rows, batches, linear_lrs, softmax_step

__all__ = ["window_pairs", "WindowBatches"]


def window_pairs(tokens, ends, keep, window, shrink, rng):
    """The skip-gram examples of a chunk, in the kernel's order.

    Parameters
    ----------
    tokens, ends : int arrays
        Word ids of the chunk and the end offset of every sentence.
    keep : float array or None
        Per-word keep probability (subsampling); None keeps every word.
    window : int
    shrink : bool
        Draw a reduced window ``window - b``, ``b`` uniform in ``[0, window)``, per centre word.
    rng : numpy.random.Generator

    Returns
    -------
    contexts, centres : int32 arrays
        One entry per example.
    positions : int64 array
        Offset of each example's centre word in the chunk (for the learning-rate schedule).
    """
    tokens = np.asarray(tokens)
    ends = np.asarray(ends, dtype=np.int64)
    sentence = np.repeat(np.arange(len(ends)), np.diff(np.r_[0, ends]))
    pos = np.arange(len(tokens))
    if keep is not None:
        kp = keep[tokens]
        kept = (kp >= 1.0) | (rng.random(len(tokens)) <= kp)
        tokens, sentence, pos = tokens[kept], sentence[kept], pos[kept]
    n = len(tokens)
    reach = window - rng.integers(0, window, n) if shrink else np.full(n, window)
    centre_idx, keys, context_idx = [], [], []
    for offset in [d for d in range(-window, window + 1) if d != 0]:
        i = np.arange(max(0, -offset), min(n, n - offset))
        j = i + offset
        ok = (sentence[i] == sentence[j]) & (reach[i] >= abs(offset))
        centre_idx.append(i[ok])
        context_idx.append(j[ok])
        keys.append(i[ok] * (2 * window + 1) + (offset + window))
    centre_idx = np.concatenate(centre_idx)
    context_idx = np.concatenate(context_idx)
    order = np.argsort(np.concatenate(keys), kind="stable")
    centre_idx, context_idx = centre_idx[order], context_idx[order]
    return (tokens[context_idx].astype(np.int32), tokens[centre_idx].astype(np.int32),
            pos[centre_idx].astype(np.int64))


class WindowBatches(BatchedTrainer):
    """A ``windows`` trainer (``before_chunk`` / ``train_chunk``) for skip-gram with the batched full softmax.

    Threads come from the BLAS library; ``n_threads`` only splits a chunk when Python threads share it.
    """

    def __init__(self, W_in, W_out, keep, window, shrink_windows, batch_size, alpha, min_alpha, total_words,
                 seed, lockf=None):
        self.W_in, self.W_out, self.keep = W_in, W_out, keep
        self.window, self.shrink = window, bool(shrink_windows)
        self.batch_size = batch_size
        self.alpha, self.min_alpha, self.total = alpha, min_alpha, total_words
        self.seed = seed
        self.lockf = lockf

    def train_chunk(self, tokens, ends, words_before, chunk_seed, n_threads):
        """Train on one chunk; returns ``(loss_sum, examples, words)`` as the kernel does."""
        tokens, ends = np.asarray(tokens), np.asarray(ends, dtype=np.int64)
        if len(ends) == 0:
            return 0.0, 0, 0
        rng = np.random.default_rng([self.seed, chunk_seed, 0])
        contexts, centres, positions = window_pairs(tokens, ends, self.keep, self.window, self.shrink, rng)
        lrs = linear_lrs(self.alpha, self.min_alpha, words_before + positions, self.total)
        loss = 0.0
        for start, stop in batches(len(centres), self.batch_size):
            ctx = contexts[start:stop]
            loss_b, dH = softmax_step(self.W_in[ctx], self.W_out, lrs[start:stop], targets=centres[start:stop])
            if self.lockf is not None:
                dH *= self.lockf[ctx % len(self.lockf)][:, None]
            add_rows(self.W_in, ctx, dH)
            loss += loss_b
        return loss, len(centres), len(tokens)
