"""Benchmark: embkit Word2Vec against gensim (and optionally fastText) on the same corpus.

Every trainer gets the same hyper-parameters (skip-gram, 100 dimensions, window 5, 5 negatives,
sample 1e-3, min_count 5, 5 epochs, 2 workers by default) and reads the same plain-text copy of the
corpus: a compressed corpus is decompressed once to a temporary file before any timing (gensim's
``corpus_file`` mode and fastText need plain text).  Each trainer runs alone, one after the other, in its
own child process (``python -m eval.bench.word2vec --child embkit ...``), so its peak memory is its own
(the child's resident high-water mark, read right after training, before the evaluation); the child prints its
measurements as one JSON line on stdout.

Measured per trainer
    wall s        vocabulary + training: ``embkit.Word2Vec(corpus_file=...)``; gensim ``build_vocab`` +
                  ``train`` with ``corpus_file`` (its fastest path, threads read byte ranges of the file);
                  ``fasttext.train_unsupervised``
    train s       training only: embkit ``last_report.seconds``, gensim's ``train`` call; fastText has no
                  separate timing, so its train s is its wall s (vocabulary included)
    raw words/s   corpus tokens (out-of-vocabulary ones included) x epochs / train s: embkit's report,
                  gensim's ``corpus_total_words`` x epochs (``train``'s returned raw count is kept in the
                  JSON as ``raw_words_reported``), the parent's token count x epochs for fastText
    peak MB       the child's resident high-water mark after training: ``VmHWM`` of ``/proc/self/status``
                  (``ru_maxrss`` where there is no ``/proc``: on Linux it keeps the parent's peak across the
                  child's exec, so a parent that has grown, as in ``eval.repro.reproduce all``, would show)
    quality       Google analogies (``KeyedVectors.evaluate_word_analogies`` of gensim, restrict_vocab
                  30000; ``--analogy-impl embkit`` uses embkit's faster equivalent), WS-353 and SimLex-999
                  Spearman (``embkit.evaluation.evaluate_similarity``); the same code for every trainer

The parent prints a markdown table, the ratios embkit / peer, and the exact command line; ``--json FILE``
saves everything.  Nothing is asserted: timings depend on the machine and its load.

Usage::

    python -m eval.bench.word2vec                                   # GCIDE, embkit vs gensim
    python -m eval.bench.word2vec --peers gensim,fasttext --scaling --json bench.json
    python -m eval.bench.word2vec --corpus embkit/data/enwiki-sample.txt.gz --epochs 1
    python -m eval.bench.word2vec --embkit-args shared_negatives=True chunk_tokens=262144
    python -m eval.bench.word2vec --from-json bench.json            # the tables of a saved run

The default corpus is ``corpora/gcide.txt.gz`` in the shared data folder: ``$EMBKIT_SHARED_DATA``
(relative paths are taken from the repository root), else ``../shared/data`` next to the repository.
"""
import argparse
import ast
import bz2
import gzip
import importlib.util
import json
import logging
import lzma
import os
import platform
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

from eval.paths import REPO_ROOT, shared_data

PEERS = ("gensim", "fasttext")
TRAINERS = ("embkit",) + PEERS
OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
#: Columns of the table: (result key, title, format).
COLUMNS = (
    ("wall_s", "wall s", "%.2f"),
    ("train_s", "train s", "%.2f"),
    ("raw_words_per_s", "raw words/s", "{:,.0f}"),
    ("peak_mb", "peak MB", "%.0f"),
    ("analogy", "analogy", "%.4f"),
    ("ws353", "WS-353", "%.4f"),
    ("simlex999", "SimLex", "%.4f"),
)


def default_corpus():
    """The shared data's ``corpora/gcide.txt.gz``."""
    return shared_data("corpora", "gcide.txt.gz")


# ----------------------------------------------------------------------------------------- options
def parse_kwargs(items):
    """``["key=value", ...]`` -> dict, values read as Python literals (strings when they are not)."""
    kwargs = {}
    for item in items or ():
        for part in item.split(","):
            if not part.strip():
                continue
            key, sep, value = part.partition("=")
            if not sep or not key.strip().isidentifier():
                raise argparse.ArgumentTypeError("--embkit-args wants KEY=VALUE items, got %r" % part)
            try:
                kwargs[key.strip()] = ast.literal_eval(value.strip())
            except (ValueError, SyntaxError):
                kwargs[key.strip()] = value.strip()
    return kwargs


