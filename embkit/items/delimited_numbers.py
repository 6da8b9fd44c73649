"""Vectorised parsing of delimited unsigned decimal numbers, a block of whole lines at a time.

Rating files hold tens of millions of short lines such as ``196\\t242\\t3\\t881250949``.  Converting them
number by number in Python, with ``np.loadtxt`` or with ``np.fromstring(sep=...)`` is slow; here the field
boundaries of a whole block are found with one comparison pass, and each field is converted eight digits at
a time: the eight bytes that end the field are read as one little-endian 64-bit word, the bytes before the
field are masked to zero (leading zeros), and three multiply-shift-mask steps fold the digits into the
number (SIMD within a register).  That is a few dozen numpy operations per *column* of the block rather
than work per character or per line.

The fast path only decides whether a block is well formed.  When it raises :class:`BlockFormatError`,
the caller runs its per-line checker through :func:`locate_error`, which names the file, the line and
the problem; a slow pass over one block is cheap next to reading the file.
"""
import numpy as np

from embkit.core.line_blocks import whole_line_blocks

__all__ = ["BlockFormatError", "iter_line_blocks", "squeeze_blank_lines", "parse_block",
           "parse_tolerating_blank_lines", "line_error", "locate_error"]

#: Bytes read at a time.
BLOCK_BYTES = 1 << 22
#: Longest number of digits of a field (integer part and fraction each).
MAX_DIGITS = 16
_PAD = 2 * 8  # bytes in front of a block, so the words ending at its first fields can be read
_U = np.uint64
_ASCII_ZEROS = _U(0x3030303030303030)
_DIGIT_FLAGS = (_U(0x7676767676767676), _U(0x8080808080808080))
#: Mask keeping the last ``k`` bytes (the high ones) of a little-endian word, by ``k = 0..8``.
_KEEP_MASKS = np.array([0] + [((1 << 64) - 1) >> (8 * (8 - k)) << (8 * (8 - k)) for k in range(1, 9)],
                       dtype=np.uint64)
_NEWLINE = 10
_BOM = b"\xef\xbb\xbf"
_DOT = 46


class BlockFormatError(ValueError):
    """A block is not made of well-formed lines; :func:`locate_error` says where and why."""


def iter_line_blocks(fh, block_bytes=BLOCK_BYTES):
    """Yield ``(block, first_line)``: runs of whole lines of a binary file, and the 1-based number of the first.

    Every block ends with a newline (one is added after a last line without it).  A carriage return before
    a line feed is dropped, so CRLF files read as LF files; one anywhere else stays, for the parsers to refuse
    as the control character it is.  A UTF-8 byte order mark at the start is skipped.
    """
    line = 1
    for block in whole_line_blocks(fh, block_bytes):
        if line == 1 and block.startswith(_BOM):
            block = block[len(_BOM):]
        if b"\r" in block:
            block = block.replace(b"\r\n", b"\n")
        yield block, line
        line += block.count(b"\n")


def squeeze_blank_lines(block):
    """``block`` without empty lines (the fast path reads them as fields)."""
    while b"\n\n" in block:
        block = block.replace(b"\n\n", b"\n")
    return block[1:] if block.startswith(b"\n") else block


def _words_ending_at(a, ends):
    """The eight bytes before each position of ``ends``, as little-endian uint64 words."""
    words = np.ndarray(shape=(len(a) - 7,), dtype="<u8", buffer=a, strides=(1,))  # a word at every byte
    return words[ends - 8]


def _fold_digits(words, keep):
    """Values of the last ``keep`` (0-8) ASCII digits of each word, and flags of non-digit bytes.

    The first byte of a word is its least significant one, so the digits sit in the high bytes and the
    bytes masked to zero in the low ones read as leading zeros.  A flags word has bit 7 of a byte set
    where that byte is not a digit.
    """
    w = words ^ _ASCII_ZEROS  # '0'..'9' -> 0..9 with no borrow between bytes; anything else -> > 9
    w &= _KEEP_MASKS[keep]
    flags = (w + _DIGIT_FLAGS[0]) | w
    w = (w * _U(10) + (w >> _U(8))) & _U(0x00FF00FF00FF00FF)       # pairs of digits
    w = (w * _U(100) + (w >> _U(16))) & _U(0x0000FFFF0000FFFF)     # groups of four
    w = (w * _U(10000) + (w >> _U(32))) & _U(0x00000000FFFFFFFF)   # all eight
    return w, flags


def _parse_digits(a, ends, lengths):
    """Unsigned integers of the digit runs ``a[ends - lengths:ends]`` (1 to MAX_DIGITS digits each)."""
    if len(ends) == 0:
        return np.zeros(0, dtype=np.uint64)
    longest = lengths.max()
    if lengths.min() < 1 or longest > MAX_DIGITS:
        raise BlockFormatError("empty or too long field")
    value, flags = _fold_digits(_words_ending_at(a, ends), np.minimum(lengths, 8))
    bad = np.bitwise_or.reduce(flags)
    if longest > 8:
        high, flags = _fold_digits(_words_ending_at(a, ends - 8), np.clip(lengths - 8, 0, 8))
        value += high * _U(100000000)
        bad |= np.bitwise_or.reduce(flags)
    if bad & _DIGIT_FLAGS[1]:
        raise BlockFormatError("non-digit character")
    return value


