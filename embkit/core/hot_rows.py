"""Which rows every training thread keeps its own copies of (the kernels' hot rows), and how it writes them back.

Threads that write the same rows of a table keep taking those rows' cache lines from each other.  A kernel
trainer's ``hot_rows(ids, every, scale, limit, ...)`` gives every thread its own copies of the rows ``ids``
(:mod:`embkit._kernels.hot`): a thread copies a row in at its first step on it and adds ``scale`` times its
change to the table after ``limit`` steps on the copy, every ``every`` examples and at the end of a slice.

- Word windows (:func:`word_hot_rows`; by default for skip-gram): the output rows of the most frequent words
  and their input rows (:data:`WORD_HOT_INPUTS`), the changes summed (as the threads'
  steps on the table would add up) and written back after a few steps, so that the steps all threads hold
  back on a row stay bounded (:data:`HOT_PENDING_STEPS`, :data:`HOT_PENDING_INPUT_STEPS`).
  :data:`WORD_HOT_BANKS` lets one thread hold its copies as many threads would, to study their quality on
  few cores.
- A table of labels (:func:`class_hot_rows`, the sampled XC solver): small, and every example writes many of its
  rows, so every row is hot that fits :data:`HOT_ROW_BYTES` a thread; the threads' mean is added every
  :data:`HOT_MERGE_EVERY` examples.
- Item pairs (:func:`pair_hot_rows`; only when asked): the output rows of the most counted items, written
  back as the word windows' are.
"""
import numpy as np

from embkit.core.registry import most_frequent
from embkit.core.threads import running_threads

__all__ = ["HOT_MERGE_EVERY", "HOT_ROW_BYTES", "WORD_HOT_ROW_BYTES", "WORD_FLUSH_EVERY", "HOT_PENDING_STEPS",
           "WORD_HOT_INPUTS", "WORD_HOT_INPUTS_FROM_HOLDERS", "HOT_PENDING_INPUT_STEPS", "WORD_HOT_BANKS",
           "HOT_INPUT_SCALE", "WORD_HOT_FROM_HOLDERS", "PAIR_FLUSH_EVERY", "class_hot_rows", "steps_a_copy",
           "copies_inputs", "word_hot_rows", "pair_hot_rows"]

#: examples (rows, pairs) a thread trains between adding the mean of its changes of its hot label rows
HOT_MERGE_EVERY = 1024
#: most bytes of hot label rows a thread copies when the model leaves their number to the trainer (the rows
#: and their base; 2 MiB: 2,048 rows of 128 floats)
HOT_ROW_BYTES = 2 << 20
#: the same for a table of words (copies of the input table take as much again): 400 KiB, 512 rows of 100
#: floats.  On two threads more rows cost more copying than they save (BENCHMARKS.md)
WORD_HOT_ROW_BYTES = 400 << 10
#: centre words a thread trains between two write-backs of all its copies of word rows (a copy also goes back
#: after its steps' limit); a slice's end writes them back too
WORD_FLUSH_EVERY = 65536
#: steps on one word's row that a run's threads may hold in their copies at once: a thread writes a copy back
#: after ``HOT_PENDING_STEPS // workers`` steps on it.  The threads' changes are summed, so held-back steps act
#: as stale steps on the row; sixteen threads holding 32 steps each lost the model, 8 each kept its quality
#: (BENCHMARKS.md)
HOT_PENDING_STEPS = 128
#: whether a word-window trainer's threads copy the hot words' input rows as well as their output rows: True,
#: False, or None (skip-gram from :data:`WORD_HOT_INPUTS_FROM_HOLDERS` holders of copies on; not CBOW's, not
#: measured).  Under the bound
#: :data:`HOT_PENDING_INPUT_STEPS` they kept the quality of the output rows' copies alone as 4 to 64 threads
#: (16 cores, and :data:`WORD_HOT_BANKS` on one core) and trained 1.06-1.11x them at 4 threads, 1.05-1.26x at
#: 8 and 1.06-1.17x at 16 on 16 cores; written back after 8 steps, as the output rows are, they cost 2-2.5
#: analogy points (BENCHMARKS.md, "Hot rows")
WORD_HOT_INPUTS = None
#: fewest holders of copies from which the input rows are copied too when :data:`WORD_HOT_INPUTS` is None: as
#: the output rows (:data:`WORD_HOT_FROM_HOLDERS`), from where their gain was measured
WORD_HOT_INPUTS_FROM_HOLDERS = 4
#: fewest holders of copies (threads running at once, :func:`~embkit.core.threads.running_threads`, or sets
#: of copies with :data:`WORD_HOT_BANKS`) from which a skip-gram trainer copies the hot rows when the model
#: leaves their number to it; with fewer, the threads share the
#: tables.  On two cores the copies' own cost (7-8 % of a thread) outweighed what they saved where the two
#: cores share a cache (two threads 1.83-1.88x one thread against 1.93-1.95x sharing, four sittings) and
#: gained 4 % where they do not, and four threads on two cores made the same trade; on 16 cores they gained
#: 1.04-1.15x at 4 threads and 1.08-1.29x at 16 (BENCHMARKS.md, "Hot rows" and "2 cores")
WORD_HOT_FROM_HOLDERS = 4
#: the same bound for the copies of input rows: a frequent word's input row takes a step at nearly every
#: window, and sixteen threads holding 8 steps of one each lost 2-2.5 analogy points on 16 cores where 4 each
#: kept the quality (BENCHMARKS.md, "Hot rows")
HOT_PENDING_INPUT_STEPS = 64
#: sets of copies each thread of a word-window trainer deals its sentences to in turn, one after another, each
#: set written back after its own steps: one thread then holds its copies back as this many threads would, so
#: that the quality of many threads' copies can be studied on few cores (1: one set, for training)
WORD_HOT_BANKS = 1
#: share of a thread's change of an input row's copy that its write-back adds.  Sixteen threads' summed
#: changes of the frequent words' input rows overshoot; half of them, at the output rows' bound, kept most of
#: the quality as 16 threads on one core, but cost half a point to a point of analogy at 2 to 16 threads
#: (BENCHMARKS.md, "Hot rows")
HOT_INPUT_SCALE = 1.0
#: pairs a thread of the item pairs trainer trains between two write-backs of all its copies (a copy also goes
#: back after its steps' limit, :data:`HOT_PENDING_STEPS`); a slice's end writes them back too
PAIR_FLUSH_EVERY = 65536


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


