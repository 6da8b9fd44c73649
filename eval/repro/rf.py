"""RF-softmax (Rawat et al. 2019): kernel approximation error against D, sampling time against n, P@1 against
D and nu.

1. Table 1 / Figure 1: ``eval.bench.kernel_sampler``'s comparison on random unit vectors (d = 256 as the
   paper's USPS data, which is not here): mean squared error of the RFF estimate of ``exp(nu (h.c - 1))``
   for each D, against the quadratic kernel with its least-squares ``alpha, beta``; and the total variation
   of the tree sampler's distribution from the softmax.
2. Table 2: the time of one draw call of 10 samples (the paper's m = 10, d = 64) from the kernel sampler's
   tree, for n from 1e3 to 1e6 classes (1e5 in quick mode), D = 128.
3. Effect of D and nu on training: ExtremeClassifier with the sampled softmax and the kernel sampler, the
   configuration of ``eval.repro.lsh`` (pinned there), P@1 on the test set after the last epoch, for each D at
   nu = 4 and each nu at D = 128 (``SWEEPS``), 3 seeds each; uniform negatives and full softmax (trained as
   ``eval.repro.lsh`` trains it on the same set) as reference rows. Bibtex: 20 epochs, D 32..1024, nu 0.5..11.1.
   Delicious (full mode only): 3 epochs, D 32/128/512, nu 1/4/11.1 -- its epoch has 20x Bibtex's label steps
   and the kernel sampler costs 4-15 s an epoch there, so more would not fit the ten minutes this
   reproduction may take on two cores.
"""
import types

import numpy as np

from eval.repro.common import mean_spread, need, pyplot, save_figure, say

#: the paper's Table 1 (MSE of the kernel estimate, USPS, d = 256) and Table 2 (wall time of the sampled
#: softmax loss, batch 10, m = 10, d = 64; the first class count is not legible in our text copy)
PAPER_MSE = {"quadratic (D = 256^2)": 2.8e-3, "rff D = 100": 2.6e-3, "rff D = 1000": 2.7e-4,
             "rff D = 256^2": 5.5e-6}
PAPER_TIME_MS = {"500,000": {"Exp": 32.3, "Quadratic": 8.2, "Rff D=50": 1.6, "Rff D=200": 1.7, "Rff D=500": 2.0,
                             "Rff D=1000": 2.4},
                 "smaller n": {"Exp": 1.4, "Quadratic": 6.5, "Rff D=50": 0.5, "Rff D=200": 0.6, "Rff D=500": 1.2,
                               "Rff D=1000": 1.4}}
#: per training set: epochs, D swept at nu = 4, nu swept at D = 128 (Delicious is 20x Bibtex's label steps
#: per epoch and the kernel sampler costs 4-15 s an epoch there, so it gets fewer epochs and settings)
SWEEPS = {True: {"bibtex": dict(epochs=5, D=[32, 128, 512], nu=[1.0, 4.0, 11.1])},
          False: {"bibtex": dict(epochs=20, D=[32, 128, 512, 1024], nu=[0.5, 1.0, 2.0, 4.0, 11.1]),
                  "delicious": dict(epochs=3, D=[32, 128, 512], nu=[1.0, 4.0, 11.1])}}
SETTINGS = {True: dict(classes=2000, queries=50, D=[64, 128, 256, 1024], sizes=[1000, 10_000, 100_000],
                       draw_queries=500),
            False: dict(classes=10_000, queries=100, D=[64, 128, 256, 512, 1024, 2048],
                        sizes=[1000, 10_000, 100_000, 1_000_000], draw_queries=2000)}


def _floats(row):
    out = []
    for cell in row:
        try:
            out.append(float(str(cell).replace(",", "")))
        except ValueError:
            out.append(cell)
    return out


