"""Reading word2vec's text and binary vector files, each row checked against what the header declares.

Both formats start with a header line ``<count> <dimension>``.  A text row is ``word v1 ... vD`` (fields
separated by spaces or tabs, the line ended by LF or CRLF); a binary row is the word's bytes, a space and
``D`` little-endian float32 values, optionally followed by a line feed (word2vec writes one, gensim none).

What is refused, with a :class:`ValueError` naming the file and the line (text) or the vector (binary):
a header that is not two integers or declares more than the file can hold, a row with another number of
values than the dimension, a value that is not a decimal number or not finite in float32, an empty word or
one holding a control character, a word that repeats an earlier one (unless ``duplicates="first"``), fewer
rows than declared, and anything but blanks after the declared rows.  Text or binary is decided by the
header and the whole first row: it is text when its line is a valid text row of the declared dimension, or
looks like text (it decodes, and holds no control character but tabs: then its errors are a text row's);
else it is binary when it is a valid binary row; else the file is refused.  ``binary=`` overrides it.
"""
import logging
import os
import re

import numpy as np

from embkit.core.binary_files import COMPRESSED_SUFFIXES, open_binary
from embkit.core.read_errors import reading

logger = logging.getLogger(__name__)

__all__ = ["DUPLICATE_RULES", "read_word2vec_format"]

#: What a repeated word does: ``"error"`` names both lines; ``"first"`` keeps the first and counts the rest.
DUPLICATE_RULES = ("error", "first")
#: Longest header line, and longest word, in bytes.
MAX_HEADER_BYTES = 256
MAX_WORD_BYTES = 1 << 16
#: Longest text value in characters (a float32 printed with every digit takes about 50).
MAX_VALUE_CHARS = 64
_NUMBER = rb"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_NUMBER_RE = re.compile(_NUMBER)
_TEXT_ROW = re.compile(rb"([^ \t]+)((?:[ \t]+" + _NUMBER + rb")*)[ \t]*")
_CONTROL = re.compile(rb"[\x00-\x1f\x7f]")
_HEADER = re.compile(rb"[ \t]*([0-9]{1,19})[ \t]+([0-9]{1,19})[ \t]*\r?\n?")
_READ_BYTES = 1 << 20


class _Stream:
    """A binary file read through a buffer, by lines (text rows), up to a space (binary words) or by counts
    of bytes (binary vectors); :meth:`mark` and :meth:`reset` read a stretch twice."""

    def __init__(self, fh):
        self.fh, self.buf, self.pos, self.offset, self.marked = fh, b"", 0, 0, None

    def _fill(self, need):
        """Buffer at least ``need`` unread bytes, if the file has them; returns how many are buffered."""
        while len(self.buf) - self.pos < need:
            data = self.fh.read(max(_READ_BYTES, need))
            if not data:
                break
            keep = self.pos if self.marked is None else self.marked
            self.buf, self.offset, self.pos = self.buf[keep:] + data, self.offset + keep, self.pos - keep
            if self.marked is not None:
                self.marked = 0
        return len(self.buf) - self.pos

    def mark(self):
        self.marked = self.pos

    def reset(self):
        self.pos, self.marked = self.marked, None

    def at(self):
        """Byte offset of the next unread byte."""
        return self.offset + self.pos

    def _until(self, byte, limit, at_end):
        """The bytes up to ``byte`` (included), or None when it is not within ``limit`` bytes; at the end of
        the file, the rest if ``at_end`` else None."""
        while True:
            end = self.buf.find(byte, self.pos, self.pos + limit + 1)
            if end >= 0:
                break
            have = len(self.buf) - self.pos
            if have > limit:
                return None
            if self._fill(have + 1) == have:
                if not at_end:
                    return None
                end = len(self.buf) - 1
                break
        out = self.buf[self.pos:end + 1]
        self.pos = end + 1
        return out

    def line(self, limit):
        """The next line with its line end (b"" at the end of the file), or None when longer than ``limit``."""
        return self._until(b"\n", limit, True)

    def word(self, limit):
        """The bytes up to the next space (consumed, not returned), or None if none is within ``limit``."""
        word = self._until(b" ", limit, False)
        return None if word is None else word[:-1]

    def take(self, n):
        """The next ``n`` bytes (fewer at the end of the file)."""
        self._fill(n)
        out = self.buf[self.pos:self.pos + n]
        self.pos += len(out)
        return out

    def peek(self, n):
        self._fill(n)
        return self.buf[self.pos:self.pos + n]

    def rest_is_blank(self):
        """Whether nothing but blanks and line ends remains."""
        while self._fill(1):
            chunk, self.pos = self.buf[self.pos:], len(self.buf)
            if chunk.strip(b" \t\r\n"):
                return False
        return True


