"""Block parsers for the sparse multi-label text format (used by :mod:`embkit.xc.data`).

A *block* is a bytes object of whole lines, each ending with ``b"\\n"``.  A line is one point::

    labels  := id ("," [blanks] id)*          (absent when the line starts with a blank)
    feature := id ":" value
    line    := [labels] (blanks feature)* [blanks] ["\\r"]

where ``id`` is a run of ASCII digits, ``value`` a decimal number (``[-+]?digits[.digits][e[-+]digits]``)
and ``blanks`` spaces and tabs.  A line whose first token is a feature has no labels either, and a
blank line is a point with no labels and no features.

Two parsers produce the same :class:`ParsedBlock`:

* :func:`parse_block_fast` works on the block as a whole with numpy (character classes, number
  boundaries, the structure checked through the separators around each number, digits turned into
  integers column by column).  It returns None when anything is wrong or unusual;
* :func:`parse_block_slow` parses line by line in Python and raises a :class:`ValueError` naming
  the file and line of the first problem.

:func:`parse_block` runs the fast one and falls back to the slow one, which therefore decides what is
valid and what every error message says.
"""
import re
from dataclasses import dataclass

import numpy as np

__all__ = ["IdSpec", "ParsedBlock", "parse_block", "parse_block_fast", "parse_block_slow"]

#: Largest id the int32 CSR index arrays can hold.
MAX_ID = np.iinfo(np.int32).max
_NL, _CR, _COMMA, _COLON, _DOT, _ZERO = 10, 13, 44, 58, 46, 48
_MAX_ID_DIGITS = 10
_MAX_MANTISSA_DIGITS = 15  # below 2**53: the mantissa and the power of ten are exact doubles
_VALUE = re.compile(rb"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")  # unambiguous: linear on long digit runs
_BLANKS = re.compile(rb"[ \t]+")


@dataclass(frozen=True)
class IdSpec:
    """How ids are read: the base they are written in and the number of valid ids (None: any).

    Attributes
    ----------
    label_base, feature_base : int
        Written id of the first label / feature (0 or 1).
    n_labels, n_features : int or None
        Ids (after subtracting the base) must be below these; None accepts any id up to
        :data:`MAX_ID`.
    limit_origin : str
        Where the limits come from, for messages (e.g. ``"the header (line 1)"``).
    """

    label_base: int = 0
    feature_base: int = 0
    n_labels: int = None
    n_features: int = None
    limit_origin: str = "the declared sizes"


@dataclass
class ParsedBlock:
    """The points of one block, as CSR pieces (ids already shifted to 0-based).

    Attributes
    ----------
    n_rows : int
        Points (lines) in the block.
    label_counts, feature_counts : numpy.ndarray of int64, shape (n_rows,)
        Labels / features per point.
    labels, features : numpy.ndarray of int32
        Label and feature ids, point after point, in file order.
    values : numpy.ndarray of float32
        Feature values, aligned with `features`.
    """

    n_rows: int
    label_counts: np.ndarray
    labels: np.ndarray
    feature_counts: np.ndarray
    features: np.ndarray
    values: np.ndarray


def parse_block(block, first_line, spec, source):
    """Parse a block of whole lines, fast when it can, line by line when it must.

    Parameters
    ----------
    block : bytes
        Whole lines, the last one ending with ``b"\\n"``.
    first_line : int
        1-based line number of the block's first line in the file (for messages).
    spec : IdSpec
        Id bases and limits.
    source : str
        Name of the file (for messages).

    Returns
    -------
    ParsedBlock

    Raises
    ------
    ValueError
        Naming `source` and the line of the first malformed line.
    """
    parsed = parse_block_fast(block, spec)
    if parsed is None:
        parsed = parse_block_slow(block, first_line, spec, source)
    return parsed


# ---------------------------------------------------------------------------------------------------
# the vectorised parser

