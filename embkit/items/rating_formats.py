"""Block readers of the MovieLens and Netflix Prize rating files (used by :mod:`embkit.items.ratings`).

Each reader yields ``(user, item, rating, timestamp)`` arrays (int32, int32, float32, int64 seconds since
1970-01-01 UTC), one tuple per block of the file, in file order.  The fast path of
:mod:`embkit.items.delimited_numbers` parses a block; when it refuses one, the per-line checker of the format names
the file, the line and the problem in a :class:`ValueError`.
"""
import datetime
import re

import numpy as np

from embkit.core.binary_files import open_binary
from embkit.core.read_errors import reading
from embkit.items.delimited_numbers import (BlockFormatError, iter_line_blocks, locate_error, parse_block,
                              parse_tolerating_blank_lines)

#: Largest user or item id (ids are stored as int32).
MAX_ID = np.iinfo(np.int32).max
#: Separator of each MovieLens layout.
MOVIELENS_SEPARATORS = {"tsv": "\t", "dat": "::", "csv": ","}

_UINT = re.compile(r"[0-9]{1,16}\Z")
_DECIMAL = re.compile(r"[0-9]{1,16}(\.[0-9]{1,16})?\Z")
_DATE = re.compile(r"([0-9]{1,16})-([0-9]{1,16})-([0-9]{1,16})\Z")
_SECONDS_PER_DAY = 86400


# ---------------------------------------------------------------------------------------------- checks
def _check_id(what, text):
    if not _UINT.match(text):
        raise ValueError("%s %r is not a non-negative integer" % (what, text))
    if int(text) > MAX_ID:
        raise ValueError("%s %s is larger than %d" % (what, text, MAX_ID))


def _check_movielens_line(text, sep):
    fields = text.split(sep)
    if len(fields) != 4:
        raise ValueError("expected 4 fields user%sitem%srating%stimestamp, found %d" % (sep, sep, sep, len(fields)))
    user, item, rating, stamp = fields
    _check_id("user id", user)
    _check_id("item id", item)
    if not _DECIMAL.match(rating):
        raise ValueError("rating %r is not a number such as 4 or 3.5" % rating)
    if not _UINT.match(stamp):
        raise ValueError("timestamp %r is not a non-negative integer number of seconds" % stamp)


def _check_date(text):
    match = _DATE.match(text)
    if not match:
        raise ValueError("date %r is not YYYY-MM-DD" % text)
    try:
        datetime.date(*(int(g) for g in match.groups()))
    except (ValueError, OverflowError) as exc:
        raise ValueError("date %r is not a valid date (%s)" % (text, exc)) from None


class _NetflixChecker:
    """Per-line check of the Netflix layout: ``MovieID:`` lines, then ``CustomerID,Rating,YYYY-MM-DD``."""

    def __init__(self, movie):
        self.movie = movie

    def __call__(self, text):
        if text.endswith(":"):
            _check_id("movie id", text[:-1])
            self.movie = int(text[:-1])
            return
        if ":" in text:
            raise ValueError("a movie line is 'MovieID:' alone on its line")
        if self.movie is None:
            raise ValueError("rating line before the first 'MovieID:' line")
        fields = text.split(",")
        if len(fields) != 3:
            raise ValueError("expected 3 fields CustomerID,Rating,YYYY-MM-DD, found %d" % len(fields))
        _check_id("customer id", fields[0])
        if not _UINT.match(fields[1]):
            raise ValueError("rating %r is not a non-negative integer" % fields[1])
        _check_date(fields[2])


def _check_ids(*columns):
    for column in columns:
        if len(column) and column.max() > MAX_ID:
            raise BlockFormatError("id out of range")


# ---------------------------------------------------------------------------------------------- MovieLens
def _csv_header(block):
    """The block without its first line if that line is a header (does not start with a digit)."""
    if block[:1].isdigit() or block[:1] in (b"", b"\n"):
        return block, 0
    cut = block.index(b"\n") + 1
    if block[:cut].count(b",") != 3:
        raise ValueError("expected a header of 4 columns such as userId,movieId,rating,timestamp, found %r"
                         % block[:cut - 1].decode("utf-8", "replace"))
    return block[cut:], 1


def _parse_movielens(block, sep, double_colons):
    if double_colons:
        if b"\t" in block:  # a tab would pass for a separator below
            raise BlockFormatError("tab in a '::' file")
        block = block.replace(b"::", b"\t")
    user, item, rating, stamp = parse_block(block, 4, sep, decimal=(2,))
    _check_ids(user, item)
    return user.astype(np.int32), item.astype(np.int32), rating.astype(np.float32), stamp.astype(np.int64)


