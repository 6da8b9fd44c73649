"""Extreme classification: P@k against napkinXC, omikuji, PECOS and fastText, tuning, scaling on synthetic data.

``sets``: every method trains an ExtremeClassifier on the train file and is scored on the test file (P@k,
nDCG@k and, for the repository's sets, PSP@k at 1/3/5; training time and prediction time of the whole test
set), with the peers trained and scored on the same matrices with the same threads in the same run:
napkinXC PLT and OVR, omikuji with Parabel's and Bonsai's settings, PECOS XR-Linear as given and with unit
rows (``--pecos-python``: an interpreter whose environment has libpecos), optionally fastText one-vs-all and
softmax.  A peer that cannot run (not installed, fails) is a row saying why.  ``--valid F`` trains on the
training rows less a fraction ``F`` and scores those held out instead of the test file.  ``ova`` is ``ExtremeClassifier()`` with its defaults (one-vs-all), ``ova_*`` the
same with one option changed (:data:`VARIANTS`: the measured effect of every option); the other methods are
the registry losses and samplers (dim 128, normalised hidden and class vectors, tau 0.1, unless
``--tau``/``--plain``).  ``--sets eurlex-synthetic`` is a synthetic stand-in with EURLex-4K's sizes.

``tune``: the default's epochs, learning rate and ensemble chosen on a validation split of the training set
(``--valid`` of the training rows, never the test file): P@1/3/5 on the held-out rows for every setting of the
grid, mean over ``--seeds``.

``scaling``: synthetic sets with planted label signatures (``embkit.xc.synthetic.make_xc``) at 1e5 and 1e6
labels; each method trains epoch by epoch, P@1 on the test set is measured after every epoch (not counted
in the time), and the table gives seconds per epoch and P@1 against cumulative training time, as the LSH
paper's Table 3 / Figure 4.  Full softmax is the exact BLAS mini-batch trainer (the fastest exact
baseline here); its per-example kernel is also timed on a sample of examples.

Usage::

    python -m eval.bench.xc sets [--sets bibtex delicious] [--methods ova ...] [--peers plt ovr parabel ...]
    python -m eval.bench.xc sets --sets bibtex --methods ova ova_no_heads --valid 0.2   # the blend on validation
    python -m eval.bench.xc sets --methods ova ova_no_tfidf ova_no_row_norm ova_no_bias ova_single --peers
    python -m eval.bench.xc tune [--sets bibtex delicious] [--epochs-grid 4 6 8 10] [--seeds 1 2 3]
    python -m eval.bench.xc sets --sets delicious --plain --alpha 0.005 --negative 100 --epochs 10 \
        --methods sgns_uniform sgns_lsh                # binary logistic on dot products (one-vs-all-like)
    python -m eval.bench.xc scaling [--labels 100000 1000000] [--train 100000] [--epochs 3]
"""
import argparse
import json
import sys
import time

import numpy as np

from embkit import ExtremeClassifier
from embkit.evaluation.xc import xc_metrics
from eval.paths import shared_data

