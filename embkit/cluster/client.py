"""Training on a Dask cluster: the client side (the workers' side is :mod:`embkit.cluster.replica`).

A model given ``client=`` (a ``dask.distributed.Client``) trains like this:

1. its shards (files, or parts of an in-memory data set) are grouped, one group per worker, balanced by
   size (:mod:`embkit.cluster.plan`); each worker opens a **replica**, a Dask actor: the model built from the
   client's parameters and state, a copy of the tables, its own loss, sampler and kernel trainer, and its
   shards, which it reads itself; the replicas are given each other's actors;
2. each epoch runs in **rounds** (``syncs_per_epoch`` even ones; by default, for two replicas, rounds that
   shrink towards the end of the run to about :data:`~embkit.cluster.settings.ROUND_UNITS` units per replica,
   for more even rounds of that size, within which the most frequent words' rows are reconciled after
   every part of about :data:`~embkit.cluster.settings.HOT_PART_UNITS` units, and a lone replica's even and
   longer: :mod:`embkit.cluster.rounds`, :func:`~embkit.cluster.settings.hot_rows`):
   the client calls every replica at once (an actor call goes straight to its worker: no task, no scheduler
   on the way), which trains the same fraction of its shards with embkit's nogil kernel on its own threads
   (``workers``), then reconciles with the other replicas directly: each merges every n-th row of the
   tables (:mod:`embkit.cluster.reconcile`; two replicas each merge every row) from the changed rows the
   others send it (with ``exchange_share`` below 1, the farthest moved of them, the rest kept for later
   rounds) and sends the merged rows to the others; with ``staleness`` 1 a replica trains the next round
   while a round's rows travel, and adopts them when that round ends;
3. the client's tables (the model's ``W_in`` / ``W_out``) are the reconciled ones when it needs them: a run
   with checkpoints or callbacks, or of one replica, has every round's merged rows sent to the client;
   another fetches the reconciled tables from a replica at an epoch's end when ``on_epoch`` reads them,
   after a lost worker, and at the end (every replica holds them, bit for bit);
4. when a worker is lost mid-round, the client calls the round off on the others, opens every replica
   again (the lost one on a live worker) from the reconciled tables, and trains the same round again: the
   run goes on, and the result is the same kind of model.

Every loss and sampler works: a replica builds them from the registry as a single-process run does, and
adaptive samplers rebuild after each reconciliation.  With ``checkpoint_dir`` the client writes
checkpoints of the reconciled tables (and the merge's momentum) between rounds; ``resume`` continues a run
from its last one, on a cluster whose number of workers may differ.
"""
import logging
import threading
import time
import uuid

import numpy as np

from embkit.cluster.mailbox import RoundAborted
from embkit.cluster.plan import group_shards
from embkit.cluster.reconcile import BLOCK_RATE, RowDelta, apply_update
from embkit.cluster.replica import open_replica
from embkit.cluster.rounds import RoundPlan
from embkit.cluster.settings import (EXCHANGE_BITS, EXCHANGE_SHARE, FREQUENT_ROWS, HotRows, check_client,
                                     distributed_module, hot_rows, round_parts, round_plan, run_staleness)
from embkit.cluster.stats import ClusterStats
from embkit.cluster.tables import TablesNotDrawn, recipe as tables_recipe
from embkit.cluster.worker import ShardReadError
from embkit.core import checkpoint
from embkit.core.training import run_steps

logger = logging.getLogger(__name__)

__all__ = ["train_on_cluster", "MomentumState"]

#: seconds between checks of the workers while a round runs
POLL_SECONDS = 0.25
#: times one shard group may be reopened within one round before the run gives up
MAX_REOPEN = 3
#: deadline of sending data to the workers: this many seconds plus its bytes at SHARE_BYTES_PER_SECOND
SHARE_SECONDS = 10.0
SHARE_BYTES_PER_SECOND = 20e6


def _arrays(data):
    """The numpy arrays (and RowDelta values) inside nested tuples."""
    if isinstance(data, (tuple, list)):
        for item in data:
            yield from _arrays(item)
    elif isinstance(data, np.ndarray):
        yield data
    elif hasattr(data, "values") and hasattr(data, "ids"):
        yield data.values
        yield data.ids


