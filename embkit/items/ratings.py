"""Rating files of MovieLens and the Netflix Prize, loaded into compact numpy arrays.

Layouts
-------
* ``tsv``: ml-100k ``u.data`` (and ``u1.base`` ...), lines ``user<TAB>item<TAB>rating<TAB>timestamp``;
* ``dat``: ml-1m and ml-10m ``ratings.dat``, lines ``user::item::rating::timestamp``;
* ``csv``: ml-20m and ml-latest(-small) ``ratings.csv``, header ``userId,movieId,rating,timestamp``;
* ``netflix``: Netflix Prize ``combined_data_*.txt`` and ``training_set/mv_*.txt``, a ``MovieID:`` line
  followed by that movie's ``CustomerID,Rating,YYYY-MM-DD`` lines.

A path may be a file (its layout comes from its name, else from its first line), a dataset folder (the
rating files are found in it) or, for Netflix, a list of files.  ``.gz`` and ``.bz2`` files are
decompressed on the fly.

Files are read in blocks of whole lines that are parsed with vectorised numpy code
(:mod:`embkit.items.delimited_numbers`), so ml-20m (20M lines) and the Netflix Prize (100M lines) load in seconds to
minutes with memory proportional to the ratings kept; ratings below ``min_rating`` are dropped block by
block.  A malformed line raises :class:`ValueError` naming the file and the line.

Examples
--------
>>> from embkit.items.datasets import resolve_ratings
>>> load_ratings(resolve_ratings('ml-100k'))            # doctest: +SKIP
Ratings(55375 ratings >= 4 of 100000, 942 users, 1447 items, layout 'tsv', from '.../ml-100k/u.data')
"""
import glob
import logging
import os
from dataclasses import dataclass, field
from functools import cached_property
from typing import Optional

import numpy as np

from embkit.core.binary_files import open_binary
from embkit.core.read_errors import reading
import embkit.items.rating_formats as formats
from embkit.items.delimited_numbers import BLOCK_BYTES
from embkit.items.titles import find_titles, load_titles

logger = logging.getLogger(__name__)

__all__ = ["Ratings", "load_ratings", "find_rating_files", "DEFAULT_MIN_RATING", "LAYOUTS"]

#: Known layouts.
LAYOUTS = ("tsv", "dat", "csv", "netflix")
#: Default threshold by dataset family: the paper keeps MovieLens ratings >= 4 stars and Netflix 5 stars.
DEFAULT_MIN_RATING = {"movielens": 4.0, "netflix": 5.0}
_COMPRESSED = ("", ".gz", ".bz2")
_MOVIELENS_FILES = (("u.data", "tsv"), ("ratings.dat", "dat"), ("ratings.csv", "csv"))


@dataclass(eq=False)
class Ratings:
    """Ratings as parallel arrays, in file order.

    Attributes
    ----------
    user, item : numpy.ndarray of int32
        Raw user and item ids, as in the files.
    rating : numpy.ndarray of float32
    timestamp : numpy.ndarray of int64
        Seconds since 1970-01-01 UTC (Netflix: midnight of the rating's date).
    source : str
        The file, files or folder read.
    layout : str
        One of :data:`LAYOUTS`.
    min_rating : float or None
        Threshold applied while loading (ratings below it were dropped).
    n_read : int
        Ratings in the files, before the threshold.
    titles : dict of int to str, optional
        Item titles by raw item id, when a title file was found.
    """

    user: np.ndarray
    item: np.ndarray
    rating: np.ndarray
    timestamp: np.ndarray
    source: str = ""
    layout: str = ""
    min_rating: Optional[float] = None
    n_read: int = 0
    titles: Optional[dict] = field(default=None, repr=False)

    def __len__(self):
        return len(self.user)

    def __repr__(self):
        kept = "%d ratings" % len(self)
        if self.min_rating is not None:
            kept += " >= %g of %d" % (self.min_rating, self.n_read)
        return "Ratings(%s, %d users, %d items, layout %r, from %r)" % (
            kept, self.n_users, self.n_items, self.layout, self.source)

    @cached_property
    def n_users(self):
        """Distinct users."""
        return len(np.unique(self.user))

    @cached_property
    def n_items(self):
        """Distinct items."""
        return len(np.unique(self.item))

    @property
    def family(self):
        """``'netflix'`` or ``'movielens'``."""
        return "netflix" if self.layout == "netflix" else "movielens"

    def at_least(self, min_rating):
        """The ratings ``>= min_rating``, as new :class:`Ratings` (ValueError if none is left)."""
        keep = self.rating >= min_rating
        if not keep.any():
            raise _threshold_error(min_rating, self.source, len(self), float(self.rating.max(initial=-np.inf)))
        return Ratings(self.user[keep], self.item[keep], self.rating[keep], self.timestamp[keep],
                       self.source, self.layout, min_rating if self.min_rating is None
                       else max(min_rating, self.min_rating), self.n_read, self.titles)


