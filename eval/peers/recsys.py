"""Peer for the next-item benchmarks: the ``implicit`` library's ALS and BPR on the same split as embkit.

The item -> next-item count matrix of a rating set (:class:`embkit.items.cooccurrence.PairCounts`) is split
70/10/20 by pair occurrence (:func:`embkit.items.cooccurrence.split_pairs`); ALS and BPR are fitted on the
TRAIN matrix with each context item as a "user" row, so the user factors are context vectors and the
item factors target vectors, and :func:`embkit.evaluation.evaluate_ranking` scores them on exactly
the test pairs an embkit model is scored on (full-softmax likelihood of the dot products, approximate
and exact MPR, Prec@k; no item excluded unless ``--exclude-train``).  A popularity row (every context
ranks targets by their train count) is printed for reference.

* ALS (Hu, Koren & Volinsky 2008) reads the counts as confidences (``alpha * count``).
* BPR treats the matrix as binary (implicit ignores the values): it sees distinct pairs, not counts.
  Its item factors end with a bias column that its user factors meet with a column of ones, so the
  dot product of the two tables is BPR's score.

``--tune`` picks ALS's ``alpha`` and regularisation and BPR's learning rate on the VALIDATION split
(by approximate MPR) before the test run.  Fitting uses at most ``--threads`` threads (BLAS pinned to one).

Usage::

    python -m eval.peers.recsys --ratings ml-100k
    python -m eval.peers.recsys --ratings path/to/ml-100k --min-rating 4 --window 3 --threads 2 --tune
"""
import argparse
import os
import platform
import sys
import time

import numpy as np

from embkit.evaluation import evaluate_ranking
from embkit.items.cooccurrence import PairCounts, split_pairs
from embkit.items.timelines import load_timelines

#: Default hyper-parameters of the peers (implicit's own defaults, except the factors and alpha).
ALS_DEFAULTS = dict(factors=64, iterations=15, regularization=0.01, alpha=10.0)
BPR_DEFAULTS = dict(factors=64, iterations=100, learning_rate=0.01, regularization=0.01)
ALS_GRID = dict(alpha=(1.0, 10.0, 40.0), regularization=(0.01, 0.1, 1.0))
BPR_GRID = dict(learning_rate=(0.003, 0.01, 0.03, 0.1))


def _implicit():
    try:
        import implicit  # noqa: F401
        from threadpoolctl import threadpool_limits
    except ImportError as exc:  # the peer is optional
        raise SystemExit("the peer needs the implicit library: pip install implicit (%s)" % exc)
    return threadpool_limits


def _fit(make_model, counts):
    """Build and fit an implicit model on ``counts.matrix`` (contexts as users), BLAS held to one thread.

    Returns the context and target tables, the fit seconds and the model.
    """
    threadpool_limits = _implicit()
    matrix = counts.matrix.astype(np.float32)
    with threadpool_limits(1, "blas"):
        model = make_model()
        start = time.perf_counter()
        model.fit(matrix, show_progress=False)
        seconds = time.perf_counter() - start
    return np.asarray(model.user_factors), np.asarray(model.item_factors), seconds, model


def fit_als(train, factors=64, iterations=15, regularization=0.01, alpha=10.0, threads=2, seed=0):
    """implicit's ALS on the train counts.

    Parameters
    ----------
    train : embkit.items.cooccurrence.PairCounts
        Train split; rows (contexts) are implicit's users, columns (next items) its items.
    factors, iterations, regularization, alpha : optional
        ALS hyper-parameters (confidence of a count ``c`` is ``alpha * c``).
    threads : int
        Threads of implicit (BLAS is held to one).
    seed : int
        Random state of the initial factors.

    Returns
    -------
    context_vectors, target_vectors : numpy.ndarray of float32
        ``n_items x factors`` tables for :func:`embkit.evaluation.evaluate_ranking`.
    seconds : float
        Fit time.
    model : implicit.cpu.als.AlternatingLeastSquares
    """
    _implicit()
    from implicit.cpu.als import AlternatingLeastSquares
    return _fit(lambda: AlternatingLeastSquares(factors=factors, iterations=iterations, regularization=regularization,
                                                alpha=alpha, num_threads=threads, random_state=seed), train)


def fit_bpr(train, factors=64, iterations=100, learning_rate=0.01, regularization=0.01, threads=2, seed=0):
    """implicit's BPR on the train counts (binary: distinct pairs); returns as :func:`fit_als`.

    The tables have ``factors + 1`` columns: BPR's item bias and the matching column of ones.
    """
    _implicit()
    from implicit.cpu.bpr import BayesianPersonalizedRanking
    return _fit(lambda: BayesianPersonalizedRanking(factors=factors, iterations=iterations,
                                                    learning_rate=learning_rate, regularization=regularization,
                                                    num_threads=threads, random_state=seed), train)


def fit_implicit(method, train, factors=64, threads=2, seed=0, **params):
    """``(context_vectors, target_vectors)`` of implicit's ``'als'`` or ``'bpr'`` fitted on the train counts.

    Other hyper-parameters default to :data:`ALS_DEFAULTS` / :data:`BPR_DEFAULTS`; see :func:`fit_als`.
    """
    fits = {"als": (fit_als, ALS_DEFAULTS), "bpr": (fit_bpr, BPR_DEFAULTS)}
    if method.lower() not in fits:
        raise ValueError("method must be 'als' or 'bpr', got %r" % (method,))
    fit, defaults = fits[method.lower()]
    W, O, _, _ = fit(train, threads=threads, seed=seed, **dict(defaults, factors=factors, **params))
    return W, O


