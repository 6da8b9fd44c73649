"""Training throughput of every loss x sampler pairing on the windows driver, relative to SGNS + unigram.

Each pairing trains skip-gram (dim 100, window 5, negative 5, sample 1e-3, min_count 5, shared negatives,
2 workers) for one epoch on the first ``--tokens`` tokens of the corpus and reports raw words/s and the
ratio to SGNS + unigram measured in the same run.  Pairings whose cost grows with the number of classes
(full softmax, exact Boltzmann/softmax sampling, top-k) train on ``--slow-tokens`` tokens instead.  The
scalable Boltzmann sampler is measured as ``boltzmann-mh``.

Usage::

    python -m eval.bench.pairings [--corpus PATH] [--tokens 1000000] [--slow-tokens 20000]
                                  [--losses sgns,nce] [--samplers unigram,lsh]
"""
import argparse
import os
import sys
import tempfile

from embkit import Word2Vec
from embkit.core import registry
from embkit.text.corpus import TextCorpus
from eval.bench.word2vec import default_corpus

# samplers and losses whose per-example cost is O(classes x dim)
SLOW_SAMPLERS = {"softmax_exact", "topk", "boltzmann"}   # boltzmann defaults to the exact method
SLOW_LOSSES = {"full_softmax"}


def head(corpus, tokens, directory):
    """Write the first ``tokens`` tokens of ``corpus`` (whole lines) to a file; return its path."""
    path = os.path.join(directory, "head-%d.txt" % tokens)
    if not os.path.exists(path):
        n = 0
        with open(path, "w") as out:
            for sentence in TextCorpus(corpus):
                out.write(" ".join(sentence) + "\n")
                n += len(sentence)
                if n >= tokens:
                    break
    return path


# extra sampler configurations measured under their own label
VARIANTS = {"boltzmann-mh": ("boltzmann", {"method": "mh"})}


def pairings(losses, samplers):
    for loss in losses:
        if not registry.uses_sampler(loss):
            yield loss, None
        else:
            for sampler in samplers:
                yield loss, sampler


def run(path, loss, sampler, workers):
    name, params = VARIANTS.get(sampler, (sampler, {}))
    model = Word2Vec(sg=1, vector_size=100, window=5, negative=5, sample=1e-3, min_count=5, epochs=1,
                     workers=workers, loss=loss, sampler=name, sampler_params=params)
    model.build_vocab(corpus_file=path)
    model.train()
    report = model.last_report
    return report.raw_words / report.seconds, report.epoch_loss[-1]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--corpus", default=default_corpus())
    p.add_argument("--tokens", type=int, default=1_000_000)
    p.add_argument("--slow-tokens", type=int, default=20_000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--losses", default=",".join(sorted(registry.LOSSES)))
    p.add_argument("--samplers", default=",".join(sorted(registry.SAMPLERS) + sorted(VARIANTS)))
    args = p.parse_args(argv)
    losses = [x for x in args.losses.split(",") if x]
    samplers = [x for x in args.samplers.split(",") if x]
    with tempfile.TemporaryDirectory() as tmp:
        fast, slow = head(args.corpus, args.tokens, tmp), head(args.corpus, args.slow_tokens, tmp)
        base = {}
        for name, path in (("fast", fast), ("slow", slow)):
            base[name] = run(path, "sgns", "unigram", args.workers)[0]
        rows = []
        for loss, sampler in pairings(losses, samplers):
            is_slow = loss in SLOW_LOSSES or sampler in SLOW_SAMPLERS
            try:
                speed, final = run(slow if is_slow else fast, loss, sampler, args.workers)
            except ValueError as exc:
                rows.append((loss, sampler or "-", "refused: %s" % exc, "", "", ""))
                continue
            ref = base["slow" if is_slow else "fast"]
            rows.append((loss, sampler or "-", "%d" % (args.slow_tokens if is_slow else args.tokens),
                         "{:,.0f}".format(speed), "%.3f" % (speed / ref), "%.3f" % final))
    print("| loss | sampler | tokens | raw words/s | vs sgns+unigram | final loss |")
    print("|---|---|---:|---:|---:|---:|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print("\nsgns+unigram: {:,.0f} raw words/s on {} tokens, {:,.0f} on {} tokens".format(
        base["fast"], args.tokens, base["slow"], args.slow_tokens))
    print("command: python -m eval.bench.pairings " + " ".join(argv if argv is not None else sys.argv[1:]))


if __name__ == "__main__":
    main()
