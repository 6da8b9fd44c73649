"""Plain-text tables and the cells of the evaluations' results."""
import math

__all__ = ["format_table", "number", "percent", "clean"]


def format_table(header, rows, align=None):
    """Format rows of strings as an aligned plain-text table.

    Parameters
    ----------
    header : sequence of str
        Column titles.
    rows : sequence of (sequence of str or None)
        Cells; ``None`` prints a rule and a row of length 1 a free-form note.
    align : str, optional
        One character per column, ``'<'`` or ``'>'``; by default the first
        column is left-aligned and the others right-aligned.

    Returns
    -------
    str
    """
    align = align or '<' + '>' * (len(header) - 1)
    widths = [len(h) for h in header]
    for row in rows:
        if row is not None and len(row) == len(header):
            widths = [max(w, len(c)) for w, c in zip(widths, row)]

    def line(cells):
        return '  '.join(c.ljust(w) if a == '<' else c.rjust(w)
                         for c, w, a in zip(cells, widths, align)).rstrip()

    rule = '  '.join('-' * w for w in widths)
    out = [line(header), rule]
    for row in rows:
        if row is None:
            out.append(rule)
        else:
            out.append(line(row) if len(row) == len(header) else '  '.join(row))
    return '\n'.join(out)


def number(value, digits=4):
    """``value`` with ``digits`` decimals, or ``n/a``."""
    return 'n/a' if value is None else '%.*f' % (digits, value)


def percent(value):
    """``value`` (a fraction) as a percentage with two decimals, or ``n/a``."""
    return 'n/a' if value is None else '%.2f%%' % (100.0 * value)


def clean(value):
    """Float or None (NaN and infinities become None)."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None
