"""Tests of the ranking evaluation (likelihood, exact/approximate MPR, Prec@k), pair files and the
``embkit eval`` suite options (ranking, MSR, suite names and bad input).

Rank metrics are compared with a brute-force numpy recomputation on small problems whose vectors
hold small integers, so every score is exact in float32 and ties are frequent and exact.
"""
import io
import json
import math

import numpy as np
import pytest
import scipy.sparse as sp

from embkit import cli
from embkit.evaluation import (
    PairDataset, RankingResult, bundled_data, draw_negatives, evaluate_ranking, evaluate_ranking_pairs,
    read_pairs,
)
from embkit.evaluation import ranking_scan
from embkit.evaluation.ranking import exclusion_matrix

KS = (1, 3, 5, 15)


# ----------------------------------------------------------------------------- brute force

def integer_problem(n_contexts=12, n_targets=40, dim=3, n_pairs=300, seed=0, counts=None):
    """Small-integer tables (exact float32 scores, many ties) and random pairs.

    ``counts`` gives the number of pairs of each context instead of uniform draws.
    """
    rng = np.random.default_rng(seed)
    W = rng.integers(-2, 3, (n_contexts, dim)).astype(np.float32)
    O = rng.integers(-2, 3, (n_targets, dim)).astype(np.float32)
    if counts is not None:
        contexts = np.repeat(np.arange(len(counts)), counts)
        contexts = contexts[rng.permutation(len(contexts))]
    else:
        contexts = rng.integers(0, n_contexts, n_pairs)
    pairs = np.stack([contexts, rng.integers(0, n_targets, len(contexts))], axis=1)
    return W, O, pairs


def brute_force(W, O, pairs, ks=KS, exclude=None, negatives=None):
    """Every metric, pair by pair, from float64 scores, following the documented definitions."""
    S = W.astype(np.float64) @ O.astype(np.float64).T
    E = exclusion_matrix(exclude, len(W), len(O))
    mpr, approx, ll, prec = [], [], [], {k: [] for k in ks}
    for p, (i, j) in enumerate(pairs):
        s = S[i]
        cand = np.ones(len(O), dtype=bool)
        if E is not None:
            cand[E[i].indices] = False
        cand[j] = False
        others = s[cand]
        g, t = int((others > s[j]).sum()), int((others == s[j]).sum())
        if cand.any():
            mpr.append(((others < s[j]).sum() + 0.5 * t) / cand.sum())
        for k in ks:
            # expected hit under uniformly random tie-breaking: j takes one of the t+1 tied places
            places = np.arange(g + 1, g + t + 2)
            prec[k].append(np.mean(places <= k))
        top = s.max()
        ll.append(s[j] - (top + math.log(np.exp(s - top).sum())))
        if negatives is not None and cand.any():
            vals = s[negatives[p]]
            approx.append(((vals < s[j]).sum() + 0.5 * (vals == s[j]).sum()) / len(vals))
    return {'mpr': np.mean(mpr) if mpr else None, 'approx': np.mean(approx) if approx else None,
            'll': np.mean(ll), 'prec': {k: np.mean(v) for k, v in prec.items()}}


def check_against_brute_force(result, expected, n_negatives):
    assert result.mpr == pytest.approx(expected['mpr'], abs=1e-12)
    for k in KS:
        assert result.precision[k] == pytest.approx(expected['prec'][k], abs=1e-12), k
    assert result.log_likelihood == pytest.approx(expected['ll'], rel=1e-6)
    if n_negatives:
        assert result.mpr_approx == pytest.approx(expected['approx'], abs=1e-12)


# ----------------------------------------------------------------------------- metrics

@pytest.mark.parametrize('layout', ['uniform', 'one_per_context', 'heavy', 'mixed'])
@pytest.mark.parametrize('small_blocks', [False, True])
def test_metrics_match_brute_force(layout, small_blocks, monkeypatch):
    counts = {'uniform': None, 'one_per_context': [1] * 12, 'heavy': [40] * 6,
              'mixed': [1, 2, 3, 0, 7, 1, 2, 25, 1, 2, 1, 4]}[layout]
    W, O, pairs = integer_problem(counts=counts, seed=len(layout))
    if small_blocks:  # several blocks of contexts, scanned by two threads
        monkeypatch.setattr(ranking_scan, 'SCORE_BUDGET', 3 * O.shape[0])
    result = evaluate_ranking(W, O, pairs, ks=KS, n_negatives=9, seed=4, workers=2)
    negatives = draw_negatives(pairs[:, 0], pairs[:, 1], len(O), 9, seed=4)
    check_against_brute_force(result, brute_force(W, O, pairs, negatives=negatives), 9)
    assert result.n_pairs == len(pairs) and result.n_targets == len(O)


