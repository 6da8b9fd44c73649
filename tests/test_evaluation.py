"""Tests of embkit.evaluation (readers, similarity, analogies) and of the bundled data.

The shared real datasets are found through the environment variable
``EMBKIT_SHARED_DATA`` (default: ``../shared/data`` relative to the repository
root); tests that need them are skipped when the folder is absent.
"""

import gzip
import hashlib
import json
import logging
import os
import re

import numpy as np
import pytest
from gensim.models import KeyedVectors

from embkit.evaluation import (
    AnalogyResult, EvaluationReport, SimilarityResult, bundled_data, evaluate_all,
    evaluate_analogies, evaluate_similarity, load_analogies, read_analogies,
    read_msr_analogies, read_similarity, resolve_path,
)
from embkit.evaluation import analogy as analogy_module

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.normpath(os.path.join(REPO_ROOT, os.environ.get('EMBKIT_SHARED_DATA', '../shared/data')))

data = bundled_data()

EXPECTED_PAIRS = {
    'ws353': 353, 'ws353-rel': 252, 'ws353-sim': 203, 'simlex999': 999, 'men': 3000, 'rw': 2034,
    'mturk287': 287, 'mturk771': 771, 'rg65': 65, 'mc30': 30, 'yp130': 130, 'verb143': 144,
    'simverb3500': 3500,
}


def shared(*parts):
    path = os.path.join(SHARED, *parts)
    if not os.path.exists(path):
        pytest.skip('shared dataset %s not available (set EMBKIT_SHARED_DATA)' % os.path.join(*parts))
    return path


@pytest.fixture(autouse=True)
def _quiet_gensim(caplog):
    caplog.set_level(logging.WARNING, logger='gensim')


# ----------------------------------------------------------------------------- helpers

def make_kv(keys, vectors):
    kv = KeyedVectors(vectors.shape[1])
    kv.add_vectors(list(keys), np.asarray(vectors, dtype=np.float32))
    return kv


def planted_kv(questions, dim=40, noise=2.0, n_filler=300, n_variants=60, seed=0):
    """Vectors where b - a roughly equals a per-section offset, plus fillers and case variants.

    Some case variants sit *before* their lower-case form in the vocabulary (so the
    variant is the one a question word maps to) and all lie close to it, so they often
    show up among the best answers: this exercises the case-variant rules.
    """
    rng = np.random.default_rng(seed)
    offsets, vec = {}, {}
    for q in questions:
        r = offsets.setdefault(q.section, rng.normal(size=dim))
        for x, y in ((q.a.lower(), q.b.lower()), (q.c.lower(), q.d.lower())):
            if x not in vec and y not in vec:
                vec[x] = rng.normal(size=dim) * 1.5
            if y not in vec:
                vec[y] = vec[x] + r + noise * rng.normal(size=dim)
            elif x not in vec:
                vec[x] = vec[y] - r + noise * rng.normal(size=dim)
    words = list(vec)
    for i in range(n_filler):
        words.append('filler%d' % i)
        vec[words[-1]] = rng.normal(size=dim) * 1.5
    order = [words[i] for i in rng.permutation(len(words))]
    for w in rng.choice([w for w in vec if not w.startswith('filler')], n_variants, replace=False):
        variant = w.capitalize() if rng.random() < 0.5 else w.upper()
        vec[variant] = vec[w] + 0.05 * rng.normal(size=dim)
        pos = order.index(w) + int(rng.integers(-5, 30))
        order.insert(min(max(pos, 0), len(order)), variant)
    return make_kv(order, np.array([vec[w] for w in order]))


def gensim_counts(kv, path, **kw):
    """Per-section (name, correct, incorrect) from gensim's evaluate_word_analogies."""
    _, sections = kv.evaluate_word_analogies(path, **kw)
    return [(s['section'], len(s['correct']), len(s['incorrect'])) for s in sections]


def our_counts(result):
    rows = [(s.name, s.correct, s.attempted - s.correct) for s in result.sections]
    return rows + [('Total accuracy', result.total.correct, result.total.attempted - result.total.correct)]


def subset_file(tmp_path, every, name='subset.txt'):
    """questions-words.txt with every `every`-th question of each section."""
    out, count = [], 0
    with open(data.path('questions-words'), encoding='utf-8') as fin:
        for line in fin:
            if line.startswith(':'):
                out.append(line)
                count = 0
            else:
                if count % every == 0:
                    out.append(line)
                count += 1
    path = tmp_path / name
    path.write_text(''.join(out), encoding='utf-8')
    return str(path)


