"""Analysis: one round of ``n`` replicas against one process training the same words, per frequency band.

The cluster's merge has to turn ``n`` replicas' deltas of a row into the step one process would have made with
all their words.  This script makes one such round by hand, in one process: a skip-gram model (dim 100,
window 5, 5 negatives, sample 1e-3, alpha 0.05 decaying over ``--epochs``) trains ``--warm`` epochs of the
corpus; then ``n`` copies of its tables each train a slice of ``--words`` words (consecutive lines taken from
``n`` evenly spaced places, as the cluster's shards of consecutive lines give them) at the learning rate of
that point, and ``--truths`` more copies each train all ``n`` slices, their lines shuffled with different
seeds (one process's round, in several orders).  For the rows of each band of frequency ranks it reports, for
one process's step ``T`` (the first truth) and for candidate merges of the replicas' deltas ``d_i`` (the sum
``S``, the mean ``S / n``, the agreement-weighted ``r S`` with ``r = sum_i |d_i|^2 / |S|^2`` clipped to
``[1/n, 1]``, and ``w S``, the part of the step the merge applies at once):

    drift    the projection on the drift (the mean of the other truths), over the drift's squared norm:
             1 moves the band as far as one process along where one process goes (the noise of the
             drift's estimate keeps even ``T`` below 1)
    size     the norm over ``T``'s norm

Nothing is asserted: it measures what a merge rule would have to do (CLUSTER.md, "How the replicas' steps
are merged").

Usage::

    python -m eval.bench.merge_oracle --corpus gcide.txt --replicas 8 --warm 1
"""
import argparse
import gzip
import json
import sys
import time

import numpy as np

from eval.bench.word2vec import default_corpus

SETTINGS = dict(sg=1, vector_size=100, window=5, negative=5, sample=1e-3, min_count=5, workers=1)
BANDS = (0, 10, 100, 300, 1000, 3000, 10000, 30000)


def _slices(sentences, replicas, words):
    """``replicas`` runs of consecutive sentences of about ``words`` words, from evenly spaced places."""
    lengths = np.array([len(s) for s in sentences])
    count = len(sentences)
    out = []
    for i in range(replicas):
        start = i * count // replicas + count // (3 * replicas)
        stop = start + int(np.searchsorted(np.cumsum(lengths[start:]), words))
        out.append(sentences[start:stop])
    return out


def round_steps(corpus, replicas=8, warm=1, epochs=5, words=75000, truths=5, alpha=0.05, seed=1):
    """The deltas of both tables: ``(replicas' deltas, truths' deltas)``, each a list of ``(W_in, W_out)``."""
    from embkit import Word2Vec

    with (gzip.open if corpus.endswith(".gz") else open)(corpus, "rt", encoding="utf-8") as f:
        sentences = [line.split() for line in f if line.strip()]
    model = Word2Vec(alpha=alpha, seed=seed, **SETTINGS)
    model.build_vocab(sentences)
    rate = alpha * (1 - warm / epochs)
    if warm:
        model.train(sentences, total_examples=len(sentences), epochs=warm, start_alpha=alpha, end_alpha=rate)
    start = (model.W_in.copy(), model.W_out.copy())

    def train(data, run_seed):
        model.W_in[:], model.W_out[:] = start
        model.seed = run_seed
        model.train(data, total_examples=len(data), epochs=1, start_alpha=rate, end_alpha=rate)
        return model.W_in - start[0], model.W_out - start[1]

    slices = _slices(sentences, replicas, words)
    deltas = [train(s, seed) for s in slices]
    joined = [s for part in slices for s in part]
    ones = []
    for k in range(truths):
        order = list(joined)
        np.random.default_rng(k).shuffle(order)
        ones.append(train(order, seed + 1 + k))
    return deltas, ones


def compare(deltas, ones, bands=BANDS):
    """Per table and band: ``{rule: (drift, size)}`` (see the module docstring)."""
    n = len(deltas)
    out = {}
    for t, name in enumerate(("W_in", "W_out")):
        d = np.stack([x[t] for x in deltas])
        total = d.sum(0)
        squares = (d * d).sum((0, 2))
        ratio = np.clip(squares / np.maximum((total * total).sum(1), 1e-30), 1.0 / n, 1.0)
        share = (ratio - 1.0 / n) / (1 - 1.0 / n)
        one = ones[0][t]
        drift = sum(x[t] for x in ones[1:]) / max(len(ones) - 1, 1)
        rules = {"one process": one, "sum": total, "mean": total / n, "r S": total * ratio[:, None],
                 "w S": total * share[:, None]}
        rows = []
        edges = list(bands) + [len(one)]
        for a, b in zip(edges[:-1], edges[1:]):
            if a >= len(one):
                break
            band = slice(a, b)
            dr = drift[band]
            norm = np.sqrt((one[band] ** 2).sum())
            rows.append({"ranks": [a, min(b, len(one))],
                         "replicas_per_row": float((np.abs(d[:, band]).sum(2) > 0).sum(0).mean()),
                         **{rule: [float((v[band] * dr).sum() / (dr * dr).sum()),
                                   float(np.sqrt((v[band] ** 2).sum()) / norm)] for rule, v in rules.items()}})
        out[name] = rows
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default=None)
    ap.add_argument("--replicas", type=int, default=8)
    ap.add_argument("--warm", type=int, default=1, help="epochs trained before the round")
    ap.add_argument("--epochs", type=int, default=5, help="the run's epochs (the learning rate's schedule)")
    ap.add_argument("--words", type=int, default=75000, help="words of each replica's slice")
    ap.add_argument("--truths", type=int, default=5, help="one-process runs of the round, in different orders")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    if args.truths < 2 or args.replicas < 2:
        ap.error("--truths and --replicas must be at least 2 (one truth is compared with the drift of the others)")
    corpus = args.corpus or default_corpus()
    deltas, ones = round_steps(corpus, args.replicas, args.warm, args.epochs, args.words, args.truths)
    result = compare(deltas, ones)
    for name, rows in result.items():
        rules = [k for k in rows[0] if k not in ("ranks", "replicas_per_row")]
        print("%s: drift / size of each rule" % name)
        print("| ranks | replicas a row | " + " | ".join(rules) + " |")
        print("|---|---:|" + "---:|" * len(rules))
        for row in rows:
            print("| %d-%d | %.1f | " % (row["ranks"][0], row["ranks"][1], row["replicas_per_row"])
                  + " | ".join("%.2f / %.2f" % tuple(row[r]) for r in rules) + " |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": "python -m eval.bench.merge_oracle " + " ".join(argv or sys.argv[1:]),
                       "date": time.strftime("%Y-%m-%d"), "replicas": args.replicas, "warm": args.warm,
                       "words": args.words, "bands": result}, f,
                      indent=1)


if __name__ == "__main__":
    main()
