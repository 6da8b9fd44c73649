"""Benchmark: the LSH negative sampler's per-draw cost against the number of classes, its table build
time, and how close its draws come to the softmax distribution it stands in for.

1. Per-draw time for n = 1e3 ... 1e6 classes (random unit vectors, d = 128, k = 20 draws per ``draw`` call,
   one call per random query/target), for SimHash and DWTA, LSH Label and LSH Embedding, with and
   without log-probabilities.  The draws run in a compiled loop (``draw_many``); the best of
   ``--repeat`` runs is reported.  The last column is the ratio of the 1e6 and 1e4 times.  The uniform
   alias-table sampler's per-draw time is given for reference: an O(1) sampler whose tables also leave
   the caches as n grows.
2. Table build time (hashing all rows + counting sort into the CSR tables) for each n.
3. Total variation distance at n = 1e4 between the exact softmax ``p_j ~ exp(<q, w_j> / T)`` and
   (a) LSH Embedding's empirical draw distribution, (b) uniform draws at the same budget, and the
   exact distributions (LSH's from ``LSHSampler.probabilities``), for a few queries on two class sets:
   random unit vectors with queries near one class, and 100 clusters with queries near a cluster.

Nothing is asserted; the script prints markdown tables (stdout) and the command that produced them.

Usage::

    nice -n 19 python -m eval.bench.lsh
    nice -n 19 python -m eval.bench.lsh --sizes 1000,10000 --calls 5000 --repeat 1     # quick
"""
import argparse
import sys
import time

import numpy as np

from embkit._kernels import samplers
from embkit._kernels.lsh import LSHSampler


def unit_rows(rng, n, d, block=1 << 16):
    """``n`` random unit vectors of dimension ``d`` (float32), generated in blocks to bound memory."""
    W = np.empty((n, d), dtype=np.float32)
    for s in range(0, n, block):
        X = rng.standard_normal((min(block, n - s), d), dtype=np.float32)
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        W[s:s + len(X)] = X
    return W


def time_draws(sampler, queries, targets, k, with_logq, repeat):
    """Best seconds per draw over ``repeat`` runs of one ``draw`` call per (query, target)."""
    best = np.inf
    for r in range(repeat):
        t0 = time.perf_counter()
        sampler.draw_many(k, queries, targets, seed=r + 1, with_logq=with_logq)
        best = min(best, time.perf_counter() - t0)
    return best / (len(targets) * k)


def bench_scaling(args, rng):
    cases = [(fam, q, lq) for fam in args.families for q in ("label", "embedding") for lq in (False, True)]
    per_draw = {c: {} for c in cases}
    reference = ("uniform (alias table), for reference", "-", True)
    per_draw[reference] = {}
    build = {fam: {} for fam in args.families}
    for n in args.sizes:
        alias = samplers.uniform(n)
        best = np.inf
        for r in range(args.repeat):
            t0 = time.perf_counter()
            alias.py_draw(args.calls * args.k, r + 1)
            best = min(best, time.perf_counter() - t0)
        per_draw[reference][n] = best / (args.calls * args.k)
        W = unit_rows(rng, n, args.dim)
        queries = unit_rows(rng, args.calls, args.dim)
        targets = rng.integers(0, n, args.calls).astype(np.intc)
        for fam in args.families:
            by_query = {}
            for query in ("label", "embedding"):
                s = LSHSampler(n, family=fam, query=query, K=args.K.get(fam), L=args.L, seed=1)
                s.bind(W)
                by_query[query] = s
            s = by_query["label"]
            times = []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                s.rebuild()
                times.append(time.perf_counter() - t0)
            build[fam][n] = min(times)
            for (f, query, lq) in cases:
                if f == fam:
                    per_draw[(f, query, lq)][n] = time_draws(by_query[query], queries, targets, args.k, lq,
                                                             args.repeat)
            print("n=%d %s done" % (n, fam), file=sys.stderr, flush=True)
            del by_query, s
        del W
    return cases + [reference], per_draw, build


def softmax(z):
    z = z - z.max()
    e = np.exp(z)
    return e / e.sum()


def tv(p, q):
    return 0.5 * np.abs(p - q).sum()


