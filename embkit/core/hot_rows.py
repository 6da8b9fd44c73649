"""Which output rows every training thread keeps its own copies of (the kernels' hot rows).

Threads that write the same rows of a table keep taking those rows' cache lines from each other.  A kernel
trainer's ``hot_rows(ids, every, scale)`` gives every thread its own copies of the rows ``ids``, merged into
the table every ``every`` examples, each merge adding ``scale`` times the thread's change (1 / threads: the
threads' mean; summed, the threads' changes to a row all of them move overshoot).  For the skip-gram
tables that is the rows of the most frequent words (an option: ``Word2Vec(hot_rows=N)``); a table of labels
or items is small and every example writes many of its rows, so there every row is hot that fits
:data:`HOT_ROW_BYTES` a thread (:func:`class_hot_rows`).
"""
import numpy as np

from embkit.core.registry import most_frequent

__all__ = ["HOT_MERGE_EVERY", "HOT_ROW_BYTES", "class_hot_rows"]

#: examples (centre words, pairs, rows) a thread trains between adding its changes of its hot rows to the table
HOT_MERGE_EVERY = 1024
#: most bytes of hot rows a thread copies when the model leaves their number to the trainer (the rows and their
#: base).  A thread copies them in at the start of every slice it trains and merges them back at its end, and a
#: chunk is cut into a few slices a thread: with many threads a slice is short, so the copies must stay small
#: beside a slice's work (2 MiB: 2,048 rows of 128 floats)
HOT_ROW_BYTES = 2 << 20


def class_hot_rows(setting, counts, W_out, workers):
    """The rows of ``W_out`` every one of ``workers`` training threads keeps copies of, most frequent class
    first (ties to the lower id), or None when every step writes the table.

    ``setting``: a number of rows, 0 (none), or None (as many as :data:`HOT_ROW_BYTES` holds a thread).  One
    worker has nothing to share: None.  ``counts`` (per class) order the rows when there is one per class;
    otherwise (a tree's nodes) the first rows are taken.
    """
    rows, dim = W_out.shape
    if workers <= 1 or setting == 0 or rows == 0:
        return None
    wanted = HOT_ROW_BYTES // (2 * dim * W_out.itemsize) if setting is None else setting
    order = counts if counts is not None and len(counts) == rows else np.zeros(rows, np.int64)
    return most_frequent(order, min(int(wanted), rows))