@pytest.fixture(scope='module')
def google():
    return load_analogies('questions-words')


@pytest.fixture(scope='module')
def planted(google):
    return planted_kv(google.questions)


# ----------------------------------------------------------------------------- bundled data

def test_registry_names_and_paths():
    assert set(data.SIMILARITY_SETS) == set(EXPECTED_PAIRS)
    for name in data.names():
        path = data.path(name)
        assert os.path.isabs(path) and os.path.isfile(path)
    assert data.path('WS353') == data.path('ws353')
    assert data.path('questions_words').endswith('questions-words.txt')
    assert data.names('corpus') == ['enwiki-sample']


def test_registry_unknown_name_lists_valid_names():
    with pytest.raises(KeyError) as err:
        data.path('wordsim-9999')
    message = str(err.value)
    assert 'wordsim-9999' in message and 'simlex999' in message and 'questions-words' in message
    with pytest.raises(ValueError):
        data.path('nope')


def test_bundled_checksums_match_provenance():
    with open(os.path.join(data.DATA_DIR, 'PROVENANCE.md'), encoding='utf-8') as fin:
        table = re.findall(r'^\| `([\w-]+)` \| (\S+) \| (\d+) \|.*\| ([0-9a-f]{64}) \|$', fin.read(), re.M)
    assert {name for name, *_ in table} == set(data.FILES)
    for name, filename, size, digest in table:
        path = data.path(name)
        assert os.path.basename(path) == filename
        blob = open(path, 'rb').read()
        assert len(blob) == int(size)
        assert hashlib.sha256(blob).hexdigest() == digest


@pytest.mark.parametrize('name', sorted(EXPECTED_PAIRS))
def test_bundled_similarity_sets_parse(name):
    dataset = read_similarity(data.path(name))
    assert len(dataset) == EXPECTED_PAIRS[name]
    assert np.isfinite(dataset.scores).all()


def test_bundled_corpus_is_gzip_text():
    with gzip.open(data.path('enwiki-sample'), 'rt', encoding='utf-8') as fin:
        first = fin.readline().split()
    assert len(first) >= 20 and all(re.fullmatch('[a-z]+', w) for w in first)


def test_google_analogies_parse(google):
    assert len(google) == 19544
    assert len(google.sections) == 14
    first = google.questions[0]
    assert (first.section, first.a, first.b, first.c, first.d) == (
        'capital-common-countries', 'Athens', 'Greece', 'Baghdad', 'Iraq')
    assert sum(google.kind(q.section) == 'semantic' for q in google.questions) == 8869


def test_shared_copies_are_identical():
    shared_file = shared('analogy', 'questions-words.txt')
    assert open(shared_file, 'rb').read() == open(data.path('questions-words'), 'rb').read()
    for name, filename in data.SIMILARITY_SETS.items():
        original = shared('word-similarity', 'wordvectors_org', filename)
        assert open(original, 'rb').read() == open(data.path(name), 'rb').read(), name


# ----------------------------------------------------------------------------- readers

def test_read_similarity_formats(tmp_path):
    (tmp_path / 'mixed.txt').write_bytes(
        b'# a comment\r\nold\tnew\t1.5\r\n\r\ncat dog  7\nTiger\tcat\t8.25e0')
    dataset = read_similarity(tmp_path / 'mixed.txt')
    assert dataset.pairs == (('old', 'new'), ('cat', 'dog'), ('Tiger', 'cat'))
    assert dataset.scores.tolist() == [1.5, 7.0, 8.25]
    assert dataset.name == 'mixed'
    with gzip.open(tmp_path / 'pairs.txt.gz', 'wt') as fout:
        fout.write('a\tb\t1\nc\td\t2\n')
    assert len(read_similarity(tmp_path / 'pairs.txt.gz')) == 2
    (tmp_path / 'header.csv').write_text('w1,w2,score\nx,y,3\n')
    assert read_similarity(tmp_path / 'header.csv', delimiter=',', header=True).pairs == (('x', 'y'),)


@pytest.mark.parametrize('bad', ['cat dog', 'cat\tdog\t1\t2', 'cat dog high', 'cat\t\t3', 'a b nan'])
def test_read_similarity_malformed(tmp_path, bad):
    path = tmp_path / 'bad_pairs.txt'
    path.write_text('# header comment\nold new 1\n%s\nx y 2\n' % bad)
    with pytest.raises(ValueError, match=r'bad_pairs\.txt, line 3'):
        read_similarity(path)


