"""User histories as weighted rows of items: the recency weighting behind ``ItemEmbedding.recommend``.

A history is a sequence of items, oldest first and most recent last.  The item ``k`` steps before the most
recent one weighs ``recency ** k``: with ``recency=1`` every item counts the same, with ``recency=0`` only
the most recent one counts.  A user's query vector is the weighted sum of the context vectors of the
history's items, so the next items are scored by ``sum_k recency**k <W_in[h_k], W_out[j]>``; an item that
appears several times adds up its weights.  The items of a history are its *seen* items, which
recommendations filter out.
"""
import numpy as np
import scipy.sparse as sp

__all__ = ["history_matrix", "recency_weights"]


def recency_weights(lengths, recency):
    """The weight of every position of histories of ``lengths`` items, concatenated (most recent last)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    ends = np.cumsum(lengths)
    age = np.repeat(ends, lengths) - np.arange(int(ends[-1]) if len(ends) else 0) - 1   # 0 for the most recent
    return np.power(np.float64(recency), age)


def history_matrix(histories, n_items, recency):
    """Weights and seen items of histories of item rows.

    Parameters
    ----------
    histories : sequence of numpy.ndarray of int
        Item rows of each history, oldest first.
    n_items : int
        Number of items (columns).
    recency : float
        Weight ratio between an item and the one after it, in ``[0, 1]``.

    Returns
    -------
    weights : scipy.sparse.csr_matrix of float32
        ``users x items``: the summed recency weights of each user's items.
    seen : scipy.sparse.csr_matrix of bool
        ``users x items``: the items of each history.
    """
    lengths = np.fromiter((len(h) for h in histories), dtype=np.int64, count=len(histories))
    rows = np.repeat(np.arange(len(histories)), lengths)
    cols = np.concatenate([np.asarray(h, dtype=np.int64) for h in histories]) if len(histories) else rows
    shape = (len(histories), n_items)
    weights = sp.csr_matrix((recency_weights(lengths, recency).astype(np.float32), (rows, cols)), shape=shape)
    seen = sp.csr_matrix((np.ones(len(cols), dtype=bool), (rows, cols)), shape=shape)
    seen.sum_duplicates()
    return weights, seen
