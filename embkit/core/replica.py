"""The worker side of cluster training: a replica of the tables training on its own shards.

A replica is a Dask actor (see :mod:`embkit.core.cluster`, the client side): :func:`open_replica` runs as
a task with ``actor=True`` on one worker, and the :class:`Replica` it builds stays in that worker process,
where the client calls its :meth:`Replica.train_round` once a round, straight to the worker (no task, no
scheduler on the way).  It is a model of the client's class built from the client's parameters and state
(the vocabulary, the class counts), with its own copy of the tables, its own loss, sampler and kernel
trainer (the same objects as a single-process run), and the shards it reads itself.

A shard is an object with ``name`` (what an error names), ``open(model)`` (read it on the worker, return
its units per epoch) and ``chunks(model, start, stop)`` (the chunks of its units ``[start, stop)``).

Learning rate: the replica's trainer runs over its own units (epochs x its units per epoch); every round
trains the same fraction of every replica's shards, so at each reconciliation a replica's progress is the
global progress of the run.
"""
import time

import numpy as np

from embkit.core.reconcile import adopt_update, changed_rows
from embkit.core.training import check_finite, chunk_pool, train_chunk

__all__ = ["Replica", "ShardReadError", "open_replica", "worker_name"]


class ShardReadError(OSError):
    """A shard a worker could not read; the message names the file and the worker."""


def worker_name():
    """The address of the Dask worker running the current task ("this process" outside a worker)."""
    try:
        from distributed import get_worker
        return get_worker().address
    except (ImportError, ValueError):
        return "this process"


class Replica:
    """Tables, trainer and shards of one shard group on one worker (see the module docstring)."""

    def __init__(self, spec, shards, W_in, W_out, run):
        cls, params, state = spec
        self.model = model = cls._cluster_model(params, state, np.array(W_in), np.array(W_out))
        self.shards = list(shards)
        self.units = []
        for shard in self.shards:
            try:
                self.units.append(int(shard.open(model)))
            except (OSError, ValueError, EOFError, UnicodeError) as exc:
                raise ShardReadError("worker %s cannot read the shard %s: %s" % (worker_name(), shard.name, exc)) \
                    from None
        self.total = sum(self.units)
        self.run = run
        counts, n_classes = model._cluster_classes()
        self.loss, self.sampler = model._objective(counts, n_classes)
        self.trainer = model._kernel_trainer(self.loss, self.sampler, run["alpha"], run["min_alpha"],
                                             float(max(self.total, 1)) * run["epochs"])
        self.base_in, self.base_out = model.W_in.copy(), model.W_out.copy()
        self.sent = None        # the deltas of the last round, and whether they were only part of what changed
        self.partial = False
        self.pool = chunk_pool(model.workers)

    def units_per_epoch(self):
        """Units (words, pairs) of the replica's shards."""
        return self.total

    def refresh_sampler(self, progress):
        """An adaptive sampler rebuilds what it derives from ``W_out`` (after a reconciliation)."""
        if self.sampler is None or self.sampler.query_free:
            return
        rebuild = getattr(self.sampler, "rebuild", None)
        if rebuild is not None:
            rebuild()
        else:
            self.sampler.refresh(progress)

    @staticmethod
    def bounds(units, epoch_round, rounds):
        """Units of a shard trained before round ``epoch_round`` of an epoch of ``rounds`` (cut evenly)."""
        return units * epoch_round // rounds

    def train_round(self, update, epoch, round_index, group, rounds):
        """Apply the last reconciliation's ``update`` (or None), train round ``round_index`` of the ``rounds``
        of ``epoch`` on every shard, and return what changed.

        Returns a dict with the round's ``loss`` (sum), ``examples``, ``words`` (units), ``raw_words``,
        ``seconds`` (in the kernels), ``pass_seconds`` (finding and adopting rows), ``worker`` and
        ``delta``: the :class:`~embkit.core.reconcile.RowDelta` of ``W_in`` and of ``W_out`` against the
        tables of the last reconciliation (with ``share`` below 1, the part of it sent).
        """
        model, run = self.model, self.run
        adopting = time.perf_counter()
        if update is not None:
            sent = self.sent or (None, None)
            adopt_update(update[0], model.W_in, self.base_in, sent[0], self.partial)
            adopt_update(update[1], model.W_out, self.base_out, sent[1], self.partial)
        done = epoch * self.total + sum(self.bounds(u, round_index, rounds) for u in self.units)
        fraction = done / max(1, self.total * run["epochs"])
        if update is not None:
            self.refresh_sampler(fraction)
        clock = time.perf_counter()
        passes = clock - adopting        # adopting the update, then finding the rows to send
        loss = 0.0
        examples = words = raw = 0
        index = 0
        min_per_thread = getattr(model, "batch_words", None)
        for shard, units in zip(self.shards, self.units):
            start, stop = self.bounds(units, round_index, rounds), self.bounds(units, round_index + 1, rounds)
            for chunk in shard.chunks(model, start, stop):
                seed = ((epoch * rounds + round_index) * 1000003 + index) * 65537 + group
                self.trainer.before_chunk(done / max(1, self.total * run["epochs"]))
                c_loss, c_examples, c_words = train_chunk(self.trainer, chunk, done, seed, model.workers, self.pool,
                                                          min_per_thread)
                check_finite(c_loss, epoch, done / max(1, self.total * run["epochs"]), run["alpha"])
                loss += c_loss
                examples += c_examples
                words += c_words
                raw += chunk.raw_words
                done += c_words
                index += 1
        finding = time.perf_counter()
        seconds = finding - clock
        last = epoch == run["epochs"] - 1 and round_index == rounds - 1
        share = 1.0 if last else run.get("share", 1.0)     # the run's last round sends what is left
        delta_in = changed_rows(model.W_in, self.base_in, share)
        delta_out = changed_rows(model.W_out, self.base_out, share)
        self.sent, self.partial = (delta_in, delta_out), share < 1
        passes += time.perf_counter() - finding
        return {"loss": loss, "examples": examples, "words": words, "raw_words": raw, "seconds": seconds,
                "pass_seconds": passes,
                "delta": (delta_in, delta_out), "worker": worker_name()}

    def close(self):
        for shard in self.shards:
            getattr(shard, "close", lambda: None)()
        if self.pool is not None:
            self.pool.shutdown()


def open_replica(data, shards, run):
    """Task (submitted with ``actor=True``): the :class:`Replica` of ``shards`` on this worker.

    ``data`` is ``(spec, (W_in, W_out))``: the spec ``(model class, parameters, state)`` and the reconciled
    tables; ``run`` holds ``epochs``, ``alpha``, ``min_alpha`` and ``share``.
    """
    spec, tables = data
    return Replica(spec, shards, tables[0], tables[1], run)