@pytest.mark.parametrize('as_pairs', [False, True])
def test_excluded_items_match_brute_force(as_pairs, monkeypatch):
    W, O, pairs = integer_problem(n_pairs=400, seed=7)
    exclude = sp.random(len(W), len(O), density=0.3, random_state=3, format='lil')
    exclude[pairs[0, 0], pairs[0, 1]] = 1.0  # a target marked as seen is still ranked
    exclude = exclude.tocsr()
    if as_pairs:
        exclude = np.argwhere(exclude.toarray())
    monkeypatch.setattr(ranking_scan, 'SCORE_BUDGET', 5 * O.shape[0])
    result = evaluate_ranking(W, O, pairs, ks=KS, n_negatives=6, seed=1, exclude=exclude)
    E = exclusion_matrix(exclude, len(W), len(O))
    negatives = draw_negatives(pairs[:, 0], pairs[:, 1], len(O), 6, seed=1, exclude=E)
    check_against_brute_force(result, brute_force(W, O, pairs, exclude=exclude, negatives=negatives), 6)
    assert result.n_excluded == sum(len(set(E[i].indices) - {j}) for i, j in pairs)
    # the likelihood ignores exclusions
    assert result.log_likelihood == pytest.approx(evaluate_ranking(W, O, pairs).log_likelihood, rel=1e-9)


def test_negatives_are_uniform_over_the_allowed_items():
    n_targets = 20
    contexts = np.zeros(2000, dtype=np.int64)
    targets = np.full(2000, 7)
    exclude = exclusion_matrix(np.array([[0, 3], [0, 4], [0, 7], [0, 19]]), 1, n_targets)
    for excl, banned in ((None, {7}), (exclude, {3, 4, 7, 19})):
        neg = draw_negatives(contexts, targets, n_targets, 50, seed=0, exclude=excl)
        counts = np.bincount(neg.ravel(), minlength=n_targets)
        assert all(counts[b] == 0 for b in banned)
        allowed = counts[[i for i in range(n_targets) if i not in banned]]
        expected = neg.size / len(allowed)
        chi2 = ((allowed - expected) ** 2 / expected).sum()
        assert chi2 < 3 * len(allowed)  # a loose goodness-of-fit bound
    raw = sp.coo_matrix(([1, 1, 1, 1, 0], ([0, 0, 0, 0, 0], [3, 4, 19, 4, 5])), shape=(1, n_targets))
    assert np.array_equal(draw_negatives(contexts, targets, n_targets, 50, seed=0, exclude=raw),
                          draw_negatives(contexts, targets, n_targets, 50, seed=0, exclude=exclude))
    again = draw_negatives(contexts, targets, n_targets, 50, seed=0, exclude=exclude)
    assert np.array_equal(again, draw_negatives(contexts, targets, n_targets, 50, seed=0, exclude=exclude))
    assert not np.array_equal(again, draw_negatives(contexts, targets, n_targets, 50, seed=1, exclude=exclude))


def test_approximate_mpr_is_close_to_exact_mpr():
    rng = np.random.default_rng(5)
    W = rng.normal(size=(50, 16)).astype(np.float32)
    O = np.repeat(W, 6, axis=0) + 2 * rng.normal(size=(300, 16)).astype(np.float32)
    contexts = rng.integers(0, 50, 2000)
    pairs = np.stack([contexts, 6 * contexts + rng.integers(0, 6, 2000)], axis=1)  # targets near W[i]
    results = [evaluate_ranking(W, O, pairs, n_negatives=50, seed=s) for s in range(5)]
    exact = results[0].mpr
    assert exact > 0.6
    approx = np.mean([r.mpr_approx for r in results])
    # standard error of the mean of 5 x 2000 x 50 Bernoulli-like draws is ~0.001
    assert abs(approx - exact) < 0.005
    assert len({r.mpr_approx for r in results}) > 1 and len({r.mpr for r in results}) == 1