def bench_tv(args, rng):
    n, d = args.tv_classes, args.dim
    rows = []
    # two class sets: independent random directions, and 100 clusters of near directions
    random_W = unit_rows(rng, n, d)
    centres = unit_rows(rng, 100, d)
    member = rng.integers(0, 100, n)
    clustered = centres[member] + 0.6 / np.sqrt(d) * rng.standard_normal((n, d))
    clustered = (clustered / np.linalg.norm(clustered, axis=1, keepdims=True)).astype(np.float32)
    sets = {"random": random_W, "clustered": clustered}
    for set_name, W in sets.items():
        qs = []
        for i in range(args.tv_queries):
            anchor = W[rng.integers(n)] if set_name == "random" else centres[rng.integers(100)]
            q = anchor + 0.6 / np.sqrt(d) * rng.standard_normal(d)
            qs.append((q / np.linalg.norm(q)).astype(np.float32))
        for fam in args.families:
            K = args.K[fam] or LSHSampler(2, family=fam).K
            for K, L in [(K, args.L), (K, 4 * args.L), (K + 4, 4 * args.L)]:
                s = LSHSampler(n, family=fam, query="embedding", K=K, L=L, seed=1)
                s.bind(W)
                acc = np.zeros(4)
                for i, q in enumerate(qs):
                    p = softmax((W.astype(np.float64) @ q) / args.temperature)
                    ids, _, _ = s.py_draw(args.tv_draws, 100 + i, query=q)
                    emp = np.bincount(ids, minlength=n) / ids.size
                    uni = np.bincount(rng.integers(0, n, args.tv_draws), minlength=n) / args.tv_draws
                    acc += [tv(emp, p), tv(uni, p), tv(s.probabilities(q), p), tv(np.full(n, 1.0 / n), p)]
                acc /= len(qs)
                rows.append((set_name, fam, s.K, L, *acc))
    return rows


def fmt_time(sec):
    return "%.0f ns" % (sec * 1e9)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--sizes", default="1000,10000,100000,1000000", help="numbers of classes")
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--k", type=int, default=20, help="draws per draw() call")
    p.add_argument("--calls", type=int, default=20000, help="draw() calls per timing")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--families", default="simhash,dwta")
    p.add_argument("--K-simhash", type=int, default=None, help="default: the sampler's (8)")
    p.add_argument("--K-dwta", type=int, default=None, help="default: the sampler's (5)")
    p.add_argument("--L", type=int, default=16)
    p.add_argument("--tv-classes", type=int, default=10000)
    p.add_argument("--tv-queries", type=int, default=5)
    p.add_argument("--tv-draws", type=int, default=100000, help="draw budget per query, LSH and uniform")
    p.add_argument("--temperature", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--skip-tv", action="store_true")
    args = p.parse_args(argv)
    args.sizes = [int(float(s)) for s in args.sizes.split(",")]
    args.families = args.families.split(",")
    args.K = {"simhash": args.K_simhash, "dwta": args.K_dwta}
    rng = np.random.default_rng(args.seed)

    command = "nice -n 19 python -m eval.bench.lsh " + " ".join(sys.argv[1:] if argv is None else argv)
    print("command: `%s`" % command.strip())
    print("settings: d=%d, k=%d draws per call, %d calls per timing, best of %d, L=%d, K: %s"
          % (args.dim, args.k, args.calls, args.repeat, args.L,
             ", ".join("%s %s" % (f, args.K[f] or LSHSampler(2, family=f).K) for f in args.families)))
    print()
    cases, per_draw, build = bench_scaling(args, rng)
    head = ["family", "query", "logq"] + ["n=%s" % format(n, ",") for n in args.sizes]
    ratio = 10000 in args.sizes and 1000000 in args.sizes
    if ratio:
        head.append("1e6 / 1e4")
    print("Per-draw time")
    print()
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for c in cases:
        cells = [c[0], c[1], "yes" if c[2] else "no"] + [fmt_time(per_draw[c][n]) for n in args.sizes]
        if ratio:
            cells.append("%.2fx" % (per_draw[c][1000000] / per_draw[c][10000]))
        print("| " + " | ".join(cells) + " |")
    print()
    print("Table build time (hash every class vector, counting sort into L CSR tables)")
    print()
    print("| family | " + " | ".join("n=%s" % format(n, ",") for n in args.sizes) + " |")
    print("|---|" + "---|" * len(args.sizes))
    for fam in args.families:
        print("| %s | " % fam + " | ".join("%.3f s" % build[fam][n] for n in args.sizes) + " |")
    print()
    if args.skip_tv:
        return
    rows = bench_tv(args, rng)
    print("TV distance to softmax(<q, w>/T), T=%g, n=%d, LSH Embedding, mean over %d queries, %d draws each"
          % (args.temperature, args.tv_classes, args.tv_queries, args.tv_draws))
    print()
    print("| classes | family | K | L | LSH draws | uniform draws | LSH exact | uniform exact |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %s | %d | %d | %.3f | %.3f | %.3f | %.3f |" % r)


if __name__ == "__main__":
    main()
