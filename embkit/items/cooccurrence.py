"""Item -> next-item co-occurrence counts, the training data of implicit matrix factorisation.

:class:`PairCounts` holds a sparse ``n_items x n_items`` matrix of counts: row ``i`` is a context item,
column ``j`` an item that came after it, and the entry is how often it did.  With forward pairs the matrix
is asymmetric (earlier -> later), as in the next-item experiments of Tanielian & Vasile, "Relaxed Softmax for
PU Learning" (RecSys 2019, section 3.2.3).  Counts come from

* user timelines (:meth:`PairCounts.from_timelines`): each item with the items that follow it within a
  forward window, counted both ways by default (``directions="forward"``: earlier -> later only);
* a token stream (:meth:`PairCounts.from_text`): the top-N words, forward window 3, as the paper's text
  experiment;
* any scipy.sparse matrix (:meth:`PairCounts.from_matrix`) or an ``i j count`` text file
  (:meth:`PairCounts.from_triples`).

Pairs are enumerated with numpy, one window offset at a time over all timelines at once (no Python
loop per pair or per user), and summed a bounded number at a time, so ml-20m (10M ratings >= 4) counts
in seconds.

:func:`~embkit.items.pair_split.split_pairs` splits the counts into train / validation / test; a split gives
the ``(n, 2)`` (context, target) rows of :func:`embkit.evaluation.evaluate_ranking` through
:meth:`PairCounts.pairs`, and the expanded int32 arrays of a training driver through
:meth:`PairCounts.training_arrays`.

Examples
--------
>>> from embkit.items.timelines import load_timelines
>>> from embkit.items.cooccurrence import PairCounts, split_pairs
>>> from embkit.evaluation import evaluate_ranking
>>> counts = PairCounts.from_timelines(load_timelines('ml-100k'), window=3)   # doctest: +SKIP
>>> train, valid, test = split_pairs(counts, (0.7, 0.1, 0.2), seed=0)         # doctest: +SKIP
>>> evaluate_ranking(W, O, test.pairs(), exclude=train.matrix)               # doctest: +SKIP
"""
import logging
import os
import re

import numpy as np
import scipy.sparse as sp

from embkit.core.atomic import atomic_path
from embkit.core.sparse_checks import check_sparse
from embkit.core.threads import map_on_threads
from embkit.items.item_ids import ItemIds
from embkit.items.pair_split import split_pairs

logger = logging.getLogger(__name__)

__all__ = ["PairCounts", "split_pairs", "DEFAULT_WINDOW", "DIRECTIONS", "DEFAULT_DIRECTIONS", "DEFAULT_VOCAB_SIZE",
           "forward_pair_counts"]

#: Default forward window: an item and the next 3 items of its timeline (see :meth:`PairCounts.from_timelines`).
DEFAULT_WINDOW = 3
#: How :meth:`PairCounts.from_timelines` counts a pair of items of a timeline: earlier -> later only
#: (``"forward"``, the paper's next-item pairs), or both ways (``"both"``).
DIRECTIONS = ("forward", "both")
#: Both ways: the recommender's default (it ranks next items better on held-out users; see RESULTS.md,
#: "Recommendation").
DEFAULT_DIRECTIONS = "both"
#: Vocabulary of :meth:`PairCounts.from_text`: the 15,000 most frequent words, as in the paper.
DEFAULT_VOCAB_SIZE = 15000
#: Matrices of at most this many cells are summed in a dense array.
DENSE_CELLS = 1 << 24
#: Pairs held before they are summed into the sparse matrix.
FLUSH_PAIRS = 1 << 24
#: runs of segments counted apart per thread of ``forward_pair_counts`` when it sums sparse (a long run does not
#: keep the other threads waiting, and each run's sums stay smaller)
PARTS_PER_WORKER = 2


# ---------------------------------------------------------------------------------------------- counting
def _check_window(window):
    """An int >= 1, or None for the whole rest of the timeline (``'all'``)."""
    if window is None or (isinstance(window, str) and window.lower() == "all"):
        return None
    if isinstance(window, (bool, float, str)) or int(window) != window or window < 1:
        raise ValueError("window must be an integer >= 1, or None / 'all' for every later item, got %r" % (window,))
    return int(window)


def _check_directions(directions):
    if directions not in DIRECTIONS:
        raise ValueError("directions must be one of %s, got %r" % (", ".join(map(repr, DIRECTIONS)), directions))
    return directions


