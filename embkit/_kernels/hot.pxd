# A training thread's own copies of the hot rows: the rows most steps touch, which threads writing the table
# directly would keep taking from each other's caches.  The copies are a write-back cache over the table: a
# row is copied in at the thread's first step on it since the last flush, the thread's steps update the copy,
# and the change (``scale`` times the copy minus the row as copied) goes back to the table after ``limit``
# steps on the copy, at the thread's flush every ``every`` examples and at the end of its slice.  Only the
# rows a thread stepped on are copied and written back, so the cost follows the steps, not the number of hot
# rows.
from libc.stdint cimport int32_t
from libc.stdlib cimport calloc, malloc, free
from libc.string cimport memcpy
from libc.math cimport sqrt

from embkit._kernels.common cimport emb_dot, emb_scale_copy


cdef struct HotSpec:
    # the rows every thread keeps its own copies of: the classes most steps touch (a model's choice, shared by
    # its threads)
    const int32_t *ids      # n class ids
    const int32_t *slot     # per class: its index in ``ids``, or -1
    bint prefix             # ``ids`` is 0 .. n-1
    int n
    int every               # examples between two flushes of a thread's copies into the table
    int limit               # steps on one copy before its change goes back to the table (0: at the flushes)
    int limit_in            # the same for the copies of input rows
    float scale             # share of a thread's change a write-back adds
    float scale_in          # the same for the copies of input rows
    bint unit               # a written-back row is projected back onto the unit sphere (classes of unit norm)
    bint inputs             # a driver whose input rows are the classes' keeps copies of those too
    int banks               # sets of copies a thread deals its sentences to in turn, holding its copies back
                            # as that many threads would (1: one set; more: a study of many threads' copies on
                            # few cores; the word-window driver)


cdef struct HotRows:
    float *rows             # n x dim: the thread's copies (valid while loaded)
    float *base             # n x dim: each copy's table row when it was copied in
    int32_t *steps          # per slot: steps on the copy since it was copied in (0: not copied since the
                            # last flush)
    int32_t *touched        # the slots copied in since the last flush, n_touched of them
    int n_touched
    const int32_t *ids      # per slot: its class
    const int32_t *slot     # per class: its slot, or -1
    bint prefix             # the hot classes are 0 .. n-1 in that order (``slot`` is not read)
    float *table            # the table whose rows these are
    int dim
    int n
    int every               # examples between two flushes
    int limit               # steps on one copy before its change goes back (0: only at the flushes)
    float scale             # share of the thread's change a write-back adds
    bint unit               # a written-back row is projected onto the unit sphere
    int since               # examples since the last flush


cdef inline void unit_row(float *row, int dim) noexcept nogil:
    """Scale ``row`` to unit L2 norm (a row of zeros stays)."""
    cdef float n = sqrt(emb_dot(row, row, dim))
    if n > 0:
        emb_scale_copy(1.0 / n, row, row, dim)


cdef inline int32_t hot_slot(const HotRows *h, int idx) noexcept nogil:
    """The slot of class ``idx``, or -1 when it is not hot."""
    if h.prefix:
        return idx if idx < h.n else -1
    return h.slot[idx]


cdef inline float *hot_add_change(HotRows *h, int s) noexcept nogil:
    """Add ``scale`` times what the thread changed in copy ``s`` to the table's row; the row."""
    cdef int j, dim = h.dim
    cdef float *row = h.table + <Py_ssize_t>h.ids[s] * dim
    cdef const float *mine = h.rows + <Py_ssize_t>s * dim
    cdef const float *base = h.base + <Py_ssize_t>s * dim
    for j in range(dim):
        row[j] = row[j] + h.scale * (mine[j] - base[j])
    if h.unit:
        unit_row(row, dim)
    return row


cdef inline void hot_copy_in(HotRows *h, int s, const float *row) noexcept nogil:
    """Make ``row`` (the table's) copy ``s`` and its base."""
    cdef size_t row_bytes = <size_t>h.dim * sizeof(float)
    memcpy(h.rows + <Py_ssize_t>s * h.dim, row, row_bytes)
    memcpy(h.base + <Py_ssize_t>s * h.dim, row, row_bytes)


cdef inline float *hot_row(HotRows *h, int idx) noexcept nogil:
    """The row of class ``idx`` a step reads and updates: a hot class's copy, copied in at its first step after
    a flush; every ``limit`` steps on the copy write its change back."""
    cdef int32_t s = hot_slot(h, idx)
    if s < 0:
        return h.table + <Py_ssize_t>idx * h.dim
    cdef float *mine = h.rows + <Py_ssize_t>s * h.dim
    cdef int32_t done = h.steps[s]
    if done == 0:
        hot_copy_in(h, s, h.table + <Py_ssize_t>idx * h.dim)
        h.touched[h.n_touched] = s
        h.n_touched += 1
    elif done == h.limit:
        hot_copy_in(h, s, hot_add_change(h, s))     # the other threads' changes come in with it
        done = 0
    h.steps[s] = done + 1 if h.limit else 1
    return mine


cdef inline float *hot_row_again(HotRows *h, int idx) noexcept nogil:
    """The row of class ``idx`` as :func:`hot_row` gave it to the step just taken, or will give the next step
    if none has taken it since the last flush (the table's); not counted as a step."""
    cdef int32_t s = hot_slot(h, idx)
    if s < 0 or h.steps[s] == 0:
        return h.table + <Py_ssize_t>idx * h.dim
    return h.rows + <Py_ssize_t>s * h.dim


cdef inline void hot_flush(HotRows *h) noexcept nogil:
    """Write back every copy the thread made since the last flush; the next step on one copies it in again."""
    cdef int i, s
    for i in range(h.n_touched):
        s = h.touched[i]
        hot_add_change(h, s)
        h.steps[s] = 0
    h.n_touched = 0
    h.since = 0


cdef inline int hot_open(HotRows *h, const HotSpec *spec, float *table, int dim, bint inputs) noexcept nogil:
    """Allocate a thread's copies of the hot rows of ``spec`` in ``table`` (the input table's with ``inputs``,
    whose copies go back after ``spec.limit_in`` steps, ``spec.scale_in`` of their change); -1 when out of
    memory (then :func:`hot_close` frees what was allocated).  ``h`` starts zeroed."""
    h.rows = <float *> malloc(<size_t>spec.n * dim * sizeof(float))
    h.base = <float *> malloc(<size_t>spec.n * dim * sizeof(float))
    h.steps = <int32_t *> calloc(spec.n, sizeof(int32_t))
    h.touched = <int32_t *> malloc(<size_t>spec.n * sizeof(int32_t))
    if h.rows == NULL or h.base == NULL or h.steps == NULL or h.touched == NULL:
        return -1
    h.n, h.ids, h.slot, h.prefix, h.table, h.dim = spec.n, spec.ids, spec.slot, spec.prefix, table, dim
    h.every, h.unit = spec.every, spec.unit
    h.limit = spec.limit_in if inputs else spec.limit
    h.scale = spec.scale_in if inputs else spec.scale
    h.n_touched = h.since = 0
    return 0


cdef inline void hot_close(HotRows *h) noexcept nogil:
    """Write the copies back and free them (``h`` zeroed again)."""
    if h.n:
        hot_flush(h)
    free(h.rows); free(h.base); free(h.steps); free(h.touched)
    h.rows = h.base = NULL
    h.steps = h.touched = NULL
    h.n = 0
