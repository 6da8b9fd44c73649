"""Benchmark: what OpenBLAS's idle threads cost embkit's threads right after a product.

After each threaded BLAS call, OpenBLAS's threads spin (yielding) for 2**28 cycles by default
(``OPENBLAS_THREAD_TIMEOUT``) before they sleep, about 0.1 s; anything that starts its own threads in that
time shares the cores with them.  This benchmark times embkit's ``build_vocab`` and then one epoch of
training at ``--threads``, each right after a product of two 600 x 600 float32 matrices (the kind an
analogy evaluation runs, as between two ``train`` calls or in an epoch-end callback), and each after the
same product followed by :data:`eval.bench.word2vec.BLAS_SETTLE_S` seconds of sleep, alternating,
``--repeats`` times in one process (a first run, untimed, warms it).  BLAS gets ``--threads`` threads
(threadpoolctl) whatever the environment says (``OPENBLAS_NUM_THREADS=1`` would leave nothing to measure).
Medians and every run are printed, with the BLAS libraries and their threads.  Nothing is asserted: timings
depend on the machine.

Usage::

    python -m eval.bench.blas_spin --corpus gcide.txt --threads 2 --repeats 6 --json eval/results/blas-spin.json
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

from eval.bench.contention import SETTINGS
from eval.bench.word2vec import BLAS_SETTLE_S
from eval.paths import shared_data

CASES = ("right after a product", "after the threads settle")


def one_run(corpus, threads, epochs, before):
    """``(build_vocab s, train s)`` of one fresh model (:data:`eval.bench.contention.SETTINGS`),
    ``before()`` called right before each of the two."""
    from embkit import Word2Vec

    model = Word2Vec(**dict(SETTINGS, workers=threads, epochs=max(epochs, 1), seed=1))
    before()
    start = time.perf_counter()
    model.build_vocab(corpus_file=corpus)
    vocab = time.perf_counter() - start
    if not epochs:
        return vocab, None
    before()
    model.train()
    return vocab, model.last_report.seconds


def measure(corpus, threads, epochs, repeats):
    """``{case: [{"vocab_s", "train_s"}, ...]}``: the two cases of :data:`CASES` alternated ``repeats`` times
    after an untimed run, a JSON line per run on standard output."""
    a = np.random.default_rng(0).random((600, 600), dtype=np.float32)

    def product():
        a @ a

    def settled_product():
        a @ a
        time.sleep(BLAS_SETTLE_S)

    one_run(corpus, threads, 0, settled_product)
    runs = {case: [] for case in CASES}
    for rep in range(repeats):
        for case, before in zip(CASES, (product, settled_product)):
            vocab, train = one_run(corpus, threads, epochs, before)
            runs[case].append({"vocab_s": vocab, "train_s": train})
            print(json.dumps({"repeat": rep, "case": case, "vocab_s": round(vocab, 4),
                              "train_s": None if train is None else round(train, 4)}), flush=True)
    return runs


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", default=None, help="plain-text corpus (default: the shared gcide corpus)")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--epochs", type=int, default=1, help="epochs of each timed training (0: build_vocab only)")
    p.add_argument("--repeats", type=int, default=6)
    p.add_argument("--json", default=None, help="write every run and the medians here")
    args = p.parse_args(argv)
    corpus = args.corpus or shared_data("corpora", "gcide.txt.gz")
    from threadpoolctl import threadpool_info, threadpool_limits

    with threadpool_limits(limits=args.threads, user_api="blas"):
        blas = [{k: lib.get(k) for k in ("internal_api", "version", "num_threads")} for lib in threadpool_info()
                if lib.get("user_api") == "blas"]
        runs = measure(corpus, args.threads, args.epochs, args.repeats)
    command = "python -m eval.bench.blas_spin %s" % " ".join(argv if argv is not None else sys.argv[1:])
    lines = ["| %d threads | build_vocab s (median) | train s (median, %d epoch%s) |" % (
        args.threads, args.epochs, "" if args.epochs == 1 else "s"), "|---|---:|---:|"]
    for case in CASES:
        vocab = statistics.median(r["vocab_s"] for r in runs[case])
        train = statistics.median(r["train_s"] for r in runs[case]) if args.epochs else None
        lines.append("| %s | %.3f | %s |" % (case, vocab, "-" if train is None else "%.3f" % train))
    print("\n".join(lines))
    print("BLAS: %s" % blas)
    print("\n`%s`" % command)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"corpus": os.path.basename(corpus), "cpus": os.cpu_count(), "threads": args.threads,
                       "epochs": args.epochs, "blas": blas, "command": command, "date": time.strftime("%Y-%m-%d"),
                       "settle_s": BLAS_SETTLE_S, "runs": runs, "summary": lines}, f, indent=1)


if __name__ == "__main__":
    main()
