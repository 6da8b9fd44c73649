"""Study: a cluster's replicas simulated in one process, the most frequent words' rows reconciled more often.

Eight replicas lose quality at the cluster's default rounds and keep it at rounds six times shorter
(CLUSTER.md, "Quality"), and the rounds' cost is their passes over every row.  This asks whether it is the
frequent words' rows (the ones a round moves all the way) that need the short rounds: ``n`` replicas train
in turn in this process (skip-gram d100 w5 neg5 sample 1e-3, alpha 0.05, one thread), each its shard of
consecutive lines (the cluster benchmark's shards), from the same tables; every ``--syncs`` an epoch all
rows are merged with the cluster's merge (:func:`embkit.cluster.reconcile.merge`, block momentum of the agreed
part, float16 deltas) and adopted by every replica, and ``--hot-syncs`` times an epoch the first ``--hot``
rows of both tables only (the most frequent words; with negative sampling a word's output row has its index).
The model is the reconciled tables at the end: analogy (restrict_vocab 30000), WS-353, SimLex-999.
``--shuffle-lines SEED`` shuffles the corpus's lines before it is cut (shards that sample the corpus instead
of runs of an alphabetical dictionary).  ``--hot-late [PARTS]`` adopts the frequent rows' merged steps one
part (or PARTS parts) late (each replica trains on its own table meanwhile and then takes the merged steps
less its own delta, as a reconciliation off the critical path would); the reconciliations of every row stay
synchronous.
``--hot-merge`` chooses the frequent rows' merge: the cluster's block momentum, the mean of the steps, or
the block momentum's step with none kept (``consensus``).
``--hot-from F`` reconciles the frequent rows within the rounds only after the share ``F`` of the run.

The training of each replica's share of a round is :meth:`embkit.Word2Vec.train` on its sentences at the
round's learning rate (linear over the run), so a replica's words cost what they cost in one process plus a
call's overhead; the merges are the cluster's own.  Nothing is asserted.

Usage::

    python -m eval.studies.hot_sync --corpus gcide.txt --replicas 8 --syncs 8 --hot-syncs 48 --hot 1000 \
        --seeds 1 2 3
"""
import argparse
import gzip
import json
import logging
import random
import sys
import time

import numpy as np

from eval.bench.cluster import consecutive_runs
from eval.bench.word2vec import default_corpus, evaluate

SETTINGS = dict(sg=1, vector_size=100, window=5, negative=5, sample=1e-3, min_count=5, workers=1)


def _shards(sentences, n):
    """``n`` runs of consecutive sentences, of about equal numbers of lines (the cluster benchmark's)."""
    return [sentences[run] for run in consecutive_runs(len(sentences), n)]


def _cut(shard, parts):
    """``shard`` cut into ``parts`` runs of about equal words."""
    ends = np.cumsum([len(s) for s in shard])
    at = np.searchsorted(ends, ends[-1] * np.arange(1, parts) / parts)
    return [shard[a:b] for a, b in zip([0] + list(at), list(at) + [len(shard)])]


def _consensus(rows, deltas, head, replicas):
    """The block momentum merge's step with no momentum kept (``mu`` 0, block rate 1): the independent share
    of each row's summed step moves it, the agreed share by the replicas' mean.  A delay-stable merge: a row
    every replica moved alike moves by one replica's step."""
    from embkit._kernels import deltas as kernel

    dim = head.shape[1]
    kernel.momentum_merge([d.ids for d in deltas], [d.values.view(np.uint16) for d in deltas], rows, replicas,
                          1.0 / replicas, 0.0, np.zeros((rows, dim), np.float32), np.empty((rows, dim), np.uint16),
                          np.empty(rows, np.int32), head)


def _reconcile(reps, base, momenta, rows, replicas, pending=None, merge_mode="momentum", refs=None):
    """Merge the first ``rows`` rows of both tables over the replicas into ``base``; every replica adopts them,
    or with ``pending`` (a list) adopts them later (:func:`_adopt_pending`).  ``merge_mode``: ``"momentum"``
    (the cluster's), ``"average"`` or ``"consensus"`` (:func:`_consensus`).  ``refs`` (a dict, with
    ``pending``): each replica's first rows as it found its last delta, ``(replica, table) ->`` array; a
    replica's delta is what it moved since (with steps not adopted yet, its table is not ``base`` plus it).
    """
    from embkit.cluster.reconcile import changed_rows, merge

    for t in range(2):
        head = base[t][:rows]
        if pending is not None:
            before = head.copy()
            own = [rep[t][:rows] - refs.get((i, t), head) for i, rep in enumerate(reps)]
            deltas = [changed_rows(np.ascontiguousarray(rep[t][:rows]), refs.get((i, t), head))
                      for i, rep in enumerate(reps)]
            for i, rep in enumerate(reps):
                refs[(i, t)] = rep[t][:rows].copy()
        else:
            deltas = [changed_rows(np.ascontiguousarray(rep[t][:rows]), head) for rep in reps]
        if merge_mode == "consensus":
            _consensus(rows, deltas, head, replicas)
        elif merge_mode == "average":
            merge(rows, deltas, "average", table=head)
        else:
            merge(rows, deltas, "momentum", table=head, momentum=momenta[t][:rows], replicas=replicas)
        if pending is None:
            for rep in reps:
                rep[t][:rows] = head
        else:
            pending.append((t, rows, head - before, own))


def _adopt_pending(reps, pending, refs):
    """Each replica takes the merged steps of a reconciliation less its own delta in it (and so does its
    reference, ``refs``: the adoption is not a step it made)."""
    for t, rows, step, own in pending:
        for i, (rep, mine) in enumerate(zip(reps, own)):
            rep[t][:rows] += step - mine
            refs[(i, t)] += step - mine
    pending.clear()


