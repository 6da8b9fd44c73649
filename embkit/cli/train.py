"""``embkit train``: train skip-gram or CBOW word vectors, save them, and print an evaluation.

Examples
--------
::

    embkit train
    embkit train --corpus text8 --output text8.embkit --epochs 5
    embkit train --corpus my.txt.gz --output vectors.txt --output-format word2vec --overwrite
    embkit train --corpus my.txt.gz --no-eval --format json       # the report as JSON
"""
import json
import logging
import os

from embkit.cli.common import (begin_run, checkpoint_options, cluster_client, cluster_line, cluster_options,
                               cluster_summary, count, help_formatter, key_values, model_defaults, output_options,
                               param_options, record_command, sampler_params, train_logging)
from embkit.text.word2vec import Word2Vec

logger = logging.getLogger(__name__)

#: Formats of the file ``embkit train --output-format`` writes.
FORMATS = ("embkit", "word2vec", "word2vec-binary")
#: Words whose nearest neighbours ``embkit train`` shows when they are in the vocabulary.
PROBE_WORDS = ("king", "france", "city", "war", "music", "computer", "water", "good", "three")
N_PROBES = 4

# ``--flag`` -> Word2Vec keyword (flags left unset keep Word2Vec's own defaults)
_MODEL_OPTIONS = (
    ("--vector-size", "vector_size", int, "dimension of the vectors"),
    ("--window", "window", int, "maximum distance between a centre and a context word"),
    ("--sample", "sample", float, "subsampling threshold of frequent words (0 disables)"),
    ("--negative", "negative", int, "negative samples per example"),
    ("--ns-exponent", "ns_exponent", float, "exponent of the negative sampling distribution"),
    ("--alpha", "alpha", float, "initial learning rate"),
    ("--min-alpha", "min_alpha", float, "final learning rate"),
    ("--epochs", "epochs", int, "passes over the corpus"),
    ("--seed", "seed", int, "random seed (with --workers 1 a run is reproducible)"),
    ("--loss", "loss", str, "loss name (see embkit.core.registry.LOSSES)"),
    ("--sampler", "sampler", str, "negative sampler name (see embkit.core.registry.SAMPLERS)"),
    ("--max-vocab-size", "max_vocab_size", int, "bound on distinct words while counting"),
    ("--max-final-vocab", "max_final_vocab", int, "keep at most this many words"),
)


def add_parser(subparsers, common):
    p = subparsers.add_parser(
        "train", parents=[common], help="train word vectors",
        description="Train skip-gram (default) or CBOW word vectors, save them, and print an evaluation.",
        formatter_class=help_formatter())
    p.add_argument("--corpus", default=None, metavar="PATH|URL|NAME",
                   help="training text (one sentence per line; .gz/.bz2, folders and URLs work), or a "
                        "registered name: 'text8' (downloaded once to $EMBKIT_CACHE, default "
                        "~/.cache/embkit) or 'enwiki-sample' (bundled; used when not given)")
    output_options(p, "the model")
    p.add_argument("--output-format", choices=FORMATS, default="embkit",
                   help="format of --output: embkit model archive, or word2vec text/binary vectors")
    model = p.add_argument_group("model (unset options keep Word2Vec's defaults)")
    model.add_argument("--sg", type=int, choices=(0, 1), default=1, help="1 skip-gram, 0 CBOW")
    model.add_argument("--min-count", type=int, default=5, metavar="N", help="drop words rarer than this")
    defaults = model_defaults(Word2Vec)
    for flag, name, kind, text in _MODEL_OPTIONS:
        default = "sgns" if name == "loss" else defaults.get(name)
        if default is not None:
            text = "%s (default: %s)" % (text, default)
        metavar = {int: "N", float: "X", str: "NAME"}[kind]
        model.add_argument(flag, dest=name, type=kind, default=None, metavar=metavar, help=text)
    model.add_argument("--shared-negatives", action="store_true",
                       help="one negative set per centre word instead of one per (centre, context) pair")
    model.add_argument("--workers", type=int, default=os.cpu_count() or 1, metavar="N", help="training threads")
    param_options(model)
    p.add_argument("--no-eval", action="store_true", help="skip the evaluation after training")
    checkpoint_options(p)
    cluster_options(p)
    p.set_defaults(func=cmd_train)


def _model_kwargs(args):
    kwargs = {"sg": args.sg, "min_count": args.min_count, "workers": args.workers,
              "shared_negatives": args.shared_negatives, "progress": not args.quiet,
              "checkpoint_dir": args.checkpoint_dir, "checkpoint_every": args.checkpoint_every,
              "sampler_params": sampler_params(args), "loss_params": key_values(args.loss_param, "--loss-param")}
    for _, name, _, _ in _MODEL_OPTIONS:
        value = getattr(args, name)
        if value is not None:
            kwargs[name] = value
    return kwargs


