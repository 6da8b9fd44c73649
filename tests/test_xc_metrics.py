"""Tests of the extreme-classification metrics (P@k, nDCG@k, PSP@k, PSnDCG@k) and propensities.

Hand-computed small examples, a per-row brute force on random problems (scores with ties, top-k ids,
sparse scores), the empty-row convention, bad input, and a run on the real Delicious labels.
"""
import gzip
import json
import math
import os

import numpy as np
import pytest
import scipy.sparse as sp

from embkit.evaluation import (
    PROPENSITY_PARAMETERS, XCResult, inverse_propensities, propensity_scores, xc_metrics,
)

LOG2 = math.log2


def labels(rows, n_labels):
    """CSR matrix from a list of label lists."""
    data = sp.lil_matrix((len(rows), n_labels))
    for r, row in enumerate(rows):
        for label in row:
            data[r, label] = 1
    return data.tocsr()


# ----------------------------------------------------------------------------- by hand

Y_HAND = labels([[0, 2], [4], []], 5)
SCORES_HAND = np.array([[0.9, 0.8, 0.1, 0.3, 0.0],     # ranking 0 1 3 2 4
                        [0.5, 0.4, 0.3, 0.2, 0.1],     # ranking 0 1 2 3 4
                        [0.1, 0.2, 0.3, 0.4, 0.5]])
P_HAND = np.array([0.5, 1.0, 0.25, 1.0, 0.1])          # inverse propensities 2 1 4 1 10


def test_hand_example_precision_and_ndcg():
    result = xc_metrics(Y_HAND, SCORES_HAND, ks=(1, 3, 5))
    assert result.n_rows == 2 and result.n_empty == 1 and result.n_labels == 5
    assert result.precision[1] == pytest.approx((1 + 0) / 2)
    assert result.precision[3] == pytest.approx((1 / 3 + 0) / 2)
    assert result.precision[5] == pytest.approx((2 / 5 + 1 / 5) / 2)
    assert result.ndcg[1] == pytest.approx(0.5)
    ideal2 = 1 + 1 / LOG2(3)
    assert result.ndcg[3] == pytest.approx((1 / ideal2 + 0) / 2)
    row0 = (1 + 1 / LOG2(5)) / ideal2          # hits at ranks 1 and 4
    row1 = (1 / LOG2(6)) / 1                   # hit at rank 5, one true label
    assert result.ndcg[5] == pytest.approx((row0 + row1) / 2)
    assert result.psp == {} and result.psndcg == {}


def test_hand_example_propensity_scored():
    result = xc_metrics(Y_HAND, SCORES_HAND, ks=(1, 3), propensity=P_HAND)
    # predicted gains: row 0 hits label 0 (1/p = 2); best: row 0 labels 2, 0 (4, 2); row 1 label 4 (10)
    assert result.psp[1] == pytest.approx(2 / (4 + 10))
    assert result.psp[3] == pytest.approx(2 / (4 + 2 + 10))
    assert result.psp_unnormalised[1] == pytest.approx((2 + 0) / 2)
    assert result.psp_unnormalised[3] == pytest.approx((2 / 3 + 0) / 2)
    z0 = 1 + 1 / LOG2(3)  # nDCG normaliser of row 0 (two true labels); row 1's is 1
    assert result.psndcg[3] == pytest.approx((2 / z0) / ((4 + 2 / LOG2(3)) / z0 + 10 / 1))
    assert result.A is None  # propensities were given, not computed


def test_propensities_by_hand():
    train = labels([[0], [0, 1], [0], []], 3)  # N = 4 rows, N_l = 3, 1, 0
    for A, B in [(0.55, 1.5), PROPENSITY_PARAMETERS['amazon'], PROPENSITY_PARAMETERS['wikipedia']]:
        C = (math.log(4) - 1) * (B + 1) ** A
        expected = [1 / (1 + C * math.exp(-A * math.log(n + B))) for n in (3, 1, 0)]
        assert propensity_scores(train, A, B) == pytest.approx(expected, rel=1e-12)
        assert inverse_propensities(train, A, B) == pytest.approx([1 / p for p in expected], rel=1e-12)
    assert PROPENSITY_PARAMETERS == {'amazon': (0.6, 2.6), 'wikipedia': (0.5, 0.4), 'default': (0.55, 1.5)}
    p = propensity_scores(train)
    assert p[0] > p[1] > p[2] and 0 < p.min() and p.max() <= 1  # rare labels: small propensity


