"""Leave-one-out metrics (``evaluate_next_items``) against a plain per-user count, ties included."""
import numpy as np
import pytest
import scipy.sparse as sp

from embkit.evaluation import evaluate_next_items
from embkit.evaluation._ties import dcg_credit, top_k_credit


def _plain(S, targets, seen, k):
    """Hit@k, NDCG@k and MPR by enumerating every tie-break order's position of the target."""
    hits, gains, below = [], [], []
    for u, t in enumerate(targets):
        drop = set(seen[u].indices.tolist()) - {t}
        cand = [j for j in range(S.shape[1]) if j not in drop and j != t]
        g = sum(S[u, j] > S[u, t] for j in cand)
        ties = sum(S[u, j] == S[u, t] for j in cand)
        positions = range(g, g + ties + 1)          # equally likely under random tie-breaking
        hits.append(np.mean([p < k for p in positions]))
        gains.append(np.mean([1 / np.log2(p + 2) if p < k else 0.0 for p in positions]))
        below.append((len(cand) - g - ties / 2) / len(cand))
    return np.mean(hits), np.mean(gains), np.mean(below)


def test_metrics_match_a_plain_count_with_ties():
    rng = np.random.default_rng(3)
    S = rng.integers(0, 4, size=(40, 25)).astype(np.float32)     # many ties
    targets = rng.integers(0, 25, 40)
    seen = sp.random(40, 25, density=0.3, format="csr", random_state=1)
    for k in (1, 5, 10):
        result = evaluate_next_items(S, targets, seen, ks=(k,))
        hit, ndcg, mpr = _plain(S, targets, seen, k)
        assert result.hit[k] == pytest.approx(hit) and result.ndcg[k] == pytest.approx(ndcg)
        assert result.precision[k] == pytest.approx(hit / k) and result.mpr == pytest.approx(mpr)
    assert result.n_users == 40 and result.n_ties > 0


def test_tables_dense_scores_and_score_functions_agree():
    rng = np.random.default_rng(0)
    U, O = rng.standard_normal((30, 6)), rng.standard_normal((50, 6))
    targets = rng.integers(0, 50, 30)
    seen = sp.random(30, 50, density=0.2, format="csr", random_state=2)
    by_tables = evaluate_next_items((U, O), targets, seen, ks=(10,))
    dense = (U @ O.T).astype(np.float32)
    by_matrix = evaluate_next_items(dense, targets, seen, ks=(10,))
    by_function = evaluate_next_items(lambda a, b: dense[a:b], targets, seen, ks=(10,), n_items=50)
    assert by_tables.to_dict() == by_matrix.to_dict() == by_function.to_dict()
    assert by_tables.n_filtered == sum(len(set(seen[u].indices) - {targets[u]}) for u in range(30))


def test_a_seen_target_is_still_ranked_and_a_perfect_model_scores_one():
    S = np.eye(5, dtype=np.float32)
    seen = sp.csr_matrix(np.ones((5, 5)))
    result = evaluate_next_items(S, np.arange(5), seen, ks=(1,))
    assert result.hit[1] == result.ndcg[1] == 1.0 and result.mpr is None      # no other candidate left
    result = evaluate_next_items(S, np.arange(5), None, ks=(1,))
    assert result.hit[1] == result.mpr == 1.0


def test_tie_credits():
    assert top_k_credit([0, 3, 9], [0, 1, 3], 4).tolist() == [1.0, 0.5, 0.0]
    assert dcg_credit([0], [1], 10)[0] == pytest.approx((1 + 1 / np.log2(3)) / 2)


@pytest.mark.parametrize("kwargs, message", [
    (dict(scores=np.zeros((2, 3)), targets=[0, 3]), "columns in"),
    (dict(scores=np.zeros((2, 3)), targets=[]), "non-empty"),
    (dict(scores=np.zeros((3, 3)), targets=[0, 1]), "3 score rows"),
    (dict(scores=np.full((2, 3), np.nan), targets=[0, 1]), "non-finite"),
    (dict(scores=np.zeros((2, 3)), targets=[0, 1], ks=(0,)), "k of ks"),
    (dict(scores=np.zeros((2, 3)), targets=[0, 1], seen=sp.csr_matrix((2, 4))), "seen must have shape"),
    (dict(scores=lambda a, b: None, targets=[0, 1]), "n_items"),
])
def test_bad_input_is_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        evaluate_next_items(**kwargs)
