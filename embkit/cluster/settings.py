"""The settings of a cluster run: the model parameters, their defaults and checks, the client's workers, and
the rounds of a run (their plan: :mod:`embkit.cluster.rounds`), with the frequent words' rows reconciled
within them."""
from typing import NamedTuple

import numpy as np

from embkit.cluster.reconcile import DEFAULT_MODE, MODES, WIRE_BITS
from embkit.cluster.rounds import RoundPlan
from embkit.core.checks import BOOL, POSITIVE_INT, check_param

__all__ = ["CLUSTER_PARAMS", "SYNCS_PER_EPOCH", "ROUND_UNITS", "ROUND_SHARE", "SHRINKING_REPLICAS", "LONE_ROUND_UNITS",
           "LONE_UNITS_PER_ROW",
           "RECONCILE", "EXCHANGE_SHARE", "EXCHANGE_BITS", "STALENESS", "FREQUENT_ROWS", "WORKER_WAIT",
           "HOT_PART_UNITS",
           "HOT_OCCURRENCES", "HotRows", "distributed_module", "check_cluster_params", "check_client",
           "rounds_per_epoch", "round_plan", "run_staleness", "hot_rows", "round_parts"]

#: model parameters of cluster training (runtime settings: not saved with a model)
CLUSTER_PARAMS = frozenset({"client", "syncs_per_epoch", "reconcile", "exchange_share", "exchange_bits", "staleness",
                            "frequent_rows"})
#: ``syncs_per_epoch`` of a model that does not choose: None, rounds that shrink towards the end of the run
#: for two replicas (:data:`ROUND_SHARE`, :data:`ROUND_UNITS`), even rounds for more (:func:`round_plan`)
SYNCS_PER_EPOCH = None
#: units (words, pairs) a replica trains in each of a run's last rounds when ``syncs_per_epoch`` is None (and
#: the least it trains in any round): about the longest last rounds that keep one process's quality (longer
#: ones let the replicas drift apart; CLUSTER.md)
ROUND_UNITS = 75_000
#: share of what is left of the run that a round of two replicas trains when ``syncs_per_epoch`` is None (at
#: least :data:`ROUND_UNITS` units a replica): long rounds at the start, shrinking to ``ROUND_UNITS`` at the end
#: (:meth:`embkit.cluster.rounds.RoundPlan.shrinking`)
ROUND_SHARE = 1 / 16
#: most replicas whose rounds shrink so when ``syncs_per_epoch`` is None; more train even rounds of
#: :data:`ROUND_UNITS` (:func:`round_plan`): their block momentum merge lost quality with long early rounds, and
#: with the frequent rows reconciled within them too on a larger corpus (CLUSTER.md, "Quality")
SHRINKING_REPLICAS = 2
#: units a lone replica trains per round when ``syncs_per_epoch`` is None: with no other replica to drift
#: from, its rounds only set how often the client receives the tables (what a lost worker or a checkpoint
#: falls back to), so they are long enough that a round's fixed costs (finding the changed rows, the call,
#: the client's copy) stay a few percent of its training
LONE_ROUND_UNITS = 1 << 20
#: and at least this many units per row of its tables: a lone replica sends the client the rows it changed
#: every round (nearly every row: the negatives touch them), which costs about as much per row as training a
#: unit does, so that a large vocabulary does not make those transfers more than a few percent of a round
#: (CLUSTER.md, one worker against one process)
LONE_UNITS_PER_ROW = 64
#: the merge of a model that does not choose
RECONCILE = DEFAULT_MODE
#: ``exchange_share`` of a model that does not choose: every changed row goes to every reconciliation
EXCHANGE_SHARE = 1.0
#: ``exchange_bits`` of a model that does not choose: the exchanged rows travel as float16; 8 about halves
#: their bytes (:func:`~embkit.cluster.reconcile.round_to_wire`) for a little more CPU (CLUSTER.md)
EXCHANGE_BITS = 16
#: ``staleness`` of a model that does not choose.  0: every round's rows are merged and adopted before the
#: next round trains (a replica waits for the slowest); the default, because on two busy cores staleness 1
#: hid the waits but not the CPU they cost, and its passes cost more (CLUSTER.md).  1: a replica sends a
#: round's rows and trains the next round at once, adopting the merged rows when that round ends: the peers'
#: steps of a round reach it one round late (bounded staleness of one round), and the exchange and the peers'
#: lateness hide behind its training.  An epoch's last round is always adopted at once (every replica holds
#: the reconciled tables at an epoch's end).  It applies to runs of two replicas that do not send the client
#: their rows (:func:`run_staleness`).
STALENESS = 0
#: ``frequent_rows`` of a model that does not choose: runs of 3 replicas or more reconcile the frequent words'
#: rows within their rounds (:func:`hot_rows`), which kept one process's quality with 8 workers at the default
#: rounds on gcide (lost without them) and costs exchanges (CLUSTER.md)
FREQUENT_ROWS = True
#: seconds a run waits for a first worker before it calls the cluster empty
WORKER_WAIT = 10.0
#: units a replica of a run of 3 replicas or more trains between two reconciliations of the frequent rows
#: (:func:`hot_rows`): a round of :data:`ROUND_UNITS` is cut into parts of about this many, after each of which
#: but the last the replicas reconcile the rows of the most frequent words only.  With 8 replicas the rounds of
#: :data:`ROUND_UNITS` lost 2-3 analogy points on gcide, rounds of this size kept one process's quality, and so
#: did the default rounds with these parts for the frequent rows (CLUSTER.md, "Quality").  None: no parts
HOT_PART_UNITS = 12_500
#: a row is a frequent one (reconciled after each part) when a replica's round is expected to hold its word at
#: least this many times: the words whose rows every replica moves within a round (on gcide at 8 replicas the
#: first 3,000 to 11,565 rows kept the quality alike, the first 1,000 not; CLUSTER.md)
HOT_OCCURRENCES = 1.0


