"""Sparse multi-label data sets (extreme classification): reading, writing and the :class:`XCData` holder.

File formats
------------
Extreme Classification Repository format (Bhatia et al., the repository's README)::

    4880 1836 159                     <- header: points, features, labels
    48,131 44:1.000000 59:1.000000    <- labels, then feature:value pairs
     5:1.000000 6:1.000000            <- a point without labels starts with a blank

Ids are 0-based.  The svmlight/LIBSVM multi-label variant has the same lines without the header,
often with 1-based ids (``base=1``); the sizes are then the largest ids seen unless given.  A LEML
style first line ``#num_feature=F num_label=L`` is read as a header without a point count.

Details of the line grammar: labels are separated by commas (blanks after a comma are allowed),
features by blanks or tabs; values are decimal numbers (``1``, ``0.25``, ``-1.5e-3``); CRLF line
ends are fine.  A blank line is a point with no labels and no features, except at the end of the
file, where blank lines are ignored (beyond the points a header declares, or always without a
header).  The same id twice on a line is an error; ids out of order are sorted.

Reading streams the file in blocks (plain, ``.gz``, ``.bz2`` and URLs through smart_open): only the
CSR arrays are kept, and each block is parsed with whole-array numpy operations (see
:mod:`embkit.xc.parse`).  Every problem is a :class:`ValueError` naming the file and the 1-based line.

Examples
--------
>>> from embkit.xc.data import read_xc, write_xc
>>> data = read_xc("bibtex_train.xc.txt.gz")                     # doctest: +SKIP
>>> data.X.shape, data.Y.shape, data.n_unlabelled                 # doctest: +SKIP
((4880, 1836), (4880, 159), 0)
>>> write_xc("copy.txt", data)                                    # doctest: +SKIP
"""
import contextlib
import os
import re
from dataclasses import dataclass
from typing import Optional

import numpy as np
import scipy.sparse as sp

from embkit.xc.parse import MAX_ID, IdSpec, parse_block_fast, parse_block_slow
from embkit.core.atomic import atomic_path
from embkit.core.line_blocks import whole_line_blocks
from embkit.core.read_errors import reading
from embkit.core.threads import worker_map

__all__ = ["XCData", "read_xc", "read_svmlight", "read_xc_header", "read_sparse_matrix", "read_xc_pair", "write_xc",
           "BLOCK_BYTES"]

#: Bytes read and parsed at a time.
BLOCK_BYTES = 1 << 22
_XC_HEADER = re.compile(rb"[ \t]*(\d+)[ \t]+(\d+)[ \t]+(\d+)[ \t]*\r?\n?")
_MATRIX_HEADER = re.compile(rb"[ \t]*(\d+)[ \t]+(\d+)[ \t]*\r?\n?")
_LEML_HEADER = re.compile(rb"#[ \t]*num_feature[ \t]*=[ \t]*(\d+)[ \t]+num_label[ \t]*=[ \t]*(\d+)[ \t]*\r?\n?")


@dataclass(eq=False)
class XCData:
    """Points with sparse features and sets of labels.

    Attributes
    ----------
    X : scipy.sparse.csr_matrix of float32, shape (n_points, n_features)
        Feature values (sorted indices).
    Y : scipy.sparse.csr_matrix of float32, shape (n_points, n_labels)
        Label sets: a stored 1.0 for every label of a point.
    source : str or None
        File the data was read from, or a description.
    header : tuple of (int or None, int, int), or None
        ``(points, features, labels)`` as declared by the file's header (None for the count of a
        LEML header); None when the file had no header.
    """

    X: sp.csr_matrix
    Y: sp.csr_matrix
    source: Optional[str] = None
    header: Optional[tuple] = None

    def __post_init__(self):
        for name in ("X", "Y"):
            if not sp.isspmatrix_csr(getattr(self, name)):
                raise TypeError("XCData.%s must be a scipy.sparse CSR matrix, got %s"
                                % (name, type(getattr(self, name)).__name__))
        if self.X.shape[0] != self.Y.shape[0]:
            raise ValueError("XCData: X has %d rows but Y has %d" % (self.X.shape[0], self.Y.shape[0]))

    @property
    def n_points(self):
        """Number of points (rows)."""
        return self.X.shape[0]

    @property
    def n_features(self):
        """Number of features (columns of X)."""
        return self.X.shape[1]

    @property
    def n_labels(self):
        """Number of labels (columns of Y)."""
        return self.Y.shape[1]

    @property
    def n_unlabelled(self):
        """Points without any label (XC trainers skip them; the metrics count them as ``n_empty``)."""
        return int(np.count_nonzero(np.diff(self.Y.indptr) == 0))

    def label_frequencies(self):
        """Number of points carrying each label, int64 array of shape (n_labels,)."""
        return np.bincount(self.Y.indices, minlength=self.n_labels).astype(np.int64)

    def stats(self):
        """Summary numbers, as in the XC repository's table.

        Returns
        -------
        dict
            ``points, features, labels, unlabelled, feature_nnz, label_nnz, avg_features_per_point,
            avg_labels_per_point, avg_points_per_label`` (the averages as float, 0 when undefined).
        """
        n, nnz_y = self.n_points, self.Y.nnz
        return {"points": n, "features": self.n_features, "labels": self.n_labels,
                "unlabelled": self.n_unlabelled, "feature_nnz": self.X.nnz, "label_nnz": nnz_y,
                "avg_features_per_point": self.X.nnz / n if n else 0.0,
                "avg_labels_per_point": nnz_y / n if n else 0.0,
                "avg_points_per_label": nnz_y / self.n_labels if self.n_labels else 0.0}

    def __repr__(self):
        return ("XCData(points=%d, features=%d, labels=%d, unlabelled=%d, source=%r)"
                % (self.n_points, self.n_features, self.n_labels, self.n_unlabelled, self.source))


