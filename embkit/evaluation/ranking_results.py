"""Result objects of the ranking and extreme-classification evaluations.

Both print as plain-text tables (``str(result)``) and convert to JSON-ready
dicts (``result.to_dict()``); undefined values are ``None``, never NaN.
"""

from dataclasses import dataclass, field

from .tables import clean as _clean, format_table, number as _num, percent as _pct

__all__ = ['RankingResult', 'NextItemResult', 'XCResult']


@dataclass
class RankingResult:
    """Next-item prediction metrics of a context/target model on held-out pairs.

    Attributes
    ----------
    name : str
        Name of the pair set.
    n_pairs : int
        Pairs evaluated.
    n_targets : int
        Rows of the target (output) table: the candidates of the full softmax.
    log_likelihood : float
        Mean of ``log g_i(j)`` under the full softmax over all targets (natural log).
    perplexity : float
        ``exp(-log_likelihood)`` (``inf`` when it overflows float64; None in :meth:`to_dict`).
    likelihood : float
        Mean of ``g_i(j)`` (Eq. 9 of Tanielian & Vasile 2019).
    mpr : float or None
        Exact mean percentile rank: mean over pairs of the fraction of the other
        candidate targets scored below the true target (ties count 1/2); 1 is
        best, 0.5 is chance.  None when no pair has another candidate.
    mpr_approx : float or None
        The same fraction among `n_negatives` targets drawn uniformly (Eq. 10);
        None when `n_negatives` is 0.
    precision : dict of {int: float}
        Prec@k: fraction of pairs whose true target ranks in the top k of all
        candidate targets (a tie straddling rank k gets its expected credit
        under uniform random tie-breaking).
    n_negatives : int
        Negatives drawn per pair for `mpr_approx`.
    seed : int or None
        Seed of the negative draws.
    n_excluded : int
        Total (pair, item) exclusions applied to the ranking metrics.
    n_without_negatives : int
        Pairs left out of the MPR means because every other target was excluded.
    n_skipped : int
        Pairs of the input not evaluated (words outside the vocabulary, when
        read from a file of words).
    n_ties : int
        Pairs whose true target ties with at least one other candidate.
    """

    name: str
    n_pairs: int
    n_targets: int
    log_likelihood: float = None
    perplexity: float = None
    likelihood: float = None
    mpr: float = None
    mpr_approx: float = None
    precision: dict = field(default_factory=dict)
    n_negatives: int = 0
    seed: int = None
    n_excluded: int = 0
    n_without_negatives: int = 0
    n_skipped: int = 0
    n_ties: int = 0

    def precision_at(self, k):
        """Prec@k (KeyError naming the computed k values for another k)."""
        if k not in self.precision:
            raise KeyError('Prec@%d was not computed; available: %s' % (k, sorted(self.precision)))
        return self.precision[k]

    def to_dict(self):
        """Plain dict for JSON."""
        return {
            'name': self.name, 'n_pairs': self.n_pairs, 'n_targets': self.n_targets,
            'log_likelihood': _clean(self.log_likelihood), 'perplexity': _clean(self.perplexity),
            'likelihood': _clean(self.likelihood), 'mpr': _clean(self.mpr),
            'mpr_approx': _clean(self.mpr_approx),
            'precision_at': {str(k): _clean(v) for k, v in sorted(self.precision.items())},
            'n_negatives': self.n_negatives, 'seed': self.seed, 'n_excluded': self.n_excluded,
            'n_without_negatives': self.n_without_negatives, 'n_skipped': self.n_skipped,
            'n_ties': self.n_ties,
        }

    def __str__(self):
        title = 'ranking: %s (%d pairs, %d targets)' % (self.name, self.n_pairs, self.n_targets)
        if not self.n_pairs:
            note = '(no pairs in vocabulary: %d skipped)' % self.n_skipped
            return title + '\n' + format_table(['metric', 'value'], [[note]])
        rows = [
            ['mean log-likelihood', _num(_clean(self.log_likelihood))],
            ['perplexity', 'inf' if self.perplexity == float('inf') else _num(_clean(self.perplexity), 2)],
            ['likelihood (mean probability)', _num(_clean(self.likelihood), 6)],
            ['MPR (all targets)', _pct(self.mpr)],
        ]
        if self.n_negatives:
            rows.append(['MPR (%d uniform negatives, seed %s)' % (self.n_negatives, self.seed),
                         _pct(self.mpr_approx)])
        rows += [['Prec@%d' % k, _pct(v)] for k, v in sorted(self.precision.items())]
        notes = []
        if self.n_skipped:
            notes.append('pairs skipped (out of vocabulary): %d' % self.n_skipped)
        if self.n_excluded:
            notes.append('seen items excluded from the rankings: %d' % self.n_excluded)
        if self.n_without_negatives:
            notes.append('pairs without other candidates, left out of MPR: %d' % self.n_without_negatives)
        if notes:
            rows.append(None)
            rows += [['(%s)' % n] for n in notes]
        return title + '\n' + format_table(['metric', 'value'], rows)


