"""Relaxed softmax (Tanielian & Vasile 2019), Table 1: skip-gram word similarity and analogy per sampler.

Skip-gram on ``corpora/gcide.txt.gz`` (the stand-in for text8; ``--corpus`` takes text8 or any text8-style
file; its first million words in full mode, 200k in quick mode), the most common words (15,000 in full mode,
3,000 in quick mode), window 3, 5 negatives, dim 100, sample 1e-3,
alpha 0.025.  Methods, as the paper's columns: MLE (full softmax, the batched BLAS path, batch 256), SS
(sampled softmax, popularity proposal, 50 negatives as ``eval.bench.items``), US / PS (relaxed softmax,
uniform / popularity negatives), UBS (relaxed softmax, Boltzmann negatives with uniform degeneracy, T = 0.5)
and PBS (popularity degeneracy, T = 1).  The Boltzmann sampler that runs is the Metropolis-Hastings chain
(``method='mh'``, burn-in 50, 3 steps per draw): the exact one scores every word per draw (``O(V d)``, as
slow as MLE).  Similarity: WS-353, SimLex-999, Rare Words, MEN, MTurk-287, Pearson (the paper's) and
Spearman; analogy: Google semantic and syntactic Prec@1/5/15 over the vocabulary.

Every method runs 3 seeds in both modes (MLE, which costs about ten minutes a seed in full mode on two idle
cores, one seed in quick mode); MLE runs after all the others, so a run cut short loses it first, and
``--resume`` runs only what the JSON lacks.
"""
import gzip

import numpy as np

from eval.repro.common import by_method, mean_spread, need, pyplot, save_figure, say

#: the paper's Table 1 (text8, 15k words): similarity Pearson, analogy precision in %
PAPER = {
    "ws353": [0.46, 0.44, 0.38, 0.50, 0.52, 0.55], "simlex999": [0.13, 0.26, 0.25, 0.25, 0.21, 0.25],
    "rw": [0.30, 0.24, 0.18, 0.30, 0.35, 0.35], "men": [0.42, 0.38, 0.33, 0.49, 0.52, 0.52],
    "mturk287": [0.47, 0.40, 0.34, 0.61, 0.53, 0.64],
    "semantic@1": [15.4, 11.7, 13.5, 13.0, 13.3, 15.9], "semantic@5": [29.5, 24.8, 21.9, 26.6, 25.0, 24.5],
    "semantic@15": [39.7, 33.0, 31.3, 40.0, 39.5, 40.5], "syntactic@1": [2.8, 2.0, 1.8, 4.0, 2.1, 3.2],
    "syntactic@5": [13.2, 12.7, 11.2, 16.8, 14.8, 16.1], "syntactic@15": [20.0, 17.9, 16.5, 25.1, 23.6, 26.1],
}
METHODS = ("MLE", "SS", "US", "UBS", "PS", "PBS")
SIMILARITY = ("ws353", "simlex999", "rw", "men", "mturk287")
ANALOGY = tuple("%s@%d" % (kind, k) for kind in ("semantic", "syntactic") for k in (1, 5, 15))
MH = {"method": "mh", "burn_in": 50, "mh_steps": 3}

#: (quick, full) settings
#: MLE costs O(V d) per example even batched (about 1.5 hours per GCIDE epoch at 15k words on two cores),
#: so the full mode trains on the first million words.
SETTINGS = {True: dict(words=200_000, vocab=3_000, epochs=2, seeds=3, mle_seeds=1),
            False: dict(words=1_000_000, vocab=15_000, epochs=3, seeds=3, mle_seeds=3)}


def method_params(name):
    """Word2Vec keywords of one column of the table (every setting pinned here)."""
    relaxed = dict(loss="relaxed_softmax", negative=5)
    return {
        "MLE": dict(loss="full_softmax", negative=0, batch_size=256),
        "SS": dict(loss="sampled_softmax", sampler="unigram", negative=50, sampler_params={"ns_exponent": 1.0}),
        "US": dict(relaxed, sampler="uniform"),
        "PS": dict(relaxed, sampler="unigram", sampler_params={"ns_exponent": 1.0}),
        "UBS": dict(relaxed, sampler="boltzmann", sampler_params=dict(MH, T=0.5, degeneracy="uniform")),
        "PBS": dict(relaxed, sampler="boltzmann", sampler_params=dict(MH, T=1.0, degeneracy="popularity")),
    }[name]