#: method name -> ExtremeClassifier keywords (on top of the common ones)
METHODS = {
    "full_softmax": dict(loss="full_softmax"),
    "full_softmax_batch": dict(loss="full_softmax", batch_size=64),
    "uniform": dict(loss="sampled_softmax", sampler="uniform"),
    "uniform_no_heads": dict(loss="sampled_softmax", sampler="uniform", heads=()),
    "log_uniform": dict(loss="sampled_softmax", sampler="log_uniform"),
    "unigram": dict(loss="sampled_softmax", sampler="unigram"),
    "lsh_label": dict(loss="sampled_softmax", sampler="lsh", sampler_params={"query": "label"}),
    "lsh_embedding": dict(loss="sampled_softmax", sampler="lsh", sampler_params={"query": "embedding"}),
    "kernel": dict(loss="sampled_softmax", sampler="kernel"),
    "topk": dict(loss="relaxed_softmax", sampler="topk"),
    "sgns_uniform": dict(loss="sgns", sampler="uniform"),
    "sgns_lsh": dict(loss="sgns", sampler="lsh"),
}
#: ``ExtremeClassifier()`` (one-vs-all, its defaults) and the variants with one option changed
VARIANTS = {
    "ova": {},
    "ova_no_heads": dict(heads=()),
    "ova_least_squares": dict(heads=("least_squares",)),
    "ova_neighbours": dict(heads=("neighbours",)),
    "ova_centroids": dict(heads=("centroids",)),
    "ova_no_tfidf": dict(feature_weighting="none"),
    "ova_no_row_norm": dict(normalize_rows=False),
    "ova_raw_features": dict(feature_weighting="none", normalize_rows=False),
    "ova_no_bias": dict(label_bias=False),
    "ova_single": dict(ensemble=1, vector_size=128),
    "ova_single_256": dict(ensemble=1, vector_size=256),
    "ova_ensemble4": dict(ensemble=4, vector_size=512),
    "ova_epochs6": dict(epochs=6),
    "ova_epochs15": dict(epochs=15),
    "ova_cosine": dict(normalize=True, tau=0.1),
    "ova_batch128": dict(batch_size=128),
}
SET_METHODS = ["ova"]
SCALING_METHODS = ["full_softmax_batch", "uniform", "log_uniform", "lsh_label", "lsh_embedding", "kernel"]


def _model(method, args, **extra):
    if method in VARIANTS:
        kw = dict(workers=args.workers, seed=args.seed, progress=False, **VARIANTS[method])
        kw.update(extra)
        return ExtremeClassifier(**kw)
    kw = dict(vector_size=args.dim, negative=args.negative, epochs=args.epochs, alpha=args.alpha,
              workers=args.workers, seed=args.seed, progress=False)
    if args.plain:
        kw.update(normalize=False, tau=1.0, normalize_classes=False)
    else:
        kw.update(normalize=True, tau=args.tau, normalize_classes=True)
    kw.update(METHODS[method])
    kw.update(extra)
    return ExtremeClassifier(**kw)


def _fmt(v):
    return "-" if v is None else "%.2f" % (100 * v)


# ------------------------------------------------------------------------------------------ sets
#: peer name -> (what the table calls it, the runner ``(train, test, args, propensity) -> dict``)
def _napkinxc(model):
    def run(train, test, args, propensity):
        from eval.peers.xc import run_napkinxc
        return run_napkinxc(train, test, model, threads=args.workers, propensity=propensity)
    return run


def _omikuji(setting):
    def run(train, test, args, propensity):
        from eval.peers.xc import run_omikuji
        return run_omikuji(train, test, setting, threads=args.workers, propensity=propensity)
    return run


def _pecos(normalize):
    def run(train, test, args, propensity):
        from eval.peers.xc import run_pecos
        return run_pecos(train, test, threads=args.workers, python=args.pecos_python, normalize=normalize,
                         propensity=propensity)
    return run


def _fasttext(loss):
    def run(train, test, args, propensity):
        from eval.peers.xc import run_fasttext
        return run_fasttext(train, test, loss=loss, epoch=args.ft_epochs, thread=args.workers,
                            propensity=propensity)
    return run


PEER_RUNNERS = {
    "plt": ("napkinXC PLT", _napkinxc("PLT")),
    "ovr": ("napkinXC OVR", _napkinxc("OVR")),
    "parabel": ("omikuji Parabel", _omikuji("parabel")),
    "bonsai": ("omikuji Bonsai", _omikuji("bonsai")),
    "pecos": ("PECOS XR-Linear", _pecos(False)),
    "pecos_unit": ("PECOS XR-Linear (unit rows)", _pecos(True)),
    "fasttext_ova": ("fastText ova", _fasttext("ova")),
    "fasttext_softmax": ("fastText softmax", _fasttext("softmax")),
}
PEERS = tuple(PEER_RUNNERS)
DEFAULT_PEERS = ["plt", "ovr", "parabel", "bonsai", "pecos", "pecos_unit"]


