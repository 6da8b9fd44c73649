"""``embkit items``: item -> next-item pairs, a held-out split, training with validation, test metrics.

Rating data (``--data``) is split leave-one-out by default: each user's last item is the test item, the one
before it the validation item, and the pairs are counted on the rest; the best epoch by validation NDCG@10
is kept and the test report is Hit@k, NDCG@k, Prec@k and MPR over all unseen items.  ``--protocol pairs``
(and ``--text`` or ``--pairs`` data) splits the pair occurrences 70/10/20 instead and reports likelihood,
MPR and Prec@k of the test pairs (the relaxed-softmax paper's protocol).

Examples
--------
::

    embkit items --data ml-100k                                   # MovieLens ratings >= 4, leave-one-out
    embkit items --data path/to/ml-latest-small --protocol pairs --loss relaxed_softmax --sampler boltzmann
    embkit items --text corpus.txt --vocab-size 15000 --window 3  # next-word prediction on text pairs
    embkit items --data ml-100k --scheduler local:2               # trained on a Dask cluster
"""
import json

from embkit.cli.common import (UsageError, begin_run, checkpoint_options, cluster_client, cluster_line, cluster_options,
                               cluster_summary, help_formatter, key_values, model_defaults, objective_options,
                               output_options, record_command, sampler_params, train_logging, train_options)
from embkit.core.validation import KEEPS
from embkit.items.cooccurrence import DEFAULT_DIRECTIONS, DEFAULT_WINDOW, DIRECTIONS
from embkit.items.count_blend import COUNT_NORMS
from embkit.items.item_embedding import DEFAULT_KEEP, ItemEmbedding

#: ``--protocol`` values: leave-one-out (rating data only) and the split of the pair occurrences.
PROTOCOLS = ("leave-one-out", "pairs")


def add_parser(subparsers, common):
    p = subparsers.add_parser(
        "items", parents=[common], formatter_class=help_formatter(),
        help="item embeddings for next-item prediction (MovieLens, Netflix, text pairs)",
        description="Build item -> next item pairs from user timelines (or text), hold out each user's last "
                    "items (or 30%% of the pairs), train an ItemEmbedding with any loss and sampler, keep the best "
                    "epoch on the validation split and report the test metrics.")
    src = p.add_mutually_exclusive_group()      # one of them is required unless --resume
    src.add_argument("--data", metavar="NAME|PATH",
                     help="MovieLens/Netflix ratings: a file, a dataset folder, or a name (ml-100k, ml-1m, "
                          "ml-10m, ml-20m, ml-latest-small, ml-latest; downloaded once to $EMBKIT_CACHE)")
    src.add_argument("--text", metavar="PATH", help="a text corpus: pairs of the most frequent words")
    src.add_argument("--pairs", metavar="FILE", help="an 'i j count' file of co-occurrence counts")
    d = p.add_argument_group("pairs and split")
    d.add_argument("--min-rating", type=float, default=None,
                   help="keep ratings >= this (default: 4 for MovieLens, 5 for Netflix)")
    d.add_argument("--window", default=str(DEFAULT_WINDOW), metavar="N|all",
                   help="pair each item with the next N of its timeline (or sentence), or 'all' later ones")
    d.add_argument("--directions", choices=DIRECTIONS, default=None,
                   help="--data: count each pair of a timeline both ways (%s, the default with leave-one-out) or "
                        "earlier -> later only (forward, the default with --protocol pairs)" % DEFAULT_DIRECTIONS)
    d.add_argument("--vocab-size", type=int, default=15000, metavar="N", help="--text: words kept")
    d.add_argument("--protocol", choices=PROTOCOLS, default=None,
                   help="how --data is split: each user's last item for test and the one before for validation "
                        "(leave-one-out, the default), or the pair occurrences by --split (pairs; always so for "
                        "--text and --pairs)")
    d.add_argument("--split", type=float, nargs=3, default=(0.7, 0.1, 0.2), metavar=("TRAIN", "VAL", "TEST"),
                   help="--protocol pairs: fractions of the pair occurrences")
    d.add_argument("--split-seed", type=int, default=0, metavar="N", help="--protocol pairs: seed of the split")
    objective_options(p, ItemEmbedding)
    t = train_options(p, ItemEmbedding)
    t.add_argument("--recency", type=float, default=model_defaults(ItemEmbedding)["recency"], metavar="R",
                   help="weight ratio of an item of a user's history to the item after it")
    t.add_argument("--count-weight", type=float, default=None, metavar="W",
                   help="weight of the log of a history's co-occurrence counts in its scores (default: chosen on the "
                        "validation users with leave-one-out, 0 otherwise)")
    t.add_argument("--count-norm", choices=COUNT_NORMS, default=model_defaults(ItemEmbedding)["count_norm"],
                   help="how the blended counts are prepared: divided by the geometric mean of their items' pair "
                        "counts (cosine, the default) or raw (none)")
    t.add_argument("--metric", default=None,
                   help="validation metric that picks the best epoch (default: ndcg10 leave-one-out, mpr_approx "
                        "for pairs)")
    t.add_argument("--patience", type=int, default=0, metavar="N",
                   help="stop after N epochs without validation improvement (0, the default: run every epoch; "
                        "the best epoch is kept either way, see --keep)")
    t.add_argument("--keep", choices=KEEPS, default=DEFAULT_KEEP,
                   help="the tables kept after validation: the mean of those of the best epoch and of the epochs "
                        "after it (average, the default) or the best epoch's (best)")
    t.add_argument("--negatives-eval", type=int, default=100, metavar="N",
                   help="--protocol pairs: uniform negatives per test pair for the approximate MPR")
    output_options(p)
    checkpoint_options(p)
    cluster_options(p)
    p.set_defaults(func=cmd_items)
    return p