def run(args, rec):
    from eval.bench import kernel_sampler as bks
    s = SETTINGS[args.quick]
    rec.add("setup", dict(s, sweeps=SWEEPS[args.quick], nu_table=4.0, dim_table=256, draw_dim=64, draw_k=10,
                          draw_D=128, bucket=16))
    ns = types.SimpleNamespace(seed=0, table_classes=s["classes"], table_queries=s["queries"], table_dim=256,
                               table_D=s["D"], bucket=16)
    header, rows = bks.table1_rows(ns, 4.0, "isotropic")
    rec.add("approximation", dict(header=header, rows=[_floats(r) for r in rows], nu=4.0, kind="isotropic"))
    say("rf: kernel approximation table done")
    ns = types.SimpleNamespace(seed=0, sizes=s["sizes"], dim=64, D=128, nu=4.0, bucket=16, k=10,
                               queries=s["draw_queries"], repeat=3, rebuild_D=0)
    header, rows, notes = bks.scaling_rows(ns)
    rec.add("sampling_time", dict(header=header, rows=[_floats(r) for r in rows], notes=notes))
    say("rf: sampling time table done")
    training = {}
    for name, sweep in SWEEPS[args.quick].items():
        training[name] = train_sweep(name, sweep, args)
        rec.add("training", training)


def train_sweep(name, sweep, args):
    """P@1 (mean and spread over the seeds) for every D and nu of ``sweep``, and the reference rows.

    Full softmax is trained as in ``eval.repro.lsh`` for the same set (its trainer and learning rate).
    """
    from embkit import ExtremeClassifier
    from embkit.xc.datasets import load_xc_dataset
    from eval.repro.lsh import COMMON, SETS, full_softmax_params
    train, test = load_xc_dataset(name, need("extreme-classification"))
    seeds = args.seeds or 3
    out = {"D": [], "nu": [], "reference": [], "seeds": seeds, "epochs": sweep["epochs"]}
    done = {}

    def fit(kw):
        """Mean and spread of the test P@1 over the seeds, mean training seconds."""
        p1, sec = [], []
        for seed in range(1, seeds + 1):
            model = ExtremeClassifier(epochs=sweep["epochs"], workers=args.workers, seed=seed, progress=False,
                                      **dict(COMMON, **kw))
            model.fit(train.X, train.Y)
            p1.append(float(model.evaluate(test.X, test.Y, ks=(1,)).precision[1]))
            sec.append(float(model.last_report.seconds))
        mean, spread = mean_spread(p1)
        return mean, spread, float(np.mean(sec))

    full = dict(loss="full_softmax", **full_softmax_params(SETS[name][0 if args.quick else 1] or {}))
    for label, kw in (("uniform", dict(loss="sampled_softmax", sampler="uniform")), ("full softmax", full)):
        p1, sd, sec = fit(kw)
        out["reference"].append(dict(method=label, p1=p1, p1_spread=sd, seconds=sec))
        say("rf %s %s: P@1 %.2f (%.0fs)" % (name, label, 100 * p1, sec))
    for key, values in (("D", sweep["D"]), ("nu", sweep["nu"])):
        for v in values:
            params = dict(kernel="rff", D=v if key == "D" else 128, nu=v if key == "nu" else 4.0, bucket=16, seed=1)
            if (params["D"], params["nu"]) not in done:         # D = 128, nu = 4 is in both sweeps
                done[params["D"], params["nu"]] = fit(dict(loss="sampled_softmax", sampler="kernel",
                                                           sampler_params=params))
                say("rf %s kernel D=%d nu=%g: P@1 %.2f (%.0fs)" % (name, params["D"], params["nu"],
                                                                  100 * done[params["D"], params["nu"]][0],
                                                                  done[params["D"], params["nu"]][2]))
            p1, sd, sec = done[params["D"], params["nu"]]
            out[key].append(dict(D=params["D"], nu=params["nu"], p1=p1, p1_spread=sd, seconds=sec))
    return out


