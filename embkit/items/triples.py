"""Reader of ``i j count`` co-occurrence files (used by :meth:`embkit.items.cooccurrence.PairCounts.from_triples`)."""
import os
import re

import numpy as np

from embkit.core.binary_files import open_binary
from embkit.core.read_errors import reading
from embkit.items.delimited_numbers import line_error

_SPLIT = re.compile(r"[\s,]+")
_COUNT = re.compile(r"[0-9]+\Z")
ID_MODES = ("auto", "index", "name")
#: Largest item index (tables are indexed with int32) and largest count (exact as a float64).
MAX_ID = np.iinfo(np.int32).max
MAX_COUNT = 2 ** 53


def _fields(path):
    """``(line number, i, j, count, line)`` of each data line."""
    with reading(path, "triple file"), open_binary(path) as fh:
        text = fh.read().decode("utf-8", errors="replace")
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        fields = _SPLIT.split(stripped)
        if len(fields) != 3:
            raise line_error(path, number, "expected 3 fields 'context target count', found %d" % len(fields), line)
        if not _COUNT.match(fields[2]):
            raise line_error(path, number, "count %r is not a non-negative integer" % fields[2], line)
        if int(fields[2]) > MAX_COUNT:
            raise line_error(path, number, "count %s is larger than %d" % (fields[2], MAX_COUNT), line)
        yield number, fields[0], fields[1], int(fields[2]), line


def _max_index_items(distinct):
    """Most items an index file may make of ``distinct`` ids (the rest would be unused rows)."""
    return min(MAX_ID + 1, 16 * distinct + (1 << 20))


def _dense(lines):
    """True when integer ids, read as indices, leave few unused rows (see :func:`_max_index_items`)."""
    ids = {int(x) for _, i, j, _, _ in lines for x in (i, j)}
    return max(ids) < _max_index_items(len(ids))


def read_triples(path, names=None, ids="auto"):
    """Parse an ``i j count`` file.

    Returns
    -------
    rows, cols, counts : numpy.ndarray
        One entry per line (int64).
    names : list of int or list of str
        The item index: the given names as given, the indices ``0..n-1`` (``ids='index'``), or the names
        in the file.
    """
    if ids not in ID_MODES:
        raise ValueError("ids must be one of %s, got %r" % (", ".join(ID_MODES), ids))
    path = os.fspath(path)
    if "://" not in path and not os.path.isfile(path):
        raise FileNotFoundError("triple file %r does not exist" % path)
    lines = list(_fields(path))
    if not lines:
        raise ValueError("%s holds no 'context target count' line" % path)
    if names is not None:
        names = list(names)
        index = {str(x): k for k, x in enumerate(names)}
        mode = "given"
    else:
        all_int = all(i.isascii() and i.isdigit() and j.isascii() and j.isdigit() for _, i, j, _, _ in lines)
        mode = ("index" if all_int and _dense(lines) else "name") if ids == "auto" else ids
        index = {}
    rows = np.empty(len(lines), dtype=np.int64)
    cols = np.empty(len(lines), dtype=np.int64)
    for k, (number, i, j, _, line) in enumerate(lines):
        for out, item in ((rows, i), (cols, j)):
            if mode == "index":
                if not (item.isascii() and item.isdigit()):
                    raise line_error(path, number, "item %r is not a non-negative integer index (ids='index')"
                                     % item, line)
                if int(item) > MAX_ID:
                    raise line_error(path, number, "item index %s is larger than %d" % (item, MAX_ID), line)
                out[k] = int(item)
            elif mode == "name":
                out[k] = index.setdefault(item, len(index))
            elif item in index:
                out[k] = index[item]
            else:
                raise line_error(path, number, "item %r is not one of the %d given names" % (item, len(names)), line)
    if mode == "index":
        n = int(max(rows.max(), cols.max())) + 1
        if n > _max_index_items(len(np.union1d(rows, cols))):
            raise ValueError("%s: ids='index' makes %d items (the largest index + 1) of only %d distinct ids; "
                             "read the ids as names with ids='name'" % (path, n, len(np.union1d(rows, cols))))
        names = list(range(n))
    elif mode == "name":
        names = list(index)
    counts = np.array([c for _, _, _, c, _ in lines], dtype=np.int64)
    return rows, cols, counts, names
