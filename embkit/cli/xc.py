"""``embkit xc``: extreme classification on XC-repository files, with P@k, nDCG@k and PSP@k on the test file.

Examples
--------
::

    embkit xc --data bibtex --root path/to/xc-sets                # one-vs-all, tf-idf rows, 2 members
    embkit xc --data bibtex --root path/to/xc-sets --solver sampled --sampler kernel
    embkit xc --data bibtex --root path/to/xc-sets --loss sampled_softmax --sampler kernel    # the same
    embkit xc --train train.txt --test test.txt --loss sampled_softmax --sampler lsh --param query=embedding
"""
import json

from embkit.cli.common import (UsageError, check_output, checkpoint_options, finished_run, help_formatter,
                               key_values, objective_options, output_options, record_command, resumed_args,
                               sampler_params, train_logging, train_options)
from embkit.xc.classifier import SOLVERS, ExtremeClassifier


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
    t.add_argument("--one-label", action="store_true", help="sampled: one positive label per example visit")
    t.add_argument("--batch-size", type=int, default=None,
                   help="examples per step of one_vs_all (default 256), or sampled full_softmax in BLAS "
                        "mini-batches")
    t.add_argument("--k", type=int, nargs="+", default=(1, 3, 5), metavar="K", help="cut-offs of the metrics")
    output_options(p)
    checkpoint_options(p)
    p.set_defaults(func=cmd_xc)
    return p


def _load_xc(args):
    if args.data is not None:
        if args.train or args.test:
            raise UsageError("give either --data NAME (with --root) or --train/--test files, not both")
        from embkit.xc.datasets import load_xc_dataset
        return load_xc_dataset(args.data, args.root, allow_mismatch=args.allow_mismatch)
    if not (args.train and args.test):
        raise UsageError("give --data NAME (with --root) or both --train and --test")
    from embkit.xc.data import read_xc
    train = read_xc(args.train)
    test = read_xc(args.test, n_features=train.n_features, n_labels=train.n_labels)
    return train, test


def cmd_xc(args, out):
    """``embkit xc``: read, train, predict the test set, report the XC metrics."""
    args = resumed_args(args)
    if finished_run(args, lambda model: model.save(args.output, overwrite=args.overwrite), out):
        return 0
    check_output(args)
    model = None
    if not args.resume:
        model = ExtremeClassifier(vector_size=args.vector_size, solver=args.solver, loss=args.loss,
                                  sampler=args.sampler,
                                  negative=args.negative, normalize=args.normalize, tau=args.tau,
                                  normalize_classes=args.normalize_classes, one_label=args.one_label,
                                  alpha=args.alpha, epochs=args.epochs, workers=args.workers, seed=args.seed,
                                  sampler_params=sampler_params(args), batch_size=args.batch_size,
                                  feature_weighting=args.feature_weighting, normalize_rows=args.normalize_rows,
                                  ensemble=args.ensemble, label_bias=args.label_bias,
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
