"""Benchmark: the batched BLAS full softmax (``batch_size=``) against the per-example full-softmax kernel.

Two drivers, the same model and data for every row:

* ``windows``: skip-gram on the first ``--tokens`` words of ``corpora/gcide.txt.gz`` (all their words up to
  the ``--vocab`` most common), window 3, no subsampling, dim ``--dim``, one epoch;
* ``pairs``: ml-100k next-item pairs (ratings >= 4, window 3, the training split), dim ``--dim``, one epoch.

The per-example kernel runs on ``--kernel-tokens`` words only (it is the slow one);
examples/s is the report's examples over its training seconds.  The default learning rate (0.05 for
Word2Vec, 0.025 for ItemEmbedding) is kept; a batch's updates add up, so batches much larger than 256 need a
smaller one (at 1024 skip-gram diverges at 0.05).  The loss of the epoch is shown so a batch
size that learns less per example is visible.  Nothing is asserted: timings depend on the machine.

Usage::

    python -m eval.bench.full_batch [--batch-sizes 1 64 256 1024] [--workers 2] [--json out.json]
"""
import argparse
import gzip
import itertools
import json
import os
import sys

from embkit import ItemEmbedding, Word2Vec
from eval.bench.items import load_split
from eval.paths import shared_data


SENTENCE = 1000    # words per sentence of the benchmark corpus


def read_words(path, n_words, sentence=1000):
    """The first ``n_words`` words of a text file, as sentences of ``sentence`` words."""
    opener = gzip.open if path.endswith(".gz") else open
    words = []
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            words.extend(line.split())
            if len(words) >= n_words:
                break
    words = words[:n_words]
    return [words[i:i + sentence] for i in range(0, len(words), sentence)]


def time_windows(corpus, n_sentences, vocab, dim, workers, batch_size):
    """Skip-gram with the vocabulary of ``corpus``, trained one epoch on its first ``n_sentences``."""
    model = Word2Vec(sg=1, loss="full_softmax", negative=0, vector_size=dim, window=3, min_count=1,
                     max_final_vocab=vocab, sample=0, epochs=1, workers=workers, batch_size=batch_size, seed=1)
    model.build_vocab(corpus)
    part = corpus[:n_sentences]
    model.train(part, total_examples=len(part), epochs=1)
    rep = model.last_report
    return dict(driver="windows", classes=len(model.vocab), batch_size=batch_size, examples=rep.examples,
                seconds=rep.seconds, examples_per_s=rep.examples / max(rep.seconds, 1e-9),
                loss=rep.epoch_loss[0])


def time_pairs(train, dim, workers, batch_size):
    model = ItemEmbedding(loss="full_softmax", vector_size=dim, epochs=1, workers=workers, batch_size=batch_size,
                          seed=1, progress=False).fit(train)
    rep = model.last_report
    return dict(driver="pairs", classes=train.n_items, batch_size=batch_size, examples=rep.examples,
                seconds=rep.seconds, examples_per_s=rep.examples / max(rep.seconds, 1e-9), loss=rep.epoch_loss[0])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tokens", type=int, default=100_000,
                   help="gcide words: the vocabulary and the batched runs")
    p.add_argument("--kernel-tokens", type=int, default=20_000, help="the first words of those, for the per-example kernel")
    p.add_argument("--vocab", type=int, default=15_000)
    p.add_argument("--dim", type=int, default=100)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch-sizes", type=int, nargs="+", default=[64, 256])
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    rows = []
    gcide = shared_data("corpora", "gcide.txt.gz")
    if not os.path.exists(gcide):
        sys.exit("missing %s: set EMBKIT_SHARED_DATA to the folder holding corpora/gcide.txt.gz" % gcide)
    corpus = read_words(gcide, args.tokens, SENTENCE)
    rows.append(time_windows(corpus, args.kernel_tokens // SENTENCE, args.vocab, args.dim, args.workers, None))
    for b in args.batch_sizes:
        rows.append(time_windows(corpus, len(corpus), args.vocab, args.dim, args.workers, b))
    _, (train, _, _) = load_split("ml-100k", 3)
    for b in [None] + list(args.batch_sizes):
        rows.append(time_pairs(train, args.dim, args.workers, b))
    print("| driver | classes | batch size | examples | seconds | examples/s | speed-up | mean loss |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for driver, group in itertools.groupby(rows, key=lambda r: r["driver"]):
        group = list(group)
        base = group[0]["examples_per_s"]
        for r in group:
            print("| %s | %d | %s | %d | %.1f | %.0f | %.1fx | %.3f |" % (
                r["driver"], r["classes"], r["batch_size"] or "per-example kernel", r["examples"], r["seconds"],
                r["examples_per_s"], r["examples_per_s"] / base, r["loss"]))
    print("\ncommand: python -m eval.bench.full_batch %s" % " ".join(argv if argv is not None else sys.argv[1:]))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