def _split_fields(a, n_lines, n_fields, seps):
    """Field ends and lengths (two ``n_lines x n_fields`` arrays) of the padded block ``a``."""
    is_boundary = a == _NEWLINE
    for sep in seps:
        is_boundary |= a == sep
    bounds = np.flatnonzero(is_boundary)
    if len(bounds) != n_lines * n_fields:
        raise BlockFormatError("wrong number of fields")
    ends = bounds.reshape(n_lines, n_fields)
    if n_lines and not (a[ends[:, -1]] == _NEWLINE).all():
        raise BlockFormatError("wrong number of fields")
    starts = np.empty_like(bounds)
    starts[0:1] = _PAD
    starts[1:] = bounds[:-1] + 1
    return ends, ends - starts.reshape(n_lines, n_fields)


def _parse_decimal(a, ends, lengths, dots):
    """Float values of fields ``digits[.digits]``; ``dots`` holds the position of each field's dot or -1."""
    has_dot = dots >= 0
    whole_len = np.where(has_dot, lengths - (ends - dots), lengths)
    whole = _parse_digits(a, np.where(has_dot, dots, ends), whole_len).astype(np.float64)
    if has_dot.any():
        rows = np.flatnonzero(has_dot)
        frac_len = ends[rows] - dots[rows] - 1
        frac = _parse_digits(a, ends[rows], frac_len).astype(np.float64)
        whole[rows] += frac / 10.0 ** frac_len
    return whole


def parse_block(block, n_fields, seps=b"\t", decimal=(), order=None):
    """Parse a block of lines of ``n_fields`` unsigned numbers separated by any byte of ``seps``.

    Parameters
    ----------
    block : bytes
        Whole lines, each ending with ``\\n``, no carriage returns, no empty lines.
    n_fields : int
        Fields per line.
    seps : bytes
        Field separators (each byte is one).
    decimal : sequence of int
        Columns that may hold one decimal point (``3.5``, ``4.0``); the others hold digits only.
    order : bytes, optional
        The separator after each field but the last, when each has its own (``b",,--"`` for
        ``1,5,2005-09-06``); by default any byte of ``seps`` may follow any field.

    Returns
    -------
    list of numpy.ndarray
        One array per column: uint64, or float64 for the ``decimal`` columns.

    Raises
    ------
    BlockFormatError
        A line has another number of fields, an empty field, a character other than digits (and one
        dot in a decimal column), a number of more than :data:`MAX_DIGITS` digits, or a separator out
        of ``order``.
    """
    a = np.frombuffer(b"0" * _PAD + block, dtype=np.uint8)
    ends, lengths = _split_fields(a, block.count(b"\n"), n_fields, seps)
    if order is not None and len(ends) and not (a[ends[:, :-1]] == np.frombuffer(order, np.uint8)).all():
        raise BlockFormatError("separators out of order")
    dots_at = np.flatnonzero(a == _DOT) if b"." in block else np.zeros(0, dtype=np.int64)
    # the field of each dot: position of the first field end at or after it, in row-major order
    dot_field = np.searchsorted(ends.ravel(), dots_at)
    if len(dot_field) and (np.any(np.diff(dot_field) == 0)
                           or not np.isin(dot_field % n_fields, list(decimal)).all()):
        raise BlockFormatError("misplaced decimal point")
    columns = []
    for col in range(n_fields):
        if col in decimal:
            dots = np.full(len(ends), -1, dtype=np.int64)
            mine = dot_field % n_fields == col
            dots[dot_field[mine] // n_fields] = dots_at[mine]
            columns.append(_parse_decimal(a, ends[:, col], lengths[:, col], dots))
        else:
            columns.append(_parse_digits(a, ends[:, col], lengths[:, col]))
    return columns


def parse_tolerating_blank_lines(parse, block, *args):
    """``parse(block, *args)``, tried again on the block without its empty lines if it fails and has some.

    Empty lines are rare, so the common path does not pay for looking for them.
    """
    try:
        return parse(block, *args)
    except BlockFormatError:
        if b"\n\n" not in block and not block.startswith(b"\n"):
            raise
    return parse(squeeze_blank_lines(block), *args)


def line_error(path, number, problem, line):
    """``ValueError("<path>, line <number>: <problem>: '<line>'")``, the line cut to 80 characters."""
    shown = line if len(line) <= 80 else line[:77] + "..."
    return ValueError("%s, line %d: %s: %r" % (path, number, problem, shown))


def locate_error(block, first_line, path, check_line):
    """Find the first bad line of a block the fast path refused, and raise a ValueError naming it.

    Parameters
    ----------
    block : bytes
        The block, as given by :func:`iter_line_blocks` (before blank lines are squeezed).
    first_line : int
        1-based number of its first line in the file.
    path : str
        File name for the message.
    check_line : callable
        Called with each non-empty line (str); raises ValueError saying what is wrong with it.

    Raises
    ------
    ValueError
        ``"<path>, line <n>: <problem>: '<line>'"``.
    """
    for offset, raw in enumerate(block.split(b"\n")[:-1]):
        if not raw:
            continue
        text = raw.decode("utf-8", errors="replace")
        try:
            check_line(text)
        except ValueError as exc:
            raise line_error(path, first_line + offset, exc, text) from None
    last = first_line + block.count(b"\n") - 1
    raise ValueError("%s, lines %d-%d: malformed (no single line could be blamed)" % (path, first_line, last))
