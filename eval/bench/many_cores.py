"""Benchmark: the many-core measurements of BENCHMARKS.md and CLUSTER.md in one run, the most important first.

On a machine with many cores and a few minutes to spare, this runs in turn (each a benchmark of ``eval/bench``
in its own process, its JSON lines or JSON written into ``--out`` as it ends, so a run cut short still
answers the first questions):

1. ``scaling``: embkit's training at 1 to the machine's cores (threads 1, 4, 8, ... and the cores), quality
   over 3 seeds at 1 thread and at the cores, and the hot rows' variants (:func:`embkit_variants`): the shared
   tables (``none``), the output rows' copies alone (``outputs``), the input rows' copies where they are off
   by default (``inputs``) and half of the input rows' change under the output rows' bound (``inputs-half``);
2. ``scaling`` for gensim at the same thread counts (quality at the cores);
3. ``contention``: one-thread processes against one process of as many threads, with and without copies;
4. ``cluster``: two Dask workers of half the cores each against one process of half the cores, on gcide
   repeated 11 times, with the exchange on and off the critical path (staleness 0 and 1; skipped without
   ``distributed``);
5. ``scan_threads``: the vocabulary's scan at 1 to the cores, without its cap on threads (``uncapped``) and
   with the caller waiting beside the splitting threads instead of splitting as one of them
   (``waiting_caller``);
6. ``scaling`` for fastText at the cores (skipped without ``fasttext``);
7. ``drivers``: every kernel driver at 1 thread and at the cores;
8. ``cluster8``: eight Dask workers of an eighth of the cores each against one process of as many threads, on
   gcide repeated 11 times, the frequent rows reconciled within the rounds (the default of 3 workers or more),
   then (9, ``cluster8-whole``) without them (skipped without ``distributed``);
10. ``blas_spin``: ``build_vocab`` and one epoch at the cores right after a threaded BLAS product and after
    its threads have settled;
11. ``items-hot``: ``ItemEmbedding``'s pairs at 1 thread and at the cores with the threads' copies of the
    1,024 most counted items' output rows and of every item's (``hot_rows``, off by default);
12. ``cluster4``: four Dask workers of a quarter of the cores each against one process of as many threads, on
    gcide repeated 11 times, the frequent rows reconciled within the rounds (skipped without
    ``distributed``).

``--small LINES`` trains on the first LINES lines of the corpus with one seed (a dry run on a small machine).
Nothing is asserted: timings depend on the machine.

Usage::

    python -m eval.bench.many_cores --corpus gcide.txt --out results-16cores [--steps 1 2 3] [--small 60000]
"""
import argparse
import importlib.util
import os
import subprocess
import sys
import time

from embkit.core.hot_rows import WORD_HOT_FROM_HOLDERS, WORD_HOT_INPUTS_FROM_HOLDERS
from eval.bench.word2vec import OPENERS, default_corpus

HOT = "@embkit.core.hot_rows."


def thread_counts(cores):
    """1, 4, 8, 16, ... below ``cores``, and ``cores``."""
    counts, t = [1], 4
    while t < cores:
        counts.append(t)
        t *= 2
    return sorted(set(counts + [cores]))


def embkit_variants(cores):
    """``--variant`` arguments of step 1: the shared tables (at 4 threads and the cores), the output rows'
    copies alone at the counts where the input rows' are copied too, the input rows' copies too at the counts
    below ``WORD_HOT_INPUTS_FROM_HOLDERS`` where they are off, and half the input rows' change under the
    output rows' bound at the cores."""
    top = str(cores)
    copying = [t for t in thread_counts(cores) if t >= WORD_HOT_FROM_HOLDERS]
    below = [str(t) for t in copying if t < WORD_HOT_INPUTS_FROM_HOLDERS and t != cores]
    both = [str(t) for t in copying if t >= WORD_HOT_INPUTS_FROM_HOLDERS] or [top]
    variants = ["none:hot_rows=0,threads=%s" % "+".join(sorted({"4", top}, key=int)),
                "outputs:%sWORD_HOT_INPUTS=False,threads=%s" % (HOT, "+".join(both)),
                "inputs-half:%sWORD_HOT_INPUTS=True,%sHOT_PENDING_INPUT_STEPS=128,%sHOT_INPUT_SCALE=0.5,threads=%s"
                % (HOT, HOT, HOT, top)]
    if below:
        variants.append("inputs:%sWORD_HOT_INPUTS=True,threads=%s" % (HOT, "+".join(below)))
    return [a for v in variants for a in ("--variant", v)]