def _threshold_error(min_rating, source, n_read, highest):
    return ValueError("min_rating=%g removes every rating of %s (%d ratings read, the highest is %g): "
                      "lower min_rating" % (min_rating, source, n_read, highest))


# ---------------------------------------------------------------------------------------------- files
def _first_line(path):
    with reading(path, "rating file"), open_binary(path) as fh:
        head = fh.read(1 << 12)
    for line in head.splitlines():
        if line.strip():
            return line.decode("utf-8", errors="replace").strip()
    return ""


def _file_layout(path):
    """Layout of one rating file, from its name or else its first line."""
    name = os.path.basename(path)
    for suffix in (".gz", ".bz2"):
        if name.endswith(suffix):
            name = name[:-len(suffix)]
    if name.startswith(("combined_data_", "mv_")) and name.endswith(".txt"):
        return "netflix"
    if name.endswith(".dat"):
        return "dat"
    if name.endswith(".csv"):
        return "csv"
    if name == "u.data":
        return "tsv"
    line = _first_line(path)
    if "::" in line:
        return "dat"
    if line.endswith(":"):
        return "netflix"
    if "\t" in line:
        return "tsv"
    if "," in line:
        return "csv"
    raise ValueError("%s: cannot tell the rating layout from its name or its first line %r; pass layout= one "
                     "of %s" % (path, line[:80], ", ".join(LAYOUTS)))


def _with_compression(folder, name):
    for suffix in _COMPRESSED:
        candidate = os.path.join(folder, name + suffix)
        if os.path.isfile(candidate):
            return candidate
    return None


def _netflix_files(folder):
    for pattern in ("combined_data_*.txt", os.path.join("training_set", "mv_*.txt"), "mv_*.txt"):
        files = sorted(f for suffix in _COMPRESSED for f in glob.glob(os.path.join(folder, pattern + suffix)))
        if files:
            return files
    return []


def find_rating_files(path, layout=None):
    """The rating files of a path, and their layout.

    Parameters
    ----------
    path : str, os.PathLike or list of them
        A rating file; a dataset folder holding ``u.data``, ``ratings.dat`` or ``ratings.csv``
        (MovieLens) or ``combined_data_*.txt``, ``training_set/mv_*.txt`` or ``mv_*.txt`` (Netflix); or a
        list of files of one layout.
    layout : str, optional
        Force a layout of :data:`LAYOUTS` instead of detecting it.

    Returns
    -------
    files : list of str
    layout : str

    Raises
    ------
    FileNotFoundError
        A path that does not exist, or a folder without rating files.
    ValueError
        An unknown layout, or files of different layouts.
    """
    if layout is not None and layout not in LAYOUTS:
        raise ValueError("layout must be one of %s, got %r" % (", ".join(LAYOUTS), layout))
    if isinstance(path, (list, tuple)):
        if not path:
            raise ValueError("empty list of rating files")
        files = [os.fspath(p) for p in path]
    else:
        path = os.fspath(path)
        if os.path.isdir(path):
            files = _folder_files(path)
        else:
            files = [path]
    for f in files:
        if "://" not in f and not os.path.isfile(f):
            raise FileNotFoundError("rating file %r does not exist (registered dataset names go through "
                                    "embkit.items.datasets.resolve_ratings)" % f)
    if layout is None:
        layouts = {f: _file_layout(f) for f in files}
        if len(set(layouts.values())) > 1:
            raise ValueError("rating files of different layouts: %s"
                             % ", ".join("%s (%s)" % item for item in layouts.items()))
        layout = layouts[files[0]]
    return files, layout


