"""User timelines: each user's items in time order, over a dense item index.

The item index numbers the rated items ``0..n_items-1`` by decreasing number of ratings (ties by
increasing raw id), so id 0 is the most popular item, as in a word2vec vocabulary; the raw ids are kept
to name the items, and so are the titles when the dataset has a title file.

A user's items are ordered by timestamp; ratings with the same timestamp keep their order in the file
(the sort is stable).  Users with a single item are kept and counted: they produce no pairs.
"""
import logging
from dataclasses import dataclass

import numpy as np

logger = logging.getLogger(__name__)

__all__ = ["Timelines", "TimelineStats", "load_timelines"]


@dataclass(frozen=True)
class TimelineStats:
    """Sizes of a :class:`Timelines`; ``str()`` is a one-line summary."""

    users: int
    items: int
    events: int
    single_item_users: int
    min_length: int
    median_length: float
    mean_length: float
    max_length: int

    def __str__(self):
        return ("%d users, %d items, %d events; items per user: min %d, median %g, mean %.1f, max %d; "
                "%d users with a single item (no pairs)"
                % (self.users, self.items, self.events, self.min_length, self.median_length, self.mean_length,
                   self.max_length, self.single_item_users))


class Timelines:
    """Each user's items in time order.

    Parameters
    ----------
    items : numpy.ndarray of int32
        Dense item ids of all users' timelines, one user after the other.
    offsets : numpy.ndarray of int64
        ``items[offsets[u]:offsets[u + 1]]`` is the timeline of user ``u`` (length ``n_users + 1``).
    users : numpy.ndarray
        Raw id of each user.
    item_ids : numpy.ndarray
        Raw id of each dense item id.
    item_counts : numpy.ndarray of int64
        Events of each item.
    titles : list of (str or None), optional
        Title of each dense item id.
    source : str, optional
        Where the ratings came from.
    min_rating : float, optional
        The threshold the ratings were loaded with.
    """

    def __init__(self, items, offsets, users, item_ids, item_counts, titles=None, source="", min_rating=None):
        self.items = np.asarray(items, dtype=np.int32)
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.users = np.asarray(users)
        self.item_ids = np.asarray(item_ids)
        self.item_counts = np.asarray(item_counts, dtype=np.int64)
        self.titles = list(titles) if titles is not None else None
        self.source = source
        self.min_rating = min_rating
        n_items = len(self.item_ids)
        if len(self.offsets) != len(self.users) + 1 or self.offsets[-1] != len(self.items):
            raise ValueError("offsets must have n_users + 1 = %d entries ending at len(items) = %d"
                             % (len(self.users) + 1, len(self.items)))
        if len(self.items) and (self.items.min() < 0 or self.items.max() >= n_items):
            raise ValueError("item ids must lie in [0, %d) (one per entry of item_ids)" % n_items)
        if len(self.item_counts) != n_items or (self.titles is not None and len(self.titles) != n_items):
            raise ValueError("item_counts and titles must have one entry per item (%d)" % n_items)

    @classmethod
    def from_ratings(cls, ratings):
        """Build the timelines of :class:`~embkit.items.ratings.Ratings` (already thresholded).

        Parameters
        ----------
        ratings : embkit.items.ratings.Ratings

        Returns
        -------
        Timelines
        """
        n = len(ratings.user)
        if n == 0:
            raise ValueError("no ratings in %s: nothing to build timelines from" % (ratings.source,))
        # two stable sorts: by time, then by user, so equal timestamps keep the file order
        order = np.argsort(ratings.timestamp, kind="stable")
        order = order[np.argsort(ratings.user[order], kind="stable")]
        users, starts = np.unique(ratings.user[order], return_index=True)
        offsets = np.append(starts, n).astype(np.int64)
        raw_ids, inverse, counts = np.unique(ratings.item, return_inverse=True, return_counts=True)
        rank = np.lexsort((raw_ids, -counts))  # most rated first, ties by raw id
        dense = np.empty(len(rank), dtype=np.int32)
        dense[rank] = np.arange(len(rank), dtype=np.int32)
        items = dense[inverse.ravel()[order]]
        item_ids = raw_ids[rank]
        titles = None
        if ratings.titles:
            titles = [ratings.titles.get(int(i)) for i in item_ids]
        timelines = cls(items, offsets, users, item_ids, counts[rank], titles, ratings.source, ratings.min_rating)
        logger.info("%s: %s", ratings.source, timelines.stats())
        return timelines

    def __len__(self):
        return len(self.users)

    def __getitem__(self, user):
        """Dense item ids of the ``user``-th timeline (0-based position, not raw id), in time order."""
        if not -len(self) <= user < len(self):
            raise IndexError("user %d out of range for %d timelines" % (user, len(self)))
        user %= len(self)
        return self.items[self.offsets[user]:self.offsets[user + 1]]

    def __repr__(self):
        return "Timelines(%s, from %r)" % (self.stats(), self.source)

    @property
    def n_users(self):
        return len(self.users)

    @property
    def n_items(self):
        return len(self.item_ids)

    @property
    def n_events(self):
        return len(self.items)

    @property
    def lengths(self):
        """Items of each timeline."""
        return np.diff(self.offsets)

    @property
    def names(self):
        """Raw item ids as strings, one per dense id (the item names of pair counts)."""
        return [str(i) for i in self.item_ids.tolist()]

    def label(self, item):
        """Title of a dense item id, or its raw id when it has no title."""
        title = self.titles[item] if self.titles is not None else None
        return title if title is not None else str(self.item_ids[item])

    def n_pairs(self, window=3):
        """Forward pairs the timelines hold: each item with the next ``window`` items (None: all later ones)."""
        lengths = self.lengths
        all_pairs = lengths * (lengths - 1) // 2
        if window is None:
            return int(all_pairs.sum())
        w = int(window)
        return int(np.where(lengths - 1 <= w, all_pairs, w * lengths - w * (w + 1) // 2).sum())

    def stats(self):
        """:class:`TimelineStats` of these timelines."""
        lengths = self.lengths
        return TimelineStats(users=self.n_users, items=self.n_items, events=self.n_events,
                             single_item_users=int((lengths == 1).sum()), min_length=int(lengths.min()),
                             median_length=float(np.median(lengths)), mean_length=float(lengths.mean()),
                             max_length=int(lengths.max()))


def load_timelines(name_or_path, min_rating="default", **kwargs):
    """Timelines of a registered dataset name or a rating path.

    Parameters
    ----------
    name_or_path : str, os.PathLike or list
        Passed through :func:`embkit.items.datasets.resolve_ratings` (an existing path wins, else a
        registered name such as ``'ml-100k'``, downloaded on first use).
    min_rating : float, None or 'default'
        See :func:`embkit.items.ratings.load_ratings`.
    **kwargs
        More arguments of :func:`embkit.items.ratings.load_ratings`.

    Returns
    -------
    Timelines
    """
    from embkit.items.datasets import resolve_ratings
    from embkit.items.ratings import load_ratings
    path = name_or_path if isinstance(name_or_path, (list, tuple)) else resolve_ratings(name_or_path)
    return Timelines.from_ratings(load_ratings(path, min_rating=min_rating, **kwargs))