def steps(corpus, out, cores, small=False):
    """``(number, name, argv, needs)`` of every step: ``needs`` a module the step cannot run without; ``small``:
    one seed, and the cluster's corpus not repeated."""
    seeds = 1 if small else 3
    threads = [str(t) for t in thread_counts(cores)]
    top = str(cores)
    scaling = ["-m", "eval.bench.scaling", "--corpus", corpus]
    jsonl = ["--jsonl", os.path.join(out, "scaling.jsonl")]

    def grid(workers):
        return ["-m", "eval.bench.cluster", "--corpus", corpus, "--grid", "%dx%d" % (workers, max(1, cores // workers)),
                "--repeat-corpus", "1" if small else "11", "--epochs", "1", "--seeds", "1", "--no-quality"]
    eighth = grid(8)

    return [
        (1, "embkit", scaling + ["--threads"] + threads + ["--trainers", "embkit", "--quality-seeds", str(seeds),
                                                           "--quality-threads", "1", top] + embkit_variants(cores)
         + jsonl, None),
        (2, "gensim", scaling + ["--threads"] + threads + ["--trainers", "gensim", "--quality-threads", top] + jsonl,
         "gensim"),
        (3, "contention", ["-m", "eval.bench.contention", "--corpus", corpus, "--counts", "1", top,
                           "--variant", "none:hot_rows=0", "--jsonl", os.path.join(out, "contention.jsonl")], None),
        (4, "cluster", grid(2) + ["--staleness", "0", "1", "--json", os.path.join(out, "cluster.json")],
         "distributed"),
        (5, "scan", ["-m", "eval.bench.scan_threads", "--corpus", corpus, "--workers"] + threads +
         ["--repeats", "3", "--variant", "uncapped:@embkit.text.scan.SCAN_MAX_WORKERS=1000000",
          "--variant", "waiting_caller:@embkit.core.threads.CALLER_WORKS=False",
          "--json", os.path.join(out, "scan-threads.json")], None),
        (6, "fasttext", scaling + ["--threads", top, "--trainers", "fasttext", "--quality-threads"] + jsonl,
         "fasttext"),
        (7, "drivers", ["-m", "eval.bench.drivers", "--corpus", corpus, "--threads", "1", top, "--repeats", "1",
                        "--json", os.path.join(out, "drivers.json")], None),
        (8, "cluster8", eighth + ["--json", os.path.join(out, "cluster8.json")], "distributed"),
        (9, "cluster8-whole", eighth + ["--hot-part-units", "0", "--json", os.path.join(out, "cluster8-whole.json")],
         "distributed"),
        (10, "blas_spin", ["-m", "eval.bench.blas_spin", "--corpus", corpus, "--threads", top, "--repeats",
                           "2" if small else "6", "--json", os.path.join(out, "blas-spin.json")], None),
        (11, "items-hot", ["-m", "eval.bench.drivers", "--threads", "1", top, "--repeats", "1" if small else "3",
                           "--workloads", "items", "--variant", "hot1k:hot_rows=1024",
                           "--variant", "hotall:hot_rows=1000000",
                           "--json", os.path.join(out, "drivers-items-hot.json")], None),
        (12, "cluster4", grid(4) + ["--json", os.path.join(out, "cluster4.json")], "distributed"),
    ]


def slice_of(corpus, lines, out):
    """The first ``lines`` lines of ``corpus`` as a plain file in ``out``; its path."""
    path = os.path.join(out, "corpus-%d.txt" % lines)
    opener = OPENERS.get(os.path.splitext(corpus)[1].lower(), open)
    with opener(corpus, "rt", encoding="utf-8") as src, open(path, "w", encoding="utf-8") as dst:
        for i, line in enumerate(src):
            if i >= lines:
                break
            dst.write(line)
    return path


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", default=default_corpus(), help="training text (plain, .gz, .bz2 or .xz)")
    p.add_argument("--out", required=True, help="folder for every step's results and the log")
    p.add_argument("--cores", type=int, default=os.cpu_count() or 1, help="the top thread count")
    p.add_argument("--steps", type=int, nargs="+", default=None, help="run these steps only (1-12)")
    p.add_argument("--small", type=int, default=None, metavar="LINES", help="a dry run on the corpus's first LINES")
    args = p.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    corpus = slice_of(args.corpus, args.small, args.out) if args.small else args.corpus
    start = time.perf_counter()
    failed = 0
    with open(os.path.join(args.out, "log.txt"), "a", encoding="utf-8") as log:
        for number, name, argv_step, needs in steps(corpus, args.out, args.cores, bool(args.small)):
            if args.steps and number not in args.steps:
                continue
            if needs and importlib.util.find_spec(needs) is None:
                print("== step %d (%s) skipped: %s is not installed" % (number, name, needs), file=log, flush=True)
                continue
            log.write("== step %d (%s): python %s\n" % (number, name, " ".join(argv_step)))
            log.flush()
            code = subprocess.call([sys.executable] + argv_step, stdout=log, stderr=subprocess.STDOUT)
            failed += code != 0
            print("== step %d (%s) ended (exit status %d) at %.0f s" % (number, name, code,
                                                                        time.perf_counter() - start),
                  file=log, flush=True)
            print("step %d (%s): exit status %d, %.0f s" % (number, name, code, time.perf_counter() - start))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
