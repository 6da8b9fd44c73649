"""Result objects of the word evaluations (similarity, analogies and their report): printable tables and
JSON-ready dicts."""

from dataclasses import dataclass, field

from .tables import format_table, number as _num, percent as _pct

__all__ = ['SimilarityResult', 'SectionResult', 'AnalogyResult', 'EvaluationReport']

NO_PAIRS = 'no pairs in vocabulary'
NO_QUESTIONS = 'no questions in vocabulary'


@dataclass
class SimilarityResult:
    """Correlation of model cosine similarities with human judgements.

    Attributes
    ----------
    name : str
        Data set name.
    spearman, pearson : float or None
        Rank and linear correlation over the in-vocabulary pairs; None when
        fewer than two pairs were found or a correlation is undefined.
    spearman_pvalue, pearson_pvalue : float or None
        Two-sided p-values of the correlations.
    n_pairs : int
        Pairs in the data set.
    n_found : int
        Pairs whose two words are both in the (restricted) vocabulary.
    n_oov : int
        Skipped pairs (``n_pairs - n_found``).
    """

    name: str
    spearman: float = None
    pearson: float = None
    n_pairs: int = 0
    n_found: int = 0
    n_oov: int = 0
    spearman_pvalue: float = None
    pearson_pvalue: float = None

    @property
    def coverage(self):
        """Fraction of pairs found in the vocabulary (None for an empty set)."""
        return self.n_found / self.n_pairs if self.n_pairs else None

    @property
    def oov_ratio(self):
        """Fraction of pairs skipped as out-of-vocabulary (None for an empty set)."""
        return self.n_oov / self.n_pairs if self.n_pairs else None

    def to_dict(self):
        """Plain dict for JSON (None for undefined values)."""
        return {
            'name': self.name, 'spearman': self.spearman, 'pearson': self.pearson,
            'spearman_pvalue': self.spearman_pvalue, 'pearson_pvalue': self.pearson_pvalue,
            'n_pairs': self.n_pairs, 'n_found': self.n_found, 'n_oov': self.n_oov,
            'coverage': self.coverage,
        }

    def row(self):
        """Cells of this result in :data:`SIMILARITY_HEADER` order."""
        if self.n_found == 0:
            return [self.name, '-', '-', '0/%d' % self.n_pairs, NO_PAIRS]
        return [self.name, _num(self.spearman), _num(self.pearson),
                '%d/%d' % (self.n_found, self.n_pairs), _pct(self.coverage)]

    def __str__(self):
        return format_table(SIMILARITY_HEADER, [self.row()])


SIMILARITY_HEADER = ['dataset', 'spearman', 'pearson', 'found', 'coverage']


@dataclass
class SectionResult:
    """Analogy accuracy for one section (or an aggregate of sections).

    Attributes
    ----------
    name : str
        Section name (``'semantic'``, ``'syntactic'`` and ``'total'`` for aggregates).
    correct : int
        Questions answered correctly (top-1, gensim-compatible rule).
    attempted : int
        Questions with all four words in the restricted vocabulary.
    skipped : int
        Questions skipped because a word is out of vocabulary.
    hits : dict of {int: int}
        For each ``k`` of ``topn``: questions whose answer is among the first
        ``k`` candidates (question words and their case variants excluded).
    kind : str
        ``'semantic'``, ``'syntactic'`` or ``'aggregate'``.
    """

    name: str
    correct: int = 0
    attempted: int = 0
    skipped: int = 0
    hits: dict = field(default_factory=dict)
    kind: str = 'semantic'

    @property
    def accuracy(self):
        """``correct / attempted``, None when nothing was attempted."""
        return self.correct / self.attempted if self.attempted else None

    def precision_at(self, k):
        """Precision@k (fraction of attempted questions answered within the top k)."""
        if k not in self.hits:
            raise KeyError('precision@%d was not computed; available: %s' % (k, sorted(self.hits)))
        return self.hits[k] / self.attempted if self.attempted else None

    def to_dict(self):
        """Plain dict for JSON."""
        return {
            'name': self.name, 'kind': self.kind, 'accuracy': self.accuracy,
            'correct': self.correct, 'attempted': self.attempted, 'skipped': self.skipped,
            'precision_at': {str(k): self.precision_at(k) for k in sorted(self.hits)},
        }

    def merged(self, others, name, kind='aggregate'):
        """Sum of this section and `others` under a new name."""
        out = SectionResult(name, self.correct, self.attempted, self.skipped, dict(self.hits), kind)
        for other in others:
            out.correct += other.correct
            out.attempted += other.attempted
            out.skipped += other.skipped
            for k, v in other.hits.items():
                out.hits[k] = out.hits.get(k, 0) + v
        return out