def run_sets(args):
    rows = []
    for name in args.sets:
        train, test = load_set(name, args.seed)
        if args.valid:
            train, test = validation_split(train, args.valid)
            name += " (validation)"
        propensity = set_propensity(name)
        print("%s: %r / %r" % (name, train, test), flush=True)
        print("| " + " | ".join(COLUMNS) + " |\n|" + "---|" * len(COLUMNS), flush=True)
        for method, seed in [(m, s) for m in args.methods for s in (args.seeds or [args.seed])]:
            model = _model(method, args, seed=seed, **({"heads": ()} if args.no_heads else {}))
            t0 = time.perf_counter()
            model.fit(train.X, train.Y)
            seconds = time.perf_counter() - t0
            t0 = time.perf_counter()
            top, _ = model.predict(test.X, k=5)
            predict_seconds = time.perf_counter() - t0
            res = _scored(test, train, top, propensity)
            label = "embkit " + method + (" (seed %d)" % seed if args.seeds else "")
            rows.append(_result_row(name, label, res, seconds, predict_seconds))
        for peer in args.peers:
            label, runner = PEER_RUNNERS[peer]
            try:
                out = runner(train, test, args, propensity or (0.55, 1.5))
            except (ImportError, RuntimeError, OSError) as exc:     # not installed, or fails here: say why
                reason = " ".join(str(exc).split()) or type(exc).__name__
                print("| %s | %s | skipped: %s |" % (name, label, reason), flush=True)
                rows.append(dict(set=name, method=label, skipped=reason))
                continue
            res = out["metrics"] if propensity else _without_psp(out["metrics"])
            rows.append(_result_row(name, label, res, out["train_seconds"], out["predict_seconds"]))
    return rows


#: synthetic sets of ``--sets``: name -> the arguments of :func:`embkit.xc.synthetic.make_xc`
SYNTHETIC_SETS = {"synthetic-1e5": dict(n_labels=100000, n_features=200000, n_train=100000, n_test=5000)}


def load_set(name, seed=1):
    """``(train, test)`` of a shared-data set by name, of ``eurlex-synthetic`` (EURLex-4K's sizes) or of a
    set of :data:`SYNTHETIC_SETS`."""
    if name == "eurlex-synthetic":
        from embkit.xc.synthetic import make_eurlex_like
        return make_eurlex_like(seed=seed)
    if name in SYNTHETIC_SETS:
        from embkit.xc.synthetic import make_xc
        return make_xc(seed=seed, **SYNTHETIC_SETS[name])
    from embkit.xc.datasets import load_xc_dataset
    return load_xc_dataset(name, shared_data("extreme-classification"))


def validation_split(train, fraction, seed=0):
    """``(fit, held out)``: the training rows split at random, ``fraction`` of them held out (the test file is
    not read)."""
    from embkit.xc.data import XCData
    order = np.random.default_rng(seed).permutation(train.n_points)
    n_valid = int(round(fraction * train.n_points))
    parts = [np.sort(order[n_valid:]), np.sort(order[:n_valid])]
    return tuple(XCData(train.X[rows], train.Y[rows], source="%s (%s rows)" % (train.source, what))
                 for rows, what in zip(parts, ("fit", "held-out")))


def set_propensity(name):
    """``(A, B)`` of the propensity model of a repository set, or None for a synthetic one (no PSP@k)."""
    name = name.replace(" (validation)", "")
    if name == "eurlex-synthetic" or name in SYNTHETIC_SETS:
        return None
    from embkit.xc.datasets import xc_dataset_info
    return xc_dataset_info(name).propensity


def _scored(test, train, top, propensity):
    if propensity is None:
        return xc_metrics(test.Y, top, ks=KS)
    A, B = propensity
    return xc_metrics(test.Y, top, ks=KS, propensity=train.Y, A=A, B=B)


def _without_psp(res):
    res.psp = {}
    return res


KS = (1, 3, 5)
COLUMNS = ["set", "method"] + ["P@%d" % k for k in KS] + ["nDCG@%d" % k for k in KS] + ["PSP@%d" % k for k in KS] \
    + ["train s", "predict s"]


def _result_row(name, method, res, seconds, predict_seconds):
    row = dict(set=name, method=method, seconds=seconds, predict_seconds=predict_seconds)
    for key, values in (("p", res.precision), ("ndcg", res.ndcg), ("psp", res.psp)):
        for k in KS:
            row["%s%d" % (key, k)] = values[k] if values else None
    print(_row_line(row), flush=True)
    return row