# ---------------------------------------------------------------------------------------------------
# reading

def read_xc(path, *, header="auto", base=0, label_base=None, n_features=None, n_labels=None,
            block_bytes=BLOCK_BYTES, workers=1):
    """Read a sparse multi-label file (XC repository format or svmlight multi-label).

    Parameters
    ----------
    path : str or path-like
        File (``.gz`` / ``.bz2`` decompressed on the fly) or URL.
    header : {"auto", True, False}, optional
        Whether the first line is a header ``points features labels`` (or LEML's
        ``#num_feature=F num_label=L``).  ``"auto"`` takes it as one when it has that form.
    base : int, optional
        Written id of the first feature and label: 0 (XC format) or 1 (LIBSVM files).
    label_base : int or None, optional
        Base of the label ids when it differs from `base`.
    n_features, n_labels : int or None, optional
        Sizes of the feature and label spaces.  With a header they must agree with it; without one
        they bound the ids, and when None the largest id seen decides.
    block_bytes : int, optional
        Bytes parsed at a time; reading needs about 15 times this for the parse of a block (on each
        thread, and a few blocks ahead of the first), plus the result.
    workers : int, optional
        Threads that parse blocks (the same result for any number).

    Returns
    -------
    XCData

    Raises
    ------
    FileNotFoundError
        If a local `path` does not exist.
    ValueError
        Naming the file and line: an empty file, a malformed header or line, an id out of range
        (below `base`, or not below the declared or given size), a non-numeric or non-finite value,
        an id repeated on a line, or a header whose point count disagrees with the file.  Bad
        parameters are named too.
    """
    source = os.fspath(path)
    label_base = base if label_base is None else label_base
    _check_params(header, base, label_base, n_features, n_labels, block_bytes, workers)
    if "://" not in source and not os.path.exists(source):
        raise FileNotFoundError("data file %r does not exist" % source)
    from smart_open import open as sopen
    with reading(source, "data file"), sopen(source, "rb") as fh:
        first = fh.readline()
        if first.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte order mark
            first = first[3:]
        if not first:
            raise ValueError("%s, line 1: empty file (expected %s)"
                             % (source, "a header 'points features labels'" if header else "a point"))
        declared = _parse_header(first, header, source)
        n_features, n_labels = _sizes(declared, n_features, n_labels, source)
        origin = "the header (line 1)" if declared else "the n_features/n_labels arguments"
        spec = IdSpec(label_base, base, n_labels, n_features, origin)
        parts = _read_blocks(fh, b"" if declared else first, 2 if declared else 1, spec, source, block_bytes,
                             workers)
    return _assemble(parts, declared, spec, source)


