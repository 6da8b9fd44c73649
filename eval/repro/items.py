"""Relaxed softmax (Tanielian & Vasile 2019), Table 2: next-item likelihood, MPR and Prec@k, and the T sweep.

Data: MovieLens ml-100k and ml-latest-small (ratings >= 4 ordered by time per user, each item paired with the
next 3 of its user's timeline) and GCIDE next-word pairs (each word paired with the next 3 of its line; the
15,000 most common words of the first 500k words in full mode, 2,000 of 100k in quick mode), split 70/10/20
(seed 0) as ``eval.bench.items``, whose method set is reused: MLE (full softmax, batched BLAS, batch 256),
SS, US, PS and UBS / PBS for every T of the paper's grid (0.5, 1, 3, 6, 12, 36; 1, 6, 36 in quick mode).
ItemEmbedding dim 100, alpha 0.025; the tables of the best validation epoch by approximate MPR are kept
(GCIDE in full mode: the final tables, see below).
Peers: implicit ALS and BPR on the same training matrix, scored by the same ranking code.  The plot: test MPR
and Prec@k against T for UBS and PBS, with the baselines as lines.

T*: per method and metric, the T whose validation value, averaged over the seeds that ran the whole grid, is
best; the table gives the test value at T* (mean and spread over every seed that ran T*).

The plan of each set (``PLANS``; the costs were measured on the shared 2-core machine under load):

* quick: ml-100k (exact Boltzmann sampler) and GCIDE 2k words (Metropolis-Hastings sampler, burn-in 50,
  3 steps), 3 epochs, 3 seeds for every method and T.
* full, MovieLens: 5 epochs, 3 seeds for every method and every T, Boltzmann by Metropolis-Hastings (the exact
  sampler scores all 6.3k items of ml-latest-small per draw: 13 s per epoch against 0.6 s).
* full, GCIDE 15k words (0.9M training pairs): 3 epochs, the final tables validated once (a validation pass
  over 15k x 15k scores costs about 5 s, most of a cheap run): with SS, 5 epochs reach 0.4 point more
  validation MPR than 3 (91.1 against 90.7%; 2 epochs 90.4), so every method trains a slightly short schedule.
  MLE costs about 80 s per epoch with the machine to itself, 250-300 s under load (three float32 products of
  256 x 15k x 100 per batch, BLAS-bound: batch 1024 is no faster and gives the same validation metrics after
  one epoch); it runs 3 seeds as the others.  The T grid runs with seed 1; seeds 2 and 3 rerun the static
  methods and, per Boltzmann method, only the T that is T* of some metric on seed 1's validation.  The sweep
  plot of GCIDE is seed 1.
* full, the check of the sampler: UBS and PBS on ml-100k with the exact sampler, seed 1, every T (last, so
  a cut run loses it first); the page puts it beside the Metropolis-Hastings rows.

* on request (``--sets ml-1m`` or ``--sets ml-20m``, in either mode; the file is then
  ``table2[-quick]-ml-1m.json``): the larger MovieLens sets, read from ``$EMBKIT_SHARED_DATA/movielens/NAME``
  or else embkit's cache (downloaded once).  ml-1m: 3 epochs, T grid with seed 1, MLE seed 1; ml-20m: one epoch,
  no MLE (27k items), the final tables validated.  Neither is in the default run: ml-1m alone would cost about
  as much as the rest of the full mode (about 10x ml-100k's pairs, and MLE over 3.7k items), and the ratings of
  neither are in the shared data (so neither has run here).

MLE (the costliest) runs after every other run of every set, so a run cut short loses it first;
``--resume`` continues an interrupted run from its JSON.  ``--plan FILE`` runs another plan: a JSON object
with the keys of a ``PLANS`` entry.
"""
import json

import numpy as np

from eval.repro.common import MissingData, by_method, mean_spread, need, pyplot, save_figure, say

