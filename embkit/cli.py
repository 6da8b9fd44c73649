"""The ``embkit`` command line: ``embkit train``, ``embkit eval``, ``embkit items`` and ``embkit xc``.

Examples
--------
Train skip-gram on the bundled Wikipedia sample, then print an evaluation::

    embkit train
    embkit train --corpus text8 --output text8.embkit --epochs 5
    embkit train --corpus my.txt.gz --output vectors.txt --format word2vec --overwrite

Evaluate saved vectors (an embkit model, a word2vec text/binary file or a gensim KeyedVectors file)::

    embkit eval text8.embkit
    embkit eval vectors.txt --suite ws353 simlex999 --format json
    embkit eval vectors.txt --suite msr --msr-file msr.csv           # MSR analogies (not bundled)
    embkit eval text8.embkit --suite ranking --pairs test-pairs.txt  # next-item ranking (model files only)

Item embeddings (MovieLens/Netflix/text pairs) and extreme classification: see :mod:`embkit.cli_models`::

    embkit items --data ml-100k --loss relaxed_softmax --sampler boltzmann --T 3
    embkit xc --data bibtex --root path/to/xc-sets

Exit status: 0 on success, 1 on errors (missing files, invalid parameters, divergence, download
failures), 2 on usage errors (bad options, an existing ``--output`` without ``--overwrite``, unknown
evaluation suites).  Errors are one line ``embkit: error: ...``; ``--verbose`` adds the traceback.
"""
import argparse
import contextlib
import json
import logging
import os
import sys
import traceback

logger = logging.getLogger(__name__)

PROG = "embkit"
#: Output formats of ``embkit train --format``.
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
    ("--loss", "loss", str, "loss name (see embkit.registry.LOSSES)"),
    ("--sampler", "sampler", str, "negative sampler name (see embkit.registry.SAMPLERS)"),
    ("--max-vocab-size", "max_vocab_size", int, "bound on distinct words while counting"),
    ("--max-final-vocab", "max_final_vocab", int, "keep at most this many words"),
)


class UsageError(Exception):
    """A mistake in the command line (exit status 2)."""


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Show defaults, except the uninformative None and False."""

    def _get_help_string(self, action):
        if action.default in (None, False) or "default:" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


# ------------------------------------------------------------------------------------------ parser
def _word2vec_defaults():
    """Word2Vec's constructor defaults, for the help texts (empty if the kernels are not built)."""
    try:
        import inspect
        from embkit.word2vec import Word2Vec
    except ImportError:
        return {}
    return {name: p.default for name, p in inspect.signature(Word2Vec.__init__).parameters.items()}


def _common_options():
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("output control")
    group.add_argument("-q", "--quiet", action="store_true", help="no progress bar, warnings and errors only")
    group.add_argument("-v", "--verbose", action="store_true", help="debug logging, tracebacks on errors")
    return common


def _add_train(subparsers, common):
    p = subparsers.add_parser(
        "train", parents=[common], help="train word vectors",
        description="Train skip-gram (default) or CBOW word vectors, save them, and print an evaluation.",
        formatter_class=_HelpFormatter)
    p.add_argument("--corpus", default=None, metavar="PATH|URL|NAME",
                   help="training text (one sentence per line; .gz/.bz2, folders and URLs work), or a "
                        "registered name: 'text8' (downloaded once to $EMBKIT_CACHE, default "
                        "~/.cache/embkit) or 'enwiki-sample' (bundled; used when not given)")
    p.add_argument("-o", "--output", default=None, metavar="FILE", help="where to save the model")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --output")
    p.add_argument("--format", choices=FORMATS, default="embkit",
                   help="output format: embkit model archive, or word2vec text/binary vectors")
    model = p.add_argument_group("model (unset options keep Word2Vec's defaults)")
    model.add_argument("--sg", type=int, choices=(0, 1), default=1, help="1 skip-gram, 0 CBOW")
    model.add_argument("--min-count", type=int, default=5, metavar="N", help="drop words rarer than this")
    defaults = _word2vec_defaults()
    for flag, name, kind, text in _MODEL_OPTIONS:
        default = "sgns" if name == "loss" else defaults.get(name)
        if default is not None:
            text = "%s (default: %s)" % (text, default)
        metavar = {int: "N", float: "X", str: "NAME"}[kind]
        model.add_argument(flag, dest=name, type=kind, default=None, metavar=metavar, help=text)
    model.add_argument("--shared-negatives", action="store_true",
                       help="one negative set per centre word instead of one per (centre, context) pair")
    model.add_argument("--workers", type=int, default=os.cpu_count() or 1, metavar="N", help="training threads")
    p.add_argument("--no-eval", action="store_true", help="skip the evaluation after training")
    p.set_defaults(func=cmd_train)


