"""A model of cluster training throughput at 1-128 workers, from the numbers eval/bench_cluster.py measured.

One round of a replica (see embkit/core/cluster.py) = train ``w = N / (n R)`` words, send the rows it changed
up, receive the reconciled rows.  Its time::

    t_round = w / (threads * v)                     kernels (v: measured words/s of one kernel thread)
            + rows * replica_cost                    a replica finding, sending and adopting rows (measured
                                                     per row on the 1-worker run, loopback transfer included)
            + bytes on the busiest link / bandwidth   exchange
            + n * rows * merge_cost                  merging on the client (measured seconds per row)
            + latency                                a round trip of actor calls, empty (a constant)

Rows changed per round come from a Zipf vocabulary (p_i ~ 1/i): the input rows of the words seen in ``w``
tokens, the output rows of those words and of ``negative * w`` negatives drawn from p^0.75.  The model is
first checked against the measured rows per reconciliation on gcide.  Two exchange topologies:

* ``client``: as embkit does it, every replica's rows go up to the client and the reconciled rows come back
  down through the client's link (``2 n`` row sets on one link; embkit leaves out of each replica's update
  the rows only it sent, so this counts a little more than it moves);
* ``tree``: a reduction tree / allreduce among the workers (about two row sets per link, whatever ``n``):
  what embkit would need beyond a few dozen workers.

With ``--sparse share.json`` (the same benchmark run with ``--exchange-share S``) the rows a round moves are
scaled by the measured ratio of rows per reconciliation at that share to rows at share 1 (gcide, 2
replicas), assumed the same at every scale; the replicas' own passes still cover every changed row.

Usage::

    python eval/cluster_scaling.py --bench bench.json [--sparse share.json] [--gbit 10] [--threads 8]
                                   [--syncs 4 | --round-words 75000]

Prints markdown tables (throughput in words/s and the share of time in the kernels).
"""
import argparse
import json
import os
import sys

import numpy as np

CORPORA = {                      # name: (tokens per epoch, vocabulary at min_count 5)
    "text8-sized": (17_005_207, 71_290),
    "10B tokens": (10_000_000_000, 830_000),
}
DIM, NEGATIVE, WINDOW = 100, 5, 5
BYTES_PER_VALUE = 2              # float16 deltas on the wire
LATENCY = 0.003                  # seconds of an empty round trip of actor calls (eval/cluster_ceiling.py)


def zipf(v):
    p = 1.0 / np.arange(1, v + 1)
    return p / p.sum()


def rows_changed(p, w):
    """Expected input and output rows a replica changes training ``w`` tokens of a vocabulary ``p``."""
    q = p ** 0.75
    q /= q.sum()
    rows_in = np.sum(-np.expm1(-w * p))
    rows_out = np.sum(-np.expm1(-w * p - NEGATIVE * w * q))
    return float(rows_in), float(rows_out)


def union_rows(p, w, n):
    """Rows any of ``n`` replicas changed (each trained ``w`` tokens)."""
    return rows_changed(p, w * n)


