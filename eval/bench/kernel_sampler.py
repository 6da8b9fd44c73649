"""Benchmark of the kernel sampler (RF-softmax and Quadratic-softmax through a sum tree).

Part 1, scaling: time of one ``draw`` call of ``k`` samples (with the target's log-probability, as sampled
softmax asks) for ``n`` classes of random unit vectors, and the time to build the tree; a draw is
``O(D log n)``, so from 1e4 to 1e6 classes its time should grow by about 16/9 (the tree depth), plus cache
misses once the tree no longer fits in cache.  Timings are reported, never checked.

Part 2, the paper's Table 1 setup (Rawat et al. 2019): how well ``D`` random Fourier projections approximate
the exponential kernel for normalised embeddings (d = 256 as the paper's USPS data; here random unit
vectors, isotropic and clustered), against the quadratic kernel with its best ``alpha (h.c)^2 + beta``:
mean squared error of the kernel ``exp(-nu ||h - c||^2 / 2) = exp(nu (h.c - 1))``, and how far the
normalised sampling distribution is from the exact softmax ``exp(nu h.c) / Z``: total variation and
KL(softmax || q), for the plain normalised RFF estimates (``flat``) and for the tree sampler's exact
distribution (``tree``: node masses clamped, exact kernel inside a bucket).  ``nu = 4`` is the paper's best
``T = 1/sqrt(nu) = 0.5`` on PennTreeBank; ``nu = 11.1`` is its softmax temperature ``tau`` (``1/sqrt(tau) =
0.3``); ``nu = 1`` shows the low-temperature end of the paper's bias/variance trade-off.

Results go to stdout as markdown tables, preceded by the command that produced them.

Usage::

    nice -n 19 python -m eval.bench.kernel_sampler
    python -m eval.bench.kernel_sampler --sizes 1000 10000 --queries 500 --table-classes 2000
"""
import argparse
import sys
import time

import numpy as np

from embkit._kernels.kernel_sampler import KernelSampler


def unit_rows(X):
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def random_unit(rng, n, d, dtype=np.float32, block=1 << 16):
    """``n`` random unit vectors, generated in blocks to bound the memory."""
    out = np.empty((n, d), dtype=dtype)
    for start in range(0, n, block):
        rows = rng.standard_normal((min(block, n - start), d), dtype=np.float32)
        out[start:start + rows.shape[0]] = unit_rows(rows)
    return out


def best_time(fn, repeat):
    """Least CPU time of this thread and wall time over ``repeat`` calls (the draw loop runs on the calling
    thread; the CPU time leaves out other processes on a busy machine and idle BLAS threads)."""
    cpu, wall = np.inf, np.inf
    for _ in range(repeat):
        c0, w0 = time.thread_time(), time.perf_counter()
        fn()
        cpu = min(cpu, time.thread_time() - c0)
        wall = min(wall, time.perf_counter() - w0)
    return cpu, wall