def popularity_tables(train):
    """Reference row: every context scores a target by ``log(1 + its train count as a target)``.

    Returns one-column (context, target) tables whose softmax is the smoothed target popularity.
    """
    context_vectors = np.ones((train.n_items, 1), dtype=np.float32)
    target_vectors = np.log1p(train.target_counts()).astype(np.float32)[:, None]
    return context_vectors, target_vectors


def similar_items(model, counts, item, n=10):
    """implicit's item-item view: the ``n`` items whose target vectors are closest (cosine) to ``item``'s.

    Parameters
    ----------
    model : fitted implicit model
    counts : PairCounts
        For the item names and titles.
    item : int or str
        Dense id or item name.

    Returns
    -------
    list of (str, float)
        (label, cosine) pairs, the item itself first.
    """
    item = counts.index(item) if isinstance(item, str) else int(item)
    ids, scores = model.similar_items(item, N=n)
    return [(counts.label(int(i)), float(s)) for i, s in zip(ids, scores)]


def _score(context_vectors, target_vectors, split, args, exclude=None):
    return evaluate_ranking(context_vectors, target_vectors, split.pairs(), ks=(5, 15, 50),
                            n_negatives=100, seed=args.seed, exclude=exclude, workers=args.threads)


def _tune(fit, defaults, grid, train, valid, args):
    """Pick each grid parameter in turn (others held) by approximate MPR on the validation split."""
    best = dict(defaults)
    for name, values in grid.items():
        scored = []
        for value in values:
            params = dict(best, **{name: value})
            W, O, _, _ = fit(train, threads=args.threads, seed=args.seed, **params)
            scored.append((_score(W, O, valid, args).mpr_approx, value))
        best[name] = max(scored)[1]
        print("  validation approx. MPR by %s: %s -> %s" % (
            name, ", ".join("%g: %.4f" % (v, m) for m, v in scored), best[name]))
    return best


def _min_rating(text):
    low = text.strip().lower()
    return low if low == "default" else None if low == "none" else float(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ratings", default="ml-100k", help="registered name or rating path (default ml-100k)")
    parser.add_argument("--min-rating", type=_min_rating, default="default",
                        help="keep ratings >= this ('default': 4 MovieLens, 5 Netflix; 'none': all)")
    parser.add_argument("--window", type=lambda text: text if text == "all" else int(text), default=3,
                        help="forward window, or 'all'")
    parser.add_argument("--fractions", type=float, nargs=3, default=(0.7, 0.1, 0.2))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--factors", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--tune", action="store_true", help="pick hyper-parameters on the validation split")
    parser.add_argument("--exclude-train", action="store_true", help="leave train pairs out of the rankings")
    parser.add_argument("--similar", type=int, default=3, help="show similar items of this many top items")
    args = parser.parse_args(argv)

    timelines = load_timelines(args.ratings, min_rating=args.min_rating)
    counts = PairCounts.from_timelines(timelines, window=args.window, directions="forward")
    train, valid, test = split_pairs(counts, args.fractions, seed=args.seed)
    print(timelines.stats())
    print(counts)
    print("split: train %d, validation %d, test %d pair occurrences" % (train.total, valid.total, test.total))

    als = dict(ALS_DEFAULTS, factors=args.factors)
    bpr = dict(BPR_DEFAULTS, factors=args.factors)
    if args.tune:
        print("tuning ALS")
        als = _tune(fit_als, als, ALS_GRID, train, valid, args)
        print("tuning BPR")
        bpr = _tune(fit_bpr, bpr, BPR_GRID, train, valid, args)

    exclude = train.matrix if args.exclude_train else None
    rows, models = [("popularity (reference)", {}, 0.0, _score(*popularity_tables(train), test, args, exclude))], {}
    for name, fit, params in (("implicit ALS", fit_als, als), ("implicit BPR", fit_bpr, bpr)):
        W, O, seconds, model = fit(train, threads=args.threads, seed=args.seed, **params)
        models[name] = model
        rows.append((name, params, seconds, _score(W, O, test, args, exclude)))

    command = "python -m " + " ".join(["eval.peers.recsys"] + (argv if argv is not None else sys.argv[1:]))
    import implicit
    print()
    print("`%s` (%s, %d CPUs, implicit %s, numpy %s)" % (command.strip(), platform.machine(), os.cpu_count() or 1,
                                                       implicit.__version__, np.__version__))
    print()
    print("| model | parameters | fit s | log-lik | likelihood | approx. MPR | MPR | Prec@5 | Prec@15 | Prec@50 |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, params, seconds, r in rows:
        shown = ", ".join("%s=%g" % kv for kv in params.items()) or "-"
        print("| %s | %s | %.2f | %.3f | %.2e | %.4f | %.4f | %.4f | %.4f | %.4f |" % (
            name, shown, seconds, r.log_likelihood, r.likelihood, r.mpr_approx, r.mpr, r.precision[5],
            r.precision[15], r.precision[50]))
    for name, model in models.items():
        print()
        print("%s similar items (cosine of target vectors):" % name)
        for item in range(min(args.similar, counts.n_items)):
            near = similar_items(model, counts, item, n=6)[1:]
            print("  %s: %s" % (counts.label(item), "; ".join("%s %.2f" % pair for pair in near)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