def parse_peers(text):
    peers = [p.strip().lower() for p in text.split(",") if p.strip()]
    unknown = [p for p in peers if p not in PEERS]
    if unknown:
        raise argparse.ArgumentTypeError("unknown peer %s; valid: %s" % (", ".join(unknown), ", ".join(PEERS)))
    return list(dict.fromkeys(peers))


def build_parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--corpus", default=default_corpus(), help="training text (plain, .gz, .bz2 or .xz)")
    p.add_argument("--sg", type=int, choices=(0, 1), default=1, help="1 skip-gram, 0 CBOW")
    p.add_argument("--vector-size", type=int, default=100)
    p.add_argument("--window", type=int, default=5)
    p.add_argument("--negative", type=int, default=5)
    p.add_argument("--sample", type=float, default=1e-3)
    p.add_argument("--min-count", type=int, default=5)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--alpha", type=float, default=None,
                   help="learning rate of embkit and gensim (default: each library's own: embkit 0.05, "
                        "gensim 0.025)")
    p.add_argument("--fasttext-lr", type=float, default=None,
                   help="fastText learning rate (default: fastText's own, 0.05 for skip-gram)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--peers", type=parse_peers, default=["gensim"], help="comma-separated: gensim,fasttext")
    p.add_argument("--embkit-args", nargs="+", action="extend", default=[], metavar="KEY=VALUE",
                   help="extra embkit Word2Vec keyword arguments, e.g. shared_negatives=True")
    p.add_argument("--scaling", action="store_true", help="also run embkit with workers=1; report the scaling")
    p.add_argument("--restrict-vocab", type=int, default=30000, help="analogy candidates")
    p.add_argument("--analogy-impl", choices=("gensim", "embkit"), default="gensim",
                   help="analogy evaluation code (the same answers; embkit's is batched and faster)")
    p.add_argument("--json", default=None, metavar="FILE", help="write the results as JSON")
    p.add_argument("--tmpdir", default=None, help="where to put the decompressed corpus")
    p.add_argument("--verbose", action="store_true", help="the trainers' INFO logs on stderr")
    p.add_argument("--from-json", default=None, metavar="FILE",
                   help="run nothing: print the tables of a run saved with --json")
    # internal: child mode
    p.add_argument("--child", choices=TRAINERS, default=None, help=argparse.SUPPRESS)
    p.add_argument("--corpus-tokens", type=int, default=None, help=argparse.SUPPRESS)
    return p


# ----------------------------------------------------------------------------------------- child side
def _peak_mb():
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0     # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # kilobytes on Linux


def train_embkit(args):
    import gensim.models  # noqa: F401 - embkit imports it lazily for KeyedVectors: keep it out of the timing
    from embkit import Word2Vec

    kwargs = dict(sg=args.sg, vector_size=args.vector_size, window=args.window, negative=args.negative,
                  sample=args.sample, min_count=args.min_count, epochs=args.epochs, workers=args.workers,
                  seed=args.seed)
    if args.alpha is not None:
        kwargs["alpha"] = args.alpha
    kwargs.update(parse_kwargs(args.embkit_args))
    start = time.perf_counter()
    model = Word2Vec(corpus_file=args.corpus, **kwargs)
    wall = time.perf_counter() - start
    report = model.last_report
    return model.wv, {"wall_s": wall, "train_s": report.seconds, "raw_words": report.raw_words,
                      "effective_words": report.words,
                      "final_loss": report.epoch_loss[-1] if report.epoch_loss else None,
                      "params": {k: v for k, v in kwargs.items()}}


