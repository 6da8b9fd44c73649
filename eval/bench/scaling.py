"""Benchmark: how embkit, gensim and fastText scale with threads, on one corpus, in one run.

For every trainer and every thread count (1, 2, 4, ... up to the machine's cores, or ``--threads``), one
run of skip-gram on the same plain-text copy of the corpus (defaults: gcide, dim 100, window 5, 5 negatives,
sample 1e-3, min_count 5, 2 epochs), each trainer in its own child process that runs its thread counts in
turn and prints a JSON line per run, which the parent copies to ``--jsonl`` as it comes (a run cut short
keeps what it measured).  Before its timed runs the child builds the vocabulary once untimed (embkit and
gensim), so every timed ``build_vocab`` finds the process as warm as the next one: else the first thread
count alone pays a new process's first touch of its memory, and its speedups are overstated
(``eval.bench.repeats --fresh`` times new processes).  Measured per run:

    vocab s       embkit ``build_vocab``; gensim ``build_vocab(corpus_file=...)``; fastText has none apart
    train s       embkit ``last_report.seconds``; gensim ``train(corpus_file=...)``; fastText the whole
                  ``train_unsupervised`` (its vocabulary included)
    end-to-end s  vocab s + train s (fastText: train s)
    raw words/s   corpus tokens x epochs / train s
    efficiency    words/s at t threads / (t x words/s at 1 thread)

Quality (Google analogies with embkit's evaluator, restrict_vocab 30000; WS-353 and SimLex-999 Spearman) is
measured at ``--quality-threads`` for ``--quality-seeds`` seeds.  ``--variant NAME:key=value,...`` adds embkit
runs with other ``Word2Vec`` arguments at ``--variant-threads`` (a key ``path`` runs the embkit found in
that folder instead, e.g. an older checkout, and is timed only; ``threads=1+16`` gives the variant its own
thread counts; a key ``@module.NAME`` sets a module constant in the child).
``--end-to-end-epochs`` adds embkit runs of vocabulary + training at the largest thread count.

The summary (markdown) gives the curve (at each thread count the run of median speed over its seeds), the
ratios embkit / peer at every thread count, the serial share of embkit's vocabulary and training (Amdahl's
serial seconds from the 1- and t-thread times: ``(t T_t - T_1) / (t - 1)``), and the exact command;
``--json`` saves everything, ``--plot`` draws the curve.
Nothing is asserted: timings depend on the machine.

Usage::

    python -m eval.bench.scaling                                  # gcide, all trainers, 1..cores threads
    python -m eval.bench.scaling --threads 1 2 --trainers embkit gensim --jsonl scaling.jsonl
    python -m eval.bench.scaling --variant hot256:hot_rows=256 --variant-threads 16
"""
import argparse
import ast
import contextlib
import importlib.machinery
import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

from eval.bench.word2vec import default_corpus, environment, evaluate, fasttext_vectors, prepare_corpus
from eval.paths import REPO_ROOT

TRAINERS = ("embkit", "gensim", "fasttext")


# ----------------------------------------------------------------------------------------- child side
def _settings(args, threads, seed):
    return dict(sg=1, vector_size=args.vector_size, window=args.window, negative=args.negative,
                sample=args.sample, min_count=args.min_count, epochs=args.epochs, workers=threads, seed=seed)


def embkit_model(args, threads, seed, extra=None, epochs=None):
    """The untrained embkit model of a run."""
    from embkit import Word2Vec

    kwargs = _settings(args, threads, seed)
    if epochs is not None:
        kwargs["epochs"] = epochs
    kwargs.update(extra or {})
    return Word2Vec(**kwargs)


def gensim_model(args, threads, seed):
    """The untrained gensim model of a run (negative sampling only, as embkit's)."""
    from gensim.models import Word2Vec

    return Word2Vec(hs=0, **_settings(args, threads, seed))


