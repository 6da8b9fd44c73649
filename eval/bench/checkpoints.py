"""Checkpoints on a real corpus: what they cost, and whether a resumed run equals an uninterrupted one.

Three measurements on skip-gram (dim 100, window 5, 5 negatives, sample 1e-3, min_count 5), by default on
the shared data folder's ``corpora/gcide.txt.gz``:

``cost``
    The same run without checkpoints and with one every ``--every`` units (``workers`` threads): training
    seconds of both, number of checkpoints, seconds and megabytes per checkpoint.
``exact``
    ``workers=1``: a run stopped by a real SIGINT (Ctrl-C) at ``--stop`` of its chunks and resumed from its
    checkpoint, against the uninterrupted run: whether the tables are bit-identical.
``quality``
    ``--workers`` threads (Hogwild, not reproducible bit for bit): for each seed the uninterrupted run and
    the stopped-and-resumed one; analogy accuracy, WS-353 and SimLex-999 Spearman, mean and spread.

Usage::

    python -m eval.bench.checkpoints [--corpus FILE] [--epochs 5] [--seeds 1 2 3] [--json out.json]
    python -m eval.bench.checkpoints --parts cost exact --epochs 1

Nothing is asserted: it prints a markdown table per part and the command line.
"""
import argparse
import json
import os
import shlex
import signal
import sys
import tempfile
import time

import numpy as np

from embkit import Word2Vec
from embkit.core.interrupts import TrainingInterrupted
from eval.bench.word2vec import default_corpus, evaluate


class _CtrlC:
    """Sends this process a SIGINT after ``at`` chunks (as a user pressing Ctrl-C)."""

    def __init__(self, at):
        self.at, self.n = at, 0

    def on_batch_end(self, model):
        self.n += 1
        if self.n == self.at:
            os.kill(os.getpid(), signal.SIGINT)


def _params(args, **extra):
    kw = dict(vector_size=100, window=5, negative=5, sample=1e-3, min_count=5, sg=1, epochs=args.epochs,
              workers=args.workers, seed=1)
    kw.update(extra)
    return kw


def _train(corpus, **params):
    model = Word2Vec(**params)
    model.build_vocab(corpus_file=corpus)
    model.train()
    return model


def _stopped_and_resumed(corpus, directory, stop_at, **params):
    """Train with checkpoints, stop with a real SIGINT after ``stop_at`` chunks, then resume."""
    model = Word2Vec(callbacks=[_CtrlC(stop_at)], checkpoint_dir=directory, **params)
    model.build_vocab(corpus_file=corpus)
    try:
        model.train()
        raise RuntimeError("the run finished before the interruption: lower --stop")
    except TrainingInterrupted as exc:
        print("  stopped: %s" % exc.where, flush=True)
    return Word2Vec.resume(directory)


def part_cost(args, corpus):
    plain = _train(corpus, **_params(args))
    with tempfile.TemporaryDirectory() as tmp:
        saved = _train(corpus, **_params(args, checkpoint_dir=tmp, checkpoint_every=args.every))
        ck = saved.last_checkpointer
    row = {"workers": args.workers, "train_s_plain": plain.last_report.seconds,
           "train_s_checkpoints": saved.last_report.seconds, "checkpoints": len(ck.seconds),
           "checkpoint_s_mean": float(np.mean(ck.seconds)), "checkpoint_s_max": float(np.max(ck.seconds)),
           "checkpoint_mb": ck.sizes[-1] / 1e6, "vocabulary": len(saved.wv)}
    print("| workers | train s (no checkpoints) | train s (checkpoints) | checkpoints | s per checkpoint (max) "
          "| MB each | vocabulary |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    print("| %(workers)d | %(train_s_plain).1f | %(train_s_checkpoints).1f | %(checkpoints)d | "
          "%(checkpoint_s_mean).3f (%(checkpoint_s_max).3f) | %(checkpoint_mb).1f | %(vocabulary)d |" % row)
    return row


def part_exact(args, corpus):
    params = _params(args, workers=1)
    reference = _train(corpus, **params)
    chunks = -(-reference.last_report.words // reference.chunk_tokens)      # about: chunks of the whole run
    with tempfile.TemporaryDirectory() as tmp:
        resumed = _stopped_and_resumed(corpus, tmp, max(1, int(chunks * args.stop)), **params)
    same = bool(np.array_equal(resumed.wv.vectors, reference.wv.vectors)
                and np.array_equal(resumed.syn1neg, reference.syn1neg))
    row = {"bit_identical": same, "max_abs_difference": float(np.max(np.abs(resumed.wv.vectors -
                                                                             reference.wv.vectors)))}
    print("workers=1, Ctrl-C after %.0f%% of the chunks, resumed: bit-identical %s (max |difference| %g)"
          % (100 * args.stop, same, row["max_abs_difference"]))
    return row


def part_quality(args, corpus):
    rows = []
    for seed in args.seeds:
        params = _params(args, seed=seed)
        reference = _train(corpus, **params)
        chunks = -(-reference.last_report.words // reference.chunk_tokens)
        with tempfile.TemporaryDirectory() as tmp:
            resumed = _stopped_and_resumed(corpus, tmp, max(1, int(chunks * args.stop)), **params)
        for kind, model in (("uninterrupted", reference), ("resumed", resumed)):
            scores = evaluate(model.wv, 30000, "embkit")
            rows.append(dict(seed=seed, run=kind, **{k: scores[k] for k in ("analogy", "ws353", "simlex999")}))
            print("  seed %d %-13s analogy %.4f  WS-353 %.4f  SimLex %.4f" % (seed, kind, scores["analogy"],
                                                                               scores["ws353"], scores["simlex999"]),
                  flush=True)
    print("| run | analogy | WS-353 | SimLex-999 |")
    print("|---|---:|---:|---:|")
    for kind in ("uninterrupted", "resumed"):
        cells = []
        for metric in ("analogy", "ws353", "simlex999"):
            values = np.array([r[metric] for r in rows if r["run"] == kind])
            cells.append("%.4f ± %.4f" % (values.mean(), values.std(ddof=1) if len(values) > 1 else 0.0))
        print("| %s (%d seeds, %d workers) | %s |" % (kind, len(args.seeds), args.workers, " | ".join(cells)))
    return rows


PARTS = {"cost": part_cost, "exact": part_exact, "quality": part_quality}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", default=default_corpus())
    p.add_argument("--parts", nargs="+", choices=sorted(PARTS), default=["cost", "exact", "quality"])
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--every", default="1M words", help="checkpoint interval of the cost part")
    p.add_argument("--stop", type=float, default=0.4, help="fraction of the chunks after which Ctrl-C comes")
    p.add_argument("--json", default=None, metavar="FILE")
    args = p.parse_args(argv)
    if not os.path.exists(args.corpus):
        sys.exit("corpus %s not found: set EMBKIT_SHARED_DATA to the shared data folder or pass --corpus"
                 % args.corpus)
    results = {"command": "python -m eval.bench.checkpoints " + " ".join(map(shlex.quote, sys.argv[1:]))}
    for name in args.parts:
        print("\n## %s\n" % name, flush=True)
        start = time.perf_counter()
        results[name] = PARTS[name](args, args.corpus)
        print("\n(%s: %.0f s)" % (name, time.perf_counter() - start), flush=True)
    print("\ncommand: %s" % results["command"])
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)


if __name__ == "__main__":
    main()