def train_gensim(args):
    from gensim.models import Word2Vec

    kwargs = dict(sg=args.sg, vector_size=args.vector_size, window=args.window, negative=args.negative,
                  hs=0, sample=args.sample, min_count=args.min_count, epochs=args.epochs, workers=args.workers,
                  seed=args.seed)
    if args.alpha is not None:
        kwargs["alpha"] = args.alpha
    start = time.perf_counter()
    model = Word2Vec(**kwargs)
    model.build_vocab(corpus_file=args.corpus)
    vocab_done = time.perf_counter()
    effective, raw = model.train(corpus_file=args.corpus, total_examples=model.corpus_count,
                                 total_words=model.corpus_total_words, epochs=model.epochs)
    end = time.perf_counter()
    # corpus tokens x epochs; train's own raw count (kept for reference) over-counts a little in
    # corpus_file mode, where each thread reads a byte range of the file
    return model.wv, {"wall_s": end - start, "train_s": end - vocab_done,
                      "raw_words": model.corpus_total_words * model.epochs, "raw_words_reported": raw,
                      "effective_words": effective, "corpus_total_words": model.corpus_total_words,
                      "params": kwargs}


def train_fasttext(args):
    import fasttext

    kwargs = dict(model="skipgram" if args.sg else "cbow", dim=args.vector_size, ws=args.window,
                  neg=args.negative, t=args.sample, minCount=args.min_count, epoch=args.epochs,
                  thread=args.workers, minn=0, maxn=0, verbose=2 if args.verbose else 0)
    if args.fasttext_lr is not None:
        kwargs["lr"] = args.fasttext_lr
    start = time.perf_counter()
    model = fasttext.train_unsupervised(args.corpus, **kwargs)
    wall = time.perf_counter() - start
    tokens = args.corpus_tokens
    info = {"wall_s": wall, "train_s": wall, "raw_words": tokens * args.epochs if tokens else None,
            "params": kwargs, "note": "train s includes the vocabulary (no separate timing)"}
    return model, info


def fasttext_vectors(model):
    """fastText word vectors as gensim KeyedVectors, most frequent first, without the ``</s>`` token."""
    import numpy as np
    from gensim.models import KeyedVectors

    words = [w for w in model.get_words() if w != "</s>"]
    kv = KeyedVectors(model.get_dimension(), count=0, dtype=np.float32)
    kv.add_vectors(words, np.array([model.get_word_vector(w) for w in words], dtype=np.float32))
    return kv


#: seconds to wait after an evaluation: OpenBLAS's idle threads spin (yielding) for 2**28 cycles by default
#: (``OPENBLAS_THREAD_TIMEOUT``), about 0.1 s, after each threaded product before they sleep, and a run timed
#: right after the evaluation's products would share the cores with them (BENCHMARKS.md, "2 cores")
BLAS_SETTLE_S = 0.5


def evaluate(kv, restrict_vocab, analogy_impl):
    """Analogy accuracy, WS-353 and SimLex-999 Spearman: the same code whatever the trainer.  Returns after
    the BLAS threads its products woke have gone idle (:data:`BLAS_SETTLE_S`)."""
    from embkit.evaluation import bundled_data, evaluate_analogies, evaluate_similarity

    scores = {name: evaluate_similarity(kv, name).spearman for name in ("ws353", "simlex999")}
    start = time.perf_counter()
    if analogy_impl == "gensim":
        accuracy, sections = kv.evaluate_word_analogies(bundled_data().path("questions-words"),
                                                        restrict_vocab=restrict_vocab)
        total = sections[-1]
        scores["analogy"] = float(accuracy) if (total["correct"] or total["incorrect"]) else None
        scores["analogy_attempted"] = len(total["correct"]) + len(total["incorrect"])
    else:
        result = evaluate_analogies(kv, "questions-words", restrict_vocab=restrict_vocab)
        scores["analogy"] = result.accuracy
        scores["analogy_attempted"] = result.total.attempted
    scores["analogy_seconds"] = time.perf_counter() - start
    time.sleep(BLAS_SETTLE_S)
    return scores


def run_child(args):
    """Train one system, measure it, print one JSON line on stdout."""
    level = logging.INFO if args.verbose else logging.WARNING
    logging.basicConfig(level=level, stream=sys.stderr, format="%(asctime)s %(name)s: %(message)s")
    logging.getLogger("gensim").setLevel(level)
    trainer = {"embkit": train_embkit, "gensim": train_gensim, "fasttext": train_fasttext}[args.child]
    model, info = trainer(args)
    info["peak_mb"] = _peak_mb()  # before the evaluation allocates anything
    kv = fasttext_vectors(model) if args.child == "fasttext" else model
    info["vocab_size"] = len(kv)
    raw = info.get("raw_words")
    info["raw_words_per_s"] = raw / info["train_s"] if raw and info["train_s"] > 0 else None
    info.update(evaluate(kv, args.restrict_vocab, args.analogy_impl))
    info["trainer"] = args.child
    info["workers"] = args.workers
    print(json.dumps(info, default=str), flush=True)
    return 0