def test_tie_rule_by_hand():
    W = np.array([[1.0]], dtype=np.float32)
    O = np.array([[3.0], [1.0], [1.0], [0.0]], dtype=np.float32)
    result = evaluate_ranking(W, O, [[0, 1]], ks=(1, 2, 3), n_negatives=0)
    # one target above, one tie, one below: percentile (1 + 1/2) / 3; the tie shares ranks 2-3
    assert result.mpr == pytest.approx(0.5)
    assert result.precision == {1: 0.0, 2: 0.5, 3: 1.0}
    assert result.n_ties == 1 and result.mpr_approx is None


def test_all_tied_scores_give_chance_values():
    W = np.ones((3, 4), dtype=np.float32)
    O = np.zeros((10, 4), dtype=np.float32)  # e.g. an untrained output table
    result = evaluate_ranking(W, O, [[0, 1], [1, 9], [2, 0]], ks=(1, 5, 10), n_negatives=20)
    assert result.mpr == 0.5 and result.mpr_approx == 0.5
    assert result.precision == pytest.approx({1: 0.1, 5: 0.5, 10: 1.0})
    assert result.log_likelihood == pytest.approx(-math.log(10))
    assert result.perplexity == pytest.approx(10.0)
    assert result.likelihood == pytest.approx(0.1)


def test_likelihood_of_large_scores_is_finite():
    rng = np.random.default_rng(0)
    W = rng.normal(size=(5, 4)).astype(np.float32) * 30
    O = rng.normal(size=(30, 4)).astype(np.float32) * 30
    pairs = np.stack([np.arange(5), np.arange(5)], axis=1)
    result = evaluate_ranking(W, O, pairs)
    S = W.astype(np.float64) @ O.T.astype(np.float64)
    top = S.max(axis=1)
    lse = top + np.log(np.exp(S - top[:, None]).sum(axis=1))
    assert result.log_likelihood == pytest.approx(np.mean(S[np.arange(5), np.arange(5)] - lse), rel=1e-5)
    assert result.log_likelihood < -1000  # perplexity overflows float64: inf, None in JSON
    assert result.perplexity == math.inf and result.to_dict()['perplexity'] is None
    assert 'inf' in str(result) and 'nan' not in str(result).lower()


def test_every_other_target_excluded():
    W = np.ones((2, 2), dtype=np.float32)
    O = np.eye(3, 2, dtype=np.float32)
    exclude = sp.csr_matrix(np.array([[1, 1, 1], [0, 0, 0]]))
    result = evaluate_ranking(W, O, [[0, 0], [1, 0]], ks=(1,), n_negatives=5, exclude=exclude)
    assert result.n_without_negatives == 1
    assert result.precision[1] == pytest.approx((1.0 + 0.5) / 2)  # pair 2: ties with target 1
    assert result.mpr == pytest.approx(0.75)  # pair 2 only: one tie and one below, of 2 others
    assert result.n_excluded == 2


def test_result_table_and_json():
    W, O, pairs = integer_problem()
    result = evaluate_ranking(W, O, pairs, name='held-out')
    text = str(result)
    for label in ('held-out', 'mean log-likelihood', 'perplexity', 'MPR (all targets)',
                  'MPR (100 uniform negatives, seed 0)', 'Prec@5', 'Prec@15', 'Prec@50'):
        assert label in text
    data = json.loads(json.dumps(result.to_dict()))
    assert set(data['precision_at']) == {'5', '15', '50'} and data['n_negatives'] == 100
    assert result.precision_at(50) == data['precision_at']['50']
    with pytest.raises(KeyError, match='available'):
        result.precision_at(7)
    assert 'uniform negatives' not in str(evaluate_ranking(W, O, pairs, n_negatives=0))


def test_fast_enough_for_a_mid_size_problem():
    rng = np.random.default_rng(0)
    W = rng.normal(size=(3000, 32)).astype(np.float32)
    O = rng.normal(size=(3000, 32)).astype(np.float32)
    pairs = rng.integers(0, 3000, (20000, 2))
    result = evaluate_ranking(W, O, pairs)
    assert 0.45 < result.mpr < 0.55 and 0.45 < result.mpr_approx < 0.55


# ----------------------------------------------------------------------------- bad input

