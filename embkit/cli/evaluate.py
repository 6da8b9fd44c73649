"""``embkit eval``: evaluate word vectors on similarity, analogy and next-item ranking suites.

Examples
--------
::

    embkit eval text8.embkit
    embkit eval vectors.txt --suite ws353 simlex999 --format json
    embkit eval vectors.txt --suite msr --msr-file msr.csv           # MSR analogies (not bundled)
    embkit eval text8.embkit --suite ranking --pairs test-pairs.txt  # next-item ranking (model files only)
"""
import json
import os

from embkit.cli.common import UsageError, count, help_formatter, report_format_option


def add_parser(subparsers, common):
    p = subparsers.add_parser(
        "eval", parents=[common], help="evaluate word vectors",
        description="Evaluate word vectors on word similarity and analogy benchmarks (default: WS-353, "
                    "SimLex-999 and the Google analogies).",
        formatter_class=help_formatter())
    p.add_argument("vectors", metavar="MODEL_OR_VECTORS",
                   help="embkit model, word2vec text/binary file, or gensim KeyedVectors file (a pickle: only "
                        "with --allow-pickle)")
    p.add_argument("--allow-pickle", action="store_true",
                   help="read a gensim KeyedVectors file, which is a pickle: unpickling runs any code the file "
                        "holds, so use it only for files you trust (never for *.embkit names)")
    p.add_argument("--suite", nargs="+", default=None, metavar="NAME",
                   help="evaluation suites to run (default: ws353 simlex999 questions-words, plus ranking "
                        "with --pairs; 'similarity' is every bundled similarity set, 'analogy' the bundled "
                        "analogies); valid: %s" % ", ".join(_suite_names()))
    report_format_option(p)
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


#: Suite names that are not bundled files: the MSR analogies (``--msr-file``) and ranking (``--pairs``).
MSR_SUITE, RANKING_SUITE = "msr", "ranking"
#: suite names that stand for groups of bundled suites
ALIASES = {"similarity": "every bundled word-similarity set", "analogy": "the bundled analogy set (questions-words)"}
MSR_SOURCE = "https://github.com/vecto-ai/word-benchmarks (word-analogy/monolingual/en/msr.csv)"


def _suite_names():
    try:
        from embkit.evaluation import bundled_data
        registry = bundled_data()
    except ImportError:
        return []
    return (registry.names("similarity") + registry.names("analogy") + [MSR_SUITE, RANKING_SUITE]
            + sorted(ALIASES))


def _expand_aliases(names, registry):
    """Suite names with ``similarity`` and ``analogy`` replaced by the bundled sets they stand for."""
    from embkit.evaluation import DEFAULT_ANALOGY_SET

    out = []
    for name in names:
        key = name.strip().lower().replace("_", "-")
        if key == "similarity":
            out.extend(registry.SIMILARITY_SETS)
        elif key == "analogy":
            out.append(DEFAULT_ANALOGY_SET)
        else:
            out.append(name)
    return out


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
        suites = _expand_aliases(suites, registry)
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


def load_model_tables(path):
    """Context and target tables and the vocabulary of an embkit model file (``Word2Vec.save``).

    Returns ``(context_vectors, target_vectors, kv)``: ``model.wv.vectors``, ``model.syn1neg`` and
    ``model.wv`` (its ``key_to_index`` maps words to rows of both tables).  ValueError if the file is not
    an embkit model (word2vec and gensim files hold no output table) or its output table does not have
    one row per word (hierarchical softmax).
    """
    from embkit.core import persist
    from embkit.core.file_kinds import identify, wrong_file

    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError("model file %r does not exist" % path)
    if identify(path).name != "archive":
        raise wrong_file(path, "an embkit model file (the ranking suite needs its input and output tables)")
    model = persist.load(path)
    W, O = model.wv.vectors, getattr(model, "syn1neg", None)
    if O is None or O.shape[0] != W.shape[0]:
        rows = 0 if O is None else O.shape[0]
        raise ValueError("%r: the output table has %d rows for %d words; ranking needs one output row per "
                         "word (hierarchical-softmax models keep tree nodes instead)" % (path, rows, W.shape[0]))
    return W, O, model.wv


def cmd_eval(args, out):
    """``embkit eval``: load vectors, run the evaluation suites, print a table or JSON."""
    from embkit.text.vectors import load_vectors

    if args.restrict_vocab < 0:
        raise UsageError("--restrict-vocab must be >= 0 (0: the whole vocabulary), got %d" % args.restrict_vocab)
    if args.negatives < 0:
        raise UsageError("--negatives must be >= 0, got %d" % args.negatives)
    keys = _check_suites(args.suite, args)  # before the (slow) load
    tables = load_model_tables(args.vectors) if RANKING_SUITE in keys else None
    kv = tables[2] if tables else load_vectors(args.vectors, allow_pickle=args.allow_pickle)
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
        print("vectors: %s (%s words, %d dimensions)" % (args.vectors, count(len(kv)), kv.vector_size), file=out)
        if not len(kv):
            print("(empty vocabulary: every evaluation item is out of vocabulary)", file=out)
        for part in (report, ranking):
            text = str(part) if part is not None else ""
            if text:
                print("", file=out)
                print(text, file=out)
    return 0
