"""Next-item prediction on MovieLens: the relaxed-softmax paper's Table 2 methods, with implicit as the peer.

For each dataset the ratings >= 4 stars are ordered by time per user, every item is paired with the next
``--window`` items of its user's timeline, and the pair occurrences are split 70/10/20 (seed 0).  Methods
(all ItemEmbedding, dim 100, same epochs and learning rate; the tables of the best validation epoch by
approximate MPR are kept):

* MLE: full softmax;  SS: sampled softmax with popularity negatives (unigram^1), 50 negatives;
* US / PS: relaxed softmax with uniform / popularity negatives, 5 negatives;
* UBS / PBS: relaxed softmax with Boltzmann negatives (uniform / popularity degeneracy), 5 negatives, for
  every T of ``--T``; T* is chosen per metric on the validation split, and the test value at T* is reported.

Peer: implicit's ALS and BPR fitted on the same training co-occurrence matrix (context items as rows),
scored with the same ranking code on the same test pairs.  The per-pair speed of the ``pairs`` driver is
compared with the word2vec skip-gram path (per-pair negatives, same dim and negatives) in the same run.

Usage::

    python -m eval.bench.items [--data ml-100k ml-latest-small] [--window 3] [--epochs 10] [--T 0.5 1 3 6 12 36]
"""
import argparse
import json
import os
import sys
import time

import numpy as np

from embkit import ItemEmbedding
from eval.paths import shared_data

#: The paper's MovieLens row of Table 2 (likelihood x 1e-4, the rest in %), T* in brackets for UBS/PBS.
PAPER = {
    "likelihood": {"MLE": 5.1, "SS": 4.5, "US": 6.0, "UBS": "6.0 (inf)", "PS": 6.5, "PBS": "6.5 (inf)"},
    "mpr": {"MLE": 91.7, "SS": 91.5, "US": 89.0, "UBS": "92.5 (6)", "PS": 92.2, "PBS": "92.1 (6)"},
    "prec50": {"MLE": 4.9, "SS": 5.5, "US": 6.1, "UBS": "7.0 (6)", "PS": 6.2, "PBS": "7.3 (6)"},
    "prec15": {"MLE": 1.3, "SS": 1.7, "US": 2.3, "UBS": "2.6 (3)", "PS": 2.2, "PBS": "3.0 (3)"},
    "prec5": {"MLE": 0.4, "SS": 0.5, "US": 0.7, "UBS": "0.7 (3)", "PS": 0.6, "PBS": "1.0 (3)"},
}
METRICS = ("likelihood", "mpr", "prec50", "prec15", "prec5")


def configs(Ts):
    """(name, T or None, ItemEmbedding keywords) of every run."""
    out = [("MLE", None, dict(loss="full_softmax")),
           ("SS", None, dict(loss="sampled_softmax", sampler="unigram", negative=50,
                             sampler_params={"ns_exponent": 1.0})),
           ("US", None, dict(loss="relaxed_softmax", sampler="uniform", negative=5)),
           ("PS", None, dict(loss="relaxed_softmax", sampler="unigram", negative=5,
                             sampler_params={"ns_exponent": 1.0}))]
    for T in Ts:
        for name, degeneracy in (("UBS", "uniform"), ("PBS", "popularity")):
            out.append((name, T, dict(loss="relaxed_softmax", sampler="boltzmann", negative=5,
                                      sampler_params={"T": T, "degeneracy": degeneracy})))
    return out


def metrics_of(result):
    return {"likelihood": result.likelihood, "mpr": result.mpr_approx, "prec50": result.precision[50],
            "prec15": result.precision[15], "prec5": result.precision[5], "mpr_exact": result.mpr}


def load_split(name, window):
    from embkit.items.cooccurrence import PairCounts
    from embkit.items.timelines import load_timelines
    path = shared_data("movielens", name)
    timelines = load_timelines(path if os.path.exists(path) else name, min_rating=4.0)
    counts = PairCounts.from_timelines(timelines, window=window, directions="forward")
    return counts, counts.split((0.7, 0.1, 0.2), seed=0)


def run_dataset(name, args):
    counts, (train, val, test) = load_split(name, args.window)
    print("\n## %s: %d items, window %s, pairs %d / %d / %d" % (name, counts.n_items, counts.window, train.total,
                                                              val.total, test.total), flush=True)
    runs = []
    for label, T, kw in configs(args.T):
        model = ItemEmbedding(vector_size=args.dim, epochs=args.epochs, alpha=args.alpha, workers=args.workers,
                              seed=args.seed, progress=False, **kw)
        model.fit(train, validation=val, metric="mpr_approx", n_negatives=100)
        rep = model.last_report
        val_best = model.history[model.best_epoch - 1]
        val_metrics = {"likelihood": val_best["likelihood"], "mpr": val_best["mpr_approx"],
                       "prec50": val_best["prec50"], "prec15": val_best["prec15"], "prec5": val_best["prec5"]}
        test_metrics = metrics_of(model.evaluate(test, n_negatives=100, seed=args.seed))
        run = dict(method=label, T=T, validation=val_metrics, test=test_metrics, best_epoch=model.best_epoch,
                   epoch_seconds=float(np.mean(rep.epoch_seconds)),
                   pairs_per_second=rep.words / max(sum(rep.epoch_seconds), 1e-9))
        runs.append(run)
        print("  %-4s T=%-5s best epoch %2d, %.2f s/epoch, %8.0f pairs/s | test lik %.2e MPR %.2f P@50 %.2f "
              "P@15 %.2f P@5 %.2f" % (label, T, model.best_epoch, run["epoch_seconds"], run["pairs_per_second"],
                                      test_metrics["likelihood"], 100 * test_metrics["mpr"],
                                      100 * test_metrics["prec50"], 100 * test_metrics["prec15"],
                                      100 * test_metrics["prec5"]), flush=True)
    peers = run_peers(train, test, args) if not args.no_peers else []
    return dict(data=name, items=counts.n_items, window=counts.window, runs=runs, peers=peers,
                pairs=dict(train=train.total, validation=val.total, test=test.total))