def markdown(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- part 1: scaling

def scaling(args):
    header, rows, notes = scaling_rows(args)
    return markdown(header, rows), notes


def scaling_rows(args):
    """``(header, rows, notes)`` of the scaling table (cells formatted as strings)."""
    rng = np.random.default_rng(args.seed)
    rows, per_call = [], {}
    for n in args.sizes:
        W = random_unit(rng, n, args.dim)
        sampler = KernelSampler(n, kernel="rff", D=args.D, nu=args.nu, bucket=args.bucket, seed=args.seed)
        t0 = time.perf_counter()
        sampler.bind(W)                         # full build
        build = time.perf_counter() - t0
        t0 = time.perf_counter()
        sampler.refresh(0.0)                    # nothing changed: hashing only
        check = time.perf_counter() - t0
        Q = random_unit(rng, args.queries, args.dim)
        targets = rng.integers(0, n, args.queries)
        sampler.draw_many(args.k, Q[:100], targets[:100])        # warm up
        cpu, wall = best_time(lambda: sampler.draw_many(args.k, Q, targets, seed=3), args.repeat)
        phi_cpu, _ = best_time(lambda: sampler.draw_many(0, Q), args.repeat)
        call = 1e6 * cpu / args.queries
        per_call[n] = call
        rows.append([format(n, ","), sampler.n_leaves, "%.0f" % (sampler.node_sums.nbytes / 1e6),
                     "%.2f" % build, "%.3f" % check, "%.1f" % (1e6 * phi_cpu / args.queries), "%.1f" % call,
                     "%.1f" % (1e6 * wall / args.queries),
                     "%.2f" % ((call - 1e6 * phi_cpu / args.queries) / max(args.k, 1))])
        del sampler, W
    header = ["n", "leaves", "tree MB", "build s", "refresh (no change) s", "phi(q) us", "draw call us (CPU)",
              "draw call us (wall)", "us per sample"]
    notes = []
    if 10_000 in per_call and 1_000_000 in per_call:
        notes.append("draw call time 1e6 / 1e4 classes: %.2fx" % (per_call[1_000_000] / per_call[10_000]))
    if args.rebuild_D:
        n = max(args.sizes)
        W = random_unit(rng, n, args.dim)
        sampler = KernelSampler(n, kernel="rff", D=args.rebuild_D, nu=args.nu, bucket=args.bucket,
                                seed=args.seed)
        sampler.bind(W)
        c0, t0 = time.process_time(), time.perf_counter()
        sampler.rebuild()
        notes.append("full rebuild, n=%s, d=%d, D=%d (%d floats per node, tree %.0f MB): %.2f s wall, "
                     "%.2f s CPU (all threads)"
                     % (format(n, ","), args.dim, args.rebuild_D, 2 * args.rebuild_D,
                        sampler.node_sums.nbytes / 1e6, time.perf_counter() - t0, time.process_time() - c0))
    return header, rows, notes


def memory_table():
    rows = []
    for D in (128, 256):
        for bucket in (1, 16, 32, 64):
            rows.append([format(10 ** 6, ","), D, 2 * D, bucket,
                         "%.0f" % (KernelSampler.tree_bytes(10 ** 6, 2 * D, bucket) / 1e6)])
    return markdown(["n", "D", "floats per node", "bucket", "tree MB"], rows)


# ----------------------------------------------------------------------------- part 2: Table 1

def table_data(rng, kind, n, m, d):
    """Class and query unit vectors: isotropic, or clustered (queries near classes, as trained ones)."""
    if kind == "isotropic":
        return unit_rows(rng.standard_normal((n, d))), unit_rows(rng.standard_normal((m, d)))
    centres = unit_rows(rng.standard_normal((max(1, n // 100), d)))
    spread = 0.75 / np.sqrt(d)               # cos(class, centre) ~ 0.8
    C = unit_rows(centres[rng.integers(0, centres.shape[0], n)] + spread * rng.standard_normal((n, d)))
    Q = unit_rows(C[rng.integers(0, n, m)] + spread * rng.standard_normal((m, d)))
    return C, Q


def softmax_rows(Z):
    P = np.exp(Z - Z.max(axis=1, keepdims=True))
    return P / P.sum(axis=1, keepdims=True)


def tv_kl(P, Qd):
    """Mean total variation and KL(P || Qd) over rows."""
    tv = 0.5 * np.abs(P - Qd).sum(axis=1)
    kl = (P * (np.log(P) - np.log(Qd))).sum(axis=1)
    return tv.mean(), kl.mean()


def table1(args, nu, kind):
    return markdown(*table1_rows(args, nu, kind))


def table1_rows(args, nu, kind):
    """``(header, rows)`` of the Table 1 comparison (cells formatted as strings)."""
    rng = np.random.default_rng(args.seed + 1)
    n, m, d = args.table_classes, args.table_queries, args.table_dim
    C, Q = table_data(rng, kind, n, m, d)
    cos = Q @ C.T
    K = np.exp(nu * (cos - 1.0))              # the kernel RFF estimates, in (0, 1]
    P = softmax_rows(nu * cos)                # the target distribution
    rows = []
    # references: the uniform proposal and the quadratic kernel
    tv, kl = tv_kl(P, np.full_like(P, 1.0 / n))
    rows.append(["uniform", "-", "-", "-", "%.3f" % tv, "%.3f" % kl, "-", "-"])
    A = np.c_[cos.ravel() ** 2, np.ones(cos.size)]
    (alpha, beta), *_ = np.linalg.lstsq(A, K.ravel(), rcond=None)
    mse = np.mean((A @ [alpha, beta] - K.ravel()) ** 2)
    floor = np.exp(-2.0 * nu)                 # the least the kernel takes; clamps the fitted and RFF values
    quad = np.maximum(alpha * cos ** 2 + beta, floor)
    tv, kl = tv_kl(P, quad / quad.sum(axis=1, keepdims=True))
    rows.append(["quadratic, best alpha=%.3g beta=%.3g" % (alpha, beta), "-", 1 + d * (d + 1) // 2, "%.2e" % mse,
                 "%.3f" % tv, "%.3f" % kl, "-", "-"])
    quad = 100.0 * cos ** 2 + 1.0              # Blanc & Rendle's alpha = 100, exact in the tree
    tv, kl = tv_kl(P, quad / quad.sum(axis=1, keepdims=True))
    rows.append(["quadratic, alpha=100", "-", 1 + d * (d + 1) // 2, "-", "%.3f" % tv, "%.3f" % kl, "-", "-"])
    for D in args.table_D:
        sampler = KernelSampler(n, kernel="rff", D=D, nu=nu, bucket=args.bucket, seed=args.seed)
        sampler.bind(C.astype(np.float32))
        estimate = sampler.features(Q) @ sampler.features(C).T
        mse = np.mean((estimate - K) ** 2)
        flat = np.clip(estimate, floor, 1.0)
        tv_flat, kl_flat = tv_kl(P, flat / flat.sum(axis=1, keepdims=True))
        tree = np.array([sampler.probabilities(q) for q in Q])
        tv_tree, kl_tree = tv_kl(P, tree)
        rows.append(["rff", D, 2 * D, "%.2e" % mse, "%.3f" % tv_flat, "%.3f" % kl_flat, "%.3f" % tv_tree,
                     "%.3f" % kl_tree])
    return ["kernel", "D", "features", "kernel MSE", "TV flat", "KL flat", "TV tree", "KL tree"], rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000, 1_000_000],
                   help="numbers of classes for the scaling part")
    p.add_argument("--dim", type=int, default=128, help="embedding dimension (scaling)")
    p.add_argument("--D", type=int, default=128, help="random projections (scaling)")
    p.add_argument("--nu", type=float, default=4.0, help="RFF temperature (scaling)")
    p.add_argument("--bucket", type=int, default=16, help="classes per leaf")
    p.add_argument("--rebuild-D", type=int, default=256,
                   help="also time a full rebuild at the largest size with this D (0: skip)")
    p.add_argument("--k", type=int, default=20, help="samples per draw call")
    p.add_argument("--queries", type=int, default=2000, help="draw calls timed per size")
    p.add_argument("--repeat", type=int, default=5, help="timing repeats (the least is kept)")
    p.add_argument("--table-classes", type=int, default=10_000)
    p.add_argument("--table-queries", type=int, default=100)
    p.add_argument("--table-dim", type=int, default=256)
    p.add_argument("--table-D", type=int, nargs="+", default=[64, 128, 256, 512, 1024, 2048])
    p.add_argument("--table-nu", type=float, nargs="+", default=[1.0, 4.0, 11.1])
    p.add_argument("--skip-scaling", action="store_true")
    p.add_argument("--skip-table", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    print("command: python -m eval.bench.kernel_sampler %s" % " ".join(sys.argv[1:] if argv is None else argv))
    print()
    if not args.skip_scaling:
        table, notes = scaling(args)
        print("## Draw time against the number of classes")
        print()
        print("d=%d, D=%d projections (%d floats per node), nu=%g, bucket=%d, k=%d samples per call with the "
              "target's log-probability, %d random unit queries; CPU time, best of %d"
              % (args.dim, args.D, 2 * args.D, args.nu, args.bucket, args.k, args.queries, args.repeat))
        print()
        print(table)
        print()
        for note in notes:
            print(note)
            print()
        print("Tree memory, 2 ceil(n / bucket) nodes of 2 D float32 (analytic):")
        print()
        print(memory_table())
        print()
    if not args.skip_table:
        for nu in args.table_nu:
            for kind in ("isotropic", "clustered"):
                print("## Kernel approximation, nu=%g, %s unit vectors" % (nu, kind))
                print()
                print("n=%d classes, %d queries, d=%d, bucket=%d for the tree"
                      % (args.table_classes, args.table_queries, args.table_dim, args.bucket))
                print()
                print(table1(args, nu, kind), flush=True)
                print()


if __name__ == "__main__":
    main()