def _forward_pairs(tokens, lengths, window):
    """Yield ``(contexts, targets)``: each token with each of the next ``window`` tokens of its segment.

    One array pair per offset ``d = 1, 2, ...``: the tokens with at least ``d`` followers in their
    segment, and the token ``d`` places later.  ``window=None`` goes on to the end of every segment.
    """
    tokens = np.asarray(tokens)
    lengths = np.asarray(lengths, dtype=np.int64)
    followers = np.repeat(np.cumsum(lengths), lengths) - np.arange(len(tokens), dtype=np.int64) - 1
    active = np.flatnonzero(followers >= 1)
    offset = 1
    while len(active) and (window is None or offset <= window):
        yield tokens[active], tokens[active + offset]
        offset += 1
        active = active[followers[active] >= offset]


class _CountAccumulator:
    """Sums ``(row, column)`` occurrences into an ``n x n`` int64 CSR matrix, a bounded number at a time."""

    def __init__(self, n):
        self.n = n
        self.dense = n * n <= DENSE_CELLS
        self.total = np.zeros(n * n, dtype=np.int64) if self.dense else sp.csr_matrix((n, n), dtype=np.int64)
        self.pending = []
        self.n_pending = 0

    def add(self, rows, cols):
        if len(rows):
            self.pending.append(rows.astype(np.int64) * self.n + cols)
            self.n_pending += len(rows)
            if self.n_pending >= FLUSH_PAIRS:
                self._flush()

    def _flush(self):
        if not self.pending:
            return
        keys = np.concatenate(self.pending)
        self.pending, self.n_pending = [], 0
        if self.dense:
            self.total += np.bincount(keys, minlength=self.n * self.n)
        else:
            keys, counts = np.unique(keys, return_counts=True)
            self.total = self.total + sp.csr_matrix((counts.astype(np.int64), (keys // self.n, keys % self.n)),
                                                    shape=(self.n, self.n))

    def result(self):
        self._flush()
        if self.dense:
            return sp.csr_matrix(self.total.reshape(self.n, self.n))
        return self.total


def forward_pair_counts(tokens, lengths, n_items, window=DEFAULT_WINDOW, workers=1):
    """Count forward co-occurrences in segments of a token array.

    Parameters
    ----------
    tokens : numpy.ndarray of int
        Item ids ``0 <= id < n_items``, segment after segment.
    lengths : numpy.ndarray of int
        Length of each segment (a user timeline, a sentence); pairs never cross segments.
    n_items : int
        Number of items.
    window : int or None
        Each token is paired with the next ``window`` tokens of its segment; None: all later tokens.
    workers : int
        Threads: the segments are cut into runs of about equal tokens, counted on their own and added up
        (the same counts for any number).  Only when the counts are summed sparse (more than
        :data:`DENSE_CELLS` cells): a dense sum is one pass of ``bincount`` and would need an array a thread.

    Returns
    -------
    scipy.sparse.csr_matrix
        ``n_items x n_items`` int64 counts, rows = earlier item, columns = later item.
    """
    window = _check_window(window)
    tokens = np.asarray(tokens)
    lengths = np.asarray(lengths, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)])      # each segment's first token
    sparse = int(n_items) ** 2 > DENSE_CELLS
    threads = max(1, int(workers)) if sparse else 1
    parts = _segment_runs(starts, PARTS_PER_WORKER * threads) if sparse else [(0, len(lengths))]

    def count(run):
        first, last = run
        acc = _CountAccumulator(int(n_items))
        for rows, cols in _forward_pairs(tokens[starts[first]:starts[last]], lengths[first:last], window):
            acc.add(rows, cols)
        return acc.result()

    matrices = map_on_threads(count, parts, threads)
    total = matrices[0]
    for matrix in matrices[1:]:
        total = total + matrix
    return total


def _segment_runs(starts, parts):
    """``[(first, last), ...]``: runs of consecutive segments of about equal tokens, at most ``parts``
    (``starts``: each segment's first token, then the number of tokens)."""
    n = len(starts) - 1
    if n == 0:
        return [(0, 0)]
    cuts = np.searchsorted(starts[1:], np.linspace(0, starts[-1], parts + 1)[1:-1], side="right")
    bounds = np.unique(np.concatenate([[0], cuts, [n]]))
    return list(zip(bounds[:-1].tolist(), bounds[1:].tolist()))