def test_propensities_from_training_labels_in_xc_metrics():
    train = labels([[0, 2], [0], [0, 4], [1], [0]], 5)
    direct = xc_metrics(Y_HAND, SCORES_HAND, propensity=propensity_scores(train, 0.6, 2.6))
    computed = xc_metrics(Y_HAND, SCORES_HAND, propensity=train, A=0.6, B=2.6)
    assert computed.psp == pytest.approx(direct.psp) and computed.psndcg == pytest.approx(direct.psndcg)
    assert (computed.A, computed.B) == (0.6, 2.6)
    assert 'A=0.6, B=2.6' in str(computed)


def test_perfect_predictions_score_one():
    rng = np.random.default_rng(3)
    Y = sp.random(50, 30, density=0.2, random_state=4, format='csr')
    p = rng.uniform(0.1, 1.0, 30)
    # best possible ranking for PSP: true labels by decreasing 1/p, then the others
    scores = Y.toarray() != 0
    scores = scores * (1 + 1 / p)
    result = xc_metrics(Y, scores, ks=(1, 3, 5), propensity=p)
    for k in (1, 3, 5):
        assert result.ndcg[k] == pytest.approx(1.0)
        assert result.psp[k] == pytest.approx(1.0) and result.psndcg[k] == pytest.approx(1.0)


# ----------------------------------------------------------------------------- brute force

def brute_force(Y, ranking, inv, ks):
    """Per-row definitions; `ranking[r]` lists row r's predicted labels, best first."""
    Yd = Y.toarray() != 0
    out = {name: {k: 0.0 for k in ks} for name in ('P', 'N', 'psp_num', 'psp_den', 'psn_num', 'psn_den')}
    rows = [r for r in range(Y.shape[0]) if Yd[r].any()]
    for r in rows:
        true = np.flatnonzero(Yd[r])
        best = sorted(inv[true], reverse=True)
        for k in ks:
            top = [label for label in ranking[r][:k] if label >= 0]
            z = sum(1 / LOG2(c + 2) for c in range(min(k, len(true))))
            out['P'][k] += sum(Yd[r, label] for label in top) / k
            out['N'][k] += sum(Yd[r, label] / LOG2(c + 2) for c, label in enumerate(top)) / z
            out['psp_num'][k] += sum(Yd[r, label] * inv[label] for label in top)
            out['psp_den'][k] += sum(best[:k])
            out['psn_num'][k] += sum(Yd[r, label] * inv[label] / LOG2(c + 2) for c, label in enumerate(top)) / z
            out['psn_den'][k] += sum(w / LOG2(c + 2) for c, w in enumerate(best[:k])) / z
    return {'P': {k: out['P'][k] / len(rows) for k in ks}, 'N': {k: out['N'][k] / len(rows) for k in ks},
            'PSP': {k: out['psp_num'][k] / out['psp_den'][k] for k in ks},
            'PSN': {k: out['psn_num'][k] / out['psn_den'][k] for k in ks}, 'rows': len(rows)}


def check(result, expected, ks):
    assert result.n_rows == expected['rows']
    for k in ks:
        assert result.precision[k] == pytest.approx(expected['P'][k], abs=1e-12)
        assert result.ndcg[k] == pytest.approx(expected['N'][k], abs=1e-12)
        assert result.psp[k] == pytest.approx(expected['PSP'][k], abs=1e-12)
        assert result.psndcg[k] == pytest.approx(expected['PSN'][k], abs=1e-12)