def run_embkit(args, threads, seed, extra, epochs=None):
    model = embkit_model(args, threads, seed, extra, epochs)
    start = time.perf_counter()
    model.build_vocab(corpus_file=args.corpus)
    vocab = time.perf_counter() - start
    model.train()
    report = model.last_report
    end = time.perf_counter() - start
    return model.wv, {"vocab_s": vocab, "train_s": report.seconds, "end_to_end_s": end,
                      "raw_words": report.raw_words, "words": report.words, "final_loss": report.epoch_loss[-1]}


def run_gensim(args, threads, seed, extra, epochs=None):
    model = gensim_model(args, threads, seed)
    start = time.perf_counter()
    model.build_vocab(corpus_file=args.corpus)
    vocab = time.perf_counter() - start
    model.train(corpus_file=args.corpus, total_examples=model.corpus_count, total_words=model.corpus_total_words,
                epochs=model.epochs)
    end = time.perf_counter() - start
    return model.wv, {"vocab_s": vocab, "train_s": end - vocab, "end_to_end_s": end,
                      "raw_words": model.corpus_total_words * model.epochs}


def run_fasttext(args, threads, seed, extra, epochs=None):
    import fasttext

    start = time.perf_counter()
    model = fasttext.train_unsupervised(args.corpus, model="skipgram", dim=args.vector_size, ws=args.window,
                                        neg=args.negative, t=args.sample, minCount=args.min_count,
                                        epoch=args.epochs, thread=threads, minn=0, maxn=0, verbose=0)
    wall = time.perf_counter() - start
    return fasttext_vectors(model), {"vocab_s": None, "train_s": wall, "end_to_end_s": wall,
                                     "raw_words": args.corpus_tokens * args.epochs,
                                     "note": "train s includes fastText's vocabulary"}


RUNNERS = {"embkit": run_embkit, "gensim": run_gensim, "fasttext": run_fasttext}


#: an untimed build_vocab before a child's timed runs (fastText has no vocabulary apart from its training)
WARM_UPS = {"embkit": lambda args, threads: embkit_model(args, threads, 1).build_vocab(corpus_file=args.corpus),
            "gensim": lambda args, threads: gensim_model(args, threads, 1).build_vocab(corpus_file=args.corpus)}


def import_embkit_from(folder):
    """Import the ``embkit`` package found in ``folder`` (a variant's ``path``) in place of this checkout's."""
    spec = importlib.machinery.PathFinder.find_spec("embkit", [folder])
    if spec is None:
        raise SystemExit("no embkit package in %s" % folder)
    module = importlib.util.module_from_spec(spec)
    sys.modules["embkit"] = module
    spec.loader.exec_module(module)


def set_module_constant(dotted, value):
    """Set the constant ``package.module.NAME`` to ``value``; returns the value it had (SystemExit naming a
    name that is not a module's constant)."""
    module, _, name = dotted.rpartition(".")
    try:
        module = importlib.import_module(module) if module else None
    except ImportError:
        module = None
    if module is None or not hasattr(module, name):
        raise SystemExit("--variant: %r is not a module constant (@package.module.NAME=value)" % dotted)
    old = getattr(module, name)
    setattr(module, name, value)
    return old


@contextlib.contextmanager
def module_constants(constants):
    """Set ``{"package.module.NAME": value}`` for the block, then restore them."""
    saved = []
    try:
        for dotted, value in constants.items():
            saved.append((dotted, set_module_constant(dotted, value)))
        yield
    finally:
        for dotted, value in reversed(saved):
            set_module_constant(dotted, value)