def read_sparse_matrix(path, *, what="feature", block_bytes=BLOCK_BYTES, workers=1):
    """Read one sparse matrix of the XC repository's newer layout (``trn_X_Xf.txt``, ``trn_X_Y.txt``, ...).

    The first line is ``rows columns``, then one line per row of ``column:value`` pairs (0-based columns,
    an empty line for an empty row).  Returns a csr_matrix (float32).  Errors are ValueErrors naming the
    file and line, as :func:`read_xc`'s (a column beyond the header's count, a malformed pair, a row count
    that disagrees with the header, ...); messages call the columns ``what`` ("feature" or "label").  Blocks
    are parsed on ``workers`` threads, as :func:`read_xc` parses them.
    """
    try:
        return _read_sparse_matrix(path, block_bytes, workers)
    except ValueError as exc:
        if what == "feature":
            raise
        raise ValueError(str(exc).replace("feature", what)) from None


@contextlib.contextmanager
def _data_file(source):
    """``(file, first line)`` of the data file ``source`` (local, compressed or remote), the first line without
    a byte order mark; FileNotFoundError naming a missing local file, read errors naming the file."""
    if "://" not in source and not os.path.exists(source):
        raise FileNotFoundError("data file %r does not exist" % source)
    from smart_open import open as sopen
    with reading(source, "data file"), sopen(source, "rb") as fh:
        first = fh.readline()
        yield fh, first[3:] if first.startswith(b"\xef\xbb\xbf") else first


def _read_sparse_matrix(path, block_bytes, workers):
    source = os.fspath(path)
    _check_reading(block_bytes, workers)
    with _data_file(source) as (fh, first):
        m = _MATRIX_HEADER.fullmatch(first)
        if not m:
            raise ValueError("%s, line 1: expected a header 'rows columns', got %r"
                             % (source, first[:80].decode("utf-8", "replace").rstrip()))
        n_rows, n_cols = _header_sizes(m, source)
        if n_cols > MAX_ID + 1:
            raise ValueError("%s, line 1: the header declares %d columns, more than %d" % (source, n_cols, MAX_ID + 1))
        spec = IdSpec(0, 0, 0, n_cols, "the header (line 1)")
        parts = _read_blocks(fh, b"", 2, spec, source, block_bytes, workers)
    return _assemble(parts, (n_rows, n_cols, 0), spec, source).X


def read_xc_pair(features_path, labels_path, workers=1):
    """One split of the newer layout: features (``*_X_Xf.txt``) and labels (``*_X_Y.txt``) as an XCData.

    Label values are ignored (every stored label is positive).  ValueError when the two files have
    different numbers of rows, naming both.  Blocks are parsed on ``workers`` threads.
    """
    X = read_sparse_matrix(features_path, workers=workers)
    Y = read_sparse_matrix(labels_path, what="label", workers=workers)
    if X.shape[0] != Y.shape[0]:
        raise ValueError("%s has %d rows but %s has %d: they must describe the same points"
                         % (os.fspath(features_path), X.shape[0], os.fspath(labels_path), Y.shape[0]))
    Y.data[:] = 1.0
    return XCData(X, Y, source="%s + %s" % (os.fspath(features_path), os.fspath(labels_path)),
                  header=(X.shape[0], X.shape[1], Y.shape[1]))


def read_features(path):
    """The feature rows of a file in either XC layout, and the line of its first row.

    A file whose first line is ``rows columns`` is a feature matrix of the newer layout
    (:func:`read_sparse_matrix`); any other is read by :func:`read_xc` (the repository's format with its
    header ``points features labels``, or its lines without a header), and its labels are ignored.

    Returns
    -------
    (scipy.sparse.csr_matrix, int)
        The features (float32) and the 1-based line of row 0 (2 after a header).
    """
    source = os.fspath(path)
    with _data_file(source) as (_, first):
        matrix = _MATRIX_HEADER.fullmatch(first) is not None
    if matrix:
        return read_sparse_matrix(source), 2
    data = read_xc(source)
    return data.X, 2 if data.header is not None else 1


def read_svmlight(path, *, base, label_base=None, n_features=None, n_labels=None):
    """Read an svmlight/LIBSVM multi-label file (``l1,l2 f:v ...``, no header).

    Parameters
    ----------
    path : str or path-like
        File (``.gz`` / ``.bz2`` decompressed on the fly) or URL.
    base : int
        Written id of the first feature and label; required, because LIBSVM files are usually
        1-based and XC-derived ones 0-based.
    label_base, n_features, n_labels
        As in :func:`read_xc`.

    Returns
    -------
    XCData
    """
    return read_xc(path, header=False, base=base, label_base=label_base, n_features=n_features,
                   n_labels=n_labels)


