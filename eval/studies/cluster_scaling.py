"""A model of cluster training throughput at 1-128 workers, from the numbers eval.bench.cluster measured.

One round of a replica (see embkit/cluster/replica.py) = train ``w = N / (n R)`` words, send the rows it changed
to the owners of their ranges, merge its own range, send the merged rows to the others and the client,
adopt the merged rows of every range.  Its time::

    t_round = w / (threads * v)                     kernels (v: measured words/s of one kernel thread)
            + rows * replica_cost                    a replica finding, merging and adopting rows (measured
                                                     per merged row on the 2-worker runs)
            + bytes on the busiest link / bandwidth   exchange
            + rows * client_cost                     the client adding the merged rows to its tables
                                                     (measured per row; merging them, in the old exchange)
            + latency                                a round trip of actor calls, empty (a constant)

Rows changed per round come from a Zipf vocabulary (p_i ~ 1/i): the input rows of the words seen in ``w``
tokens, the output rows of those words and of ``negative * w`` negatives drawn from p^0.75.  The model is
first checked against the measured rows per reconciliation on gcide.  Two exchange topologies:

* ``ranges``: embkit's, each replica merging one range of rows; a worker's link carries about two row sets
  a round in each direction whatever ``n``, and the client's link one set of merged rows (the union of the
  replicas' rows, bounded by the vocabulary), which the client adds to its tables;
* ``client``: the exchange embkit had before, every replica's rows going up to the client and the merged
  rows back down through the client's link (``2 n`` row sets on one link) and the client merging them all.

With ``--sparse share.json`` (the same benchmark run with ``--exchange-share S``) the rows a round moves are
scaled by the measured ratio of rows per reconciliation at that share to rows at share 1 (gcide, 2
replicas), assumed the same at every scale; the replicas' own passes still cover every changed row.

Usage::

    python -m eval.studies.cluster_scaling --bench bench.json [--sparse share.json] [--gbit 10] [--threads 8]
                                           [--syncs 4 | --round-words 75000 | --round-total-words 75000]

Prints markdown tables (throughput in words/s and the share of time in the kernels).
"""
import argparse
import json
import sys

import numpy as np

CORPORA = {                      # name: (tokens per epoch, vocabulary at min_count 5)
    "text8-sized": (17_005_207, 71_290),
    "10B tokens": (10_000_000_000, 830_000),
}
DIM, NEGATIVE, WINDOW = 100, 5, 5
BYTES_PER_VALUE = 2              # float16 deltas on the wire
LATENCY = 0.003                  # seconds of an empty round trip of actor calls (eval.studies.cluster_ceiling)


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


def round_time(n, w, vocab, threads, speed, replica_cost, client_cost, gbit, topology, row_share=1.0):
    """Words/s, share of time in the kernels and bytes on the client's link of a round in which each of
    ``n`` replicas trains ``w`` words and sends ``row_share`` of the rows it changed."""
    p = zipf(vocab)
    changed = sum(rows_changed(p, w))
    one = changed * row_share
    touched = sum(union_rows(p, w, n))
    union = touched * row_share
    row_bytes = DIM * BYTES_PER_VALUE + 4
    compute = w / (threads * speed)
    bandwidth = gbit * 1e9 / 8
    if topology == "ranges":
        client_link = union * row_bytes          # the merged rows of every range, to the client
        worker_link = ((one + union) * (n - 1) / n + union / n) * row_bytes
        exchange = max(worker_link, client_link) / bandwidth + union * client_cost
    else:
        client_link = (n * (one + union) if n > 1 else one) * row_bytes
        exchange = client_link / bandwidth + n * one * client_cost
    work = touched * replica_cost               # the passes cover every changed row, whatever is sent
    total = compute + work + exchange + LATENCY
    return w * n / total, compute / total, client_link


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", required=True, help="JSON of eval.bench.cluster --json")
    ap.add_argument("--sparse", default=None, help="JSON of the same run with --exchange-share below 1")
    ap.add_argument("--gbit", type=float, default=10.0)
    ap.add_argument("--threads", type=int, default=8, help="kernel threads of one worker")
    ap.add_argument("--syncs", type=int, default=4, help="reconciliations per epoch")
    ap.add_argument("--round-words", type=float, default=None,
                    help="instead of --syncs: words each replica trains per round (rounds short enough for "
                         "one-process quality with 2 workers)")
    ap.add_argument("--round-total-words", type=float, default=None,
                    help="instead of --syncs: words all the replicas train per round together (each its n-th; "
                         "rounds short enough for one-process quality with 8 workers)")
    args = ap.parse_args(argv)
    with open(args.bench) as fh:
        rows = json.load(fh)
    one = [r for r in rows if r.get("workers") == 1]
    two = [r for r in rows if r.get("workers") == 2]
    speed = float(np.mean([r["words"] / r["kernel_s"] for r in one]))
    replica_cost = float(np.mean([r["pass_s"] / (r["rounds"] * r["rows_per_round"]) for r in two]))
    client_cost = float(np.mean([r["apply_s"] / (r["rounds"] * r["rows_per_round"]) for r in two]))
    vocab = two[0]["vocabulary"]
    tokens = two[0]["words"] / 5          # in-vocabulary words of one epoch (5 epochs in the benchmark)
    syncs = two[0]["rounds"] // 5
    p = zipf(vocab)
    predicted = sum(union_rows(p, tokens / (2 * syncs), 2))
    print("measured: %.0f words/s per kernel thread, %.2g s of a replica's work and %.2g s of the client's per "
          "row; gcide rows per reconciliation (2 replicas, %d per epoch): measured %.0f, Zipf model %.0f"
          % (speed, replica_cost, client_cost, syncs, np.mean([r["rows_per_round"] for r in two]), predicted))
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
                  else "rounds of %.3g words over the replicas" % args.round_total_words if args.round_total_words
                  else "%d reconciliations per epoch" % args.syncs)
        print("%s (%.3g tokens, %d words), %d threads per worker, %s, %g Gbit/s:\n"
              % (name, n_tokens, n_vocab, args.threads, rounds, args.gbit))
        print("| workers | MB per round on the client's link | words/s, ranges (embkit) | in kernels | "
              "MB on the client's link, client relays | words/s, client relays | in kernels |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        for n in (1, 2, 4, 8, 16, 32, 64, 128):
            w = args.round_words or (args.round_total_words / n if args.round_total_words
                                     else n_tokens / (n * args.syncs))
            a = round_time(n, w, n_vocab, args.threads, speed, replica_cost, client_cost, args.gbit, "ranges",
                           row_share)
            b = round_time(n, w, n_vocab, args.threads, speed, replica_cost, client_cost, args.gbit, "client",
                           row_share)
            print("| %d | %.0f | %.3g | %.0f%% | %.0f | %.3g | %.0f%% |" % (
                n, a[2] / 1e6, a[0], 100 * a[1], b[2] / 1e6, b[0], 100 * b[1]))
        print()
    print("`python -m eval.studies.cluster_scaling %s`" % " ".join(argv or sys.argv[1:]))


if __name__ == "__main__":
    main()
