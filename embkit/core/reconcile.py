"""Reconciling table replicas: the rows a replica changed, their merge over replicas, and the update back.

A replica trains its own copy of ``W_in`` and ``W_out`` from the tables of the last reconciliation (its
``base``).  :func:`changed_rows` finds the rows it changed and their deltas; :func:`merge` combines the
deltas of every replica into the new global rows; :func:`apply_update` writes them into a table (and its
base), after which every replica holds the global tables again.

Two merges are offered (``mode``):

* ``"average"`` (default): a row's new value is the old one plus the **mean of the deltas of the replicas
  that changed it**.  A rare word trained on one worker keeps its whole update; a frequent word trained on
  every worker moves by the average step, as in model averaging.
* ``"sum"``: the deltas are added (what a parameter server that applies every push does); with ``n``
  replicas a frequent row takes up to ``n`` steps at once.
"""
import numpy as np

MODES = ("average", "sum")


class RowDelta:
    """The rows of one table a replica changed: ``ids`` (int32, increasing) and ``values`` (float32,
    ``len(ids) x dim``), the deltas; or, for an update, the new rows."""

    __slots__ = ("ids", "values")

    def __init__(self, ids, values):
        self.ids = ids
        self.values = values

    @property
    def nbytes(self):
        """Bytes on the wire (ids and values)."""
        return int(self.ids.nbytes + self.values.nbytes)

    def __len__(self):
        return len(self.ids)


def changed_rows(table, base):
    """:class:`RowDelta` of the rows where ``table`` differs from ``base`` (``table - base`` there)."""
    ids = np.flatnonzero(np.any(table != base, axis=1)).astype(np.int32)
    return RowDelta(ids, table[ids] - base[ids])


def merge(current, deltas, mode="average"):
    """New values of the rows any replica changed.

    Parameters
    ----------
    current : ndarray (n, dim)
        The table of the last reconciliation (not modified).
    deltas : list of RowDelta
        One per replica.
    mode : {"average", "sum"}
        See the module docstring.

    Returns
    -------
    RowDelta
        The changed rows with their new values (an update for :func:`apply_update`).
    """
    if mode not in MODES:
        raise ValueError("mode must be one of %s, got %r" % (", ".join(MODES), mode))
    deltas = [d for d in deltas if len(d)]
    if not deltas:
        return RowDelta(np.zeros(0, np.int32), np.zeros((0, current.shape[1]), np.float32))
    if len(deltas) == 1:
        ids = deltas[0].ids
        return RowDelta(ids, current[ids] + deltas[0].values)
    total = np.zeros(current.shape, dtype=np.float32)
    seen = np.zeros(current.shape[0], dtype=np.int32)
    for d in deltas:            # ids are unique within one delta: fancy-indexed += is exact
        total[d.ids] += d.values
        seen[d.ids] += 1
    ids = np.flatnonzero(seen).astype(np.int32)
    step = total[ids]
    if mode == "average":
        step /= seen[ids, None]
    return RowDelta(ids, current[ids] + step)


def apply_update(update, *tables):
    """Write the rows of ``update`` into every table given (the replica's table and its base)."""
    for table in tables:
        if len(update):
            table[update.ids] = update.values
