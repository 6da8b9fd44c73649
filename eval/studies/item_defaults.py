"""Which ItemEmbedding configuration recommends best: the evidence behind its defaults, on validation items only.

The split is that of ``eval.bench.recommend`` (leave-one-out on MovieLens ratings >= 4; the test items are
never looked at here).  Each configuration is trained on the training timelines' pairs with
``fit(validation=...)`` (the best epoch by validation NDCG@10 kept; with ``--patience``, stopping after that
many epochs without improvement) and its validation Hit@10, NDCG@10 and MPR are measured for every recency of
``--recency`` (the tables do not change with it).  A configuration is a window, the pairs' directions and
ItemEmbedding parameters; each stage varies one group of them around ``--base`` (the defaults unless given).
Every run also ranks all items by cosine to each validation user's last item in each vector space (context,
target, both), which is how well ``similar_items`` finds what comes next.  The scores include the count
blend with the weight ``fit`` chose on the same validation items at the model's recency (``--base
'{"count_weight": 0}'`` measures the embedding alone; the stage ``blend`` compares the embedding alone with
the blend of the raw and of the cosine-normalised counts, ``count_norm``).

Usage::

    python -m eval.studies.item_defaults [--data ml-100k ml-latest-small] [--seeds 1 2] [--stage objective]
                                         [--window 3 5] [--base '{"epochs": 30}'] [--json PATH]
    python -m eval.studies.item_defaults --markdown PATH     # the table of the results in PATH
"""
import argparse
import json
import sys
import time

import numpy as np

from embkit import ItemEmbedding
from embkit.evaluation import evaluate_next_items
from embkit.items.cooccurrence import DEFAULT_DIRECTIONS, DEFAULT_WINDOW, DIRECTIONS, PairCounts
from embkit.items.count_blend import COUNT_NORMS, COUNT_WEIGHTS, blend_counts
from embkit.items.recommender import SPACES
from eval.bench.recommend import load

#: Random halvings of the validation users behind :func:`cross_fitted_blend`.
CROSS_FIT_REPEATS = 5
#: stage -> configurations ``(window, parameters)`` on top of the defaults: ItemEmbedding parameters, and
#: ``directions`` for ``PairCounts.from_timelines``.
STAGES = {
    "objective": [(None, dict(loss=loss, sampler=sampler, **extra))
                  for loss, sampler, extra in (("sgns", "unigram", {}), ("relaxed_softmax", "uniform", {}),
                                               ("sampled_softmax", "unigram", {}),
                                               ("sampled_softmax", "unigram", {"sampler_params": {"ns_exponent": 1.0}}),
                                               ("nce", "unigram", {}))],
    "directions": [(w, dict(directions=d)) for d in DIRECTIONS for w in (2, 3, 5)],
    "negatives": [(None, dict(negative=k, alpha=a)) for k in (5, 10, 20) for a in (0.0125, 0.025, 0.05)],
    "epochs": [(None, dict(epochs=e)) for e in (10, 20, 30, 50)],
    "size": [(None, dict(vector_size=d)) for d in (32, 64, 100, 200)],
    # the embedding alone against the count weight chosen on validation (every weight's score is kept), with
    # the counts prepared each way of COUNT_NORMS
    "blend": [(None, dict(count_weight=0.0))] + [(None, dict(count_norm=norm)) for norm in COUNT_NORMS],
    "defaults": [(None, {})],
}


def similar_items_quality(model, held_out):
    """Validation Hit@10, NDCG@10 and MPR of ranking every item by cosine to the user's last item, per space
    (how well ``similar_items`` finds what comes next)."""
    _, seen, targets = model._held_out_queries(held_out)
    last = model.item_index(held_out.item_ids[held_out.items[held_out.offsets[1:] - 1]])
    out = {}
    for space in SPACES:
        vectors = model._space_vectors(space)
        unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        r = evaluate_next_items((unit[last], unit), targets, seen, ks=(10,))
        out[space] = {"hit": r.hit[10], "ndcg": r.ndcg[10], "mpr": r.mpr}
    return out


