"""``embkit items`` and ``embkit xc``: train and evaluate item embeddings and extreme classifiers in one command.

Examples
--------
::

    embkit items --data ml-100k                                   # MovieLens ratings >= 4, forward window 3
    embkit items --data path/to/ml-latest-small --loss relaxed_softmax --sampler boltzmann --T 3
    embkit items --text corpus.txt --vocab-size 15000 --window 3  # next-word prediction on text pairs
    embkit xc --data bibtex --root path/to/xc-sets                # sampled softmax, uniform, cosine / 0.1
    embkit xc --train train.txt --test test.txt --loss sampled_softmax --sampler lsh --param query=embedding
"""
import json
import logging
import os

logger = logging.getLogger(__name__)


def _value(text):
    """A ``--param`` value: int, float, bool, None or string."""
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"true": True, "false": False, "none": None}.get(text.lower(), text)


def _params(pairs, flag):
    out = {}
    for item in pairs or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            from embkit.cli import UsageError
            raise UsageError("%s takes KEY=VALUE, got %r" % (flag, item))
        out[key.replace("-", "_")] = _value(value)
    return out


def _objective_options(p, loss, sampler, negative, default_sampler="unigram"):
    g = p.add_argument_group("loss and sampler (any registered pair)")
    g.add_argument("--loss", default=loss, help="loss name (embkit.registry.LOSSES)")
    g.add_argument("--sampler", default=sampler, help="negative sampler (embkit.registry.SAMPLERS; default: %s)"
                   % default_sampler)
    g.add_argument("--negative", type=int, default=negative, metavar="K", help="negatives per positive")
    g.add_argument("--T", type=float, default=None, metavar="T", help="Boltzmann sampler temperature")
    g.add_argument("--degeneracy", choices=("uniform", "popularity"), default=None,
                   help="Boltzmann sampler degeneracy D")
    g.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="extra sampler parameter, repeatable (e.g. --param query=embedding --param K=8)")
    g.add_argument("--loss-param", action="append", metavar="KEY=VALUE", help="extra loss parameter, repeatable")
    return g


def _sampler_params(args):
    params = _params(args.param, "--param")
    if args.T is not None:
        params["T"] = args.T
    if args.degeneracy is not None:
        params["degeneracy"] = args.degeneracy
    return params


def _train_options(p, vector_size, alpha, epochs):
    g = p.add_argument_group("training")
    g.add_argument("--vector-size", type=int, default=vector_size, metavar="D", help="embedding dimension")
    g.add_argument("--alpha", type=float, default=alpha, help="initial learning rate")
    g.add_argument("--epochs", type=int, default=epochs, metavar="N", help="passes over the training data")
    g.add_argument("--workers", type=int, default=os.cpu_count() or 1, metavar="N", help="training threads")
    g.add_argument("--seed", type=int, default=1, metavar="N", help="random seed")
    return g


def _output_options(p):
    p.add_argument("-o", "--output", default=None, metavar="FILE", help="save the trained model here")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --output")
    p.add_argument("--format", choices=("table", "json"), default="table", help="report format")


# ------------------------------------------------------------------------------------------ items
def add_items(subparsers, common, formatter):
    p = subparsers.add_parser(
        "items", parents=[common], formatter_class=formatter,
        help="item embeddings for next-item prediction (MovieLens, Netflix, text pairs)",
        description="Build item -> next item pairs from user timelines (or text), split them 70/10/20, train "
                    "an ItemEmbedding with any loss and sampler, keep the best epoch on the validation split "
                    "and report likelihood, MPR and Prec@k on the test split.")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--data", metavar="NAME|PATH",
                     help="MovieLens/Netflix ratings: a file, a dataset folder, or a name (ml-100k, ml-1m, "
                          "ml-10m, ml-20m, ml-latest-small, ml-latest; downloaded once to $EMBKIT_CACHE)")
    src.add_argument("--text", metavar="PATH", help="a text corpus: pairs of the most frequent words")
    src.add_argument("--pairs", metavar="FILE", help="an 'i j count' file of co-occurrence counts")
    d = p.add_argument_group("pairs and split")
    d.add_argument("--min-rating", type=float, default=None,
                   help="keep ratings >= this (default: 4 for MovieLens, 5 for Netflix)")
    d.add_argument("--window", default="3", metavar="N|all",
                   help="pair each item with the next N of its timeline (or sentence), or 'all' later ones")
    d.add_argument("--vocab-size", type=int, default=15000, metavar="N", help="--text: words kept")
    d.add_argument("--split", type=float, nargs=3, default=(0.7, 0.1, 0.2), metavar=("TRAIN", "VAL", "TEST"),
                   help="fractions of the pair occurrences")
    d.add_argument("--split-seed", type=int, default=0, metavar="N", help="seed of the split")
    _objective_options(p, "sgns", None, 5)
    t = _train_options(p, 100, 0.025, 10)
    t.add_argument("--metric", default="mpr_approx", help="validation metric that picks the best epoch")
    t.add_argument("--patience", type=int, default=None, metavar="N",
                   help="stop after N epochs without validation improvement")
    t.add_argument("--negatives-eval", type=int, default=100, metavar="N",
                   help="uniform negatives per test pair for the approximate MPR")
    _output_options(p)
    p.set_defaults(func=cmd_items)
    return p