def plot(data, path):
    plt = pyplot()
    res = data["results"]
    fig, axes = plt.subplots(1, 4, figsize=(14, 3.2))
    if "approximation" in res:
        rows = [r for r in res["approximation"]["rows"] if r[0] == "rff"]
        axes[0].loglog([r[1] for r in rows], [r[3] for r in rows], "o-", label="embkit RFF (nu 4, random unit)")
        quad = [r for r in res["approximation"]["rows"] if str(r[0]).startswith("quadratic, best")]
        if quad:
            axes[0].axhline(quad[0][3], color="C1", ls="--", label="embkit quadratic (best fit)")
        axes[0].loglog([100, 1000], [2.6e-3, 2.7e-4], "k^", label="paper RFF (USPS)")
        axes[0].set_xlabel("D")
        axes[0].set_ylabel("kernel MSE")
        axes[0].legend(fontsize=6)
    if "sampling_time" in res:
        rows = res["sampling_time"]["rows"]
        axes[1].loglog([r[0] for r in rows], [r[6] / 1000 for r in rows], "o-", label="embkit draw call (k=10)")
        axes[1].set_xlabel("classes n")
        axes[1].set_ylabel("ms per draw call")
        axes[1].legend(fontsize=6)
    for name, t in res.get("training", {}).items():
        for ax, key in ((axes[2], "D"), (axes[3], "nu")):
            ax.errorbar([r[key] for r in t[key]], [100 * r["p1"] for r in t[key]],
                        [100 * r.get("p1_spread", 0) for r in t[key]], fmt="o-", capsize=2, label=name)
            ax.set_xscale("log")
            ax.set_xticks([r[key] for r in t[key]], ["%g" % r[key] for r in t[key]])
            ax.minorticks_off()
        for j, ref in enumerate(t["reference"]):
            for ax in axes[2:]:
                ax.axhline(100 * ref["p1"], color="C%d" % (j + 3), ls="--", lw=1, label="%s %s" % (name, ref["method"]))
    axes[2].set_xlabel("D (nu = 4)")
    axes[3].set_xlabel("nu (D = 128)")
    for ax in axes[2:]:
        ax.set_ylabel("test P@1 (%)")
    axes[2].legend(fontsize=6)
    save_figure(fig, path)


def _fmt(cell):
    if isinstance(cell, float):
        return "%d" % cell if cell.is_integer() else "%.3g" % cell
    return str(cell)


def markdown(data):
    """The three tables, with the paper's numbers under the first two."""
    res = data["results"]
    out = []
    if "approximation" in res:
        a = res["approximation"]
        out.append("Kernel approximation (nu %g, %s unit vectors, d = 256):\n" % (a["nu"], a["kind"]))
        out.append("| " + " | ".join(a["header"]) + " |")
        out.append("|---" * len(a["header"]) + "|")
        out += ["| " + " | ".join(_fmt(c) for c in r) + " |" for r in a["rows"]]
        out.append("\nPaper (USPS, d = 256): %s.\n" % ", ".join("%s MSE %.1e" % kv for kv in PAPER_MSE.items()))
    if "sampling_time" in res:
        t = res["sampling_time"]
        out.append("Sampling time (d = 64, D = 128, k = 10 samples per call):\n")
        out.append("| " + " | ".join(t["header"]) + " |")
        out.append("|---" * len(t["header"]) + "|")
        out += ["| " + " | ".join(_fmt(c) for c in r) + " |" for r in t["rows"]]
        out.append("\nPaper (whole sampled-softmax loss, batch 10, m = 10, d = 64; ms): %s.\n" % "; ".join(
            "n = %s: %s" % (n, ", ".join("%s %.1f" % kv for kv in v.items())) for n, v in PAPER_TIME_MS.items()))
    for name, tr in res.get("training", {}).items():
        out.append("P@1 on %s (%%) after %s epochs, sampled softmax with the kernel sampler:\n"
                   % (name, tr.get("epochs", "the")))
        out.append("| setting | P@1 (mean ± sd over %d seeds) | train s |" % tr.get("seeds", 1))
        out.append("|---|---:|---:|")
        rows = [(r["method"], r) for r in tr["reference"]]
        rows += [("RFF D=%d nu=%g" % (r["D"], r["nu"]), r) for r in tr["D"] + tr["nu"]]
        out += ["| %s | %.2f ± %.2f | %.1f |" % (label, 100 * r["p1"], 100 * r.get("p1_spread", 0), r["seconds"])
                for label, r in rows]
        out.append("")
    return "\n".join(out)