def _window(args):
    try:
        return "all" if str(args.window).lower() == "all" else int(args.window)
    except ValueError:
        raise UsageError("--window must be a positive integer or 'all', got %r" % args.window) from None


def _load_data(args):
    """``(counts, train, validation, test)``: the pair counts (for labels) and the three splits."""
    if args.data is None and args.text is None and args.pairs is None:
        raise UsageError("give one of --data, --text or --pairs (or --resume DIR)")
    from embkit.items.cooccurrence import PairCounts
    window = _window(args)
    if args.data is None and args.protocol == "leave-one-out":
        raise UsageError("--protocol leave-one-out needs user timelines (--data)")
    if args.data is None and args.directions is not None:
        raise UsageError("--directions needs user timelines (--data)")
    if args.text is not None:
        counts = PairCounts.from_text(args.text, vocab_size=args.vocab_size, window=window)
    elif args.pairs is not None:
        counts = PairCounts.from_triples(args.pairs)
    else:
        from embkit.items.timelines import load_timelines
        timelines = load_timelines(args.data, min_rating="default" if args.min_rating is None else args.min_rating)
        args.timeline_stats = str(timelines.stats())
        if args.protocol != "pairs":
            from embkit.items.leave_one_out import leave_one_out
            split = leave_one_out(timelines)
            train = PairCounts.from_timelines(split.train, window=window,
                                              directions=args.directions or DEFAULT_DIRECTIONS, workers=args.workers)
            return train, train, split.validation, split.test
        counts = PairCounts.from_timelines(timelines, window=window, directions=args.directions or "forward",
                                           workers=args.workers)
    return (counts,) + counts.split(tuple(args.split), seed=args.split_seed)