def _add_eval(subparsers, common):
    p = subparsers.add_parser(
        "eval", parents=[common], help="evaluate word vectors",
        description="Evaluate word vectors on word similarity and analogy benchmarks (default: WS-353, "
                    "SimLex-999 and the Google analogies).",
        formatter_class=_HelpFormatter)
    p.add_argument("vectors", metavar="MODEL_OR_VECTORS",
                   help="embkit model, word2vec text/binary file, or gensim KeyedVectors file")
    p.add_argument("--suite", nargs="+", default=None, metavar="NAME",
                   help="evaluation suites to run (default: ws353 simlex999 questions-words, plus ranking "
                        "with --pairs); valid: %s" % ", ".join(_suite_names()))
    p.add_argument("--format", choices=("table", "json"), default="table", help="report format")
    p.add_argument("--restrict-vocab", type=int, default=30000, metavar="N",
                   help="analogy candidates are the N most frequent words (0: the whole vocabulary)")
    p.add_argument("--method", choices=("3cosadd", "3cosmul"), default="3cosadd", help="analogy method")
    p.add_argument("--msr-file", default=os.environ.get("EMBKIT_MSR_FILE"), metavar="FILE",
                   help="the MSR analogies as vecto's msr.csv, for the suite 'msr' (not bundled: no licence); "
                        "default: $EMBKIT_MSR_FILE")
    ranking = p.add_argument_group("ranking (next-item prediction; needs an embkit model file)")
    ranking.add_argument("--pairs", default=None, metavar="FILE",
                         help="held-out 'context target' pairs (words or row ids), one per line; adds the "
                              "suite 'ranking'")
    ranking.add_argument("--pairs-format", choices=("auto", "words", "ids"), default="auto",
                         help="how to read --pairs (auto: ids when every field is an integer)")
    ranking.add_argument("--negatives", type=int, default=100, metavar="N",
                         help="uniform negatives per pair for the approximate MPR (0: skip it)")
    ranking.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the negative draws (default: 0)")
    p.set_defaults(func=cmd_eval)


def build_parser():
    """The argument parser of the ``embkit`` command."""
    from embkit import __version__
    parser = argparse.ArgumentParser(prog=PROG, description="Fast word2vec-style embeddings: words, items and extreme classification.")
    parser.add_argument("--version", action="version", version="%(prog)s " + __version__)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    common = _common_options()
    _add_train(subparsers, common)
    _add_eval(subparsers, common)
    from embkit.cli_models import add_items, add_xc
    add_items(subparsers, common, _HelpFormatter)
    add_xc(subparsers, common, _HelpFormatter)
    return parser


# ------------------------------------------------------------------------------------------ logging
@contextlib.contextmanager
def _logging(args):
    """Send embkit's log records to stderr for the duration of a command."""
    level = logging.DEBUG if args.verbose else logging.WARNING if args.quiet else logging.INFO
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S"))
    names = ("embkit", "gensim") if args.verbose else ("embkit",)
    saved = []
    for name in names:
        log = logging.getLogger(name)
        saved.append((log, log.level))
        log.addHandler(handler)
        log.setLevel(level)
    try:
        yield
    finally:
        for log, old_level in saved:
            log.removeHandler(handler)
            log.setLevel(old_level)