@pytest.mark.parametrize('W, O, pairs, message', [
    (np.zeros((3, 4)), np.zeros((5, 3)), [[0, 0]], r'differ in dimension.*3 x 4.*5 x 3'),
    (np.zeros((0, 4)), np.zeros((5, 4)), [[0, 0]], 'context_vectors is empty'),
    (np.zeros((3, 4)), np.zeros((0, 4)), [[0, 0]], 'target_vectors is empty'),
    (np.zeros(4), np.zeros((5, 4)), [[0, 0]], '2-D'),
    (np.zeros((3, 4)), np.full((5, 4), np.nan), [[0, 0]], 'target_vectors row 0'),
    (np.zeros((3, 4)), np.zeros((5, 4)), np.zeros((0, 2), dtype=int), 'no pairs'),
    (np.zeros((3, 4)), np.zeros((5, 4)), [[0, 0], [1, 5]], r'pair #1: target id 5 is out of range \[0, 5\)'),
    (np.zeros((3, 4)), np.zeros((5, 4)), [[0, 0], [-1, 2]], r'pair #1: context id -1'),
    (np.zeros((3, 4)), np.zeros((5, 4)), [[0, 1, 2]], r'shape \(n, 2\)'),
    (np.zeros((3, 4)), np.zeros((5, 4)), [[0.5, 1]], 'integers'),
])
def test_bad_input_is_reported(W, O, pairs, message):
    with pytest.raises(ValueError, match=message):
        evaluate_ranking(W, O, pairs)


def test_bad_parameters_are_reported():
    W, O, pairs = integer_problem()
    with pytest.raises(ValueError, match='n_negatives'):
        evaluate_ranking(W, O, pairs, n_negatives=-1)
    with pytest.raises(ValueError, match='ks'):
        evaluate_ranking(W, O, pairs, ks=(0, 5))
    with pytest.raises(ValueError, match=r'exclude must have shape \(12, 40\)'):
        evaluate_ranking(W, O, pairs, exclude=sp.csr_matrix((3, 3)))
    with pytest.raises(ValueError, match='excluded pair #0: target id 99'):
        evaluate_ranking(W, O, pairs, exclude=[[0, 99]])


# ----------------------------------------------------------------------------- pair files

def test_read_word_pairs(tmp_path):
    path = tmp_path / 'pairs.txt'
    path.write_text('# held-out pairs\ncat dog\n\nDOG cat\nunknown cat\r\ncat\tbird\n', encoding='utf-8')
    vocab = {'cat': 0, 'dog': 1, 'bird': 2}
    data = read_pairs(path, vocab)
    assert data.kind == 'words' and data.name == 'pairs'
    assert data.pairs.tolist() == [[0, 1], [0, 2]] and data.lines.tolist() == [2, 6]
    assert data.n_skipped == 2  # 'DOG' (case-sensitive) and 'unknown'


def test_read_id_pairs_and_kinds(tmp_path):
    path = tmp_path / 'ids.txt'
    path.write_text('0 1\n2 3\n', encoding='utf-8')
    assert read_pairs(path).pairs.tolist() == [[0, 1], [2, 3]]
    as_words = read_pairs(path, {'0': 5, '1': 6, '2': 7}, kind='words')
    assert as_words.pairs.tolist() == [[5, 6]] and as_words.n_skipped == 1
    with pytest.raises(ValueError, match=r'ids.txt, line 2: target id 3 is out of range \[0, 3\)'):
        read_pairs(path, n_contexts=3, n_targets=3)


@pytest.mark.parametrize('text, kind, message', [
    ('a b\nc d e\n', 'auto', r'line 2: expected 2 fields'),
    ('0 1\n1 x\n', 'ids', r'line 2: expected two non-negative integer ids'),
    ('0 1\n-1 2\n', 'ids', r'line 2: expected two non-negative integer ids'),
    ('# nothing\n\n', 'auto', 'no pairs found'),
    ('a b\n', 'auto', 'key_to_index'),
])
def test_malformed_pair_files(tmp_path, text, kind, message):
    path = tmp_path / 'bad.txt'
    path.write_text(text, encoding='utf-8')
    with pytest.raises(ValueError, match=message) as info:
        read_pairs(path, kind=kind)
    assert 'bad.txt' in str(info.value)


def test_missing_pair_file_and_bad_kind(tmp_path):
    with pytest.raises(FileNotFoundError, match='nothing.txt'):
        read_pairs(tmp_path / 'nothing.txt')
    with pytest.raises(ValueError, match='kind'):
        read_pairs(tmp_path / 'nothing.txt', kind='both')


def test_all_oov_pairs_are_reported_not_nan():
    data = PairDataset('oov', np.zeros((0, 2), dtype=np.int64), np.zeros(0, dtype=np.int64), n_skipped=4)
    result = evaluate_ranking_pairs(np.ones((3, 2)), np.ones((3, 2)), data)
    assert isinstance(result, RankingResult) and result.n_pairs == 0 and result.n_skipped == 4
    assert 'no pairs in vocabulary' in str(result)
    values = result.to_dict()
    assert values['mpr'] is None and values['log_likelihood'] is None
    assert 'NaN' not in json.dumps(values)


