"""``embkit xc``: extreme classification on XC-repository files, with P@k, nDCG@k and PSP@k on the test file.

Examples
--------
::

    embkit xc --data bibtex --root path/to/xc-sets                # one-vs-all, tf-idf rows, 2 members
    embkit xc --data bibtex --root path/to/xc-sets --solver sampled --sampler kernel
    embkit xc --data bibtex --root path/to/xc-sets --loss sampled_softmax --sampler kernel    # the same
    embkit xc --train train.txt --test test.txt --loss sampled_softmax --sampler lsh --param query=embedding
    embkit xc --data bibtex --root path/to/xc-sets --output model.ekm
    embkit xc predict --model model.ekm --input tst_X_Xf.txt --k 5 --output top5.txt

``embkit xc predict`` writes one line per input row: its ``k`` best labels with their scores, best first,
as ``label:score`` pairs separated by blanks (fewer pairs where the model scores fewer labels).
"""
import json
import os
import sys

from embkit.cli.common import (PROG, UsageError, begin_run, check_output, checkpoint_options, help_formatter,
                               key_values, objective_options, output_options, record_command, sampler_params,
                               train_logging, train_options)
from embkit.xc.classifier import SOLVERS, ExtremeClassifier
from embkit.xc.heads import HEADS


def add_parser(subparsers, common):
    p = subparsers.add_parser(
        "xc", parents=[common], formatter_class=help_formatter(),
        help="extreme classification on XC-repository files (Bibtex, Delicious, EURLex-4K, ...)",
        description="Train an ExtremeClassifier on sparse features -> labels (one-vs-all, or any loss and "
                    "sampler of the registry) and report P@k, nDCG@k and PSP@k on the test file.")
    src = p.add_argument_group("data (a named set under --root, or --train/--test files)")
    src.add_argument("--data", metavar="NAME", help="Bibtex, Delicious, EURLex-4K, AmazonCat-13K, Wiki10-31K, "
                                                     "Delicious-200K or Amazon-670K")
    src.add_argument("--root", metavar="DIR", default=".",
                     help="folder holding the named sets (one file per split, or the newer layout "
                          "trn_X_Xf.txt, trn_X_Y.txt, tst_X_Xf.txt, tst_X_Y.txt)")
    src.add_argument("--train", metavar="FILE", help="training file (XC format: header 'N F L')")
    src.add_argument("--test", metavar="FILE", help="test file")
    src.add_argument("--allow-mismatch", action="store_true",
                     help="accept a named set whose sizes differ from the repository's")
    objective_options(p, ExtremeClassifier,
                      loss_help="logistic for --solver one_vs_all, a registry loss (embkit.core.registry.LOSSES) for "
                                "sampled; default: the solver's (logistic, sampled_softmax)")
    t = train_options(p, ExtremeClassifier)
    t.add_argument("--solver", choices=tuple(SOLVERS), default=None,
                   help="one_vs_all: logistic loss of every label, Adam on BLAS mini-batches; sampled: a registry "
                        "loss and sampler per example (default: sampled with a registry --loss, else one_vs_all)")
    t.add_argument("--tau", type=float, default=None,
                   help="temperature (scores divided by it; default 1 for one_vs_all, 0.1 for sampled)")
    t.add_argument("--normalize", dest="normalize", action="store_true", default=None,
                   help="L2-normalise the hidden vector (default for sampled)")
    t.add_argument("--no-normalize", dest="normalize", action="store_false",
                   help="do not L2-normalise the hidden vector (default for one_vs_all)")
    t.add_argument("--plain-classes", dest="normalize_classes", action="store_false", default=None,
                   help="sampled: do not keep label vectors on the unit sphere (use with --tau 1)")
    t.add_argument("--feature-weighting", choices=("tfidf", "none"), default=None,
                   help="feature weights learned on the training rows (default tfidf for one_vs_all)")
    t.add_argument("--no-row-norm", dest="normalize_rows", action="store_false", default=None,
                   help="do not L2-normalise the weighted rows (normalised by default for one_vs_all)")
    t.add_argument("--ensemble", type=int, default=None, help="one_vs_all: independent members (default 2)")
    t.add_argument("--no-label-bias", dest="label_bias", action="store_false",
                   help="one_vs_all: no learned bias per label")
    t.add_argument("--heads", nargs="*", default=None, metavar="HEAD", choices=tuple(HEADS),
                   help="closed-form label scorers blended with the model's scores, weights chosen on a held-out "
                        "fifth of the training rows, at most 2,000 (%s; default: all, but none for --loss hs; the "
                        "option alone: none)" % ", ".join(HEADS))
    t.add_argument("--one-label", action="store_true", help="sampled: one positive label per example visit")
    t.add_argument("--batch-size", type=int, default=None,
                   help="examples per step of one_vs_all (default 256), or sampled full_softmax in BLAS "
                        "mini-batches")
    t.add_argument("--k", type=int, nargs="+", default=(1, 3, 5), metavar="K", help="cut-offs of the metrics")
    output_options(p)
    checkpoint_options(p)
    p.set_defaults(func=cmd_xc)
    actions = p.add_subparsers(dest="xc_action", metavar="ACTION")
    q = actions.add_parser("predict", parents=[common], formatter_class=help_formatter(),
                           help="top-k labels of the rows of a feature file, with a saved model",
                           description="Predict the k best labels of every row of a file in either XC layout (the "
                                       "repository's format, labels ignored, or a features matrix 'rows "
                                       "columns' of the newer layout) with a model saved by 'embkit xc "
                                       "--output'; writes one line per row of label:score pairs, best first.")
    q.add_argument("--model", metavar="FILE", required=True, help="a model saved by 'embkit xc --output'")
    q.add_argument("--input", metavar="FILE", required=True, help="the rows to predict")
    q.add_argument("-o", "--output", metavar="FILE", required=True, help="where the top-k lines go")
    q.add_argument("--overwrite", action="store_true", help="replace an existing --output")
    q.add_argument("--k", type=int, default=5, help="labels per row (more than the model's labels: all of them)")
    q.add_argument("--allow-unknown-features", action="store_true",
                   help="drop feature ids beyond the model's features (default: an error naming the line)")
    q.add_argument("--workers", type=int, default=None, help="threads (default: the model's)")
    q.set_defaults(func=cmd_predict)
    return p