@pytest.fixture
def random_problem():
    rng = np.random.default_rng(11)
    n, L = 120, 25
    Y = sp.random(n, L, density=0.12, random_state=5, format='csr')
    train = sp.random(300, L, density=0.1, random_state=6, format='csr')
    scores = np.round(rng.normal(size=(n, L)), 1).astype(np.float32)  # many exact ties
    scores[:4] = 0.0  # whole rows of ties
    return Y, train, scores


def test_dense_scores_match_brute_force(random_problem):
    Y, train, scores = random_problem
    ks = (1, 3, 5, 10)
    ranking = [sorted(range(Y.shape[1]), key=lambda l: (-scores[r, l], l)) for r in range(Y.shape[0])]
    result = xc_metrics(Y, scores, ks=ks, propensity=train)
    check(result, brute_force(Y, ranking, inverse_propensities(train), ks), ks)
    assert result.n_empty == Y.shape[0] - result.n_rows > 0


def test_topk_ids_and_sparse_scores_agree_with_dense(random_problem):
    Y, train, scores = random_problem
    dense = xc_metrics(Y, scores, propensity=train)
    ranking = np.array([sorted(range(Y.shape[1]), key=lambda l: (-scores[r, l], l))[:7]
                        for r in range(Y.shape[0])])
    from_ids = xc_metrics(Y, ranking, propensity=train)
    from_sparse = xc_metrics(Y, sp.csr_matrix(scores + 10.0), propensity=train)  # all entries stored
    for other in (from_ids, from_sparse):
        for metric in ('precision', 'ndcg', 'psp', 'psndcg', 'psp_unnormalised'):
            assert getattr(other, metric) == pytest.approx(getattr(dense, metric), abs=1e-12)


def test_short_predictions_are_padded(random_problem):
    Y, train, _ = random_problem
    rng = np.random.default_rng(0)
    ids = np.full((Y.shape[0], 5), -1)
    values = np.zeros((Y.shape[0], Y.shape[1]))
    for r in range(Y.shape[0]):
        chosen = rng.permutation(Y.shape[1])[:rng.integers(0, 6)]
        ids[r, :len(chosen)] = chosen
        values[r, chosen] = np.arange(len(chosen), 0, -1)  # best first
    from_ids = xc_metrics(Y, ids, propensity=train)
    from_sparse = xc_metrics(Y, sp.csr_matrix(values), propensity=train)
    check(from_ids, brute_force(Y, ids.tolist(), inverse_propensities(train), (1, 3, 5)), (1, 3, 5))
    assert from_sparse.precision == pytest.approx(from_ids.precision)
    assert from_sparse.psndcg == pytest.approx(from_ids.psndcg)


def test_large_k_and_blocks(monkeypatch):
    from embkit.evaluation import _topk
    monkeypatch.setattr(_topk, '_BLOCK_CELLS', 64)  # several row blocks
    Y = labels([[0], [1, 2], [2]] * 10, 4)
    scores = np.tile(np.array([[4.0, 3.0, 2.0, 1.0]]), (30, 1))
    result = xc_metrics(Y, scores, ks=(1, 5))  # k larger than the number of labels
    assert result.precision[1] == pytest.approx((1 + 0 + 0) / 3)
    assert result.precision[5] == pytest.approx((1 + 2 + 1) / 5 / 3)


# ----------------------------------------------------------------------------- conventions and bad input

def test_rows_without_labels_are_skipped_and_counted():
    Y = labels([[], [1], []], 3)
    result = xc_metrics(Y, np.array([[0, 1], [1, 0], [2, 1]]), ks=(1, 2))
    assert result.n_rows == 1 and result.n_empty == 2 and result.precision == {1: 1.0, 2: 0.5}
    assert 'rows without true labels skipped' in str(result)
    nobody = xc_metrics(labels([[], []], 3), np.zeros((2, 3)), ks=(1,), propensity=np.ones(3))
    assert nobody.n_rows == 0 and nobody.precision == {} and 'no row has a true label' in str(nobody)
    assert 'NaN' not in json.dumps(nobody.to_dict())