def test_missing_files_are_named(tmp_path):
    missing = tmp_path / 'nowhere.txt'
    for reader in (read_similarity, read_analogies, read_msr_analogies):
        with pytest.raises(FileNotFoundError, match='nowhere.txt'):
            reader(missing)
    with pytest.raises(FileNotFoundError) as err:
        resolve_path('ws-9999')
    assert 'ws-9999' in str(err.value) and 'simlex999' in str(err.value)
    kv = make_kv(['a', 'b'], np.eye(2))
    with pytest.raises(FileNotFoundError, match='nowhere.txt'):
        evaluate_similarity(kv, str(missing))
    with pytest.raises(FileNotFoundError, match='nowhere.txt'):
        evaluate_analogies(kv, str(missing))


def test_read_analogies(tmp_path):
    path = tmp_path / 'qs.txt'
    path.write_bytes(b': capitals\r\nAthens Greece Oslo Norway\r\n\r\n# skip\r\n: gram-x\r\na b c d')
    dataset = read_analogies(path)
    assert dataset.sections == ['capitals', 'gram-x']
    assert [q.line for q in dataset.questions] == [2, 6]
    assert dataset.kind('capitals') == 'semantic' and dataset.kind('gram-x') == 'syntactic'


@pytest.mark.parametrize('text, line', [
    (': s\na b c d\na b c\n', 3),
    ('a b c d\n: s\n', 1),
    (': s\na b c d e\n', 2),
    (': s\n:\n', 2),
])
def test_read_analogies_malformed(tmp_path, text, line):
    path = tmp_path / 'broken_questions.txt'
    path.write_text(text)
    with pytest.raises(ValueError, match=r'broken_questions\.txt, line %d' % line):
        read_analogies(path)


def test_read_msr_csv(tmp_path):
    path = tmp_path / 'msr.csv'
    path.write_text(',type,word1,word2,word3,target\n0,JJ_JJR,good,better,rough,rougher\n'
                    "1,NN_NNPOS,city,city's,dog,dog's\n")
    dataset = read_msr_analogies(path)
    assert [(q.section, q.a, q.d) for q in dataset.questions] == [
        ('JJ_JJR', 'good', 'rougher'), ('NN_NNPOS', 'city', "dog's")]
    assert dataset.kind('JJ_JJR') == 'syntactic'
    assert load_analogies(str(path)).questions == dataset.questions
    path.write_text(',type,word1,word2,word3,target\n0,JJ_JJR,good,,rough,rougher\n')
    with pytest.raises(ValueError, match=r'msr\.csv, line 2'):
        read_msr_analogies(path)
    path.write_text('type,word1,word2,word3\nx,a,b,c\n')
    with pytest.raises(ValueError, match='target'):
        read_msr_analogies(path)


def test_read_real_msr_csv():
    dataset = read_msr_analogies(shared('analogy', 'msr_vecto.csv'))
    assert len(dataset) == 8000 and len(dataset.sections) == 16


# ----------------------------------------------------------------------------- similarity

@pytest.fixture(scope='module')
def similarity_kv():
    """Random vectors over the words of the bundled similarity sets, with case variants."""
    rng = np.random.default_rng(1)
    words = {}
    for name in data.SIMILARITY_SETS:
        for pair in read_similarity(data.path(name)).pairs:
            words.update(dict.fromkeys(pair))
    words = [w for w in words if rng.random() < 0.8]  # leave some words out of vocabulary
    words = [words[i] for i in rng.permutation(len(words))]
    for w in words[:40]:
        words.insert(int(rng.integers(0, len(words))), w.upper())
    vectors = rng.normal(size=(len(words), 24))
    vectors[:: 7] += vectors[3]  # some correlation structure
    return make_kv(words, vectors)


