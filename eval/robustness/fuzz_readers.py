"""Long fuzzing run of every embkit reader: >= 10,000 inputs each, outcomes tabulated.

Each reader runs in a worker process watched by this one, so a hang or a crash of the interpreter (a
segfault in a kernel, an abort) is caught, counted and saved, and the worker restarts after the input
that killed it.  Two engines:

``mutate``
    Seeded structure-aware mutations of valid files (``tests/fuzz_mutate.py``): input ``i`` of reader
    ``r`` is a pure function of ``(--seed, r, i)``, so any failure reproduces from its index.
``atheris``
    Coverage-guided fuzzing with atheris (libFuzzer), embkit's modules instrumented, the same seed
    files as starting corpus.  Optional: ``pip install atheris`` (the ``fuzz`` extra).

Outcomes (see ``tests/fuzz_targets.py``): ``parsed`` (and agreeing with the oracle), ``error`` (a
ValueError/OSError naming the file; ``line`` counts those naming a line too), ``unclear`` (not naming
the file), ``crash`` (another exception), ``wrong`` (the oracle disagrees: a silent wrong result),
``hang`` (no result within ``--timeout``), ``died`` (the interpreter crashed).

Usage::

    python -m eval.robustness.fuzz_readers --inputs 10000 --engine both --json fuzz.json

Failing inputs are written to ``--failures`` (``<reader>-<engine>-<index>.bin``) with their details.
"""
import argparse
import collections
import json
import os
import random
import select
import shutil
import subprocess
import sys
import tempfile
import time

from eval.paths import REPO_ROOT

COLUMNS = ("parsed", "error", "line", "unclear", "crash", "wrong", "hang", "died")
BAD = ("unclear", "crash", "wrong", "hang", "died")


def input_for(target, seed, index):
    """Input ``index`` of the mutation engine (a pure function of its arguments)."""
    return target.generate(random.Random("%d:%s:%d" % (seed, target.name, index)))


# ---------------------------------------------------------------------------------------------- workers
def _quiet():
    import logging
    import warnings
    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")


