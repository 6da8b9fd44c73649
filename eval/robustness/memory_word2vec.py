"""Peak memory of Word2Vec training as the corpus grows: it must not grow beyond the vocabulary and tables.

Generates corpora of the given sizes from one Zipf-like vocabulary (word ``k`` drawn with probability
proportional to ``1 / (k + 2.7) ** 1.07``, the shape of English word counts; sentences of 5-40 words),
trains ``Word2Vec`` on each in a fresh process, and reports the peak resident set (VmHWM), the peak
address space (VmPeak), the vocabulary (distinct words read, words kept) and the bytes of the tables.
What may grow with the corpus is only what depends on the vocabulary: the distinct words seen while
counting (a Zipf vocabulary keeps growing with the corpus) and the tables of the kept words.

``--as-limit`` also runs the largest corpus under ``prlimit --as`` (an address-space limit below the
corpus file's size), showing that the corpus is streamed, never held.

Usage::

    python -m eval.robustness.memory_word2vec --tokens 5e6,20e6,50e6 --vocab 30000
    python -m eval.robustness.memory_word2vec --tokens 200e6 --vocab 30000 --as-limit 640M
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from eval.paths import REPO_ROOT

ZIPF_EXPONENT, ZIPF_SHIFT = 1.07, 2.7


def generate(path, n_tokens, vocab_size, seed=0, block=1 << 20):
    """Write ``n_tokens`` Zipf-distributed tokens (``w<rank>``) in lines of 5-40 words to ``path``."""
    rng = np.random.default_rng(seed)
    ranks = np.arange(vocab_size, dtype=np.float64)
    cdf = np.cumsum(1.0 / (ranks + ZIPF_SHIFT) ** ZIPF_EXPONENT)
    cdf /= cdf[-1]
    words = np.array(["w%d" % k for k in range(vocab_size)], dtype=object)
    tmp = path + ".part"
    with open(tmp, "w", encoding="ascii") as fh:
        left = n_tokens
        while left > 0:
            n = min(block, left)
            ids = np.minimum(np.searchsorted(cdf, rng.random(n)), vocab_size - 1)
            tokens = words[ids]
            lengths = rng.integers(5, 41, size=n // 5 + 2)
            cuts = np.cumsum(lengths)
            cuts = cuts[cuts < n]
            lines = [" ".join(part) for part in np.split(tokens, cuts)]
            fh.write("\n".join(lines) + "\n")
            left -= n
    os.replace(tmp, path)


def _status():
    """VmHWM (peak resident) and VmPeak (peak address space) of this process, in MB."""
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "VmPeak", "VmRSS"):
                out[key] = int(value.split()[0]) / 1024.0
    return out


def child(corpus, workers, vector_size, epochs):
    """Train on ``corpus`` and print a JSON report of the memory at each phase."""
    from embkit import Word2Vec
    report = {"after_import": _status()}
    start = time.perf_counter()
    model = Word2Vec(vector_size=vector_size, min_count=5, workers=workers, epochs=epochs, sg=1, progress=False)
    model.build_vocab(corpus_file=corpus)
    report["after_build_vocab"] = _status()
    scan = time.perf_counter() - start
    model.train()
    report["after_train"] = _status()
    report.update(distinct_words=model.vocab.distinct_words, kept_words=len(model.vocab),
                  corpus_tokens=int(model.vocab.raw_words),
                  table_mb=(model.W_in.nbytes + model.W_out.nbytes) / 2 ** 20, scan_seconds=round(scan, 1),
                  train_seconds=round(time.perf_counter() - start - scan, 1))
    print(json.dumps(report))


def run_child(corpus, args, prefix=()):
    cmd = list(prefix) + [sys.executable, "-m", __spec__.name, "--child", corpus, "--workers",
                          str(args.workers), "--vector-size", str(args.vector_size), "--epochs", str(args.epochs)]
    result = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True)
    if result.returncode != 0:
        return {"error": "exit %d: %s" % (result.returncode, result.stderr.strip()[-400:]), "command": " ".join(cmd)}
    report = json.loads(result.stdout.strip().splitlines()[-1])
    report["command"] = " ".join(cmd)
    return report


def _size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].upper() in units else int(text)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tokens", default="5e6,20e6,50e6", help="comma-separated corpus sizes in tokens")
    p.add_argument("--vocab", type=int, default=1000000, help="size of the Zipf vocabulary drawn from")
    p.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "embkit-memory"),
                   help="where the corpora are written (removed afterwards unless --keep)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--vector-size", type=int, default=100)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--as-limit", help="also train the largest corpus under prlimit --as=LIMIT (e.g. 600M)")
    p.add_argument("--keep", action="store_true", help="keep the generated corpora")
    p.add_argument("--json", help="write the reports here")
    p.add_argument("--child", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args.child, args.workers, args.vector_size, args.epochs)
        return
    os.makedirs(args.dir, exist_ok=True)
    rows = []
    print("| tokens | file MB | distinct read | kept | tables MB | peak RSS after vocab MB | peak RSS MB | "
          "peak address space MB | scan s | train s |")
    print("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    sizes = [int(float(t)) for t in args.tokens.split(",")]
    for n in sizes:
        corpus = os.path.join(args.dir, "zipf-%d.txt" % n)
        if not os.path.exists(corpus):
            generate(corpus, n, args.vocab)
        rows.append(dict(run_child(corpus, args), tokens=n, file_mb=os.path.getsize(corpus) / 2 ** 20))
        _print_row(rows[-1])
    if args.as_limit:
        corpus = os.path.join(args.dir, "zipf-%d.txt" % sizes[-1])
        limit = _size(args.as_limit)
        row = dict(run_child(corpus, args, prefix=("prlimit", "--as=%d" % limit)), tokens=sizes[-1],
                   file_mb=os.path.getsize(corpus) / 2 ** 20, as_limit_mb=limit / 2 ** 20)
        rows.append(row)
        print("\nunder prlimit --as=%d (%.0f MB; corpus file %.0f MB):" % (limit, limit / 2 ** 20, row["file_mb"]))
        _print_row(row)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    if not args.keep:
        shutil.rmtree(args.dir, ignore_errors=True)


def _print_row(r):
    if "error" in r:
        print("| %d | %.0f | failed: %s |" % (r["tokens"], r["file_mb"], r["error"][-200:]))
        return
    print("| %d | %.0f | %s | %d | %.0f | %.0f | %.0f | %.0f | %.1f | %.1f |" % (
        r["tokens"], r["file_mb"], r.get("distinct_words") or "-", r["kept_words"], r["table_mb"],
        r["after_build_vocab"]["VmHWM"], r["after_train"]["VmHWM"], r["after_train"]["VmPeak"],
        r["scan_seconds"], r["train_seconds"]), flush=True)


if __name__ == "__main__":
    main()