def run_peers(train, test, args):
    from embkit.evaluation.ranking import evaluate_ranking
    from eval.peers import recsys
    out = []
    for name in ("als", "bpr"):
        t0 = time.perf_counter()
        contexts, targets = recsys.fit_implicit(name, train, factors=args.dim, threads=args.workers,
                                                seed=args.seed)
        seconds = time.perf_counter() - t0
        res = evaluate_ranking(contexts, targets, test.pairs(), n_negatives=100, seed=args.seed)
        out.append(dict(method="implicit " + name.upper(), test=metrics_of(res), seconds=seconds))
        m = out[-1]["test"]
        print("  implicit %s: %.1fs | test lik %.2e MPR %.2f P@50 %.2f P@15 %.2f P@5 %.2f"
              % (name.upper(), seconds, m["likelihood"], 100 * m["mpr"], 100 * m["prec50"], 100 * m["prec15"],
                 100 * m["prec5"]), flush=True)
    return out


def table(result):
    """Markdown table: embkit's test metrics (T* per metric for UBS/PBS), implicit, and the paper's row."""
    runs = result["runs"]
    lines = ["| metric | " + " | ".join(["MLE", "SS", "US", "UBS (T*)", "PS", "PBS (T*)"]
                                      + [p["method"] for p in result["peers"]]) + " |",
             "|---" * (7 + len(result["peers"])) + "|"]
    for metric in METRICS:
        scale = 1e4 if metric == "likelihood" else 100
        cells = []
        for name in ("MLE", "SS", "US", "UBS", "PS", "PBS"):
            cand = [r for r in runs if r["method"] == name]
            best = max(cand, key=lambda r: r["validation"][metric])
            text = "%.2f" % (scale * best["test"][metric])
            if best["T"] is not None:
                text += " (%g)" % best["T"]
            cells.append(text)
        cells += ["%.2f" % (scale * p["test"][metric]) for p in result["peers"]]
        lines.append("| %s%s | %s |" % (metric, " (e-4)" if metric == "likelihood" else " (%)", " | ".join(cells)))
        lines.append("| paper | %s |" % " | ".join([str(PAPER[metric][n]) for n in
                                                   ("MLE", "SS", "US", "UBS", "PS", "PBS")]
                                                  + ["-"] * len(result["peers"])))
    speed = ["| s/epoch | " + " | ".join("%.2f" % min(r["epoch_seconds"] for r in runs if r["method"] == n)
                                        for n in ("MLE", "SS", "US", "UBS", "PS", "PBS")) + " |"]
    return "\n".join(lines + speed)


def per_pair_speed(args):
    """Pairs/s of the pairs driver (SGNS) vs examples/s of skip-gram with per-pair negatives, same settings."""
    from embkit import Word2Vec
    from embkit.text.corpora import resolve_corpus
    w2v = Word2Vec(corpus_file=resolve_corpus(None), vector_size=args.dim, window=5, negative=5, sample=1e-3,
                   min_count=5, epochs=1, workers=args.workers, shared_negatives=False, seed=args.seed,
                   progress=False)
    r = w2v.last_report
    counts, (train, _, _) = load_split(args.data[0], args.window)
    model = ItemEmbedding(vector_size=args.dim, loss="sgns", negative=5, epochs=3, workers=args.workers,
                          seed=args.seed, progress=False).fit(train)
    pairs = model.last_report.words / sum(model.last_report.epoch_seconds)
    words = r.examples / r.seconds
    print("\nper-pair speed (dim %d, 5 negatives, %d workers): pairs driver %.0f pairs/s, word2vec skip-gram "
          "(per-pair negatives) %.0f pairs/s, ratio %.2f" % (args.dim, args.workers, pairs, words, pairs / words),
          flush=True)
    return dict(pairs_driver=pairs, word2vec=words)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", nargs="+", default=["ml-100k", "ml-latest-small"])
    p.add_argument("--window", type=int, default=3)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--alpha", type=float, default=0.025)
    p.add_argument("--dim", type=int, default=100)
    p.add_argument("--T", type=float, nargs="+", default=[0.5, 1, 3, 6, 12, 36])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--no-peers", action="store_true")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    print("command: python -m eval.bench.items %s" % " ".join(sys.argv[1:] if argv is None else argv), flush=True)
    results = [run_dataset(name, args) for name in args.data]
    speed = per_pair_speed(args)
    for res in results:
        print("\n### %s (window %s, %d items)\n" % (res["data"], res["window"], res["items"]))
        print(table(res))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(results=results, speed=speed), f, indent=1, default=float)
    return 0


if __name__ == "__main__":
    sys.exit(main())