class _Rows:
    """The vectors read so far: one preallocated table when the file's size bounds it, else growing blocks."""

    def __init__(self, count, dim, exact):
        self.dim, self.n, self.filled = dim, 0, 0
        self.blocks = [np.empty((count if exact else min(count, max(1, (1 << 22) // dim)), dim), np.float32)]

    def append(self, row):
        if self.filled == len(self.blocks[-1]):
            self.blocks.append(np.empty((max(1, 2 * len(self.blocks[-1])), self.dim), np.float32))
            self.filled = 0
        self.blocks[-1][self.filled] = row
        self.filled += 1
        self.n += 1

    def table(self):
        done, parts = 0, []
        for block in self.blocks:
            take = min(len(block), self.n - done)
            parts.append(block[:take])
            done += take
        return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _header(path, stream):
    raw = stream.line(MAX_HEADER_BYTES)
    match = _HEADER.fullmatch(raw or b"")
    if not match:
        shown = (raw or stream.peek(80))[:80].decode("utf-8", "replace").rstrip()
        raise ValueError("%s, line 1: expected the header '<count> <dimension>', got %r" % (path, shown))
    count, dim = int(match.group(1)), int(match.group(2))
    if dim < 1:
        raise ValueError("%s, line 1: the dimension must be >= 1, got %d" % (path, dim))
    return count, dim


def _check_size(path, count, dim, compressed):
    """Refuse a header declaring more rows than the file can hold (before anything is allocated for them)."""
    size = os.path.getsize(path) if "://" not in path else None
    if size is None:
        return False
    # a row takes at least a word, a separator and per value a digit and a separator (text) or 4 bytes
    limit = size * 1100 if compressed else size         # the most a compressed byte can expand to
    if count * (2 + 2 * dim) > limit:
        raise ValueError("%s, line 1: the header declares %d vectors of dimension %d, more than the file's %d "
                         "bytes can hold" % (path, count, dim, size))
    return not compressed


def _decode_word(raw, unicode_errors):
    """The word of ``raw`` bytes, or a ValueError saying what is wrong with it."""
    if not raw:
        raise ValueError("an empty word")
    if len(raw) > MAX_WORD_BYTES:
        raise ValueError("a word of more than %d bytes" % MAX_WORD_BYTES)
    bad = _CONTROL.search(raw)
    if bad:
        raise ValueError("the word %r holds the control character %r"
                         % (raw[:40].decode("utf-8", "replace"), chr(raw[bad.start()])))
    try:
        return raw.decode("utf-8", unicode_errors)
    except UnicodeDecodeError as exc:
        raise ValueError("the word %r is not valid UTF-8 (%s; unicode_errors='replace' or 'ignore' reads it)"
                         % (raw[:40], exc.reason)) from None


def _text_row(raw, dim, unicode_errors):
    """``(word, float32 values)`` of a text row (its line end included), or a ValueError saying why not."""
    body = raw[:-1] if raw.endswith(b"\n") else raw
    if body.endswith(b"\r"):
        body = body[:-1]
    if body[:1] in (b" ", b"\t"):
        raise ValueError("the row starts with a blank, not a word")
    match = _TEXT_ROW.fullmatch(body)
    if match is None:
        fields = body.split()
        bad = next((f for f in fields[1:] if not _NUMBER_RE.fullmatch(f)), None)
        if not fields:
            raise ValueError("an empty row")
        if bad is not None:
            raise ValueError("the value %r is not a decimal number" % bad[:40].decode("utf-8", "replace"))
        raise ValueError("a control character in the row")
    values = match.group(2).split()
    if len(values) != dim:
        raise ValueError("the row has %d values, the header declares the dimension %d" % (len(values), dim))
    if any(len(v) > MAX_VALUE_CHARS for v in values):
        raise ValueError("a value of more than %d characters" % MAX_VALUE_CHARS)
    with np.errstate(over="ignore"):                     # beyond float32: infinity, refused as not finite
        return _decode_word(match.group(1), unicode_errors), np.array(values, dtype=np.float32)


def _binary_row(stream, dim, unicode_errors, first):
    """``(word, float32 values)`` of the binary row at the stream, or a ValueError saying why not."""
    if not first and stream.peek(1) == b"\n":
        stream.take(1)                      # word2vec ends every vector with a line feed
    raw = stream.word(MAX_WORD_BYTES)
    if raw is None:
        raise ValueError("no word ended by a space within %d bytes" % MAX_WORD_BYTES
                         if stream.peek(1) else "the file ends before the row")
    word = _decode_word(raw, unicode_errors)
    data = stream.take(4 * dim)
    if len(data) < 4 * dim:
        raise ValueError("the file ends inside the vector of %r (%d of %d bytes)" % (word, len(data), 4 * dim))
    return word, np.frombuffer(data, dtype="<f4")


def _looks_like_text(raw, unicode_errors):
    """Whether a line decodes and holds no control character but tabs and its line end: text, even if
    not a valid row (a binary row nearly always holds a control byte or invalid UTF-8 in its floats)."""
    body = raw.rstrip(b"\r\n").replace(b"\t", b" ")
    try:
        body.decode("utf-8", unicode_errors)
    except UnicodeDecodeError:
        return False
    return len(body.split()) >= 2 and not _CONTROL.search(body)


def _first_row_is_binary(stream, dim, unicode_errors):
    """The format of the first row: text when it is a valid text row or looks like text (then a bad value
    is a text error), else binary when it is a valid binary row; ValueError naming line 2 otherwise."""
    limit = MAX_WORD_BYTES + dim * (MAX_VALUE_CHARS + 1) + 2
    stream.mark()
    raw = stream.line(limit)
    stream.reset()
    try:
        if raw is None:
            raise ValueError("longer than %d bytes" % limit)
        _text_row(raw, dim, unicode_errors)
        return False
    except ValueError as exc:
        if raw is not None and _looks_like_text(raw, unicode_errors):
            raise ValueError("line 2: %s" % exc) from None
        text_error = exc
    stream.mark()
    try:
        _binary_row(stream, dim, unicode_errors, first=True)
        return True
    except ValueError as exc:
        raise ValueError("line 2: the first row is neither a text row (%s) nor a binary row (%s)"
                         % (text_error, exc)) from None
    finally:
        stream.reset()


def read_word2vec_format(path, binary=None, unicode_errors="strict", duplicates="error"):
    """The words and vectors of a word2vec text or binary file, checked row by row.

    Parameters
    ----------
    path : str
        Local file (plain, ``.gz``, ``.bz2``, ...) or URL.
    binary : bool or None
        The format; None decides it from the header and the first row (see the module docstring).
    unicode_errors : str
        How words that are not valid UTF-8 are decoded (``"strict"``: an error naming the row).
    duplicates : {"error", "first"}
        A repeated word is an error naming both rows, or (``"first"``) skipped, the first kept, with a
        warning counting the rows skipped.

    Returns
    -------
    words : list of str
    vectors : numpy.ndarray of float32, one row per word
    binary : bool
        The format read.

    Raises
    ------
    ValueError
        Naming the file and the line or vector (see the module docstring).
    """
    if duplicates not in DUPLICATE_RULES:
        raise ValueError("duplicates must be one of %s, got %r" % (", ".join(DUPLICATE_RULES), duplicates))
    path = os.fspath(path)
    with reading(path, "vectors file"), open_binary(path) as fh:
        stream = _Stream(fh)
        count, dim = _header(path, stream)
        exact = _check_size(path, count, dim, path.endswith(COMPRESSED_SUFFIXES))
        if count and binary is None:
            try:
                binary = _first_row_is_binary(stream, dim, unicode_errors)
            except ValueError as exc:
                raise ValueError("%s, %s" % (path, exc)) from None
        read = _read_binary if binary else _read_text
        words, vectors = read(path, stream, count, dim, unicode_errors, duplicates, exact)
        if not stream.rest_is_blank():
            where = "vector %d" % (count + 1) if binary else "line %d" % (count + 2)
            raise ValueError("%s, %s: more data after the %d vectors the header declares" % (path, where, count))
    return words, vectors, bool(binary)


def _read_text(path, stream, count, dim, unicode_errors, duplicates, exact):
    limit = MAX_WORD_BYTES + dim * (MAX_VALUE_CHARS + 1) + 2
    rows, seen = _Rows(count, dim, exact), _Seen(path, duplicates, "line")
    for k in range(count):
        number = k + 2
        raw = stream.line(limit)
        if not raw:
            raise ValueError("%s, line %d: the file ends after %d of the %d vectors the header declares"
                             % (path, number, k, count) if raw == b"" else
                             "%s, line %d: longer than %d bytes" % (path, number, limit))
        try:
            word, values = _text_row(raw, dim, unicode_errors)
        except ValueError as exc:
            raise ValueError("%s, line %d: %s" % (path, number, exc)) from None
        if seen.first(word, number):
            rows.append(_finite(path, "line %d" % number, word, values))
    return seen.words(count), rows.table()


def _read_binary(path, stream, count, dim, unicode_errors, duplicates, exact):
    rows, seen = _Rows(count, dim, exact), _Seen(path, duplicates, "vector")
    for k in range(count):
        start = stream.at()
        try:
            word, values = _binary_row(stream, dim, unicode_errors, first=k == 0)
        except ValueError as exc:
            raise ValueError("%s, vector %d (byte %d): %s" % (path, k + 1, start, exc)) from None
        if seen.first(word, k + 1):
            rows.append(_finite(path, "vector %d" % (k + 1), word, values))
    return seen.words(count), rows.table()


def _finite(path, where, word, values):
    if not np.isfinite(values).all():
        raise ValueError("%s, %s: the vector of %r holds NaN or infinity (or a value beyond float32)"
                         % (path, where, word))
    return values


class _Seen:
    """The words read, by the row that had them first; the rule for a repeated word."""

    def __init__(self, path, rule, unit):
        self.path, self.rule, self.unit = path, rule, unit
        self.rows = {}
        self.skipped = []

    def first(self, word, number):
        """Whether ``word`` (of row ``number``) is new; a repeat raises (rule ``error``) or is counted."""
        earlier = self.rows.setdefault(word, number)
        if earlier == number:
            return True
        if self.rule == "error":
            raise ValueError("%s, %s %d: the word %r repeats %s %d (duplicates='first' keeps the first)"
                             % (self.path, self.unit, number, word, self.unit, earlier))
        self.skipped.append((word, number, earlier))
        return False

    def words(self, count):
        if self.skipped:
            word, number, earlier = self.skipped[0]
            logger.warning("%s: %d of %d vectors skipped: their words repeat earlier ones (the first kept), e.g. "
                           "%r at %s %d (first at %d)", self.path, len(self.skipped), count, word, self.unit,
                           number, earlier)
        return list(self.rows)
