"""Cluster training on one machine: one process against Dask LocalClusters of 1 and 2 worker processes.

Skip-gram (dim 100, window 5, 5 negatives, sample 1e-3, min_count 5, ``--epochs``), by default on the shared
data folder's ``corpora/gcide.txt.gz``, cut into ``--shards`` plain-text files of consecutive lines (as a
corpus sits in object storage) which every trainer reads; ``--repeat-corpus K`` makes it K times as large
(its lines K times over, shuffled: for timing, as the vocabulary stays gcide's).  Every trainer has
``--threads`` kernel threads (``workers``): the one-process run, and each worker process of the clusters (a
Dask worker of as many threads).  For every run: training seconds and in-vocabulary words/s (the epochs
alone: the vocabulary, and a cluster's replicas opening, come before), end-to-end seconds (vocabulary,
opening and training: ``build_vocab``'s seconds and the rest outside the epochs are given apart) and their
CPU seconds (of this process, which holds a ``LocalCluster``'s scheduler and nannies, and of every worker:
what a run costs where the cores are shared with other work; every cluster is new, and its workers import
embkit's trainer before the clock starts, as a long-lived cluster's have and this process has; with
``--reuse-clusters`` each cluster trains every seed and repeat, so that from its second run on its workers have
scanned and trained before, as this process has),
reconciliations (of every row, and of the frequent rows within the rounds), mean bytes per reconciliation
(changed rows up from every replica plus reconciled rows down to every replica and the client, the frequent
rows' within its round included), the replicas' kernel, pass and
wait seconds and the client's, and unless ``--no-quality`` analogy accuracy (restrict_vocab 30000), WS-353
and SimLex-999 Spearman.

Usage::

    python -m eval.bench.cluster [--corpus FILE] [--epochs 5] [--alpha 0.05] [--seeds 1 2 3] [--clusters 1 2]
                                 [--syncs N] [--reconcile momentum] [--exchange-share 1] [--staleness 0 1]
                                 [--exchange-bits 16 8]
                                 [--interleave] [--reuse-clusters] [--hot-part-units N] [--shrinking-replicas N]
                                 [--dask-defaults]
                                 [--repeat-corpus K] [--no-quality] [--repeat 1] [--threads 1] [--grid NxT ...]
                                 [--json out.json]

``--grid 2x8 4x4 8x2`` replaces ``--clusters`` and ``--threads``: for each pair, one process of T threads,
then a cluster of N workers of T threads each (a machine's cores shared out in different ways).

``--hot-part-units N`` sets ``embkit.cluster.settings.HOT_PART_UNITS`` (the parts of a round of 3 replicas or
more after which the frequent rows are reconciled; 0: none) for the run, ``--shrinking-replicas N``
``embkit.cluster.settings.SHRINKING_REPLICAS`` (the most replicas whose default rounds shrink towards the end).

Every cluster starts as embkit starts its own (:func:`embkit.cluster.local.local_client`, under
``embkit.cluster.local.QUIET_DASK``); ``--dask-defaults`` starts them under Dask's configuration as it is.

``--repeat N`` runs every seed's trainers N times, one after the other (1 process, 1 worker, 2 workers, 1
process, ...), so that the speed of each is a mean over runs spread across the sitting, and each cluster's
runs are also compared with the one-process run of the same repeat.

Nothing is asserted: it prints one line per run, a markdown table (mean ± spread over runs) and the
command line.
"""
import argparse
import contextlib
import gzip
import json
import os
import resource
import shlex
import sys
import tempfile
import time

import numpy as np

from embkit import Word2Vec
from embkit.cluster import EXCHANGE_BITS, EXCHANGE_SHARE, RECONCILE, STALENESS, SYNCS_PER_EPOCH
from embkit.cluster import settings as cluster_settings
from embkit.cluster.reconcile import MODES
from eval.bench.word2vec import default_corpus, evaluate