def cross_fitted_blend(model, counts, held_out, repeats=CROSS_FIT_REPEATS):
    """Validation Hit@10, NDCG@10 and MPR of the count weight chosen on other users: the users are halved at
    random, the weight of :data:`~embkit.items.count_blend.COUNT_WEIGHTS` with the best NDCG@10 on one half
    scores the other, both ways; the mean over ``repeats`` halvings (fixed seeds), at the model's recency.

    ``fit`` chooses the weight on the users it is then scored on, which favours the configurations with more
    freedom; this measures what the choice is worth on users it did not see.  None for a model whose weight
    was given (``count_weight``).
    """
    if model.count_weight is not None:
        return None
    weights, seen, targets = model._held_out_queries(held_out)
    kept = model.pair_counts
    model.pair_counts = blend_counts(counts.matrix, model.count_norm)
    try:
        def metrics(users, weight):
            r = model._evaluate_held_out(weights[users], seen[users], targets[users], (10,), held_out.name, weight)
            return np.array([r.hit[10], r.ndcg[10], r.mpr])
        totals = []
        for seed in range(repeats):
            order = np.random.default_rng(seed).permutation(len(targets))
            halves = (order[:len(order) // 2], order[len(order) // 2:])
            total = 0
            for choose_on, score_on in (halves, halves[::-1]):
                best = max(COUNT_WEIGHTS, key=lambda w: metrics(choose_on, w)[1])   # the first of equals
                total = total + len(score_on) * metrics(score_on, best)
            totals.append(total / len(targets))
    finally:
        model.pair_counts = kept
    return dict(zip(("hit", "ndcg", "mpr"), np.mean(totals, axis=0).tolist()))


def run(timelines_split, window, params, seed, workers, recencies, patience):
    start = time.perf_counter()
    params = dict(params)
    counts = PairCounts.from_timelines(timelines_split.train, window=window,
                                       directions=params.pop("directions", DEFAULT_DIRECTIONS))
    model = ItemEmbedding(**dict(params, seed=seed, workers=workers, progress=False))
    model.fit(counts, validation=timelines_split.validation, patience=patience or None)
    seconds = time.perf_counter() - start
    cross_fitted = cross_fitted_blend(model, counts, timelines_split.validation)
    by_recency = {}
    for recency in recencies:
        model.recency = recency
        r = model.evaluate(timelines_split.validation, ks=(10,))
        by_recency[str(recency)] = {"hit": r.hit[10], "ndcg": r.ndcg[10], "mpr": r.mpr}
    return dict(seconds=seconds, best_epoch=model.best_epoch, epochs_run=model.last_report.epochs,
                blend_weight=model.blend_weight, blend_history=model.blend_history, validation=by_recency,
                cross_fitted=cross_fitted,
                similar=similar_items_quality(model, timelines_split.validation))


def best_recency(runs):
    """The recency with the best mean validation NDCG@10 over seeds, and the mean metrics there."""
    recencies = list(runs[0]["validation"])
    best = max(recencies, key=lambda r: np.mean([x["validation"][r]["ndcg"] for x in runs]))
    return best, {m: np.mean([x["validation"][best][m] for x in runs]) for m in ("hit", "ndcg", "mpr")}


def _spread(values):
    """``"mean ± sd"`` of values (sd 0 for one)."""
    return "%.2f ± %.2f" % (np.mean(values), np.std(values, ddof=1) if len(values) > 1 else 0.0)


def markdown(results):
    """Markdown table of study rows: one line per configuration, the validation metrics of each dataset at
    its best recency, and the similar-items NDCG@10 of each space."""
    names = list(dict.fromkeys(row["data"] for row in results))
    configs = list(dict.fromkeys((row["stage"], row["window"], json.dumps(row["params"], sort_keys=True))
                                 for row in results))
    head = "| stage | window | parameters | " + " | ".join(
        "%s Hit@10 / NDCG@10 / MPR (recency) | %s similar items NDCG@10 (%s)" % (n, n, ", ".join(SPACES))
        for n in names) + " |"
    lines = [head, "|" + "---|" * (3 + 2 * len(names))]
    for stage, window, params in configs:
        cells = []
        for name in names:
            row = next((r for r in results if (r["stage"], r["window"], json.dumps(r["params"], sort_keys=True),
                                               r["data"]) == (stage, window, params, name)), None)
            if row is None:
                cells += ["-", "-"]
                continue
            recency, mean = best_recency(row["runs"])
            cells.append("%.2f / %.2f / %.2f (%s)" % (100 * mean["hit"], 100 * mean["ndcg"], 100 * mean["mpr"],
                                                      recency))
            cells.append(" / ".join("%.2f" % (100 * np.mean([x["similar"][sp]["ndcg"] for x in row["runs"]]))
                                    for sp in SPACES))
        lines.append("| %s | %s | `%s` | %s |" % (stage, window, params, " | ".join(cells)))
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", nargs="+", default=["ml-100k", "ml-latest-small"])
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--stage", choices=sorted(STAGES), default="objective")
    p.add_argument("--window", type=int, nargs="+", default=[DEFAULT_WINDOW],
                   help="windows of the stages that do not set theirs")
    p.add_argument("--base", type=json.loads, default={}, metavar="JSON",
                   help="ItemEmbedding parameters under every configuration's own (default: the defaults)")
    p.add_argument("--patience", type=int, default=0, help="0: run every epoch (the best is kept)")
    p.add_argument("--recency", type=float, nargs="+", default=[1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.3])
    p.add_argument("--json", default=None, help="append the results to this JSON file (a list)")
    p.add_argument("--markdown", default=None, metavar="JSON",
                   help="print the table of a results file written by --json, and run nothing")
    args = p.parse_args(argv)
    if args.markdown:
        with open(args.markdown) as fh:
            print(markdown(json.load(fh)))
        return 0
    splits = {name: load(name)[1] for name in args.data}
    results = []
    configs = [(w, dict(args.base, **params)) for window, params in STAGES[args.stage]
               for w in ([window] if window else args.window)]
    for window, params in configs:
        for name, split in splits.items():
            runs = [run(split, window, params, seed, args.workers, args.recency, args.patience)
                    for seed in args.seeds]
            row = dict(stage=args.stage, data=name, window=window, params=params, runs=runs)
            results.append(row)
            best, mean = best_recency(runs)
            similar = " ".join("%s %.2f" % (space, 100 * np.mean([x["similar"][space]["ndcg"] for x in runs]))
                               for space in SPACES)
            print("%-16s w %-3s %-70s recency %-4s Hit@10 %.2f NDCG@10 %.2f MPR %.2f | %.1f s, best epoch %s, "
                  "count weight %s | similar-items NDCG@10: %s"
                  % (name, row["window"], json.dumps(params), best, 100 * mean["hit"], 100 * mean["ndcg"],
                     100 * mean["mpr"], np.mean([x["seconds"] for x in runs]),
                     "/".join(str(x["best_epoch"]) for x in runs), "/".join("%g" % x["blend_weight"] for x in runs),
                     similar), flush=True)
            if all(x["cross_fitted"] for x in runs):
                print("%-16s   the count weight chosen on other validation users, mean ± sd over seeds: %s"
                      % (name, "  ".join("%s %s" % (label, _spread([100 * x["cross_fitted"][m] for x in runs]))
                                         for label, m in (("Hit@10", "hit"), ("NDCG@10", "ndcg"), ("MPR", "mpr")))),
                      flush=True)
    if args.json:
        try:
            with open(args.json) as fh:
                previous = json.load(fh)
        except FileNotFoundError:
            previous = []
        with open(args.json, "w") as fh:
            json.dump(previous + results, fh, indent=1, default=float)
    return 0


if __name__ == "__main__":
    sys.exit(main())