class HotRows(NamedTuple):
    """A round's frequent rows: the first ``rows[0]`` rows of ``W_in`` and ``rows[1]`` of ``W_out`` are
    reconciled after each of the round's ``parts`` parts but the last (whose end reconciles every row)."""
    rows: tuple
    parts: int


def distributed_module():
    """``dask.distributed``, or an ImportError saying how to install it."""
    try:
        import distributed
    except ImportError:
        raise ImportError("training on a cluster (client=) needs dask.distributed: pip install 'embkit[cluster]'") \
            from None
    return distributed


def check_cluster_params(model):
    """ValueError naming a bad ``syncs_per_epoch`` / ``reconcile`` / ``exchange_share`` / ``exchange_bits`` /
    ``staleness`` / ``frequent_rows``;
    TypeError for a ``client`` that is not a ``dask.distributed.Client``."""
    if model.syncs_per_epoch is not None:
        check_param("syncs_per_epoch", model.syncs_per_epoch, *POSITIVE_INT)
    if model.reconcile not in MODES:
        raise ValueError("reconcile must be one of %s, got %r" % (", ".join(MODES), model.reconcile))
    check_param("exchange_share", model.exchange_share, lambda v: 0 < v <= 1, "a number in (0, 1]")
    check_param("exchange_bits", model.exchange_bits, lambda v: not isinstance(v, bool) and v in WIRE_BITS,
                " or ".join(map(str, WIRE_BITS)))
    check_param("staleness", model.staleness, lambda v: not isinstance(v, bool) and v in (0, 1), "0 or 1")
    check_param("frequent_rows", model.frequent_rows, *BOOL)
    if model.client is not None:
        distributed = distributed_module()
        if not isinstance(model.client, distributed.Client):
            raise TypeError("client must be a dask.distributed.Client, got %r" % (model.client,))


def check_client(client, wait=None):
    """The client's workers as ``{address: threads}``; ValueError when it has none after ``wait`` seconds
    (:data:`WORKER_WAIT` when None)."""
    wait = WORKER_WAIT if wait is None else wait
    workers = client.nthreads()
    if not workers:
        try:
            client.wait_for_workers(1, timeout=wait)
        except Exception:   # dask raises its own TimeoutError (asyncio's or distributed's by version)
            raise ValueError("the Dask cluster of %r has no workers (waited %gs): start some with `dask worker %s` "
                             "or scale the cluster up" % (client, wait, client.scheduler.address)) from None
        workers = client.nthreads()
    return dict(workers)


def run_staleness(staleness, replicas, relay):
    """The staleness a run trains with: the model's ``staleness`` for two replicas that do not send the client
    their rows (``relay``: checkpoints or callbacks, which read the tables after any round), else 0.  With 3
    replicas or more the block momentum merge takes each round's steps as made from the last reconciled
    tables: 8 workers a round late lost the model on gcide (CLUSTER.md), so they reconcile every round."""
    return int(staleness) if replicas == 2 and not relay else 0