def _count_matrix(matrix, what="matrix"):
    """``matrix`` as a canonical square int64 CSR matrix of non-negative integer counts."""
    if not sp.issparse(matrix):
        matrix = np.asarray(matrix)
        if matrix.ndim != 2:
            raise ValueError("%s must be 2-D (n_items x n_items), got shape %s" % (what, matrix.shape))
    else:
        check_sparse(matrix, what)
    m = sp.csr_matrix(matrix, copy=True)
    if m.shape[0] != m.shape[1]:
        raise ValueError("%s must be square (n_items x n_items: rows are context items, columns the items "
                         "after them), got shape %s" % (what, m.shape))
    m.sum_duplicates()
    data = m.data
    if data.dtype.kind not in "biuf":
        raise ValueError("%s must hold numbers, got dtype %s" % (what, data.dtype))
    bad = ~np.isfinite(data) | (data < 0) | (data != np.round(data)) if data.dtype.kind == "f" else data < 0
    if np.any(bad):
        k = int(np.argmax(bad))
        row = int(np.searchsorted(m.indptr, k, side="right") - 1)
        raise ValueError("%s must hold non-negative integer counts; found %r at row %d, column %d"
                         % (what, data[k].item(), row, int(m.indices[k])))
    m = m.astype(np.int64)
    m.eliminate_zeros()
    m.sort_indices()
    return m