@dataclass
class AnalogyResult:
    """Word-analogy evaluation: per-section and aggregate accuracies.

    Attributes
    ----------
    name : str
        Data set name.
    method : str
        ``'3cosadd'`` or ``'3cosmul'``.
    restrict_vocab : int
        Number of leading vocabulary entries used as candidates.
    case_insensitive : bool
        Whether words were matched case-insensitively.
    topn : tuple of int
        The ``k`` values of :meth:`SectionResult.precision_at`.
    sections : list of SectionResult
        One entry per section, in file order.
    semantic, syntactic, total : SectionResult
        Aggregates over semantic sections, syntactic sections and all sections.
    """

    name: str
    method: str
    restrict_vocab: int
    case_insensitive: bool
    topn: tuple
    sections: list
    semantic: SectionResult = None
    syntactic: SectionResult = None
    total: SectionResult = None

    def __post_init__(self):
        empty = SectionResult('', hits={k: 0 for k in self.topn})
        sem = [s for s in self.sections if s.kind == 'semantic']
        syn = [s for s in self.sections if s.kind == 'syntactic']
        self.semantic = empty.merged(sem, 'semantic')
        self.syntactic = empty.merged(syn, 'syntactic')
        self.total = empty.merged(self.sections, 'total')

    @property
    def accuracy(self):
        """Total accuracy (None when no question was attempted)."""
        return self.total.accuracy

    def precision_at(self, k):
        """Total Precision@k."""
        return self.total.precision_at(k)

    def section(self, name):
        """The :class:`SectionResult` called `name` (aggregates included)."""
        for s in self.sections + [self.semantic, self.syntactic, self.total]:
            if s.name == name:
                return s
        raise KeyError('no section %r' % (name,))

    def to_dict(self):
        """Plain dict for JSON."""
        return {
            'name': self.name, 'method': self.method, 'restrict_vocab': self.restrict_vocab,
            'case_insensitive': self.case_insensitive, 'topn': list(self.topn),
            'accuracy': self.accuracy,
            'sections': [s.to_dict() for s in self.sections],
            'semantic': self.semantic.to_dict(), 'syntactic': self.syntactic.to_dict(),
            'total': self.total.to_dict(),
        }

    def _row(self, s):
        if not s.attempted:
            return [s.name, '0', '0', str(s.skipped), 'n/a'] + ['n/a'] * len(self.topn)
        return ([s.name, str(s.correct), str(s.attempted), str(s.skipped), _pct(s.accuracy)]
                + [_pct(s.precision_at(k)) for k in self.topn])

    def __str__(self):
        header = ['section', 'correct', 'attempted', 'oov', 'accuracy'] + ['P@%d' % k for k in self.topn]
        rows = [self._row(s) for s in self.sections]
        rows.append(None)
        for agg in (self.semantic, self.syntactic, self.total):
            if agg is self.total or agg.attempted or agg.skipped:
                rows.append(self._row(agg))
        if not self.total.attempted:
            rows.append(['(%s)' % NO_QUESTIONS])
        title = '%s analogies (%s, restrict_vocab=%d)' % (self.name, self.method, self.restrict_vocab)
        return title + '\n' + format_table(header, rows)


@dataclass
class EvaluationReport:
    """Several similarity results and an optional analogy result."""

    similarity: list = field(default_factory=list)
    analogy: AnalogyResult = None

    def to_dict(self):
        """Plain dict for JSON."""
        return {
            'similarity': [r.to_dict() for r in self.similarity],
            'analogy': self.analogy.to_dict() if self.analogy is not None else None,
        }

    def __str__(self):
        parts = []
        if self.similarity:
            parts.append('word similarity\n' + format_table(
                SIMILARITY_HEADER, [r.row() for r in self.similarity]))
        if self.analogy is not None:
            parts.append(str(self.analogy))
        return '\n\n'.join(parts)