METHODS = ("MLE", "SS", "US", "UBS", "PS", "PBS")
BOLTZMANN = ("UBS", "PBS")
METRICS = ("likelihood", "mpr", "prec50", "prec15", "prec5")
GRID = [0.5, 1, 3, 6, 12, 36]
#: per mode: the GCIDE corpus, the T grid, and the plan of every set, run in this order.  A plan: epochs,
#: seeds of MLE, the Boltzmann sampler ('exact' or 'mh'), the seeds above 1 rerun every T ('all') or only the
#: T* of seed 1 ('best'); ``validate='last'`` validates the final tables only (else every epoch, keeping the
#: best); ``methods`` limits a plan to some methods, ``key`` names its entry in the JSON.  The larger
#: MovieLens sets run only when named with ``--sets`` (``ON_REQUEST``).
PLANS = {
    True: dict(words=100_000, vocab=2_000, seeds=3, T=[1, 6, 36], sets=[
        dict(name="ml-100k", epochs=3, mle_seeds=3, boltzmann="exact", sweep="all"),
        dict(name="gcide", epochs=3, mle_seeds=3, boltzmann="mh", sweep="all")]),
    False: dict(words=500_000, vocab=15_000, seeds=3, T=GRID, sets=[
        dict(name="ml-100k", epochs=5, mle_seeds=3, boltzmann="mh", sweep="all"),
        dict(name="ml-latest-small", epochs=5, mle_seeds=3, boltzmann="mh", sweep="all"),
        dict(name="gcide", epochs=3, mle_seeds=3, boltzmann="mh", sweep="best", validate="last"),
        dict(name="ml-100k", key="ml-100k exact check", epochs=5, mle_seeds=0, boltzmann="exact", sweep="all",
             seeds=1, methods=BOLTZMANN, peers=False)]),
}
#: the sets that run only when ``--sets`` names them (in either mode), with their plans: ml-1m is about
#: 10x ml-100k's pairs (MLE over 3.7k items), ml-20m 200x (MLE over 27k items is left out)
ON_REQUEST = {
    "ml-1m": dict(name="ml-1m", epochs=3, mle_seeds=1, boltzmann="mh", sweep="best"),
    "ml-20m": dict(name="ml-20m", epochs=1, mle_seeds=0, boltzmann="mh", sweep="best", validate="last"),
}
MH = "Metropolis-Hastings (burn-in 50, 3 steps)"


class _Args:
    """The settings ``eval.bench.items.run_peers`` reads."""

    def __init__(self, dim, workers, seed):
        self.dim, self.workers, self.seed = dim, workers, seed


def load(name, mode):
    """``(n_items, (train, validation, test))`` of a set (``mode``: a ``PLANS`` entry, for GCIDE's size)."""
    if name == "gcide":
        from embkit.items.cooccurrence import PairCounts
        from eval.repro.words import read_sentences
        counts = PairCounts.from_text(read_sentences(need("corpora/gcide.txt.gz"), mode["words"]),
                                      vocab_size=mode["vocab"], window=3)
        return counts.n_items, counts.split((0.7, 0.1, 0.2), seed=0)
    from eval.bench.items import load_split
    if name not in ON_REQUEST:
        need("movielens/" + name)
    try:        # a set named with --sets: the shared folder, else the embkit cache (downloaded once)
        counts, split = load_split(name, 3)
    except OSError as exc:
        raise MissingData("%s: %s\n  unzip %s.zip of https://files.grouplens.org/datasets/movielens/ into "
                          "$EMBKIT_SHARED_DATA/movielens/, or let embkit download it once (network access)"
                          % (name, exc, name)) from None
    return counts.n_items, split


def configs(Ts, boltzmann, methods=METHODS):
    """``(method, T, ItemEmbedding keywords)``: the configurations of ``eval.bench.items``, pinned here."""
    from eval.bench.items import configs as bench_configs
    out = []
    for method, T, kw in bench_configs(Ts):
        if method not in methods:
            continue
        kw = dict(kw)
        if method == "MLE":
            kw["batch_size"] = 256
        if kw.get("sampler") == "boltzmann":
            kw["sampler_params"] = dict(kw["sampler_params"], method=boltzmann)
        out.append((method, T, kw))
    return out


def seed_configs(plan, seed, Ts, runs):
    """``(seed, method, T, keywords)`` but MLE that ``seed`` runs under ``plan`` (``runs``: earlier seeds')."""
    todo = []
    for method, T, kw in configs(Ts, plan["boltzmann"], plan.get("methods", METHODS)):
        if method == "MLE":
            continue
        if T is not None and seed > 1 and plan["sweep"] == "best" and T not in best_Ts(runs, method):
            continue
        todo.append((seed, method, T, kw))
    return todo


