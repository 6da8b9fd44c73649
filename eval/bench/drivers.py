"""Benchmark: every training driver at a few thread counts, in interleaved repetitions.

The thread scaling of each kernel driver on its own workload, where ``eval.bench.scaling`` measures
skip-gram alone: the ``windows`` driver (skip-gram and CBOW on gcide: dim 100, window 5, 5 negatives,
sample 1e-3, one epoch), the ``pairs`` driver (``ItemEmbedding``'s default sampled softmax on
ml-latest-small's next-item pairs, window 3, dim 100, 30 epochs) and the ``rows`` driver and the one-vs-all
solver (``ExtremeClassifier`` on Delicious, the sampled solver and the one-vs-all one without heads, their
default settings; ``xc-sampled-shared-rows``: the sampled solver with ``hot_rows=0``, every step writing the
shared label table).  Every workload runs at every thread count in turn, ``--repeats`` times, one JSON line per
run (training seconds as the model's report gives them, units a second: words, pairs or examples, and for
the XC workloads P@1/3/5 on Delicious's test set), then the medians and each workload's speedup against its
fewest threads.  Repetition ``r`` trains with seed ``--seed + r``.  Data are read once, before the runs;
a word2vec run builds its vocabulary first, untimed.  ``--variant NAME:key=value,@module.NAME=value``
adds runs of every workload with model parameters (``key``) or module constants (``@``) changed, interleaved
with the code as it is.  Pin it to cores with ``taskset`` to ask how it scales on that many cores.  Nothing is
asserted: timings depend on the machine.

Usage::

    python -m eval.bench.drivers --threads 1 2 --repeats 5 [--workloads skip-gram cbow items ...]
        [--variant ova16:@embkit.xc.one_vs_all.MAX_THREADS=16]
"""
import argparse
import json
import shlex
import statistics
import sys

from eval.bench.scaling import module_constants, parse_variant
from eval.bench.word2vec import default_corpus

WORKLOADS = ("skip-gram", "cbow", "items", "xc-sampled", "xc-sampled-shared-rows", "xc-one-vs-all")


def _word2vec(sg):
    def prepare(args):
        return args.corpus

    def run(corpus, threads, seed, **extra):
        from embkit import Word2Vec
        settings = dict(vector_size=100, window=5, negative=5, sample=1e-3, min_count=5, sg=sg, epochs=1)
        model = Word2Vec(workers=threads, seed=seed, progress=False, **dict(settings, **extra))
        model.build_vocab(corpus_file=corpus)
        model.train()
        return model.last_report, None
    return prepare, run


def _items():
    def prepare(args):
        from eval.bench.items import load_split
        _, (train, _, _) = load_split("ml-latest-small", 3)
        return train

    def run(train, threads, seed, **extra):
        from embkit import ItemEmbedding
        model = ItemEmbedding(workers=threads, seed=seed, progress=False, **dict(dict(vector_size=100, epochs=30), **extra))
        model.fit(train)
        return model.last_report, None
    return prepare, run


def _xc(solver, **extra):
    def prepare(args):
        from eval.bench.xc import load_set
        return load_set("delicious")

    def run(data, threads, seed, **variant):
        from embkit import ExtremeClassifier
        model = ExtremeClassifier(solver=solver, heads=(), workers=threads, seed=seed, progress=False,
                                  **dict(extra, **variant))
        model.fit(data[0])
        return model.last_report, {"P@%d" % k: v for k, v in model.evaluate(data[1]).precision.items()}
    return prepare, run


DRIVERS = {"skip-gram": _word2vec(1), "cbow": _word2vec(0), "items": _items(), "xc-sampled": _xc("sampled"),
           "xc-sampled-shared-rows": _xc("sampled", hot_rows=0), "xc-one-vs-all": _xc("one_vs_all")}


def run(args, out=sys.stdout):
    """``{(workload, variant, threads): [run, ...]}`` of the interleaved runs (dicts: ``train_s``,
    ``units_per_s`` and for the XC workloads P@1/3/5 on the test set; the variant ``""`` is the code as it
    is); a JSON line per run.  Repetition ``r`` uses seed ``seed + r``."""
    data = {name: DRIVERS[name][0](args) for name in args.workloads}
    variants = [("", {}, {})] + [(name, kwargs, constants) for name, kwargs, _, constants, _ in args.variant]
    runs = {}
    for rep in range(args.repeats):
        for name in args.workloads:
            for variant, kwargs, constants in variants:
                for t in args.threads:
                    with module_constants(constants):
                        report, quality = DRIVERS[name][1](data[name], t, args.seed + rep, **kwargs)
                    row = {"repeat": rep, "seed": args.seed + rep, "workload": name, "variant": variant, "threads": t,
                           "train_s": round(report.seconds, 4),
                           "units_per_s": round(report.words / max(report.seconds, 1e-9))}
                    row.update({k: round(v, 4) for k, v in (quality or {}).items()})
                    runs.setdefault((name, variant, t), []).append(row)
                    print(json.dumps(row), file=out, flush=True)
    return runs


def summary(runs, workloads, variants, threads):
    """Markdown lines: per workload, variant and thread count the median seconds and units/s, the speedup of
    the median seconds against the code as it is on the fewest threads, and the mean P@1 of the XC workloads."""
    lines = ["| workload | variant | threads | training s (median) | units/s (median) | speedup | P@1 (mean) |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for name in workloads:
        base = statistics.median(r["train_s"] for r in runs[(name, "", min(threads))])
        for variant in variants:
            for t in threads:
                rows = runs[(name, variant, t)]
                s = statistics.median(r["train_s"] for r in rows)
                p1 = "%.4f" % statistics.mean(r["P@1"] for r in rows) if "P@1" in rows[0] else "-"
                lines.append("| %s | %s | %d | %.3f | %.0f | %.2fx | %s |" % (
                    name, variant or "as is", t, s, statistics.median(r["units_per_s"] for r in rows), base / s, p1))
    return lines


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", default=None, help="the word2vec workloads' text (default: the shared gcide corpus)")
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--workloads", nargs="+", choices=WORKLOADS, default=list(WORKLOADS))
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", default=None, metavar="FILE", help="write every run and the summary as JSON")
    p.add_argument("--variant", type=parse_variant, action="append", default=[],
                   metavar="NAME:key=value,@module.NAME=value")
    args = p.parse_args(argv)
    for name, _, path, constants, threads in args.variant:
        if path or threads or "quality" in constants:
            p.error("--variant %s: only model parameters and module constants are varied here" % name)
    if args.corpus is None:
        args.corpus = default_corpus()
    runs = run(args)
    lines = summary(runs, args.workloads, [""] + [v[0] for v in args.variant], sorted(args.threads))
    print("\n".join([""] + lines))
    command = "python -m eval.bench.drivers %s" % " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    print("\n`%s`" % command)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"command": command, "runs": [r for rows in runs.values() for r in rows], "summary": lines},
                      fh, indent=1)


if __name__ == "__main__":
    main()
