"""Co-occurrence pairs in shards, for ``ItemEmbedding.fit`` on a Dask cluster (``client=``).

The client holds the co-occurrence matrix; its entries are dealt into one shard per worker, of about equal
pair counts, and each worker's replica draws pairs from its own entries only (the ``pairs`` driver's
alias table over them).  See :mod:`embkit.cluster` for the rounds and the reconciliation.
"""
import numpy as np

from embkit._kernels.samplers import AliasSampler

__all__ = ["PairChunk", "PairShard", "pair_shards"]


class PairChunk:
    """``n`` pair draws: what the ``pairs`` driver's ``train_chunk`` takes first."""

    __slots__ = ("kernel_args", "raw_units")

    def __init__(self, n):
        self.kernel_args = (n,)
        self.raw_units = n

    def __len__(self):
        return self.raw_units


class PairShard:
    """Some entries ``(context, target, count)`` of the matrix: one replica's share of the pairs."""

    def __init__(self, index, contexts, targets, counts):
        self.name = "pairs shard %d (%d entries)" % (index, len(counts))
        self.contexts = np.ascontiguousarray(contexts, dtype=np.int32)
        self.targets = np.ascontiguousarray(targets, dtype=np.int32)
        self.counts = np.ascontiguousarray(counts, dtype=np.float64)
        self.size = float(self.counts.sum())

    def open(self, model):
        """Hand the entries to the model's driver; returns the pairs of one epoch."""
        model._pairs = (self.contexts, self.targets, AliasSampler(self.counts), self.counts)
        return max(int(round(self.size)), 1)

    def chunks(self, model, start, stop):
        left = stop - start
        while left > 0:
            n = min(left, model.chunk_pairs)
            left -= n
            yield PairChunk(n)


def pair_shards(coo, n):
    """The entries of a COO matrix in ``n`` shards of about equal pair mass (consecutive entries)."""
    cumulative = np.cumsum(coo.data)
    cuts = np.searchsorted(cumulative, cumulative[-1] * np.arange(1, n) / n, side="right")
    bounds = [0] + [int(c) for c in cuts] + [len(coo.data)]
    return [PairShard(k, coo.row[a:b], coo.col[a:b], coo.data[a:b]) for k, (a, b) in
            enumerate(zip(bounds[:-1], bounds[1:])) if b > a]
