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

``--defaults`` models a run of one epoch as embkit's defaults cut it instead, from the cluster settings' own
rules (:func:`embkit.cluster.settings.round_plan`, :func:`~embkit.cluster.settings.hot_rows`,
:func:`~embkit.cluster.settings.round_parts`): one replica's long rounds, two replicas' rounds shrinking
towards the end, and for 3 or more even rounds of ``ROUND_UNITS`` a replica with the frequent rows (the first
rows of a Zipf vocabulary's expected counts, as the rule picks them) reconciled after every part but the last.
A round of every row costs as above, with the actor calls' round trips that it takes (the client's call,
and one step among two replicas, two among more); a reconciliation of the frequent rows costs the passes
over those rows, their bytes on a worker's link and two round trips.  No client's link: a run without
checkpoints or callbacks sends the client nothing during an epoch.  ``--shrinking`` models 3 replicas or more
on the rounds of two (not the default: they lost quality with them; CLUSTER.md, "Quality").

The measured inputs are taken from ``--bench``'s runs of 2 workers: a kernel thread's words/s (each
replica's words over its kernel seconds and threads) and the replicas' passes per row (``--threads``
is then the bench's threads unless given); with ``--defaults`` the rows of 1 worker are not needed.
``--exchange-bits 8`` models rows sent at 8 bits a value (a byte a value and an exponent a row), the passes
per row taken from the bench's runs at 8 bits (``eval.bench.cluster --exchange-bits 16 8``: their rounding
costs a pass), the kernels' speed from all of its runs of 2 workers.

Usage::

    python -m eval.studies.cluster_scaling --bench bench.json [--sparse share.json] [--gbit 10] [--threads 8]
                                           [--syncs 4 | --round-words 75000 | --round-total-words 75000 |
                                            --defaults [--shrinking]] [--latency 0.003] [--exchange-bits 8]

Prints markdown tables (throughput in words/s and the share of time in the kernels).
"""
import argparse
import functools
import json
import sys

import numpy as np

CORPORA = {                      # name: (tokens per epoch, vocabulary at min_count 5)
    "gcide x 11": (53_075_330, 213_527),    # the benchmark's --repeat-corpus 11 (not Zipf: the check)
    "text8-sized": (17_005_207, 71_290),
    "10B tokens": (10_000_000_000, 830_000),
}
DIM, NEGATIVE, WINDOW = 100, 5, 5
BYTES_PER_VALUE = {16: 2, 8: 1}  # float16 steps on the wire, or 8 bits a value (exchange_bits=8)
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


def row_bytes(bits=16):
    """Bytes of a row on the wire at ``bits`` a value: its values, its id, and at 8 bits its exponent."""
    return DIM * BYTES_PER_VALUE[bits] + 4 + (1 if bits == 8 else 0)


def round_time(n, w, vocab, threads, speed, replica_cost, client_cost, gbit, topology, row_share=1.0, bits=16):
    """Words/s, share of time in the kernels and bytes on the client's link of a round in which each of
    ``n`` replicas trains ``w`` words and sends ``row_share`` of the rows it changed."""
    p = zipf(vocab)
    changed = sum(rows_changed(p, w))
    one = changed * row_share
    touched = sum(union_rows(p, w, n))
    union = touched * row_share
    wire = row_bytes(bits)
    compute = w / (threads * speed)
    bandwidth = gbit * 1e9 / 8
    if topology == "ranges":
        client_link = union * wire          # the merged rows of every range, to the client
        worker_link = ((one + union) * (n - 1) / n + union / n) * wire
        exchange = max(worker_link, client_link) / bandwidth + union * client_cost
    else:
        client_link = (n * (one + union) if n > 1 else one) * wire
        exchange = client_link / bandwidth + n * one * client_cost
    work = touched * replica_cost               # the passes cover every changed row, whatever is sent
    total = compute + work + exchange + LATENCY
    return w * n / total, compute / total, client_link


def zipf_counts(v, tokens):
    """Expected counts of a Zipf vocabulary of ``v`` words in ``tokens`` tokens, most frequent first."""
    return zipf(v) * tokens


def default_run(n, tokens, vocab, threads, speed, replica_cost, gbit, latency, shrinking=False, bits=16):
    """Words/s, share of time in the kernels, rounds and reconciliations of the frequent rows (and their
    rows a table) of one epoch of ``tokens`` on ``n`` replicas, cut as embkit's defaults cut it
    (``shrinking``: 3 replicas or more train the rounds of two, with the same parts)."""
    from embkit.cluster import settings

    units = [int(tokens // n)] * n
    plan = settings.round_plan(None, units, 1, 2 * vocab, shrinking=n if shrinking else None)
    counts = zipf_counts(vocab, tokens)
    hot = settings.hot_rows(plan, units, counts, True, True, n, 0) if n > 2 else None
    p = zipf(vocab)
    wire = row_bytes(bits)
    bandwidth = gbit * 1e9 / 8
    steps = 0 if n == 1 else 1 if n == 2 else 2         # peer steps of a round's end (settings: the swap, owners)
    compute = work = exchange = calls = 0.0
    hot_syncs = 0
    rows_of = functools.lru_cache(maxsize=None)(lambda w: (sum(rows_changed(p, w)), sum(union_rows(p, w, n))))
    for index in range(plan.rounds(0)):
        span = plan.span(0, index)
        w = units[0] * (span.stop - span.start) / span.scale
        one, union = rows_of(round(w))       # even rounds: the same rows, computed once
        compute += w / (threads * speed)
        work += union * replica_cost
        exchange += ((one + union) * (n - 1) / n) * wire / bandwidth
        calls += latency * (1 + steps)
        if hot is not None:
            syncs = settings.round_parts(span, units[0]) - 1
            hot_syncs += syncs
            rows = sum(hot)
            work += syncs * rows * replica_cost
            exchange += syncs * 2 * rows * (n - 1) / n * wire / bandwidth
            calls += syncs * 2 * latency
    total = compute + work + exchange + calls
    return tokens / total, compute / total, plan.rounds(0), hot_syncs, (0 if hot is None else hot[0])


def print_defaults(args, speed, replica_cost, threads):
    """The tables of ``--defaults``."""
    for name, (n_tokens, n_vocab) in CORPORA.items():
        print("%s (%.3g tokens, %d words), one epoch at embkit's defaults%s, %d threads per worker, %g Gbit/s, "
              "%d bits a value, %.1f ms a round trip of actor calls:\n" % (
                  name, n_tokens, n_vocab, " (3 workers or more: the rounds of two)" if args.shrinking else "",
                  threads, args.gbit, args.exchange_bits, 1e3 * args.latency))
        print("| workers | rounds | reconciliations of the frequent rows (rows a table) | words/s | in kernels |")
        print("|---:|---:|---:|---:|---:|")
        for n in (1, 2, 4, 8, 16, 32, 64, 128):
            speed_n, share, rounds, hot_syncs, hot = default_run(n, n_tokens, n_vocab, threads, speed,
                                                                 replica_cost, args.gbit, args.latency,
                                                                 args.shrinking, args.exchange_bits)
            print("| %d | %d | %s | %.3g | %.0f%% |" % (n, rounds, "%d (%d)" % (hot_syncs, hot) if hot else "-",
                                                      speed_n, 100 * share))
        print()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bench", required=True, help="JSON of eval.bench.cluster --json")
    ap.add_argument("--sparse", default=None, help="JSON of the same run with --exchange-share below 1")
    ap.add_argument("--gbit", type=float, default=10.0)
    ap.add_argument("--threads", type=int, default=None,
                    help="kernel threads of one worker (default 8; with --defaults, the bench's)")
    ap.add_argument("--syncs", type=int, default=4, help="reconciliations per epoch")
    ap.add_argument("--round-words", type=float, default=None,
                    help="instead of --syncs: words each replica trains per round (rounds short enough for "
                         "one-process quality with 2 workers)")
    ap.add_argument("--round-total-words", type=float, default=None,
                    help="instead of --syncs: words all the replicas train per round together (each its n-th; "
                         "rounds short enough for one-process quality with 8 workers)")
    ap.add_argument("--defaults", action="store_true",
                    help="instead of the rounds above: one epoch cut as embkit's defaults cut it (the rounds and "
                         "the frequent rows' reconciliations)")
    ap.add_argument("--shrinking", action="store_true",
                    help="with --defaults: 3 workers or more train the rounds of two (shrinking towards the end)")
    ap.add_argument("--latency", type=float, default=LATENCY, help="seconds of a round trip of actor calls")
    ap.add_argument("--exchange-bits", type=int, choices=sorted(BYTES_PER_VALUE), default=16,
                    help="bits a value of the exchanged rows; the bench's runs at those bits give the replicas' "
                         "passes (whose rounding costs at 8 bits)")
    args = ap.parse_args(argv)
    with open(args.bench) as fh:
        rows = json.load(fh)
    rows = rows["runs"] if isinstance(rows, dict) else rows     # a results file: the command, then its runs
    one = [r for r in rows if r.get("workers") == 1]
    pairs = [r for r in rows if r.get("workers") == 2]      # the kernels' speed: of every run of 2 workers
    two = [r for r in pairs if (r.get("exchange_bits") or 16) == args.exchange_bits]
    if not two:
        ap.error("%s has no run of 2 workers at %d bits a value" % (args.bench, args.exchange_bits))
    replica_cost = float(np.mean([r["pass_s"] / (r["rounds"] * r["rows_per_round"]) for r in two]))
    if args.defaults:
        measured = int(two[0].get("threads") or 1)
        threads = args.threads or measured
        speed = float(np.mean([r["words"] / 2 / r["kernel_s"] / measured for r in pairs]))
        print("measured (2 workers of %d threads): %.0f words/s per kernel thread, %.2g s of a replica's passes per "
              "row\n" % (measured, speed, replica_cost))
        print_defaults(args, speed, replica_cost, threads)
        print("`python -m eval.studies.cluster_scaling %s`" % " ".join(argv or sys.argv[1:]))
        return
    speed = float(np.mean([r["words"] / r["kernel_s"] for r in one]))
    args.threads = args.threads or 8
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
                           row_share, args.exchange_bits)
            b = round_time(n, w, n_vocab, args.threads, speed, replica_cost, client_cost, args.gbit, "client",
                           row_share, args.exchange_bits)
            print("| %d | %.0f | %.3g | %.0f%% | %.0f | %.3g | %.0f%% |" % (
                n, a[2] / 1e6, a[0], 100 * a[1], b[2] / 1e6, b[0], 100 * b[1]))
        print()
    print("`python -m eval.studies.cluster_scaling %s`" % " ".join(argv or sys.argv[1:]))


if __name__ == "__main__":
    main()
