"""What gensim-style callbacks and loss reporting cost: training throughput with and without them.

Skip-gram (dim 100, window 5, 5 negatives, sample 1e-3, min_count 5) on the shared data folder's
``corpora/gcide.txt.gz`` by default, the vocabulary built once; then, interleaved ``--repeats`` times:

``plain``
    ``train`` with no callbacks and ``compute_loss=False``.
``loss+callbacks``
    ``compute_loss=True`` and a ``CallbackAny2Vec``-style object with all six methods, which reads
    ``get_latest_training_loss()`` after every chunk and every epoch (gensim's loss-logging idiom).

The kernel accumulates the loss in both (it is a by-product of the gradient), so the difference is what the
callbacks and the loss bookkeeping cost.  Prints words/s (mean and spread) and the overhead; asserts nothing.

Usage::

    python -m eval.bench.callbacks [--corpus FILE] [--epochs 2] [--workers 2] [--repeats 3] [--json out.json]
"""
import argparse
import json
import os
import shlex
import statistics
import sys

from embkit import Word2Vec
from eval.bench.word2vec import default_corpus


class LossLogger:
    """gensim's usual loss-logging callback, with every hook of ``CallbackAny2Vec``."""

    def __init__(self):
        self.batch_losses, self.epoch_losses = [], []

    def on_train_begin(self, model):
        pass

    def on_epoch_begin(self, model):
        pass

    def on_batch_begin(self, model):
        pass

    def on_batch_end(self, model):
        self.batch_losses.append(model.get_latest_training_loss())

    def on_epoch_end(self, model):
        self.epoch_losses.append(model.get_latest_training_loss())

    def on_train_end(self, model):
        pass


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", default=default_corpus())
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json", default=None, metavar="FILE")
    args = p.parse_args(argv)
    model = Word2Vec(vector_size=100, window=5, negative=5, sample=1e-3, min_count=5, sg=1, workers=args.workers,
                     epochs=args.epochs, seed=1)
    model.build_vocab(corpus_file=args.corpus)
    rates = {"plain": [], "loss+callbacks": []}
    for repeat in range(args.repeats):
        for name in rates:                           # interleaved, so load changes hit both alike
            model.prepare_weights()                  # fresh tables each run
            logger = LossLogger()
            model.train(corpus_file=args.corpus, total_examples=model.corpus_count, epochs=args.epochs,
                        compute_loss=name != "plain", callbacks=[logger] if name != "plain" else ())
            report = model.last_report
            rates[name].append(report.words_per_second)
            print("repeat %d %-15s %9.0f words/s  epoch losses %s" % (
                repeat + 1, name, report.words_per_second, ["%.4f" % v for v in model.loss_history[-args.epochs:]]))
    rows = {name: {"mean": statistics.mean(v), "sd": statistics.stdev(v) if len(v) > 1 else 0.0, "runs": v}
            for name, v in rates.items()}
    overhead = 100.0 * (1 - rows["loss+callbacks"]["mean"] / rows["plain"]["mean"])
    print("\n| run | words/s (mean ± sd, %d runs) |\n|---|---:|" % args.repeats)
    for name, row in rows.items():
        print("| %s | %.0f ± %.0f |" % (name, row["mean"], row["sd"]))
    print("\noverhead of loss reporting and callbacks: %.1f%%" % overhead)
    command = "python -m eval.bench.callbacks " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    print("command: %s" % command.strip())
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rows": rows, "overhead_percent": overhead, "command": command.strip(),
                       "load": os.getloadavg()}, fh, indent=1)


if __name__ == "__main__":
    main()