def _save(model, args):
    if args.output_format == "embkit":
        model.save(args.output, overwrite=args.overwrite)
    else:
        model.save_word2vec_format(args.output, binary=args.output_format == "word2vec-binary",
                                   overwrite=args.overwrite)


def cmd_train(args, out):
    """``embkit train``: train, save, summarise, evaluate."""
    from embkit.text.corpora import resolve_corpus

    args = begin_run(args, out, _save)
    if args is None:
        return 0
    if args.resume:
        with cluster_client(getattr(args, "scheduler", None)) as client, train_logging():
            cluster = {} if client is None else {"client": client}
            model = Word2Vec.resume(args.resume, workers=args.workers, progress=not args.quiet, **cluster)
            model.client = None
        corpus, report = getattr(model.corpus, "source", model.corpus), model.last_report
    else:
        Word2Vec(**_model_kwargs(args))  # validates the parameters before any reading
        corpus = resolve_corpus(args.corpus, progress=not args.quiet)
        logger.info("corpus: %s", corpus)
        record_command(args)
        with cluster_client(args.scheduler) as client:
            model = Word2Vec(client=client, syncs_per_epoch=args.syncs_per_epoch, reconcile=args.reconcile,
                             exchange_share=args.exchange_share, exchange_bits=args.exchange_bits,
                             staleness=args.staleness,
                             frequent_rows=args.frequent_rows,
                             **_model_kwargs(args))
            model.build_vocab(corpus_file=corpus)
            with train_logging():
                model.train()
                report = model.last_report
            model.client = None
    if args.output is not None:
        _save(model, args)
    evaluation = None
    if not args.no_eval:
        from embkit.evaluation import evaluate_all
        evaluation = evaluate_all(model.wv)
    if args.format == "json":
        data = {"corpus": str(corpus), "model": repr(model), "vocab_size": len(model.wv),
                "raw_words": model.vocab.raw_words, "vocab_words": model.vocab.total_words,
                "training": report.to_dict(), "cluster": cluster_summary(model),
                "saved": None if args.output is None else {"path": args.output, "format": args.output_format},
                "evaluation": None if evaluation is None else evaluation.to_dict()}
        print(json.dumps(data, indent=1, default=float), file=out)
        return 0
    print(training_summary(model, report, corpus), file=out)
    if args.output is not None:
        print("saved: %s (%s format)" % (args.output, args.output_format), file=out)
    if evaluation is not None:
        print("", file=out)
        print(evaluation, file=out)
        neighbours = nearest_neighbours(model.wv)
        if neighbours:
            print("", file=out)
            print(neighbours, file=out)
    return 0


def training_summary(model, report, corpus):
    """Lines describing a training run: corpus, vocabulary, words, time, speed, final loss (and the cluster)."""
    loss = report.epoch_loss[-1] if report.epoch_loss else float("nan")
    cluster = cluster_summary(model)
    return "\n".join([
        "corpus:     %s" % corpus,
        "model:      %r" % model,
        "vocabulary: %s words (%s corpus words per epoch, %s in vocabulary)"
        % (count(len(model.wv)), count(model.vocab.raw_words), count(model.vocab.total_words)),
        "training:   %d epoch%s, %s words in %.2f s: %s words/s (%s raw words/s), final loss %.4f"
        % (report.epochs, "" if report.epochs == 1 else "s", count(report.units), report.seconds,
           count(report.units_per_second), count(report.raw_units_per_second), loss),
    ] + ([cluster_line(cluster)] if cluster else []))


def _probe_words(kv, n=N_PROBES):
    present = [w for w in PROBE_WORDS if w in kv.key_to_index]
    rank = 100
    while len(present) < n and rank < len(kv):  # fall back on mid-frequency words
        word = kv.index_to_key[rank]
        if word not in present:
            present.append(word)
        rank *= 2
    return present[:n]


def nearest_neighbours(kv, words=None, topn=5):
    """Text block: the ``topn`` nearest neighbours of a few frequent words (or of ``words``)."""
    if len(kv) < 2:
        return ""
    words = words or _probe_words(kv)
    lines = ["nearest neighbours (cosine)"]
    for word in words:
        similar = kv.most_similar(word, topn=min(topn, len(kv) - 1))
        lines.append("  %-12s %s" % (word, ", ".join("%s %.2f" % (w, s) for w, s in similar)))
    return "\n".join(lines) if len(lines) > 1 else ""