def child(args):
    if args.embkit_path:
        import_embkit_from(args.embkit_path)
    if args.child == "embkit":
        import gensim.models  # noqa: F401 - an older embkit imports it in build_vocab: keep it out of the timing
    for name, value in args.constants.items():          # @module.NAME=value: a module constant of the run
        set_module_constant(name, value)
    runner = RUNNERS[args.child]
    if args.child in WARM_UPS:
        WARM_UPS[args.child](args, args.threads[0])
    jobs = [(t, 1, t in args.quality_threads) for t in args.threads]
    jobs += [(t, seed, True) for t in args.quality_threads if t in args.threads
             for seed in range(2, args.quality_seeds + 1)]
    for threads, seed, quality in jobs:
        try:
            kv, info = runner(args, threads, seed, args.extra)
        except Exception as exc:  # noqa: BLE001 - reported, and the other runs go on
            print(json.dumps({"trainer": args.child, "label": args.label, "threads": threads, "seed": seed,
                              "error": "%s: %s" % (type(exc).__name__, exc)}), flush=True)
            continue
        info.update(trainer=args.child, label=args.label, threads=threads, seed=seed, epochs=args.epochs,
                    machine=_machine())
        info["raw_words_per_s"] = info["raw_words"] / info["train_s"] if info["train_s"] else None
        if quality:
            info.update(evaluate(kv, 30000, "embkit"))
        print(json.dumps(info, default=str), flush=True)
        del kv
    if args.end_to_end_epochs and args.child == "embkit":
        for seed in range(1, args.quality_seeds + 1):
            kv, info = run_embkit(args, max(args.threads), seed, args.extra, epochs=args.end_to_end_epochs)
            info.update(trainer="embkit", label=args.label + " end-to-end", threads=max(args.threads), seed=seed,
                        epochs=args.end_to_end_epochs)
            info["raw_words_per_s"] = info["raw_words"] / info["train_s"] if info["train_s"] else None
            print(json.dumps(info, default=str), flush=True)
    return 0


# ----------------------------------------------------------------------------------------- parent side
def default_threads():
    cores = os.cpu_count() or 1
    out, t = [], 1
    while t < cores:
        out.append(t)
        t *= 2
    return out + [cores]


def parse_variant(text):
    """``NAME:key=value,...`` -> ``(name, kwargs, path, constants, threads)``."""
    name, sep, rest = text.partition(":")
    if not sep or not name:
        raise argparse.ArgumentTypeError("--variant wants NAME:key=value,..., got %r" % text)
    kwargs, path, constants, threads = {}, None, {}, None
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = part.partition("=")
        if not eq:
            raise argparse.ArgumentTypeError("--variant %s: %r is not key=value" % (name, part))
        if key == "path":
            path = os.path.abspath(value)
            continue
        if key == "threads":
            threads = [int(t) for t in value.split("+")]
            continue
        if key == "quality":
            constants["quality"] = bool(int(value))
            continue
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            pass
        (constants if key.startswith("@") else kwargs)[key.lstrip("@")] = value
    return name, kwargs, path, constants, threads


