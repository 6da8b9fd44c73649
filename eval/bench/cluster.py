"""Cluster training on one machine: one process against a Dask LocalCluster of 1 and 2 worker processes.

Skip-gram (dim 100, window 5, 5 negatives, sample 1e-3, min_count 5, ``--epochs``), by default on the shared
data folder's ``corpora/gcide.txt.gz``, cut into ``--shards`` files of consecutive lines (as a corpus sits in
object storage).  Every trainer has single-threaded kernels (``workers=1``; ``--threads N`` for N): the
one-process run, and each worker process of the clusters (a Dask worker of as many threads).  For every run:
training seconds and in-vocabulary words/s (vocabulary excluded; a cluster run's time includes its rounds'
exchanges and merges), reconciliations, mean bytes per reconciliation (changed rows up from every replica plus
reconciled rows down to every replica), seconds of merging on the client, and analogy accuracy
(restrict_vocab 30000), WS-353 and SimLex-999 Spearman.

Usage::

    python -m eval.bench.cluster [--corpus FILE] [--epochs 5] [--alpha 0.05] [--seeds 1 2 3] [--clusters 1 2]
                                 [--syncs N] [--reconcile momentum] [--exchange-share 1] [--interleave]
                                 [--repeat 1] [--threads 1] [--json out.json]

``--repeat N`` runs every seed's trainers N times, one after the other (1 process, 1 worker, 2 workers, 1
process, ...), so that the speed of each is a mean over runs spread across the sitting.

Nothing is asserted: it prints one line per run, a markdown table (mean ± spread over seeds) and the
command line.  Timings need the machine's cores to itself.
"""
import argparse
import gzip
import json
import os
import shlex
import sys
import tempfile

import numpy as np

from embkit import Word2Vec
from embkit.cluster import EXCHANGE_SHARE, RECONCILE, SYNCS_PER_EPOCH
from embkit.cluster.reconcile import MODES
from eval.bench.word2vec import default_corpus, evaluate