@pytest.mark.parametrize('name', ['ws353', 'simlex999', 'men', 'rw', 'mturk287', 'simverb3500'])
@pytest.mark.parametrize('case_insensitive, restrict_vocab', [(True, 300000), (False, 300000), (True, 3000)])
def test_similarity_matches_gensim(similarity_kv, name, case_insensitive, restrict_vocab):
    kv = similarity_kv
    pearson, spearman, oov_ratio = kv.evaluate_word_pairs(
        data.path(name), restrict_vocab=restrict_vocab, case_insensitive=case_insensitive)
    result = evaluate_similarity(kv, name, case_insensitive=case_insensitive, restrict_vocab=restrict_vocab)
    assert result.name == name
    assert result.spearman == pytest.approx(spearman[0], abs=1e-12)
    assert result.pearson == pytest.approx(pearson[0], abs=1e-12)
    assert result.spearman_pvalue == pytest.approx(spearman[1], rel=1e-9)
    assert 100.0 * result.oov_ratio == pytest.approx(oov_ratio)
    assert result.n_found + result.n_oov == result.n_pairs == EXPECTED_PAIRS[name]


def test_similarity_accepts_pairs_and_paths(similarity_kv):
    by_name = evaluate_similarity(similarity_kv, 'ws353-sim')
    by_path = evaluate_similarity(similarity_kv, data.path('ws353-sim'))
    dataset = read_similarity(data.path('ws353-sim'))
    triples = [(a, b, s) for (a, b), s in zip(dataset.pairs, dataset.scores)]
    by_pairs = evaluate_similarity(similarity_kv, triples, name='mine')
    assert by_name.spearman == by_path.spearman == by_pairs.spearman
    assert by_path.name == 'EN-WS-353-SIM' and by_pairs.name == 'mine'


def test_similarity_all_oov():
    kv = make_kv(['zzz', 'yyy'], np.eye(2))
    result = evaluate_similarity(kv, 'ws353')
    assert (result.n_found, result.n_oov, result.n_pairs) == (0, 353, 353)
    assert result.spearman is None and result.pearson is None
    assert 'no pairs in vocabulary' in str(result)
    assert json.loads(json.dumps(result.to_dict()))['spearman'] is None
    one = evaluate_similarity(kv, [('zzz', 'yyy', 3.0), ('zzz', 'qqq', 1.0)])
    assert one.n_found == 1 and one.spearman is None  # one pair: correlation undefined


def test_similarity_on_trained_vectors(trained_kv):
    for name in ('ws353', 'simlex999', 'men'):
        pearson, spearman, _ = trained_kv.evaluate_word_pairs(data.path(name))
        result = evaluate_similarity(trained_kv, name, restrict_vocab=300000)
        assert result.spearman == pytest.approx(spearman[0], abs=1e-12)
        assert result.pearson == pytest.approx(pearson[0], abs=1e-12)


# ----------------------------------------------------------------------------- analogies

@pytest.fixture(scope='module')
def trained_kv():
    """gensim Word2Vec trained on the shared Wikipedia sample (a few seconds, one thread)."""
    from gensim.models import Word2Vec
    path = shared('corpora', 'enwiki-sample.txt.gz')
    with gzip.open(path, 'rt', encoding='utf-8') as fin:
        sentences = [line.split() for line in fin]
    model = Word2Vec(sentences, vector_size=48, window=5, min_count=5, workers=1, epochs=3, seed=7)
    return model.wv


def test_analogy_matches_gensim_full_set(planted):
    path = data.path('questions-words')
    result = evaluate_analogies(planted, 'questions-words', restrict_vocab=30000)
    assert our_counts(result) == gensim_counts(planted, path, restrict_vocab=30000)
    assert 0.3 < result.accuracy < 0.9  # the planted structure is found, not trivially
    assert result.total.attempted + result.total.skipped == 19544


@pytest.mark.parametrize('restrict_vocab, case_insensitive', [(700, True), (1200, False), (100000, False)])
def test_analogy_matches_gensim_options(planted, tmp_path, restrict_vocab, case_insensitive):
    path = subset_file(tmp_path, every=5)
    result = evaluate_analogies(planted, path, restrict_vocab=restrict_vocab,
                                case_insensitive=case_insensitive)
    expected = gensim_counts(planted, path, restrict_vocab=restrict_vocab, case_insensitive=case_insensitive)
    assert our_counts(result) == expected
    assert result.total.attempted > 100


def test_analogy_matches_gensim_trained(trained_kv):
    path = data.path('questions-words')
    result = evaluate_analogies(trained_kv, 'questions-words', restrict_vocab=30000)
    assert our_counts(result) == gensim_counts(trained_kv, path, restrict_vocab=30000)
    assert result.total.attempted > 1000