# ------------------------------------------------------------------------------------------ train
def _check_output(args):
    """Refuse an existing output (unless --overwrite) or a missing folder, before any training."""
    if args.output is None:
        return
    path = args.output
    if os.path.isdir(path):
        raise UsageError("--output %s is a directory; give a file name" % path)
    if os.path.exists(path) and not args.overwrite:
        raise UsageError("output file %s already exists; pass --overwrite to replace it" % path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError("output folder %s does not exist" % folder)


def _model_kwargs(args):
    kwargs = {"sg": args.sg, "min_count": args.min_count, "workers": args.workers,
              "shared_negatives": args.shared_negatives, "progress": not args.quiet}
    for _, name, _, _ in _MODEL_OPTIONS:
        value = getattr(args, name)
        if value is not None:
            kwargs[name] = value
    return kwargs


def _train_logging():
    """Context in which log lines do not break the progress bar."""
    try:
        from tqdm.contrib.logging import logging_redirect_tqdm
    except ImportError:  # old tqdm
        return contextlib.nullcontext()
    return logging_redirect_tqdm(loggers=[logging.getLogger("embkit")])


def _train(model):
    with _train_logging():
        return model.train()


def _save(model, args):
    if args.format == "embkit":
        model.save(args.output, overwrite=args.overwrite)
    else:
        model.save_word2vec_format(args.output, binary=args.format == "word2vec-binary", overwrite=args.overwrite)


def cmd_train(args, out):
    """``embkit train``: train, save, summarise, evaluate."""
    from embkit.datasets import resolve_corpus
    from embkit.word2vec import Word2Vec

    _check_output(args)
    model = Word2Vec(**_model_kwargs(args))  # validates the parameters before any reading
    corpus = resolve_corpus(args.corpus, progress=not args.quiet)
    logger.info("corpus: %s", corpus)
    model.build_vocab(corpus_file=corpus)
    report = _train(model)
    if args.output is not None:
        _save(model, args)
    print(training_summary(model, report, corpus), file=out)
    if args.output is not None:
        print("saved: %s (%s format)" % (args.output, args.format), file=out)
    if not args.no_eval:
        from embkit.evaluation import evaluate_all
        print("", file=out)
        print(evaluate_all(model.wv), file=out)
        neighbours = nearest_neighbours(model.wv)
        if neighbours:
            print("", file=out)
            print(neighbours, file=out)
    return 0


def training_summary(model, report, corpus):
    """Lines describing a training run: corpus, vocabulary, words, time, speed and final loss."""
    loss = report.epoch_loss[-1] if report.epoch_loss else float("nan")
    return "\n".join([
        "corpus:     %s" % corpus,
        "model:      %r" % model,
        "vocabulary: %s words (%s corpus words per epoch, %s in vocabulary)"
        % (_n(len(model.wv)), _n(model.vocab.raw_words), _n(model.vocab.total_words)),
        "training:   %d epoch%s, %s words in %.2f s: %s words/s (%s raw words/s), final loss %.4f"
        % (report.epochs, "" if report.epochs == 1 else "s", _n(report.words), report.seconds,
           _n(report.words_per_second), _n(report.raw_words_per_second), loss),
    ])


def _n(value):
    try:
        return "{:,.0f}".format(value)
    except (TypeError, ValueError):
        return str(value)


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


# ------------------------------------------------------------------------------------------ eval
#: Suite names that are not bundled files: the MSR analogies (``--msr-file``) and ranking (``--pairs``).
MSR_SUITE, RANKING_SUITE = "msr", "ranking"
MSR_SOURCE = "https://github.com/vecto-ai/word-benchmarks (word-analogy/monolingual/en/msr.csv)"


def _suite_names():
    try:
        from embkit.evaluation import bundled_data
        registry = bundled_data()
    except ImportError:
        return []
    return registry.names("similarity") + registry.names("analogy") + [MSR_SUITE, RANKING_SUITE]


def _check_suites(suites, args=None):
    """Keys of the suites to run; :class:`UsageError` for unknown names or missing suite files.

    ``args`` (``--pairs``, ``--msr-file``) adds the ranking suite and checks the files suites need.
    """
    from embkit.evaluation import DEFAULT_ANALOGY_SET, DEFAULT_SIMILARITY_SETS, bundled_data

    registry = bundled_data()
    pairs, msr_file = getattr(args, "pairs", None), getattr(args, "msr_file", None)
    if suites is None:
        keys = list(DEFAULT_SIMILARITY_SETS) + [DEFAULT_ANALOGY_SET]
    else:
        keys = list(dict.fromkeys(s.strip().lower().replace("_", "-") for s in suites))
    analogies = set(registry.ANALOGY_SETS) | {MSR_SUITE}
    valid = set(registry.SIMILARITY_SETS) | analogies | {RANKING_SUITE}
    unknown = [s for s in suites or () if s.strip().lower().replace("_", "-") not in valid]
    if unknown:
        raise UsageError("unknown evaluation suite%s %s; valid suites: %s"
                         % ("s" if len(unknown) > 1 else "", ", ".join(map(repr, unknown)),
                            ", ".join(_suite_names())))
    if sum(k in analogies for k in keys) > 1:
        raise UsageError("one analogy suite at a time, got %s" % ", ".join(k for k in keys if k in analogies))
    if MSR_SUITE in keys and not msr_file:
        raise UsageError("the MSR analogies are not bundled (their source has no licence): download msr.csv "
                         "from %s and pass --msr-file FILE" % MSR_SOURCE)
    if RANKING_SUITE in keys and not pairs:
        raise UsageError("the ranking suite needs held-out pairs: --pairs FILE")
    if pairs and RANKING_SUITE not in keys:
        keys.append(RANKING_SUITE)
    for flag, path, needed in (("--pairs", pairs, RANKING_SUITE), ("--msr-file", msr_file, MSR_SUITE)):
        if needed in keys and not os.path.isfile(path):
            raise FileNotFoundError("%s file %s does not exist" % (flag, path))
    return keys


def _run_suites(kv, keys, restrict_vocab, method, msr_file=None):
    from embkit.evaluation import EvaluationReport, bundled_data, evaluate_analogies, evaluate_similarity

    registry = bundled_data()
    report = EvaluationReport()
    for key in keys:
        if key in registry.SIMILARITY_SETS:
            report.similarity.append(evaluate_similarity(kv, key))
        elif key == MSR_SUITE:
            report.analogy = evaluate_analogies(kv, msr_file, restrict_vocab=restrict_vocab, method=method,
                                                name=MSR_SUITE)
        elif key != RANKING_SUITE:
            report.analogy = evaluate_analogies(kv, key, restrict_vocab=restrict_vocab, method=method)
    return report


def _run_ranking(tables, args):
    """The ranking suite on ``--pairs`` with the model's context and target tables."""
    from embkit.evaluation import evaluate_ranking_pairs, read_pairs

    W, O, kv = tables
    dataset = read_pairs(args.pairs, kv.key_to_index, kind=args.pairs_format, n_contexts=len(W),
                         n_targets=len(O))
    return evaluate_ranking_pairs(W, O, dataset, n_negatives=args.negatives, seed=args.seed)


def cmd_eval(args, out):
    """``embkit eval``: load vectors, run the evaluation suites, print a table or JSON."""
    from embkit.evaluation import load_model_tables
    from embkit.persist import load_vectors

    if args.restrict_vocab < 0:
        raise UsageError("--restrict-vocab must be >= 0 (0: the whole vocabulary), got %d" % args.restrict_vocab)
    if args.negatives < 0:
        raise UsageError("--negatives must be >= 0, got %d" % args.negatives)
    keys = _check_suites(args.suite, args)  # before the (slow) load
    tables = load_model_tables(args.vectors) if RANKING_SUITE in keys else None
    kv = tables[2] if tables else load_vectors(args.vectors)
    restrict = args.restrict_vocab or None
    report = _run_suites(kv, keys, restrict, args.method, args.msr_file)
    ranking = _run_ranking(tables, args) if tables else None
    if args.format == "json":
        data = {"vectors": args.vectors, "vocab_size": len(kv), "vector_size": kv.vector_size,
                "restrict_vocab": restrict}
        data.update(report.to_dict())
        if ranking is not None:
            data["ranking"] = ranking.to_dict()
        print(json.dumps(data, indent=2), file=out)
    else:
        print("vectors: %s (%s words, %d dimensions)" % (args.vectors, _n(len(kv)), kv.vector_size), file=out)
        if not len(kv):
            print("(empty vocabulary: every evaluation item is out of vocabulary)", file=out)
        for part in (report, ranking):
            text = str(part) if part is not None else ""
            if text:
                print("", file=out)
                print(text, file=out)
    return 0


# ------------------------------------------------------------------------------------------ main
def _one_line(exc):
    text = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, (OSError, ValueError, FloatingPointError, RuntimeError, UsageError, MemoryError)):
        return text
    return "%s: %s" % (type(exc).__name__, text)


def main(argv=None, out=None):
    """Run the ``embkit`` command line.

    Parameters
    ----------
    argv : list of str, optional
        Arguments without the program name (default ``sys.argv[1:]``).
    out : file, optional
        Where reports go (default ``sys.stdout``); logs and errors go to ``sys.stderr``.

    Returns
    -------
    int
        Exit status: 0 success, 1 error, 2 usage error.
    """
    out = sys.stdout if out is None else out
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error already printed by argparse
        return exc.code if isinstance(exc.code, int) else 2
    with _logging(args):
        try:
            return args.func(args, out)
        except UsageError as exc:
            print("%s: error: %s" % (PROG, _one_line(exc)), file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print("%s: interrupted" % PROG, file=sys.stderr)
            return 130
        except Exception as exc:  # noqa: BLE001 - every failure becomes one line (traceback with -v)
            if args.verbose:
                traceback.print_exc()
            print("%s: error: %s" % (PROG, _one_line(exc)), file=sys.stderr)
            return 1
