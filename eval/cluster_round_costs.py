"""What one reconciliation round of cluster training moves, and what moving it through Dask costs here.

1. Rows a round changes: skip-gram as ``eval/bench_cluster.py`` (dim 100, window 5, 5 negatives, min_count 5,
   one thread) trained one epoch on the first ``--words`` words of gcide, then one round of ``--round-words``
   more words (the default round of ``embkit.core.cluster.ROUND_UNITS``) at half the initial rate, as in
   the middle of a run.  Per table: rows changed, and how concentrated the steps are (the fewest rows that
   hold 90 / 99 / 99.9% of the squared step).
2. Moving such a round's data: a ``LocalCluster`` of two single-thread worker processes; the time to scatter
   ``--down-mb`` to both workers (the merged update, as ``client.scatter(..., broadcast=True)``) and to bring
   ``--up-mb`` back from each (a task's result, as the replicas' deltas), median of ``--repeat``.

Nothing is asserted; timings need the machine to itself.

Usage::

    python eval/cluster_round_costs.py [--words 2400000] [--round-words 75000] [--down-mb 22] [--up-mb 11]
"""
import argparse
import gzip
import time

import numpy as np

from repro_common import need


def read_words(path, n_words, skip=0):
    """Lines of ``path`` as word lists: ``n_words`` words after the first ``skip`` lines; (lines, lines read)."""
    out, total, index = [], 0, 0
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for index, line in enumerate(fh):
            if index < skip:
                continue
            words = line.split()
            out.append(words)
            total += len(words)
            if total >= n_words:
                break
    return out, index + 1


def round_rows(args):
    from embkit import Word2Vec
    path = need("corpora/gcide.txt.gz")
    first, read = read_words(path, args.words)
    round_lines, _ = read_words(path, args.round_words, skip=read)
    model = Word2Vec(sentences=first, vector_size=100, window=5, negative=5, min_count=5, sample=1e-3, sg=1,
                     epochs=1, workers=1, seed=1, alpha=0.025, progress=False)
    before = model.W_in.copy(), model.W_out.copy()
    n = sum(len(x) for x in round_lines)
    model.train(round_lines, total_words=n, epochs=1, start_alpha=0.0125, end_alpha=0.0125)
    print("| table | rows | changed | rows with 90% / 99% / 99.9% of the squared step |")
    print("|---|---:|---:|---|")
    for name, old, new in (("W_in", before[0], model.W_in), ("W_out", before[1], model.W_out)):
        energy = np.sort(((new - old) ** 2).sum(axis=1))[::-1]
        changed = int((energy > 0).sum())
        share = np.cumsum(energy) / max(energy.sum(), 1e-30)
        held = [int(np.searchsorted(share, f)) + 1 for f in (0.9, 0.99, 0.999)]
        print("| %s | %d | %d (%.0f%%) | %s |" % (name, len(old), changed, 100.0 * changed / len(old),
                                                " / ".join("%d (%.0f%%)" % (h, 100.0 * h / len(old)) for h in held)))


def _make(mb):
    return np.ones(int(mb * 1e6) // 2, np.uint16)


def transfer(args):
    from distributed import Client, LocalCluster, wait
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        workers = sorted(client.nthreads())
        down, up = [], []
        for _ in range(args.repeat):
            update = _make(args.down_mb)
            clock = time.perf_counter()
            future = client.scatter(update, workers=workers, broadcast=True, hash=False)
            down.append(time.perf_counter() - clock)
            results = [client.submit(_make, args.up_mb, workers=[w], pure=False) for w in workers]
            wait(results)       # made on the workers: only the transfer below is timed
            clock = time.perf_counter()
            client.gather(results)
            up.append(time.perf_counter() - clock)
            del future, results
    print("scatter %.0f MB to 2 workers: %.0f ms; gather %.0f MB from each of 2 workers: %.0f ms (median of %d)"
          % (args.down_mb, 1e3 * np.median(down), args.up_mb, 1e3 * np.median(up), args.repeat))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--words", type=int, default=2_400_000)
    p.add_argument("--round-words", type=int, default=75_000)
    p.add_argument("--down-mb", type=float, default=22.0)
    p.add_argument("--up-mb", type=float, default=11.0)
    p.add_argument("--repeat", type=int, default=9)
    args = p.parse_args(argv)
    round_rows(args)
    transfer(args)


if __name__ == "__main__":
    main()
