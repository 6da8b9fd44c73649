"""LSH negative sampling (Daghaghi et al. 2021): P@1 against wall-clock time and epochs, time per epoch, speed-up.

Every method trains an ExtremeClassifier with the configuration pinned here (so changes of the library's
defaults do not move it): dim 128, hidden and class vectors normalised, tau 0.1, alpha 0.1 decaying linearly to
1e-4 over the run, 50 negatives, raw feature values (no tf-idf, no row normalisation), 2 workers; uniform and
log-uniform proposals with the sampled softmax; LSH Label / LSH Embedding: SimHash, K 8, L 16, bins of 8, tables
rebuilt on the 0.01 x 1.5^k schedule. After every epoch P@1 on the test set is measured (not counted in the
time). Sets: Bibtex and Delicious (train/test files of the Extreme Classification Repository) and the synthetic
planted-signature sets (``embkit.xc.synthetic.make_xc``, Zipf label law, 1000 test points) at 1e5 and 1e6 labels.

Full softmax per set (``SETS``): on Bibtex the per-example kernel at alpha 0.1; on Delicious and at 1e5 labels
the batched BLAS trainer at batch 64 and alpha 0.03, because the per-example kernel costs 17-39 s an epoch on
Delicious (19 labels a point) and about half an hour an epoch at 1e5 labels. That setting was chosen on the
synthetic set with 1e4 labels and 5,000 points (3 epochs), where the per-example kernel can run: kernel P@1
50.1 / 67.3 / 76.4 by epoch (training loss 7.6 / 6.2 / 4.6), batch 64 at alpha 0.03 66.6 / 69.2 / 70.3 (loss
6.6 / 5.3 / 4.7); batch 256 at alpha 0.1 oscillated (54.5 / 25.6 / 59.3). On Delicious it ended 10 epochs at P@1 60.0 (batch 256
at alpha 0.01: 60.7; one seed each). At 1e5 labels it runs 5 epochs (the
rate decays to 1e-4 over them), so the last epochs show whether it has converged. At 1e6 labels it is not run
(about ten times the 1e5 cost per epoch).

Seeds: 3 on Bibtex and Delicious (methods within 2 points of each other); one on the synthetic sets, where
the methods differ by far more than the seed spread and full softmax costs minutes per epoch.
Cost (full mode, 2 shared cores): about 25 minutes, most of it full softmax at 1e5 labels and Delicious.
"""
import time

import numpy as np

from eval.repro.common import mean_spread, need, pyplot, save_figure, say

COMMON = dict(vector_size=128, normalize=True, tau=0.1, normalize_classes=True, alpha=0.1, min_alpha=1e-4,
              negative=50, one_label=False, chunk_examples=1 << 13, feature_weighting="none", normalize_rows=False,
              heads=())         # the samplers compared on the model's own scores, as in the paper
LSH = dict(family="simhash", K=8, L=16, bin_size=8, rebuild_initial=0.01, rebuild_decay=1.5)
METHODS = {
    "full softmax": dict(loss="full_softmax"),
    "uniform": dict(loss="sampled_softmax", sampler="uniform"),
    "log-uniform": dict(loss="sampled_softmax", sampler="log_uniform"),
    "LSH Label": dict(loss="sampled_softmax", sampler="lsh", sampler_params=dict(LSH, query="label")),
    "LSH Embedding": dict(loss="sampled_softmax", sampler="lsh", sampler_params=dict(LSH, query="embedding")),
}
#: name -> (quick, full): epochs of the sampled methods, of full softmax, its batched trainer's batch size and
#: learning rate (see the docstring), seeds, synthetic sizes
SETS = {
    "bibtex": ({"epochs": 5}, {"epochs": 20}),
    "delicious": (None, {"epochs": 10, "full_batch": 64, "full_alpha": 0.03}),
    "synthetic-1e5": ({"epochs": 2, "full_epochs": 2, "full_batch": 64, "full_alpha": 0.03, "seeds": 1,
                       "labels": 100_000, "train": 5_000, "features": 50_000},
                      {"epochs": 5, "full_epochs": 5, "full_batch": 64, "full_alpha": 0.03, "seeds": 1,
                       "labels": 100_000, "train": 20_000, "features": 200_000}),
    "synthetic-1e6": (None, {"epochs": 2, "full_epochs": 0, "seeds": 1, "labels": 1_000_000, "train": 20_000,
                             "features": 1_000_000}),
}


