"""Benchmark: training threads against where the machine put its cores, measured around every run.

On a virtual machine two vCPUs may sit on cores that share a cache (a cache line moves between them in tens of
nanoseconds) or on cores that do not (hundreds), and the host may move them while a process runs.  Threads
that write the same rows of the tables pay that latency on every row the other thread wrote last; processes
that share nothing do not.  This benchmark times the round trip of one cache line between two threads (a
small C program built with the system's C compiler) right before and right after every training run, so each
run is classed by the placement it ran in:

    near    both probes under ``--near-ns``
    far     both probes over ``--far-ns``
    mixed   anything else (the placement changed, or the probe fell between)

For ``--repeats`` rounds it trains, each in a new process: one thread, then ``--threads`` threads of embkit as
it is and of each ``--variant`` (skip-gram, dim 100, window 5, 5 negatives, sample 1e-3, ``--epochs``), and
reports per variant and placement the runs' words/s and their median over the median one-thread run.
Nothing is asserted: timings depend on the machine.

Usage::

    python -m eval.bench.placement --corpus gcide.txt --repeats 10 --variant none:hot_rows=0 --jsonl placement.jsonl
"""
import argparse
import functools
import json
import multiprocessing
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile

from eval.bench.contention import _train, in_process_variants, outputs
from eval.bench.scaling import module_constants, parse_variant
from eval.bench.word2vec import default_corpus

PROBE_SOURCE = r"""
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static _Atomic long flag __attribute__((aligned(64)));
static double seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}
static void *answer(void *arg) {
    (void)arg;
    for (;;) {
        long v = atomic_load_explicit(&flag, memory_order_acquire);
        if (v < 0) return NULL;
        if (v & 1) atomic_store_explicit(&flag, v + 1, memory_order_release);
    }
}
int main(int argc, char **argv) {
    long rounds = argc > 1 ? atol(argv[1]) : 200000, i;
    double limit = argc > 2 ? atof(argv[2]) : 0.5;     /* seconds at most (two threads on one core crawl) */
    pthread_t t;
    if (pthread_create(&t, NULL, answer, NULL) != 0) return 1;
    double start = seconds(), end = start;
    for (i = 0; i < rounds; i++) {
        atomic_store_explicit(&flag, 2 * i + 1, memory_order_release);
        while (atomic_load_explicit(&flag, memory_order_acquire) != 2 * i + 2) {}
        if ((i & 1023) == 1023 && (end = seconds()) - start > limit) { i++; break; }
    }
    end = seconds();
    atomic_store_explicit(&flag, -1, memory_order_release);
    pthread_join(t, NULL);
    printf("%.1f\n", (end - start) * 1e9 / i);
    return 0;
}
"""


