"""Relaxed softmax (Tanielian & Vasile 2019), Table 2: next-item likelihood, MPR and Prec@k, and the T sweep.

Data: MovieLens ml-100k and ml-latest-small (ratings >= 4 ordered by time per user, each item paired with the
next 3 of its user's timeline) and GCIDE next-word pairs (each word paired with the next 3 of its line; the
15,000 most common words of the first 500k words in full mode, 2,000 of 100k in quick mode), split 70/10/20
(seed 0) as ``eval/bench_items.py``, whose method set is reused: MLE (full softmax, batched BLAS, batch 256),
SS, US, PS and UBS / PBS for every T of the paper's grid (0.5, 1, 3, 6, 12, 36; 1, 6, 36 in quick mode; the
exact Boltzmann sampler on MovieLens, the Metropolis-Hastings chain on the words). ItemEmbedding dim 100, alpha
0.025, 5 epochs (3 in quick mode); the tables of the best validation epoch by approximate MPR are kept; T* per
metric is chosen on validation and the test value at T* is reported. Peers: implicit ALS and BPR on the same
training matrix, scored by the same ranking code. The plot: test MPR and Prec@k against T for UBS and PBS, with
the baselines as lines.
"""
import numpy as np

from repro_common import by_method, mean_spread, need, pyplot, save_figure, say

METHODS = ("MLE", "SS", "US", "UBS", "PS", "PBS")
METRICS = ("likelihood", "mpr", "prec50", "prec15", "prec5")
GRID = [0.5, 1, 3, 6, 12, 36]
#: (quick, full) settings
#: (the 15k-word MLE costs about 1 ms per pair on two cores: the full mode's GCIDE pairs come from 500k words)
SETTINGS = {True: dict(sets=["ml-100k", "gcide"], words=100_000, vocab=2_000, epochs=3, seeds=3, T=[1, 6, 36]),
            False: dict(sets=["ml-100k", "ml-latest-small", "gcide"], words=500_000, vocab=15_000, epochs=5,
                        seeds=3, T=GRID)}


class _Args:
    """The settings ``bench_items.run_peers`` reads."""

    def __init__(self, dim, workers, seed):
        self.dim, self.workers, self.seed = dim, workers, seed


def load(name, s):
    """``(n_items, train, validation, test)`` of a set."""
    if name == "gcide":
        from embkit.items.cooccurrence import PairCounts
        from repro_words import read_sentences
        counts = PairCounts.from_text(read_sentences(need("corpora/gcide.txt.gz"), s["words"]),
                                      vocab_size=s["vocab"], window=3)
        return counts.n_items, counts.split((0.7, 0.1, 0.2), seed=0)
    from bench_items import load_split
    need("movielens/" + name)
    counts, split = load_split(name, 3)
    return counts.n_items, split


def configs(name, n_items, Ts):
    """``(method, T, ItemEmbedding keywords)``: bench_items' configurations, pinned for this reproduction."""
    from bench_items import configs as bench_configs
    out = []
    for method, T, kw in bench_configs(Ts):
        kw = dict(kw)
        if method == "MLE":
            kw["batch_size"] = 256
        if kw.get("sampler") == "boltzmann":
            kw["sampler_params"] = dict(kw["sampler_params"], method="mh" if name == "gcide" else "exact")
        out.append((method, T, kw))
    return out


def run(args, rec):
    from bench_items import metrics_of, run_peers
    from embkit import ItemEmbedding
    s = SETTINGS[args.quick]
    seeds = args.seeds or s["seeds"]
    rec.add("setup", dict(sets=s["sets"], gcide_words=s["words"], gcide_vocab=s["vocab"], window=3, dim=100,
                          alpha=0.025, epochs=s["epochs"], seeds=seeds, T=s["T"], mle="batch_size=256",
                          boltzmann="exact on MovieLens, Metropolis-Hastings (burn-in 50, 3 steps) on gcide"))
    for name in s["sets"]:
        n_items, (train, val, test) = load(name, s)
        say("table2 %s: %d items, pairs %d / %d / %d" % (name, n_items, train.total, val.total, test.total))
        result = dict(items=n_items, pairs=[train.total, val.total, test.total], runs=[], peers=[])
        for seed in range(1, seeds + 1):
            for method, T, kw in configs(name, n_items, s["T"]):
                model = ItemEmbedding(vector_size=100, epochs=s["epochs"], alpha=0.025, workers=args.workers,
                                      seed=seed, progress=False, **kw)
                model.fit(train, validation=val, metric="mpr_approx", n_negatives=100)
                best = model.history[model.best_epoch - 1]
                val_m = {"likelihood": best["likelihood"], "mpr": best["mpr_approx"], "prec50": best["prec50"],
                         "prec15": best["prec15"], "prec5": best["prec5"]}
                test_m = metrics_of(model.evaluate(test, n_negatives=100, seed=seed))
                result["runs"].append(dict(method=method, T=T, seed=seed, validation=val_m, test=test_m,
                                           seconds=model.last_report.seconds, best_epoch=model.best_epoch))
                rec.add(name, result)
                say("table2 %s seed %d %-3s T=%-4s: MPR %.2f P@50 %.2f P@5 %.2f (%.0fs)"
                    % (name, seed, method, T, 100 * test_m["mpr"], 100 * test_m["prec50"], 100 * test_m["prec5"],
                       model.last_report.seconds))
        result["peers"] = run_peers(train, test, _Args(100, args.workers, 1))
        result["summary"] = summarise(result["runs"])
        rec.add(name, result)


