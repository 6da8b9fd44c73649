"""Item titles of the MovieLens and Netflix Prize datasets, to name the items of a rating file.

Four layouts are read (the file name decides):

* ``u.item`` (ml-100k): ``id|title|release date|...``, Latin-1;
* ``movies.dat`` (ml-1m, ml-10m): ``id::title::genres``, UTF-8 or else Latin-1;
* ``movies.csv`` (ml-20m, ml-latest, ml-latest-small): CSV with the header ``movieId,title,genres``, UTF-8
  (or else Latin-1);
* ``movie_titles.txt`` or ``.csv`` (Netflix Prize): ``id,year,title`` (titles may hold commas, the year
  may be ``NULL``), Latin-1, CRLF line endings; the title is returned as ``"title (year)"`` like the
  MovieLens titles.

Every reader raises :class:`ValueError` naming the file and the 1-based line of a malformed line.
"""
import csv
import io
import os

from embkit.core.binary_files import open_binary
from embkit.core.read_errors import reading
from embkit.items.delimited_numbers import line_error

__all__ = ["TITLE_FILES", "load_titles", "find_titles"]

#: Title files looked for next to a rating file, in this order.
TITLE_FILES = ("u.item", "movies.dat", "movies.csv", "movie_titles.txt", "movie_titles.csv")


def _item_id(text, path, number, line):
    if not (text.isascii() and text.isdigit()):
        raise line_error(path, number, "item id %r is not a non-negative integer" % text, line)
    return int(text)


def _decode(data, encodings):
    for encoding in encodings[:-1]:
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            pass
    return data.decode(encodings[-1])


def _split_lines(path, sep, encodings, min_fields, max_split=-1):
    """``(line number, fields, line)`` of the non-empty lines of a delimited file."""
    with reading(path, "title file"), open_binary(path) as fh:
        text = _decode(fh.read(), encodings)
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split(sep, max_split)
        if len(fields) < min_fields:
            raise line_error(path, number, "expected at least %d fields separated by %r, found %d"
                       % (min_fields, sep, len(fields)), line)
        yield number, fields, line


def _read_pipe(path):
    return {_item_id(f[0], path, n, line): f[1] for n, f, line in _split_lines(path, "|", ("latin-1",), 2)}


def _read_dat(path):
    return {_item_id(f[0], path, n, line): f[1]
            for n, f, line in _split_lines(path, "::", ("utf-8", "latin-1"), 2)}


def _read_netflix(path):
    titles = {}
    for n, (item, year, title), line in _split_lines(path, ",", ("latin-1",), 3, max_split=2):
        year = year.strip()
        titles[_item_id(item, path, n, line)] = title if year in ("", "NULL") else "%s (%s)" % (title, year)
    return titles


def _read_csv(path):
    with reading(path, "title file"), open_binary(path) as fh:
        text = _decode(fh.read(), ("utf-8", "latin-1"))
    titles = {}
    rows = csv.reader(io.StringIO(text, newline=""))
    for number, row in enumerate(rows, 1):
        if not row:
            continue
        if number == 1 and not row[0].strip().isdigit():
            continue  # header
        line = ",".join(row)
        if len(row) < 2:
            raise line_error(path, rows.line_num,
                             "expected at least 2 fields (movieId,title,...), found %d" % len(row), line)
        titles[_item_id(row[0], path, rows.line_num, line)] = row[1]
    return titles


_READERS = {"u.item": _read_pipe, "movies.dat": _read_dat, "movies.csv": _read_csv,
            "movie_titles.txt": _read_netflix, "movie_titles.csv": _read_netflix}


def _layout(path):
    name = os.path.basename(str(path))
    for suffix in (".gz", ".bz2"):
        if name.endswith(suffix):
            name = name[:-len(suffix)]
    if name in _READERS:
        return name
    if name.endswith(".item"):
        return "u.item"
    raise ValueError("%s: unknown title file layout (expected a file named %s)" % (path, ", ".join(TITLE_FILES)))


def load_titles(path):
    """Read a title file into ``{raw item id: title}``.

    Parameters
    ----------
    path : str or os.PathLike
        A file named as in :data:`TITLE_FILES` (optionally ``.gz`` or ``.bz2``).

    Returns
    -------
    dict of int to str

    Raises
    ------
    FileNotFoundError
        The file does not exist.
    ValueError
        Unknown layout, or a malformed line (file and line named).
    """
    path = os.fspath(path)
    reader = _READERS[_layout(path)]
    if not os.path.exists(path) and "://" not in path:
        raise FileNotFoundError("title file %r does not exist" % path)
    return reader(path)


def find_titles(folder):
    """Path of the first title file of :data:`TITLE_FILES` found in ``folder``, or None."""
    for name in TITLE_FILES:
        for suffix in ("", ".gz", ".bz2"):
            candidate = os.path.join(folder, name + suffix)
            if os.path.isfile(candidate):
                return candidate
    return None