def steps_a_copy(pending, holders):
    """Steps on one row a holder's copy takes before going back, so that ``holders`` hold at most ``pending``
    steps of the row back between them (at least one)."""
    return max(1, pending // holders)


def copies_inputs(holders, skip_gram=True):
    """Whether ``holders`` holders of copies of the hot words' rows copy their input rows too (by default
    skip-gram's only, where they were measured)."""
    if WORD_HOT_INPUTS is None:
        return skip_gram and holders >= WORD_HOT_INPUTS_FROM_HOLDERS
    return bool(WORD_HOT_INPUTS)


def word_hot_rows(setting, counts, dim, workers, skip_gram=True):
    """The keyword arguments of a word-window trainer's ``hot_rows``.

    The output rows (and as :data:`WORD_HOT_INPUTS` says the input rows) of the most frequent of the words of
    ``counts`` (``setting`` of them; None: as many as :data:`WORD_HOT_ROW_BYTES` holds a thread at ``dim``
    floats a row for skip-gram from :data:`WORD_HOT_FROM_HOLDERS` workers running at once on, none for CBOW,
    whose analogy accuracy the copies lowered; none with one worker holding one set), each thread's change
    summed into the tables after ``HOT_PENDING_STEPS // workers`` steps on an output row
    (``HOT_PENDING_INPUT_STEPS // workers`` on an input row, :data:`HOT_INPUT_SCALE` of its change) and every
    :data:`WORD_FLUSH_EVERY` centre words.  With :data:`WORD_HOT_BANKS` sets of copies a thread, the bounds
    and the defaults count each set as a thread.  The defaults count the workers that run at once
    (:func:`~embkit.core.threads.running_threads`: threads beyond the cores take turns on one, where no other
    core takes their rows' cache lines), the bounds every worker.
    """
    ids = None
    holders = max(1, workers) * WORD_HOT_BANKS
    running = running_threads(workers) * WORD_HOT_BANKS
    if setting is None and (not skip_gram or running < WORD_HOT_FROM_HOLDERS):
        setting = 0
    if holders > 1 and setting != 0 and len(counts):
        wanted = WORD_HOT_ROW_BYTES // (2 * dim * 4) if setting is None else setting
        ids = most_frequent(counts, min(int(wanted), len(counts)))
    return dict(ids=ids, every=WORD_FLUSH_EVERY, limit=steps_a_copy(HOT_PENDING_STEPS, holders),
                inputs=copies_inputs(running, skip_gram), limit_in=steps_a_copy(HOT_PENDING_INPUT_STEPS, holders),
                banks=WORD_HOT_BANKS, scale_in=HOT_INPUT_SCALE)


def pair_hot_rows(setting, counts, workers):
    """The keyword arguments of the item pairs trainer's ``hot_rows``: the output rows of the ``setting`` most
    counted items of ``counts`` (None or 0: none, the threads share the tables; more than there are items:
    all), each thread's change summed into the table after ``HOT_PENDING_STEPS // workers`` steps on a row
    and every :data:`PAIR_FLUSH_EVERY` pairs.  One worker keeps no copies."""
    ids = None
    if workers > 1 and setting and len(counts):
        ids = most_frequent(counts, min(int(setting), len(counts)))
    return dict(ids=ids, every=PAIR_FLUSH_EVERY, limit=steps_a_copy(HOT_PENDING_STEPS, workers))
