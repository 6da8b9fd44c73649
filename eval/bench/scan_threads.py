"""Benchmark: the scan of a file corpus (``build_vocab``'s reading, counting and encoding) at a few worker
counts, and how much of it runs in the calling thread.

The calling thread's CPU seconds are the scan's serial share: whatever the other threads do beside it, the
scan takes at least that long on any number of cores.  Each run calls
:func:`embkit.text.scan.scan_corpus` (``min_count`` 5) and times its wall clock, the CPU seconds of the
calling thread and those of the whole process (every thread); the worker counts and the variants
(``--variant NAME:@module.NAME=value``, ``eval.bench.scaling``'s syntax, only ``@`` keys) run in turn,
``--repeats`` times, in one process (the heap warm after the first round).  One JSON line a run, then the
medians.  ``--phases`` times instead, on one thread, the splitting of every block into words and the adding of
the blocks to one table (the calling thread's share below :data:`~embkit.text.scan.PARTED_WORKERS` workers),
best and median of ``--repeats``.  Nothing is asserted: timings depend on the machine.

Usage::

    python -m eval.bench.scan_threads --corpus gcide.txt --workers 1 2 4 8 --repeats 5 \
        --variant caller:@embkit.text.scan.PARTED_WORKERS=1000000 --json eval/results/scan-threads.json
"""
import argparse
import json
import os
import statistics
import sys
import time

from embkit._kernels.words import WordTable, tokenize
from embkit.text.corpus import TextCorpus
from embkit.text.scan import SCAN_BLOCK_CHARS, scan_corpus
from eval.bench.scaling import module_constants, parse_variant
from eval.paths import shared_data


def one_run(corpus, workers, constants):
    """``(wall_s, caller_cpu_s, process_cpu_s, words)`` of one scan of ``corpus`` with ``constants`` set."""
    with module_constants(constants):
        wall, caller, process = time.perf_counter(), time.thread_time(), time.process_time()
        vocab, cache = scan_corpus(TextCorpus(corpus), min_count=5, workers=workers)
        wall, caller = time.perf_counter() - wall, time.thread_time() - caller
        process = time.process_time() - process
        cache.close()
    return wall, caller, process, len(vocab)


def run(corpus, workers, repeats, variants=(), out=None):
    """``{(variant, workers): [run, ...]}`` of the interleaved runs (``""``: the code as it is; ``variants``
    are ``(name, constants)``), a JSON line per run to ``out`` (standard output)."""
    out = sys.stdout if out is None else out
    runs = {}
    for rep in range(repeats):
        for name, constants in [("", {})] + list(variants):
            for w in workers:
                wall, caller, process, words = one_run(corpus, w, constants)
                runs.setdefault((name, w), []).append((wall, caller, process))
                print(json.dumps({"repeat": rep, "variant": name, "workers": w, "wall_s": round(wall, 4),
                                  "caller_cpu_s": round(caller, 4), "process_cpu_s": round(process, 4),
                                  "vocabulary": words}), file=out, flush=True)
    return runs


def phases(corpus, repeats):
    """``{"split": [s, ...], "add": [s, ...]}``: splitting the corpus's blocks (read beforehand) into words,
    and adding them to one new table, on one thread, ``repeats`` times."""
    texts = [text for text, _ in TextCorpus(corpus).iter_blocks(SCAN_BLOCK_CHARS)]
    times = {"split": [], "add": []}
    for _ in range(repeats):
        start = time.perf_counter()
        blocks = [tokenize(text) for text in texts]
        times["split"].append(time.perf_counter() - start)
        start = time.perf_counter()
        table = WordTable()
        for block in blocks:
            table.add(block)
        times["add"].append(time.perf_counter() - start)
        del blocks, table
    return times


def summary(runs):
    """Markdown lines: the medians of every variant and worker count, and the wall-clock speedup against the
    code as it is at the fewest workers."""
    first = min(w for name, w in runs if name == "")
    base = statistics.median(r[0] for r in runs[("", first)])
    lines = ["| variant | workers | wall s (median) | speedup | calling thread CPU s | every thread CPU s |",
             "|---|---:|---:|---:|---:|---:|"]
    for (name, w), rows in sorted(runs.items()):
        wall, caller, process = (statistics.median(r[k] for r in rows) for k in range(3))
        lines.append("| %s | %d | %.3f | %.2fx | %.3f | %.3f |" % (name or "as is", w, wall, base / wall, caller,
                                                                     process))
    return lines


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", default=None, help="plain-text corpus (default: the shared gcide corpus)")
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--variant", type=parse_variant, action="append", default=[], metavar="NAME:@module.NAME=value")
    p.add_argument("--phases", action="store_true", help="time splitting and adding the blocks on one thread")
    p.add_argument("--json", default=None, help="write every run and the medians here")
    args = p.parse_args(argv)
    corpus = args.corpus or shared_data("corpora", "gcide.txt.gz")
    if args.phases:
        times = phases(corpus, args.repeats)
        for name, t in times.items():
            print("%s: best %.4f s, median %.4f s" % (name, min(t), statistics.median(t)))
        return
    variants = []
    for name, kwargs, path, constants, _ in args.variant:
        if kwargs or path:
            p.error("--variant %s: only module constants (@package.module.NAME=value) are varied here" % name)
        variants.append((name, constants))
    runs = run(corpus, sorted(set(args.workers)), args.repeats, variants)
    lines = summary(runs)
    command = "python -m eval.bench.scan_threads %s" % " ".join(argv if argv is not None else sys.argv[1:])
    print("\n".join(lines))
    print("\n`%s`" % command)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"corpus": os.path.basename(corpus), "cpus": os.cpu_count(), "command": command,
                       "date": time.strftime("%Y-%m-%d"), "variants": {n: c for n, c in variants},
                       "runs": [{"variant": n, "workers": w, "wall_s": r[0], "caller_cpu_s": r[1],
                                 "process_cpu_s": r[2]} for (n, w), rows in sorted(runs.items()) for r in rows],
                       "summary": lines}, f, indent=1)


if __name__ == "__main__":
    main()
