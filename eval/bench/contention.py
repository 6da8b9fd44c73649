"""Benchmark: what sharing the tables costs the training threads, against the machine's own limit.

``P`` threads of one trainer write the same two tables; ``P`` independent processes, each training its own
model on one thread, share nothing but the machine (its cores' clock under load, the caches, the memory).
For every count ``P`` this trains, at the same moment, ``P`` one-thread processes (each builds its vocabulary,
then all start training together) and, after them, one process with ``P`` threads, on the same corpus and
settings (skip-gram, dim 100, window 5, 5 negatives, sample 1e-3, ``--epochs``).  Reported per ``P``:

    processes words/s   the sum over the processes of each one's raw words/s
    threads words/s     the ``P``-thread trainer's raw words/s
    shared / private    threads words/s over processes words/s: what the shared tables cost

The processes' words/s over ``P`` times the 1-process words/s is the machine's efficiency with nothing shared
(the ceiling of any thread scheme with these kernels); the threads' is the trainer's.  Nothing is asserted:
timings depend on the machine.

Usage::

    python -m eval.bench.contention --corpus gcide.txt --counts 1 8 16 --jsonl contention.jsonl
"""
import argparse
import json
import multiprocessing
import queue
import sys

from eval.bench.scaling import module_constants, parse_variant, set_module_constant
from eval.bench.word2vec import default_corpus

SETTINGS = dict(sg=1, vector_size=100, window=5, negative=5, sample=1e-3, min_count=5)


def _train(corpus, epochs, threads, seed, extra, barrier=None):
    """Build the vocabulary, wait at ``barrier``, train; ``(raw words, training seconds)``."""
    from embkit import Word2Vec

    model = Word2Vec(**dict(SETTINGS, epochs=epochs, workers=threads, seed=seed, **extra))
    model.build_vocab(corpus_file=corpus)
    if barrier is not None:
        barrier.wait()
    model.train()
    return model.last_report.raw_words, model.last_report.seconds


def _process(corpus, epochs, seed, extra, constants, barrier, results):
    for dotted, value in constants.items():
        set_module_constant(dotted, value)
    results.put((seed,) + _train(corpus, epochs, 1, seed, extra, barrier))


def processes(corpus, epochs, count, extra=None, constants=None):
    """Train ``count`` one-thread models at once, each in its own process; ``[(raw words, seconds), ...]``."""
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(count)
    results = ctx.Queue()
    procs = [ctx.Process(target=_process, args=(corpus, epochs, seed, extra or {}, constants or {}, barrier,
                                                 results)) for seed in range(1, count + 1)]
    for p in procs:
        p.start()
    out = []
    while len(out) < count:
        try:
            out.append(results.get(timeout=1))
        except queue.Empty:
            if any(p.exitcode not in (None, 0) for p in procs):
                for p in procs:
                    p.terminate()
                raise RuntimeError("a training process failed (exit status %s)"
                                   % [p.exitcode for p in procs if p.exitcode not in (None, 0)][0])
    for p in procs:
        p.join()
    return [(words, seconds) for _, words, seconds in sorted(out)]


def run(corpus, counts, epochs, variants=(), outs=(sys.stdout,)):
    """One JSON line per count and variant, to every file of ``outs``: the processes' and the threads'
    words/s."""
    rows = []
    for name, extra, constants in [("", {}, {})] + list(variants):
        for count in counts:
            runs = processes(corpus, epochs, count, extra, constants)
            private = sum(words / seconds for words, seconds in runs)
            with module_constants(constants):
                words, seconds = _train(corpus, epochs, count, 1, extra)
            row = {"variant": name, "count": count, "processes_words_per_s": round(private),
                   "process_seconds": [round(s, 3) for _, s in runs], "threads_words_per_s": round(words / seconds),
                   "threads_seconds": round(seconds, 3), "shared_over_private": round(words / seconds / private, 3)}
            rows.append(row)
            for out in outs:
                print(json.dumps(row), file=out, flush=True)
    return rows


def in_process_variants(parser, parsed):
    """``[(name, kwargs, constants), ...]`` of ``--variant`` values (:func:`parse_variant`); one that runs
    another checkout is refused with ``parser.error``: these benchmarks train in this process's children."""
    variants = []
    for name, kwargs, path, constants, _ in parsed:
        if path:
            parser.error("--variant %s: another checkout is not run here" % name)
        variants.append((name, kwargs, constants))
    return variants


def outputs(jsonl):
    """Where a run's JSON lines go: standard output, and the file ``jsonl`` (appended) when given."""
    return [sys.stdout] + ([open(jsonl, "a")] if jsonl else [])


def summary(rows):
    """Markdown: words/s of the processes and of the threads, each with its efficiency against one."""
    lines = ["| variant | P | processes words/s | efficiency | threads words/s | efficiency | shared / private |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    one = {r["variant"]: r for r in rows if r["count"] == 1}
    for r in rows:
        base = one.get(r["variant"])
        p_eff = t_eff = float("nan")
        if base is not None:
            p_eff = r["processes_words_per_s"] / (r["count"] * base["processes_words_per_s"])
            t_eff = r["threads_words_per_s"] / (r["count"] * base["threads_words_per_s"])
        lines.append("| %s | %d | %.2fM | %.2f | %.2fM | %.2f | %.2f |" % (
            r["variant"] or "as is", r["count"], r["processes_words_per_s"] / 1e6, p_eff,
            r["threads_words_per_s"] / 1e6, t_eff, r["shared_over_private"]))
    return lines


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", default=None, help="plain-text training corpus (default: the shared gcide corpus)")
    p.add_argument("--counts", type=int, nargs="+", default=[1, 2])
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--variant", type=parse_variant, action="append", default=[], metavar="NAME:key=value,...")
    p.add_argument("--jsonl", default=None, help="append each count's JSON line here as it ends")
    args = p.parse_args(argv)
    corpus = args.corpus or default_corpus()
    rows = run(corpus, sorted(set(args.counts)), args.epochs, in_process_variants(p, args.variant),
               outputs(args.jsonl))
    print("\n".join(summary(rows)))
    print("\n`python -m eval.bench.contention %s`" % " ".join(argv if argv is not None else sys.argv[1:]))


if __name__ == "__main__":
    main()
