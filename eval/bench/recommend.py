"""Leave-one-out next-item recommendation on MovieLens: embkit's defaults against implicit, gensim and baselines.

For each dataset the ratings >= 4 stars are ordered by time per user and split leave-one-out
(:func:`embkit.items.leave_one_out.leave_one_out`): each user's last item is the test item, the one before
it the validation item.  Every method ranks all items for each test user, with the user's seen items
filtered, and is scored by Hit@10, NDCG@10 and MPR over all unseen items
(:func:`embkit.evaluation.evaluate_next_items`), in the same run, on the same split.

* **embkit**: ``ItemEmbedding`` with its defaults, as the README runs it: pairs of the training timelines
  (``PairCounts.from_timelines`` with its defaults), ``fit(validation=...)`` keeping the best epoch by
  validation NDCG@10 and the count blend's weight chosen on the validation items, the test users' histories
  scored with the default recency weighting.  A second row refits it on the timelines with the validation
  items for the number of epochs and with the count weight validation chose (its seconds count both fits),
  the data the peers' test fits see.
* **peers** (:mod:`eval.peers.next_items`): popularity, item-item co-occurrence, gensim SGNS (item2vec),
  implicit ALS and BPR, LightFM WARP when it is installed.  Their hyper-parameters are picked on the
  validation items (every combination of ``GRIDS``, fitted on the training timelines, first seed); the test
  runs are then fitted on the timelines *with* the validation items (embkit is not: it holds them out for
  its early stopping).

Each stochastic method runs with every seed of ``--seeds``; a table gives the mean and the standard deviation
over seeds, and the training seconds (embkit: counting the pairs and ``fit``, its per-epoch validation
included; peers: their fit) on ``--workers`` threads.

Usage::

    python -m eval.bench.recommend [--data ml-100k ml-latest-small] [--seeds 1 2 3] [--workers 2]
                                   [--json eval/results/recommend.json]
"""
import argparse
import datetime
import importlib
import itertools
import json
import os
import platform
import sys
import time

import numpy as np

from embkit import ItemEmbedding
from embkit.evaluation import evaluate_next_items
from embkit.items.cooccurrence import PairCounts
from embkit.items.histories import history_matrix
from embkit.items.leave_one_out import leave_one_out
from embkit.items.timelines import load_timelines
from eval.paths import shared_data
from eval.peers.next_items import GRIDS, PEERS, Split, fit_peer

#: The cut-off of the reported Hit@k and NDCG@k.
K = 10
#: Peers whose results do not depend on the seed.
DETERMINISTIC = ("popularity", "cooccurrence")


def load(name):
    """Timelines of a dataset (the shared data folder first, else a path or a registered name) and its split."""
    path = shared_data("movielens", name)
    timelines = load_timelines(path if os.path.isdir(path) else name)
    return timelines, leave_one_out(timelines)


def metrics(result):
    return {"hit": result.hit[K], "ndcg": result.ndcg[K], "mpr": result.mpr}


def score(scores, held_out, n_items):
    """Leave-one-out metrics of a peer's score function on a held-out set (seen items filtered)."""
    _, seen = history_matrix(held_out.histories(), n_items, 1.0)
    return metrics(evaluate_next_items(scores, held_out.targets, seen, ks=(K,), n_items=n_items))


def run_embkit(split, seed, workers, params, train_val=None):
    """embkit's defaults on ``split``; with ``train_val`` (the timelines with the validation items), also
    refitted on them for the epochs that validation chose, as the peers' test fits see those items too."""
    start = time.perf_counter()
    counts = PairCounts.from_timelines(split.train)
    model = ItemEmbedding(seed=seed, workers=workers, progress=False, **params)
    model.fit(counts, validation=split.validation)
    seconds = time.perf_counter() - start
    run = dict(metrics(model.evaluate(split.test, ks=(K,))), seconds=seconds, best_epoch=model.best_epoch,
               epochs_run=model.last_report.epochs, blend_weight=model.blend_weight)
    if train_val is None:
        return run
    start = time.perf_counter()
    again = ItemEmbedding(**dict(params, seed=seed, workers=workers, progress=False, epochs=model.best_epoch,
                                 count_weight=model.blend_weight))
    again.fit(PairCounts.from_timelines(train_val))
    refit = dict(metrics(again.evaluate(split.test, ks=(K,))), seconds=seconds + time.perf_counter() - start,
                 epochs=model.best_epoch, blend_weight=model.blend_weight)
    return run, refit


def _user_rows(timelines, held_out):
    return np.searchsorted(timelines.users, held_out.users)


def tune(name, timelines, split, seed, workers):
    """The grid point of peer ``name`` with the best validation NDCG@10, and every point's scores."""
    data = Split(split.train, split.validation, _user_rows(timelines, split.validation))
    grid = GRIDS[name]
    tried = []
    for values in itertools.product(*grid.values()):
        params = dict(zip(grid, values))
        scores, _ = fit_peer(name, data, params, seed, workers)
        tried.append(dict(params=params, validation=score(scores, data.held_out, data.n_items)))
    best = max(tried, key=lambda t: t["validation"]["ndcg"])
    return best["params"], tried