def _row_line(r):
    cells = [r["set"], r["method"]] + [_fmt(r["%s%d" % (key, k)]) for key in ("p", "ndcg", "psp") for k in KS]
    return "| %s | %.1f | %.2f |" % (" | ".join(cells), r["seconds"], r["predict_seconds"])


# ------------------------------------------------------------------------------------------ tune
def run_tune(args):
    """P@1/3/5 on a validation split of the training rows for every setting of the grid (mean over seeds)."""
    rows = []
    for name in args.sets:
        train, _ = load_set(name, args.seed)
        cut = np.random.default_rng(0).permutation(train.n_points)
        n_valid = int(round(args.valid * train.n_points))
        fit_rows, valid_rows = np.sort(cut[n_valid:]), np.sort(cut[:n_valid])
        X, Y = train.X[fit_rows], train.Y[fit_rows]
        Xv, Yv = train.X[valid_rows], train.Y[valid_rows]
        print("%s: %d rows to fit, %d to validate" % (name, len(fit_rows), len(valid_rows)), flush=True)
        for ensemble, width in args.members:
            for alpha in args.alphas:
                for epochs in args.epochs_grid:
                    scores, seconds = [], []
                    for seed in args.seeds:
                        model = ExtremeClassifier(ensemble=ensemble, vector_size=ensemble * width, alpha=alpha,
                                                  epochs=epochs, workers=args.workers, seed=seed, progress=False)
                        t0 = time.perf_counter()
                        model.fit(X, Y)
                        seconds.append(time.perf_counter() - t0)
                        res = model.evaluate(Xv, Yv, ks=(1, 3, 5))
                        scores.append([res.precision[k] for k in (1, 3, 5)])
                    mean = np.mean(scores, axis=0)
                    row = dict(set=name, ensemble=ensemble, width=width, alpha=alpha, epochs=epochs,
                               p1=mean[0], p3=mean[1], p5=mean[2], spread_p1=float(np.std(np.array(scores)[:, 0])),
                               seconds=float(np.mean(seconds)))
                    rows.append(row)
                    print("| %s | %d x %d | %g | %d | %s ± %.2f | %s | %s | %.1f |" % (
                        name, ensemble, width, alpha, epochs, _fmt(row["p1"]), 100 * row["spread_p1"],
                        _fmt(row["p3"]), _fmt(row["p5"]), row["seconds"]), flush=True)
    return rows