def build_parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--corpus", default=default_corpus(), help="training text (plain, .gz, .bz2 or .xz)")
    p.add_argument("--threads", type=int, nargs="+", default=default_threads())
    p.add_argument("--trainers", nargs="+", choices=TRAINERS, default=list(TRAINERS))
    p.add_argument("--vector-size", type=int, default=100)
    p.add_argument("--window", type=int, default=5)
    p.add_argument("--negative", type=int, default=5)
    p.add_argument("--sample", type=float, default=1e-3)
    p.add_argument("--min-count", type=int, default=5)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--quality-threads", type=int, nargs="*", default=None,
                   help="thread counts whose runs are evaluated (default: the smallest and the largest)")
    p.add_argument("--quality-seeds", type=int, default=3, help="seeds of embkit's evaluated runs")
    p.add_argument("--peer-quality-seeds", type=int, default=1, help="seeds of the peers' evaluated runs")
    p.add_argument("--variant", type=parse_variant, action="append", default=[], metavar="NAME:key=value,...")
    p.add_argument("--variant-threads", type=int, nargs="+", default=None,
                   help="thread counts of the variants (default: the largest)")
    p.add_argument("--end-to-end-epochs", type=int, default=3,
                   help="embkit vocabulary + training of this many epochs at the largest thread count (0: none)")
    p.add_argument("--jsonl", default=None, help="append each run's JSON line here as it ends")
    p.add_argument("--json", default=None, help="write every result and the summary as JSON")
    p.add_argument("--plot", default=None, help="draw words/s and efficiency against threads (PNG)")
    p.add_argument("--tmpdir", default=None, help="where to put the decompressed corpus")
    p.add_argument("--from-jsonl", default=None, metavar="FILE",
                   help="run nothing: summarise (and --json, --plot) the runs recorded in FILE")
    # internal: child mode
    p.add_argument("--child", choices=TRAINERS, default=None, help=argparse.SUPPRESS)
    p.add_argument("--label", default=None, help=argparse.SUPPRESS)
    p.add_argument("--extra", type=json.loads, default={}, help=argparse.SUPPRESS)
    p.add_argument("--constants", type=json.loads, default={}, help=argparse.SUPPRESS)
    p.add_argument("--corpus-tokens", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--embkit-path", default=None, help=argparse.SUPPRESS)
    return p


def _child_command(args, trainer, label, threads, quality_threads, corpus, tokens, extra=None, constants=None,
                   end_to_end=0, path=None):
    constants = dict(constants or {})
    seeds = constants.pop("quality_seeds", args.quality_seeds)
    cmd = [sys.executable, "-m", __spec__.name, "--child", trainer, "--label", label, "--corpus", corpus,
           "--corpus-tokens", str(tokens), "--threads"] + [str(t) for t in threads]
    cmd += ["--quality-threads"] + [str(t) for t in quality_threads]
    for flag in ("vector_size", "window", "negative", "sample", "min_count", "epochs"):
        cmd += ["--" + flag.replace("_", "-"), str(getattr(args, flag))]
    cmd += ["--quality-seeds", str(seeds), "--extra", json.dumps(extra or {}), "--constants", json.dumps(constants),
            "--end-to-end-epochs", str(end_to_end)]
    if path is not None:
        cmd += ["--embkit-path", path]
    return cmd


def _stream(cmd, sink, results):
    """Run a child, copying its JSON lines to ``sink`` and ``results`` as they come."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=REPO_ROOT)
    for line in proc.stdout:
        if not line.startswith("{"):
            continue
        result = json.loads(line)
        if sink is not None:
            sink.write(line)
            sink.flush()
        if "error" in result:
            print("  %s %d threads: %s" % (result["label"], result["threads"], result["error"]), file=sys.stderr)
            continue
        results.append(result)
        print("  %-24s %2d threads seed %d: train %.2f s (%s raw words/s)%s" % (
            result["label"], result["threads"], result["seed"], result["train_s"],
            format(int(result.get("raw_words_per_s") or 0), ","),
            "" if result.get("vocab_s") is None else ", vocab %.2f s" % result["vocab_s"]), file=sys.stderr,
            flush=True)
    return proc.wait()


def _curve(results, label):
    """``{threads: run}`` of one label: at each thread count the run of median speed (the runs of every seed
    count; a machine shared with others now and then slows one down)."""
    runs = {}
    for r in results:
        if r["label"] == label and r.get("raw_words_per_s"):
            runs.setdefault(r["threads"], []).append(r)
    return {t: sorted(rs, key=lambda r: r["raw_words_per_s"])[(len(rs) - 1) // 2] for t, rs in runs.items()}


def summarize(results, labels):
    """Markdown tables: the speed curve, embkit / peer ratios, serial seconds, and quality."""
    lines = ["| trainer | threads | vocab s | train s | end-to-end s | raw words/s | efficiency |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for label in labels:
        curve = _curve(results, label)
        one = curve.get(1)
        for t, r in sorted(curve.items()):
            eff = None
            if one is not None and one["raw_words_per_s"] and r["raw_words_per_s"]:
                eff = r["raw_words_per_s"] / (t * one["raw_words_per_s"])
            lines.append("| %s | %d | %s | %.2f | %.2f | %s | %s |" % (
                label, t, "-" if r.get("vocab_s") is None else "%.2f" % r["vocab_s"], r["train_s"],
                r["end_to_end_s"], format(int(r["raw_words_per_s"]), ","), "-" if eff is None else "%.2f" % eff))
    embkit = _curve(results, "embkit")
    for peer in ("gensim", "fasttext"):
        curve = _curve(results, peer)
        if not curve or not embkit:
            continue
        cells = ["%d: %.1fx" % (t, embkit[t]["raw_words_per_s"] / curve[t]["raw_words_per_s"])
                 for t in sorted(curve) if t in embkit]
        lines.append("")
        lines.append("embkit / %s training words/s: %s" % (peer, ", ".join(cells)))
    for label in labels:
        curve = _curve(results, label)
        if label in TRAINERS or not embkit:
            continue
        cells = ["%d: %.2fx" % (t, curve[t]["raw_words_per_s"] / embkit[t]["raw_words_per_s"])
                 for t in sorted(curve) if t in embkit]
        lines.append("")
        lines.append("%s / embkit training words/s: %s" % (label, ", ".join(cells)))
    if len(embkit) >= 2:
        one, top = embkit[min(embkit)], embkit[max(embkit)]
        t = top["threads"] / one["threads"]
        lines.append("")
        for key in ("vocab_s", "train_s"):
            serial = (t * top[key] - one[key]) / (t - 1)
            lines.append("embkit %s: %.3f s at %d threads, %.3f s at %d; Amdahl's serial seconds %.3f (%.0f%% of the "
                         "%d-thread time)" % (key.replace("_s", ""), one[key], one["threads"], top[key], top["threads"],
                                              serial, 100.0 * serial / top[key] if top[key] else 0.0, top["threads"]))
    quality = [r for r in results if "analogy" in r]
    if quality:
        lines += ["", "| trainer | threads | seeds | analogy | WS-353 | SimLex |", "|---|---:|---:|---:|---:|---:|"]
        groups = {}
        for r in quality:
            groups.setdefault((r["label"], r["threads"]), []).append(r)
        for (label, threads), runs in sorted(groups.items()):
            cells = []
            for key in ("analogy", "ws353", "simlex999"):
                vals = [r[key] for r in runs if r.get(key) is not None]
                mean = sum(vals) / len(vals) if vals else float("nan")
                spread = (max(vals) - min(vals)) / 2 if len(vals) > 1 else 0.0
                cells.append("%.4f ± %.4f" % (mean, spread))
            lines.append("| %s | %d | %d | %s |" % (label, threads, len(runs), " | ".join(cells)))
    e2e = [r for r in results if r["label"].endswith("end-to-end")]
    if e2e:
        lines.append("")
        lines.append("embkit end-to-end (vocabulary + %d epochs) at %d threads: %s s" % (
            e2e[0]["epochs"], e2e[0]["threads"], ", ".join("%.2f" % r["end_to_end_s"] for r in e2e)))
    return "\n".join(lines)


def plot(results, labels, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    embkit = _curve(results, "embkit")
    for label in labels:
        curve = _curve(results, label)
        if not curve:
            continue
        ts = sorted(curve)
        speed = [curve[t]["raw_words_per_s"] / 1e6 for t in ts]
        ax.plot(ts, speed, marker="o", label=label)
        one = (curve.get(1) or embkit.get(1) or {}).get("raw_words_per_s")   # a variant: embkit's 1 thread
        if one:
            ax2.plot(ts, [curve[t]["raw_words_per_s"] / (t * one) for t in ts], marker="o", label=label)
    ax.set(xlabel="threads", ylabel="training, million raw words/s", xscale="log", title="speed")
    ax2.set(xlabel="threads", ylabel="words/s / (threads x 1-thread words/s)", xscale="log", ylim=(0, 1.1),
            title="efficiency")
    for a in (ax, ax2):
        a.set_xticks(sorted({t for r in results for t in [r["threads"]]}))
        a.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
        a.grid(alpha=0.3)
        a.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def report(args, results, command, tokens, machine=True):
    """Print the summary; write ``--json`` and ``--plot`` (with this machine's description when ``machine``:
    the runs' own are in their records)."""
    labels = list(dict.fromkeys(r["label"] for r in results if not r["label"].endswith("end-to-end")))
    text = summarize(results, labels)
    print(text)
    print()
    print("corpus: %s (%s tokens); skip-gram dim %d window %d negative %d sample %g min_count %d, %d epochs"
          % (args.corpus, "?" if tokens is None else format(tokens, ","), args.vector_size, args.window,
             args.negative, args.sample, args.min_count, args.epochs))
    print("command: %s" % command)
    env = environment() if machine else {"runs": sorted({r.get("machine", "not recorded") for r in results})}
    if machine:
        env["lscpu"] = _lscpu()
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"command": command, "date": time.strftime("%Y-%m-%d"), "environment": env,
                       "corpus": args.corpus, "corpus_tokens": tokens, "results": results, "summary": text}, fh,
                      indent=2, default=str)
    if args.plot:
        plot(results, labels, args.plot)


