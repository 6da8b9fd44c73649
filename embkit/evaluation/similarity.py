"""Word-similarity evaluation: correlation of cosine similarity with human scores."""

import warnings

import numpy as np
from scipy import stats
from scipy.linalg.blas import get_blas_funcs

from ._vocab import build_lookup, fold_word
from .datasets import load_similarity
from .tables import clean as _clean
from .word_results import SimilarityResult

__all__ = ['evaluate_similarity', 'cosine_similarities']


_DNRM2, _DSCAL = get_blas_funcs(('nrm2', 'scal'), dtype=np.float64)


def _unit(vector):
    """`vector` scaled to unit length in float64 BLAS, cast back to its dtype."""
    length = _DNRM2(vector)
    if not length > 0:
        return vector
    return _DSCAL(1.0 / length, np.array(vector, dtype=np.float64)).astype(vector.dtype)


def cosine_similarities(vectors, rows1, rows2):
    """Cosine similarity between paired rows of `vectors`.

    Each vector is scaled to unit length in float64 and cast back to the
    dtype of `vectors` (float32 for gensim models) before the dot product, the
    same sequence of float operations as ``KeyedVectors.similarity``: values
    that round to equal numbers -- and hence tied Spearman ranks -- are the
    same as gensim's.

    Parameters
    ----------
    vectors : numpy.ndarray
        2-D array of vectors.
    rows1, rows2 : sequence of int
        Row indices; the i-th similarity compares ``rows1[i]`` with ``rows2[i]``.

    Returns
    -------
    numpy.ndarray
        float64 array of similarities; a pair involving a zero vector gets 0.
    """
    units = {row: _unit(vectors[row]) for row in set(rows1) | set(rows2)}
    return np.array([float(np.dot(units[i], units[j])) for i, j in zip(rows1, rows2)],
                    dtype=np.float64)


def _correlation(func, x, y):
    if len(x) < 2:
        return None, None
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')  # constant input: the correlation is undefined
        res = func(x, y)
    return _clean(res.statistic), _clean(res.pvalue)


def evaluate_similarity(kv, pairs_or_path_or_name, case_insensitive=True, restrict_vocab=None, name=None):
    """Correlate model cosine similarities with human similarity judgements.

    Pairs with a word outside the (restricted) vocabulary are skipped and
    counted in ``n_oov``.  With the same `restrict_vocab` and
    `case_insensitive`, the Spearman and Pearson coefficients equal those of
    gensim's ``KeyedVectors.evaluate_word_pairs`` (whose default
    `restrict_vocab` is 300000).

    Parameters
    ----------
    kv : gensim.models.KeyedVectors
        The vectors to evaluate.
    pairs_or_path_or_name : str, os.PathLike, SimilarityDataset or iterable
        A bundled set name (``'ws353'``, ``'simlex999'``, ... see
        ``embkit.data.SIMILARITY_SETS``), a path to a ``word1 word2 score``
        file, a :class:`~embkit.evaluation.readers.SimilarityDataset`, or an
        iterable of ``(word1, word2, score)`` triples.
    case_insensitive : bool, optional
        Match words case-insensitively (by upper-casing both the data and the
        vocabulary; when several case variants exist, the first one in
        ``kv.index_to_key`` is used).
    restrict_vocab : int, optional
        Only the first `restrict_vocab` words of ``kv.index_to_key`` count as
        in-vocabulary; None uses the whole vocabulary.
    name : str, optional
        Name in the result; defaults to the set name or file name.

    Returns
    -------
    SimilarityResult
        ``spearman``/``pearson`` are None when fewer than two pairs are in the
        vocabulary (printed as "no pairs in vocabulary" when none is).
    """
    dataset = load_similarity(pairs_or_path_or_name, name=name)
    lookup, _ = build_lookup(kv, restrict_vocab, case_insensitive)
    rows1, rows2, gold = [], [], []
    for (w1, w2), score in zip(dataset.pairs, dataset.scores):
        i = lookup.get(fold_word(w1, case_insensitive))
        j = lookup.get(fold_word(w2, case_insensitive))
        if i is None or j is None:
            continue
        rows1.append(i)
        rows2.append(j)
        gold.append(score)
    n_found = len(gold)
    result = SimilarityResult(name or dataset.name, n_pairs=len(dataset), n_found=n_found,
                              n_oov=len(dataset) - n_found)
    if n_found:
        model = cosine_similarities(kv.vectors, rows1, rows2)
        gold = np.asarray(gold, dtype=np.float64)
        result.spearman, result.spearman_pvalue = _correlation(stats.spearmanr, gold, model)
        result.pearson, result.pearson_pvalue = _correlation(stats.pearsonr, gold, model)
    return result