def round_time(n, w, vocab, threads, speed, merge_cost, replica_cost, gbit, topology, row_share=1.0):
    """Words/s, share of time in the kernels and bytes on the busiest link of a round in which each of ``n``
    replicas trains ``w`` words and sends ``row_share`` of the rows it changed."""
    p = zipf(vocab)
    changed = sum(rows_changed(p, w))
    one = changed * row_share
    union = sum(union_rows(p, w, n)) * row_share
    row_bytes = DIM * BYTES_PER_VALUE + 4
    if topology == "client":
        link = n * (one + union) * row_bytes if n > 1 else 0.0
    else:
        link = 2 * union * row_bytes if n > 1 else 0.0
    compute = w / (threads * speed)
    exchange = link / (gbit * 1e9 / 8)
    if n == 1:
        merge = 0.0
    elif topology == "client":
        merge = n * one * merge_cost             # the client adds every replica's rows
    else:
        merge = np.log2(n) * union * merge_cost  # each level of the tree adds two row sets
    total = compute + changed * replica_cost + exchange + merge + LATENCY
    return w * n / total, compute / total, link


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", required=True, help="JSON of eval/bench_cluster.py --json")
    ap.add_argument("--sparse", default=None, help="JSON of the same run with --exchange-share below 1")
    ap.add_argument("--gbit", type=float, default=10.0)
    ap.add_argument("--threads", type=int, default=8, help="kernel threads of one worker")
    ap.add_argument("--syncs", type=int, default=4, help="reconciliations per epoch")
    ap.add_argument("--round-words", type=float, default=None,
                    help="instead of --syncs: words each replica trains per round (rounds short enough for "
                         "one-process quality)")
    args = ap.parse_args(argv)
    with open(args.bench) as fh:
        rows = json.load(fh)
    one = [r for r in rows if r.get("workers") == 1]
    two = [r for r in rows if r.get("workers") == 2]
    speed = float(np.mean([r["words"] / r["kernel_s"] for r in one]))
    merge_cost = float(np.mean([r["merge_s"] / (r["rounds"] * r["rows_per_round"]) for r in two]))
    replica_cost = float(np.mean([(r["train_s"] - r["kernel_s"] - r["merge_s"]) / (r["rounds"] * r["rows_per_round"])
                                  for r in one]))
    vocab = two[0]["vocabulary"]
    tokens = two[0]["words"] / 5          # in-vocabulary words of one epoch (5 epochs in the benchmark)
    syncs = two[0]["rounds"] // 5
    p = zipf(vocab)
    predicted = sum(union_rows(p, tokens / (2 * syncs), 2))
    print("measured: %.0f words/s per kernel thread, %.2g s of merging and %.2g s of a replica's work per row; "
          "gcide rows per reconciliation (2 replicas, %d per epoch): measured %.0f, Zipf model %.0f"
          % (speed, merge_cost, replica_cost, syncs, np.mean([r["rows_per_round"] for r in two]), predicted))
    row_share = 1.0
    if args.sparse:
        with open(args.sparse) as fh:
            sparse = [r for r in json.load(fh) if r.get("workers") == 2]
        row_share = float(np.mean([r["rows_per_round"] for r in sparse]) / np.mean([r["rows_per_round"] for r in two]))
        print("sparse exchange: %.0f rows per reconciliation, %.3f of the full exchange's" % (
            np.mean([r["rows_per_round"] for r in sparse]), row_share))
    print()
    for name, (n_tokens, n_vocab) in CORPORA.items():
        rounds = ("rounds of %.3g words per replica" % args.round_words if args.round_words
                  else "%d reconciliations per epoch" % args.syncs)
        print("%s (%.3g tokens, %d words), %d threads per worker, %s, %g Gbit/s:\n"
              % (name, n_tokens, n_vocab, args.threads, rounds, args.gbit))
        print("| workers | MB per round (client link) | words/s, client relays | in kernels | "
              "words/s, tree reduce | in kernels |")
        print("|---:|---:|---:|---:|---:|---:|")
        for n in (1, 2, 4, 8, 16, 32, 64, 128):
            w = args.round_words or n_tokens / (n * args.syncs)
            a = round_time(n, w, n_vocab, args.threads, speed, merge_cost, replica_cost, args.gbit, "client",
                           row_share)
            b = round_time(n, w, n_vocab, args.threads, speed, merge_cost, replica_cost, args.gbit, "tree",
                           row_share)
            print("| %d | %.0f | %.3g | %.0f%% | %.3g | %.0f%% |" % (n, a[2] / 1e6, a[0], 100 * a[1], b[0],
                                                                   100 * b[1]))
        print()
    print("`python eval/cluster_scaling.py %s`" % " ".join(argv or sys.argv[1:]))


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