# ----------------------------------------------------------------------------------------- parent side
def prepare_corpus(path, tmpdir):
    """A plain-text copy of ``path`` (decompressed into ``tmpdir`` if needed) and its token count."""
    if not os.path.isfile(path):
        raise SystemExit("corpus not found: %s (pass --corpus, or set EMBKIT_SHARED_DATA to the shared data "
                         "folder)" % path)
    ext = os.path.splitext(path)[1].lower()
    opener = OPENERS.get(ext, open)
    target = path
    if ext in OPENERS:
        target = os.path.join(tmpdir, os.path.basename(path)[:-len(ext)])
    tokens = 0
    with opener(path, "rb") as src:
        out = open(target, "wb") if target != path else None
        try:
            for line in src:
                tokens += len(line.split())
                if out is not None:
                    out.write(line)
        finally:
            if out is not None:
                out.close()
    return target, tokens


def child_command(args, trainer, corpus, tokens, workers):
    cmd = [sys.executable, "-m", __spec__.name, "--child", trainer, "--corpus", corpus,
           "--corpus-tokens", str(tokens), "--workers", str(workers)]
    for flag in ("sg", "vector_size", "window", "negative", "sample", "min_count", "epochs", "alpha", "seed",
                 "restrict_vocab", "analogy_impl"):
        if getattr(args, flag) is not None:
            cmd += ["--" + flag.replace("_", "-"), str(getattr(args, flag))]
    if args.fasttext_lr is not None:
        cmd += ["--fasttext-lr", str(args.fasttext_lr)]
    if args.embkit_args and trainer == "embkit":
        cmd += ["--embkit-args"] + list(args.embkit_args)
    if args.verbose:
        cmd.append("--verbose")
    return cmd


def run_trainer(args, trainer, corpus, tokens, workers):
    label = trainer if workers == args.workers else "%s (workers=%d)" % (trainer, workers)
    print("running %s ..." % label, file=sys.stderr, flush=True)
    proc = subprocess.run(child_command(args, trainer, corpus, tokens, workers), stdout=subprocess.PIPE,
                          text=True, cwd=REPO_ROOT)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        print("%s failed (exit status %d)" % (label, proc.returncode), file=sys.stderr)
        return {"trainer": trainer, "label": label, "workers": workers, "error": "exit status %d" % proc.returncode}
    result = json.loads(lines[-1])
    result["label"] = label
    return result


def _cell(value, fmt):
    if value is None:
        return "n/a"
    return fmt.format(value) if "{" in fmt else fmt % value


def _ratio(a, b):
    if a is None or b is None or not b:
        return "n/a"
    return "%.2fx" % (a / b)


def markdown_table(results):
    """Markdown table of the results, then one row of ratios embkit / peer per peer."""
    header = ["trainer", "workers"] + [title for _, title, _ in COLUMNS]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    for r in results:
        if "error" in r:
            cells = [r["label"], str(r["workers"])] + ["failed"] * len(COLUMNS)
        else:
            cells = [r["label"], str(r["workers"])] + [_cell(r.get(key), fmt) for key, _, fmt in COLUMNS]
        lines.append("| " + " | ".join(cells) + " |")
    main = _main_embkit(results)
    for r in results:
        if r["trainer"] == "embkit" or "error" in r or main is None:
            continue
        cells = ["embkit / %s" % r["label"], ""] + [_ratio(main.get(key), r.get(key)) for key, _, _ in COLUMNS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _main_embkit(results):
    for r in results:
        if r["trainer"] == "embkit" and "error" not in r and "(workers" not in r["label"]:
            return r
    return None


def scaling_line(results):
    one = next((r for r in results if r["trainer"] == "embkit" and "(workers=1)" in r["label"]
                and "error" not in r), None)
    main = _main_embkit(results)
    if one is None or main is None or not one.get("raw_words_per_s"):
        return None
    return ("embkit scaling 1 -> %d workers: raw words/s x%.2f (%s -> %s), train s x%.2f"
            % (main["workers"], main["raw_words_per_s"] / one["raw_words_per_s"],
               _cell(one["raw_words_per_s"], "{:,.0f}"), _cell(main["raw_words_per_s"], "{:,.0f}"),
               main["train_s"] / one["train_s"]))


def environment():
    def version(module):
        try:
            return __import__(module).__version__
        except Exception:  # noqa: BLE001 - absent or broken
            return None
    try:
        commit = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=REPO_ROOT, text=True,
                                capture_output=True).stdout.strip() or None
    except OSError:
        commit = None
    return {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
            "embkit_commit": commit, "numpy": version("numpy"), "gensim": version("gensim"),
            "fasttext": _fasttext_version()}


