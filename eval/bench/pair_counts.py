"""Benchmark: counting item co-occurrences (``forward_pair_counts``) on 1, 2, ... threads.

Synthetic timelines of about MovieLens-20M's size by default (``--users`` users of 20 to 380 items each, item
ids Zipf-distributed over ``--items``), window 3; each ``--workers`` count in turn, ``--repeats`` times
interleaved; prints each count's seconds, the medians and the speedups against the fewest threads, and checks
that every count gives the same matrix.  Nothing is asserted about time: it depends on the machine.

Usage::

    python -m eval.bench.pair_counts --workers 1 2 --repeats 3
"""
import argparse
import sys

import numpy as np

from embkit.items.cooccurrence import forward_pair_counts
from eval.bench.interleaved import interleaved_runs, speedup_table, thread_label


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--users", type=int, default=100_000)
    p.add_argument("--items", type=int, default=20_000)
    p.add_argument("--window", type=int, default=3)
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    rng = np.random.default_rng(0)
    lengths = rng.integers(20, 380, args.users)
    tokens = rng.zipf(1.3, int(lengths.sum())) % args.items
    print("%d users, %d ratings, %d items, window %d" % (args.users, len(tokens), args.items, args.window))
    calls = {thread_label("embkit", w): (lambda w=w: forward_pair_counts(tokens, lengths, args.items, args.window,
                                                                       workers=w)) for w in args.workers}
    times = interleaved_runs(calls, args.repeats, lambda counts, first: (counts != first).nnz and "other pair counts")
    print("\n" + "\n".join(speedup_table(times)))
    print("\n`python -m eval.bench.pair_counts %s`" % " ".join(argv if argv is not None else sys.argv[1:]))


if __name__ == "__main__":
    main()