def _with_deadline(call, seconds):
    """``call()`` on a thread of its own, given up (TimeoutError) after ``seconds``: a call to a worker that
    died meanwhile can outlast Dask's own timeouts."""
    box = {}

    def run():
        try:
            box["value"] = call()
        except Exception as exc:    # handed to the caller
            box["error"] = exc
    thread = threading.Thread(target=run, name="embkit-cluster-call", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise TimeoutError("no answer within %.0f s" % seconds)
    if "error" in box:
        raise box["error"]
    return box["value"]


class MomentumState:
    """The block momentum of ``W_in`` and ``W_out`` (``"momentum"`` merges of 3 replicas or more), as
    checkpoints keep it: each replica holds the momentum of the rows it merges; the run's client gathers it
    for a checkpoint and hands a resumed one's to the replicas."""

    def __init__(self, job):
        self.job = job

    def get_state(self):
        momentum = self.job.gather_momentum()
        return {} if momentum is None else {"W_in": momentum[0], "W_out": momentum[1]}

    def set_state(self, state):
        if "W_in" in state and "W_out" in state:
            self.job.scatter_momentum((state["W_in"], state["W_out"]))


class _Run:
    """One cluster training run (see :func:`train_on_cluster`)."""

    def __init__(self, model, client, shards, run):
        self.model, self.client, self.run = model, client, run
        self.distributed = distributed_module()
        workers = sorted(check_client(client))
        self.groups = group_shards(shards, len(workers))
        if len(self.groups) < len(workers):
            logger.warning("%d shard%s for %d workers: only %d of them train%s (a compressed file is one shard: split "
                           "the corpus into at least as many files as workers)", len(shards),
                           "" if len(shards) == 1 else "s", len(workers), len(self.groups),
                           "s" if len(self.groups) == 1 else "")
        self.spec = model.replica_spec()
        self.address = {}
        self.actors = {}        # group -> (future of its open task, Actor)
        self.units = {}         # group -> units per epoch
        self.stats = ClusterStats(len(self.groups))
        run["replicas"] = len(self.groups)
        self.momentum = None        # the block momentum handed to the replicas when they open
        if run["mode"] == "momentum" and len(self.groups) > BLOCK_RATE:
            self.momentum = (np.zeros_like(model.W_in), np.zeros_like(model.W_out))
        self.connected = False
        # the replicas send the client every round's merged rows (relay), or the client fetches the reconciled
        # tables when it needs them (fetch): at an epoch's end for on_epoch, after a lost worker, at the end
        self.relay = True
        self.stale = False      # the model's tables are behind the replicas' (rounds not relayed)
        self.tables_key = None      # (epoch, round) of the last reconciliation in the model's tables
        self.plan = None        # the RoundPlan, once the replicas have told their units
        self.hot = None         # the frequent rows of each table reconciled within rounds (settings.hot_rows)
        self.draw_tables = True     # the workers may draw fresh tables instead of receiving them
        self.open([(g, workers[g % len(workers)]) for g in range(len(self.groups))])

    def _lost(self, future):
        """Whether a failed task failed because its worker went away (not because of its own error)."""
        if future.status == "cancelled":
            return True
        from distributed.comm import CommClosedError
        return isinstance(future.exception(), (self.distributed.KilledWorker, CommClosedError))

    def open(self, placements):
        """Open the replicas of ``[(group, worker address)]`` (actors) from the client's tables (their shards
        are read on the workers); a group whose worker is lost meanwhile is placed again.  Tables that are
        what the model's seed draws are drawn on the workers (:mod:`embkit.cluster.tables`), other tables
        sent, as is a block momentum that is not all zeros."""
        self.connected = False
        attempts = {}
        draw = self.draw_tables and tables_recipe(self.model)
        moving = self.momentum is not None and any(m.any() for m in self.momentum)
        while placements:
            data = self.share((self.spec, draw or (self.model.W_in, self.model.W_out),
                               self.momentum if moving else None), {addr for _, addr in placements})
            if data is None:        # every target is gone
                for g, _ in placements:
                    attempts[g] = attempts.get(g, 0) + 1
                placements = [(g, self.replacement(g, attempts[g])) for g, _ in placements]
                continue
            futures = {}
            self.run["tables_key"] = self.tables_key        # what the replicas' tables hold
            for g, addr in placements:
                self.drop(g)
                self.address[g] = addr
                futures[g] = self.client.submit(open_replica, data, self.groups[g], self.run, g,
                                                key="embkit-replica-%s" % uuid.uuid4().hex, workers=[addr],
                                                allow_other_workers=False, actor=True)
            try:
                opened = self.wait(futures)
            except TablesNotDrawn as exc:      # the workers draw other tables: send the client's
                logger.info("%s: sending the tables", exc)
                for future in futures.values():
                    future.cancel()
                self.draw_tables, draw = False, None
                continue
            placements = []
            for g, actor in opened.items():
                self.actors[g] = (futures[g], actor)
                units = self.answer(g, self.ask(g, "units_per_epoch")) if actor is not None else None
                if units is not None:
                    self.units[g] = units
                else:
                    self.actors.pop(g)
                    futures[g].cancel()
                    attempts[g] = attempts.get(g, 0) + 1
                    placements.append((g, self.replacement(g, attempts[g])))
            del data

    def ask(self, group, method, *args):
        """``method(*args)`` of the replica of ``group`` (a call of its actor, straight to its worker), or None
        when its worker is lost before it answers.  The replica's own errors are raised."""
        try:
            pending = getattr(self.actors[group][1], method)(*args)
        except Exception as exc:    # the actor's worker is already gone (or the call is wrong: raised)
            if self.alive(group, wait=True):
                raise
            logger.debug("calling %s on %s failed: %s", method, self.address[group], exc)
            return None
        return pending

    def answer(self, group, pending, watch=()):
        """The value of ``pending`` (what :meth:`ask` gave), or None when the worker of ``group`` is lost
        before it answers.  The replica's own errors are raised.  While it waits, a lost worker of the groups
        of ``watch`` calls the round off on every replica (the replica of ``group`` waits for its rows)."""
        while pending is not None:
            try:
                return pending.result(timeout=POLL_SECONDS)
            except TimeoutError:
                gone = self.gone([group] + list(watch))
                if group in gone:
                    return None
                if gone:
                    self.abort()
                    watch = ()
            except ShardReadError:
                raise
            except OSError as exc:  # the connection to the worker closed, or no worker to contact
                if self.alive(group, wait=True):
                    raise
                logger.debug("a call to %s failed: %s", self.address[group], exc)
                return None
        return None

    def alive(self, group, wait=False):
        """Whether the worker of ``group`` is still in the cluster (``wait``: after the scheduler has had a
        moment to notice a loss)."""
        if wait:
            time.sleep(4 * POLL_SECONDS)
        return not self.gone([group])

    def gone(self, groups):
        """Those of ``groups`` whose worker is no longer in the cluster."""
        live = self.client.nthreads()
        return [g for g in groups if self.address[g] not in live]

    def drop(self, group):
        """Forget the replica of ``group`` (its actor is released on its worker, if that is still there)."""
        future, _ = self.actors.pop(group, (None, None))
        if future is not None:
            future.cancel()

    def share(self, data, targets):
        """A future of ``data`` held by every live worker of ``targets`` (None if none is live).

        A worker that dies during the transfer can stall it past Dask's own timeout: each attempt has a
        deadline of its own, and is retried, after the scheduler has had a moment to notice, without the
        workers that are gone."""
        mb = sum(getattr(a, "nbytes", 0) for a in _arrays(data)) / 1e6
        seconds = SHARE_SECONDS + mb * 1e6 / SHARE_BYTES_PER_SECOND
        for _ in range(MAX_REOPEN + 1):
            live = sorted(set(targets) & set(self.client.nthreads()))
            if not live:
                return None
            try:
                return self._scatter(data, live, seconds)
            except Exception as exc:    # a timeout, or a closed connection to a lost worker
                logger.warning("sending %.0f MB to %s failed (%s): retrying with the workers still there",
                               mb, ", ".join(live), exc)
                time.sleep(4 * POLL_SECONDS)
        raise RuntimeError("could not send the tables to the workers %s" % ", ".join(sorted(targets)))

    def _scatter(self, data, live, seconds):
        """``client.scatter`` to ``live``, given up after ``seconds``."""
        return _with_deadline(lambda: self.client.scatter(data, workers=live, broadcast=True, hash=False,
                                                          timeout=seconds), seconds)

    def replacement(self, group, attempt):
        """A live worker for a lost replica (the one holding fewest replicas)."""
        if attempt > MAX_REOPEN:
            raise RuntimeError("the replica of shards %s was lost %d times; giving up (the model holds the tables "
                               "of the last reconciliation)" % (", ".join(s.name for s in self.groups[group]),
                                                                 attempt))
        live = sorted(check_client(self.client))
        held = {addr: 0 for addr in live}
        for g, addr in self.address.items():
            if g != group and addr in held:
                held[addr] += 1
        addr = min(live, key=lambda a: held[a])
        self.stats.reopened.append("%s -> %s" % (self.address.get(group), addr))
        logger.warning("worker %s was lost: its shards (%s) are retried on %s", self.address.get(group),
                       ", ".join(s.name for s in self.groups[group]), addr)
        return addr

    def wait(self, futures):
        """Results of ``{group: future}``; None for a group whose worker was lost.  A task's own error
        (an unreadable shard, divergence) is raised."""
        results = {}
        pending = dict(futures)
        while pending:
            try:
                self.distributed.wait(list(pending.values()), timeout=POLL_SECONDS, return_when="FIRST_COMPLETED")
            except Exception:   # the timeout: check the workers below
                pass
            live = None
            for g, future in list(pending.items()):
                if future.status == "finished":
                    results[g] = future.result()
                elif future.status in ("error", "cancelled"):
                    if not self._lost(future):
                        future.result()         # raises the task's own error
                    results[g] = None
                else:
                    if live is None:
                        live = set(self.client.nthreads())
                    if self.address[g] in live:
                        continue
                    future.cancel()
                    results[g] = None
                del pending[g]
        return results

    def connect(self):
        """Give every replica the actors of all; the groups whose worker was lost meanwhile."""
        actors = [self.actors[g][1] for g in range(len(self.groups))]
        calls = {g: self.ask(g, "connect", actors) for g in range(len(self.groups))}
        lost = [g for g, call in calls.items() if self.answer(g, call) is None]
        self.connected = not lost
        return lost

    def abort(self):
        """Call off the round on every replica (they stop waiting for each other's rows)."""
        for g in list(self.actors):
            try:
                self.ask(g, "abort")
            except Exception as exc:    # its worker is gone: nothing waits there
                logger.debug("calling the round off on %s failed: %s", self.address[g], exc)

    def round(self, epoch, r):
        """Train round ``r`` of ``epoch`` on every replica, which reconcile among themselves; returns their
        results.  When a worker is lost, the others' round is called off and every replica is opened again
        from the client's tables (the reconciled ones of the last round), the lost one on a live worker.  With
        ``staleness`` 1 the tables a survivor gives may lack the last round (its rows were still on their way):
        that round is then trained again first, reconciled at once (its results are not counted twice)."""
        again = None
        attempt = 0
        while True:
            lost = [] if self.connected else self.connect()
            if not lost and again is not None:
                results, lost = self.call_round(epoch, again, 0)
                if results is not None:
                    again = None
            if not lost and again is None:
                results, lost = self.call_round(epoch, r, self.run["staleness"])
                if results is not None:
                    return results
            attempt += 1
            placements = [(g, self.replacement(g, attempt) if g in lost else self.address[g])
                          for g in range(len(self.groups))]
            if self.momentum is not None:   # the replicas' momentum is a round ahead of the tables, or lost
                self.momentum = (np.zeros_like(self.model.W_in), np.zeros_like(self.model.W_out))
            if self.stale and not self.fetch(exclude=lost):
                logger.warning("no replica is left to give the tables: the run goes on from the tables the client "
                               "fetched last")
                self.stale = False
            self.open(placements)
            if self.run["staleness"] and r > 0 and self.tables_key != (epoch, r - 1):
                again = r - 1

    def call_round(self, epoch, r, staleness):
        """One call of ``train_round`` on every replica: ``(results, [])``, or ``(None, lost groups)`` when a
        worker was lost (or the round called off)."""
        n = len(self.groups)
        span = self.plan.span(epoch, r)
        hot = None
        if self.hot is not None and not staleness:
            hot = HotRows(self.hot, round_parts(span, max(self.units.values())))
        calls = {g: self.ask(g, "train_round", span, self.relay, staleness, hot) for g in range(n)}
        results = {}
        try:
            for g, call in calls.items():
                try:
                    results[g] = self.answer(g, call, [k for k in calls if k not in results and k != g])
                except RoundAborted:    # another replica was lost (it is answered below)
                    results[g] = False
                if results[g] is None:
                    self.abort()        # the others would wait for its rows
        except BaseException:           # a replica's own error, or Ctrl-C: none may wait on
            self.abort()
            raise
        if all(results.values()):
            return [results[g] for g in range(n)], []
        return None, [g for g in range(n) if results[g] is None]

    def reconcile(self, key, results):
        """Add the merged rows of round ``key`` (each replica's own rows) to the model's tables (relayed), or
        note that they are behind the replicas' (fetched when needed: :meth:`fetch`)."""
        clock = time.perf_counter()
        tables = (self.model.W_in, self.model.W_out)
        for res in results:
            if res["merged"] is None:
                self.stale = True
                continue
            res["merged"] = [tuple(RowDelta.from_wire(w) for w in wires) for wires in res["merged"]]
            for merged in res["merged"]:     # the frequent rows' reconciliations first, in order
                for update, table in zip(merged, tables):
                    apply_update(update, table)
            self.tables_key = key
        self.stats.rounds += 1
        self.stats.hot_syncs += max(res["hot_syncs"] for res in results)
        if any(res["reconciled"] for res in results):
            self.stats.rows_changed.append(sum(res["rows"] for res in results))
        self.stats.bytes_up += sum(res["bytes_up"] for res in results)
        self.stats.bytes_down += sum(res["bytes_down"] for res in results)
        self.stats.apply_seconds += time.perf_counter() - clock

    def fetch(self, exclude=()):
        """Copy the reconciled tables of a live replica (but those of ``exclude``) into the model's, if they
        are behind; whether they are current.  After a lost worker, a replica's tables may hold the round
        that failed (it had every part when the other was lost): that round is then trained again."""
        if not self.stale:
            return True
        clock = time.perf_counter()
        for g in sorted(self.actors):
            if g in exclude or self.gone([g]):
                continue
            try:
                value = self.answer(g, self.ask(g, "tables"))
            except Exception as exc:    # a replica that cannot answer: another may
                logger.debug("fetching the tables from %s failed: %s", self.address[g], exc)
                continue
            if value is not None:
                key, W_in, W_out = value
                if key is not None:     # else it holds the tables it was opened with: the client's
                    self.tables_key = key
                np.copyto(self.model.W_in, W_in)
                np.copyto(self.model.W_out, W_out)
                self.stale = False
                self.stats.fetches += 1
                break
        self.stats.apply_seconds += time.perf_counter() - clock
        return not self.stale

    def gather_momentum(self):
        """The replicas' block momentum of both tables, whole (None without momentum)."""
        if self.momentum is None:
            return None
        for g in range(len(self.groups)):
            part = self.answer(g, self.ask(g, "momentum_part"))
            if part is None:    # its worker is lost: the round that reopens the replicas restarts momentum
                continue
            for table, rows in zip(self.momentum, part):
                table[g::len(self.groups)] = rows
        return self.momentum

    def scatter_momentum(self, momentum):
        """Hand the block momentum of a resumed run to the replicas (ignored by a run without momentum)."""
        if self.momentum is None:
            return
        for table, value in zip(self.momentum, momentum):
            np.copyto(table, value)
        for g in range(len(self.groups)):
            self.answer(g, self.ask(g, "set_momentum", self.momentum))

    def close(self):
        self.abort()
        for g in list(self.actors):
            try:    # a closing run must not hide the run's own error
                _with_deadline(lambda: self.answer(g, self.ask(g, "close")), SHARE_SECONDS)
            except Exception as exc:
                logger.debug("closing the replica on %s failed: %s", self.address[g], exc)
            self.drop(g)


def relays(model, replicas, checkpointer):
    """Whether a run has every round's merged rows sent to the client: checkpoints and callbacks may read the
    tables after any round, and a lone replica's loss would lose the rounds since the client last fetched
    them; other runs fetch the reconciled tables when they need them."""
    return replicas == 1 or checkpointer is not None or bool(model.callbacks)


def train_on_cluster(model, client, shards, epochs, alpha, min_alpha, progress=False, desc="cluster", run_args=None,
                     fingerprint=None, on_epoch=None):
    """Train ``model`` on the workers of ``client`` (see the module docstring).

    Parameters
    ----------
    model : EmbeddingModel
        With its tables initialised and ``CLUSTER_STATE`` set; replicas are built from its ``replica_spec()``
        (:meth:`~embkit.core.base.EmbeddingModel.replica_spec`); ``syncs_per_epoch`` and
        ``reconcile`` settings.  With ``checkpoint_dir``, the client writes checkpoints of the reconciled
        tables between rounds (and on Ctrl-C); a model :meth:`resume` opened continues from its round.
    client : dask.distributed.Client
    shards : list
        Shard objects (``name``, ``size``, ``open(model)``, ``chunks(model, start, stop)``).
    epochs, alpha, min_alpha :
        The run's passes and learning rates.
    run_args : dict, optional
        The JSON-able arguments of the training call, kept in checkpoints.
    fingerprint : str, optional
        A digest of the training data; a resumed run refuses data with another one.
    on_epoch : callable, optional
        ``on_epoch(epoch, report)`` on the client after each epoch's last reconciliation (the model's
        tables are the reconciled ones); True stops.  With ``get_state`` / ``set_state`` its state goes
        into checkpoints (as :meth:`EmbeddingModel._train`'s).

    Returns
    -------
    TrainingReport
        The model's ``last_cluster_stats`` holds the :class:`ClusterStats`.
    """
    if not shards:
        raise ValueError("no shards to train on")
    run = {"epochs": int(epochs), "alpha": float(alpha), "min_alpha": float(min_alpha), "mode": model.reconcile,
           "share": float(model.exchange_share), "bits": int(model.exchange_bits)}
    job = _Run(model, client, shards, run)
    model.last_cluster_stats = job.stats
    try:
        units_per_epoch = sum(job.units.values())
        resumed = checkpoint.resumed_run(model) or {}
        if resumed.get("rounds") is not None:     # the rounds of the run resumed, whatever the workers now
            try:
                job.plan = RoundPlan.from_record(resumed["rounds"])
            except (KeyError, TypeError, ValueError) as exc:
                raise checkpoint.CheckpointError("the checkpoint's checkpoint.run.rounds is damaged: %s" % exc) \
                    from None
        else:
            job.plan = round_plan(model.syncs_per_epoch, job.units.values(), epochs,
                                  len(model.W_in) + len(model.W_out))
        logger.info("%d replica%s, %d rounds (%d in the last epoch; about %.0f %s per replica in its last round)",
                    len(job.groups), "" if len(job.groups) == 1 else "s", job.plan.total,
                    job.plan.rounds(job.plan.epochs - 1),
                    max(job.units.values()) * _last_share(job.plan), model.unit)
        record = checkpoint.run_record(epochs, alpha, min_alpha, units_per_epoch, run_args, fingerprint,
                                          cluster={"syncs_per_epoch": job.plan.even, "reconcile": model.reconcile})
        if job.plan.even is None:     # the rounds' cuts: a resumed run trains the same, whatever its workers
            record["rounds"] = job.plan.record()
        if run["share"] != EXCHANGE_SHARE:      # kept (and restored on resume) only when not the default
            record["cluster"]["exchange_share"] = run["share"]
        if run["bits"] != EXCHANGE_BITS:
            record["cluster"]["exchange_bits"] = run["bits"]
        if model.frequent_rows != FREQUENT_ROWS:
            record["cluster"]["frequent_rows"] = model.frequent_rows
        history_before, start, report, checkpointer = checkpoint.begin_run(
            model, record, {"merge": MomentumState(job), "tracker": on_epoch})
        if start is not None and start.finished:
            return report
        job.relay = relays(model, len(job.groups), checkpointer)
        run["staleness"] = run_staleness(model.staleness, len(job.groups), job.relay)
        job.hot = hot_rows(job.plan, job.units.values(), *model.class_rows(), len(job.groups), run["staleness"],
                           model.frequent_rows)
        if job.hot is not None:
            logger.info("the first %d rows of W_in and %d of W_out (the frequent words') reconciled within the rounds"
                        % job.hot)
        with checkpoint.interruption_hint(model):
            try:
                _rounds(model, job, run, report, start, checkpointer, units_per_epoch, progress, desc, on_epoch)
            finally:
                model.loss_history = history_before + report.epoch_loss
    finally:
        try:
            job.fetch()
        except Exception as exc:    # the run's own error (or the lost cluster) comes first
            logger.warning("the model holds the tables the client fetched last: fetching the run's last ones "
                           "failed (%s)", exc)
        job.close()
    return report


def _last_share(plan):
    """The share of an epoch that the run's last round trains."""
    last = plan.span(plan.epochs - 1, plan.rounds(plan.epochs - 1) - 1)
    return (last.stop - last.start) / plan.scale


def _rounds_between(key, adopted, plan):
    """Rounds from the reconciliation ``adopted`` (``(epoch, round)``, None before the first) to round ``key``."""
    before = -1 if adopted is None else plan.ordinal(*adopted)
    return plan.ordinal(*key) - before


def _rounds(model, job, run, report, start, checkpointer, units_per_epoch, progress, desc, on_epoch):
    """The epochs and rounds of a cluster run (:func:`~embkit.core.training.run_steps`, a round a step)."""
    def round_steps(epoch, first, units_before):
        for r in range(first, job.plan.rounds(epoch)):
            yield lambda r=r: one_round(epoch, r)

    def one_round(epoch, r):
        round_start = time.perf_counter()
        results = job.round(epoch, r)
        round_seconds = time.perf_counter() - round_start
        job.reconcile((epoch, r), results)
        job.stats.round_seconds += time.perf_counter() - round_start
        job.stats.train_seconds += max(res["seconds"] for res in results)
        job.stats.train_cpu_seconds += sum(res["cpu_seconds"] for res in results)
        job.stats.pass_seconds += max(res["pass_seconds"] for res in results)
        job.stats.wait_seconds += max(res["wait_seconds"] for res in results)
        job.stats.find_seconds += max(res["find_seconds"] for res in results)
        job.stats.merge_seconds += max(res["merge_seconds"] for res in results)
        job.stats.adopt_seconds += max(res["adopt_seconds"] for res in results)
        job.stats.call_seconds += round_seconds - max(res["round_seconds"] for res in results)
        job.stats.lag.append(max(_rounds_between((epoch, r), res["adopted"], job.plan) for res in results))
        if r == job.plan.rounds(epoch) - 1 and on_epoch is not None:
            job.fetch()     # on_epoch reads the reconciled tables
        return tuple(sum(res[key] for res in results) for key in ("loss", "examples", "units", "raw_units", "trained"))

    run_steps(round_steps, units_per_epoch, run["epochs"], progress=progress, desc=desc, unit=model.unit,
              on_epoch=on_epoch, callbacks=model.callbacks, model=model, report=report, start=start,
              checkpointer=checkpointer)