def run_dataset(name, args):
    timelines, split = load(name)
    train_val = leave_one_out(timelines, validation=False).train
    test = Split(train_val, split.test, _user_rows(timelines, split.test))
    print("\n## %s: %s; %d validation users, %d test users" % (name, timelines.stats(), len(split.validation),
                                                                len(split.test)), flush=True)
    rows = []
    params = dict(ItemEmbedding(**args.embkit).get_params())
    both = [run_embkit(split, seed, args.workers, args.embkit, train_val) for seed in args.seeds]
    rows.append(dict(method="embkit (defaults)", params=params, runs=[run for run, _ in both]))
    _say(rows[-1])
    rows.append(dict(method="embkit, refit on train + validation", params=params, runs=[run for _, run in both]))
    _say(rows[-1])
    for peer in args.peers:
        params, tried = tune(peer, timelines, split, args.seeds[0], args.workers)
        seeds = args.seeds[:1] if peer in DETERMINISTIC else args.seeds
        runs = []
        for seed in seeds:
            scores, seconds = fit_peer(peer, test, params, seed, args.workers)
            runs.append(dict(score(scores, test.held_out, test.n_items), seconds=seconds))
        rows.append(dict(method=PEERS[peer][1], params=params, runs=runs, tuning=tried))
        _say(rows[-1])
    return dict(data=name, stats=str(timelines.stats()), validation_users=len(split.validation),
                test_users=len(split.test), rows=rows)


def _summary(row, key):
    values = np.array([run[key] for run in row["runs"]], dtype=float)
    return values.mean(), values.std(ddof=1) if len(values) > 1 else 0.0


def _cell(row, key, scale=100.0, digits=2):
    mean, sd = _summary(row, key)
    return "%.*f ± %.*f" % (digits, scale * mean, digits, scale * sd)


def _say(row):
    print("  %-26s Hit@%d %s  NDCG@%d %s  MPR %s  train %s s" % (row["method"], K, _cell(row, "hit"), K,
                                                                  _cell(row, "ndcg"), _cell(row, "mpr"),
                                                                  _cell(row, "seconds", 1.0)), flush=True)


def _params_text(row):
    weights = "/".join("%g" % run["blend_weight"] for run in row["runs"] if "blend_weight" in run)
    if row["method"].startswith("embkit,"):
        return "the defaults, epochs and count weight those of the row above (%s; %s)" % (
            "/".join(str(run["epochs"]) for run in row["runs"]), weights)
    if row["method"].startswith("embkit"):
        keep = ("loss", "sampler", "negative", "epochs", "alpha", "vector_size", "recency", "count_norm")
        if row["params"].get("count_weight") is not None:
            keep += ("count_weight",)
        elif weights:
            return ", ".join("%s=%s" % (k, row["params"][k]) for k in keep) + (
                ", count weight chosen on validation: %s" % weights)
        return ", ".join("%s=%s" % (k, row["params"][k]) for k in keep)
    return ", ".join("%s=%s" % kv for kv in row["params"].items()) or "-"


def table(result):
    """Markdown table of one dataset: mean ± sd over seeds of every metric and of the training seconds."""
    lines = ["| method | Hit@%d (%%) | NDCG@%d (%%) | MPR (%%) | train s | seeds | parameters |" % (K, K),
             "|---|---:|---:|---:|---:|---:|---|"]
    for row in result["rows"]:
        lines.append("| %s | %s | %s | %s | %s | %d | %s |" % (
            row["method"], _cell(row, "hit"), _cell(row, "ndcg"), _cell(row, "mpr"), _cell(row, "seconds", 1.0),
            len(row["runs"]), _params_text(row)))
    return "\n".join(lines)


def _available(peers):
    found = []
    for peer in peers:
        module = PEERS[peer][2]
        try:
            if module:
                importlib.import_module(module)
            found.append(peer)
        except ImportError:
            print("(%s is not installed: %s left out)" % (module, PEERS[peer][1]), flush=True)
    return found


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", nargs="+", default=["ml-100k", "ml-latest-small"])
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--peers", nargs="+", default=list(PEERS), choices=list(PEERS))
    p.add_argument("--embkit", type=json.loads, default={}, metavar="JSON",
                   help="ItemEmbedding parameters on top of its defaults (default: none)")
    p.add_argument("--json", default=None, help="write the results here")
    args = p.parse_args(argv)
    args.peers = _available(args.peers)
    command = "python -m eval.bench.recommend %s" % " ".join(sys.argv[1:] if argv is None else argv)
    print("command: %s (%s, %s, %d CPUs)" % (command.strip(), datetime.date.today(), platform.machine(),
                                            os.cpu_count() or 1), flush=True)
    results = [run_dataset(name, args) for name in args.data]
    for res in results:
        print("\n### %s (%d test users)\n" % (res["data"], res["test_users"]))
        print(table(res))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(dict(command=command.strip(), date=str(datetime.date.today()), workers=args.workers,
                           seeds=args.seeds, results=results), fh, indent=1, default=float)
    return 0


if __name__ == "__main__":
    sys.exit(main())
