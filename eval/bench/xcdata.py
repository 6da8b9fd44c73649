"""Benchmark: reading XC files (embkit.xc.data.read_xc) and generating synthetic XC data (embkit.xc.synthetic).

1. Parse speed of ``read_xc`` in MB/s of decompressed text: the real Bibtex and Delicious train
   files (gzip, and decompressed to a temporary plain file), and a synthetic file of about
   ``--synthetic-mb`` MB written by ``write_xc`` (``make_xc`` with tf-idf values, so the values
   are decimals of varying length like the repository's tf-idf sets; and the same points with
   binary values).  Best of ``--repeat`` runs, wall clock and CPU seconds; the peak of memory
   allocated during one more read (tracemalloc, which sees numpy's buffers) next to the size of
   the result's arrays shows that only the result and a few blocks are held.
2. ``make_xc`` time and peak memory for ``--labels`` (e.g. 1e5 and 1e6 labels), ``--train``
   training and ``--train / 5`` test points, power-law and uniform labels.

Nothing is asserted; prints markdown tables and the command.  Temporary files are removed.

Usage::

    nice -n 19 python -m eval.bench.xcdata
    nice -n 19 python -m eval.bench.xcdata --synthetic-mb 20 --labels 1e5 --train 100000   # quick
"""
import argparse
import gzip
import os
import platform
import shutil
import sys
import tempfile
import time
import tracemalloc

from embkit.xc.data import read_xc, write_xc
from embkit.xc.synthetic import make_xc
from eval.paths import shared_data


def timed(func, repeat):
    """(best wall seconds, CPU seconds of that run, result) over `repeat` runs."""
    best = None
    for _ in range(max(1, repeat)):
        t0, c0 = time.perf_counter(), time.process_time()
        result = func()
        run = (time.perf_counter() - t0, time.process_time() - c0)
        best = run if best is None or run[0] < best[0] else best
    return best[0], best[1], result


def peak_traced(func):
    """Peak bytes allocated (tracemalloc) while `func` runs."""
    tracemalloc.start()
    try:
        func()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def text_bytes(path):
    """Size of the decompressed text of `path`."""
    if not path.endswith(".gz"):
        return os.path.getsize(path)
    total = 0
    with gzip.open(path, "rb") as fh:
        while True:
            chunk = fh.read(1 << 22)
            if not chunk:
                return total
            total += len(chunk)


def result_bytes(data):
    return sum(a.nbytes for m in (data.X, data.Y) for a in (m.data, m.indices, m.indptr))


def bench_read(files, repeat):
    rows = []
    for label, path in files:
        size = text_bytes(path)
        wall, cpu, data = timed(lambda: read_xc(path), repeat)
        peak = peak_traced(lambda: read_xc(path))
        rows.append("| %s | %.1f | %d x %d, %d labels, %s nnz | %.2f (%.2f) | %.0f | %.0f | %.0f / %.0f |" % (
            label, size / 1e6, data.n_points, data.n_features, data.n_labels, f"{data.X.nnz:,}", wall, cpu,
            size / 1e6 / wall, size / 1e6 / cpu, peak / 1e6, result_bytes(data) / 1e6))
    print("| file | MB (text) | content | read s (CPU s) | MB/s | MB/s per CPU s | peak / result MB |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))


def synthetic_file(folder, megabytes, values):
    """Write synthetic points with `values` until the file has about `megabytes` MB."""
    probe, _ = make_xc(n_labels=100000, n_features=1000000, n_train=2000, n_test=0, values=values, seed=1)
    path = os.path.join(folder, "probe.txt")
    write_xc(path, probe)
    per_point = os.path.getsize(path) / probe.n_points
    n = int(megabytes * 1e6 / per_point)
    data, _ = make_xc(n_labels=100000, n_features=1000000, n_train=n, n_test=0, values=values, seed=1)
    path = os.path.join(folder, "synthetic-%s.txt" % values)
    t0 = time.perf_counter()
    write_xc(path, data)
    return path, time.perf_counter() - t0


def bench_generate(label_counts, n_train, repeat):
    print("| labels | features | train / test points | law | seconds (CPU) | peak MB | result MB | "
          "labels/point | features/point | labels seen in train |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n_labels in label_counts:
        for law in ("zipf", "uniform"):
            kwargs = dict(n_labels=n_labels, n_features=max(100000, n_labels), n_train=n_train,
                          n_test=n_train // 5, label_law=law, seed=0)
            wall, cpu, (train, test) = timed(lambda: make_xc(**kwargs), repeat)
            peak = peak_traced(lambda: make_xc(**kwargs))
            stats = train.stats()
            print("| %s | %s | %s / %s | %s | %.1f (%.1f) | %.0f | %.0f | %.2f | %.1f | %s |" % (
                f"{n_labels:,}", f"{kwargs['n_features']:,}", f"{n_train:,}", f"{n_train // 5:,}", law, wall, cpu,
                peak / 1e6, (result_bytes(train) + result_bytes(test)) / 1e6, stats["avg_labels_per_point"],
                stats["avg_features_per_point"], f"{int((train.label_frequencies() > 0).sum()):,}"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", default=shared_data("extreme-classification"),
                        help="folder with bibtex/ and delicious/")
    parser.add_argument("--synthetic-mb", type=float, default=200.0)
    parser.add_argument("--labels", default="1e5,1e6", help="label counts for the generator timings")
    parser.add_argument("--train", type=int, default=500000, help="training points for the generator timings")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--skip-read", action="store_true")
    parser.add_argument("--skip-generate", action="store_true")
    args = parser.parse_args(argv)

    if not args.skip_read:
        folder = tempfile.mkdtemp(prefix="xc-bench-")
        try:
            files = []
            for name in ("bibtex", "delicious"):
                gz = os.path.join(args.root, name, "%s_train.xc.txt.gz" % name)
                if os.path.exists(gz):
                    plain = os.path.join(folder, "%s_train.xc.txt" % name)
                    with gzip.open(gz, "rb") as src, open(plain, "wb") as dst:
                        shutil.copyfileobj(src, dst)
                    files += [(os.path.basename(gz), gz), (os.path.basename(plain), plain)]
            for values in ("tfidf", "binary"):
                path, seconds = synthetic_file(folder, args.synthetic_mb, values)
                print("wrote %s (%.0f MB) in %.1f s" % (os.path.basename(path), os.path.getsize(path) / 1e6, seconds))
                files.append((os.path.basename(path), path))
            print()
            bench_read(files, args.repeat)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        print()
    if not args.skip_generate:
        bench_generate([int(float(x)) for x in args.labels.split(",")], args.train, args.repeat)
    print("\nPython %s, %s, %d CPUs; command: python -m eval.bench.xcdata %s"
          % (platform.python_version(), platform.machine(), os.cpu_count(),
             " ".join(sys.argv[1:] if argv is None else argv)))


if __name__ == "__main__":
    main()
