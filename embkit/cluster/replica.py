"""The worker side of cluster training: a replica of the tables training on its own shards, reconciling
with its peers directly.

A replica is a Dask actor (see :mod:`embkit.cluster.client`, the client side): :func:`open_replica` runs as
a task with ``actor=True`` on one worker, and the :class:`Replica` it builds stays in that worker process,
where the client calls its :meth:`Replica.train_round` once a round, straight to the worker (no task, no
scheduler on the way).  It is a model of the client's class built from the client's parameters and state
(the vocabulary, the class counts), with its own copy of the tables, its own loss, sampler and kernel
trainer (the same objects as a single-process run), and the shards it reads itself.

Reconciliation runs among the replicas, not through the client: with ``n`` replicas, replica ``g`` owns
every ``n``-th row of each table from row ``g`` (:func:`~embkit.cluster.reconcile.owned_rows`: the frequent
rows, which every replica changes, spread evenly over the owners).  After training a round, a replica sends
each owner the part of its changed rows that owner owns, merges the parts of its own rows it receives (the
one merge of those rows in the run), and sends the merged rows to every other replica (less the rows only
that replica sent, which it knows), and back to the client when the run relays them.  Each replica then
adopts the merged rows of every owner: all hold the same reconciled tables again, bit for bit, which the
client fetches (:meth:`Replica.tables`) when it needs them.  The parts travel as actor calls between the
workers (:meth:`Replica.post`, run on the worker's event loop while its training thread waits in its
:class:`~embkit.cluster.mailbox.Mailbox`), as plain tuples of arrays; every link carries about two row sets
a round, whatever the number of replicas.  Two replicas need only one of the two steps: each sends the
other its whole delta and merges every row itself (:meth:`Replica._swap`: the same steps as the owners'
merges, bit for bit, and about the same bytes, with one wait for a peer a round instead of two).  With 3
replicas or more a round may come in parts, after each of which but the last the replicas reconcile the
first rows of each table only (the most frequent words', :func:`~embkit.cluster.settings.hot_rows`) in the
same way: the same owners, merge and momentum, on views of those rows (:meth:`Replica._hot_sync`).

With ``staleness`` 1 (:data:`~embkit.cluster.settings.STALENESS`) a round's call only posts the replica's
rows: the next call trains its round at once and adopts the merged rows of the round before when its training
ends (:meth:`Replica.train_round`), so that the exchange and a late peer hide behind the training; an epoch's
last round is adopted before its call returns.  Finding the changed ``W_in`` rows reads only those of the
round's words (the chunks' ``input_rows``).

A shard is an object with ``name`` (what an error names), ``open(model)`` (read it on the worker, return
its units per epoch) and ``chunks(model, start, stop)`` (the chunks of its units ``[start, stop)``).

Learning rate: the replica's trainer runs over its own units (epochs x its units per epoch); every round
trains the same fraction of every replica's shards, so at each reconciliation a replica's progress is the
global progress of the run.
"""
import resource
import time
from typing import NamedTuple

import numpy as np

from embkit.cluster.mailbox import WAIT_POLL, Mailbox, RoundAborted
from embkit.cluster.reconcile import (BLOCK_RATE, RowDelta, adopt_parts, adopt_update, changed_rows, local_rows, merge,
                                      owned_rows, packed_wire, round_to_wire, split, table_rows)
from embkit.cluster.tables import TableRecipe, drawn_tables
from embkit.cluster.worker import ShardReadError, wanted, worker_name
from embkit.core.heap import kept_buffers
from embkit.core.training import ChunkSteps, check_finite, open_pipeline

__all__ = ["Replica", "open_replica", "units_per_thread"]