def summarise(runs):
    """Per method and metric: the test mean and spread over seeds at the T* chosen on validation (mean)."""
    out = {}
    for method, mine in by_method(runs, METHODS):
        row = {}
        for metric in METRICS:
            by_T = {}
            for r in mine:
                by_T.setdefault(r["T"], []).append(r)
            T_star = max(by_T, key=lambda T: np.mean([r["validation"][metric] for r in by_T[T]]))
            mean, spread = mean_spread([r["test"][metric] for r in by_T[T_star]])
            row[metric] = dict(mean=mean, spread=spread, T=T_star, seeds=len(by_T[T_star]))
        out[method] = row
    return out


def sweep(runs, method, metric):
    """``(T, mean, spread)`` of the test metric over seeds for every T of a Boltzmann method."""
    Ts = sorted({r["T"] for r in runs if r["method"] == method})
    rows = []
    for T in Ts:
        m, sd = mean_spread([r["test"][metric] for r in runs if r["method"] == method and r["T"] == T])
        rows.append((T, m, sd))
    return rows


def plot(data, path):
    plt = pyplot()
    sets = [k for k, v in data["results"].items() if isinstance(v, dict) and "runs" in v]
    metrics = ("mpr", "prec50", "prec5")
    fig, axes = plt.subplots(len(sets), len(metrics), figsize=(11, 2.8 * max(len(sets), 1)), squeeze=False)
    for i, name in enumerate(sets):
        runs = data["results"][name]["runs"]
        for j, metric in enumerate(metrics):
            ax = axes[i][j]
            for method, style in (("UBS", "o-"), ("PBS", "s-")):
                rows = sweep(runs, method, metric)
                if rows:
                    ax.errorbar([r[0] for r in rows], [100 * r[1] for r in rows], [100 * r[2] for r in rows],
                                fmt=style, label=method, capsize=2)
            for method, color in (("MLE", "k"), ("US", "C2"), ("PS", "C3")):
                vals = [r["test"][metric] for r in runs if r["method"] == method]
                if vals:
                    ax.axhline(100 * np.mean(vals), color=color, ls="--", lw=1, label=method)
            ax.set_xscale("log")
            Ts = sorted({r["T"] for r in runs if r["T"] is not None})
            ax.set_xticks(Ts, ["%g" % T for T in Ts])
            ax.minorticks_off()
            ax.set_xlabel("T")
            ax.set_title("%s: %s (%%)" % (name, metric))
            if i == 0 and j == 0:
                ax.legend(fontsize=7)
    save_figure(fig, path)


def markdown(data):
    """Per set: embkit's test value at T* (mean ± sd over seeds), implicit's, and the paper's MovieLens/Text8 row."""
    from bench_items import PAPER as PAPER_ML
    paper_text8 = {"likelihood": [1.65, 1.7, 1.9, "1.9 (inf)", 1.8, "1.8 (inf)"],
                   "mpr": [87.2, 88.2, 89.7, "90.7 (12)", 89.4, "90.8 (12)"],
                   "prec50": [31.9, 31.2, 31.5, "34.2 (6)", 31.5, "34.5 (6)"],
                   "prec15": [13.1, 12.0, 12.5, "14.2 (1)", 11.6, "14.5 (1)"],
                   "prec5": [4.5, 4.2, 4.4, "5.1 (1)", 4.1, "4.6 (1)"]}
    out = []
    for name, res in data["results"].items():
        if not (isinstance(res, dict) and "runs" in res):
            continue
        summary = res.get("summary") or summarise(res["runs"])
        peers = res.get("peers", [])
        out.append("**%s** (%d items; pairs train/validation/test %s)\n" % (name, res["items"], " / ".join(
            str(p) for p in res["pairs"])))
        out.append("| metric | " + " | ".join(METHODS) + "".join(" | " + p["method"] for p in peers) + " |")
        out.append("|---" * (len(METHODS) + len(peers) + 1) + "|")
        for metric in METRICS:
            scale, unit = (1e4, "e-4") if metric == "likelihood" else (100, "%")
            if name == "gcide" and metric == "likelihood":
                scale, unit = 1e2, "e-2"
            cells = []
            for m in METHODS:
                if m not in summary:
                    cells.append("-")
                    continue
                c = summary[m][metric]
                text = "%.2f" % (scale * c["mean"]) + (" ± %.2f" % (scale * c["spread"]) if c["spread"] else "")
                cells.append(text + (" (T*=%g)" % c["T"] if c["T"] is not None else ""))
            cells += ["%.2f" % (scale * p["test"][metric]) for p in peers]
            out.append("| %s (%s) | %s |" % (metric, unit, " | ".join(cells)))
            paper = paper_text8[metric] if name == "gcide" else [PAPER_ML[metric][m] for m in METHODS]
            out.append("| paper (%s) | %s |" % ("text8" if name == "gcide" else "MovieLens",
                                                 " | ".join([str(v) for v in paper] + ["-"] * len(peers))))
        out.append("")
    return "\n".join(out)
