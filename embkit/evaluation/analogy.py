"""Word-analogy evaluation ("a is to b as c is to ?") with batched matrix products.

Questions are answered in blocks: the candidate vectors are normalised once,
the scores of a block of questions against every candidate come from one BLAS
matrix product, and the best candidates of each question are found with a
partial sort.  For 3CosAdd the answers are the same as those of gensim's
``KeyedVectors.evaluate_word_analogies``:

* only the first `restrict_vocab` entries of ``kv.index_to_key`` are
  candidates, and a question with any word outside them is skipped;
* with `case_insensitive`, words are compared upper-cased and a word maps to
  its first case variant in the vocabulary;
* the three question words are never answers, and a candidate that is a case
  variant of a question word is passed over (as gensim does within its top 5);
* candidates are ranked by cosine similarity with the normalised
  ``b + c - a`` of the unit-normalised vectors.

Where the fast float32 scores of the deciding candidates are closer than
``_TIE_TOL``, the question is re-scored with gensim's sequence of float
operations and ranked with the same numpy partial sort, so that near and exact
ties resolve as in gensim.  Elsewhere (Precision@k, 3CosMul) exact ties are
broken in favour of the lower vocabulary index.
"""

import numpy as np
from scipy.linalg.blas import get_blas_funcs

from ._vocab import build_lookup, n_candidates, row_norms, unit_rows
from .datasets import load_analogies
from .word_results import AnalogyResult, SectionResult

__all__ = ['evaluate_analogies', 'METHODS']

METHODS = ('3cosadd', '3cosmul')

#: epsilon of 3CosMul (Levy & Goldberg 2014).
COSMUL_EPSILON = 1e-3
#: gensim looks at its top 5 answers (after removing the question words).
_GENSIM_TOPN = 5
#: extra candidates fetched beyond max(topn) + 3, to absorb case variants.
_SLACK = 8
#: score gap below which a 3CosAdd decision is recomputed with gensim's arithmetic.
_TIE_TOL = 1e-5
#: float32 cells of the per-block score matrix (64 MiB).
_SCORE_BUDGET = 16 * 1024 * 1024
_NOT_FOUND = np.iinfo(np.int64).max
_DNRM2 = get_blas_funcs('nrm2', dtype=np.float64)
#: number of strided column sets of the threshold top-k selection.
_GROUPS = 64


def _block_scores(unit, quads, method):
    """Scores of every candidate (columns) for each question (rows), float32."""
    a, b, c = unit[quads[:, 0]], unit[quads[:, 1]], unit[quads[:, 2]]
    if method == '3cosadd':
        query = b + c - a
        length = np.linalg.norm(query, axis=1, keepdims=True)
        query /= np.where(length > 0, length, 1)
        return query @ unit.T
    # 3CosMul with cosines shifted to [0, 1]
    sim_a = a @ unit.T
    sim_a += 1
    sim_a *= 0.5
    sim_a += COSMUL_EPSILON
    scores = b @ unit.T
    scores += 1
    scores *= 0.5
    sim_c = c @ unit.T
    sim_c += 1
    sim_c *= 0.5
    scores *= sim_c
    scores /= sim_a
    return scores


def _reference_scores(kv, norms, n, quad):
    """3CosAdd scores of one question with gensim's sequence of float operations.

    gensim adds the unit vectors of b, c and -a into a buffer of the vectors'
    dtype, divides by the total weight 3 in float64, scales to unit length
    (BLAS dnrm2) and casts to float32, then divides ``vectors @ mean`` by the norms.
    """
    vectors = kv.vectors
    mean = np.zeros(vectors.shape[1], dtype=vectors.dtype)
    for row, weight in ((quad[1], 1.0), (quad[2], 1.0), (quad[0], -1.0)):
        mean += np.float64(weight) * (vectors[row] / norms[row])
    mean = mean / np.float64(3.0)
    length = _DNRM2(mean)
    if length > 0:
        mean = (1.0 / length) * mean
    mean = mean.astype(np.float32)
    return np.dot(vectors[:n], mean) / norms[:n]


def _gensim_ranking(dists):
    """The candidates gensim's ``most_similar`` looks at, in its order.

    gensim partially sorts the negated scores for its top 5 plus the three
    question words with ``numpy.argpartition`` followed by ``numpy.argsort``
    of the selected values; using the same numpy primitives on the same values
    reproduces its order of exactly tied scores too.
    """
    wanted = _GENSIM_TOPN + 3
    negated = -dists
    if wanted >= negated.size:
        return np.argsort(negated)[:wanted]
    chosen = np.argpartition(negated, wanted)[:wanted]
    return chosen[np.argsort(negated[chosen])]


