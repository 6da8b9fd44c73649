"""How evenly the replicas share the merging: the rows each owner receives in a round, when every replica
owns every n-th row of the tables (embkit's choice) against consecutive ranges of rows.

gcide cut into ``--shards`` files and dealt into ``n`` groups as a cluster deals them (skip-gram dim 100,
as ``eval/bench_cluster.py``); each group's replica (``embkit.core.replica``, trained in this process, one
after the other) trains round ``--round`` of ``--rounds`` of the first epoch from the same tables, then
chooses the rows it would send with ``--share`` as ``exchange_share``.  Printed per ``--replicas`` value:
the rows each owner would receive from all replicas (both tables), and the largest against the mean (1 is
an even split).  The vocabulary is sorted by frequency, so consecutive ranges give the first owner the
frequent rows every replica changes.  Nothing is asserted.

Usage::

    python eval/cluster_owners.py [--corpus FILE] [--shards 8] [--replicas 3 8] [--share 0.5] [--round 5]
"""
import argparse
import glob
import os
import shlex
import sys
import tempfile

import numpy as np

from repro_common import need

HERE = os.path.dirname(os.path.abspath(__file__))


def owners_rows(model, files, n, rounds, round_index, share):
    """``{"consecutive ranges": counts, "every n-th row": counts}``: rows each of ``n`` owners receives."""
    from embkit.core.cluster import group_shards
    from embkit.core.reconcile import changed_rows, split
    from embkit.core.replica import Replica
    from embkit.text.shards import TextShard

    counts = {"consecutive ranges": np.zeros(n, np.int64), "every n-th row": np.zeros(n, np.int64)}
    settings = {"epochs": model.epochs, "alpha": model.alpha, "min_alpha": model.min_alpha, "mode": "sum",
                "share": share, "replicas": n}
    for g, shards in enumerate(group_shards([TextShard(f, os.path.getsize(f)) for f in files], n)):
        replica = Replica(model._cluster_spec(), shards, model.W_in, model.W_out, settings, g)
        replica.train(0, round_index, rounds)
        for table, base in zip((replica.model.W_in, replica.model.W_out), replica.bases):
            sent = changed_rows(table, base, share)
            counts["consecutive ranges"] += np.bincount(sent.ids * n // len(table), minlength=n)
            counts["every n-th row"] += [len(part) for part in split(sent, n)]     # embkit's owners
        replica.close()
    return counts


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", default=None, help="default: the shared data's corpora/gcide.txt.gz")
    p.add_argument("--shards", type=int, default=8)
    p.add_argument("--replicas", type=int, nargs="+", default=[3, 8])
    p.add_argument("--rounds", type=int, default=32, help="rounds an epoch")
    p.add_argument("--round", type=int, default=5, help="the round of the first epoch trained")
    p.add_argument("--share", type=float, default=0.5, help="the replicas' exchange_share")
    args = p.parse_args(argv)
    sys.path.insert(0, HERE)
    from bench_cluster import params, write_shards
    from embkit import Word2Vec

    corpus = args.corpus or need("corpora/gcide.txt.gz")
    model = Word2Vec(**dict(params(argparse.Namespace(epochs=5, alpha=0.05), 1), progress=False))
    model.build_vocab(corpus_file=corpus)
    print("| replicas | owners | rows each owner receives in a round | largest / mean |")
    print("|---:|---|---|---:|")
    with tempfile.TemporaryDirectory(prefix="embkit-owners-") as tmp:
        files = sorted(glob.glob(write_shards(corpus, tmp, args.shards)))
        for n in args.replicas:
            for kind, counts in owners_rows(model, files, n, args.rounds, args.round, args.share).items():
                print("| %d | %s | %s | %.2f |" % (n, kind, " / ".join(str(c) for c in counts),
                                                  counts.max() / counts.mean()), flush=True)
    print("\nCommand: python eval/cluster_owners.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:])))


if __name__ == "__main__":
    main()
