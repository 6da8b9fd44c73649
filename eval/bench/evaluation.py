"""Benchmark: embkit.evaluation.evaluate_analogies vs gensim's evaluate_word_analogies.

Both run on the same vectors over all 19,544 Google analogy questions with the
same restrict_vocab; the script checks that the per-section counts are equal
and prints both times and their ratio (stdout only; nothing is written).

Vectors come from ``--vectors`` (a word2vec text/binary file, or a gensim
``KeyedVectors.save`` file with ``--allow-pickle``) or are trained with gensim Word2Vec on ``--corpus``
(default: ``corpora/gcide.txt.gz`` under ``$EMBKIT_SHARED_DATA``, itself
defaulting to ``../shared/data`` relative to the repository root).

Usage::

    python -m eval.bench.evaluation                      # train on GCIDE, then compare
    python -m eval.bench.evaluation --epochs 1 --save gcide.kv
    python -m eval.bench.evaluation --vectors gcide.kv --allow-pickle --repeat 3
"""

import argparse
import gzip
import logging
import os
import sys
import time

from gensim.models import Word2Vec

from embkit.evaluation import evaluate_analogies, resolve_path
from eval.bench.word2vec import default_corpus


class LineCorpus:
    """Restartable iterator over the whitespace-split lines of a (gzip) text file."""

    def __init__(self, path):
        self.path = path

    def __iter__(self):
        opener = gzip.open if self.path.endswith('.gz') else open
        with opener(self.path, 'rt', encoding='utf-8') as fin:
            for line in fin:
                words = line.split()
                if words:
                    yield words


def load_or_train(args):
    if args.vectors:
        from embkit import load_vectors
        return load_vectors(args.vectors, allow_pickle=args.allow_pickle)
    if not os.path.isfile(args.corpus):
        sys.exit('corpus not found: %s (set EMBKIT_SHARED_DATA or pass --corpus/--vectors)' % args.corpus)
    t0 = time.perf_counter()
    model = Word2Vec(LineCorpus(args.corpus), vector_size=args.dim, window=5, min_count=args.min_count,
                     sg=0, negative=5, epochs=args.epochs, workers=args.workers, seed=1)
    print('trained gensim Word2Vec on %s: %d words x %d dims in %.1f s'
          % (os.path.basename(args.corpus), len(model.wv), args.dim, time.perf_counter() - t0))
    if args.save:
        model.wv.save(args.save)
    return model.wv


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--vectors', help='pre-trained vectors (word2vec .bin/.txt/.vec, or a gensim .kv pickle with '
                                          '--allow-pickle)')
    parser.add_argument('--allow-pickle', action='store_true',
                        help='read a gensim .kv file (a pickle: it runs any code it holds; only files you trust)')
    parser.add_argument('--corpus', default=default_corpus(), help='training corpus (gzip text)')
    parser.add_argument('--dim', type=int, default=100)
    parser.add_argument('--min-count', type=int, default=5)
    parser.add_argument('--epochs', type=int, default=2)
    parser.add_argument('--workers', type=int, default=1)
    parser.add_argument('--save', help='save the trained KeyedVectors here (for --vectors later)')
    parser.add_argument('--restrict-vocab', type=int, default=30000)
    parser.add_argument('--repeat', type=int, default=1, help='embkit runs (best time is reported)')
    args = parser.parse_args(argv)
    logging.getLogger('gensim').setLevel(logging.WARNING)

    kv = load_or_train(args)
    path = resolve_path('questions-words')
    kv.fill_norms()

    t0 = time.perf_counter()
    _, sections = kv.evaluate_word_analogies(path, restrict_vocab=args.restrict_vocab)
    t_gensim = time.perf_counter() - t0

    times = []
    for _ in range(max(1, args.repeat)):
        t0 = time.perf_counter()
        result = evaluate_analogies(kv, path, restrict_vocab=args.restrict_vocab)
        times.append(time.perf_counter() - t0)
    t_embkit = min(times)

    theirs = [(s['section'], len(s['correct']), len(s['incorrect'])) for s in sections]
    ours = [(s.name, s.correct, s.attempted - s.correct) for s in result.sections]
    ours.append(('Total accuracy', result.total.correct, result.total.attempted - result.total.correct))
    same = theirs == ours

    print(result)
    print()
    print('vocabulary %d, restrict_vocab %d, questions attempted %d of %d'
          % (len(kv), args.restrict_vocab, result.total.attempted,
             result.total.attempted + result.total.skipped))
    print('gensim evaluate_word_analogies : %8.3f s  accuracy %.4f'
          % (t_gensim, theirs[-1][1] / max(1, theirs[-1][1] + theirs[-1][2])))
    print('embkit evaluate_analogies      : %8.3f s  accuracy %.4f  (best of %d; first call %.3f s)'
          % (t_embkit, result.accuracy or 0.0, len(times), times[0]))
    print('speed-up                       : %8.1fx' % (t_gensim / t_embkit))
    print('per-section counts identical   : %s' % same)
    if not same:
        for a, b in zip(theirs, ours):
            if a != b:
                print('  gensim %s  embkit %s' % (a, b))
    return 0 if same else 1


if __name__ == '__main__':
    sys.exit(main())