def _load_pairs(args):
    from embkit.cli import UsageError
    from embkit.cooccurrence import PairCounts
    try:
        window = "all" if str(args.window).lower() == "all" else int(args.window)
    except ValueError:
        raise UsageError("--window must be a positive integer or 'all', got %r" % args.window) from None
    if args.text is not None:
        return PairCounts.from_text(args.text, vocab_size=args.vocab_size, window=window)
    if args.pairs is not None:
        return PairCounts.from_triples(args.pairs)
    from embkit.timelines import load_timelines
    timelines = load_timelines(args.data, min_rating="default" if args.min_rating is None else args.min_rating)
    args.timeline_stats = str(timelines.stats())
    return PairCounts.from_timelines(timelines, window=window)


def cmd_items(args, out):
    """``embkit items``: pairs, split, train with validation, test metrics, example recommendations."""
    from embkit.cli import _check_output, _train_logging
    from embkit.items import ItemEmbedding

    _check_output(args)
    model = ItemEmbedding(vector_size=args.vector_size, loss=args.loss, sampler=args.sampler,
                          negative=args.negative, alpha=args.alpha, epochs=args.epochs, workers=args.workers,
                          seed=args.seed, sampler_params=_sampler_params(args),
                          loss_params=_params(args.loss_param, "--loss-param"), progress=not args.quiet)
    counts = _load_pairs(args)
    train, val, test = counts.split(tuple(args.split), seed=args.split_seed)
    with _train_logging():
        model.fit(train, validation=val, metric=args.metric, patience=args.patience,
                  n_negatives=args.negatives_eval)
    result = model.evaluate(test, n_negatives=args.negatives_eval, seed=args.seed)
    if args.output is not None:
        model.save(args.output, overwrite=args.overwrite)
    report = model.last_report
    stats = getattr(args, "timeline_stats", None)
    summary = {
        "data": counts.source, "items": counts.n_items, "window": counts.window, "timelines": stats,
        "pairs": {"train": train.total, "validation": val.total, "test": test.total},
        "model": repr(model), "epochs_run": report.epochs, "best_epoch": model.best_epoch,
        "seconds_per_epoch": [round(t, 3) for t in report.epoch_seconds],
        "pairs_per_second": report.words / max(sum(report.epoch_seconds), 1e-9),
        "validation": model.history, "test": result.to_dict(),
    }
    if args.format == "json":
        print(json.dumps(summary, indent=1, default=float), file=out)
        return 0
    print("data:       %s (%d items, window %s)" % (counts.source, counts.n_items, counts.window), file=out)
    if stats:
        print("timelines:  %s" % stats, file=out)
    print("pairs:      %d train, %d validation, %d test occurrences"
          % (train.total, val.total, test.total), file=out)
    print("model:      %r" % model, file=out)
    print("training:   %d epochs (best %s), %.2f s/epoch, %.0f pairs/s"
          % (report.epochs, model.best_epoch, sum(report.epoch_seconds) / max(report.epochs, 1),
             summary["pairs_per_second"]), file=out)
    print("", file=out)
    print(result, file=out)
    top_item = int(counts.item_counts.argmax())
    label = counts.label(top_item)
    recs = model.recommend(top_item, topn=5)
    print("", file=out)
    print("after %s: %s" % (label, "; ".join(counts.label(int(j)) for j in recs)), file=out)
    if args.output is not None:
        print("saved: %s" % args.output, file=out)
    return 0