def _folder_files(folder):
    for name, _ in _MOVIELENS_FILES:
        found = _with_compression(folder, name)
        if found:
            return [found]
    files = _netflix_files(folder)
    if files:
        return files
    raise FileNotFoundError("no rating file in folder %r: looked for %s, combined_data_*.txt, "
                            "training_set/mv_*.txt and mv_*.txt"
                            % (folder, ", ".join(name for name, _ in _MOVIELENS_FILES)))


def _titles_for(files, titles):
    if titles is None or titles is False:
        return None
    if titles is not True:
        return load_titles(titles)
    if "://" in files[0]:
        return None
    folder = os.path.dirname(os.path.abspath(files[0]))
    found = find_titles(folder)
    if found is None and os.path.basename(folder) == "training_set":  # Netflix: titles beside training_set/
        found = find_titles(os.path.dirname(folder))
    return load_titles(found) if found else None


# ---------------------------------------------------------------------------------------------- loading
def load_ratings(path, min_rating="default", layout=None, titles=True, block_bytes=BLOCK_BYTES):
    """Read MovieLens or Netflix Prize ratings.

    Parameters
    ----------
    path : str, os.PathLike or list of them
        A rating file, a dataset folder or a list of Netflix files (see :func:`find_rating_files`); a
        registered dataset name goes through :func:`embkit.items.datasets.resolve_ratings` first.
    min_rating : float, None or 'default'
        Keep the ratings ``>= min_rating``; None keeps all.  'default' is 4.0 for MovieLens and 5.0
        for Netflix (:data:`DEFAULT_MIN_RATING`), the thresholds of the relaxed-softmax paper.
    layout : str, optional
        One of :data:`LAYOUTS`; detected when None.
    titles : bool or path, optional
        True: read the title file found next to the ratings (``u.item``, ``movies.dat``, ``movies.csv``,
        ``movie_titles.txt``), if any; a path: read that file; False: no titles.
    block_bytes : int, optional
        Bytes parsed at a time.

    Returns
    -------
    Ratings

    Raises
    ------
    FileNotFoundError
        Missing file or a folder without rating files.
    ValueError
        A malformed line (the message names the file and the line), no ratings at all, or a
        ``min_rating`` that removes every rating (the message names the threshold).
    """
    files, layout = find_rating_files(path, layout)
    family = "netflix" if layout == "netflix" else "movielens"
    if isinstance(min_rating, str):
        if min_rating != "default":
            raise ValueError("min_rating must be a number, None or 'default', got %r" % min_rating)
        min_rating = DEFAULT_MIN_RATING[family]
    if min_rating is not None and not np.isfinite(min_rating):
        raise ValueError("min_rating must be finite, got %r" % (min_rating,))
    parts, n_read, highest = [], 0, -np.inf
    for f in files:
        chunks = (formats.read_netflix(f, block_bytes) if layout == "netflix"
                  else formats.read_movielens(f, layout, block_bytes))
        for user, item, rating, stamp in chunks:
            n_read += len(rating)
            if len(rating):
                highest = max(highest, float(rating.max()))
            if min_rating is not None:
                keep = rating >= min_rating
                user, item, rating, stamp = user[keep], item[keep], rating[keep], stamp[keep]
            parts.append((user, item, rating, stamp))
    source = files[0] if len(files) == 1 else (os.fspath(path) if not isinstance(path, (list, tuple))
                                                else "%s and %d more files" % (files[0], len(files) - 1))
    columns = [np.concatenate([p[k] for p in parts]) if parts else np.zeros(0, dtype)
               for k, dtype in enumerate((np.int32, np.int32, np.float32, np.int64))]
    if n_read == 0:
        raise ValueError("no ratings found in %s" % source)
    if len(columns[0]) == 0:
        raise _threshold_error(min_rating, source, n_read, highest)
    ratings = Ratings(*columns, source=source, layout=layout, min_rating=min_rating, n_read=n_read,
                      titles=_titles_for(files, titles))
    logger.info("%s: %d ratings read, %d kept (min_rating=%s)", source, n_read, len(ratings), min_rating)
    return ratings
