"""Reproduce the papers' headline results: one command per reproduction, a JSON of its numbers and a PNG plot.

Reproductions (each module's docstring gives its exact setup; RESULTS.md the numbers beside the paper's):

=============  ==========================================================================================
``table1``     relaxed softmax, Table 1: skip-gram word similarity and analogy per sampler (words)
``table2``     relaxed softmax, Table 2: next-item likelihood / MPR / Prec@k, T sweep, implicit peers
               (items)
``lsh``        LSH negative sampling: P@1 against time and epochs, time per epoch, speed-up (lsh)
``rf``         RF-softmax: kernel approximation error against D, sampling time against n, P@1 against D
               and nu (rf)
``throughput`` embkit against gensim and fastText: words/s, quality, words/s against threads (throughput)
``all``        every one of them, in this order
=============  ==========================================================================================

``--quick`` runs smaller data and fewer epochs, settings and seeds (each module's docstring says which; the
whole set in about four minutes on two idle cores); without it the full setups run (about 80 minutes on
two idle cores; RESULTS.md gives the measured times).  Each writes ``OUT/NAME.json`` after every finished run
(an interrupted run keeps what finished) and ``OUT/NAME.png`` at the end (``python -m eval.repro.reproduce NAME
--plot-only`` redraws it from the JSON).  The plots need matplotlib (``pip install 'embkit[plots]'``).

Usage::

    python -m eval.repro.reproduce all --quick
    python -m eval.repro.reproduce table1 [--seeds 3] [--corpus text8] [--out eval/results]
"""
import argparse
import importlib
import json
import os
import sys
import time

from eval.paths import REPO_ROOT
from eval.repro.common import MissingData, Record, say

#: reproduction name -> its module in this folder
REPRODUCTIONS = {"table1": "words", "table2": "items", "lsh": "lsh", "rf": "rf", "throughput": "throughput"}


def build_parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", choices=sorted(REPRODUCTIONS) + ["all"])
    p.add_argument("--quick", action="store_true", help="small data, fewer epochs and seeds: minutes instead of hours")
    p.add_argument("--out", default=os.path.join(REPO_ROOT, "eval", "results"),
                   help="folder of the JSON and PNG files")
    p.add_argument("--seeds", type=int, default=None,
                   help="seeds per method (default: each reproduction's own, 3 for most)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--corpus", default=None, help="table1: a text8-style corpus instead of gcide")
    p.add_argument("--sets", nargs="+", default=None,
                   help="lsh: run only these sets (bibtex delicious synthetic-1e5 synthetic-1e6); table2: only these "
                        "(ml-100k ml-latest-small gcide, and ml-1m ml-20m, which run only when named); the files are "
                        "named after them")
    p.add_argument("--resume", action="store_true",
                   help="table1, table2: keep the runs of an existing JSON and run only what it lacks")
    p.add_argument("--plan", default=None, metavar="FILE",
                   help="table2: run the plan in this JSON file (the keys of an entry of its PLANS) instead of "
                        "the built-in one")
    p.add_argument("--plot-only", action="store_true", help="redraw the plot from the JSON")
    p.add_argument("--markdown", action="store_true", help="print the results tables from the JSON")
    return p


def run_one(name, args, argv):
    module = importlib.import_module("eval.repro." + REPRODUCTIONS[name])
    stem = os.path.join(args.out, name + ("-quick" if args.quick else "") + "".join("-" + x for x in args.sets or ()))
    if args.plot_only or args.markdown:
        with open(stem + ".json") as fh:
            data = json.load(fh)
        if args.plot_only:
            module.plot(data, stem + ".png")
        if args.markdown:
            parts = ["`%s` (%.0f s of wall time), resumed by " % (r["command"], r["wall_seconds"])
                     for r in data.get("resumed_from", [])]
            cpu = "; %.0f s of CPU" % data["cpu_seconds"] if data.get("cpu_seconds", 0) > 1 else ""
            print("### %s%s\n\n%s`%s` (%s, wall %.0f s%s%s)\n\n%s\n" % (
                name, " (quick)" if data["quick"] else "", "".join(parts), data["command"], data["machine"],
                data["wall_seconds"], cpu, "" if data["complete"] else ", INTERRUPTED: partial", module.markdown(data)))
        return
    rec = Record(stem + ".json", name, args.quick, argv, resume=args.resume)
    t0 = time.perf_counter()
    try:
        module.run(args, rec)
        rec.finish()
    finally:
        rec.save()
        say("%s: %.0f s, numbers in %s.json" % (name, time.perf_counter() - t0, stem))
    module.plot(rec.data, stem + ".png")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    names = list(REPRODUCTIONS) if args.name == "all" else [args.name]
    failed = []
    t0 = time.perf_counter()
    for name in names:
        say("== %s%s" % (name, " (quick)" if args.quick else ""))
        try:
            run_one(name, args, argv)
        except MissingData as exc:
            print("%s: %s" % (name, exc), file=sys.stderr)
            failed.append(name)
    if len(names) > 1:
        say("%s: %.0f s of wall time in all" % (args.name, time.perf_counter() - t0))
    if failed:
        print("not run (missing data): %s" % ", ".join(failed), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