def worker_mutate(name, seed, first, count, timeout):
    """Run inputs ``first..count-1``; one JSON line per input on stdout."""
    from tests.fuzz_targets import TARGETS, run_input
    _quiet()
    target = TARGETS[name]
    workdir = tempfile.mkdtemp(prefix="embkit-fuzz-")
    try:
        for i in range(first, count):
            outcome, detail, line = run_input(target, input_for(target, seed, i), workdir, timeout=timeout)
            if outcome == "crash" and detail.startswith("timeout"):
                outcome = "hang"
            print(json.dumps([i, outcome, line, detail if outcome in BAD else ""]), flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def worker_atheris(name, seed, count, timeout, report):
    """Run libFuzzer for ``count`` inputs; one JSON line per input appended to ``report``."""
    import atheris
    with atheris.instrument_imports(include=["embkit"]):
        import embkit.core.persist  # noqa: F401 - instrumented imports of everything the readers use
        import embkit.evaluation.pairs  # noqa: F401
        import embkit.items.cooccurrence  # noqa: F401
        import embkit.items.ratings  # noqa: F401
        import embkit.text.corpus  # noqa: F401
        import embkit.text.vectors  # noqa: F401
        import embkit.xc.data  # noqa: F401
    from tests.fuzz_targets import TARGETS, run_input
    _quiet()
    target = TARGETS[name]
    workdir = tempfile.mkdtemp(prefix="embkit-fuzz-")
    corpus = tempfile.mkdtemp(prefix="embkit-fuzz-corpus-")
    for k, data in enumerate(target.seed_inputs()):
        with open(os.path.join(corpus, "seed%d" % k), "wb") as fh:
            fh.write(data)
    out = open(report, "ab", buffering=0)      # libFuzzer ends with exit(): nothing may sit in a buffer
    counter = [0]

    def one(data):
        outcome, detail, line = run_input(target, data, workdir, timeout=timeout)
        if outcome == "crash" and detail.startswith("timeout"):
            outcome = "hang"
        record = [counter[0], outcome, line, detail if outcome in BAD else "", data.hex() if outcome in BAD else ""]
        out.write((json.dumps(record) + "\n").encode())
        counter[0] += 1

    max_len = 1 << 16 if target.archive else 4096
    atheris.Setup([sys.argv[0], "-runs=%d" % count, "-seed=%d" % (seed + 1), "-max_len=%d" % max_len,
                   "-timeout=%d" % (timeout * 3), "-rss_limit_mb=4096", "-print_final_stats=0",
                   "-artifact_prefix=%s/" % workdir, corpus], one)
    atheris.Fuzz()


# ---------------------------------------------------------------------------------------------- the watcher
def _spawn(args):
    return subprocess.Popen([sys.executable, "-m", __spec__.name] + args, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=REPO_ROOT)


def _save_failure(failures, name, engine, index, outcome, detail, data):
    os.makedirs(failures, exist_ok=True)
    stem = os.path.join(failures, "%s-%s-%d" % (name, engine, index))
    with open(stem + ".bin", "wb") as fh:
        fh.write(data)
    with open(stem + ".txt", "w") as fh:
        fh.write("%s: %s\n" % (outcome, detail))


def run_mutate(target, args, counts, examples):
    """Run ``args.inputs`` mutation inputs of ``target`` through restarting workers."""
    done = 0
    while done < args.inputs:
        proc = _spawn(["--worker", target.name, "--engine", "mutate", "--seed", str(args.seed),
                       "--first", str(done), "--count", str(args.inputs), "--timeout", str(args.timeout)])
        buffer = b""
        while True:
            ready, _, _ = select.select([proc.stdout], [], [], args.timeout * 3 + 30)
            if not ready:           # a hang the worker's own alarm could not break (C code)
                proc.kill()
                proc.wait()
                _record(target, args, counts, examples, done, "hang", "no result after %ds" % (args.timeout * 3 + 30),
                        input_for(target, args.seed, done))
                done += 1
                break
            chunk = os.read(proc.stdout.fileno(), 1 << 16)
            if not chunk:
                proc.wait()
                if done < args.inputs:      # the interpreter died on input `done`
                    err = proc.stderr.read().decode("utf-8", "replace")[-300:]
                    _record(target, args, counts, examples, done, "died",
                            "exit status %s: %s" % (proc.returncode, err), input_for(target, args.seed, done))
                    done += 1
                break
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for raw in lines:
                i, outcome, line, detail = json.loads(raw)
                data = input_for(target, args.seed, i) if outcome in BAD else None
                _record(target, args, counts, examples, i, outcome, detail, data, line)
                done = i + 1


def _record(target, args, counts, examples, index, outcome, detail, data, line=False):
    counts[outcome] += 1
    if line:
        counts["line"] += 1
    if outcome in BAD:
        examples.append((outcome, detail))
        _save_failure(args.failures, target.name, args.engine_now, index, outcome, detail, data)


def run_atheris(target, args, counts, examples):
    done = 0
    with tempfile.NamedTemporaryFile(prefix="embkit-fuzz-report-", delete=False) as fh:
        report = fh.name
    while done < args.inputs:
        open(report, "wb").close()
        proc = _spawn(["--worker", target.name, "--engine", "atheris", "--seed", str(args.seed + done),
                       "--count", str(args.inputs - done), "--timeout", str(args.timeout), "--report", report])
        _, err = proc.communicate()
        ran = 0
        with open(report, "rb") as fh:
            for raw in fh:
                try:
                    i, outcome, line, detail, data = json.loads(raw)
                except ValueError:
                    continue
                ran += 1
                _record(target, args, counts, examples, done + i, outcome, detail, bytes.fromhex(data), line)
        done += ran
        if proc.returncode != 0 and done < args.inputs:
            text = err.decode("utf-8", "replace")
            outcome = "hang" if "timeout" in text.lower() else "died"
            _record(target, args, counts, examples, done, outcome, text[-300:], b"")
            done += 1
        elif ran == 0:
            break
    os.unlink(report)


def main(argv=None):
    from tests.fuzz_targets import TARGETS
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--inputs", type=int, default=10000, help="inputs per reader and engine")
    p.add_argument("--targets", default=",".join(TARGETS), help="comma-separated readers (default: all)")
    p.add_argument("--engine", choices=("mutate", "atheris", "both"), default="mutate")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=int, default=20, help="seconds per input before it counts as a hang")
    p.add_argument("--failures", default=os.path.join(tempfile.gettempdir(), "embkit-fuzz-failures"))
    p.add_argument("--json", help="write the table as JSON here")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--first", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--count", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--report", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        if args.engine == "atheris":
            worker_atheris(args.worker, args.seed, args.count, args.timeout, args.report)
        else:
            worker_mutate(args.worker, args.seed, args.first, args.count, args.timeout)
        return
    engines = ("mutate", "atheris") if args.engine == "both" else (args.engine,)
    rows = []
    print("| reader | engine | inputs | parsed | clean errors | ...naming a line | unclear | crash | wrong | hang "
          "| died | inputs/s |")
    print("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for engine in engines:
        args.engine_now = engine
        for name in args.targets.split(","):
            counts, examples = collections.Counter(), []
            start = time.perf_counter()
            (run_atheris if engine == "atheris" else run_mutate)(TARGETS[name], args, counts, examples)
            seconds = time.perf_counter() - start
            total = sum(counts[c] for c in COLUMNS if c != "line")
            row = dict(reader=name, engine=engine, inputs=total, seconds=round(seconds, 1),
                       **{c: counts[c] for c in COLUMNS}, examples=examples[:5])
            rows.append(row)
            print("| %s | %s | %d | %s | %.0f |" % (name, engine, total, " | ".join(str(counts[c]) for c in COLUMNS),
                                                  total / max(seconds, 1e-9)), flush=True)
            for outcome, detail in examples[:3]:
                print("|   | %s: %s |" % (outcome, detail[:150].replace("|", "/").replace("\n", " ")), flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"argv": sys.argv[1:], "rows": rows}, fh, indent=1)
    bad = sum(r[c] for r in rows for c in BAD)
    print("\n%d inputs, %d bad outcomes; failing inputs in %s" % (sum(r["inputs"] for r in rows), bad, args.failures))


if __name__ == "__main__":
    main()