def read_sentences(path, n_words):
    """The lines of a text file as word lists, up to ``n_words`` words (all of them for None)."""
    opener = gzip.open if path.endswith(".gz") else open
    out, total = [], 0
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            words = line.split()
            for i in range(0, len(words), 10_000):     # text8 is one line: cut it into sentences
                out.append(words[i:i + 10_000])
            total += len(words)
            if n_words is not None and total >= n_words:
                break
    return out


def scores(kv, vocab):
    from embkit.evaluation import evaluate_analogies, evaluate_similarity
    out = {}
    for name in SIMILARITY:
        r = evaluate_similarity(kv, name)
        out[name] = {"pearson": r.pearson, "spearman": r.spearman, "found": r.n_found, "pairs": r.n_pairs}
    a = evaluate_analogies(kv, restrict_vocab=vocab, topn=(1, 5, 15))
    for kind in ("semantic", "syntactic"):
        section = getattr(a, kind)
        for k in (1, 5, 15):
            out["%s@%d" % (kind, k)] = 100 * section.precision_at(k) if section.precision_at(k) is not None else None
        out["%s_questions" % kind] = section.attempted
    return out


def run(args, rec):
    from embkit import Word2Vec
    s = SETTINGS[args.quick]
    seeds = args.seeds or s["seeds"]
    corpus_path = args.corpus or need("corpora/gcide.txt.gz")
    sentences = read_sentences(corpus_path, s["words"])
    n_words = sum(len(x) for x in sentences)
    rec.add("setup", dict(corpus=corpus_path.rsplit("/", 1)[-1], words=n_words, vocab=s["vocab"], window=3,
                          negative=5, dim=100, epochs=s["epochs"], sample=1e-3, alpha=0.025, seeds=seeds,
                          boltzmann_sampler=MH, mle="full_softmax, batched BLAS, batch_size=256"))
    say("table1: %d words, vocabulary %d, %d epochs, %d seed(s)" % (n_words, s["vocab"], s["epochs"], seeds))
    runs = rec.get("runs", [])
    done = {(r["method"], r["seed"]) for r in runs}
    order = [(seed, name) for seed in range(1, seeds + 1) for name in METHODS if name != "MLE"]
    order += [(seed, "MLE") for seed in range(1, min(seeds, s["mle_seeds"]) + 1)]
    for seed, name in order:
        if (name, seed) in done:
            continue
        model = Word2Vec(sentences, sg=1, vector_size=100, window=3, min_count=1, max_final_vocab=s["vocab"],
                         sample=1e-3, alpha=0.025, epochs=s["epochs"], workers=args.workers, seed=seed,
                         progress=False, **method_params(name))
        rep = model.last_report
        res = scores(model.wv, s["vocab"])
        runs.append(dict(method=name, seed=seed, seconds=rep.seconds, examples_per_s=rep.examples / rep.seconds,
                         **res))
        rec.add("runs", runs)
        say("table1 seed %d %-3s: %.0fs, %.0f ex/s, WS-353 %.3f, sem@1 %.1f, syn@1 %.1f"
            % (seed, name, rep.seconds, runs[-1]["examples_per_s"], res["ws353"]["pearson"],
               res["semantic@1"] or 0, res["syntactic@1"] or 0))
    rec.add("summary", summarise(runs))


def summarise(runs):
    """Mean and spread over seeds of every metric and method."""
    out = {}
    for name, mine in by_method(runs, METHODS):
        row = {}
        for m in SIMILARITY:
            for c in ("pearson", "spearman"):
                row["%s_%s" % (m, c)] = mean_spread([r[m][c] for r in mine])
        for m in ANALOGY:
            row[m] = mean_spread([r[m] for r in mine])
        row["seconds"] = mean_spread([r["seconds"] for r in mine])
        row["seeds"] = len(mine)
        out[name] = row
    return out


