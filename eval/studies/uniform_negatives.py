"""Why US collapses in Table 1: uniform negatives over a Zipfian vocabulary, whatever the loss.

The setup of ``eval.repro.words`` (full mode: the first million words of GCIDE, its 15,000 most common words,
window 3, dim 100, sample 1e-3, alpha 0.025, 3 epochs), one seed, two threads, for four ways of using uniform
negatives: the relaxed softmax with 5 (the table's US) and 50 negatives, the sampled softmax with 5 (for a
uniform proposal its logQ correction is a constant, so it must equal US exactly), and SGNS with 5; and, as
the control, the sampled softmax on the popularity proposal (the table's SS, 50 negatives).  Printed per run:
WS-353 and MEN Pearson, semantic analogy Prec@1, the mean cosine of the input vectors of 20,000 random pairs
of words (how much the vectors share one direction), and the mean norm of the output vectors of the 100 most
common and of the 5,000 rarest words.

Usage::

    python -m eval.studies.uniform_negatives
"""
import argparse

import numpy as np

from eval.repro.common import need, say
from eval.repro.words import method_params, read_sentences, scores

RUNS = (
    ("relaxed softmax, uniform, 5 negatives (US)", dict(loss="relaxed_softmax", negative=5, sampler="uniform")),
    ("sampled softmax, uniform, 5 negatives", dict(loss="sampled_softmax", negative=5, sampler="uniform")),
    ("relaxed softmax, uniform, 50 negatives", dict(loss="relaxed_softmax", negative=50, sampler="uniform")),
    ("SGNS, uniform, 5 negatives", dict(loss="sgns", negative=5, sampler="uniform")),
    ("sampled softmax, popularity, 50 negatives (SS)", method_params("SS")),
)


def main(argv=None):
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args(argv)     # no options (answers --help)
    from embkit import Word2Vec
    sentences = read_sentences(need("corpora/gcide.txt.gz"), 1_000_000)
    print("| negatives | WS-353 | MEN | semantic@1 (%) | mean cosine of two words | output norm, 100 most common "
          "| 5,000 rarest |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    rng = np.random.default_rng(0)
    for label, kw in RUNS:
        model = Word2Vec(sentences, sg=1, vector_size=100, window=3, min_count=1, max_final_vocab=15_000,
                         sample=1e-3, alpha=0.025, epochs=3, workers=2, seed=1, progress=False, **kw)
        res = scores(model.wv, 15_000)
        unit = model.W_in / np.maximum(np.linalg.norm(model.W_in, axis=1, keepdims=True), 1e-12)
        a, b = rng.integers(len(unit), size=(2, 20_000))
        cosine = float(np.mean(np.sum(unit[a] * unit[b], axis=1)))
        norms = np.linalg.norm(model.W_out, axis=1)     # rows in order of frequency
        print("| %s | %.3f | %.3f | %.1f | %.2f | %.2f | %.2f |" % (
            label, res["ws353"]["pearson"], res["men"]["pearson"], res["semantic@1"] or 0.0, cosine,
            norms[:100].mean(), norms[-5000:].mean()), flush=True)
    say("done")


if __name__ == "__main__":
    main()