def write_shards(corpus, directory, n, interleave=False):
    """``corpus`` cut into ``n`` plain-text files of consecutive lines (about equal sizes), or dealt line by
    line with ``interleave``; their glob."""
    opener = gzip.open if corpus.endswith(".gz") else open
    with opener(corpus, "rt", encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    step = -(-len(lines) // n)
    for k in range(n):
        part = lines[k::n] if interleave else lines[k * step:(k + 1) * step]
        with open(os.path.join(directory, "shard-%03d.txt" % k), "w", encoding="utf-8") as out:
            out.write("\n".join(part) + "\n")
    return os.path.join(directory, "shard-*.txt")


def params(args, seed):
    return dict(vector_size=100, window=5, negative=5, sample=1e-3, min_count=5, sg=1, epochs=args.epochs,
                workers=args.threads, seed=seed, alpha=args.alpha)


def run_one(args, label, seed, corpus, client=None, n_workers=0):
    if client is None:
        model = Word2Vec(**params(args, seed))
        model.build_vocab(corpus_file=corpus)
    else:
        model = Word2Vec(client=client, syncs_per_epoch=args.syncs, reconcile=args.reconcile,
                         exchange_share=args.exchange_share, **params(args, seed))
        model.build_vocab(corpus_file=corpus)
    model.train()
    report = model.last_report
    row = {"trainer": label, "workers": n_workers, "seed": seed, "train_s": report.seconds,
           "words_per_s": report.words_per_second, "words": report.words}
    stats = getattr(model, "last_cluster_stats", None) if client is not None else None
    if stats is not None:
        row.update(rounds=stats.rounds, bytes_per_round=stats.bytes_per_round,
                   rows_per_round=float(np.mean(stats.rows_changed)), apply_s=stats.apply_seconds,
                   kernel_s=stats.train_seconds, pass_s=stats.pass_seconds, wait_s=stats.wait_seconds,
                   vocabulary=len(model.vocab))
    row.update({k: v for k, v in evaluate(model.wv, 30000, "embkit").items()
                if k in ("analogy", "ws353", "simlex999")})
    print("  %-22s seed %d: %6.1f s, %9.0f words/s, analogy %.4f, WS-353 %.4f, SimLex %.4f%s"
          % (label, seed, row["train_s"], row["words_per_s"], row["analogy"], row["ws353"], row["simlex999"],
             "" if stats is None else ", %.1f MB per reconciliation, kernels %.1f s, replicas' passes %.1f s, "
             "waits %.1f s, client %.1f s" % (row["bytes_per_round"] / 1e6, row["kernel_s"], row["pass_s"],
                                              row["wait_s"], row["apply_s"])),
          flush=True)
    return row


def cell(values, fmt):
    values = np.asarray(values, dtype=float)
    spread = values.std(ddof=1) if len(values) > 1 else 0.0
    return (fmt + " ± " + fmt) % (values.mean(), spread)


def table(rows):
    print("| trainer | runs | train s | words/s | vs the first row | MB per reconciliation | analogy | WS-353 "
          "| SimLex-999 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    labels = list(dict.fromkeys(r["trainer"] for r in rows))
    base = np.mean([r["words_per_s"] for r in rows if r["trainer"] == labels[0]])
    for label in labels:
        sel = [r for r in rows if r["trainer"] == label]
        mb = "-" if "bytes_per_round" not in sel[0] else "%.1f" % np.mean([r["bytes_per_round"] / 1e6 for r in sel])
        print("| %s | %d | %s | %s | %.2fx | %s | %s | %s | %s |" % (
            label, len(sel), cell([r["train_s"] for r in sel], "%.1f"), cell([r["words_per_s"] for r in sel], "%.0f"),
            np.mean([r["words_per_s"] for r in sel]) / base, mb, cell([r["analogy"] for r in sel], "%.4f"),
            cell([r["ws353"] for r in sel], "%.4f"), cell([r["simlex999"] for r in sel], "%.4f")))
    one = [r["words_per_s"] for r in rows if r["trainer"] == "cluster, 1 worker"]
    two = [r["words_per_s"] for r in rows if r["trainer"] == "cluster, 2 workers"]
    if one and len(one) == len(two):
        print("\n2 workers against 1, run by run: " + ", ".join("%.2fx" % (b / a) for a, b in zip(one, two)))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", default=default_corpus())
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--alpha", type=float, default=0.05, help="initial learning rate (embkit's default)")
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--clusters", type=int, nargs="*", default=[1, 2], help="worker processes of each cluster run")
    p.add_argument("--no-single", action="store_true", help="skip the one-process run")
    p.add_argument("--shards", type=int, default=8)
    p.add_argument("--interleave", action="store_true", help="deal the lines into the shards one by one")
    p.add_argument("--syncs", type=int, default=SYNCS_PER_EPOCH,
                   help="reconciliations per epoch (default: rounds of about 75,000 words per replica)")
    p.add_argument("--reconcile", default=RECONCILE, choices=MODES)
    p.add_argument("--exchange-share", type=float, default=EXCHANGE_SHARE,
                   help="share of a round's squared step each replica sends (1: every changed row)")
    p.add_argument("--repeat", type=int, default=1, help="runs of every seed's trainers, interleaved")
    p.add_argument("--threads", type=int, default=1, help="kernel threads of every trainer (and of each worker)")
    p.add_argument("--json", default=None, metavar="FILE")
    args = p.parse_args(argv)
    from distributed import Client, LocalCluster

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        pattern = write_shards(args.corpus, tmp, args.shards, args.interleave)
        for seed in [s for s in args.seeds for _ in range(args.repeat)]:
            if not args.no_single:
                rows.append(run_one(args, "1 process", seed, args.corpus))
            for n in args.clusters:
                with LocalCluster(n_workers=n, threads_per_worker=args.threads, processes=True,
                                  dashboard_address=None) as lc, Client(lc) as client:
                    rows.append(run_one(args, "cluster, %d worker%s" % (n, "s" if n > 1 else ""), seed, pattern,
                                        client, n))
    table(rows)
    print("\n`python -m eval.bench.cluster %s`" % " ".join(shlex.quote(a) for a in (argv or sys.argv[1:])))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