def parse_block_fast(block, spec):
    """Parse `block` with whole-array numpy operations; None if it is not plainly valid.

    None means "let :func:`parse_block_slow` decide": it is returned for every malformed block and
    also for a few valid but unusual ones (e.g. numbers too long to convert exactly here).
    """
    a = np.frombuffer(block, dtype=np.uint8)
    if not len(a) or a[-1] != _NL:
        return None
    newlines = np.flatnonzero(a == _NL)
    if np.count_nonzero(a < 32) != len(newlines) + np.count_nonzero(a == 9) + np.count_nonzero(a == _CR):
        return None  # control bytes other than tab, CR and LF
    starts, ends = _number_spans(a)
    before = a[starts - 1]  # a[-1] for the first number: the final LF, as if a line ended before
    after = a[ends]  # a number never ends the block (its last byte is LF)
    is_value = before == _COLON
    is_feature = (after == _COLON) & ~is_value
    is_label = ~(is_value | is_feature)
    n_rows = len(newlines)
    row = np.repeat(np.arange(n_rows), np.diff(np.searchsorted(starts, newlines), prepend=0))
    if not _structure_ok(a, before, after, is_value, is_feature, is_label, row):
        return None

    labels = _parse_ids(a, starts[is_label], ends[is_label])
    features = _parse_ids(a, starts[is_feature], ends[is_feature])
    values = _parse_values(block, a, starts[is_value], ends[is_value])
    if labels is None or features is None or values is None:
        return None
    labels -= spec.label_base
    features -= spec.feature_base
    if not (_in_range(labels, spec.n_labels) and _in_range(features, spec.n_features)):
        return None
    label_rows, feature_rows = row[is_label], row[is_feature]
    if not (_no_repeats(label_rows, labels) and _no_repeats(feature_rows, features)):
        return None
    return ParsedBlock(n_rows, np.bincount(label_rows, minlength=n_rows), labels.astype(np.int32),
                       np.bincount(feature_rows, minlength=n_rows), features.astype(np.int32), values)


def _number_spans(a):
    """Start and end (exclusive) offsets of the maximal runs of number bytes in `a`."""
    inside = np.zeros(len(a) + 2, dtype=bool)
    inside[1:-1] = (a > 32) & (a != _COMMA) & (a != _COLON)
    edges = np.flatnonzero(inside[1:] != inside[:-1])
    return edges[0::2], edges[1::2]


def _structure_ok(a, before, after, is_value, is_feature, is_label, row):
    """True when the separators around the numbers follow the line grammar (module docstring).

    Every colon must end a feature id and be followed directly by its value, and every comma must
    join two labels of the same line: the counts of both separators are compared with the places
    where they belong, so none can be anywhere else.  Carriage returns may only end a line.  That
    leaves blanks and line ends around values and feature ids, as the grammar wants.
    """
    n_features = int(np.count_nonzero(is_feature))
    if np.count_nonzero(a == _COLON) != n_features or np.count_nonzero(is_value) != n_features:
        return False
    # labels: a comma after a label leads to the next label of the same line; a label not at the
    # start of its line comes after a label and a comma
    idx = np.flatnonzero(is_label)
    linked = idx[after[idx] == _COMMA]
    if np.count_nonzero(a == _COMMA) != len(linked):
        return False
    if len(linked):
        nxt = linked + 1
        if nxt[-1] >= len(is_label) or not (is_label[nxt] & (row[nxt] == row[linked])).all():
            return False
    inner = idx[before[idx] != _NL]
    if len(inner):
        prev = inner - 1
        if prev[0] < 0 or not (is_label[prev] & (after[prev] == _COMMA) & (row[prev] == row[inner])).all():
            return False
    cr = np.flatnonzero(a == _CR)
    return not len(cr) or bool((a[cr + 1] == _NL).all())  # the block ends with LF, so cr + 1 exists


def _length_groups(keys):
    """Yield ``(key, members)``: the indices of `keys` (small non-negative ints) sharing each value."""
    if not len(keys):
        return
    if keys.min() == keys.max():
        yield int(keys[0]), slice(None)
        return
    order = np.argsort(keys.astype(np.uint16), kind="stable")  # a radix sort for 16-bit keys
    bounds = np.cumsum(np.bincount(keys))
    lo = 0
    for key, hi in enumerate(bounds):
        if hi > lo:
            yield key, order[lo:hi]
        lo = hi