# ---------------------------------------------------------------------------------------------- the counts
class PairCounts:
    """Counts of (context item, next item) pairs over one item index.

    Parameters
    ----------
    matrix : scipy.sparse matrix or 2-D array
        ``n_items x n_items`` non-negative integer counts; row = context item, column = next item.
    names : sequence of int or sequence of str, optional
        Distinct id of each item, all integers or all strings (default ``0, 1, ...``); they keep their type
        in ``ids`` and are spelt as strings in ``names``.
    item_counts : array-like of int, optional
        Occurrences of each item (default: the row sums, how often each item is a context).
    titles : sequence of (str or None), optional
        Display title of each item.
    window : int, 'all' or None, optional
        The forward window the pairs were counted with (None: not known).
    source : str, optional
        Where the pairs came from.
    directions : {"forward", "both"}
        Whether each pair was counted earlier -> later only, or both ways (see :meth:`from_timelines`).

    Attributes
    ----------
    matrix : scipy.sparse.csr_matrix
        Canonical int64 CSR matrix (sorted indices, no duplicates, no stored zeros).
    ids : list of int or list of str
        The item ids as given (the ids an :class:`~embkit.ItemEmbedding` trained on these counts answers with).
    names : list of str
        The ids as strings.
    """

    def __init__(self, matrix, names=None, item_counts=None, titles=None, window=None, source="",
                 directions="forward"):
        self.matrix = _count_matrix(matrix)
        n = self.matrix.shape[0]
        ids = list(range(n)) if names is None else list(names)
        if len(ids) != n:
            raise ValueError("names has %d entries for %d items" % (len(ids), n))
        try:
            self.ids = ItemIds(ids).values
        except ValueError as exc:
            raise ValueError(str(exc).replace("item ids", "item names")) from None
        self.names = [str(x) for x in self.ids]
        if item_counts is None:
            item_counts = np.asarray(self.matrix.sum(axis=1)).ravel()
        self.item_counts = np.asarray(item_counts, dtype=np.int64)
        if self.item_counts.shape != (n,):
            raise ValueError("item_counts must have one entry per item (%d), got shape %s"
                             % (n, self.item_counts.shape))
        self.titles = list(titles) if titles is not None else None
        if self.titles is not None and len(self.titles) != n:
            raise ValueError("titles has %d entries for %d items" % (len(self.titles), n))
        self.window = window
        self.source = source
        self.directions = _check_directions(directions)
        self._index = None

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_timelines(cls, timelines, window=DEFAULT_WINDOW, directions=DEFAULT_DIRECTIONS, workers=1):
        """Count each item of each timeline with the items that follow it (and, by default, the other way).

        Parameters
        ----------
        timelines : embkit.items.timelines.Timelines
        window : int, None or 'all'
            Pair each item with the next ``window`` items of its timeline; None or ``'all'``: with every
            later item ("seen together in a user timeline", the paper's wording, earlier -> later).
            The default 3 matches the window of the paper's text experiment and keeps the pairs those of
            next-item prediction; it also keeps their number linear in the number of ratings (at most 3
            per rating: about 30M for ml-20m at >= 4 stars), where whole timelines give ``L(L-1)/2``
            pairs per user of ``L`` items -- of the order of billions for ml-20m, dominated by the
            heaviest users, whose ratings are often entered in bulk with near-identical timestamps.
        directions : {"both", "forward"}
            ``"both"`` (the default) counts each pair ``(earlier, later)`` also as ``(later, earlier)``, so
            the matrix is symmetric: the recommender learns from what came before an item as well as from
            what came after it.  ``"forward"`` keeps the earlier -> later pairs only (the paper's setting,
            and the one whose held-out pairs are next items).
        workers : int
            Threads that count (:func:`forward_pair_counts`; the same counts for any number).

        Returns
        -------
        PairCounts
            Item ids are the raw (integer) item ids, item counts the ratings of each item.
        """
        window = _check_window(window)
        directions = _check_directions(directions)
        matrix = forward_pair_counts(timelines.items, timelines.lengths, timelines.n_items, window, workers)
        if directions == "both":
            matrix = matrix + matrix.T
        counts = cls(matrix, timelines.item_ids, timelines.item_counts, timelines.titles,
                     "all" if window is None else window, timelines.source, directions)
        logger.info("%s: %d pair occurrences, %d distinct pairs of %d items (window %s, %s)", timelines.source,
                    counts.total, counts.nnz, counts.n_items, counts.window, counts.directions)
        return counts

    @classmethod
    def from_matrix(cls, matrix, names=None, item_counts=None, titles=None):
        """Counts from any scipy.sparse matrix or 2-D array (see the class parameters)."""
        return cls(matrix, names, item_counts, titles, source="matrix")

    @classmethod
    def from_text(cls, source, vocab_size=DEFAULT_VOCAB_SIZE, window=DEFAULT_WINDOW, max_sentence_length=None):
        """Forward co-occurrences of the ``vocab_size`` most frequent words of a corpus.

        Out-of-vocabulary tokens are dropped *before* the windows are formed (as word2vec does), so a
        window can reach over them; windows never cross a line (sentence) boundary.

        Parameters
        ----------
        source : str, os.PathLike or iterable of list of str
            A file, folder or URL read by :class:`embkit.text.corpus.TextCorpus`, a corpus name of
            :func:`embkit.text.corpora.resolve_corpus` (``'text8'``, ``'enwiki-sample'``), or sentences.
        vocab_size : int
            Keep the most frequent words (ties: first seen first).
        window : int, None or 'all'
            Pair each word with the next ``window`` in-vocabulary words of its sentence.
        max_sentence_length : int, optional
            Longer lines are cut into pieces (default :data:`embkit.text.corpus.MAX_SENTENCE_LENGTH`).

        Returns
        -------
        PairCounts
            Item names are the words, most frequent first; item counts their corpus counts.
        """
        from embkit.text.corpus import MAX_SENTENCE_LENGTH, as_corpus
        from embkit.text.corpora import resolve_corpus
        from embkit.text.vocab import Vocab
        if int(vocab_size) < 1:
            raise ValueError("vocab_size must be >= 1, got %r" % (vocab_size,))
        vocab_size = int(vocab_size)
        window = _check_window(window)
        if isinstance(source, (str, os.PathLike)):
            source = resolve_corpus(source)
        corpus = as_corpus(sentences=source, max_sentence_length=max_sentence_length or MAX_SENTENCE_LENGTH)
        full = Vocab.build(corpus, min_count=1)
        vocab = Vocab(full.index_to_key[:vocab_size], full.counts[:vocab_size], raw_words=full.raw_words)
        del full
        acc = _CountAccumulator(len(vocab))
        for chunk in vocab.encode(corpus):
            lengths = np.diff(chunk.ends, prepend=0)
            for rows, cols in _forward_pairs(chunk.tokens, lengths, window):
                acc.add(rows, cols)
        name = os.fspath(source) if isinstance(source, (str, os.PathLike)) else type(source).__name__
        return cls(acc.result(), vocab.index_to_key, vocab.counts, None, "all" if window is None else window, name)

    @classmethod
    def from_triples(cls, path, names=None, ids="auto"):
        """Read ``i j count`` lines (whitespace, tab or comma separated; ``#`` comments, blank lines skipped).

        Repeated ``(i, j)`` lines are summed.

        Parameters
        ----------
        path : str or os.PathLike
            The file (``.gz`` and ``.bz2`` are decompressed).
        names : sequence of int or sequence of str, optional
            The item index (e.g. another count's ``ids``): every id of the file must be one of these, spelt
            as a string; the counts' ids are these, with their type.
        ids : {'auto', 'index', 'name'}
            Without ``names``: 'index' takes ids as integer indices ``0..n-1`` (``n`` = largest + 1; the
            counts' ids are these integers); 'name' takes them as string names, numbered by first
            appearance; 'auto' is 'index' when every id is a non-negative integer and the indices are dense
            (the largest below 16 times the number of distinct ids plus 2**20), else 'name'; 'index' refuses
            indices that sparse.

        Raises
        ------
        ValueError
            A line without exactly three fields, a count that is not a non-negative integer, an id
            that is not among ``names`` or not an integer with ``ids='index'``; the file and line are named.
        """
        from embkit.items.triples import read_triples
        rows, cols, counts, item_names = read_triples(path, names, ids)
        n = len(item_names)
        matrix = sp.csr_matrix((counts, (rows, cols)), shape=(n, n), dtype=np.int64)
        return cls(matrix, item_names, source=os.fspath(path))

    def with_counts(self, data, source=None):
        """The same items and stored pairs with other counts, ``data`` (one per stored pair, zeros dropped)."""
        m = self.matrix
        matrix = sp.csr_matrix((np.asarray(data, dtype=np.int64), m.indices.copy(), m.indptr.copy()),
                               shape=m.shape)
        return PairCounts(matrix, self.ids, self.item_counts, self.titles, self.window,
                          self.source if source is None else source, self.directions)

    # ------------------------------------------------------------------ views
    @property
    def n_items(self):
        return self.matrix.shape[0]

    @property
    def nnz(self):
        """Distinct pairs."""
        return self.matrix.nnz

    @property
    def total(self):
        """Pair occurrences (the sum of the counts)."""
        return int(self.matrix.data.sum())

    def __repr__(self):
        return "PairCounts(%d items, %d pair occurrences, %d distinct pairs, window %s%s, from %r)" % (
            self.n_items, self.total, self.nnz, self.window,
            " both ways" if self.directions == "both" else "", self.source)

    def index(self, name):
        """Dense id of an item name (KeyError if unknown)."""
        if self._index is None:
            self._index = {x: i for i, x in enumerate(self.names)}
        return self._index[str(name)]

    def label(self, item):
        """Title of a dense item id, or its name when it has no title."""
        title = self.titles[item] if self.titles is not None else None
        return title if title is not None else self.names[item]

    def context_counts(self):
        """Pair occurrences of each item as a context (the row sums)."""
        return np.asarray(self.matrix.sum(axis=1)).ravel()

    def target_counts(self):
        """Pair occurrences of each item as a target (the column sums)."""
        return np.asarray(self.matrix.sum(axis=0)).ravel()

    def _expanded(self, dtype):
        m = self.matrix
        rows = np.repeat(np.arange(m.shape[0], dtype=dtype), np.diff(m.indptr))
        return np.repeat(rows, m.data), np.repeat(m.indices.astype(dtype), m.data)

    def pairs(self):
        """Every pair occurrence as a ``(total, 2)`` int64 array of (context, target) rows.

        A pair counted ``c`` times appears ``c`` times, rows in (context, target) order; this is the
        ``pairs`` argument of :func:`embkit.evaluation.evaluate_ranking`.
        """
        contexts, targets = self._expanded(np.int64)
        return np.stack([contexts, targets], axis=1)

    def training_arrays(self, shuffle=False, seed=0):
        """Every pair occurrence as two int32 arrays ``(contexts, targets)``, for a training driver.

        Parameters
        ----------
        shuffle : bool
            Put the occurrences in a random order (otherwise sorted by context, then target).
        seed : int or None
            Seed of the shuffle.
        """
        contexts, targets = self._expanded(np.int32)
        if shuffle:
            order = np.random.default_rng(seed).permutation(len(contexts))
            contexts, targets = contexts[order], targets[order]
        return contexts, targets

    def split(self, fractions=(0.7, 0.1, 0.2), seed=0):
        """:func:`~embkit.items.pair_split.split_pairs` of these counts."""
        return split_pairs(self, fractions, seed)

    def to_triples(self, path):
        """Write ``context<TAB>target<TAB>count`` lines with the item names.

        ``PairCounts.from_triples(path, names=counts.ids)`` reads them back into the same item index.
        """
        bad = next((x for x in self.names if not x or re.search(r"[\s,#]", x)), None)
        if bad is not None:
            raise ValueError("item name %r cannot be written to a triple file (empty, or holds whitespace, ',' or "
                             "'#')" % bad)
        contexts, targets, counts = sp.find(self.matrix)
        order = np.lexsort((targets, contexts))
        names = self.names
        with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as fh:
            fh.write("# context\ttarget\tcount\n")
            fh.writelines("%s\t%s\t%d\n" % (names[i], names[j], c)
                          for i, j, c in zip(contexts[order].tolist(), targets[order].tolist(),
                                             counts[order].tolist()))