class Replica:
    """Tables, trainer and shards of one shard group on one worker (see the module docstring).

    ``group`` is its index among the run's ``run["replicas"]`` replicas (the rows it merges:
    :func:`~embkit.cluster.reconcile.owned_rows`); ``momentum`` (``"momentum"`` merges of 3 replicas or more)
    the block momentum of both tables, of which it keeps that of its own rows.  ``W_in`` and ``W_out`` are
    copied unless ``own`` (tables drawn for it alone).
    """

    def __init__(self, spec, shards, W_in, W_out, run, group=0, momentum=None, own=False):
        # the shards' reading and the rounds allocate big buffers over and over: keep them in the heap for the
        # replica's life (a Dask nanny fixes the heap's thresholds; see embkit.core.heap)
        self.heap = kept_buffers().enter()
        try:
            self._open(spec, shards, W_in, W_out, run, group, momentum, own)
        except BaseException:
            self.heap.leave()
            raise

    def _open(self, spec, shards, W_in, W_out, run, group, momentum, own):
        copy = np.asarray if own else np.array
        self.model = model = spec[0].from_replica_spec(spec, copy(W_in), copy(W_out))
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
        self.group, self.replicas = group, int(run.get("replicas", 1))
        # bits a value of the rows the replicas exchange (exchange_bits): a lone replica sends its rows to none
        self.bits = int(run.get("bits", 16)) if self.replicas > 1 else 16
        self.loss, self.sampler, self.trainer = model.replica_trainer(run["alpha"], run["min_alpha"],
                                                                      float(max(self.total, 1)) * run["epochs"])
        self.bases = (model.W_in.copy(), model.W_out.copy())
        self.momentum = (None, None)
        if momentum is not None:
            self.set_momentum(momentum)
        elif run.get("mode") == "momentum" and self.replicas > BLOCK_RATE:    # a run's start: no momentum yet
            self.momentum = tuple(np.zeros((owned_rows(len(t), self.replicas, group), t.shape[1]), np.float32)
                                  for t in (model.W_in, model.W_out))
        # the buffers of each table's changed rows, two sets used in turn: what views a set is delivered and
        # merged by every peer before the set's next use (a round's posts are awaited within the round, or
        # with staleness 1 within the next one, which no peer ends before it has merged this one's rows)
        self.scratch = (({}, {}), ({}, {}))
        self.turn = 0       # the set of scratch buffers of the next round's changed rows
        self.hot_scratch = (({}, {}), ({}, {}))     # the same for the frequent rows within a round
        self.hot_turn = 0
        self.pending = None     # with staleness 1, the exchange of the last round, adopted after the next
        self.merge_scratch = ({}, {})      # the same for the merges of each table
        self.reconciled = run.get("tables_key")     # (epoch, round) of the last reconciliation adopted
        self.peers = None
        self.mail = Mailbox(wanted())
        self.pipe = open_pipeline(self.trainer, max(1, int(model.workers)))
        self.threads = max(1, int(model.workers))     # of the passes over the rows, as of the kernels
        # the W_in rows that may differ from their base: those of the round's chunks' words (where the chunks
        # tell them: ``input_rows``; a reconciliation adopted under training leaves no other row apart)
        self.touched = np.zeros(model.W_in.shape[0], dtype=np.uint8)
        self.marked = False     # whether every chunk of the round told its rows

    @property
    def base_in(self):
        return self.bases[0]

    @property
    def base_out(self):
        return self.bases[1]

    def tables(self):
        """``(reconciled, W_in, W_out)``: the tables of the last reconciliation (the same on every replica) and
        its ``(epoch, round)`` (None before the first)."""
        return self.reconciled, self.bases[0], self.bases[1]

    def units_per_epoch(self):
        """Units (words, pairs) of the replica's shards."""
        return self.total

    def connect(self, peers):
        """The actors of every replica of the run, by group (this one's included)."""
        if len(peers) != self.replicas:
            raise ValueError("%d peers for a run of %d replicas" % (len(peers), self.replicas))
        # handles of this replica's own: a handle binds to the worker that first calls through it, and workers
        # that are threads of one process receive the very objects the client sent
        self.peers = [_own_handle(peer) for peer in peers]
        return True

    async def post(self, key, sender, payload):
        """A peer's part of a round, one :attr:`~embkit.cluster.reconcile.RowDelta.wire` tuple per table (run on
        the worker's event loop while the training thread waits)."""
        self.mail.put(key, sender, tuple(RowDelta.from_wire(w) for w in payload))

    async def abort(self):
        """Call off the round this replica waits in (its peer was lost, or the run closes)."""
        self.mail.abort()

    def set_momentum(self, momentum):
        """Keep the block momentum of this replica's rows of both tables (full tables given)."""
        g = self.group
        self.momentum = tuple(np.array(m[g::self.replicas], dtype=np.float32) for m in momentum)
        return True

    def momentum_part(self):
        """The block momentum of this replica's rows of both tables (None without momentum)."""
        return self.momentum

    def refresh_sampler(self, progress):
        """An adaptive sampler rebuilds what it derives from ``W_out`` (after a reconciliation)."""
        if self.sampler is None or self.sampler.query_free:
            return
        rebuild = getattr(self.sampler, "rebuild", None)
        if rebuild is not None:
            rebuild()
        else:
            self.sampler.refresh(progress)

    def train_round(self, span, relay=True, staleness=0, hot=None):
        """Train the round ``span`` (a :class:`~embkit.cluster.rounds.RoundSpan`) on every shard
        (:meth:`train`), then reconcile with the peers (module docstring); ``relay``: send the client the
        merged rows.

        ``hot`` (a :class:`~embkit.cluster.settings.HotRows`, with ``staleness`` 0): the round trains in
        ``hot.parts`` parts, and after each but the last the replicas reconcile the frequent rows (the first
        ``hot.rows`` of each table) the same way (:meth:`_hot_sync`).

        With ``staleness`` 1 the round's rows are only sent: the next round trains at once, and adopts this
        round's merged rows when it ends, before it finds its own (the peers' steps of a round reach a
        replica one round late).  An epoch's last round, and every round with ``staleness`` 0, is adopted
        before the call returns, so that every replica holds the same reconciled tables after it.

        Returns :meth:`train`'s dict with ``pass_seconds`` (finding, merging and adopting rows; of which
        ``find_seconds`` finding them, ``merge_seconds`` merging and ``adopt_seconds`` adopting),
        ``round_seconds`` (the whole call), ``wait_seconds`` (waiting for the peers' parts, and for them to take
        this replica's), ``reconciled`` (reconciliations of every row adopted in the call: 0, 1 or 2),
        ``hot_syncs`` (those of the frequent rows), ``adopted`` (the ``(epoch, round)`` of the last one adopted,
        or None), ``bytes_up`` / ``bytes_down`` (changed rows sent to the other owners; merged rows sent to the
        other replicas and the client), ``worker``, ``rows`` (the merged rows of this replica's rows of both
        tables in the reconciliations of every row) and ``merged``: with ``relay``, their steps, one
        :attr:`~embkit.cluster.reconcile.RowDelta.wire` tuple per table and reconciliation, in order (the
        frequent rows' first), for the client's tables, else None.
        """
        started = time.perf_counter()
        parts = 1 if hot is None else max(1, int(hot.parts))
        result = self.train(span.part(0, parts) if parts > 1 else span)
        result.update(find_seconds=0.0, merge_seconds=0.0, adopt_seconds=0.0, wait_seconds=0.0, reconciled=0,
                      hot_syncs=0, rows=0, bytes_up=0, bytes_down=0, merged=[] if relay else None)
        for k in range(1, parts):
            self._hot_sync(span, hot.rows, relay, result)
            part = self.train(span.part(k, parts), result["chunks"])
            for name in ("loss", "examples", "units", "raw_units", "trained", "seconds", "cpu_seconds"):
                result[name] += part[name]
            result.update(progress=part["progress"], chunks=part["chunks"])
        if self.pending is not None:    # the last round's rows, adopted under what this round trained
            pending, self.pending = self.pending, None
            self._add(result, self._finish(*pending))
        last = span.epoch == self.run["epochs"] - 1 and span.closes_epoch
        share = 1.0 if last else self.run.get("share", 1.0)     # the run's last round sends what is left
        clock = time.perf_counter()
        scratch = self.scratch[self.turn]       # two sets of buffers: a pending round's delta stays intact
        self.turn = 1 - self.turn
        late = bool(staleness) and not relay and not span.closes_epoch   # a relayed round reaches the client whole
        sent = self._changed(self._views(), scratch, share, stamp=late and share >= 1)
        result["find_seconds"] += time.perf_counter() - clock
        key = (span.epoch, span.index)
        exchange = (key, sent, self._send(key, sent, scratch), share < 1, relay)
        if late:
            self.pending = exchange + (True,)
        else:
            self._add(result, self._finish(*exchange))
        if result["reconciled"] and not last:
            self.refresh_sampler(result["progress"])
        done = time.perf_counter()
        result["pass_seconds"] = done - started - result["seconds"] - result["wait_seconds"]
        result["round_seconds"] = done - started
        result["worker"] = worker_name()
        result["adopted"] = self.reconciled
        return result

    @staticmethod
    def _add(result, exchange, whole=True):
        """Add the entries of one reconciliation (:meth:`_finish`) to a round's result; ``whole``: of every
        row (else of the frequent rows)."""
        for name in ("merge_seconds", "adopt_seconds", "wait_seconds", "bytes_up", "bytes_down"):
            result[name] += exchange[name]
        result["reconciled" if whole else "hot_syncs"] += 1
        if whole:
            result["rows"] += exchange["rows"]
        if exchange["merged"] is not None:
            result["merged"].append(exchange["merged"])

    def _hot_sync(self, span, rows, relay, result):
        """Reconcile the first ``rows`` rows of each table (the frequent words', every replica moves them within
        a round) in the middle of the round ``span``, as a round's end reconciles every row: found, merged
        (with their block momentum, the same momentum as the round's end) and adopted by every replica; the
        entries added to the round's ``result``.  An adaptive sampler rebuilds at the round's end only.  A lost
        peer leaves the tables with part of the round in these rows: the round is trained again from them (as
        after a reconciled round that was not reported)."""
        clock = time.perf_counter()
        scratch = self.hot_scratch[self.hot_turn]      # in turn, as the rounds' sets (see __init__)
        self.hot_turn = 1 - self.hot_turn
        views = self._views(rows)
        sent = self._changed(views, scratch)
        result["find_seconds"] += time.perf_counter() - clock
        key = ("hot", span.epoch, span.index, result["hot_syncs"])
        exchange = self._finish(key, sent, self._send(key, sent, scratch), False, relay, views=views)
        if exchange["merged"] is not None:  # views of buffers the round's next merge reuses before it returns
            exchange["merged"] = tuple(tuple(None if a is None else np.array(a) for a in wire)
                                       for wire in exchange["merged"])
        self._add(result, exchange, whole=False)

    def _views(self, rows=None):
        """``(table, base)`` of ``W_in`` and ``W_out``: whole, or views of their first ``rows`` (one count a
        table)."""
        pairs = zip((self.model.W_in, self.model.W_out), self.bases)
        return tuple(pairs) if rows is None else tuple((t[:r], b[:r]) for (t, b), r in zip(pairs, rows))

    def _changed(self, views, scratch, share=1.0, stamp=False):
        """Each table's :class:`~embkit.cluster.reconcile.RowDelta` of the rows where ``views``' tables differ
        from their bases (:func:`~embkit.cluster.reconcile.changed_rows`, in the buffers of ``scratch``); in
        ``W_in`` only the rows the round's chunks touched when they told them all, unless the run keeps rows
        back (``exchange_share`` below 1: a row kept from an earlier round may differ untouched)."""
        rows = views[0][0].shape[0]
        marks = (self.touched[:rows] if self.marked and self.run.get("share", 1.0) >= 1 else None, None)
        deltas = tuple(changed_rows(t, b, share, s, self.threads, m, stamp=stamp)
                       for (t, b), s, m in zip(views, scratch, marks))
        for delta, s in zip(deltas, scratch):   # at 8 bits, the steps the peers receive (this replica merges them)
            round_to_wire(delta, self.bits, self.threads, s)
        return deltas

    def round_chunks(self, span):
        """The chunks of the round ``span`` of every shard, those that can be joined (``join``) joined up to
        the model's ``chunk_tokens``: a round holds a slice of each shard, and a chunk is shared among the
        worker's threads only where each takes enough of it (:func:`units_per_thread`)."""
        limit = getattr(self.model, "chunk_tokens", None)
        pending, size = [], 0
        for shard, units in zip(self.shards, self.units):
            start, stop = span.units(units)
            for chunk in shard.chunks(self.model, start, stop):
                if limit is None or not hasattr(chunk, "join"):
                    yield chunk
                    continue
                if pending and size + len(chunk) > limit:
                    yield pending[0].join(pending) if len(pending) > 1 else pending[0]
                    pending, size = [], 0
                pending.append(chunk)
                size += len(chunk)
        if pending:
            yield pending[0].join(pending) if len(pending) > 1 else pending[0]

    def train(self, span, first=0):
        """Train the round ``span`` (a :class:`~embkit.cluster.rounds.RoundSpan`) on every shard, with nothing
        exchanged; ``first``: the chunks of the round trained before (a part of a round after the first,
        :meth:`~embkit.cluster.rounds.RoundSpan.part`: its chunks' random streams follow theirs).

        Returns a dict with the round's ``loss`` (sum), ``examples``, ``units``, ``raw_units``, ``trained``
        (units), ``seconds`` (in the kernels; ``cpu_seconds``: the CPU time of the worker process meanwhile),
        ``progress`` (the run's fraction done after it) and ``chunks`` (of the round, ``first`` included).
        """
        model, run = self.model, self.run
        total_units = max(1, self.total * run["epochs"])
        epoch = span.epoch
        done = epoch * self.total + sum(span.units(u)[0] for u in self.units)
        clock, cpu = time.perf_counter(), _cpu_seconds()

        def check(loss, fraction):
            check_finite(loss, epoch, fraction, run["alpha"])

        def seed_of(index):
            return (span.ordinal * 1000003 + index) * 65537 + self.group

        if not first:      # a round's first part: its W_in rows are marked from here on
            self.touched.fill(0)
            self.marked = True
        count = first

        def marked(chunks):
            nonlocal count
            for chunk in chunks:
                rows = getattr(chunk, "input_rows", None)
                if rows is None:
                    self.marked = False
                else:
                    self.touched[rows] = 1
                count += 1
                yield chunk

        shares = units_per_thread(getattr(model, "batch_words", None),
                                  sum(stop - start for start, stop in map(span.units, self.units)), self.pipe.n_threads)
        steps = ChunkSteps(self.pipe, self.trainer, marked(self.round_chunks(span)), first, done,
                           total_units, seed_of, check, shares)
        loss = 0.0
        examples = units = raw = trained = 0
        try:
            for step in steps:
                c_loss, c_examples, c_units, c_raw, c_trained = step()
                loss += c_loss
                examples += c_examples
                units += c_units
                raw += c_raw
                trained += c_trained
        except BaseException:
            # chunks still in flight must not be taken for the next round's
            self.pipe.abort()
            self.pipe = open_pipeline(self.trainer, self.pipe.n_threads)
            raise
        return {"loss": loss, "examples": examples, "units": units, "raw_units": raw, "trained": trained,
                "seconds": time.perf_counter() - clock, "cpu_seconds": _cpu_seconds() - cpu,
                "progress": (done + units) / total_units, "chunks": count}

    def _send(self, key, sent, scratch):
        """Post this replica's delta of round ``key`` to its peers (the whole of it to the other of two
        replicas, else each owner its part, cut in the buffers of ``scratch``, those ``sent`` was found in);
        what :meth:`_finish` needs of it."""
        g, n = self.group, self.replicas
        if n == 1:
            return {"posts": [], "parts": None, "up": 0}
        if n == 2:
            return {"posts": [self._post(1 - g, ("delta",) + key, sent, packed=True)], "parts": None,
                    "up": sum(d.wire_nbytes(self.bits) for d in sent)}
        parts = [split(d, n, self.threads, s) for d, s in zip(sent, scratch)]
        others = [p for p in range(n) if p != g]
        return {"posts": [self._post(p, ("part",) + key, tuple(part[p] for part in parts), packed=True)
                          for p in others],
                "parts": parts, "up": sum(part[p].wire_nbytes(self.bits) for part in parts for p in others)}

    def _finish(self, key, sent, posted, partial, relay=True, under_training=False, views=None):
        """Take the peers' rows of round ``key``, merge this replica's rows and adopt the merged rows of all
        (``under_training``: the table has trained on since it found ``sent``, so it takes the merged steps
        less its own instead of becoming the reconciled table); the exchange entries of the round.
        ``views``: ``(table, base)`` of each table reconciled, views of their first rows (the frequent rows'
        reconciliation within a round); None: the whole tables, a round's reconciliation."""
        whole = views is None
        x = _Exchange(key, sent, posted, partial or under_training, under_training, relay,
                      self._views() if whole else views, whole)
        clock = {"merge_seconds": 0.0, "adopt_seconds": 0.0, "wait_seconds": 0.0}
        out = self._swap(x, clock) if self.replicas == 2 else self._owners(x, clock)
        out.update(clock)
        return out

    def _owners(self, x, clock):
        """:meth:`_finish` of the :class:`_Exchange` ``x`` with ``n`` owners (one or 3 and more replicas): each
        merges its rows from the parts it receives, then sends the merged rows to the others; the seconds
        added to ``clock``."""
        g, n, key = self.group, self.replicas, x.key
        others = [p for p in range(n) if p != g]
        parts = x.posted["parts"] if n > 1 else [[d] for d in x.sent]
        posts = list(x.posted["posts"])
        waited = time.perf_counter()
        got = self.mail.take(("part",) + key, others)
        clock["wait_seconds"] += time.perf_counter() - waited
        got[g] = tuple(part[g] for part in parts)
        merging = time.perf_counter()
        merged = tuple(self._merge(t, [got[k][t] for k in range(n)], x.views[t][1].shape[0]) for t in range(2))
        for t, m in enumerate(merged):      # at 8 bits, the steps every replica (this one too) adopts
            round_to_wire(m, self.bits, self.threads, self.merge_scratch[t])
        clock["merge_seconds"] += time.perf_counter() - merging
        down = 0
        for q in others:
            back = tuple(m.without(q) for m in merged)
            posts.append(self._post(q, ("merged",) + key, back, packed=True))
            down += sum(b.wire_nbytes(self.bits) for b in back)
        waited = time.perf_counter()
        got = self.mail.take(("merged",) + key, others)
        clock["wait_seconds"] += time.perf_counter() - waited
        got[g] = merged     # the rows only it sent stay as they are (no float32 round trip): adopt skips them
        adopting = time.perf_counter()
        for t, (table, base) in enumerate(x.views):
            # each owner's merged rows with this replica's part on them, in one walk over the table
            adopt_parts([got[p][t] for p in range(n)], table, base, [parts[t][p] for p in range(n)], x.partial,
                        self.group, self.threads, x.trained)
        clock["adopt_seconds"] += time.perf_counter() - adopting
        if x.whole:
            self.reconciled = key
        waited = time.perf_counter()
        self._delivered(key, posts)
        clock["wait_seconds"] += time.perf_counter() - waited
        return self._result([RowDelta(m.ids, m.values) for m in merged], x.relay, x.posted["up"], down)

    @staticmethod
    def _result(mine, relay, up, down):
        """The exchange entries of a round's result: ``mine`` are the merged rows this replica reports."""
        sent = sum(m.nbytes for m in mine) if relay else 0
        return {"merged": tuple(m.wire for m in mine) if relay else None, "rows": sum(len(m) for m in mine),
                "bytes_up": up, "bytes_down": down + sent}

    def _swap(self, x, clock):
        """:meth:`_finish` of the :class:`_Exchange` ``x`` of two replicas: each has sent the other its whole
        delta and merges every row itself, in group order as the owner of each row would (the same steps, bit
        for bit): one message each way where the owners take two (a part, then the merged rows), for about the
        same bytes.  A replica that sent every row it changed adopts the merged rows in the merge's walk
        (:func:`~embkit.cluster.reconcile.merge` with ``mirror``: no adopting seconds).  The seconds added to
        ``clock``."""
        g = self.group
        peer = 1 - g
        waited = time.perf_counter()
        deltas = self.mail.take(("delta",) + x.key, [peer])
        clock["wait_seconds"] += time.perf_counter() - waited
        deltas[g] = x.sent
        mine = []
        for t, (table, base) in enumerate(x.views):
            merging = time.perf_counter()
            walk = not x.partial    # it sent every row it changed: base takes the steps, table copies its rows
            merged = merge(table.shape[0], [deltas[0][t], deltas[1][t]], self.run["mode"], base if walk else None,
                           None, 2, self.threads, self.merge_scratch[t], mirror=table if walk else None)
            adopting = time.perf_counter()
            clock["merge_seconds"] += adopting - merging
            if not walk:
                adopt_update(merged, table, base, x.sent[t], x.partial, self.group, self.threads, x.trained)
                clock["adopt_seconds"] += time.perf_counter() - adopting
            half = slice(0, len(merged) // 2) if g == 0 else slice(len(merged) // 2, None)
            mine.append(RowDelta(merged.ids[half], merged.values[half]))   # the client takes half from each
        if x.whole:
            self.reconciled = x.key
        waited = time.perf_counter()
        self._delivered(x.key, x.posted["posts"])
        clock["wait_seconds"] += time.perf_counter() - waited
        return self._result(mine, x.relay, x.posted["up"], 0)

    def _merge(self, t, deltas, n_rows):
        """The merged steps of this replica's rows of table ``t`` from every replica's part (in group order;
        a row's ``owner`` is the group of the only replica that sent it), of its first ``n_rows`` rows (the
        momentum of this replica's rows among them)."""
        g, n = self.group, self.replicas
        rows = owned_rows(n_rows, n, g)
        momentum = self.momentum[t]
        momentum = None if momentum is None else momentum[:rows]   # this replica's rows of the first n_rows
        if n == 1:      # every row is its own: no renumbering
            return merge(n_rows, deltas, self.run["mode"], None, momentum, 1, self.threads, self.merge_scratch[t])
        local = [local_rows(d, n) for d in deltas]
        return table_rows(merge(rows, local, self.run["mode"], None, momentum, n, self.threads,
                                self.merge_scratch[t]), n, g)

    def _post(self, peer, key, payload, packed=False):
        """Send ``payload`` to the mailbox of replica ``peer`` (the call's future); ``packed``: steps rounded to
        ``exchange_bits`` a value, sent so (:func:`~embkit.cluster.reconcile.packed_wire`)."""
        wires = tuple(packed_wire(d, self.bits) if packed else d.wire for d in payload)
        try:
            return self.peers[peer].post(key, self.group, wires)
        except Exception as exc:    # its worker is gone (the client replaces the replicas)
            raise RoundAborted("cannot reach the replica of group %d: %s" % (peer, exc)) from None

    def _delivered(self, key, posts):
        """Wait for the posts' calls of round ``key`` to return (a lost peer, or the round called off, ends
        the wait: a peer that dies before it answers would leave it waiting for good)."""
        for post in posts:
            while True:
                try:
                    post.result(timeout=WAIT_POLL)
                    break
                except TimeoutError:
                    self.mail.check(key)
                except Exception as exc:
                    raise RoundAborted("a peer did not take its part: %s" % exc) from None

    def close(self):
        self.mail.abort()
        for shard in self.shards:
            getattr(shard, "close", lambda: None)()
        self.pipe.abort()
        self.heap.leave()


class _Exchange(NamedTuple):
    """A reconciliation on its way through a replica (:meth:`Replica._finish`)."""
    key: tuple          # its round's ``(epoch, index)``, or the frequent rows' key within the round
    sent: tuple         # this replica's RowDelta of each table
    posted: dict        # what Replica._send gave: the posts' calls, the parts sent, their bytes
    partial: bool       # the table keeps what it did not send (exchange_share below 1, or trained on since)
    trained: bool       # the table trained on since ``sent`` was found (adopted under training)
    relay: bool         # the merged rows go back to the client
    views: tuple        # ``(table, base)`` of each table reconciled
    whole: bool         # the whole tables (a round's end), not views of their first rows


def units_per_thread(batch_words, units, threads):
    """The fewest units a thread takes of a chunk of a round, or of a part of one, of ``units`` units on
    ``threads`` threads (:func:`~embkit.core.training.threads_for`'s ``min_chunk_per_thread``): the model's
    ``batch_words``, or less where the round holds fewer than that for every thread (the frequent rows'
    parts, a run's last rounds), so that every thread trains a share of it.  None: no floor."""
    if not batch_words:
        return batch_words
    return max(1, min(int(batch_words), int(units) // max(1, int(threads))))


def _own_handle(actor):
    """A new handle on the same actor (its pickling protocol), bound to no worker yet."""
    rebuild, args = actor.__reduce__()
    return rebuild(*args)


def _cpu_seconds():
    """CPU seconds (user and system, all threads) of this process."""
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


def open_replica(data, shards, run, group=0):
    """Task (submitted with ``actor=True``): the :class:`Replica` of ``shards`` on this worker.

    ``data`` is ``(spec, tables, momentum)``: the spec ``(model class, parameters, state)``, the reconciled
    tables ``(W_in, W_out)`` or a :class:`~embkit.cluster.tables.TableRecipe` to draw them from (raising
    :class:`~embkit.cluster.tables.TablesNotDrawn` where the draw is not the client's), and the block
    momentum of both (or None); ``run`` holds ``epochs``, ``alpha``,
    ``min_alpha``, ``share``, ``mode``, ``replicas`` and ``tables_key`` (the ``(epoch, round)`` of the last
    reconciliation in the tables, None before the first); ``group`` is this replica's index.
    """
    spec, tables, momentum = data
    if isinstance(tables, TableRecipe):
        W_in, W_out = drawn_tables(spec[0].from_replica_spec(spec, None, None), tables)
        return Replica(spec, shards, W_in, W_out, run, group, momentum, own=True)
    return Replica(spec, shards, tables[0], tables[1], run, group, momentum)