def test_result_table_and_json():
    result = xc_metrics(Y_HAND, SCORES_HAND, propensity=P_HAND, name='hand')
    assert isinstance(result, XCResult)
    text = str(result)
    assert text.startswith('hand: 2 rows, 5 labels') and 'PSP@k' in text and 'PSnDCG@k' in text
    data = json.loads(json.dumps(result.to_dict()))
    assert set(data['precision_at']) == {'1', '3', '5'} and data['n_empty'] == 1
    assert 'PSP@k' not in str(xc_metrics(Y_HAND, SCORES_HAND))


@pytest.mark.parametrize('predictions, kwargs, message', [
    (np.zeros((2, 5)), {}, r'one row per row of true_labels \(3\)'),
    (np.zeros((3, 4)), {}, r'one column per label \(5\)'),
    (np.array([[0, 1, 2], [0, 1, 7], [0, 1, 2]]), {'ks': (1, 3)}, r'label id 7 \(row 1, position 2\)'),
    (np.array([[0, 1, 0], [0, 1, 2], [0, 1, 2]]), {'ks': (1, 3)}, 'row 0 predicts label 0 twice'),
    (np.array([[0, 1], [0, 1], [0, 1]]), {'ks': (1, 3)}, 'fewer than k=3'),
    (np.where(np.eye(3, 5) > 0, np.nan, 0.0), {}, 'row 0 contain NaN'),
    (SCORES_HAND, {'ks': (0,)}, 'positive'),
    (SCORES_HAND, {'propensity': np.ones(4)}, r'one value per label \(5\)'),
    (SCORES_HAND, {'propensity': np.array([0.5, 0, 1, 1, 1])}, r'\(0, 1\]; label 1'),
    (SCORES_HAND, {'propensity': labels([[0], [1]], 5)}, 'at least 3 rows'),
    (SCORES_HAND, {'propensity': labels([[0], [1], [2]], 4)}, 'has 4 labels'),
    (SCORES_HAND, {'propensity': labels([[0], [1], [2]], 5), 'A': -1}, 'positive'),
    (sp.csr_matrix((3, 4)), {}, 'shape of true_labels'),
    (np.array([['a'] * 5] * 3), {}, 'dtype'),
])
def test_bad_input_is_reported(predictions, kwargs, message):
    with pytest.raises(ValueError, match=message):
        xc_metrics(Y_HAND, predictions, **kwargs)


def test_true_labels_must_be_sparse():
    with pytest.raises(TypeError, match='scipy.sparse'):
        xc_metrics(np.eye(3), np.eye(3))


# ----------------------------------------------------------------------------- real data

def read_xc_labels(path):
    """Label matrix of an Extreme Classification Repository sparse file (header ``N F L``)."""
    with gzip.open(path, 'rt', encoding='utf-8') as fin:
        n, _, n_labels = map(int, fin.readline().split())
        rows, cols = [], []
        for r, line in enumerate(fin):
            field = line.split(' ', 1)[0]
            for label in filter(None, field.split(',')):
                rows.append(r)
                cols.append(int(label))
    assert r + 1 == n
    return sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n_labels))


def test_delicious_popularity_baseline(shared_data):
    folder = os.path.join(shared_data, 'extreme-classification', 'delicious')
    train = read_xc_labels(os.path.join(folder, 'delicious_train.xc.txt.gz'))
    test = read_xc_labels(os.path.join(folder, 'delicious_test.xc.txt.gz'))
    popular = np.argsort(-np.asarray(train.sum(axis=0)).ravel(), kind='stable')[:5]
    result = xc_metrics(test, np.tile(popular, (test.shape[0], 1)), propensity=train)
    assert result.n_rows + result.n_empty == 3185 and result.n_empty == 2  # as the provenance notes say
    # the most frequent tags are relevant to many bookmarks, but rare tags are what PSP rewards
    assert result.precision[1] > 0.3
    for k in (1, 3, 5):
        assert 0 < result.psp[k] < result.precision[k]
