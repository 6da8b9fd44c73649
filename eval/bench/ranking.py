"""Benchmark: embkit.evaluation.evaluate_ranking and xc_metrics on synthetic problems.

* ranking: random float32 context/target tables (``--targets`` rows each, ``--dim``
  columns) and ``--pairs`` uniformly random (context, target) pairs; full-softmax
  likelihood, exact and approximate MPR (100 negatives) and Prec@5/15/50.
* XC: ``--xc-rows`` x ``--xc-labels`` sparse true and training label matrices
  (Zipf-like label frequencies, ~5 labels per row); metrics at k = 1, 3, 5 from
  top-5 label ids, from a sparse score matrix (100 scores per row), and from a
  dense float32 score matrix over the first ``--xc-dense-rows`` rows.

Prints a markdown table (best of ``--repeat`` runs; wall-clock and CPU seconds, the latter summed over
threads, so that runs on a busy machine can still be compared) and the command that made it.

Usage::

    python -m eval.bench.ranking
    python -m eval.bench.ranking --targets 5000 --pairs 20000 --repeat 3
"""

import argparse
import os
import platform
import sys
import time

import numpy as np
import scipy.sparse as sp

from embkit.evaluation import evaluate_ranking, xc_metrics


def best_time(func, repeat):
    """(wall seconds, CPU seconds of all threads) of the fastest of `repeat` runs, and the result."""
    times, result = [], None
    for _ in range(max(1, repeat)):
        t0, c0 = time.perf_counter(), time.process_time()
        result = func()
        times.append((time.perf_counter() - t0, time.process_time() - c0))
    return min(times), result


def zipf_labels(rng, n_rows, n_labels, per_row=5):
    """Sparse binary labels: ``per_row`` distinct labels per row on average, Zipf-like popularity."""
    weights = 1.0 / np.arange(1, n_labels + 1) ** 0.8
    weights /= weights.sum()
    counts = rng.poisson(per_row, n_rows).clip(0, n_labels)
    rows = np.repeat(np.arange(n_rows), counts)
    cols = rng.choice(n_labels, size=len(rows), p=weights)
    mat = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n_rows, n_labels))
    mat.data[:] = 1.0  # duplicates were summed
    return mat


def bench_ranking(args, rng):
    W = rng.normal(scale=0.3, size=(args.targets, args.dim)).astype(np.float32)
    O = rng.normal(scale=0.3, size=(args.targets, args.dim)).astype(np.float32)
    pairs = rng.integers(0, args.targets, size=(args.pairs, 2))
    rows = []
    for workers in dict.fromkeys([args.workers, 1]):
        seconds, result = best_time(lambda: evaluate_ranking(W, O, pairs, workers=workers), args.repeat)
        rows.append(('evaluate_ranking, workers=%s' % (workers or 'default'),
                     '%s targets x %s pairs, d=%d' % (f'{args.targets:,}', f'{args.pairs:,}', args.dim),
                     seconds, 'MPR %.4f, approx %.4f, Prec@50 %.4f'
                     % (result.mpr, result.mpr_approx, result.precision[50])))
    return rows


def bench_xc(args, rng):
    n, L = args.xc_rows, args.xc_labels
    train = zipf_labels(rng, n, L)
    test = zipf_labels(rng, n, L)
    shape = '%s x %s labels' % (f'{n:,}', f'{L:,}')
    rows = []
    top = rng.integers(0, L, size=(n, 5))
    top.sort(axis=1)
    top[:, 1:][top[:, 1:] == top[:, :-1]] = -1  # no repeated ids
    seconds, result = best_time(lambda: xc_metrics(test, top, propensity=train), args.repeat)
    rows.append(('xc_metrics, top-5 ids + propensities', shape, seconds,
                 'P@1 %.4f, PSP@5 %.4f' % (result.precision[1], result.psp[5])))
    per_row = min(100, L)
    scores = sp.csr_matrix((rng.random(n * per_row, dtype=np.float32),
                            rng.integers(0, L, n * per_row), np.arange(0, n * per_row + 1, per_row)),
                           shape=(n, L))
    seconds, result = best_time(lambda: xc_metrics(test, scores, propensity=train), args.repeat)
    rows.append(('xc_metrics, sparse scores (%d/row)' % per_row, shape, seconds,
                 'P@1 %.4f, nDCG@5 %.4f' % (result.precision[1], result.ndcg[5])))
    m = min(n, args.xc_dense_rows)
    dense = rng.random((m, L), dtype=np.float32)
    seconds, result = best_time(lambda: xc_metrics(test[:m], dense, propensity=train), args.repeat)
    rows.append(('xc_metrics, dense float32 scores', '%s x %s labels' % (f'{m:,}', f'{L:,}'), seconds,
                 'P@1 %.4f, PSnDCG@5 %.4f' % (result.precision[1], result.psndcg[5])))
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--targets', type=int, default=20000, help='context and target rows')
    parser.add_argument('--pairs', type=int, default=100000)
    parser.add_argument('--dim', type=int, default=100)
    parser.add_argument('--workers', type=int, default=None, help='threads of evaluate_ranking')
    parser.add_argument('--xc-rows', type=int, default=100000)
    parser.add_argument('--xc-labels', type=int, default=10000)
    parser.add_argument('--xc-dense-rows', type=int, default=10000)
    parser.add_argument('--repeat', type=int, default=1, help='runs per measurement (best time is reported)')
    parser.add_argument('--seed', type=int, default=0)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)

    rows = bench_ranking(args, rng) + bench_xc(args, rng)
    command = 'python -m ' + ' '.join(['eval.bench.ranking'] + (argv if argv is not None else sys.argv[1:]))
    print('`%s` (%s, %d CPUs, numpy %s, best of %d)' % (command.strip(), platform.machine(), os.cpu_count() or 1,
                                                       np.__version__, max(1, args.repeat)))
    print()
    print('| task | size | wall s | CPU s | check |')
    print('|---|---|---:|---:|---|')
    for task, size, (wall, cpu), check in rows:
        print('| %s | %s | %.2f | %.2f | %s |' % (task, size, wall, cpu, check))
    return 0


if __name__ == "__main__":
    sys.exit(main())