def cmd_items(args, out):
    """``embkit items``: pairs, split, train with validation, test metrics, example recommendations."""
    args = begin_run(args, out)
    if args is None:
        return 0
    params = None
    if args.patience is not None and args.patience < 0:
        raise UsageError("--patience must be >= 0, got %d" % args.patience)
    if not args.resume:
        params = dict(vector_size=args.vector_size, loss=args.loss, sampler=args.sampler, negative=args.negative,
                      alpha=args.alpha, epochs=args.epochs, workers=args.workers, seed=args.seed,
                      recency=args.recency, count_weight=args.count_weight, count_norm=args.count_norm,
                      sampler_params=sampler_params(args),
                      loss_params=key_values(args.loss_param, "--loss-param"), progress=not args.quiet,
                      checkpoint_dir=args.checkpoint_dir, checkpoint_every=args.checkpoint_every,
                      syncs_per_epoch=args.syncs_per_epoch, reconcile=args.reconcile,
                      exchange_share=args.exchange_share, exchange_bits=args.exchange_bits, staleness=args.staleness,
                      frequent_rows=args.frequent_rows)
        ItemEmbedding(**params)     # checks the parameters before any reading
    counts, train, val, test = _load_data(args)
    protocol = "pairs" if hasattr(test, "matrix") else "leave-one-out"
    with cluster_client(args.scheduler) as client, train_logging():
        cluster = {} if client is None else {"client": client}
        if args.resume:
            model = ItemEmbedding.resume(args.resume, train, validation=val, workers=args.workers,
                                         progress=not args.quiet, **cluster)
        else:
            record_command(args)
            model = ItemEmbedding(**params, **cluster)
            model.fit(train, validation=val, metric=args.metric, patience=args.patience or None,
                      n_negatives=args.negatives_eval, keep=args.keep)
        model.client = None
    if protocol == "pairs":
        result = model.evaluate(test, n_negatives=args.negatives_eval, seed=args.seed)
        held_out = {"train": train.total, "validation": val.total, "test": test.total}
    else:
        result = model.evaluate(test)
        held_out = {"train": train.total, "validation users": len(val), "test users": len(test)}
    if args.output is not None:
        model.save(args.output, overwrite=args.overwrite)
    report = model.last_report
    stats = getattr(args, "timeline_stats", None)
    summary = {
        "data": counts.source, "protocol": protocol, "items": counts.n_items, "window": counts.window,
        "directions": counts.directions, "timelines": stats, "pairs": held_out, "model": repr(model),
        "epochs_run": report.epochs, "best_epoch": model.best_epoch, "count_weight": model.blend_weight,
        "seconds": round(sum(report.epoch_seconds), 3),
        "seconds_per_epoch": [round(t, 3) for t in report.epoch_seconds],
        "pairs_per_second": report.units / max(sum(report.epoch_seconds), 1e-9),
        "validation": model.history, "test": result.to_dict(), "cluster": cluster_summary(model),
    }
    if args.format == "json":
        print(json.dumps(summary, indent=1, default=float), file=out)
        return 0
    print("data:       %s (%d items, window %s, %s pairs)" % (counts.source, counts.n_items, counts.window,
                                                            counts.directions), file=out)
    if stats:
        print("timelines:  %s" % stats, file=out)
    if protocol == "pairs":
        print("pairs:      %d train, %d validation, %d test occurrences" % (train.total, val.total, test.total),
              file=out)
    else:
        print("split:      leave-one-out: %d train pairs; last item of %d users for validation, of %d for test"
              % (train.total, len(val), len(test)), file=out)
    print("model:      %r" % model, file=out)
    print("training:   %d epochs (best %s), %.2f s/epoch, %.0f pairs/s; count weight %g"
          % (report.epochs, model.best_epoch, sum(report.epoch_seconds) / max(report.epochs, 1),
             summary["pairs_per_second"], model.blend_weight), file=out)
    if summary["cluster"]:
        print(cluster_line(summary["cluster"]), file=out)
    print("", file=out)
    print(result, file=out)
    top = counts.ids[int(counts.item_counts.argmax())]
    recs, _ = model.recommend(top, N=5)
    print("", file=out)
    print("after %s: %s" % (_label(counts, top), "; ".join(_label(counts, item) for item in recs.tolist())),
          file=out)
    if args.output is not None:
        print("saved: %s" % args.output, file=out)
    return 0


def _label(counts, item):
    """Title (or id) of an item id of ``counts``."""
    return counts.label(counts.index(item))