def _parse_ids(a, starts, ends):
    """Integers written with ASCII digits only; None if a number has another byte or too many digits.

    Numbers of equal length are converted together, one digit position at a time.
    """
    out = np.zeros(len(starts), dtype=np.int64)
    lengths = ends - starts
    if len(lengths) and lengths.max() > _MAX_ID_DIGITS:
        return None
    for length, members in _length_groups(lengths):
        at = starts[members]
        value = np.zeros(len(at), dtype=np.int64)
        for j in range(length):
            digit = a[at + j] - np.uint8(_ZERO)  # non-digits wrap around to >= 10
            if digit.max() > 9:
                return None
            value *= 10
            value += digit
        out[members] = value
    if len(out) and out.max() > MAX_ID:
        return None
    return out


def _parse_values(block, a, starts, ends):
    """Values as float32: plain decimals digit by digit, anything else through :func:`_value`.

    Values of equal length and decimal point position are converted together.  None if a value is
    malformed or not finite.
    """
    n = len(starts)
    out = np.zeros(n, dtype=np.float64)
    if not n:
        return out.astype(np.float32)
    lengths = ends - starts
    dot_at = _dot_offsets(a, starts, lengths)
    n_digits = lengths - (dot_at >= 0)
    odd = np.flatnonzero((n_digits > _MAX_MANTISSA_DIGITS) | (n_digits == 0))
    keys = np.minimum(lengths, _MAX_MANTISSA_DIGITS + 1) * 32 + (dot_at + 1)  # dot_at < 16 unless odd
    keys[odd] = 0
    for key, members in _length_groups(keys):
        if key == 0:
            continue
        length, dot = divmod(key, 32)
        dot -= 1
        at = starts[members]
        mantissa = np.zeros(len(at), dtype=np.int64)
        worst = np.zeros(len(at), dtype=np.uint8)
        for j in range(length):
            if j == dot:
                continue
            digit = a[at + j] - np.uint8(_ZERO)
            np.maximum(worst, digit, out=worst)
            mantissa *= 10
            mantissa += digit
        out[members] = mantissa / 10.0 ** (length - dot - 1 if dot >= 0 else 0)
        bad = worst > 9
        if bad.any():
            odd = np.concatenate([odd, np.arange(n)[members][bad]])
    for i in odd:
        value = _value(block[starts[i]:ends[i]])
        if value is None:
            return None
        out[i] = value
    with np.errstate(over="ignore"):
        out = out.astype(np.float32)
    if not np.isfinite(out).all():
        return None
    return out


def _dot_offsets(a, starts, lengths):
    """Offset of the first "." in each number (-1: none), in one pass over the dots of the block."""
    dot_at = np.full(len(starts), -1, dtype=np.int64)
    dots = np.flatnonzero(a == _DOT)
    if not len(dots) or not len(starts):
        return dot_at
    owner = np.searchsorted(starts, dots, side="right") - 1      # the number starting at or before each dot
    inside = (owner >= 0) & (dots < starts[np.maximum(owner, 0)] + lengths[np.maximum(owner, 0)])
    dots, owner = dots[inside], owner[inside]
    numbers, first = np.unique(owner, return_index=True)         # dots ascend: the first of each number
    dot_at[numbers] = dots[first] - starts[numbers]
    return dot_at


def _in_range(ids, limit):
    return not len(ids) or (ids.min() >= 0 and (limit is None or ids.max() < limit))


def _no_repeats(rows, ids):
    """True unless an id occurs twice in the same row (`rows` ascending, ids in 0..MAX_ID)."""
    if len(ids) < 2:
        return True
    key = (rows.astype(np.int64) << 31) | ids
    if (np.diff(key) > 0).all():
        return True
    return bool((np.diff(np.sort(key)) != 0).all())


def _value(token):
    """float of a decimal number token, or None when it is not one."""
    if _VALUE.fullmatch(token) is None:
        return None
    return float(token)


# ---------------------------------------------------------------------------------------------------
# the line-by-line parser

class _LineError(ValueError):
    """A malformed line; the caller adds the file and line number."""