# ------------------------------------------------------------------------------------------ scaling
def run_scaling(args):
    from embkit.xc.synthetic import make_xc
    rows = []
    for n_labels in args.labels:
        t0 = time.perf_counter()
        train, test = make_xc(n_labels=n_labels, n_features=args.features, n_train=args.train, n_test=args.test,
                              label_law=args.law, seed=args.seed)
        print("labels %d: generated in %.1fs: %r" % (n_labels, time.perf_counter() - t0, train), flush=True)
        for method in args.methods:
            model = _model(method, args, heads=())      # the samplers compared on the model's own scores
            curve = []

            def on_epoch(epoch, report, model=model, curve=curve):
                p1 = model.evaluate(test.X, test.Y, ks=(1,)).precision[1]
                curve.append((float(sum(report.epoch_seconds)), float(p1)))
                print("  %s epoch %d: %.1fs cumulative, P@1 %.2f" % (method, epoch + 1, curve[-1][0], 100 * p1),
                      flush=True)
                if args.budget and curve[-1][0] > args.budget:
                    return True
                return False

            model.fit(train.X, train.Y, on_epoch=on_epoch)
            epoch_seconds = float(np.mean(model.last_report.epoch_seconds))
            rows.append(dict(labels=n_labels, method=method, epoch_seconds=epoch_seconds,
                             p1=max(p for _, p in curve), curve=curve))
            print("| %d | %s | %.1f | %s | %s |" % (n_labels, method, epoch_seconds, _fmt(rows[-1]["p1"]),
                                                     " ".join("%.0fs:%.1f" % (t, 100 * p) for t, p in curve)),
                  flush=True)
        if args.kernel_sample:
            sample = _model("full_softmax", args, epochs=1)
            idx = np.arange(min(args.kernel_sample, train.X.shape[0]))
            t1 = time.perf_counter()
            sample.fit(train.X[idx], train.Y[idx])
            per = (time.perf_counter() - t1) / len(idx)
            print("  full_softmax per-example kernel: %.1f ex/s (%.0f s per epoch extrapolated)"
                  % (1 / per, per * train.X.shape[0]), flush=True)
            rows.append(dict(labels=n_labels, method="full_softmax (kernel, extrapolated)",
                             epoch_seconds=per * train.X.shape[0], p1=None, curve=[]))
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="what", required=True)
    for name in ("sets", "scaling", "tune"):
        q = sub.add_parser(name)
        q.add_argument("--dim", type=int, default=128)
        q.add_argument("--negative", type=int, default=50)
        q.add_argument("--alpha", type=float, default=0.1)
        q.add_argument("--tau", type=float, default=0.1)
        q.add_argument("--plain", action="store_true", help="dot-product scores: no normalisation, tau 1")
        q.add_argument("--workers", type=int, default=2)
        q.add_argument("--seed", type=int, default=1)
        q.add_argument("--json", default=None, help="also write the rows to this file")
    s = sub.choices["sets"]
    s.add_argument("--sets", nargs="+", default=["bibtex", "delicious"],
                   help="shared-data sets by name, eurlex-synthetic or %s" % ", ".join(SYNTHETIC_SETS))
    s.add_argument("--methods", nargs="+", default=SET_METHODS, choices=sorted(METHODS) + list(VARIANTS))
    s.add_argument("--epochs", type=int, default=20, help="epochs of the registry-loss methods")
    s.add_argument("--peers", nargs="*", default=DEFAULT_PEERS, choices=PEERS,
                   help="napkinXC PLT/OVR, omikuji Parabel/Bonsai, PECOS XR-Linear (the defaults), fastText "
                   "one-vs-all/softmax; none with an empty list")
    s.add_argument("--pecos-python", default=None, metavar="PYTHON",
                   help="interpreter of an environment with libpecos (default: this one)")
    s.add_argument("--seeds", type=int, nargs="+", default=None, help="train every embkit method with each seed")
    s.add_argument("--no-peers", dest="peers", action="store_const", const=[], help="same as --peers with no name")
    s.add_argument("--ft-epochs", type=int, default=50)
    s.add_argument("--no-heads", action="store_true", help="every embkit model alone (heads=()): no blended heads")
    s.add_argument("--valid", type=float, default=None, metavar="FRACTION",
                   help="train on the other training rows and score this fraction of them instead of the test file")
    u = sub.choices["tune"]
    u.add_argument("--sets", nargs="+", default=["bibtex", "delicious"])
    u.add_argument("--valid", type=float, default=0.2, help="fraction of the training rows held out")
    u.add_argument("--epochs-grid", type=int, nargs="+", default=[4, 6, 8, 10])
    u.add_argument("--alphas", type=float, nargs="+", default=[0.01])
    u.add_argument("--members", type=lambda t: tuple(int(v) for v in t.split("x")), nargs="+",
                   default=[(1, 256), (4, 128)], help="ensemble x width per member, e.g. 4x128")
    u.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    c = sub.choices["scaling"]
    c.add_argument("--labels", type=int, nargs="+", default=[100000, 1000000])
    c.add_argument("--features", type=int, default=200000)
    c.add_argument("--train", type=int, default=100000)
    c.add_argument("--test", type=int, default=2000)
    c.add_argument("--law", choices=("zipf", "uniform"), default="zipf")
    c.add_argument("--methods", nargs="+", default=SCALING_METHODS, choices=sorted(METHODS))
    c.add_argument("--epochs", type=int, default=3)
    c.add_argument("--budget", type=float, default=None, help="stop a method after this many training seconds")
    c.add_argument("--kernel-sample", type=int, default=0, help="also time the per-example full softmax kernel")
    args = p.parse_args(argv)
    print("command: python -m eval.bench.xc %s" % " ".join(sys.argv[1:] if argv is None else argv), flush=True)
    rows = {"sets": run_sets, "scaling": run_scaling, "tune": run_tune}[args.what](args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
