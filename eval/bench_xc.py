"""Extreme classification: P@k per sampler on Bibtex/Delicious against fastText, and scaling on synthetic data.

``sets``: every method trains an ExtremeClassifier (dim 128, normalised hidden and class vectors, tau 0.1,
unless ``--tau``/``--plain``) on the train file and is scored on the test file (P@1/3/5, nDCG@5, PSP@5),
with fastText supervised (one-vs-all and softmax) trained and scored on the same files in the same run.

``scaling``: synthetic sets with planted label signatures (``embkit.xc.synthetic.make_xc``) at 1e5 and 1e6
labels; each method trains epoch by epoch, P@1 on the test set is measured after every epoch (not counted
in the time), and the table gives seconds per epoch and P@1 against cumulative training time, as the LSH
paper's Table 3 / Figure 4.  Full softmax is the exact BLAS mini-batch trainer (the fastest exact
baseline here); its per-example kernel is also timed on a sample of examples.

Usage::

    python eval/bench_xc.py sets [--sets bibtex delicious] [--epochs 20] [--methods ...] [--no-peers]
    python eval/bench_xc.py sets --sets delicious --plain --alpha 0.005 --negative 100 --epochs 10 \
        --methods sgns_uniform sgns_lsh                # binary logistic on dot products (one-vs-all-like)
    python eval/bench_xc.py scaling [--labels 100000 1000000] [--train 100000] [--epochs 3]
"""
import argparse
import json
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from embkit import ExtremeClassifier  # noqa: E402

#: method name -> ExtremeClassifier keywords (on top of the common ones)
METHODS = {
    "full_softmax": dict(loss="full_softmax"),
    "full_softmax_batch": dict(loss="full_softmax", batch_size=64),
    "uniform": dict(loss="sampled_softmax", sampler="uniform"),
    "log_uniform": dict(loss="sampled_softmax", sampler="log_uniform"),
    "unigram": dict(loss="sampled_softmax", sampler="unigram"),
    "lsh_label": dict(loss="sampled_softmax", sampler="lsh", sampler_params={"query": "label"}),
    "lsh_embedding": dict(loss="sampled_softmax", sampler="lsh", sampler_params={"query": "embedding"}),
    "kernel": dict(loss="sampled_softmax", sampler="kernel"),
    "topk": dict(loss="relaxed_softmax", sampler="topk"),
    "sgns_uniform": dict(loss="sgns", sampler="uniform"),
    "sgns_lsh": dict(loss="sgns", sampler="lsh"),
}
SET_METHODS = ["full_softmax", "uniform", "log_uniform", "unigram", "lsh_label", "lsh_embedding", "kernel", "topk"]
SCALING_METHODS = ["full_softmax_batch", "uniform", "log_uniform", "lsh_label", "lsh_embedding", "kernel"]


def shared_root():
    return os.environ.get("EMBKIT_SHARED_DATA") or os.path.join(os.path.dirname(HERE), "..", "shared", "data")


def _model(method, args, **extra):
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
def run_sets(args):
    from embkit.xc.datasets import load_xc_dataset
    rows = []
    for name in args.sets:
        train, test = load_xc_dataset(name, os.path.join(shared_root(), "extreme-classification"))
        print("%s: %r / %r" % (name, train, test), flush=True)
        for method in args.methods:
            model = _model(method, args)
            t0 = time.perf_counter()
            model.fit(train.X, train.Y)
            seconds = time.perf_counter() - t0
            res = model.evaluate(test.X, test.Y, ks=(1, 3, 5))
            row = dict(set=name, method="embkit " + method, p1=res.precision[1], p3=res.precision[3],
                       p5=res.precision[5], ndcg5=res.ndcg[5], psp5=res.psp[5] if res.psp else None,
                       seconds=seconds, epoch_seconds=float(np.mean(model.last_report.epoch_seconds)))
            rows.append(row)
            print(_row_line(row), flush=True)
        if not args.no_peers:
            import xc_peers
            for loss in ("ova", "softmax"):
                out = xc_peers.run_fasttext(train, test, loss=loss, epoch=args.ft_epochs, thread=args.workers)
                res = out["metrics"]
                row = dict(set=name, method="fastText " + loss, p1=res.precision[1], p3=res.precision[3],
                           p5=res.precision[5], ndcg5=res.ndcg[5], psp5=res.psp[5] if res.psp else None,
                           seconds=out["train_seconds"], epoch_seconds=out["train_seconds"] / args.ft_epochs)
                rows.append(row)
                print(_row_line(row), flush=True)
    return rows


def _row_line(r):
    return "| %s | %s | %s | %s | %s | %s | %s | %.1f | %.2f |" % (
        r["set"], r["method"], _fmt(r["p1"]), _fmt(r["p3"]), _fmt(r["p5"]), _fmt(r["ndcg5"]), _fmt(r["psp5"]),
        r["seconds"], r["epoch_seconds"])


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
            model = _model(method, args)
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
    for name in ("sets", "scaling"):
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
    s.add_argument("--sets", nargs="+", default=["bibtex", "delicious"])
    s.add_argument("--methods", nargs="+", default=SET_METHODS, choices=sorted(METHODS))
    s.add_argument("--epochs", type=int, default=20)
    s.add_argument("--ft-epochs", type=int, default=50)
    s.add_argument("--no-peers", action="store_true")
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
    print("command: python eval/bench_xc.py %s" % " ".join(sys.argv[1:] if argv is None else argv), flush=True)
    rows = run_sets(args) if args.what == "sets" else run_scaling(args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