def test_analogy_near_ties_resolve_like_gensim(planted, google, tmp_path):
    """Near-duplicate candidates: the decision rests on float32 rounding, as in gensim."""
    rng = np.random.default_rng(5)
    keys = list(planted.index_to_key)
    vectors = planted.vectors.copy()
    targets = {q.d.lower() for q in google.questions[::40]} & set(keys)
    extra_keys, extra = [], []
    for i, w in enumerate(sorted(targets)):
        v = vectors[keys.index(w)]
        extra_keys.append(w + '_twin')
        if i % 3 == 0:  # exact duplicate: tied scores
            extra.append(v)
        else:  # near duplicate: scores within float32 noise of each other
            extra.append(v + 2e-5 * np.abs(v).mean() * rng.normal(size=v.shape))
    kv = make_kv(keys + extra_keys, np.vstack([vectors, np.array(extra, dtype=np.float32)]))
    calls = []
    original = analogy_module._reference_scores
    path = subset_file(tmp_path, every=3)

    def spy(*args):
        calls.append(1)
        return original(*args)

    analogy_module._reference_scores = spy
    try:
        result = evaluate_analogies(kv, path, restrict_vocab=None)
    finally:
        analogy_module._reference_scores = original
    assert calls, 'near-ties should have been re-scored'
    assert our_counts(result) == gensim_counts(kv, path, restrict_vocab=len(kv))