def plot(data, path):
    plt = pyplot()
    summary = data["results"].get("summary") or summarise(data["results"].get("runs", []))
    methods = [m for m in METHODS if m in summary]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    x = np.arange(len(SIMILARITY))
    w = 0.8 / max(len(methods), 1)
    for i, m in enumerate(methods):
        vals = [summary[m]["%s_pearson" % s][0] for s in SIMILARITY]
        errs = [summary[m]["%s_pearson" % s][1] for s in SIMILARITY]
        axes[0].bar(x + i * w, vals, w, yerr=errs, label=m)
    axes[0].scatter(np.repeat(x, len(methods)) + np.tile(np.arange(len(methods)) * w, len(x)),
                    [PAPER[s][METHODS.index(m)] for s in SIMILARITY for m in methods], marker="_", color="k",
                    s=60, label="paper", zorder=3)
    axes[0].set_xticks(x + 0.4 - w / 2, SIMILARITY)
    axes[0].set_ylabel("Pearson")
    axes[0].set_title("similarity (bars: embkit, dashes: paper)")
    x = np.arange(len(ANALOGY))
    for i, m in enumerate(methods):
        axes[1].bar(x + i * w, [summary[m][a][0] or 0 for a in ANALOGY], w,
                    yerr=[summary[m][a][1] or 0 for a in ANALOGY], label=m)
    axes[1].scatter(np.repeat(x, len(methods)) + np.tile(np.arange(len(methods)) * w, len(x)),
                    [PAPER[a][METHODS.index(m)] for a in ANALOGY for m in methods], marker="_", color="k", s=60,
                    zorder=3)
    axes[1].set_xticks(x + 0.4 - w / 2, [a.replace("semantic", "sem").replace("syntactic", "syn") for a in ANALOGY])
    axes[1].set_ylabel("precision (%)")
    axes[1].set_title("analogy")
    axes[1].legend(fontsize=7, ncol=2)
    save_figure(fig, path)


def _cell(pair, scale=1.0, digits=2):
    mean, spread = pair
    if mean is None:
        return "-"
    text = "%.*f" % (digits, scale * mean)
    return text + (" ± %.*f" % (digits, scale * spread) if spread else "")


def markdown(data):
    """The table beside the paper's: one row per metric, embkit (mean ± sd over seeds) / paper per method."""
    summary = data["results"].get("summary") or summarise(data["results"].get("runs", []))
    lines = ["| metric | " + " | ".join("%s embkit / paper" % m for m in METHODS) + " |",
             "|---" * (len(METHODS) + 1) + "|"]
    for s in SIMILARITY:
        for c in ("pearson", "spearman"):
            cells = []
            for i, m in enumerate(METHODS):
                mine = _cell(summary[m]["%s_%s" % (s, c)]) if m in summary else "-"
                cells.append("%s / %s" % (mine, PAPER[s][i]) if c == "pearson" else mine)
            lines.append("| %s %s | %s |" % (s, c, " | ".join(cells)))
    for a in ANALOGY:
        cells = ["%s / %s" % (_cell(summary[m][a], digits=1) if m in summary else "-", PAPER[a][i])
                 for i, m in enumerate(METHODS)]
        lines.append("| %s (%%) | %s |" % (a, " | ".join(cells)))
    lines.append("| train s | %s |" % " | ".join(_cell(summary[m]["seconds"], digits=0) if m in summary else "-"
                                               for m in METHODS))
    first = next(iter(data["results"].get("runs", [])), None)
    if first:
        lines.append("\nCoverage (pairs and questions with every word in the vocabulary): %s; analogy: %d semantic "
                     "and %d syntactic questions." % (", ".join("%s %d/%d" % (s, first[s]["found"], first[s]["pairs"])
                                                               for s in SIMILARITY),
                                                     first["semantic_questions"], first["syntactic_questions"]))
    return "\n".join(lines)
