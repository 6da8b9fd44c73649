"""Benchmark: embkit's ``build_vocab`` and training at a few thread counts, in interleaved repetitions.

For small speedups on a machine whose speed drifts (a VM, two pinned cores of a larger box) one run per
thread count says little: this runs ``build_vocab`` then ``train`` of skip-gram (dim 100, window 5, 5
negatives, sample 1e-3, 2 epochs) at every thread count in turn, ``--repeats`` times, one JSON line per run,
then the medians and the speedups against the first thread count.  Pin it to cores with ``taskset`` to ask
how it scales on that many cores.  Nothing is asserted: timings depend on the machine.

Usage::

    taskset -c 0,1 python -m eval.bench.repeats --corpus gcide.txt --threads 1 2 --repeats 5
"""
import argparse
import json
import statistics
import sys
import time

from embkit import Word2Vec
from eval.paths import shared_data


def run(corpus, threads, repeats, epochs, out=sys.stdout):
    """``{threads: [(vocab_s, train_s), ...]}`` of the interleaved runs; a JSON line per run to ``out``."""
    times = {t: [] for t in threads}
    for rep in range(repeats):
        for t in threads:
            model = Word2Vec(vector_size=100, window=5, negative=5, sample=1e-3, sg=1, workers=t, epochs=epochs)
            start = time.perf_counter()
            model.build_vocab(corpus_file=corpus)
            vocab = time.perf_counter() - start
            start = time.perf_counter()
            model.train()
            train = time.perf_counter() - start
            times[t].append((vocab, train))
            print(json.dumps({"repeat": rep, "threads": t, "vocab_s": round(vocab, 4), "train_s": round(train, 4)}),
                  file=out, flush=True)
    return times


def summary(times):
    """Markdown lines: the median seconds at every thread count and the speedup against the first."""
    first = min(times)
    base_v = statistics.median(v for v, _ in times[first])
    base_t = statistics.median(t for _, t in times[first])
    lines = ["| threads | build_vocab s (median) | speedup | training s (median) | speedup |", "|---:|---:|---:|---:|---:|"]
    for t, runs in sorted(times.items()):
        v = statistics.median(r[0] for r in runs)
        tr = statistics.median(r[1] for r in runs)
        lines.append("| %d | %.3f | %.2fx | %.3f | %.2fx |" % (t, v, base_v / v, tr, base_t / tr))
    return lines


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", default=None, help="training text (default: the shared gcide corpus)")
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--epochs", type=int, default=2)
    args = p.parse_args(argv)
    corpus = args.corpus or shared_data("corpora", "gcide.txt.gz")
    times = run(corpus, sorted(set(args.threads)), args.repeats, args.epochs)
    print("\n".join(summary(times)))
    print("\n`python -m eval.bench.repeats %s`" % " ".join(argv if argv is not None else sys.argv[1:]))


if __name__ == "__main__":
    main()