def run(corpus, replicas, epochs, syncs, hot_syncs, hot, seed, alpha=0.05, min_alpha=0.0001, shuffle=None,
        late=0, hot_from=0.0, hot_merge="momentum"):
    """Scores of the reconciled model after ``epochs`` (see the module docstring); ``shuffle``: the seed of a
    shuffle of the lines, or None; ``late``: the parts late the frequent rows are adopted (0: at once, before
    the next part; the round's end adopts every one); ``hot_from``: the share
    of the run after which the frequent rows are reconciled within the rounds (before it, at the rounds' ends
    only); ``hot_merge``: the merge of the frequent rows within the rounds (:func:`_reconcile`)."""
    from embkit import Word2Vec

    with (gzip.open if corpus.endswith(".gz") else open)(corpus, "rt", encoding="utf-8") as f:
        lines = f.read().splitlines()
    if shuffle is not None:
        random.Random(shuffle).shuffle(lines)
    sentences = [line.split() for line in lines if line.strip()]
    model = Word2Vec(alpha=alpha, seed=seed, epochs=epochs, **SETTINGS)
    model.build_vocab(sentences)
    rows = len(model.vocab)
    hot = min(hot, rows)
    base = (model.W_in.copy(), model.W_out.copy())
    reps = [(base[0].copy(), base[1].copy()) for _ in range(replicas)]
    momenta = (np.zeros_like(base[0]), np.zeros_like(base[1]))
    steps = max(syncs, hot_syncs)
    if steps % syncs or steps % hot_syncs:
        raise ValueError("--syncs and --hot-syncs must divide the larger of them")
    parts = [_cut(shard, steps) for shard in _shards(sentences, replicas)]
    start = time.perf_counter()
    total = epochs * steps
    pending = []        # the frequent rows' reconciliations not adopted yet, oldest first (each a list)
    refs = {}           # with them: each replica's frequent rows as it found its last delta
    for epoch in range(epochs):
        for step in range(steps):
            k = epoch * steps + step
            a0 = max(min_alpha, alpha - (alpha - min_alpha) * k / total)
            a1 = max(min_alpha, alpha - (alpha - min_alpha) * (k + 1) / total)
            for i, rep in enumerate(reps):
                data = parts[i][step]
                model.W_in, model.W_out = rep
                model.seed = seed * 1_000_003 + k * replicas + i
                model.train(data, total_examples=len(data), epochs=1, start_alpha=a0, end_alpha=a1)
            full = (step + 1) % (steps // syncs) == 0
            if full or (hot and (step + 1) % (steps // hot_syncs) == 0 and k >= hot_from * total):
                while pending and (full or len(pending) >= late):
                    _adopt_pending(reps, pending.pop(0), refs)
                if full:
                    refs.clear()        # every replica adopts the reconciled tables
                elif late:
                    pending.append([])
                _reconcile(reps, base, momenta, rows if full else hot, replicas,
                           pending[-1] if late and not full else None, "momentum" if full else hot_merge, refs)
    seconds = time.perf_counter() - start
    model.W_in, model.W_out = base
    model.seed = seed
    scores = evaluate(model.wv, 30000, "embkit")
    return {"replicas": replicas, "epochs": epochs, "syncs": syncs, "hot_syncs": hot_syncs, "hot": hot, "seed": seed,
            "shuffle_lines": shuffle, "hot_late": late, "hot_from": hot_from, "hot_merge": hot_merge,
            "seconds": round(seconds, 1), **{k: scores[k] for k in ("analogy", "ws353", "simlex999")}}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default=None)
    ap.add_argument("--replicas", type=int, default=8)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--syncs", type=int, default=8, help="reconciliations of every row an epoch")
    ap.add_argument("--hot-syncs", type=int, default=48, help="reconciliations of the hot rows an epoch")
    ap.add_argument("--hot", type=int, nargs="+", default=[1000], help="rows reconciled the more often (0: none)")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1])
    ap.add_argument("--shuffle-lines", type=int, default=None, metavar="SEED", help="shuffle the lines first")
    ap.add_argument("--hot-late", type=int, nargs="?", const=1, default=0, metavar="PARTS",
                    help="adopt the frequent rows' steps PARTS parts late (1 when not given)")
    ap.add_argument("--hot-from", type=float, default=0.0, metavar="F",
                    help="reconcile the frequent rows within the rounds only after this share of the run")
    ap.add_argument("--hot-merge", choices=("momentum", "consensus", "average"), default="momentum",
                    help="merge of the frequent rows within the rounds (consensus: block momentum's step, none kept)")
    ap.add_argument("--jsonl", default=None, help="append one line a run")
    args = ap.parse_args(argv)
    logging.getLogger("embkit").setLevel(logging.ERROR)     # a warning a call on the rising learning rate
    corpus = args.corpus or default_corpus()
    for seed in args.seeds:
        for hot in args.hot:
            row = run(corpus, args.replicas, args.epochs, args.syncs, args.hot_syncs, hot, seed,
                      shuffle=args.shuffle_lines, late=args.hot_late, hot_from=args.hot_from, hot_merge=args.hot_merge)
            row["command"] = "python -m eval.studies.hot_sync " + " ".join(argv or sys.argv[1:])
            row["date"] = time.strftime("%Y-%m-%d")
            print(json.dumps(row), flush=True)
            if args.jsonl:
                with open(args.jsonl, "a") as f:
                    f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