def train_one(train, val, test, epochs, seed, workers, kw, every_epoch=True):
    """Fit one ItemEmbedding; ``(validation metrics, test metrics, seconds, epoch kept)``.

    ``every_epoch``: validate after every epoch and keep the best epoch's tables (by approximate MPR), else
    validate the final tables only.
    """
    from eval.bench.items import metrics_of
    from embkit import ItemEmbedding
    model = ItemEmbedding(vector_size=100, epochs=epochs, alpha=0.025, workers=workers, seed=seed,
                          progress=False, **kw)
    if every_epoch:
        model.fit(train, validation=val, metric="mpr_approx", n_negatives=100)
        best, kept = model.history[model.best_epoch - 1], model.best_epoch
        best = dict(best, mpr=best["mpr_approx"])
    else:
        model.fit(train)
        best, kept = metrics_of(model.evaluate(val, n_negatives=100)), epochs
    val_m = {metric: best[metric] for metric in METRICS}
    test_m = metrics_of(model.evaluate(test, n_negatives=100, seed=seed))
    return val_m, test_m, model.last_report.seconds, kept


def chosen_plans(mode, names):
    """The plans of ``mode`` (a ``PLANS`` entry) to run: all of its sets, or those ``names`` (``--sets``), which
    may include the :data:`ON_REQUEST` sets; ValueError for an unknown name."""
    if not names:
        return mode["sets"]
    plans = {p.get("key", p["name"]): p for p in mode["sets"]}
    plans.update({k: v for k, v in ON_REQUEST.items() if k not in plans})
    unknown = [n for n in names if n not in plans]
    if unknown:
        raise ValueError("table2 has no set %s; its sets: %s" % (", ".join(unknown), ", ".join(plans)))
    return [plans[n] for n in names]


def run(args, rec):
    if getattr(args, "plan", None):
        with open(args.plan) as fh:
            mode = json.load(fh)
    else:
        mode = dict(PLANS[args.quick])
    mode["sets"] = chosen_plans(mode, getattr(args, "sets", None))
    rec.add("setup", dict(sets=[p.get("key", p["name"]) for p in mode["sets"]], gcide_words=mode["words"],
                          gcide_vocab=mode["vocab"], window=3, dim=100, alpha=0.025, T=mode["T"],
                          seeds=args.seeds or mode["seeds"], mle="batch_size=256", mh=MH,
                          plans=mode["sets"]))
    loaded = {}
    # every set's runs but MLE, then the MLE runs: the costliest last, so a run cut short loses them first
    for mle in (False, True):
        for plan in mode["sets"]:
            run_plan(plan, mode, args, rec, loaded, mle)


def run_plan(plan, mode, args, rec, loaded, mle):
    """The MLE runs (``mle``) or all the others of one plan that ``rec`` lacks, then the summary."""
    from eval.bench.items import run_peers
    name, key = plan["name"], plan.get("key", plan["name"])
    n_seeds = plan.get("seeds", args.seeds or mode["seeds"])
    if mle and not (plan["mle_seeds"] and "MLE" in plan.get("methods", METHODS)):
        return
    if name not in loaded:
        loaded[name] = load(name, mode)
    n_items, (train, val, test) = loaded[name]
    say("table2 %s%s: %d items, pairs %d / %d / %d" % (key, " MLE" if mle else "", n_items, train.total,
                                                     val.total, test.total))
    result = rec.get(key) or dict(items=n_items, pairs=[train.total, val.total, test.total],
                                  epochs=plan["epochs"], boltzmann=plan["boltzmann"], runs=[], peers=[])
    done = {(r["method"], r["T"], r["seed"]) for r in result["runs"]}
    for last in range(1, n_seeds + 1):
        if mle:
            todo = [(last, m, T, kw) for m, T, kw in configs(mode["T"], plan["boltzmann"], ("MLE",))
                    if last <= plan["mle_seeds"]]
        else:
            todo = seed_configs(plan, last, mode["T"], result["runs"])
        for seed, method, T, kw in todo:
            if (method, T, seed) in done:
                continue
            val_m, test_m, seconds, best_epoch = train_one(train, val, test, plan["epochs"], seed,
                                                           args.workers, kw, plan.get("validate") != "last")
            result["runs"].append(dict(method=method, T=T, seed=seed, validation=val_m, test=test_m,
                                       seconds=seconds, best_epoch=best_epoch))
            rec.add(key, result)
            say("table2 %s seed %d %-3s T=%-4s: MPR %.2f P@50 %.2f P@5 %.2f (%.0fs)"
                % (key, seed, method, T, 100 * test_m["mpr"], 100 * test_m["prec50"], 100 * test_m["prec5"],
                   seconds))
    if not mle and plan.get("peers", True) and not result["peers"]:
        result["peers"] = run_peers(train, test, _Args(100, args.workers, 1))
    result["summary"] = summarise(result["runs"])
    rec.add(key, result)


