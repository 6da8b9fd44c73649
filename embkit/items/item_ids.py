"""The ids of a model's items, and the one mapping between those ids and the rows of its tables.

Ids keep the type of the data: integers (MovieLens and Netflix movie ids, or row numbers when the data had
no names) stay ``int``, names stay ``str``; one model holds ids of one type.  Rows are positions in the
tables and appear only through :meth:`ItemIds.rows` and :meth:`ItemIds.ids`.  An unknown id is a
``KeyError`` that names it (and says so when the same id exists as the other type, ``'50'`` against ``50``).

Examples
--------
>>> ids = ItemIds([50, 181, 7])
>>> ids.rows([7, 50]).tolist(), ids.ids([2, 0]).tolist()
([2, 0], [7, 50])
>>> ids.rows("50")
Traceback (most recent call last):
...
KeyError: "unknown item '50': the item ids are int (did you mean 50?)"
"""
import numbers

import numpy as np

__all__ = ["ItemIds", "is_single_id"]

#: Name of the array that keeps integer ids (with their type) in a model file.
SAVED_ARRAY = "item_ids"


def is_single_id(value):
    """Whether ``value`` is one id (anything but a sequence of ids: a str is one id) rather than several."""
    if isinstance(value, np.ndarray):
        return value.ndim == 0
    return isinstance(value, (str, bytes)) or not hasattr(value, "__iter__")


def _plain(value):
    """An id as a Python ``int`` or ``str`` (numpy scalars included); None for anything else."""
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, str):
        return str(value)
    return None


class ItemIds:
    """The distinct ids of ``n`` items, in row order.

    Parameters
    ----------
    ids : sequence of int or sequence of str
        One id per row; all of one type, distinct.

    Attributes
    ----------
    kind : type
        ``int`` or ``str``.
    array : numpy.ndarray
        The ids as an int64 or unicode array (what the query methods return).
    """

    def __init__(self, ids):
        raw = ids.tolist() if isinstance(ids, np.ndarray) else list(ids)
        if not raw:
            raise ValueError("no items: the item ids are empty")
        values = [_plain(x) for x in raw]
        for x, v in zip(raw, values):
            if v is None:
                raise ValueError("item ids must be integers or strings, got %r (%s)" % (x, type(x).__name__))
        kinds = {type(v) for v in values}
        if len(kinds) > 1:
            raise ValueError("item ids must all be integers or all strings, got both (e.g. %r and %r)"
                             % (next(v for v in values if isinstance(v, int)),
                                next(v for v in values if isinstance(v, str))))
        self.kind = kinds.pop()
        self.values = values
        self._lookup = {v: row for row, v in enumerate(values)}
        if len(self._lookup) != len(values):
            seen = set()
            twice = next(v for v in values if v in seen or seen.add(v))
            raise ValueError("item ids must be distinct; %r appears more than once" % (twice,))
        self.array = np.array(values, dtype=np.int64 if self.kind is int else str)
        self._sorted = None

    def __len__(self):
        return len(self.values)

    def __eq__(self, other):
        return isinstance(other, ItemIds) and self.kind is other.kind and self.values == other.values

    def row(self, item):
        """The row of one id; KeyError naming an unknown id."""
        key = _plain(item)
        if type(key) is not self.kind or key not in self._lookup:
            raise KeyError(self._unknown(item, key))
        return self._lookup[key]

    def _unknown(self, item, key):
        """The message of an unknown id: names it, and the id of the other type it may have meant."""
        message = "unknown item %r" % (item,)
        other = None
        if isinstance(key, int) and self.kind is str:
            other = str(key)
        elif isinstance(key, str) and self.kind is int and key.strip().lstrip("-").isdigit():
            other = int(key)
        if other in self._lookup:
            message += ": the item ids are %s (did you mean %r?)" % (self.kind.__name__, other)
        return message

    def rows(self, items):
        """Rows of one id (an int) or of a sequence of ids (an int64 array of its shape); KeyError for an
        unknown id."""
        if is_single_id(items):
            return self.row(items.item() if isinstance(items, np.ndarray) else items)
        if isinstance(items, np.ndarray) and items.dtype.kind in "iu" and self.kind is int:
            return self._int_rows(items)
        return np.fromiter((self.row(x) for x in items), dtype=np.int64)

    def _int_rows(self, items):
        """Rows of an integer array of ids, by binary search in the sorted ids."""
        if self._sorted is None:
            order = np.argsort(self.array, kind="stable")
            self._sorted = (self.array[order], order)
        keys, order = self._sorted
        at = np.minimum(np.searchsorted(keys, items), len(keys) - 1)
        found = keys[at] == items
        if not found.all():
            raise KeyError(self._unknown(items[~found].flat[0].item(), items[~found].flat[0].item()))
        return order[at].astype(np.int64)

    def ids(self, rows):
        """Ids of one row or of an array of rows (IndexError for a row outside ``[0, n)``)."""
        arr = np.asarray(rows)
        if arr.size and (not np.issubdtype(arr.dtype, np.integer) or arr.min() < 0 or arr.max() >= len(self)):
            raise IndexError("rows must be integers in [0, %d), got %r" % (len(self), rows))
        return self.values[int(arr)] if arr.ndim == 0 else self.array[arr]

    # ------------------------------------------------------------------ persistence
    def words(self):
        """The ids as strings (a model file's vocabulary)."""
        return [str(v) for v in self.values]

    def saved_arrays(self):
        """Arrays a model file keeps beside the vocabulary so that integer ids load as integers."""
        return {SAVED_ARRAY: self.array} if self.kind is int else {}

    @classmethod
    def from_saved(cls, words, arrays):
        """The ids a model file holds: integers from its ``item_ids`` array, else its vocabulary (files
        written before ids kept their type load with string ids)."""
        if SAVED_ARRAY not in arrays:
            return cls(list(words))
        saved = arrays[SAVED_ARRAY]
        if saved.ndim != 1 or saved.dtype.kind not in "iu" or len(saved) != len(words):
            raise ValueError("%s must be a 1-d integer array of %d ids, got %s of shape %s"
                             % (SAVED_ARRAY, len(words), saved.dtype, saved.shape))
        ids = cls(saved.astype(np.int64))
        if ids.words() != list(words):
            raise ValueError("%s does not match the vocabulary" % SAVED_ARRAY)
        return ids