# ------------------------------------------------------------------------------------------ xc
def add_xc(subparsers, common, formatter):
    p = subparsers.add_parser(
        "xc", parents=[common], formatter_class=formatter,
        help="extreme classification on XC-repository files (Bibtex, Delicious, EURLex-4K, ...)",
        description="Train an ExtremeClassifier on sparse features -> labels with any loss and sampler and "
                    "report P@k, nDCG@k and PSP@k on the test file.")
    src = p.add_argument_group("data (a named set under --root, or --train/--test files)")
    src.add_argument("--data", metavar="NAME", help="Bibtex, Delicious, EURLex-4K, AmazonCat-13K, Wiki10-31K, "
                                                     "Delicious-200K or Amazon-670K")
    src.add_argument("--root", metavar="DIR", default=".", help="folder holding the named sets")
    src.add_argument("--train", metavar="FILE", help="training file (XC format: header 'N F L')")
    src.add_argument("--test", metavar="FILE", help="test file")
    src.add_argument("--allow-mismatch", action="store_true",
                     help="accept a named set whose sizes differ from the repository's")
    _objective_options(p, "sampled_softmax", None, 50, default_sampler="uniform")
    t = _train_options(p, 128, 0.1, 20)
    t.add_argument("--tau", type=float, default=0.1, help="temperature (scores divided by it)")
    t.add_argument("--no-normalize", dest="normalize", action="store_false",
                   help="do not L2-normalise the hidden vector")
    t.add_argument("--plain-classes", dest="normalize_classes", action="store_false",
                   help="do not keep label vectors on the unit sphere (use with --tau 1)")
    t.add_argument("--one-label", action="store_true", help="one positive label per example visit")
    t.add_argument("--batch-size", type=int, default=None, help="full_softmax in BLAS mini-batches of this size")
    t.add_argument("--k", type=int, nargs="+", default=(1, 3, 5), metavar="K", help="cut-offs of the metrics")
    _output_options(p)
    p.set_defaults(func=cmd_xc)
    return p


def _load_xc(args):
    from embkit.cli import UsageError
    if args.data is not None:
        if args.train or args.test:
            raise UsageError("give either --data NAME (with --root) or --train/--test files, not both")
        from embkit.xcdatasets import load_xc_dataset
        return load_xc_dataset(args.data, args.root, allow_mismatch=args.allow_mismatch)
    if not (args.train and args.test):
        raise UsageError("give --data NAME (with --root) or both --train and --test")
    from embkit.xcdata import read_xc
    train = read_xc(args.train)
    test = read_xc(args.test, n_features=train.n_features, n_labels=train.n_labels)
    return train, test


def cmd_xc(args, out):
    """``embkit xc``: read, train, predict the test set, report the XC metrics."""
    from embkit.cli import _check_output, _train_logging
    from embkit.extreme import ExtremeClassifier

    _check_output(args)
    model = ExtremeClassifier(vector_size=args.vector_size, loss=args.loss, sampler=args.sampler,
                              negative=args.negative, normalize=args.normalize, tau=args.tau,
                              normalize_classes=args.normalize_classes, one_label=args.one_label,
                              alpha=args.alpha, epochs=args.epochs, workers=args.workers, seed=args.seed,
                              sampler_params=_sampler_params(args), batch_size=args.batch_size,
                              loss_params=_params(args.loss_param, "--loss-param"), progress=not args.quiet)
    train, test = _load_xc(args)
    with _train_logging():
        model.fit(train.X, train.Y)
    result = model.evaluate(test.X, test.Y, ks=tuple(args.k))
    if args.output is not None:
        model.save(args.output, overwrite=args.overwrite)
    report = model.last_report
    if args.format == "json":
        print(json.dumps({"train": train.stats(), "test": test.stats(), "model": repr(model),
                          "skipped_rows": model.n_skipped, "seconds_per_epoch": report.epoch_seconds,
                          "metrics": result.to_dict()}, indent=1, default=float), file=out)
        return 0
    print("train:      %r" % train, file=out)
    print("test:       %r" % test, file=out)
    print("model:      %r" % model, file=out)
    print("training:   %d epochs, %.2f s/epoch, %d rows without labels skipped"
          % (report.epochs, sum(report.epoch_seconds) / max(report.epochs, 1), model.n_skipped), file=out)
    print("", file=out)
    print(result, file=out)
    if args.output is not None:
        print("saved: %s" % args.output, file=out)
    return 0
