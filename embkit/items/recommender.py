"""The queries of a trained :class:`~embkit.ItemEmbedding`, by item id: next items for user histories,
similar items, scores, and the mapping between ids and table rows.

Every query takes the ids of the data and answers with them (``(ids, scores)`` arrays, best first), as
implicit's ``recommend`` and ``similar_items`` do; rows of the tables appear only through
:meth:`ItemQueries.item_index` and :meth:`ItemQueries.item_ids`.

A history is scored as described in :mod:`embkit.items.histories`: the recency-weighted sum of its items'
context vectors against every target vector, plus, when the model's ``blend_weight`` is above zero, that
weight times the log of the history's recency-weighted co-occurrence counts
(:mod:`embkit.items.count_blend`); ``similar_items`` compares vectors only.  ``N`` larger than the catalogue
is clipped to it; a single recommendation returns fewer than ``N`` items when fewer are left after filtering,
and ``recommend_many`` pads such rows with score ``-inf`` (id ``-1`` for integer ids, ``''`` for string
ids).
"""
import numpy as np

from embkit.core.checks import POSITIVE_INT, check_param
from embkit.items.count_blend import count_scores
from embkit.items.histories import history_matrix
from embkit.items.item_ids import is_single_id
from embkit.items.top_items import top_items

__all__ = ["ItemQueries", "SPACES", "SIMILAR_SPACE"]

#: The vector spaces of ``similar_items`` and ``keyed_vectors``.
SPACES = ("context", "target", "both")
#: The space ``similar_items`` uses by default: the sum of the context and target vectors (see RESULTS.md).
SIMILAR_SPACE = "both"


def _count(N, topn):
    """``N``, or its old name ``topn`` when given; checked."""
    if topn is not None:
        N = topn
    check_param("N", N, *POSITIVE_INT)
    return N


