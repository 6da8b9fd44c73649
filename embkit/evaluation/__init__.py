"""Evaluation of embeddings: word similarity, word analogies, next-item ranking, XC metrics.

The similarity and analogy functions take a gensim 4
:class:`~gensim.models.KeyedVectors`; :func:`evaluate_ranking` takes the
context (input) and target (output) tables of a model and held-out pairs;
:func:`evaluate_next_items` ranks one held-out item per user against every
unseen item (leave-one-out Hit@k, NDCG@k, MPR);
:func:`xc_metrics` takes sparse label matrices and scores or top-k predictions.

Examples
--------
>>> from embkit.evaluation import evaluate_similarity, evaluate_analogies
>>> evaluate_similarity(kv, 'simlex999')             # doctest: +SKIP
>>> print(evaluate_analogies(kv, restrict_vocab=30000))  # doctest: +SKIP
>>> print(evaluate_ranking(model.wv.vectors, model.syn1neg, test_pairs))  # doctest: +SKIP
>>> print(xc_metrics(Y_test, scores, propensity=Y_train))  # doctest: +SKIP
"""

from .analogy import METHODS, evaluate_analogies
from .datasets import bundled_data, load_analogies, load_similarity, resolve_path
from .pairs import PairDataset, evaluate_ranking_pairs, read_pairs
from .next_item import evaluate_next_items
from .ranking import draw_negatives, evaluate_ranking
from .ranking_results import NextItemResult, RankingResult, XCResult
from .readers import (
    AnalogyDataset, AnalogyQuestion, SimilarityDataset, read_analogies, read_msr_analogies,
    read_similarity,
)
from .word_results import AnalogyResult, EvaluationReport, SectionResult, SimilarityResult
from .similarity import evaluate_similarity
from .xc import PROPENSITY_PARAMETERS, inverse_propensities, propensity_scores, xc_metrics

__all__ = [
    'evaluate_similarity', 'evaluate_analogies', 'evaluate_all', 'METHODS',
    'SimilarityResult', 'SectionResult', 'AnalogyResult', 'EvaluationReport',
    'SimilarityDataset', 'AnalogyQuestion', 'AnalogyDataset',
    'read_similarity', 'read_analogies', 'read_msr_analogies',
    'load_similarity', 'load_analogies', 'resolve_path', 'bundled_data',
    'DEFAULT_SIMILARITY_SETS', 'DEFAULT_ANALOGY_SET',
    'evaluate_ranking', 'draw_negatives', 'RankingResult', 'PairDataset', 'read_pairs',
    'evaluate_ranking_pairs', 'evaluate_next_items', 'NextItemResult',
    'xc_metrics', 'propensity_scores', 'inverse_propensities', 'PROPENSITY_PARAMETERS', 'XCResult',
]

#: Similarity sets run by :func:`evaluate_all` (bundled short names).
DEFAULT_SIMILARITY_SETS = ('ws353', 'simlex999')
#: Analogy set run by :func:`evaluate_all`.
DEFAULT_ANALOGY_SET = 'questions-words'


def evaluate_all(kv, similarity=DEFAULT_SIMILARITY_SETS, analogy=DEFAULT_ANALOGY_SET,
                 restrict_vocab=30000, case_insensitive=True, method='3cosadd'):
    """Run the standard bundled benchmarks: WS-353, SimLex-999 and the Google analogies.

    Parameters
    ----------
    kv : gensim.models.KeyedVectors
        The vectors to evaluate.
    similarity : sequence of str, optional
        Similarity sets (bundled names or paths).
    analogy : str or None, optional
        Analogy set (bundled name or path); None skips the analogy test.
    restrict_vocab : int or None, optional
        Analogy candidates are the first `restrict_vocab` words.  Similarity
        uses the whole vocabulary.
    case_insensitive : bool, optional
        Match words case-insensitively.
    method : {'3cosadd', '3cosmul'}, optional
        Analogy method.

    Returns
    -------
    EvaluationReport
        ``str(report)`` is a text table; ``report.to_dict()`` is JSON-ready.
    """
    report = EvaluationReport()
    for source in similarity:
        report.similarity.append(evaluate_similarity(kv, source, case_insensitive=case_insensitive))
    if analogy is not None:
        report.analogy = evaluate_analogies(kv, analogy, restrict_vocab=restrict_vocab,
                                            case_insensitive=case_insensitive, method=method)
    return report