# ----------------------------------------------------------------------------- command line

WORDS = ['king', 'queen', 'man', 'woman', 'city', 'town', 'music', 'song', 'money', 'bank', 'the', 'a']


def run(argv):
    out = io.StringIO()
    status = cli.main(argv, out=out)
    return status, out.getvalue()


def one_error_line(stderr):
    lines = [line for line in stderr.splitlines() if line.startswith('embkit: error:')]
    assert len(lines) == 1, stderr
    assert 'Traceback' not in stderr
    return lines[0]


@pytest.fixture(scope='module')
def model_files(tmp_path_factory):
    from embkit.text.word2vec import Word2Vec

    folder = tmp_path_factory.mktemp('ranking-cli')
    rng = np.random.default_rng(0)
    sentences = [[WORDS[i] for i in rng.integers(0, len(WORDS), 10)] for _ in range(200)]
    model = Word2Vec(sentences=sentences, vector_size=8, min_count=1, epochs=1, workers=1, seed=1)
    paths = {'model': str(folder / 'm.embkit'), 'vectors': str(folder / 'm.txt'),
             'pairs': str(folder / 'pairs.txt'), 'ids': str(folder / 'ids.txt')}
    model.save(paths['model'])
    model.save_word2vec_format(paths['vectors'])
    with open(paths['pairs'], 'w', encoding='utf-8') as fh:
        fh.write(''.join('%s %s\n' % (s[0], s[1]) for s in sentences[:30]) + 'zebra king\n')
    with open(paths['ids'], 'w', encoding='utf-8') as fh:
        fh.write('0 1\n2 3\n4 5\n')
    hs = Word2Vec(sentences=sentences, vector_size=8, min_count=1, epochs=1, workers=1, hs=1, negative=0)
    paths['hs'] = str(folder / 'hs.embkit')
    hs.save(paths['hs'])
    return paths


def test_cli_ranking_suite_table_and_json(model_files, capsys):
    status, out = run(['eval', model_files['model'], '--suite', 'ranking', '--pairs', model_files['pairs']])
    assert status == 0, capsys.readouterr().err
    assert 'ranking: pairs (30 pairs' in out and 'Prec@50' in out and 'pairs skipped (out of vocabulary): 1' in out
    assert 'word similarity' not in out and 'analogies' not in out
    status, out = run(['eval', model_files['model'], '--suite', 'ranking', '--pairs', model_files['ids'],
                       '--format', 'json', '--negatives', '0'])
    data = json.loads(out)
    assert status == 0 and data['ranking']['n_pairs'] == 3 and data['ranking']['mpr_approx'] is None
    assert data['similarity'] == [] and data['analogy'] is None


def test_cli_pairs_add_ranking_to_the_default_suites(model_files, capsys):
    status, out = run(['eval', model_files['model'], '--pairs', model_files['ids'], '--format', 'json'])
    assert status == 0, capsys.readouterr().err
    data = json.loads(out)
    assert [r['name'] for r in data['similarity']] == ['ws353', 'simlex999']
    assert data['analogy']['name'] == 'questions-words' and data['ranking']['name'] == 'ids'


def test_cli_default_suites_without_pairs(model_files, capsys):
    status, out = run(['eval', model_files['vectors']])
    assert status == 0, capsys.readouterr().err
    assert 'ws353' in out and 'simlex999' in out and 'questions-words analogies' in out
    assert 'pearson' in out and '\nranking:' not in out


@pytest.mark.parametrize('argv, status, fragments', [
    (['--suite', 'ranking'], 2, ['ranking suite needs', '--pairs']),
    (['--suite', 'ws353', 'nonsense'], 2, ["'nonsense'", 'msr', 'ranking', 'simverb3500']),
    (['--suite', 'msr'], 2, ['not bundled', '--msr-file']),
    (['--suite', 'msr', 'questions-words', '--msr-file', 'x.csv'], 2, ['one analogy suite']),
    (['--pairs', 'missing-pairs.txt'], 1, ['missing-pairs.txt']),
    (['--negatives', '-3', '--pairs', 'x'], 2, ['--negatives']),
])
def test_cli_suite_errors(model_files, capsys, argv, status, fragments):
    got, _ = run(['eval', model_files['model']] + argv)
    assert got == status
    line = one_error_line(capsys.readouterr().err)
    for fragment in fragments:
        assert fragment in line