class ItemQueries:
    """Queries by item id (mixed into :class:`~embkit.ItemEmbedding`; reads its tables, ``_ids``,
    ``recency``, ``blend_weight`` and ``pair_counts``)."""

    # ------------------------------------------------------------------ ids and rows
    @property
    def items(self):
        """The item ids, in row order (ints stay ints, strings stay strings); None before training."""
        return None if self._ids is None else self._ids.values

    def item_index(self, items):
        """Table rows of one id (an int) or of a sequence of ids (an int64 array); KeyError naming an
        unknown id."""
        self._check_fitted()
        return self._ids.rows(items)

    def item_ids(self, rows):
        """Ids of one table row or of an array of rows (IndexError outside the table)."""
        self._check_fitted()
        return self._ids.ids(rows)

    def _history_rows(self, history, position=None):
        """Rows of a history given as one id or a sequence of ids; ValueError for an empty one."""
        rows = np.atleast_1d(self.item_index(history))
        if not len(rows):
            where = "" if position is None else " %d" % position
            raise ValueError("history%s is empty: give at least one item id (most recent last)" % where)
        return rows

    def _user_queries(self, histories):
        """Query vectors, seen items and the count blend's scores (``extra`` of ``top_items``) of lists of
        history rows."""
        weights, seen = history_matrix(histories, len(self._ids), self.recency)
        return np.asarray(weights @ self.context_vectors, dtype=np.float32), seen, self._count_part(weights)

    def _count_part(self, weights, blend_weight=None):
        """``part(start, stop)``: the count blend's scores of the history weights ``weights[start:stop]``, with
        ``blend_weight`` (default: the model's); None when the weight is zero."""
        blend_weight = self.blend_weight if blend_weight is None else blend_weight
        if not blend_weight:
            return None
        return lambda start, stop: count_scores(weights[start:stop], self.pair_counts, blend_weight)

    # ------------------------------------------------------------------ next items
    def scores(self, history):
        """Score of every item (in the order of ``items``) as the next item after ``history``.

        ``history`` is one id or a sequence of ids, oldest first; see :mod:`embkit.items.histories`.
        """
        self._check_fitted()
        self._check_target_vectors()
        vectors, _, extra = self._user_queries([self._history_rows(history)])
        scores = self.target_vectors[:len(self._ids)] @ vectors[0]
        return scores if extra is None else scores + extra(0, 1)[0]

    def recommend(self, history, N=10, filter_seen=True, exclude=None, topn=None):
        """The ``N`` most likely next items after a user's history: ``(ids, scores)``, best first.

        Parameters
        ----------
        history : id or sequence of ids
            The user's items, oldest first and most recent last; one id is a history of one item.
        N : int
            Items wanted, clipped to the number of items; fewer come back when fewer are left after
            filtering.
        filter_seen : bool
            Leave the history's items out.
        exclude : sequence of ids, optional
            More items to leave out.
        topn : int, optional
            Old name of ``N``.

        Returns
        -------
        ids : numpy.ndarray
            Item ids (the type of the model's ids).
        scores : numpy.ndarray of float32
        """
        N = _count(N, topn)
        self._check_fitted()
        ids, scores = self._recommend_rows([self._history_rows(history)], N, filter_seen, exclude, None)
        keep = scores[0] > -np.inf
        return ids[0][keep], scores[0][keep]

    def recommend_many(self, histories, N=10, filter_seen=True, exclude=None, workers=None):
        """The next items of many users at once (blocked BLAS products, top-N on ``workers`` threads).

        Parameters
        ----------
        histories : sequence of (id or sequence of ids)
            One history per user, as :meth:`recommend` takes it.
        N : int
            Items per user, clipped to the number of items.
        filter_seen, exclude :
            As :meth:`recommend`.
        workers : int, optional
            Threads of the top-N selection (default: every CPU).

        Returns
        -------
        ids : numpy.ndarray (users, N)
            Item ids, best first; a user with fewer than ``N`` items left is padded with ``-1`` (integer
            ids) or ``''`` (string ids).
        scores : numpy.ndarray of float32 (users, N)
            Their scores, ``-inf`` for the padding.

        Raises
        ------
        KeyError
            An id the model does not know (named).
        ValueError
            An empty history (its position is named), or ``N`` below 1.
        """
        check_param("N", N, *POSITIVE_INT)
        self._check_fitted()
        if is_single_id(histories):
            raise TypeError("histories must be a sequence of histories (one per user); for one user use "
                            "recommend()")
        rows = [self._history_rows(h, position=u) for u, h in enumerate(histories)]
        if not rows:
            raise ValueError("no histories given")
        return self._recommend_rows(rows, N, filter_seen, exclude, workers)

    def _recommend_rows(self, rows, N, filter_seen, exclude, workers):
        """``recommend_many`` of histories given as lists of rows."""
        self._check_target_vectors()
        vectors, seen, extra = self._user_queries(rows)
        skip = None if exclude is None else np.atleast_1d(self.item_index(list(exclude)))
        found, scores = top_items(vectors, self.target_vectors[:len(self._ids)], min(N, len(self._ids)),
                                  seen if filter_seen else None, skip, workers, extra)
        return self._padded_ids(found), scores

    def _padded_ids(self, rows):
        """Ids of an array of rows in which -1 marks padding."""
        ids = self._ids.array[np.maximum(rows, 0)]
        ids[rows < 0] = -1 if self._ids.kind is int else ""
        return ids

    # ------------------------------------------------------------------ similar items
    def _space_vectors(self, space):
        """The item vectors of ``space`` (one of :data:`SPACES`)."""
        self._check_fitted()
        if space not in SPACES:
            raise ValueError("space must be one of %s, got %r" % (", ".join(map(repr, SPACES)), space))
        n = len(self._ids)
        if space == "context":
            return self.context_vectors
        self._check_target_vectors()
        return self.target_vectors[:n] if space == "target" else self.context_vectors + self.target_vectors[:n]

    def similar_items(self, item, N=10, space=SIMILAR_SPACE, topn=None):
        """The ``N`` items whose vectors are closest to ``item``'s by cosine: ``(ids, similarities)``,
        best first, the item itself left out.

        ``space`` is ``"both"`` (the sum of the context and target vectors, the default), ``"context"``
        (input vectors) or ``"target"`` (output vectors); ``N`` is clipped to the other items' number and
        ``topn`` is its old name.  An unknown id is a KeyError naming it.
        """
        N = _count(N, topn)
        if not is_single_id(item):
            raise TypeError("similar_items takes one item id, got %r" % (item,))
        vectors = self._space_vectors(space)
        row = self.item_index(item)
        norms = np.linalg.norm(vectors, axis=1)
        unit = vectors / np.where(norms > 0, norms, 1.0)[:, None]
        found, scores = top_items(unit[row:row + 1], unit, min(N, len(unit)), exclude=np.array([row]))
        keep = scores[0] > -np.inf
        return self._ids.array[found[0][keep]], scores[0][keep]

    def keyed_vectors(self, space="context"):
        """The item vectors of ``space`` as a gensim ``KeyedVectors`` keyed by item id."""
        from gensim.models import KeyedVectors
        vectors = self._space_vectors(space)
        kv = KeyedVectors(self.vector_size, count=0, dtype=np.float32)
        kv.add_vectors(list(self._ids.values), vectors)
        return kv

    @property
    def wv(self):
        """Context vectors as a gensim ``KeyedVectors`` keyed by item id (as ``Word2Vec.wv``)."""
        return self.keyed_vectors("context")
