"""Leave-one-out splits of user timelines: the last item of each user for test, the one before it for
validation, the rest for training.

This is the protocol of the leave-one-out evaluations people report (RecBole, SASRec, BERT4Rec): a user
with ``L`` items in time order gives the test pair (items ``1..L-1`` -> item ``L``) and, with validation, the
validation pair (items ``1..L-2`` -> item ``L-1``); the training timelines keep the items before the held-out
ones.  Users with too few items to hold one out stay in the training timelines only.  The held-out sets
keep the timelines' item index and the raw ids of its items, so any model that knows the ids can be scored
on them (:meth:`embkit.ItemEmbedding.evaluate`) or asked for their recommendations (``history_ids``).

Examples
--------
>>> from embkit.items.timelines import load_timelines
>>> split = leave_one_out(load_timelines("ml-100k"))        # doctest: +SKIP
>>> counts = PairCounts.from_timelines(split.train)          # doctest: +SKIP
>>> model.fit(counts, validation=split.validation).evaluate(split.test)   # doctest: +SKIP
"""
from dataclasses import dataclass
from typing import Optional

import numpy as np

from embkit.items.timelines import Timelines

__all__ = ["HeldOut", "LeaveOneOut", "leave_one_out"]


class HeldOut:
    """One held-out item per user and the user's history before it.

    Parameters
    ----------
    users : numpy.ndarray
        Raw id of each user.
    items : numpy.ndarray of int
        Item rows (of the timelines' index) of every history, one after the other, oldest first.
    offsets : numpy.ndarray of int64
        ``items[offsets[u]:offsets[u + 1]]`` is user ``u``'s history (``n_users + 1`` entries).
    targets : numpy.ndarray of int
        The held-out item row of each user.
    item_ids : numpy.ndarray
        Raw id of each item row.
    name : str
        ``"validation"`` or ``"test"`` (used in reports).
    """

    def __init__(self, users, items, offsets, targets, item_ids, name="held-out"):
        self.users = np.asarray(users)
        self.items = np.asarray(items, dtype=np.int64)
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.targets = np.asarray(targets, dtype=np.int64)
        self.item_ids = np.asarray(item_ids)
        self.name = name
        if len(self.offsets) != len(self.users) + 1 or len(self.targets) != len(self.users):
            raise ValueError("a held-out set needs one target and one history per user")

    def __len__(self):
        return len(self.users)

    def __repr__(self):
        return "HeldOut(%s: %d users, %d history items)" % (self.name, len(self), len(self.items))

    def histories(self):
        """Item rows of each history (list of arrays)."""
        return np.split(self.items, self.offsets[1:-1])

    def history_ids(self):
        """Raw item ids of each history, oldest first (list of arrays): ``recommend_many``'s input."""
        return [self.item_ids[h] for h in self.histories()]

    def target_ids(self):
        """Raw id of each user's held-out item."""
        return self.item_ids[self.targets]


@dataclass(frozen=True)
class LeaveOneOut:
    """The training timelines and the held-out sets of :func:`leave_one_out`."""

    train: Timelines
    validation: Optional[HeldOut]
    test: HeldOut


def _held_out(timelines, users, cut, name):
    """Each of ``users``' item ``cut`` places from the end of its timeline, and the items before it."""
    starts = timelines.offsets[users]
    ends = timelines.offsets[users + 1] - cut           # the held-out position
    lengths = ends - starts
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    positions = np.repeat(starts - offsets[:-1], lengths) + np.arange(offsets[-1])
    return HeldOut(timelines.users[users], timelines.items[positions], offsets, timelines.items[ends],
                   timelines.item_ids, name)


def leave_one_out(timelines, validation=True):
    """Split timelines by holding out each user's last item (and, with ``validation``, the one before).

    Parameters
    ----------
    timelines : embkit.items.timelines.Timelines
    validation : bool
        Also hold out each user's second-to-last item as a validation set (users with at least 3 items).

    Returns
    -------
    LeaveOneOut
        ``train``: the timelines without the held-out items (same users and item index; users with a
        single item keep it); ``validation`` (None without it) and ``test``: :class:`HeldOut` sets of the
        users with enough items (2 for test, 3 for validation).

    Raises
    ------
    ValueError
        No user has two items.
    """
    lengths = timelines.lengths
    test_users = np.flatnonzero(lengths >= 2)
    if not len(test_users):
        raise ValueError("no user of %s has two items: nothing to hold out" % (timelines.source or "the timelines",))
    val_users = np.flatnonzero(lengths >= 3) if validation else None
    held = (lengths >= 2).astype(np.int64) + ((lengths >= 3) & bool(validation))
    keep = np.ones(len(timelines.items), dtype=bool)
    for cut in (1, 2):
        users = np.flatnonzero(held >= cut)
        keep[timelines.offsets[users + 1] - cut] = False
    train_items = timelines.items[keep]
    train = Timelines(train_items, np.concatenate([[0], np.cumsum(lengths - held)]), timelines.users,
                      timelines.item_ids, np.bincount(train_items, minlength=timelines.n_items), timelines.titles,
                      timelines.source + " [train]", timelines.min_rating)
    return LeaveOneOut(train=train,
                       validation=None if val_users is None else _held_out(timelines, val_users, 2, "validation"),
                       test=_held_out(timelines, test_users, 1, "test"))