def load(name, spec):
    if name.startswith("synthetic"):
        from embkit.xc.synthetic import make_xc
        return make_xc(n_labels=spec["labels"], n_features=spec["features"], n_train=spec["train"], n_test=1000,
                       label_law="zipf", seed=1)
    from embkit.xc.datasets import load_xc_dataset
    return load_xc_dataset(name, need("extreme-classification"))


def full_softmax_params(spec):
    """The set's full-softmax trainer: the batched BLAS path (``full_batch``) and its own ``full_alpha``, if set."""
    out = {"batch_size": spec["full_batch"]} if spec.get("full_batch") else {}
    if spec.get("full_alpha"):
        out["alpha"] = spec["full_alpha"]
    return out


def train_curve(method, train, test, epochs, workers, seed, extra=None):
    """P@1 after every epoch and the training loss: ``([(epoch, cumulative training seconds, P@1)], [loss])``."""
    from embkit import ExtremeClassifier
    model = ExtremeClassifier(epochs=epochs, workers=workers, seed=seed, progress=False,
                              **dict(COMMON, **METHODS[method], **(extra or {})))
    curve = []

    def on_epoch(epoch, report):
        p1 = float(model.evaluate(test.X, test.Y, ks=(1,)).precision[1])
        curve.append((epoch + 1, float(sum(report.epoch_seconds)), p1))
        say("  %s seed %d epoch %d: %.1fs, loss %.3f, P@1 %.2f" % (method, seed, epoch + 1, curve[-1][1],
                                                                  report.epoch_loss[-1], 100 * p1))

    model.fit(train.X, train.Y, on_epoch=on_epoch)
    return curve, [float(x) for x in model.last_report.epoch_loss]


def run(args, rec):
    seeds = args.seeds or 3
    rec.add("setup", dict(common=COMMON, methods=METHODS, sets={k: v[0 if args.quick else 1] for k, v in SETS.items()},
                          seeds=seeds))
    unknown = set(getattr(args, "sets", None) or ()) - set(SETS)
    if unknown:
        raise SystemExit("unknown set(s) %s; the sets are %s" % (", ".join(sorted(unknown)), ", ".join(SETS)))
    for name, (quick, full) in SETS.items():
        spec = quick if args.quick else full
        if spec is None or (getattr(args, "sets", None) and name not in args.sets):
            continue
        t0 = time.perf_counter()
        train, test = load(name, spec)
        say("lsh %s: %r (%.0fs to load)" % (name, train, time.perf_counter() - t0))
        result = {"curves": {}, "train_loss": {}}
        for method in METHODS:
            full = method == "full softmax"
            epochs = spec.get("full_epochs", spec["epochs"]) if full else spec["epochs"]
            if epochs == 0:
                continue
            n_seeds = min(seeds, spec.get("seeds", seeds))
            runs = [train_curve(method, train, test, epochs, args.workers, seed,
                                full_softmax_params(spec) if full else None) for seed in range(1, n_seeds + 1)]
            result["curves"][method] = [c for c, _ in runs]
            result["train_loss"][method] = [loss for _, loss in runs]
            rec.add(name, result)
        result["table"] = table(result["curves"])
        rec.add(name, result)


def table(curves):
    """Per method: seconds per epoch, final and best-epoch P@1 (mean and sd over seeds), speed-up of the epoch
    over full softmax and the final P@1 minus full softmax's."""
    out = {}
    for method, runs in curves.items():
        final, best = mean_spread([c[-1][2] for c in runs]), mean_spread([max(p for _, _, p in c) for c in runs])
        out[method] = dict(epoch_seconds=float(np.mean([c[-1][1] / c[-1][0] for c in runs])), final_p1=final[0],
                           final_spread=final[1], best_p1=best[0], p1_spread=best[1], epochs=runs[0][-1][0])
    if "full softmax" in out:
        for method in out:
            out[method]["speedup"] = out["full softmax"]["epoch_seconds"] / out[method]["epoch_seconds"]
            out[method]["p1_minus_full"] = out[method]["final_p1"] - out["full softmax"]["final_p1"]
    return out