def grid_seeds(runs):
    """The seeds that ran every T of the grid (all seeds when no run has a T)."""
    Ts = {r["T"] for r in runs}
    return sorted(s for s in {r["seed"] for r in runs} if Ts <= {r["T"] for r in runs if r["seed"] == s})


def choose_T(runs, metric):
    """T* of one method's runs: the best validation mean over the seeds that ran the whole grid."""
    seeds = grid_seeds(runs)
    by_T = {}
    for r in runs:
        if r["seed"] in seeds:
            by_T.setdefault(r["T"], []).append(r["validation"][metric])
    return max(by_T, key=lambda T: np.mean(by_T[T]))


def best_Ts(runs, method):
    """The T* of ``method`` for any metric (what ``sweep='best'`` reruns with more seeds)."""
    mine = [r for r in runs if r["method"] == method]
    return {choose_T(mine, metric) for metric in METRICS} if mine else set()


def summarise(runs):
    """Per method and metric: the test mean and spread over the seeds that ran T* (T* from ``choose_T``)."""
    out = {}
    for method, mine in by_method(runs, METHODS):
        row = {}
        for metric in METRICS:
            T_star = choose_T(mine, metric)
            mean, spread = mean_spread([r["test"][metric] for r in mine if r["T"] == T_star])
            row[metric] = dict(mean=mean, spread=spread, T=T_star, seeds=sum(r["T"] == T_star for r in mine))
        row["seconds"] = float(np.mean([r["seconds"] for r in mine]))
        out[method] = row
    return out


def sweep(runs, method, metric):
    """``(T, mean, spread)`` of the test metric for every T of a Boltzmann method, over the grid's seeds."""
    mine = [r for r in runs if r["method"] == method]
    seeds = grid_seeds(mine)
    rows = []
    for T in sorted({r["T"] for r in mine}):
        m, sd = mean_spread([r["test"][metric] for r in mine if r["T"] == T and r["seed"] in seeds])
        rows.append((T, m, sd))
    return rows


CHECK = " exact check"


def plot(data, path):
    plt = pyplot()
    results = data["results"]
    sets = [k for k, v in results.items() if isinstance(v, dict) and "runs" in v and not k.endswith(CHECK)]
    metrics = ("mpr", "prec50", "prec5")
    fig, axes = plt.subplots(len(sets), len(metrics), figsize=(11, 2.8 * max(len(sets), 1)), squeeze=False)
    for i, name in enumerate(sets):
        runs = results[name]["runs"]
        check = results.get(name + CHECK, {}).get("runs", [])
        seeds = grid_seeds([r for r in runs if r["method"] in BOLTZMANN])
        for j, metric in enumerate(metrics):
            ax = axes[i][j]
            for method, style, color in (("UBS", "o-", "C0"), ("PBS", "s-", "C1")):
                rows = sweep(runs, method, metric)
                if rows:
                    ax.errorbar([r[0] for r in rows], [100 * r[1] for r in rows], [100 * r[2] for r in rows],
                                fmt=style, color=color, capsize=2,
                                label="%s (%s)" % (method, results[name].get("boltzmann", "")))
                rows = sweep(check, method, metric)
                if rows:
                    ax.plot([r[0] for r in rows], [100 * r[1] for r in rows], style[0] + ":", mfc="none",
                            color=color, label="%s (exact, seed 1)" % method)
            for method, color in (("MLE", "k"), ("SS", "C4"), ("US", "C2"), ("PS", "C3")):
                vals = [r["test"][metric] for r in runs if r["method"] == method]
                if vals:
                    ax.axhline(100 * np.mean(vals), color=color, ls="--", lw=1, label=method)
            ax.set_xscale("log")
            Ts = sorted({r["T"] for r in runs if r["T"] is not None})
            ax.set_xticks(Ts, ["%g" % T for T in Ts])
            ax.minorticks_off()
            ax.set_xlabel("T")
            ax.set_title("%s: %s (%%)%s" % (name, metric, ", seed %s" % seeds[0] if len(seeds) == 1 else ""))
            if j == 0:
                ax.legend(fontsize=6)
    save_figure(fig, path)


