"""Throughput and scaling: embkit Word2Vec against gensim and fastText, words/s and quality, words/s per thread.

Runs ``eval.bench.word2vec`` (each trainer in its own child process, the same plain-text corpus, skip-gram,
dim 100, window 5, 5 negatives, sample 1e-3, min_count 5, each library's default learning rate; analogy
accuracy and WS-353 / SimLex-999 Spearman by the same code) once per thread count: 1 and 2 (and every count
up to the machine's cores in full mode).  Quick mode trains one epoch of the 0.47M-word Wikipedia sample;
full mode five epochs of GCIDE (4.8M words).  Timings are only meaningful from a run that had the machine to
itself (``flock -x`` on a shared machine).
"""
import json
import os
import tempfile

from eval.paths import REPO_ROOT
from eval.repro.common import need, pyplot, save_figure, say

TRAINERS = ("embkit", "gensim", "fasttext")


def run(args, rec):
    from eval.bench import word2vec as bench_word2vec
    if args.quick:
        corpus = os.path.join(REPO_ROOT, "embkit", "data", "enwiki-sample.txt.gz")
        epochs = 1
    else:
        corpus = need("corpora/gcide.txt.gz")
        epochs = 5
    threads = [1, 2] if args.quick else list(range(1, max(2, os.cpu_count() or 2) + 1))
    rec.add("setup", dict(corpus=os.path.basename(corpus), epochs=epochs, threads=threads,
                          settings="sg=1 vector_size=100 window=5 negative=5 sample=1e-3 min_count=5"))
    runs = []
    for n in threads:
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "bench.json")
            say("throughput: %d thread(s), embkit, gensim, fastText" % n)
            bench_word2vec.main(["--corpus", corpus, "--epochs", str(epochs), "--workers", str(n),
                                 "--peers", "gensim,fasttext", "--analogy-impl", "embkit", "--json", out])
            with open(out) as fh:
                data = json.load(fh)
        for r in data["results"]:
            runs.append(dict(threads=n, **{k: r.get(k) for k in ("trainer", "wall_s", "train_s", "raw_words_per_s",
                                                                 "analogy", "ws353", "simlex999", "peak_mb",
                                                                 "error")}))
        rec.add("runs", runs)
        rec.add("corpus_tokens", data["corpus_tokens"])


def plot(data, path):
    plt = pyplot()
    runs = data["results"].get("runs", [])
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    for t in TRAINERS:
        mine = sorted((r for r in runs if r["trainer"] == t and r.get("raw_words_per_s")), key=lambda r: r["threads"])
        if not mine:
            continue
        axes[0].plot([r["threads"] for r in mine], [r["raw_words_per_s"] / 1e3 for r in mine], "o-", label=t)
        axes[1].bar([TRAINERS.index(t) + 0.25 * (r["threads"] - 1) for r in mine], [r["analogy"] or 0 for r in mine],
                    0.25, label="%s" % t)
    axes[0].set_xlabel("threads")
    axes[0].set_ylabel("thousand raw words/s")
    axes[0].set_xticks(sorted({r["threads"] for r in runs}) or [1])
    axes[0].legend(fontsize=7)
    axes[1].set_xticks(range(len(TRAINERS)), TRAINERS)
    axes[1].set_ylabel("analogy accuracy (bars: 1, 2 threads)")
    save_figure(fig, path)


def markdown(data):
    runs = data["results"].get("runs", [])
    out = ["corpus %s, %s tokens, %s epoch(s); %s\n" % (data["results"]["setup"]["corpus"],
                                                       format(data["results"].get("corpus_tokens", 0), ","),
                                                       data["results"]["setup"]["epochs"],
                                                       data["results"]["setup"]["settings"]),
           "| trainer | threads | train s | raw words/s | analogy | WS-353 | SimLex | peak MB |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in runs:
        if r.get("error"):
            out.append("| %s | %d | failed: %s | | | | | |" % (r["trainer"], r["threads"], r["error"]))
            continue
        out.append("| %s | %d | %.1f | %s | %.4f | %.4f | %.4f | %.0f |" % (
            r["trainer"], r["threads"], r["train_s"], format(int(r["raw_words_per_s"]), ","), r["analogy"],
            r["ws353"], r["simlex999"], r["peak_mb"]))
    return "\n".join(out)
