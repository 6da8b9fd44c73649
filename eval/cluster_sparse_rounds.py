"""Would fewer bytes a round keep the quality?  Two replicas simulated in one process, sending only the rows
that hold a fraction of each round's squared step and keeping the rest for later rounds (error feedback).

The run is ``eval/bench_cluster.py``'s two-worker run (gcide cut into ``--shards`` files dealt into two
groups as a cluster deals them, skip-gram dim 100, ``--rounds`` reconciliations an epoch, 5 epochs), with
embkit's own replicas (``embkit.core.replica``) trained one after the other in this process, so only the
exchange differs:

* at the end of a round, replica ``i`` holds ``D_i = T_i - B`` (its table minus the reconciled one ``B``);
  it sends the rows with the largest ``|D_i|^2`` that together hold ``--fracs`` of ``sum |D_i|^2``
  (1: every changed row, embkit's exchange), as float16 or (``--bits 8``) 8 bits a value with a float32
  scale per row;
* the merge is the sum of the sent rows (embkit's merge of two replicas), sent back in the same precision;
  ``B`` takes it, and each replica adds it minus what it sent itself, so every unsent part of ``D_i`` (and
  the rounding of what was sent) stays in ``T_i`` and goes with a later round.

For each fraction: analogy (restrict_vocab 30000), WS-353 and SimLex-999 of ``B`` after the run, and the MB a
round moves (rows up from both replicas and down to both, ids included).  Nothing is asserted.

Usage::

    python eval/cluster_sparse_rounds.py [--fracs 1 0.75 0.5 0.25] [--bits 16] [--seeds 1 2 3] [--rounds 32]
"""
import argparse
import glob
import json
import os
import shlex
import sys
import tempfile

import numpy as np

from repro_common import need

HERE = os.path.dirname(os.path.abspath(__file__))


def quantized(values, bits):
    """``values`` as the receiver gets them (float32), and their bytes on the wire (ids included)."""
    rows, dim = values.shape
    if bits == 16:
        return values.astype(np.float16).astype(np.float32), rows * (2 * dim + 4)
    scale = np.abs(values).max(axis=1, keepdims=True) / 127.0
    scale[scale == 0] = 1.0
    return np.rint(values / scale).astype(np.int8).astype(np.float32) * scale, rows * (dim + 8)


def run(files, corpus, seed, fraction, bits, rounds, epochs):
    """One simulated two-replica run (``rounds``: a list, the rounds of each epoch); its scores and bytes a
    round."""
    sys.path.insert(0, HERE)
    from bench_cluster import params
    from bench_word2vec import evaluate
    from embkit import Word2Vec
    from embkit.core.cluster import group_shards
    from embkit.core.reconcile import changed_rows
    from embkit.core.replica import Replica
    from embkit.text.shards import TextShard

    model = Word2Vec(**dict(params(argparse.Namespace(epochs=epochs, alpha=0.05), seed), progress=False))
    model.build_vocab(corpus_file=corpus)
    groups = group_shards([TextShard(f, os.path.getsize(f)) for f in files], 2)
    settings = {"epochs": epochs, "alpha": model.alpha, "min_alpha": model.min_alpha, "mode": "sum",
                "replicas": len(groups)}
    replicas = [Replica(model._cluster_spec(), shards, model.W_in, model.W_out, settings, g)
                for g, shards in enumerate(groups)]
    reconciled = [model.W_in.copy(), model.W_out.copy()]
    moved = 0
    for epoch in range(epochs):
        for r in range(rounds[epoch]):
            for replica in replicas:
                replica.train(epoch, r, rounds[epoch])      # the exchange is simulated below
            for t, base in enumerate(reconciled):
                tables = [rep.model.W_in if t == 0 else rep.model.W_out for rep in replicas]
                sent = []
                for table in tables:
                    rows = changed_rows(table, base, fraction).ids     # embkit's own choice of rows
                    values, nbytes = quantized((table - base)[rows], bits)
                    sent.append((rows, values))
                    moved += nbytes
                total = np.zeros_like(base)
                for rows, values in sent:
                    total[rows] += values
                union = np.unique(np.concatenate([rows for rows, _ in sent]))
                step, nbytes = quantized(total[union], bits)
                moved += nbytes * len(replicas)
                base[union] += step
                for table, (rows, values) in zip(tables, sent):
                    table[union] += step
                    table[rows] -= values
    np.copyto(model.W_in, reconciled[0])
    np.copyto(model.W_out, reconciled[1])
    model.wv.norms = None
    for replica in replicas:
        replica.close()
    scores = evaluate(model.wv, 30000, "embkit")
    return {"seed": seed, "fraction": fraction, "bits": bits, "rounds_per_epoch": list(rounds),
            "analogy": scores["analogy"], "ws353": scores["ws353"], "simlex999": scores["simlex999"],
            "mb_per_round": moved / sum(rounds) / 1e6}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", default=None, help="default: the shared data's corpora/gcide.txt.gz")
    p.add_argument("--shards", type=int, default=8)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--rounds", type=int, nargs="+", default=[32],
                   help="rounds an epoch: one number for every epoch, or one per epoch")
    p.add_argument("--fracs", type=float, nargs="+", default=[1.0, 0.75, 0.5, 0.25])
    p.add_argument("--bits", type=int, choices=(16, 8), default=16)
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    args = p.parse_args(argv)
    sys.path.insert(0, HERE)
    from bench_cluster import cell, write_shards

    corpus = args.corpus or need("corpora/gcide.txt.gz")
    rounds = args.rounds * args.epochs if len(args.rounds) == 1 else args.rounds
    if len(rounds) != args.epochs:
        p.error("--rounds takes one number or one per epoch (%d)" % args.epochs)
    rows = []
    with tempfile.TemporaryDirectory(prefix="embkit-sparse-") as tmp:
        files = sorted(glob.glob(write_shards(corpus, tmp, args.shards)))
        for fraction in args.fracs:
            for seed in args.seeds:
                rows.append(run(files, corpus, seed, fraction, args.bits, rounds, args.epochs))
                print(json.dumps(rows[-1]), flush=True)
    print("\n| rows sent: share of the squared step | bits | MB a round | analogy | WS-353 | SimLex-999 |")
    print("|---:|---:|---:|---:|---:|---:|")
    for fraction in args.fracs:
        runs = [r for r in rows if r["fraction"] == fraction]
        cells = [cell([r[k] for r in runs], "%.4f") for k in ("analogy", "ws353", "simlex999")]
        print("| %g | %d | %.1f | %s |" % (fraction, args.bits, np.mean([r["mb_per_round"] for r in runs]),
                                          " | ".join(cells)))
    print("\nCommand: python eval/cluster_sparse_rounds.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:])))


if __name__ == "__main__":
    main()