def parse_block_slow(block, first_line, spec, source):
    """Parse `block` line by line; raise ValueError naming `source` and the line on the first error."""
    label_counts, labels, feature_counts, features, values = [], [], [], [], []
    lines = block.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    for k, line in enumerate(lines):
        try:
            point_labels, point_features, point_values = parse_line(line, spec)
        except _LineError as exc:
            raise ValueError("%s, line %d: %s" % (source, first_line + k, exc)) from None
        label_counts.append(len(point_labels))
        labels.extend(point_labels)
        feature_counts.append(len(point_features))
        features.extend(point_features)
        values.extend(point_values)
    return ParsedBlock(len(lines), np.array(label_counts, dtype=np.int64), np.array(labels, dtype=np.int32),
                       np.array(feature_counts, dtype=np.int64), np.array(features, dtype=np.int32),
                       np.array(values, dtype=np.float64).astype(np.float32))


def parse_line(line, spec):
    """Labels, feature ids and values of one line (without its newline), ids 0-based.

    Raises
    ------
    _LineError
        Saying what is wrong (without the file and line).
    """
    if line.endswith(b"\r"):
        line = line[:-1]
    if b"\r" in line:
        raise _LineError("stray carriage return inside the line")
    tokens = _BLANKS.split(line.strip(b" \t")) if line.strip(b" \t") else []
    label_field = b""
    if tokens and line[:1] not in (b" ", b"\t") and b":" not in tokens[0]:
        parts, taken = [tokens[0]], 1
        while parts[-1].endswith(b",") and taken < len(tokens) and b":" not in tokens[taken]:
            parts.append(tokens[taken])  # "1, 2": blanks after a comma
            taken += 1
        label_field, tokens = b"".join(parts), tokens[taken:]
    point_labels = []
    if label_field:
        for part in label_field.split(b","):
            point_labels.append(_parse_id(part, "label", spec.label_base, spec.n_labels, spec.limit_origin))
    if len(set(point_labels)) != len(point_labels):
        raise _LineError("label %d appears twice" % _first_repeat(point_labels))
    point_features, point_values = [], []
    for token in tokens:
        if token.count(b":") != 1:
            raise _LineError("malformed feature %r: expected id:value" % _show(token))
        fid, value = token.split(b":")
        point_features.append(_parse_id(fid, "feature", spec.feature_base, spec.n_features, spec.limit_origin))
        number = _value(value)
        if number is None:
            raise _LineError("non-numeric value %r in feature %r" % (_show(value), _show(token)))
        with np.errstate(over="ignore"):
            in_range = np.isfinite(np.float32(number))
        if not in_range:
            raise _LineError("value %r in feature %r is out of the float32 range" % (_show(value), _show(token)))
        point_values.append(number)
    if len(set(point_features)) != len(point_features):
        raise _LineError("feature %d appears twice" % _first_repeat(point_features))
    return point_labels, point_features, point_values


def _parse_id(text, what, base, limit, limit_origin):
    """A 0-based id from its written form, checked against `base` and `limit`."""
    if not text:
        raise _LineError("empty %s id (a stray comma?)" % what)
    if text[:1] == b"-" and text[1:].isdigit():
        raise _LineError("negative %s id %s" % (what, _show(text)))
    if not (text.isdigit() and text.isascii()):
        raise _LineError("%s id %r is not a non-negative integer" % (what, _show(text)))
    if len(text.lstrip(b"0")) > _MAX_ID_DIGITS:
        raise _LineError("%s id %s is too large (at most %d)" % (what, _show(text), MAX_ID))
    written = int(text)
    if written > MAX_ID:
        raise _LineError("%s id %d is too large (at most %d)" % (what, written, MAX_ID))
    if written < base:
        raise _LineError("%s id %d is below the id base %d (ids are %d-based)" % (what, written, base, base))
    value = written - base
    if limit is not None and value >= limit:
        raise _LineError("%s id %d is out of range: %s gives %d %ss (ids %d..%d)"
                         % (what, written, limit_origin, limit, what, base, base + limit - 1))
    return value


def _first_repeat(ids):
    seen = set()
    for i in ids:
        if i in seen:
            return i
        seen.add(i)
    return None


def _show(token, limit=60):
    """A token for a message: decoded, and cut to ``limit`` characters (a token can be megabytes long)."""
    text = token[:limit * 4].decode("utf-8", "replace")
    return text if len(token) <= limit else "%s... (%d bytes)" % (text[:limit], len(token))
