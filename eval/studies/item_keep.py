"""Which tables ItemEmbedding keeps after validation: the best epoch's, or the mean of those from it on.

The split is that of ``eval.bench.recommend`` (leave-one-out on MovieLens ratings >= 4; the test items are
never looked at here).  ``ItemEmbedding()`` with its defaults trains on the training timelines' pairs with
``fit(validation=...)``, and every epoch's tables are recorded.  Choosing the best epoch on the users who then
score it favours the best epoch's own tables, so the comparison is cross-fitted: the validation users are
halved at random, the best epoch by NDCG@10 is chosen on one half, and the other half scores each way of
keeping tables from that epoch (both ways round, ``--repeats`` halvings), at the count weight ``fit`` chose.

Usage::

    python -m eval.studies.item_keep [--data ml-100k ml-latest-small] [--seeds 1 2 3] [--json PATH]
"""
import argparse
import json
import sys

import numpy as np

from embkit import ItemEmbedding
from embkit.items.cooccurrence import PairCounts
from eval.bench.recommend import load

#: way of keeping tables -> the epochs (1-based) whose tables are averaged, given the best and the last
WAYS = {"best": lambda best, last: range(best, best + 1),
         "average from the best": lambda best, last: range(best, last + 1),
         "last 5": lambda best, last: range(max(1, last - 4), last + 1)}


class _Tables:
    """A callback recording the tables after every epoch."""

    def __init__(self):
        self.epochs = []

    def on_epoch_end(self, model):
        self.epochs.append((model.W_in.copy(), model.W_out.copy()))


def cross_fitted(split, seed, workers, repeats):
    """``{way: [Hit@10, NDCG@10, MPR]}`` on validation users the epoch was not chosen on, for one seed."""
    tables = _Tables()
    model = ItemEmbedding(seed=seed, workers=workers, progress=False, callbacks=[tables])
    model.fit(PairCounts.from_timelines(split.train), validation=split.validation, keep="best")
    weights, seen, targets = model._held_out_queries(split.validation)
    last, scored = len(tables.epochs), {}

    def metrics(epochs, users):
        key = (tuple(epochs), users.tobytes())
        if key not in scored:
            model.W_in[...] = np.mean([tables.epochs[e - 1][0] for e in epochs], axis=0)
            model.W_out[...] = np.mean([tables.epochs[e - 1][1] for e in epochs], axis=0)
            r = model._evaluate_held_out(weights[users], seen[users], targets[users], (10,), "validation",
                                         model.blend_weight)
            scored[key] = np.array([r.hit[10], r.ndcg[10], r.mpr])
        return scored[key]

    totals = {way: 0 for way in WAYS}
    for repeat in range(repeats):
        order = np.random.default_rng([seed, repeat]).permutation(len(targets))
        halves = (np.sort(order[:len(order) // 2]), np.sort(order[len(order) // 2:]))
        for choose_on, score_on in (halves, halves[::-1]):
            best = max(range(1, last + 1), key=lambda e: metrics([e], choose_on)[1])
            for way, epochs in WAYS.items():
                totals[way] = totals[way] + len(score_on) * metrics(list(epochs(best, last)), score_on)
    return {way: (total / (repeats * len(targets))).tolist() for way, total in totals.items()}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", nargs="+", default=["ml-100k", "ml-latest-small"])
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--repeats", type=int, default=4, help="random halvings of the validation users per seed")
    p.add_argument("--json", default=None, help="write the results to this JSON file")
    args = p.parse_args(argv)
    results = {}
    print("| data | tables kept | Hit@10 (%) | NDCG@10 (%) | MPR (%) |\n|---|---|---:|---:|---:|")
    for name in args.data:
        split = load(name)[1]
        runs = [cross_fitted(split, seed, args.workers, args.repeats) for seed in args.seeds]
        results[name] = runs
        for way in WAYS:
            values = 100 * np.array([run[way] for run in runs])
            print("| %s | %s | %s |" % (name, way, " | ".join(
                "%.2f ± %.2f" % (values[:, i].mean(), values[:, i].std(ddof=1) if len(values) > 1 else 0.0)
                for i in range(3))), flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"seeds": args.seeds, "repeats": args.repeats, "results": results}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
