"""Checks of user-given sparse matrices before scipy or a kernel touches their index arrays.

scipy's conversions (``tocsr``, ``sum_duplicates``) and embkit's nogil loops trust a matrix's index
arrays; a matrix built with ``check_format`` skipped, or edited in place, can hold indices out of its
shape, and then they read and write outside their buffers.  :func:`check_sparse` refuses such a matrix
with a ValueError naming it.
"""
import numpy as np

__all__ = ["check_sparse", "MAX_ROWS"]

#: Largest number of rows or columns (kernels index tables with int32).
MAX_ROWS = int(np.iinfo(np.int32).max)


def check_sparse(m, what, max_size=MAX_ROWS):
    """Raise ValueError naming ``what`` unless the sparse matrix ``m`` is well formed and at most ``max_size``
    in each dimension."""
    if any(n > max_size for n in m.shape):
        raise ValueError("%s has shape %s; embkit handles at most %d rows and columns" % (what, m.shape, max_size))
    try:
        if m.format in ("csr", "csc", "bsr"):
            m.check_format(full_check=True)
        elif m.format == "coo":
            for idx, n in ((m.row, m.shape[0]), (m.col, m.shape[1])):
                if len(idx) and (idx.min() < 0 or idx.max() >= n):
                    raise ValueError("index out of range [0, %d)" % n)
            if not len(m.row) == len(m.col) == len(m.data):
                raise ValueError("row, col and data differ in length")
    except ValueError as exc:
        raise ValueError("%s is not a valid %s matrix: %s" % (what, m.format, exc)) from None
