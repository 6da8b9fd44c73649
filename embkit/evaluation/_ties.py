"""Expected credit of a true item under uniformly random tie-breaking (one rule for every ranking metric).

A true item with ``greater`` candidates scoring above it and ``ties`` scoring exactly as it takes each of the
positions ``greater .. greater + ties`` (0-based) with probability ``1 / (ties + 1)``.
"""
import numpy as np

__all__ = ["top_k_credit", "dcg_credit"]


def top_k_credit(greater, ties, k):
    """Probability that the true item ranks in the top ``k``: ``clip((k - greater) / (ties + 1), 0, 1)``."""
    return np.clip((k - np.asarray(greater)) / (np.asarray(ties) + 1.0), 0.0, 1.0)


def dcg_credit(greater, ties, k):
    """Expected ``1 / log2(position + 2)`` of the true item when its position is below ``k``, else 0.

    With a single relevant item this is its NDCG@k (the ideal DCG is 1).
    """
    greater = np.asarray(greater, dtype=np.int64)
    ties = np.asarray(ties, dtype=np.int64)
    gains = np.concatenate([[0.0], np.cumsum(1.0 / np.log2(np.arange(k) + 2.0))])  # gains[m]: positions < m
    first = np.minimum(greater, k)
    last = np.minimum(greater + ties + 1, k)
    return (gains[last] - gains[first]) / (ties + 1.0)