def markdown(data):
    """Per set: embkit's test value at T* (mean ± sd over seeds), implicit's, and the paper's MovieLens/Text8 row."""
    out = []
    results = data["results"]
    plans = dict(ON_REQUEST, **{p.get("key", p["name"]): p for p in PLANS[data["quick"]]["sets"]})
    for name, res in results.items():
        if not (isinstance(res, dict) and "runs" in res):
            continue
        if name.endswith(CHECK):
            out += _check_table(name, res, results.get(name[:-len(CHECK)], {}).get("runs", []))
            continue
        plan = dict(plans.get(name, {}), **res)       # files written before the plans were recorded
        out.append("**%s** (%d items; pairs train/validation/test %s; %s epochs; Boltzmann sampler: %s)\n" % (
            name, res["items"], " / ".join(str(p) for p in res["pairs"]), plan.get("epochs", "?"),
            MH if plan.get("boltzmann") == "mh" else plan.get("boltzmann", "?")))
        out += _method_table(name, res)
        out.append("")
    return "\n".join(out)


def _method_table(name, res):
    from eval.bench.items import PAPER as PAPER_ML
    paper_text8 = {"likelihood": [1.65, 1.7, 1.9, "1.9 (inf)", 1.8, "1.8 (inf)"],
                   "mpr": [87.2, 88.2, 89.7, "90.7 (12)", 89.4, "90.8 (12)"],
                   "prec50": [31.9, 31.2, 31.5, "34.2 (6)", 31.5, "34.5 (6)"],
                   "prec15": [13.1, 12.0, 12.5, "14.2 (1)", 11.6, "14.5 (1)"],
                   "prec5": [4.5, 4.2, 4.4, "5.1 (1)", 4.1, "4.6 (1)"]}
    summary = summarise(res["runs"])
    peers = res.get("peers", [])
    many = len({r["seed"] for r in res["runs"]}) > 1
    out = ["| metric | " + " | ".join(METHODS) + "".join(" | " + p["method"] for p in peers) + " |",
           "|---" * (len(METHODS) + len(peers) + 1) + "|"]
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
            text += " (T*=%g)" % c["T"] if c["T"] is not None else ""
            cells.append(text + (" (1 seed)" if many and c["seeds"] == 1 else ""))
        cells += ["%.2f" % (scale * p["test"][metric]) for p in peers]
        out.append("| %s (%s) | %s |" % (metric, unit, " | ".join(cells)))
        paper = paper_text8[metric] if name == "gcide" else [PAPER_ML[metric][m] for m in METHODS]
        out.append("| paper (%s) | %s |" % ("text8" if name == "gcide" else "MovieLens",
                                             " | ".join([str(v) for v in paper] + ["-"] * len(peers))))
    out.append("| train s per run | %s |" % " | ".join(
        ["%.0f" % summary[m]["seconds"] if m in summary else "-" for m in METHODS]
        + ["%.0f" % p["seconds"] for p in peers]))
    return out


def _check_table(name, res, main_runs):
    """Test MPR and Prec@5 of UBS/PBS per T: the exact sampler's runs beside the main runs of the same seeds."""
    seeds = {r["seed"] for r in res["runs"]}
    out = ["**%s**: the exact Boltzmann sampler against %s, seed %s, test %% (MPR / Prec@5)\n"
           % (name, MH, "/".join(str(s) for s in sorted(seeds))),
           "| T | " + " | ".join("%s %s" % (m, s) for m in BOLTZMANN for s in ("exact", "MH")) + " |",
           "|---" * (1 + 2 * len(BOLTZMANN)) + "|"]
    for T in sorted({r["T"] for r in res["runs"]}):
        cells = []
        for method in BOLTZMANN:
            for runs in (res["runs"], main_runs):
                mine = [r["test"] for r in runs if r["method"] == method and r["T"] == T and r["seed"] in seeds]
                cells.append("%.2f / %.2f" % (100 * np.mean([m["mpr"] for m in mine]),
                                              100 * np.mean([m["prec5"] for m in mine])) if mine else "-")
        out.append("| %g | %s |" % (T, " | ".join(cells)))
    out.append("")
    return out
