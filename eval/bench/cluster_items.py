"""Item embeddings on a cluster: one process against Dask LocalClusters of worker processes, on MovieLens.

The ratings >= 4 stars of ``--data`` ordered by time per user, every item paired with the next ``--window``
items of its user's timeline, the pair occurrences split 70/10/20 (seed 0), as ``eval.bench.items`` does;
``ItemEmbedding`` (dim 100, relaxed softmax with 5 uniform negatives, ``--epochs``) trained on the training
split by one process and by a cluster of each ``--workers`` count (2 by default) at its default rounds, and
with ``--syncs N`` also at N even rounds an epoch; the test split scored with 100 sampled negatives (approximate MPR, precision at 50 / 15 / 5).
Every trainer has one kernel thread.  Nothing is asserted: a line per run, a markdown table, the command.

Usage::

    python -m eval.bench.cluster_items [--data ml-latest-small] [--epochs 10] [--seeds 1 2 3] [--workers 2 4 ...]
                                       [--syncs N ...] [--json out.json]
"""
import argparse
import json
import shlex
import sys
import time

import numpy as np

from embkit import ItemEmbedding
from eval.bench.items import load_split, metrics_of

METRICS = ("mpr", "prec50", "prec15", "prec5")


def run_one(train, test, seed, epochs, client=None, syncs=None):
    """Train one model and score it: a dict of the run."""
    model = ItemEmbedding(vector_size=100, epochs=epochs, loss="relaxed_softmax", sampler="uniform", negative=5,
                          workers=1, seed=seed, progress=False, client=client, syncs_per_epoch=syncs)
    clock = time.perf_counter()
    model.fit(train)
    seconds = time.perf_counter() - clock
    scores = metrics_of(model.evaluate(test, n_negatives=100, seed=seed))
    stats = model.last_cluster_stats if client is not None else None
    return dict(seed=seed, seconds=seconds, rounds=None if stats is None else stats.rounds,
                **{k: float(scores[k]) for k in METRICS})


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default="ml-latest-small")
    p.add_argument("--window", type=int, default=3)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--workers", type=int, nargs="+", default=[2], help="worker processes of each cluster")
    p.add_argument("--syncs", type=int, nargs="*", default=[], help="also train at N even rounds an epoch")
    p.add_argument("--json", metavar="FILE")
    args = p.parse_args(argv)
    from embkit.cluster.local import local_client
    counts, (train, _, test) = load_split(args.data, args.window)
    print("%s: %d items, %d training pairs, %d test pairs" % (args.data, counts.n_items, train.total, test.total))
    runs = {}

    def record(label, seed, on, syncs):
        run = run_one(train, test, seed, args.epochs, on, syncs)
        runs.setdefault(label, []).append(run)
        print("  %-36s seed %d: %6.1f s, %s rounds, MPR %.2f, P@50 %.2f, P@15 %.2f, P@5 %.2f"
              % (label, seed, run["seconds"], run["rounds"], 100 * run["mpr"], 100 * run["prec50"],
                 100 * run["prec15"], 100 * run["prec5"]), flush=True)

    for seed in args.seeds:
        record("1 process", seed, None, None)
    for n in args.workers:
        with local_client(n) as client:
            trainers = [("%d workers, default rounds" % n, None)]
            trainers += [("%d workers, %d even rounds an epoch" % (n, k), k) for k in args.syncs]
            for seed in args.seeds:
                for label, syncs in trainers:
                    record(label, seed, client, syncs)
    print("\n| trainer | seeds | s | rounds | MPR % | P@50 % | P@15 % | P@5 % |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for label, rows in runs.items():
        cells = ["%.2f ± %.2f" % (100 * np.mean([r[k] for r in rows]), 100 * np.std([r[k] for r in rows]))
                 for k in METRICS]
        rounds = rows[0]["rounds"] if rows[0]["rounds"] is not None else "-"
        print("| %s | %s | %.1f | %s | %s |" % (label, ", ".join(map(str, args.seeds)),
                                               np.mean([r["seconds"] for r in rows]), rounds, " | ".join(cells)))
    print("\n`python -m eval.bench.cluster_items %s`" % " ".join(shlex.quote(a) for a in (argv or sys.argv[1:])))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"data": args.data, "epochs": args.epochs, "runs": runs}, fh, indent=1)


if __name__ == "__main__":
    main()