def round_plan(syncs_per_epoch, units, epochs, rows=0, shrinking=None):
    """The :class:`~embkit.cluster.rounds.RoundPlan` of a run of replicas of ``units`` units an epoch each:
    ``syncs_per_epoch`` even rounds an epoch; when it is None, for two replicas rounds that shrink towards the
    end of the run (:data:`ROUND_SHARE` of what is left, at least :data:`ROUND_UNITS`, of the larger replica),
    else even rounds as :func:`rounds_per_epoch` gives them: a lone replica's are long, and 3 replicas or
    more, whose block momentum merge lost quality with long early rounds (CLUSTER.md), train rounds of
    :data:`ROUND_UNITS` throughout.  ``shrinking``: the most replicas whose rounds shrink (None:
    :data:`SHRINKING_REPLICAS`)."""
    units = list(units)
    shrinking = SHRINKING_REPLICAS if shrinking is None else shrinking
    if syncs_per_epoch is not None or not 2 <= len(units) <= shrinking:
        return RoundPlan.uniform(rounds_per_epoch(syncs_per_epoch, units, rows), epochs)
    return RoundPlan.shrinking(max(units), epochs, ROUND_UNITS, ROUND_SHARE)


def rounds_per_epoch(syncs_per_epoch, units, rows=0):
    """Even rounds of an epoch: ``syncs_per_epoch``, or when it is None enough for the largest replica
    (``units`` per epoch of each) to train about :data:`ROUND_UNITS` per round; when there is one replica, about
    :data:`LONE_ROUND_UNITS`, or :data:`LONE_UNITS_PER_ROW` per row of its tables (``rows``, both tables)
    if that is more."""
    if syncs_per_epoch is not None:
        return int(syncs_per_epoch)
    units = list(units)
    size = ROUND_UNITS if len(units) > 1 else max(LONE_ROUND_UNITS, LONE_UNITS_PER_ROW * int(rows))
    return max(1, int(round(max(units, default=0) / size)))


def hot_rows(plan, units, counts, input_classes, output_classes, replicas, staleness, frequent_rows=True):
    """The frequent rows of a run, ``(rows of W_in, rows of W_out)`` from the top of each table, or None when
    its rounds are not cut into parts (:func:`round_parts`).

    ``plan`` and ``units`` (each replica's units an epoch) as :func:`round_plan` takes them; ``counts``,
    ``input_classes`` and ``output_classes`` as the model's ``class_rows()`` gives them.  ``counts`` are the
    classes' counts: the frequent rows are those whose class the run's last round of a replica is expected to
    hold at least :data:`HOT_OCCURRENCES` times, and they count only when they lead the tables (a vocabulary
    sorted by count; not ``sorted_vocab=False``, nor items in their matrix's order: views of the first rows
    are what is reconciled, and a few frequent rows among rare ones would buy exchanges for nothing);
    ``input_classes`` / ``output_classes`` say whether row ``i`` of ``W_in`` / ``W_out`` is class ``i`` (a
    table of other rows has no frequent rows).  Runs of 3 replicas or more at staleness 0 only: two replicas
    merge by the sum and keep one process's quality with their rounds, and a stale round adopts its rows
    after the next one has trained.  None too without ``frequent_rows`` (the model's parameter).
    """
    units = max(units, default=0)
    if not frequent_rows or not HOT_PART_UNITS or replicas < 3 or staleness or units < 1 or not len(counts):
        return None
    last = plan.span(plan.epochs - 1, plan.rounds(plan.epochs - 1) - 1)
    if round_parts(last, units) < 2:
        return None
    counts = np.asarray(counts, dtype=np.float64)
    expected = counts * (units * (last.stop - last.start) / last.scale / max(counts.sum(), 1.0))
    frequent = expected >= HOT_OCCURRENCES
    leading = len(frequent) if frequent.all() else int(np.argmin(frequent))
    if leading < frequent.sum():        # frequent rows after a rare one: the table is not sorted by count
        return None
    rows = (leading if input_classes else 0, leading if output_classes else 0)
    return rows if any(rows) else None


def round_parts(span, units):
    """Parts of about :data:`HOT_PART_UNITS` units of the largest replica (``units`` an epoch) that the round
    ``span`` is cut into (1: not cut)."""
    return max(1, round(units * (span.stop - span.start) / span.scale / HOT_PART_UNITS))