def write_shards(corpus, directory, n, interleave=False, repeat=1, seed=0):
    """``corpus`` cut into ``n`` plain-text files of consecutive lines (about equal sizes), or dealt line by
    line with ``interleave``; with ``repeat`` above 1, its lines ``repeat`` times over in a shuffled order
    (a corpus of that many tokens for timing: the vocabulary stays the corpus's).  Returns their folder."""
    opener = gzip.open if corpus.endswith(".gz") else open
    with opener(corpus, "rt", encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    order = np.arange(len(lines))
    if repeat > 1:
        order = np.random.default_rng(seed).permutation(np.tile(order, repeat))
    runs = consecutive_runs(len(order), n)
    for k in range(n):
        part = order[k::n] if interleave else order[runs[k]]
        with open(os.path.join(directory, "shard-%03d.txt" % k), "w", encoding="utf-8") as out:
            for i in part:
                out.write(lines[i])
                out.write("\n")
    return directory


def consecutive_runs(count, n):
    """``n`` slices of ``range(count)``: runs of consecutive items of about equal numbers (the shards of
    consecutive lines)."""
    step = -(-count // n)
    return [slice(k * step, (k + 1) * step) for k in range(n)]


def params(args, seed, threads):
    return dict(vector_size=100, window=5, negative=5, sample=1e-3, min_count=5, sg=1, epochs=args.epochs,
                workers=threads, seed=seed, alpha=args.alpha)


def import_trainer():
    """Import what a replica and a scan run (a worker imports them once, at its first run; the one-process
    trainer runs where they are imported already)."""
    import embkit.cluster.replica  # noqa: F401
    import embkit.text.shards  # noqa: F401
    import embkit.text.word2vec  # noqa: F401


def _cpu_seconds():
    """CPU seconds (user and system, every thread) this process has used."""
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


def cpu_seconds(client=None):
    """CPU seconds used so far by this process (with a ``LocalCluster``, also its scheduler and nannies) and
    by every worker process of ``client``: what a run costs on a machine whose cores are shared."""
    return _cpu_seconds() + (0.0 if client is None else sum(client.run(_cpu_seconds).values()))


def run_one(args, label, seed, corpus, threads, client=None, n_workers=0, staleness=STALENESS, bits=EXCHANGE_BITS):
    """One run: training seconds (the epochs alone: a cluster's replicas have read their shards) and
    end-to-end seconds (vocabulary, reading, training), exchange statistics and quality."""
    cpu = cpu_seconds(client)       # outside the clock: with a cluster, a call to every worker
    clock = time.perf_counter()
    if client is None:
        model = Word2Vec(**params(args, seed, threads))
    else:
        model = Word2Vec(client=client, syncs_per_epoch=args.syncs, reconcile=args.reconcile,
                         exchange_share=args.exchange_share, exchange_bits=bits, staleness=staleness,
                         **params(args, seed, threads))
    model.build_vocab(corpus_file=corpus)
    vocab = time.perf_counter() - clock
    own = _cpu_seconds()
    model.train()
    own = _cpu_seconds() - own
    end_to_end = time.perf_counter() - clock
    cpu = cpu_seconds(client) - cpu
    report = model.last_report
    # outside the vocabulary and the epochs: a cluster's replicas opened (tables sent, shards encoded), the
    # tables fetched at the end; one process's tables and chunks are ready after build_vocab
    row = {"trainer": label, "workers": n_workers, "threads": threads, "seed": seed, "train_s": report.seconds,
           "staleness": staleness if client is not None else None,
           "exchange_bits": bits if client is not None else None, "vocab_s": vocab,
           "other_s": end_to_end - vocab - report.seconds,
           "end_to_end_s": end_to_end, "cpu_s": cpu, "words_per_s": report.words_per_second, "words": report.words}
    if client is None:      # the CPU time of training in this process (a cluster's replicas report their own)
        row["kernel_cpu_s"] = own
    stats = getattr(model, "last_cluster_stats", None) if client is not None else None
    if stats is not None:
        row.update(rounds=stats.rounds, hot_syncs=stats.hot_syncs, bytes_per_round=stats.bytes_per_round,
                   rows_per_round=float(np.mean(stats.rows_changed)), apply_s=stats.apply_seconds,
                   kernel_s=stats.train_seconds, kernel_cpu_s=stats.train_cpu_seconds, pass_s=stats.pass_seconds,
                   find_s=stats.find_seconds, merge_s=stats.merge_seconds, adopt_s=stats.adopt_seconds,
                   wait_s=stats.wait_seconds, call_s=stats.call_seconds,
                   vocabulary=len(model.vocab))
    nan = float("nan")
    row.update(analogy=nan, ws353=nan, simlex999=nan)
    if args.quality:
        row.update({k: v for k, v in evaluate(model.wv, 30000, "embkit").items()
                    if k in ("analogy", "ws353", "simlex999")})
    print("  %-22s seed %d: %6.1f s (end to end %.1f s: vocabulary %.2f s, other %.2f s; CPU %.1f s), %9.0f "
          "words/s, analogy %.4f, WS-353 %.4f, SimLex %.4f%s"
          % (label, seed, row["train_s"], end_to_end, vocab, row["other_s"], cpu, row["words_per_s"], row["analogy"],
             row["ws353"],
             row["simlex999"],
             ", training CPU %.1f s" % own if stats is None else
             ", %d rounds of %.1f MB, kernels %.1f s (CPU %.1f s), replicas' passes %.1f s (finding rows %.1f s, "
             "merging %.1f s, adopting %.1f s), waits %.1f s, calls %.1f s, client %.1f s"
             % (row["rounds"], row["bytes_per_round"] / 1e6, row["kernel_s"], row["kernel_cpu_s"], row["pass_s"],
                row["find_s"], row["merge_s"], row["adopt_s"],
                row["wait_s"], row["call_s"], row["apply_s"])),
          flush=True)
    return row


def cell(values, fmt):
    values = np.asarray(values, dtype=float)
    if np.isnan(values).all():
        return "-"
    spread = values.std(ddof=1) if len(values) > 1 else 0.0
    return (fmt + " ± " + fmt) % (values.mean(), spread)


def table(rows):
    print("| trainer | runs | train s | end to end s | CPU s end to end | words/s | vs the first row | "
          "reconciliations | MB per reconciliation | analogy | WS-353 | SimLex-999 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    labels = list(dict.fromkeys(r["trainer"] for r in rows))
    base = np.mean([r["words_per_s"] for r in rows if r["trainer"] == labels[0]])
    for label in labels:
        sel = [r for r in rows if r["trainer"] == label]
        mb = "-" if "bytes_per_round" not in sel[0] else "%.1f" % np.mean([r["bytes_per_round"] / 1e6 for r in sel])
        rounds = "-" if "rounds" not in sel[0] else "%d" % sel[0]["rounds"] + (
            " + %d of the frequent rows" % sel[0]["hot_syncs"] if sel[0].get("hot_syncs") else "")
        print("| %s | %d | %s | %s | %s | %s | %.2fx | %s | %s | %s | %s | %s |" % (
            label, len(sel), cell([r["train_s"] for r in sel], "%.1f"), cell([r["end_to_end_s"] for r in sel], "%.1f"),
            cell([r["cpu_s"] for r in sel], "%.1f"), cell([r["words_per_s"] for r in sel], "%.0f"),
            np.mean([r["words_per_s"] for r in sel]) / base, rounds, mb,
            cell([r["analogy"] for r in sel], "%.4f"),
            cell([r["ws353"] for r in sel], "%.4f"), cell([r["simlex999"] for r in sel], "%.4f")))
    for label in labels:
        sel = [r for r in rows if r["trainer"] == label]
        if not sel[0]["workers"]:
            continue
        ones = [r for r in rows if not r["workers"] and r["threads"] == sel[0]["threads"]]
        if ones and len(sel) == len(ones):      # runs of one repeat sat side by side
            print("\n%s against 1 process of as many threads, run by run: words/s %s; CPU seconds end to end %s"
                  % (label, ", ".join("%.2fx" % (b["words_per_s"] / a["words_per_s"]) for a, b in zip(ones, sel)),
                     ", ".join("%.2fx" % (b["cpu_s"] / a["cpu_s"]) for a, b in zip(ones, sel))))


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
    p.add_argument("--repeat-corpus", type=int, default=1, metavar="K",
                   help="train on the corpus's lines K times over, shuffled (a corpus K times as large, for timing)")
    p.add_argument("--no-quality", dest="quality", action="store_false", help="skip the analogy and similarity scores")
    p.add_argument("--syncs", type=int, default=SYNCS_PER_EPOCH,
                   help="reconciliations per epoch (default: rounds of about 75,000 words per replica)")
    p.add_argument("--reconcile", default=RECONCILE, choices=MODES)
    p.add_argument("--exchange-share", type=float, default=EXCHANGE_SHARE,
                   help="share of a round's squared step each replica sends (1: every changed row)")
    p.add_argument("--staleness", type=int, nargs="+", default=[STALENESS], choices=(0, 1),
                   help="staleness of the cluster runs; several: each cluster runs with each, interleaved")
    p.add_argument("--exchange-bits", type=int, nargs="+", default=[EXCHANGE_BITS], choices=(16, 8),
                   help="bits a value of the rows each replica sends; several: each cluster runs with each, "
                        "interleaved")
    p.add_argument("--repeat", type=int, default=1, help="runs of every seed's trainers, interleaved")
    p.add_argument("--threads", type=int, default=1, help="kernel threads of every trainer (and of each worker)")
    p.add_argument("--grid", nargs="+", default=None, metavar="NxT",
                   help="instead of --clusters and --threads: for each NxT, one process of T threads against a "
                        "cluster of N workers of T threads each (e.g. 2x8 4x4 8x2)")
    p.add_argument("--reuse-clusters", action="store_true",
                   help="start each cluster once and train every seed and repeat on it (a long-lived cluster)")
    p.add_argument("--hot-part-units", type=int, default=None, metavar="N",
                   help="units of the parts of a round after which the frequent rows are reconciled (0: none)")
    p.add_argument("--shrinking-replicas", type=int, default=None, metavar="N",
                   help="most replicas whose default rounds shrink towards the end (more: even rounds)")
    p.add_argument("--dask-defaults", action="store_true",
                   help="start the clusters under Dask's configuration as it is, not embkit's QUIET_DASK")
    p.add_argument("--json", default=None, metavar="FILE")
    args = p.parse_args(argv)
    if args.hot_part_units is not None:
        cluster_settings.HOT_PART_UNITS = args.hot_part_units or None
    if args.shrinking_replicas is not None:
        cluster_settings.SHRINKING_REPLICAS = args.shrinking_replicas
    pairs = [(0, args.threads)] + [(n, args.threads) for n in args.clusters]
    if args.grid:
        try:
            grid = [tuple(int(v) for v in g.lower().split("x")) for g in args.grid]
        except ValueError:
            p.error("--grid takes NxT pairs such as 2x8, got %s" % " ".join(args.grid))
        if any(len(g) != 2 or min(g) < 1 for g in grid):
            p.error("--grid takes NxT pairs of positive numbers such as 2x8, got %s" % " ".join(args.grid))
        pairs = [(k, t) for n, t in grid for k in (0, n)]
    if args.no_single:
        pairs = [(n, t) for n, t in pairs if n]
    from embkit.cluster.local import local_client

    rows = []
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as kept:
        pattern = write_shards(args.corpus, tmp, args.shards, args.interleave, args.repeat_corpus)
        clusters = {}

        def cluster(n, threads, runs):
            """A client of a new ``LocalCluster``, or with ``--reuse-clusters`` the one of ``(n, threads)``."""
            if args.reuse_clusters and (n, threads) in clusters:
                return clusters[n, threads]
            client = (kept if args.reuse_clusters else runs).enter_context(
                local_client(n, threads, quiet=not args.dask_defaults))
            client.run(import_trainer)      # as this process has: a long-lived cluster's workers
            clusters[n, threads] = client
            return client

        for seed in [s for s in args.seeds for _ in range(args.repeat)]:
            for n, threads in pairs:
                each = "" if not args.grid else " x %d thread%s" % (threads, "s" if threads > 1 else "")
                if not n:
                    rows.append(run_one(args, "1 process" + each, seed, pattern, threads))
                    continue
                for staleness in args.staleness:
                    for bits in args.exchange_bits:
                        stale = ", staleness %d" % staleness if len(args.staleness) > 1 else ""
                        stale += ", %d bits" % bits if len(args.exchange_bits) > 1 else ""
                        label = "cluster, %d worker%s%s%s" % (n, "s" if n > 1 else "", each, stale)
                        with contextlib.ExitStack() as runs:
                            rows.append(run_one(args, label, seed, pattern, threads, cluster(n, threads, runs), n,
                                                staleness, bits))
    table(rows)
    print("\n`python -m eval.bench.cluster %s`" % " ".join(shlex.quote(a) for a in (argv or sys.argv[1:])))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