@functools.lru_cache(maxsize=None)
def _probe_program():
    """Path of the built probe, or None without a C compiler."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    folder = tempfile.mkdtemp(prefix="embkit-probe-")
    source, program = os.path.join(folder, "probe.c"), os.path.join(folder, "probe")
    with open(source, "w") as f:
        f.write(PROBE_SOURCE)
    built = subprocess.run([cc, "-O2", "-pthread", source, "-o", program], capture_output=True, text=True)
    return program if built.returncode == 0 else None


def round_trip_ns(rounds=200000, limit_s=0.5):
    """Nanoseconds for one cache line to go from one thread to another and back (the mean over ``rounds``, or
    over those done in ``limit_s``), or None where no C compiler builds the probe.  The operating system
    places the two threads: on a machine of two cores, one on each."""
    program = _probe_program()
    if program is None:
        return None
    done = subprocess.run([program, str(int(rounds)), repr(float(limit_s))], capture_output=True, text=True,
                          check=True)
    return float(done.stdout)


#: probes under this many nanoseconds: the cores share a cache; over :data:`FAR_NS`: they do not
NEAR_NS = 150.0
FAR_NS = 250.0
#: the order in which summaries list the placements (``any``: runs not classed, as one thread's)
PLACEMENT_ORDER = {"any": 0, "near": 1, "far": 2, "mixed": 3}


def placement(before, after, near_ns=NEAR_NS, far_ns=FAR_NS):
    """``near``, ``far`` or ``mixed`` for a run between probes of ``before`` and ``after`` nanoseconds."""
    if before is None or after is None:
        return "mixed"
    if before < near_ns and after < near_ns:
        return "near"
    if before > far_ns and after > far_ns:
        return "far"
    return "mixed"


def _child(corpus, epochs, threads, extra, constants, results):
    with module_constants(constants):
        results.put(_train(corpus, epochs, threads, 1, extra))


def train_in_process(corpus, epochs, threads, extra=None, constants=None):
    """``(raw words, training seconds)`` of one model trained in a new process."""
    ctx = multiprocessing.get_context("fork")
    results = ctx.Queue()
    proc = ctx.Process(target=_child, args=(corpus, epochs, threads, extra or {}, constants or {}, results))
    proc.start()
    try:
        while True:
            try:
                out = results.get(timeout=1)
                break
            except queue.Empty:
                if proc.exitcode not in (None, 0):
                    raise RuntimeError("the training process failed (exit status %s)" % proc.exitcode) from None
    finally:
        proc.join()
    return out


def run(corpus, repeats, threads, epochs, variants=(), near_ns=NEAR_NS, far_ns=FAR_NS, outs=(sys.stdout,)):
    """One JSON line per training run, to every file of ``outs``; the rows."""
    rows = []
    jobs = [("1 thread", 1, {}, {})] + [(name or "as is", threads, extra, constants)
                                        for name, extra, constants in [("", {}, {})] + list(variants)]
    for repeat in range(repeats):
        for name, count, extra, constants in jobs:
            before = round_trip_ns()
            words, seconds = train_in_process(corpus, epochs, count, extra, constants)
            after = round_trip_ns()
            row = {"variant": name, "threads": count, "repeat": repeat, "words_per_s": round(words / seconds),
                   "seconds": round(seconds, 3), "probe_before_ns": before, "probe_after_ns": after,
                   "placement": placement(before, after, near_ns, far_ns)}
            rows.append(row)
            for out in outs:
                print(json.dumps(row), file=out, flush=True)
    return rows


def summary(rows):
    """Markdown: per variant and placement, the runs, their median and range of words/s, and the median over
    the median one-thread run (of any placement: one thread shares nothing)."""
    one = [r["words_per_s"] for r in rows if r["threads"] == 1]
    base = statistics.median(one) if one else None
    lines = ["| variant | threads | placement | runs | words/s, median | range | median / 1 thread |",
             "|---|---:|---|---:|---:|---|---:|"]
    groups = {}
    for r in rows:
        key = (r["variant"], r["threads"], "any" if r["threads"] == 1 else r["placement"])
        groups.setdefault(key, []).append(r["words_per_s"])
    for (variant, threads, where), speeds in sorted(groups.items(), key=lambda kv: (
            kv[0][1], kv[0][0], PLACEMENT_ORDER[kv[0][2]])):
        median = statistics.median(speeds)
        lines.append("| %s | %d | %s | %d | %.2fM | %.2f-%.2fM | %s |" % (
            variant, threads, where, len(speeds), median / 1e6, min(speeds) / 1e6, max(speeds) / 1e6,
            "%.2fx" % (median / base) if base else "-"))
    return lines


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", default=None, help="plain-text training corpus (default: the shared gcide corpus)")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--near-ns", type=float, default=NEAR_NS, help="probes under this: the cores share a cache")
    p.add_argument("--far-ns", type=float, default=FAR_NS, help="probes over this: they do not")
    p.add_argument("--variant", type=parse_variant, action="append", default=[], metavar="NAME:key=value,...")
    p.add_argument("--jsonl", default=None, help="append each run's JSON line here as it ends")
    p.add_argument("--from-jsonl", default=None, metavar="FILE", help="run nothing: summarise the runs in FILE")
    args = p.parse_args(argv)
    if args.from_jsonl:
        with open(args.from_jsonl) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    else:
        if round_trip_ns(1000) is None:
            p.error("no C compiler builds the probe (set CC)")
        rows = run(args.corpus or default_corpus(), args.repeats, args.threads, args.epochs,
                   in_process_variants(p, args.variant), args.near_ns, args.far_ns, outputs(args.jsonl))
    print("\n".join(summary(rows)))
    print("\n`python -m eval.bench.placement %s`" % " ".join(argv if argv is not None else sys.argv[1:]))


if __name__ == "__main__":
    main()