@pytest.mark.parametrize('n', [7, 500, 5000, 40000 + 37])
def test_top_k_selection_matches_full_sort(n):
    rng = np.random.default_rng(n)
    scores = rng.normal(size=(9, n)).astype(np.float32)
    scores[:, ::5] = np.round(scores[:, ::5], 1)  # many exact ties
    scores[0, :] = 0.25  # all tied
    scores[1, n // 2:] = -np.inf
    width = min(n, 26)
    cand, vals = analogy_module._top(scores.copy(), width)
    for i in range(len(scores)):
        expected = np.lexsort((np.arange(n), -scores[i]))[:width]
        assert cand[i].tolist() == expected.tolist()
        assert vals[i].tolist() == scores[i, expected].tolist()


def test_analogy_large_vocabulary_matches_gensim(google, tmp_path):
    """More candidates than the small-vocabulary code path handles (threshold top-k)."""
    kv = planted_kv(google.questions, n_filler=5000, seed=11)
    path = subset_file(tmp_path, every=9)
    for restrict in (4000, 30000):
        result = evaluate_analogies(kv, path, restrict_vocab=restrict, block_size=100)
        assert our_counts(result) == gensim_counts(kv, path, restrict_vocab=restrict)
        expected = brute_force(kv, load_analogies(path).questions, '3cosadd', restrict)
        assert result.total.hits[15] == sum(r is not None and r <= 15 for _, r in expected)


def brute_force(kv, questions, method, restrict_vocab):
    """Plain per-question float64 reference: (correct, rank within top-15 or None)."""
    n = min(restrict_vocab, len(kv))
    unit = kv.vectors[:n].astype(np.float64)
    unit /= np.linalg.norm(unit, axis=1, keepdims=True)
    index = {}
    for i, k in enumerate(kv.index_to_key[:n]):
        index.setdefault(k.upper(), i)
    out = []
    for q in questions:
        ids = [index.get(w.upper()) for w in (q.a, q.b, q.c, q.d)]
        if None in ids:
            continue
        a, b, c, d = (unit[i] for i in ids)
        if method == '3cosadd':
            scores = unit @ (b + c - a)
        else:
            pa, pb, pc = ((unit @ v + 1) / 2 for v in (a, b, c))
            scores = pb * pc / (pa + 1e-3)
        banned = {kv.index_to_key[i].upper() for i in ids[:3]}
        ranked = [i for i in np.argsort(-scores, kind='stable')[:40]
                  if kv.index_to_key[i].upper() not in banned]
        folded = [kv.index_to_key[i].upper() for i in ranked[:15]]
        target = q.d.upper()
        out.append((folded[0] == target, folded.index(target) + 1 if target in folded else None))
    return out


@pytest.mark.parametrize('method', ['3cosadd', '3cosmul'])
def test_analogy_against_brute_force(planted, google, method):
    questions = google.questions[::25]
    result = evaluate_analogies(planted, questions, restrict_vocab=2000, method=method, topn=(1, 5, 15))
    expected = brute_force(planted, questions, method, 2000)
    assert result.total.attempted == len(expected)
    assert result.total.correct == sum(ok for ok, _ in expected)
    for k in (1, 5, 15):
        assert result.total.hits[k] == sum(r is not None and r <= k for _, r in expected)


def test_3cosmul_sanity(planted, google):
    add = evaluate_analogies(planted, google, restrict_vocab=30000, method='3cosadd')
    mul = evaluate_analogies(planted, google, restrict_vocab=30000, method='3cosmul')
    assert mul.method == '3cosmul' and mul.total.attempted == add.total.attempted
    assert 0.2 < mul.accuracy <= add.accuracy  # the planted structure is additive
    # textbook example: king - man + woman = queen
    keys = ['king', 'queen', 'man', 'woman', 'apple', 'car']
    vecs = np.array([[1, 1, 0, 0], [1, -1, 0, 0.1], [0, 1, 0, 0], [0, -1, 0.1, 0],
                     [0, 0, 1, 0], [0, 0, 0, 1]], dtype=float) + 0.01
    kv = make_kv(keys, vecs)
    for method in ('3cosadd', '3cosmul'):
        res = evaluate_analogies(kv, [('royal', 'man', 'king', 'woman', 'queen')], method=method)
        assert (res.total.correct, res.total.attempted) == (1, 1)


def test_analogy_aggregates_and_precision(planted, google):
    result = evaluate_analogies(planted, google, restrict_vocab=30000, case_insensitive=False,
                                topn=(15, 1, 5))
    assert result.topn == (1, 5, 15)
    assert result.total.correct == result.total.hits[1]  # case-sensitive: P@1 is the accuracy
    assert result.precision_at(1) <= result.precision_at(5) <= result.precision_at(15)
    sem, syn = result.semantic, result.syntactic
    assert sem.attempted + syn.attempted == result.total.attempted
    assert sem.correct + syn.correct == result.total.correct
    assert sem.attempted + sem.skipped == 8869
    assert result.section('gram8-plural').kind == 'syntactic'


def test_analogy_all_oov_and_errors():
    kv = make_kv(['zzz', 'yyy', 'xxx'], np.eye(3))
    result = evaluate_analogies(kv)
    assert result.accuracy is None and result.total.attempted == 0
    assert result.total.skipped == 19544
    assert 'no questions in vocabulary' in str(result)
    assert json.loads(json.dumps(result.to_dict()))['accuracy'] is None
    with pytest.raises(ValueError, match='method'):
        evaluate_analogies(kv, method='3cosdiv')
    with pytest.raises(ValueError, match='topn'):
        evaluate_analogies(kv, topn=0)


def test_analogy_tiny_vocabulary_matches_gensim(tmp_path):
    """Fewer candidates than gensim's top-5 window."""
    rng = np.random.default_rng(3)
    keys = ['a', 'b', 'c', 'd', 'e', 'A', 'f']
    kv = make_kv(keys, rng.normal(size=(len(keys), 5)))
    path = tmp_path / 'tiny.txt'
    path.write_text(': s\na b c d\nb c d e\nA b c e\na c e f\nd e f a\n')
    for restrict in (5, 6, 7):
        for ci in (True, False):
            result = evaluate_analogies(kv, str(path), restrict_vocab=restrict, case_insensitive=ci)
            assert our_counts(result) == gensim_counts(kv, str(path), restrict_vocab=restrict,
                                                       case_insensitive=ci)


# ----------------------------------------------------------------------------- reports

def test_result_tables_and_json(planted):
    report = evaluate_all(planted)
    assert isinstance(report, EvaluationReport)
    assert [r.name for r in report.similarity] == ['ws353', 'simlex999']
    assert all(isinstance(r, SimilarityResult) for r in report.similarity)
    assert isinstance(report.analogy, AnalogyResult) and report.analogy.name == 'questions-words'
    text = str(report)
    assert 'ws353' in text and 'gram9-plural-verbs' in text and 'total' in text
    table = str(report.analogy).splitlines()[1:]
    widths = {len(line) for line in table if not line.startswith('(')}
    assert len(table[0]) == len(table[1]) == max(widths)  # header as wide as the rule
    payload = json.loads(json.dumps(report.to_dict()))
    assert payload['analogy']['total']['attempted'] == report.analogy.total.attempted
    assert set(payload['analogy']['total']['precision_at']) == {'1', '5', '15'}
    assert payload['similarity'][0]['n_pairs'] == 353