def from_jsonl(args):
    with open(args.from_jsonl) as fh:
        results = [r for r in map(json.loads, filter(str.strip, fh)) if "error" not in r]
    report(args, results, "runs recorded in %s" % args.from_jsonl, None, machine=False)
    return 0


def parent(args):
    command = "python -m eval.bench.scaling " + shlex.join(sys.argv[1:])      # the command, not this machine's paths
    threads = sorted(set(args.threads))
    quality_threads = args.quality_threads if args.quality_threads is not None else sorted({threads[0], threads[-1]})
    variant_threads = args.variant_threads or [threads[-1]]
    tmpdir = tempfile.mkdtemp(prefix="bench-scaling-", dir=args.tmpdir)
    results = []
    sink = open(args.jsonl, "a") if args.jsonl else None
    try:
        corpus, tokens = prepare_corpus(args.corpus, tmpdir)
        jobs = []
        for trainer in args.trainers:
            # fastText cannot train twice in one process (the second run diverges): a process per run
            for ts in ([[t] for t in threads] if trainer == "fasttext" else [threads]):
                jobs.append((trainer, trainer, ts, [t for t in quality_threads if t in ts], {}, None, {},
                             args.end_to_end_epochs if trainer == "embkit" else 0))
                if trainer != "embkit":
                    jobs[-1][6]["quality_seeds"] = args.peer_quality_seeds
            if trainer == "embkit":      # the variants right after embkit, before the (slower) peers
                for name, kwargs, path, constants, own_threads in args.variant:
                    ts = own_threads or variant_threads
                    constants = dict(constants)
                    quality = constants.pop("quality", path is None)
                    jobs.append(("embkit", name, ts, ts if quality else [], kwargs, path, constants, 0))
        for trainer, label, ts, qts, extra, path, constants, e2e in jobs:
            print("%s (%s threads) ..." % (label, ", ".join(map(str, ts))), file=sys.stderr, flush=True)
            code = _stream(_child_command(args, trainer, label, ts, qts, corpus, tokens, extra, constants, e2e, path),
                           sink, results)
            if code != 0:
                print("%s failed (exit status %d)" % (label, code), file=sys.stderr)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
        if sink is not None:
            sink.close()
    report(args, results, command, tokens)
    return 0


def _machine():
    """The CPU model and count of this machine (recorded with every run)."""
    return "%s x%d" % ((_lscpu() or {}).get("Model name", "unknown CPU"), os.cpu_count() or 0)


def _lscpu():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    except OSError:
        return None
    keep = ("Model name", "CPU(s)", "Thread(s) per core", "Core(s) per socket", "Socket(s)", "L2 cache", "L3 cache")
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in out.splitlines()) if k.strip() in keep}


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.child:
        return child(args)
    if args.from_jsonl:
        return from_jsonl(args)
    if any(t < 1 for t in args.threads):
        raise SystemExit("--threads must be >= 1")
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