def cmd_predict(args, out):
    """``embkit xc predict``: a saved model's top-k labels of every row of a file, written to a file."""
    import warnings

    from embkit.xc.data import read_features
    check_output(args)
    if args.k < 1:
        raise UsageError("--k must be >= 1, got %d" % args.k)
    model = ExtremeClassifier.load(args.model)
    X, first_line = read_features(args.input)
    width = model.feature_vectors.shape[0]
    if X.shape[1] > width and not args.allow_unknown_features:
        beyond = X.indices >= width
        if beyond.any():
            entry = int(beyond.argmax())
            row = int((X.indptr <= entry).sum() - 1)
            raise ValueError("%s, line %d: feature id %d is beyond the model's %d features (ids 0..%d); pass "
                             "--allow-unknown-features to drop such features"
                             % (args.input, first_line + row, int(X.indices[entry]), width, width - 1))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ids, scores = model.predict(X, k=args.k, workers=args.workers,
                                    unknown_features="ignore" if args.allow_unknown_features else "error")
    for w in caught:
        print("%s: warning: %s: %s" % (PROG, args.input, w.message), file=sys.stderr)
    _write_top_k(args.output, ids, scores)
    print("%d rows of %s: top %d of %d labels written to %s" % (len(ids), args.input, ids.shape[1],
                                                                model.label_vectors.shape[0], args.output), file=out)
    return 0


def _write_top_k(path, ids, scores):
    """One line per row of ``label:score`` pairs (ids -1 left out), written atomically."""
    tmp = path + ".part"
    with open(tmp, "w") as fh:
        for row_ids, row_scores in zip(ids.tolist(), scores.tolist()):
            fh.write(" ".join("%d:%.6g" % (i, s) for i, s in zip(row_ids, row_scores) if i >= 0) + "\n")
    os.replace(tmp, path)


def _load_xc(args):
    if args.data is not None:
        if args.train or args.test:
            raise UsageError("give either --data NAME (with --root) or --train/--test files, not both")
        from embkit.xc.datasets import load_xc_dataset
        return load_xc_dataset(args.data, args.root, allow_mismatch=args.allow_mismatch, workers=args.workers)
    if not (args.train and args.test):
        raise UsageError("give --data NAME (with --root) or both --train and --test")
    from embkit.xc.data import read_xc
    train = read_xc(args.train, workers=args.workers)
    test = read_xc(args.test, n_features=train.n_features, n_labels=train.n_labels, workers=args.workers)
    return train, test


def cmd_xc(args, out):
    """``embkit xc``: read, train, predict the test set, report the XC metrics."""
    args = begin_run(args, out)
    if args is None:
        return 0
    model = None
    if not args.resume:
        model = ExtremeClassifier(vector_size=args.vector_size, solver=args.solver, loss=args.loss,
                                  sampler=args.sampler,
                                  negative=args.negative, normalize=args.normalize, tau=args.tau,
                                  normalize_classes=args.normalize_classes, one_label=args.one_label,
                                  alpha=args.alpha, epochs=args.epochs, workers=args.workers, seed=args.seed,
                                  sampler_params=sampler_params(args), batch_size=args.batch_size,
                                  feature_weighting=args.feature_weighting, normalize_rows=args.normalize_rows,
                                  ensemble=args.ensemble, label_bias=args.label_bias, heads=args.heads,
                                  loss_params=key_values(args.loss_param, "--loss-param"), progress=not args.quiet,
                                  checkpoint_dir=args.checkpoint_dir, checkpoint_every=args.checkpoint_every)
    train, test = _load_xc(args)
    with train_logging():
        if args.resume:
            model = ExtremeClassifier.resume(args.resume, train.X, train.Y, workers=args.workers,
                                             progress=not args.quiet)
        else:
            record_command(args)
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
