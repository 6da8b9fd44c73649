"""Benchmark: reading an extreme-classification file with ``read_xc`` on 1, 2, ... threads.

Writes (unless ``--path`` names an existing file) a synthetic XC file of ``--points`` rows, each with
``--features-per-point`` features of ``--features`` and 3 labels of ``--labels``, then reads it with every
``--workers`` count in turn, then with napkinXC's reader (the ``[bench]`` extra; ``--no-peers``: without),
``--repeats`` times interleaved, and prints each read's seconds, the medians and the speedups against the
first; every read is checked to give the same matrices.  ``--variant NAME:@module.NAME=value``
(``eval.bench.scaling``'s syntax, only ``@`` keys) adds reads with a module constant changed, interleaved with
the others.  Nothing is asserted about time: it depends on the machine.

Usage::

    python -m eval.bench.xc_read --points 200000 --workers 1 2 --repeats 3 \
        --variant caller_waits:@embkit.core.threads.CALLER_WORKS=False
"""
import argparse
import os
import sys
import tempfile

import numpy as np
import scipy.sparse as sp

from embkit.xc.data import XCData, read_xc, write_xc
from eval.bench.interleaved import interleaved_runs, speedup_table, thread_label
from eval.bench.scaling import module_constants, parse_variant


def synthetic_file(path, points, features, labels, per_point, seed=0):
    """Write an XC file of ``points`` rows with ``per_point`` features (sorted, distinct) and 3 labels each."""
    rng = np.random.default_rng(seed)
    cols = np.sort(rng.choice(features, size=(points, per_point), replace=True), axis=1)
    X = sp.csr_matrix((rng.random(points * per_point, dtype=np.float32), cols.ravel(),
                       np.arange(0, (points + 1) * per_point, per_point)), shape=(points, features))
    X.sum_duplicates()
    Y = sp.csr_matrix((np.ones(points * 3, np.float32), rng.integers(0, labels, points * 3),
                       np.arange(0, (points + 1) * 3, 3)), shape=(points, labels))
    Y.sum_duplicates()
    Y.data[:] = 1
    write_xc(path, XCData(X, Y))


def napkinxc_read(path):
    """napkinXC's reader of the same file (its features and labels as CSR matrices), as an XCData."""
    from napkinxc.datasets import load_libsvm_file
    X, Y = load_libsvm_file(path, labels_format="csr_matrix")
    return XCData(X.astype(np.float32), Y.astype(np.float32))


def _read_with(constants, path, workers):
    with module_constants(constants):
        return read_xc(path, workers=workers)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--path", default=None, help="an XC file to read (default: a synthetic one, written first)")
    p.add_argument("--points", type=int, default=200_000)
    p.add_argument("--features", type=int, default=50_000)
    p.add_argument("--labels", type=int, default=2_000)
    p.add_argument("--features-per-point", type=int, default=60)
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--no-peers", action="store_true", help="embkit alone (without napkinXC's reader)")
    p.add_argument("--variant", type=parse_variant, action="append", default=[], metavar="NAME:@module.NAME=value")
    args = p.parse_args(argv)
    for name, kwargs, variant_path, _, _ in args.variant:
        if kwargs or variant_path:
            p.error("--variant %s: only module constants (@package.module.NAME=value) are varied here" % name)
    with tempfile.TemporaryDirectory(prefix="xc-read-") as tmp:
        path = args.path
        if path is None:
            path = os.path.join(tmp, "synthetic.xc.txt")
            synthetic_file(path, args.points, args.features, args.labels, args.features_per_point)
        print("%s: %.1f MB" % (path if args.path else "synthetic file", os.path.getsize(path) / 1e6))
        calls = {thread_label("embkit read_xc", w): (lambda w=w: read_xc(path, workers=w)) for w in args.workers}
        for name, _, _, constants, _ in args.variant:
            for w in args.workers:
                calls[thread_label("embkit read_xc, %s" % name, w)] = (
                    lambda w=w, constants=constants: _read_with(constants, path, w))
        if not args.no_peers:
            calls["napkinXC load_libsvm_file"] = lambda: napkinxc_read(path)
        times = interleaved_runs(calls, args.repeats, lambda data, first: (
            (data.X.shape != first.X.shape or data.Y.shape != first.Y.shape or (data.X != first.X).nnz
             or (data.Y != first.Y).nnz) and "other matrices"))
    print("\n" + "\n".join(speedup_table(times)))
    print("\n`python -m eval.bench.xc_read %s`" % " ".join(argv if argv is not None else sys.argv[1:]))


if __name__ == "__main__":
    main()