@dataclass
class NextItemResult:
    """Leave-one-out metrics: one held-out item per user, ranked against every item the user has not seen.

    Attributes
    ----------
    name : str
        Name of the held-out set.
    n_users : int
        Users evaluated (one held-out item each).
    n_items : int
        Items of the catalogue (the candidates before the user's seen items are filtered).
    hit : dict of {int: float}
        Hit@k: fraction of users whose held-out item ranks in the top k.
    ndcg : dict of {int: float}
        NDCG@k: mean ``1 / log2(rank + 1)`` of the held-out item (rank 1 is the best; 0 beyond k).
    precision : dict of {int: float}
        Prec@k: ``Hit@k / k`` (one relevant item per user).
    mpr : float or None
        Mean percentile rank: the fraction of the user's candidates (unseen items other than the
        held-out one) scored below the held-out item, averaged over users; 1 is best, 0.5 chance.
    n_filtered : int
        Seen items filtered from the rankings, over all users.
    n_ties : int
        Users whose held-out item ties with at least one candidate (ties get their expected credit
        under uniformly random tie-breaking).
    """

    name: str
    n_users: int
    n_items: int
    hit: dict = field(default_factory=dict)
    ndcg: dict = field(default_factory=dict)
    precision: dict = field(default_factory=dict)
    mpr: float = None
    n_filtered: int = 0
    n_ties: int = 0

    def to_dict(self):
        """Plain dict for JSON (keys of the per-k dicts are strings)."""
        def per_k(values):
            return {str(k): _clean(v) for k, v in sorted(values.items())}
        return {'name': self.name, 'n_users': self.n_users, 'n_items': self.n_items, 'hit_at': per_k(self.hit),
                'ndcg_at': per_k(self.ndcg), 'precision_at': per_k(self.precision), 'mpr': _clean(self.mpr),
                'n_filtered': self.n_filtered, 'n_ties': self.n_ties}

    def __str__(self):
        title = 'leave-one-out: %s (%d users, %d items, seen items filtered)' % (self.name, self.n_users,
                                                                                self.n_items)
        rows = [['Hit@%d' % k, _pct(self.hit[k])] for k in sorted(self.hit)]
        rows += [['NDCG@%d' % k, _pct(self.ndcg[k])] for k in sorted(self.ndcg)]
        rows += [['Prec@%d' % k, _pct(self.precision[k])] for k in sorted(self.precision)]
        rows.append(['MPR (all unseen items)', _pct(self.mpr)])
        return title + '\n' + format_table(['metric', 'value'], rows)


@dataclass
class XCResult:
    """Extreme-classification metrics at several cut-offs k.

    Attributes
    ----------
    ks : tuple of int
        The cut-offs.
    precision, ndcg : dict of {int: float}
        P@k and nDCG@k, averaged over the rows that have at least one true label.
    psp, psndcg : dict of {int: float}
        Propensity-scored P@k and nDCG@k, normalised by the best achievable
        value (the Extreme Classification Repository convention); empty when no
        propensities were given.
    psp_unnormalised : dict of {int: float}
        Mean ``(1/k) sum y_l / p_l`` over the top k, before normalisation.
    n_rows : int
        Rows evaluated (with at least one true label).
    n_empty : int
        Rows skipped because they have no true label.
    n_labels : int
        Number of labels (columns).
    A, B : float or None
        Parameters of the propensity model, when propensities were computed here.
    """

    ks: tuple
    precision: dict = field(default_factory=dict)
    ndcg: dict = field(default_factory=dict)
    psp: dict = field(default_factory=dict)
    psndcg: dict = field(default_factory=dict)
    psp_unnormalised: dict = field(default_factory=dict)
    n_rows: int = 0
    n_empty: int = 0
    n_labels: int = 0
    A: float = None
    B: float = None
    name: str = 'xc'

    def to_dict(self):
        """Plain dict for JSON (keys of the per-k dicts are strings)."""
        def per_k(values):
            return {str(k): _clean(v) for k, v in sorted(values.items())}
        return {
            'name': self.name, 'ks': list(self.ks), 'n_rows': self.n_rows, 'n_empty': self.n_empty,
            'n_labels': self.n_labels, 'A': self.A, 'B': self.B,
            'precision_at': per_k(self.precision), 'ndcg_at': per_k(self.ndcg),
            'psp_at': per_k(self.psp), 'psndcg_at': per_k(self.psndcg),
            'psp_unnormalised_at': per_k(self.psp_unnormalised),
        }

    def __str__(self):
        title = '%s: %d rows, %d labels' % (self.name, self.n_rows, self.n_labels)
        if self.n_empty:
            title += ' (%d rows without true labels skipped)' % self.n_empty
        header = ['k', 'P@k', 'nDCG@k']
        if self.psp:
            header += ['PSP@k', 'PSnDCG@k']
        if not self.n_rows:
            return title + '\n' + format_table(header, [['(no row has a true label)']])
        rows = []
        for k in self.ks:
            row = [str(k), _pct(self.precision[k]), _pct(self.ndcg[k])]
            if self.psp:
                row += [_pct(self.psp[k]), _pct(self.psndcg[k])]
            rows.append(row)
        if self.psp and self.A is not None:
            title += '; propensities A=%g, B=%g' % (self.A, self.B)
        return title + '\n' + format_table(header, rows)