def _top(scores, width):
    """Indices and values of the `width` best columns per row, best first.

    Exact ties are broken by the lower column index.  A per-row threshold
    that at least `width` scores reach is found first; only the scores at or
    above it are sorted.  For wide rows the threshold is the `width`-th
    largest maximum of disjoint column sets (``_GROUPS`` strided slices plus
    one set per left-over column), which is several times cheaper than
    partitioning whole rows.
    """
    n_rows, n = scores.shape
    if width >= n:
        cand = np.broadcast_to(np.arange(n), (n_rows, n))
        order = np.lexsort((cand, -scores), axis=-1)
        return np.take_along_axis(cand, order, axis=1), np.take_along_axis(scores, order, axis=1)
    scores = np.ascontiguousarray(scores)
    if n < 2 * _GROUPS * width:
        threshold = np.partition(scores, n - width, axis=1)[:, n - width]
    else:
        span = n // _GROUPS
        set_max = scores[:, :span * _GROUPS].reshape(n_rows, _GROUPS, span).max(axis=1)
        if span * _GROUPS < n:
            set_max = np.concatenate([set_max, scores[:, span * _GROUPS:]], axis=1)
        threshold = np.partition(set_max, set_max.shape[1] - width, axis=1)[:, set_max.shape[1] - width]
    flat = np.flatnonzero(scores >= threshold[:, None])
    rows, cols = np.divmod(flat, n)
    vals = scores.reshape(-1)[flat]
    order = np.lexsort((cols, -vals, rows))
    rows, cols, vals = rows[order], cols[order], vals[order]
    rank = np.arange(len(rows)) - np.searchsorted(rows, np.arange(n_rows))[rows]
    first = rank < width
    return cols[first].reshape(n_rows, width), vals[first].reshape(n_rows, width)


def _decide(cand, quads, canonical, kmax):
    """Turn ranked candidates into answers.

    Returns
    -------
    correct : bool array
        gensim's rule: among the first 5 candidates that are not question
        words, the first one that is not a case variant of a question word is
        the answer (the last of the 5 if all are); correct if it folds to d.
    rank : int64 array
        1-based rank of the answer among candidates that are neither question
        words nor their case variants (``_NOT_FOUND`` if not in `cand`).
    incomplete : bool array
        True where `cand` was too short to decide (the caller widens it).
    pivot : int64 array
        0-based position (among non-question candidates) of the answer given.
    """
    qa, qb, qc, qd = (quads[:, i:i + 1] for i in range(4))
    n_rows = len(cand)
    rows = np.arange(n_rows)
    keep = (cand != qa) & (cand != qb) & (cand != qc)
    canon = canonical[cand]
    valid = (canon != qa) & (canon != qb) & (canon != qc)
    kept_pos = np.cumsum(keep, axis=1)
    window = keep & (kept_pos <= _GENSIM_TOPN)
    window_len = window.sum(axis=1)
    chosen = window & valid
    has_choice = chosen.any(axis=1)
    first_choice = np.argmax(chosen, axis=1)
    last_in_window = np.argmax(window & (kept_pos == window_len[:, None]), axis=1)
    col = np.where(has_choice, first_choice, last_in_window)
    answered = window_len > 0
    correct = answered & (canon[rows, col] == qd[:, 0])
    pivot = np.where(answered, kept_pos[rows, col] - 1, 0)

    valid_rank = np.cumsum(valid, axis=1)
    hit = valid & (canon == qd)
    found = hit.any(axis=1)
    rank = np.where(found, valid_rank[rows, np.argmax(hit, axis=1)], _NOT_FOUND)
    incomplete = (keep.sum(axis=1) < _GENSIM_TOPN + 1) | (~found & (valid.sum(axis=1) < kmax))
    return correct, rank, incomplete, pivot


def _fragile(vals, quads, cand, pivot):
    """Rows whose answer could flip under float32 rounding differences."""
    keep = (cand != quads[:, 0:1]) & (cand != quads[:, 1:2]) & (cand != quads[:, 2:3])
    # question words were scored -inf, so the kept candidates form a prefix
    width = min(vals.shape[1], _GENSIM_TOPN + 1)
    kept_vals = np.where(keep[:, :width], vals[:, :width].astype(np.float64), -np.inf)
    with np.errstate(invalid='ignore'):  # -inf - -inf
        gaps = kept_vals[:, :-1] - kept_vals[:, 1:]
    upto = np.arange(gaps.shape[1])[None, :] <= pivot[:, None]
    close = (gaps < _TIE_TOL) & np.isfinite(gaps)
    return (close & upto).any(axis=1)


def _exclude_questions(scores, quads):
    rows = np.arange(len(quads))[:, None]
    scores[rows, quads[:, :3]] = -np.inf