def plot(data, path):
    plt = pyplot()
    from matplotlib.ticker import NullFormatter
    sets = [k for k in SETS if k in data["results"]]
    fig, axes = plt.subplots(2, max(len(sets), 1), figsize=(3.6 * max(len(sets), 1), 5.6), squeeze=False)
    for j, name in enumerate(sets):
        for method, runs in data["results"][name]["curves"].items():
            c, color = runs[0], "C%d" % list(METHODS).index(method)     # a method keeps its colour in every panel
            axes[0][j].plot([t for _, t, _ in c], [100 * p for _, _, p in c], "o-", ms=3, color=color, label=method)
            axes[1][j].plot([e for e, _, _ in c], [100 * p for _, _, p in c], "o-", ms=3, color=color, label=method)
        axes[0][j].set_xscale("log")
        axes[0][j].xaxis.set_minor_formatter(NullFormatter())     # a narrow span labels its minor ticks, overlapping
        axes[0][j].set_xlabel("training seconds")
        axes[1][j].set_xlabel("epoch")
        axes[0][j].set_title(name)
        axes[0][j].set_ylabel("P@1 (%)")
        axes[1][j].set_ylabel("P@1 (%)")
    axes[0][0].legend(fontsize=7)
    save_figure(fig, path)


#: the paper's Tables 2-3 (P@1 %, speed-up of the epoch over TensorFlow full softmax on a V100): other sets
PAPER = "Amazon-670K: full 37.5, LSH Embedding 36.1, LSH Label 35.5 (10.3x / 11x per epoch); Wiki-325K: 57.3, " \
        "56.3, 56.1 (6.5x); ODP: 16.2, 16.8, 16.7 (14x / 15x); Amazon-Uniform: 24.0, 22.8, 22.5 (22x)"


#: epochs whose P@1 the markdown table shows (and the last)
SHOWN_EPOCHS = (1, 2, 3, 5, 10, 15)


def _epochs_to(curve, level):
    return next((e for e, _, p in curve if p >= level), None)


def markdown(data):
    """Per set: s/epoch, speed-up over full softmax, final P@1 and its gap to full softmax's, best epoch's P@1,
    epochs to 50% / 90% of full's final P@1."""
    out = []
    for name in SETS:
        res = data["results"].get(name)
        if not res:
            continue
        tab = table(res["curves"])
        full = res["curves"].get("full softmax")
        final = full[0][-1][2] if full else None
        out.append("**%s**\n" % name)
        n_seeds = len(next(iter(res["curves"].values())))
        out.append("| method | s/epoch | speed-up vs full | final P@1 (± sd, %d seed(s)) | final - full | best epoch's "
                   "P@1 | epochs to 50%% / 90%% of full | P@1 by epoch (cumulative s), seed 1 |" % n_seeds)
        out.append("|---|---:|---:|---:|---:|---:|---|---|")
        for method, row in tab.items():
            c = res["curves"][method][0]
            reach = " / ".join(("E%d" % e) if e else "not reached"
                               for e in (_epochs_to(c, 0.5 * final), _epochs_to(c, 0.9 * final))) if final else "-"
            gap = "%+.2f" % (100 * row["p1_minus_full"]) if "p1_minus_full" in row else "-"
            out.append("| %s | %.2f | %s | %.2f ± %.2f | %s | %.2f ± %.2f | %s | %s |" % (
                method, row["epoch_seconds"], "%.1fx" % row["speedup"] if "speedup" in row else "-",
                100 * row["final_p1"], 100 * row["final_spread"], gap, 100 * row["best_p1"], 100 * row["p1_spread"],
                reach,
                " ".join("E%d %.1f (%.0fs)" % (e, 100 * p, t) for e, t, p in c
                         if e in SHOWN_EPOCHS or e == c[-1][0])))
        out.append("")
    out.append("Paper (other, larger sets; P@1 %%): %s." % PAPER)
    return "\n".join(out)
