"""Benchmark: exact vs Metropolis-Hastings Boltzmann sampling (``embkit._kernels.boltzmann``).

For ``n`` classes of random unit vectors in ``--dim`` dimensions, with random unit queries:

* **speed**: time per draw of ``ExactBoltzmann`` (scores all ``n`` classes per call) and ``MHBoltzmann``
  (``1 + burn_in + k * mh_steps`` scores per call) drawing ``--k`` ids per call, single thread, through
  ``draw_many`` (one scratch buffer, no Python per call); the alias table of ``D`` (``T = inf``) as the floor;
* **distance** of the MH draws to the exact Boltzmann distribution ``Q`` for one query, at query norms
  ``--scales`` (the norm multiplies the scores, i.e. acts as ``1 / T``; Rawat et al. scale normalised logits by
  5 to 30).  ``law`` is the exact distribution of an MH draw (``MHBoltzmann.draw_law``, no sampling noise);
  ``emp`` are the empirical distributions of ``--draws`` MH draws and of as many exact draws (the latter is the
  noise floor of an empirical distance at that sample size).  ``w`` = max_j Q(j)/D(j) and
  ``bound`` = (1 - 1/w)^(burn_in + mh_steps), the independence sampler's TV bound.

Timings depend on the machine and its load: they are printed, never checked.

Usage::

    nice -n 19 python -m eval.bench.boltzmann
    nice -n 19 python -m eval.bench.boltzmann --sizes 1000,10000 --scales 1,10,30 --draws 200000
"""
import argparse
import os
import sys
import time

import numpy as np

from embkit._kernels.boltzmann import ExactBoltzmann, MHBoltzmann


def unit_rows(rng, n, dim):
    x = rng.standard_normal((n, dim), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def per_draw_us(sampler, queries, k, seconds):
    """Microseconds per draw: ``draw_many`` over the queries, repeated for at least ``seconds``."""
    sampler.draw_many(k, queries[:1])                   # warm up (page in the table)
    calls, start, seed = 0, time.perf_counter(), 1
    while True:
        sampler.draw_many(k, queries, seed=seed)
        calls += len(queries)
        seed += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return 1e6 * elapsed / (calls * k)


def distances(p_hat, log_q):
    """TV and KL(p_hat || Q) of a distribution (or frequencies) to ``Q = exp(log_q)``."""
    q = np.exp(log_q)
    tv = 0.5 * np.abs(p_hat - q).sum()
    nz = p_hat > 0
    kl = max(0.0, float(np.sum(p_hat[nz] * (np.log(p_hat[nz]) - log_q[nz]))))  # >= 0 up to rounding
    return tv, kl


def frequencies(ids, n):
    return np.bincount(ids.ravel(), minlength=n) / ids.size


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000,10000,100000,1000000", help="numbers of classes")
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--k", type=int, default=20, help="draws per call")
    ap.add_argument("--T", type=float, default=1.0, help="temperature")
    ap.add_argument("--burn-in", type=int, default=50)
    ap.add_argument("--mh-steps", type=int, default=3)
    ap.add_argument("--scales", default="1,10,30", help="query norms for the distance table")
    ap.add_argument("--max-distance-n", type=int, default=100000, help="largest n of the distance table")
    ap.add_argument("--draws", type=int, default=1000000, help="draws for the empirical distances")
    ap.add_argument("--seconds", type=float, default=1.0, help="minimum timing per sampler and size")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    scales = [float(s) for s in args.scales.split(",")]
    rng = np.random.default_rng(args.seed)
    k = args.k

    speed, dist = [], []
    for n in sizes:
        W = unit_rows(rng, n, args.dim)
        queries = unit_rows(rng, 64, args.dim)
        exact = ExactBoltzmann(n, args.T)
        mh = MHBoltzmann(n, args.T, mh_steps=args.mh_steps, burn_in=args.burn_in)
        prior = ExactBoltzmann(n, float("inf"))
        exact.bind(W)
        mh.bind(W)
        t_exact = per_draw_us(exact, queries[:8], k, args.seconds)
        t_mh = per_draw_us(mh, queries, k, args.seconds)
        t_prior = per_draw_us(prior, queries, k, args.seconds)
        speed.append((n, t_exact * k, t_exact, t_mh, t_prior))
        print("n=%d timed" % n, file=sys.stderr)
        if n > args.max_distance_n:
            continue
        calls = max(1, args.draws // k)
        for scale in scales:
            q = queries[0] * np.float32(scale)
            log_q = exact.log_probs(q)
            d = mh.degeneracy
            w = float(np.max(np.exp(log_q) / d))
            bound = (1.0 - 1.0 / w) ** (args.burn_in + args.mh_steps)
            law = distances(mh.draw_law(q, k), log_q)
            ids_mh = mh.draw_many(k, np.tile(q, (calls, 1)), seed=11).ids
            ids_ex = exact.draw_many(calls * k, q[None, :], seed=12).ids
            emp_mh = distances(frequencies(ids_mh, n), log_q)
            emp_ex = distances(frequencies(ids_ex, n), log_q)
            dist.append((n, scale, w, bound) + law + (emp_mh[0], emp_ex[0], emp_mh[1], emp_ex[1]))
        del W

    print("command: %s" % " ".join(["nice -n 19 python -m eval.bench.boltzmann"]
                                      + (sys.argv[1:] if argv is None else list(argv))))
    print("dim=%d, k=%d draws per call, T=%g, MH burn_in=%d mh_steps=%d (%d scores per call), 1 thread, "
          "load average %.2f on %d cores"
          % (args.dim, k, args.T, args.burn_in, args.mh_steps, 1 + args.burn_in + k * args.mh_steps,
             os.getloadavg()[0], os.cpu_count()))
    print()
    print("| n classes | exact µs/call | exact µs/draw | MH µs/draw | alias D µs/draw | exact / MH |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n, call, t_exact, t_mh, t_prior in speed:
        print("| %s | %.1f | %.2f | %.3f | %.3f | %.0fx |" % (f"{n:,}", call, t_exact, t_mh, t_prior,
                                                                t_exact / t_mh))
    if dist:
        print()
        print("Distance of MH to the exact Boltzmann distribution (%s draws for the empirical columns)"
              % f"{calls * k:,}")
        print()
        print("| n classes | query norm | w | TV bound | TV law | KL law | TV emp MH | TV emp exact "
              "| KL emp MH | KL emp exact |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for row in dist:
            print("| %s | %g | %.1f | %.2g | %.2g | %.2g | %.4f | %.4f | %.4f | %.4f |"
                  % ((f"{row[0]:,}",) + row[1:]))


if __name__ == "__main__":
    main()
