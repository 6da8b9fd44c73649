"""Benchmark: embkit's ``build_vocab`` and training at a few thread counts, in interleaved repetitions.

For small speedups on a machine whose speed drifts (a VM, two pinned cores of a larger box) one run per
thread count says little: this runs ``build_vocab`` then ``train`` of skip-gram (dim 100, window 5, 5
negatives, sample 1e-3, 2 epochs) at every thread count in turn, ``--repeats`` times, one JSON line per run,
then the medians and the speedups against the first thread count.  Pin it to cores with ``taskset`` to ask
how it scales on that many cores.  ``--variant NAME:@module.NAME=value`` adds runs with a module constant
changed (``eval.bench.scaling``'s syntax; only ``@`` keys), interleaved with the others.  ``--fresh`` runs
each in a new process: its first ``build_vocab`` pays for the heap and threads a process starts without (a
user's run), where the repetitions in one process reuse them.  ``--probe`` times the round trip of a cache line
between two threads right before and right after every run (:func:`eval.bench.placement.round_trip_ns`) and
gives the runs of more than one thread by where the machine had put its cores (``near``, ``far``,
``mixed``: :func:`eval.bench.placement.placement`), against the fewest threads' runs of any placement.
Nothing is asserted: timings depend on the machine.

Usage::

    taskset -c 0,1 python -m eval.bench.repeats --corpus gcide.txt --threads 1 2 --repeats 5 \
        --variant waiting_caller:@embkit.core.threads.CALLER_WORKS=False
"""
import argparse
import json
import statistics
import subprocess
import sys
import time

from embkit import Word2Vec
from eval.bench.placement import PLACEMENT_ORDER, placement, round_trip_ns
from eval.bench.scaling import module_constants, parse_variant
from eval.paths import REPO_ROOT, shared_data


def one_run(corpus, threads, epochs, constants):
    """``(vocab_s, train_s)`` of ``build_vocab`` and ``train`` in this process with ``constants`` set."""
    with module_constants(constants):
        model = Word2Vec(vector_size=100, window=5, negative=5, sample=1e-3, sg=1, workers=threads, epochs=epochs)
        start = time.perf_counter()
        model.build_vocab(corpus_file=corpus)
        vocab = time.perf_counter() - start
        start = time.perf_counter()
        model.train()
        return vocab, time.perf_counter() - start


def _fresh_run(corpus, threads, epochs, constants):
    """:func:`one_run` in a new Python process (whose heap and threads start cold, as a user's run does)."""
    code = ("import json, sys; from eval.bench.repeats import one_run; "
            "print(json.dumps(one_run(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4]))))")
    out = subprocess.run([sys.executable, "-c", code, corpus, str(threads), str(epochs), json.dumps(constants)],
                         check=True, capture_output=True, text=True, cwd=REPO_ROOT).stdout
    return tuple(json.loads(out.strip().splitlines()[-1]))


def run(corpus, threads, repeats, epochs, variants=(), out=sys.stdout, fresh=False, probe=False):
    """``{(variant, threads, placement): [(vocab_s, train_s), ...]}`` of the interleaved runs (the variant ``""``
    is the code as it is; ``variants`` are ``(name, constants)``; the placement ``"any"`` unless ``probe`` and
    more than the fewest threads), each in a new process with ``fresh``; a JSON line per run to ``out``."""
    times = {}
    for rep in range(repeats):
        for name, constants in [("", {})] + list(variants):
            for t in threads:
                before = round_trip_ns() if probe else None
                vocab, train = (_fresh_run if fresh else one_run)(corpus, t, epochs, constants)
                after = round_trip_ns() if probe else None
                where = placement(before, after) if probe and t > min(threads) else "any"
                times.setdefault((name, t, where), []).append((vocab, train))
                row = {"repeat": rep, "variant": name, "threads": t, "vocab_s": round(vocab, 4),
                       "train_s": round(train, 4)}
                if probe:
                    row.update(probe_before_ns=before, probe_after_ns=after, placement=where)
                print(json.dumps(row), file=out, flush=True)
    return times


def summary(times):
    """Markdown lines: the median seconds of every variant, thread count and placement, and the speedup
    against the code as it is at the fewest threads."""
    first = min(t for name, t, _ in times if name == "")
    base = [r for (name, t, _), runs in times.items() if name == "" and t == first for r in runs]
    base_v = statistics.median(v for v, _ in base)
    base_t = statistics.median(t for _, t in base)
    lines = ["| variant | threads | placement | runs | build_vocab s (median) | speedup | training s (median) "
             "| speedup |", "|---|---:|---|---:|---:|---:|---:|---:|"]
    for (name, t, where), runs in sorted(times.items(), key=lambda kv: (kv[0][0], kv[0][1],
                                                                       PLACEMENT_ORDER[kv[0][2]])):
        v = statistics.median(r[0] for r in runs)
        tr = statistics.median(r[1] for r in runs)
        lines.append("| %s | %d | %s | %d | %.3f | %.2fx | %.3f | %.2fx |" % (
            name or "as is", t, where, len(runs), v, base_v / v, tr, base_t / tr))
    return lines


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", default=None, help="training text (default: the shared gcide corpus)")
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--variant", type=parse_variant, action="append", default=[], metavar="NAME:@module.NAME=value")
    p.add_argument("--fresh", action="store_true",
                   help="every run in a new process (cold heap and threads, as a user's one build_vocab)")
    p.add_argument("--probe", action="store_true",
                   help="class the runs by where the cores were (a cache line's round trip before and after each)")
    args = p.parse_args(argv)
    corpus = args.corpus or shared_data("corpora", "gcide.txt.gz")
    variants = []
    for name, kwargs, path, constants, _ in args.variant:
        if kwargs or path:
            p.error("--variant %s: only module constants (@package.module.NAME=value) are varied here" % name)
        variants.append((name, constants))
    times = run(corpus, sorted(set(args.threads)), args.repeats, args.epochs, variants, fresh=args.fresh,
                probe=args.probe)
    print("\n".join(summary(times)))
    print("\n`python -m eval.bench.repeats %s`" % " ".join(argv if argv is not None else sys.argv[1:]))


if __name__ == "__main__":
    main()