def _solve(kv, quads, canonical, n, method, kmax, block_size):
    """Correctness and answer rank of each encoded question ``(a, b, c, d)`` rows."""
    m = len(quads)
    correct = np.zeros(m, dtype=bool)
    rank = np.full(m, _NOT_FOUND, dtype=np.int64)
    if m == 0 or n == 0:
        return correct, rank
    norms = row_norms(kv, n)
    unit = unit_rows(kv.vectors[:n], norms)
    if not np.isfinite(unit).all():
        raise ValueError('the vectors contain NaN or infinite values')
    width = min(n, kmax + 3 + _SLACK)
    per_row = n * (1 if method == '3cosadd' else 3)
    step = max(1, min(int(block_size), _SCORE_BUDGET // per_row))
    for start in range(0, m, step):
        block = quads[start:start + step]
        scores = _block_scores(unit, block, method)
        _exclude_questions(scores, block)
        cand, vals = _top(scores, width)
        ok, pos, incomplete, pivot = _decide(cand, block, canonical, kmax)
        redo = incomplete & (width < n)
        if method == '3cosadd':
            redo |= _fragile(vals, block, cand, pivot)
        for i in np.flatnonzero(redo):
            quad = block[i:i + 1]
            if method == '3cosadd':
                row = _reference_scores(kv, norms, n, quad[0])
                gensim_cand = _gensim_ranking(row)[None, :]
                ok[i] = _decide(gensim_cand, quad, canonical, kmax)[0][0]
                row = row[None, :]
            else:
                row = scores[i:i + 1]
            _exclude_questions(row, quad)
            full_cand, _ = _top(row, n)
            ok_i, pos[i], _, _ = (r[0] for r in _decide(full_cand, quad, canonical, kmax))
            if method != '3cosadd':
                ok[i] = ok_i
        correct[start:start + step] = ok
        rank[start:start + step] = pos
    return correct, rank


def _check_topn(topn):
    values = (topn,) if np.isscalar(topn) else tuple(topn)
    if not values or any(int(k) != k or k < 1 for k in values):
        raise ValueError('topn must be a positive int or a sequence of them, got %r' % (topn,))
    return tuple(sorted(set(int(k) for k in values)))


def evaluate_analogies(kv, path_or_name='questions-words', restrict_vocab=30000, case_insensitive=True,
                       method='3cosadd', topn=(1, 5, 15), block_size=512, name=None):
    """Evaluate vectors on word analogies "a is to b as c is to d".

    Parameters
    ----------
    kv : gensim.models.KeyedVectors
        The vectors; ``kv.index_to_key`` should be sorted by decreasing frequency.
    path_or_name : str, os.PathLike, AnalogyDataset or iterable, optional
        A bundled set name (default ``'questions-words'``, the Google set), a
        file in the ``questions-words.txt`` format, an MSR-style ``.csv`` file,
        an :class:`~embkit.evaluation.readers.AnalogyDataset`, or an iterable of
        ``(section, a, b, c, d)`` tuples.
    restrict_vocab : int or None, optional
        Only the first `restrict_vocab` words are candidate answers, and
        questions with a word outside them are skipped (None: whole vocabulary).
    case_insensitive : bool, optional
        Compare words upper-cased, as gensim does.
    method : {'3cosadd', '3cosmul'}, optional
        3CosAdd: maximise ``cos(x, b) - cos(x, a) + cos(x, c)`` (the vector
        offset method, equal to gensim's answers).  3CosMul (Levy & Goldberg
        2014): maximise ``cos'(x, b) cos'(x, c) / (cos'(x, a) + 0.001)`` with
        ``cos' = (cos + 1) / 2``.
    topn : int or sequence of int, optional
        Report Precision@k for each k: the answer is among the first k
        candidates, question words and their case variants excluded.
    block_size : int, optional
        Questions per matrix product (reduced automatically for large vocabularies).
    name : str, optional
        Name in the result; defaults to the set name or file name.

    Returns
    -------
    AnalogyResult
        Per-section counts and accuracies; ``semantic`` (sections not starting
        with ``'gram'``), ``syntactic`` and ``total`` aggregates.  ``accuracy``
        is None when no question is in the vocabulary.
    """
    method = str(method).lower()
    if method not in METHODS:
        raise ValueError('method must be one of %s, got %r' % (', '.join(METHODS), method))
    topn = _check_topn(topn)
    dataset = load_analogies(path_or_name, name=name)
    n = n_candidates(kv, restrict_vocab)
    lookup, canonical = build_lookup(kv, restrict_vocab, case_insensitive)

    section_names = dataset.sections
    section_of = {s: i for i, s in enumerate(section_names)}
    owner = np.fromiter((section_of[q.section] for q in dataset.questions), dtype=np.int64,
                        count=len(dataset))
    words = [w for q in dataset.questions for w in (q.a, q.b, q.c, q.d)]
    if case_insensitive:
        words = list(map(str.upper, words))
    rows = np.fromiter((lookup.get(w, -1) for w in words), dtype=np.int64, count=len(words))
    rows = rows.reshape(-1, 4)
    known = (rows >= 0).all(axis=1)
    skipped = np.bincount(owner[~known], minlength=len(section_names))
    quads, owner = rows[known], owner[known]

    correct, rank = _solve(kv, quads, canonical, n, method, max(topn), block_size)

    n_sections = len(section_names)
    attempted = np.bincount(owner, minlength=n_sections)
    n_correct = np.bincount(owner[correct], minlength=n_sections)
    hits = {k: np.bincount(owner[rank <= k], minlength=n_sections) for k in topn}
    sections = [
        SectionResult(s, int(n_correct[i]), int(attempted[i]), int(skipped[i]),
                      {k: int(hits[k][i]) for k in topn}, dataset.kind(s))
        for i, s in enumerate(section_names)
    ]
    return AnalogyResult(dataset.name, method, n, case_insensitive, topn, sections)