def _fasttext_version():
    if importlib.util.find_spec("fasttext") is None:
        return None
    try:
        from importlib.metadata import version
        return version("fasttext")
    except Exception:  # noqa: BLE001
        return "installed"


def run_parent(args):
    command = shlex.join(getattr(sys, "orig_argv", [sys.executable] + sys.argv))
    trainers = ["embkit"]
    for peer in args.peers:
        if importlib.util.find_spec(peer) is None:
            print("skipping %s: the Python package %r is not installed (pip install %s)"
                  % (peer, peer, "fasttext==0.9.3" if peer == "fasttext" else peer), file=sys.stderr)
            continue
        trainers.append(peer)
    tmpdir = tempfile.mkdtemp(prefix="bench-word2vec-", dir=args.tmpdir)
    try:
        print("preparing %s ..." % args.corpus, file=sys.stderr, flush=True)
        corpus, tokens = prepare_corpus(args.corpus, tmpdir)
        results = [run_trainer(args, t, corpus, tokens, args.workers) for t in trainers]
        if args.scaling and args.workers != 1:
            results.append(run_trainer(args, "embkit", corpus, tokens, 1))
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    settings = ("sg=%d vector_size=%d window=%d negative=%d sample=%g min_count=%d epochs=%d workers=%d alpha=%s"
                % (args.sg, args.vector_size, args.window, args.negative, args.sample, args.min_count,
                   args.epochs, args.workers, "each library's default" if args.alpha is None else args.alpha))
    if args.embkit_args:
        settings += "; embkit extra: %s" % " ".join(args.embkit_args)
    print()
    print("corpus: %s (%s tokens; all trainers read the same plain-text copy)" % (args.corpus, format(tokens, ",")))
    print("settings: %s" % settings)
    print()
    print(markdown_table(results))
    print()
    scaling = scaling_line(results)
    if scaling:
        print(scaling)
    print("analogy: questions-words accuracy, restrict_vocab=%d (%s code); WS-353/SimLex: Spearman"
          % (args.restrict_vocab, args.analogy_impl))
    if "fasttext" in trainers:
        print("fastText: train s = wall s (vocabulary included); lr %s; minn=maxn=0 (no subwords)"
              % (args.fasttext_lr if args.fasttext_lr is not None else "fastText default"))
    print("command: %s" % command)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"command": command, "corpus": args.corpus, "corpus_tokens": tokens,
                       "settings": {k: getattr(args, k) for k in (
                           "sg", "vector_size", "window", "negative", "sample", "min_count", "epochs",
                           "workers", "alpha", "seed", "restrict_vocab", "analogy_impl", "embkit_args",
                           "fasttext_lr")},
                       "environment": environment(), "results": results}, fh, indent=2, default=str)
        print("results written to %s" % args.json)
    return 1 if any("error" in r for r in results) else 0


def print_saved(path):
    """Print the table and the scaling line of a run saved with ``--json``."""
    with open(path) as fh:
        saved = json.load(fh)
    print(markdown_table(saved["results"]))
    scaling = scaling_line(saved["results"])
    if scaling:
        print(scaling)
    if saved.get("command"):
        print("command: %s" % saved["command"])
    return 0


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.from_json:
        return print_saved(args.from_json)
    try:
        parse_kwargs(args.embkit_args)
    except argparse.ArgumentTypeError as exc:
        parser.error(str(exc))
    return run_child(args) if args.child else run_parent(args)


if __name__ == "__main__":
    sys.exit(main())