def read_xc_header(path):
    """The sizes a file's first line declares, reading nothing else.

    Returns
    -------
    tuple of (int or None, int, int), or None
        ``(points, features, labels)`` of an XC header (points None for a LEML header), or None
        when the first line is not a header (or the file is empty).
    """
    from smart_open import open as sopen
    source = os.fspath(path)
    with reading(source, "data file"), sopen(source, "rb") as fh:
        first = fh.readline()
    return _parse_header(first, "auto", source) if first else None


def _check_params(header, base, label_base, n_features, n_labels, block_bytes, workers=1):
    if header not in ("auto", True, False):
        raise ValueError("header must be 'auto', True or False, got %r" % (header,))
    for name, value in (("base", base), ("label_base", label_base)):
        if not isinstance(value, (int, np.integer)) or value not in (0, 1):
            raise ValueError("%s must be 0 or 1, got %r" % (name, value))
    for name, value in (("n_features", n_features), ("n_labels", n_labels)):
        if value is not None and (not isinstance(value, (int, np.integer)) or not 0 <= value <= MAX_ID + 1):
            raise ValueError("%s must be None or an integer in [0, %d], got %r" % (name, MAX_ID + 1, value))
    _check_reading(block_bytes, workers)


def _check_reading(block_bytes, workers):
    for name, value in (("block_bytes", block_bytes), ("workers", workers)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError("%s must be a positive integer, got %r" % (name, value))


def _parse_header(line, header, source):
    """``(points or None, features, labels)`` from a header line, or None when it is a data line."""
    if header is False:
        return None
    m = _XC_HEADER.fullmatch(line)
    if m:
        return _header_sizes(m, source)
    m = _LEML_HEADER.fullmatch(line)
    if m:
        return (None,) + _header_sizes(m, source)
    if header is True:
        raise ValueError("%s, line 1: expected a header 'points features labels', got %r"
                         % (source, line[:80].decode("utf-8", "replace").rstrip()))
    return None


def _header_sizes(match, source):
    """The sizes of a header line's match; ValueError naming the line for a size of more than 19 digits."""
    if any(len(g.lstrip(b"0")) > 19 for g in match.groups()):
        raise ValueError("%s, line 1: the header declares a size of more than 19 digits" % source)
    return tuple(int(g) for g in match.groups())


def _sizes(declared, n_features, n_labels, source):
    """Feature and label counts from the header and the arguments (None: infer from the ids)."""
    if declared is None:
        return n_features, n_labels
    for name, given, value in (("n_features", n_features, declared[1]), ("n_labels", n_labels, declared[2])):
        if given is not None and given != value:
            raise ValueError("%s=%d disagrees with the header of %s (line 1: %d)" % (name, given, source, value))
        if value > MAX_ID + 1:
            raise ValueError("%s, line 1: the header declares %d %s, more than %d"
                             % (source, value, name[2:], MAX_ID + 1))
    return declared[1], declared[2]


def _read_blocks(fh, head, first_line, spec, source, block_bytes, workers=1):
    """Parse the rest of `fh` (after `head`, the already-read start of it) block by block, the plainly valid
    blocks on `workers` threads (NumPy releases the GIL), the others line by line in order, so that a
    message names the right line."""
    parts = []
    line = first_line
    blocks = whole_line_blocks(fh, block_bytes, head)

    def parse(block):
        return block, parse_block_fast(block, spec)

    fast = worker_map(parse, blocks, int(workers))        # the caller parses too, as one of the workers
    for block, parsed in fast:
        if parsed is None:      # not plainly valid: line by line, naming the first bad line
            parsed = parse_block_slow(block, line, spec, source)
        line += parsed.n_rows
        parts.append(parsed)
    return parts


def _assemble(parts, declared, spec, source):
    """Concatenate the parsed blocks into an :class:`XCData` and check it against the header."""
    label_counts = _cat([p.label_counts for p in parts], np.int64)
    feature_counts = _cat([p.feature_counts for p in parts], np.int64)
    header_lines = 1 if declared else 0
    n_rows = _trim_blank_tail(label_counts, feature_counts, declared, header_lines, source)
    label_counts, feature_counts = label_counts[:n_rows], feature_counts[:n_rows]
    labels = _cat([p.labels for p in parts], np.int32)
    features = _cat([p.features for p in parts], np.int32)
    values = _cat([p.values for p in parts], np.float32)
    n_labels = spec.n_labels if spec.n_labels is not None else int(labels.max()) + 1 if len(labels) else 0
    n_features = spec.n_features if spec.n_features is not None else int(features.max()) + 1 if len(features) else 0
    X = _csr(values, features, feature_counts, n_features)
    Y = _csr(np.ones(len(labels), dtype=np.float32), labels, label_counts, n_labels)
    return XCData(X, Y, source=source, header=declared)


def _trim_blank_tail(label_counts, feature_counts, declared, header_lines, source):
    """Number of points: all rows but blank ones at the end (beyond the declared count, if any)."""
    filled = np.flatnonzero((label_counts > 0) | (feature_counts > 0))
    last_filled = int(filled[-1]) + 1 if len(filled) else 0
    n_rows = len(label_counts)
    if not declared or declared[0] is None:
        return last_filled
    n_declared = declared[0]
    if last_filled > n_declared:
        raise ValueError("%s, line %d: more points than the %d declared in the header (line 1)"
                         % (source, header_lines + int(filled[np.searchsorted(filled, n_declared)]) + 1,
                            n_declared))
    if n_rows < n_declared:
        raise ValueError("%s, line %d: end of file after %d points, but the header (line 1) declares %d"
                         % (source, n_rows + header_lines, n_rows, n_declared))
    return n_declared


def _cat(arrays, dtype):
    return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(0, dtype=dtype)


def _csr(data, indices, counts, n_cols):
    indptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    if indptr[-1] <= MAX_ID:
        indptr = indptr.astype(np.int32)
    mat = sp.csr_matrix((data, indices, indptr), shape=(len(counts), n_cols))
    if not mat.has_sorted_indices:
        mat.sort_indices()
    return mat


# ---------------------------------------------------------------------------------------------------
# writing

def write_xc(path, data, *, header=True, base=0, label_base=None, overwrite=True, rows_per_block=1 << 16):
    """Write `data` as a sparse multi-label text file, atomically.

    Parameters
    ----------
    path : str or path-like
        Target file; ``.gz`` / ``.bz2`` compress.  It is replaced only once completely written.
    data : XCData or tuple of (X, Y)
        Features (n x F) and labels (n x L), scipy sparse; X's values are written as float32 with
        the shortest text that reads back to the same float32.
    header : bool, optional
        Write the ``points features labels`` header (XC format); False gives svmlight-style lines.
    base, label_base : int, optional
        Written id of the first feature / label (`label_base` None: `base`).
    overwrite : bool, optional
        Replace an existing file.
    rows_per_block : int, optional
        Points formatted at a time.

    Raises
    ------
    ValueError
        If X and Y have different numbers of rows or a base is not 0 or 1.
    FileExistsError
        If `path` exists and `overwrite` is False.
    """
    X, Y = (data.X, data.Y) if isinstance(data, XCData) else data
    X, Y = sp.csr_matrix(X, dtype=np.float32), sp.csr_matrix(Y)
    if X.shape[0] != Y.shape[0]:
        raise ValueError("data: X has %d rows but Y has %d" % (X.shape[0], Y.shape[0]))
    label_base = base if label_base is None else label_base
    _check_params(header, base, label_base, None, None, 1)
    X.sum_duplicates()
    Y.sum_duplicates()
    Y.eliminate_zeros()
    from smart_open import open as sopen
    with atomic_path(path, overwrite) as tmp:
        with sopen(tmp, "w", encoding="ascii", newline="\n") as fh:
            if header:
                fh.write("%d %d %d\n" % (X.shape[0], X.shape[1], Y.shape[1]))
            for lo in range(0, X.shape[0], rows_per_block):
                hi = min(lo + rows_per_block, X.shape[0])
                fh.write(_format_rows(X[lo:hi], Y[lo:hi], base, label_base))


def _format_rows(X, Y, base, label_base):
    """Text lines of a slice of points."""
    labels = (Y.indices.astype(np.int64) + label_base).astype(str).tolist()
    ids = (X.indices.astype(np.int64) + base).astype(str)
    pairs = np.char.add(np.char.add(ids, ":"), X.data.astype(np.float32).astype(str)).tolist()
    lines = []
    ly, lx = Y.indptr, X.indptr
    for r in range(X.shape[0]):
        line = ",".join(labels[ly[r]:ly[r + 1]])
        if lx[r + 1] > lx[r]:
            line += " " + " ".join(pairs[lx[r]:lx[r + 1]])
        lines.append(line + "\n")
    return "".join(lines)
