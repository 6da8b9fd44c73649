"""Benchmark: the owners' passes of a cluster round with 3 replicas or more, alone: cutting a replica's delta
into the owners' parts (:func:`embkit.cluster.reconcile.split`) and the block momentum merge of an owner's rows
(:func:`embkit.cluster.reconcile.merge`), on 1 to N threads.

The deltas are drawn, not trained: a table of ``--rows`` rows of ``--dim`` floats (gcide's vocabulary by
default), of which each replica changed a share (``--changed``: ``W_out``'s negatives touch nearly every row);
an owner merges every ``replicas``-th row, with the parts of every replica.  Each pass runs ``--repeats``
times into buffers kept between calls (as a replica keeps them); the median is reported.  Nothing is
asserted: timings depend on the machine.

Run it from another checkout's root (``PYTHONPATH=that/root``) to time that code the same way: a ``split``
without threads is timed as it is.

Usage::

    python -m eval.bench.row_passes --replicas 4 8 --threads 1 2 --json row-passes.json
"""
import argparse
import inspect
import json
import sys
import time

import numpy as np

from embkit.cluster.reconcile import RowDelta, local_rows, merge, owned_rows, split


def deltas_of(rng, rows, dim, replicas, changed):
    """One drawn delta a replica: ``changed`` of the rows, in order, with small float16 steps."""
    out = []
    for _ in range(replicas):
        ids = np.sort(rng.choice(rows, int(changed * rows), replace=False)).astype(np.int32)
        out.append(RowDelta(ids, (rng.standard_normal((len(ids), dim)) * 1e-3).astype(np.float16)))
    return out


def median_ms(call, repeats):
    """The median wall milliseconds of ``repeats`` calls (after one untimed call)."""
    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times))


def run(rows, dim, replicas, changed, threads, repeats, seed=0):
    """``{"split_ms", "merge_ms"}`` of one owner (group 0) at ``replicas`` replicas on ``threads`` threads."""
    rng = np.random.default_rng(seed)
    found = deltas_of(rng, rows, dim, replicas, changed)
    threaded = "threads" in inspect.signature(split).parameters
    kept = {}
    options = {"threads": threads, "scratch": kept} if threaded else {}
    split_ms = median_ms(lambda: split(found[0], replicas, **options), repeats)
    owned = owned_rows(rows, replicas, 0)
    parts = [local_rows(split(d, replicas)[0], replicas) for d in found]
    momentum = np.zeros((owned, dim), np.float32)
    scratch = {}
    merge_ms = median_ms(lambda: merge(owned, parts, "momentum", None, momentum, replicas, threads, scratch),
                         repeats)
    return {"rows": rows, "dim": dim, "replicas": replicas, "changed": changed, "threads": threads,
            "split_threaded": threaded, "split_ms": round(split_ms, 2), "merge_ms": round(merge_ms, 2)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=213527, help="rows of the table (gcide's vocabulary)")
    p.add_argument("--dim", type=int, default=100)
    p.add_argument("--replicas", type=int, nargs="+", default=[4, 8])
    p.add_argument("--changed", type=float, default=0.95, help="share of the rows each replica changed")
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    if min(args.replicas) < 3:
        p.error("--replicas: the owners' passes run with 3 replicas or more")
    rows = []
    for replicas in args.replicas:
        for threads in args.threads:
            row = run(args.rows, args.dim, replicas, args.changed, threads, args.repeats)
            rows.append(row)
            print(json.dumps(row), flush=True)
    print("\n| replicas | threads | split ms | merge ms (one owner's rows) |\n|---:|---:|---:|---:|")
    for r in rows:
        print("| %d | %d | %.1f | %.1f |" % (r["replicas"], r["threads"], r["split_ms"], r["merge_ms"]))
    print("\n`python -m eval.bench.row_passes %s`" % " ".join(argv if argv is not None else sys.argv[1:]))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"command": "python -m eval.bench.row_passes " + " ".join(
                argv if argv is not None else sys.argv[1:]), "runs": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