def read_movielens(path, layout, block_bytes):
    """Yield the rating arrays of a MovieLens file, block by block.

    Parameters
    ----------
    path : str
        ``u.data`` (``layout='tsv'``), ``ratings.dat`` (``'dat'``) or ``ratings.csv`` (``'csv'``, header
        line optional).
    layout : {'tsv', 'dat', 'csv'}
    block_bytes : int
        Bytes read at a time.
    """
    sep = MOVIELENS_SEPARATORS[layout]
    fast_sep = b"," if layout == "csv" else b"\t"
    with reading(path, "rating file"), open_binary(path) as fh:
        for block, first in iter_line_blocks(fh, block_bytes):
            if first == 1 and layout == "csv":
                try:
                    block, skipped = _csv_header(block)
                except ValueError as exc:
                    raise ValueError("%s, line 1: %s" % (path, exc)) from None
                first += skipped
            try:
                yield parse_tolerating_blank_lines(_parse_movielens, block, fast_sep, layout == "dat")
            except BlockFormatError:
                locate_error(block, first, path, lambda text: _check_movielens_line(text, sep))


# ---------------------------------------------------------------------------------------------- Netflix
def _split_movies(block, movie):
    """Cut the ``MovieID:`` lines out of a Netflix block.

    Returns the rating lines, the movie of each run of rating lines, the lines in each run, and the movie
    current at the end of the block.
    """
    segments, movies, counts = [], [], []
    pos = 0
    while True:
        colon = block.find(b":", pos)
        if colon < 0:
            break
        start = block.rfind(b"\n", 0, colon) + 1
        head = block[start:colon]
        if start < pos or not head.isdigit() or block[colon + 1:colon + 2] != b"\n" or int(head) > MAX_ID:
            raise BlockFormatError("bad movie line")
        if start > pos:
            if movie is None:
                raise BlockFormatError("ratings before the first movie")
            segments.append(block[pos:start])
            movies.append(movie)
        movie = int(head)
        pos = colon + 2
    if pos < len(block):
        if movie is None:
            raise BlockFormatError("ratings before the first movie")
        segments.append(block[pos:])
        movies.append(movie)
    counts = [s.count(b"\n") for s in segments]
    return b"".join(segments), np.array(movies, dtype=np.int32), np.array(counts, dtype=np.int64), movie


def _days_since_epoch(year, month, day):
    """Days since 1970-01-01 of valid calendar dates; BlockFormatError for an invalid one."""
    if len(year) == 0:
        return np.zeros(0, dtype=np.int64)
    if (year.min() < 1 or year.max() > 9999 or month.min() < 1 or month.max() > 12
            or day.min() < 1 or day.max() > 31):
        raise BlockFormatError("date out of range")
    months = (year.astype(np.int64) - 1970) * 12 + (month.astype(np.int64) - 1)
    first = months.astype("datetime64[M]")
    dates = first.astype("datetime64[D]") + (day.astype(np.int64) - 1)
    if not (dates.astype("datetime64[M]") == first).all():  # e.g. February 30
        raise BlockFormatError("invalid date")
    return dates.astype(np.int64)


def _parse_netflix(block, movie):
    """The rating arrays of a Netflix block, and the movie current at its end."""
    data, movies, counts, movie = _split_movies(block, movie)
    user, rating, year, month, day = parse_block(data, 5, b",-", order=b",,--")
    _check_ids(user)
    days = _days_since_epoch(year, month, day)
    return (user.astype(np.int32), np.repeat(movies, counts), rating.astype(np.float32),
            days * _SECONDS_PER_DAY), movie


def read_netflix(path, block_bytes):
    """Yield the rating arrays of a Netflix Prize file (``combined_data_*.txt`` or ``mv_*.txt``), block by block.

    The layout is a ``MovieID:`` line followed by that movie's ``CustomerID,Rating,YYYY-MM-DD`` lines;
    the timestamp of a rating is midnight UTC of its date.
    """
    movie = None
    with reading(path, "rating file"), open_binary(path) as fh:
        for block, first in iter_line_blocks(fh, block_bytes):
            try:
                arrays, movie = parse_tolerating_blank_lines(_parse_netflix, block, movie)
            except BlockFormatError:
                locate_error(block, first, path, _NetflixChecker(movie))
            yield arrays