def test_cli_ranking_bad_inputs(model_files, tmp_path, capsys):
    bad = tmp_path / 'bad-ids.txt'
    bad.write_text('0 1\n3 999\n', encoding='utf-8')
    cases = [
        ([model_files['model'], '--pairs', str(bad)], ['bad-ids.txt, line 2', 'target id 999']),
        ([model_files['vectors'], '--pairs', model_files['ids']], ['embkit model file', 'm.txt']),
        ([model_files['hs'], '--pairs', model_files['ids']], ['one output row per word']),
    ]
    empty = tmp_path / 'empty.txt'
    empty.write_text('# no pairs\n', encoding='utf-8')
    cases.append(([model_files['model'], '--pairs', str(empty)], ['empty.txt', 'no pairs found']))
    for argv, fragments in cases:
        status, _ = run(['eval'] + argv + ['--suite', 'ranking'])
        assert status == 1
        line = one_error_line(capsys.readouterr().err)
        for fragment in fragments:
            assert fragment in line


def test_cli_all_oov_pairs_are_reported(model_files, tmp_path, capsys):
    oov = tmp_path / 'oov.txt'
    oov.write_text('zebra yak\nyak zebra\n', encoding='utf-8')
    status, out = run(['eval', model_files['model'], '--suite', 'ranking', '--pairs', str(oov)])
    assert status == 0, capsys.readouterr().err
    assert 'no pairs in vocabulary: 2 skipped' in out and 'nan' not in out.lower()


def test_cli_msr_suite(model_files, tmp_path, capsys, monkeypatch):
    msr = tmp_path / 'msr.csv'
    msr.write_text(',type,word1,word2,word3,target\n0,NN_NNS,king,queen,man,woman\n'
                   '1,NN_NNS,city,town,music,song\n2,JJ_JJR,zebra,yak,king,queen\n', encoding='utf-8')
    status, out = run(['eval', model_files['vectors'], '--suite', 'msr', '--msr-file', str(msr),
                       '--format', 'json'])
    assert status == 0, capsys.readouterr().err
    data = json.loads(out)
    assert data['analogy']['name'] == 'msr'
    assert data['analogy']['total']['attempted'] == 2 and data['analogy']['total']['skipped'] == 1
    monkeypatch.setenv('EMBKIT_MSR_FILE', str(msr))
    status, out = run(['eval', model_files['vectors'], '--suite', 'MSR'])
    assert status == 0 and 'msr analogies' in out
    status, _ = run(['eval', model_files['vectors'], '--suite', 'msr', '--msr-file', str(tmp_path / 'no.csv')])
    assert status == 1 and 'no.csv' in one_error_line(capsys.readouterr().err)


def test_cli_real_msr_file(model_files, shared_data, capsys):
    path = shared_data + '/analogy/msr_vecto.csv'
    status, out = run(['eval', model_files['vectors'], '--suite', 'msr', '--msr-file', path, '--format', 'json'])
    assert status == 0, capsys.readouterr().err
    data = json.loads(out)
    assert data['analogy']['total']['attempted'] + data['analogy']['total']['skipped'] == 8000


@pytest.mark.parametrize('name', bundled_data().names('similarity'))
def test_cli_every_similarity_set_is_a_suite(model_files, name, capsys):
    status, out = run(['eval', model_files['vectors'], '--suite', name, '--format', 'json'])
    assert status == 0, capsys.readouterr().err
    (result,) = json.loads(out)['similarity']
    assert result['name'] == name and 'pearson' in result and 'spearman' in result


def test_cli_empty_vocabulary_and_wrong_dimension(tmp_path, capsys):
    empty = tmp_path / 'empty.txt'
    empty.write_text('0 5\n', encoding='utf-8')
    status, out = run(['eval', str(empty)])
    assert status == 0, capsys.readouterr().err
    assert 'empty vocabulary' in out and 'no pairs in vocabulary' in out and 'no questions in vocabulary' in out
    assert 'nan' not in out.lower()
    wrong = tmp_path / 'wrong.txt'
    wrong.write_text('2 5\nfoo 1 2 3 4 5\nbar 1 2 3\n', encoding='utf-8')
    status, _ = run(['eval', str(wrong)])
    assert status == 1
    assert 'wrong.txt' in one_error_line(capsys.readouterr().err)
