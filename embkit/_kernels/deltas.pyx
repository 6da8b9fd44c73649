"""Row deltas of table replicas, each in one pass over the rows (used by :mod:`embkit.core.reconcile`).

Deltas are float16 on the wire; here they are ``uint16`` arrays holding the float16 bits (``half.h``
converts, rounding to nearest even as numpy does), so that every function runs without the GIL and
without temporary float32 tables.  Ids are ``int32``; within one delta they are increasing and unique.
"""
from libc.stdint cimport int32_t, uint16_t

cdef extern from "half.h" nogil:
    uint16_t f32_to_f16(float value)
    float f16_to_f32(uint16_t bits)


def _check_rows(const int32_t[::1] ids, Py_ssize_t n_rows, str what):
    cdef Py_ssize_t k
    for k in range(ids.shape[0]):
        if ids[k] < 0 or ids[k] >= n_rows:
            raise ValueError("%s holds row %d outside a table of %d rows" % (what, ids[k], n_rows))


def changed_rows(const float[:, ::1] table, const float[:, ::1] base, uint16_t[:, ::1] values,
                 int32_t[::1] ids):
    """Write the rows where ``table`` differs from ``base``: their ids and ``table - base`` as float16 bits.

    ``values`` and ``ids`` have room for every row; returns the number of changed rows written.
    """
    cdef Py_ssize_t n = table.shape[0], d = table.shape[1], i, j, k = 0
    cdef bint changed
    if base.shape[0] != n or base.shape[1] != d or values.shape[0] < n or values.shape[1] != d or ids.shape[0] < n:
        raise ValueError("changed_rows: table %s, base %s, values %s and ids %s do not fit"
                         % ((n, d), (base.shape[0], base.shape[1]), (values.shape[0], values.shape[1]),
                            ids.shape[0]))
    with nogil:
        for i in range(n):
            changed = False
            for j in range(d):
                if table[i, j] != base[i, j]:
                    changed = True
                    break
            if changed:
                for j in range(d):
                    values[k, j] = f32_to_f16(table[i, j] - base[i, j])
                ids[k] = <int32_t>i
                k += 1
    return k


def accumulate(float[:, ::1] total, int32_t[::1] seen, const int32_t[::1] ids, const uint16_t[:, ::1] values):
    """Add the float16 steps ``values`` of rows ``ids`` into ``total`` and count each row in ``seen``."""
    cdef Py_ssize_t m = ids.shape[0], d = total.shape[1], k, j
    cdef int32_t i
    if values.shape[0] != m or (m and values.shape[1] != d):
        raise ValueError("accumulate: %d ids for %d rows of values" % (m, values.shape[0]))
    _check_rows(ids, total.shape[0], "a delta")
    with nogil:
        for k in range(m):
            i = ids[k]
            seen[i] += 1
            for j in range(d):
                total[i, j] += f16_to_f32(values[k, j])


def finish(const float[:, ::1] total, const int32_t[::1] seen, bint average, uint16_t[:, ::1] values,
           int32_t[::1] ids, float[:, ::1] table=None):
    """Write one float16 step per row seen at least once: the total, or with ``average`` the total over
    the count; with ``table``, also add each step (as float16 widened) to it.  ``values`` and ``ids`` have
    room for every row; returns the number written."""
    cdef Py_ssize_t n = total.shape[0], d = total.shape[1], i, j, k = 0
    cdef float scale
    cdef uint16_t bits
    cdef bint apply = table is not None
    if apply and (table.shape[0] != n or table.shape[1] != d):
        raise ValueError("finish: the table has shape %s, the merge %s" % ((table.shape[0], table.shape[1]), (n, d)))
    with nogil:
        for i in range(n):
            if seen[i] == 0:
                continue
            scale = 1.0 / seen[i] if average else 1.0
            for j in range(d):
                bits = f32_to_f16(total[i, j] * scale)
                values[k, j] = bits
                if apply:
                    table[i, j] += f16_to_f32(bits)
            ids[k] = <int32_t>i
            k += 1
    return k


def momentum_step(const float[:, ::1] total, float scale, float mu, float[:, ::1] momentum, uint16_t[:, ::1] values,
                  int32_t[::1] ids, float[:, ::1] table):
    """Block momentum on every row: ``momentum = mu * momentum + scale * total``, rounded to float16 (the
    stored momentum is the rounded step, so that the client and the replicas add the same numbers), added to
    ``table``; the rows whose step is not zero are written to ``values`` / ``ids``.  Returns their number."""
    cdef Py_ssize_t n = total.shape[0], d = total.shape[1], i, j, k = 0
    cdef uint16_t bits
    cdef bint moved
    if momentum.shape[0] != n or momentum.shape[1] != d or table.shape[0] != n or table.shape[1] != d:
        raise ValueError("momentum_step: total %s, momentum %s and table %s differ"
                         % ((n, d), (momentum.shape[0], momentum.shape[1]), (table.shape[0], table.shape[1])))
    with nogil:
        for i in range(n):
            moved = False
            for j in range(d):
                bits = f32_to_f16(mu * momentum[i, j] + scale * total[i, j])
                momentum[i, j] = f16_to_f32(bits)
                table[i, j] += momentum[i, j]
                values[k, j] = bits
                if bits & 0x7fff:
                    moved = True
            if moved:
                ids[k] = <int32_t>i
                k += 1
    return k


def add_rows(float[:, ::1] table, const int32_t[::1] ids, const uint16_t[:, ::1] values, float[:, ::1] base=None):
    """``table[ids] += values`` (float16 steps widened to float32).  With ``base`` (a replica adopting the
    reconciled rows): ``base[ids] += values`` and ``table[ids] = base[ids]``."""
    cdef Py_ssize_t m = ids.shape[0], d = table.shape[1], k, j
    cdef int32_t i
    cdef bint adopt = base is not None
    _check_rows(ids, table.shape[0], "an update")
    if adopt and (base.shape[0] != table.shape[0] or base.shape[1] != d):
        raise ValueError("add_rows: the base has shape %s, the table %s"
                         % ((base.shape[0], base.shape[1]), (table.shape[0], d)))
    with nogil:
        for k in range(m):
            i = ids[k]
            for j in range(d):
                if adopt:
                    base[i, j] += f16_to_f32(values[k, j])
                    table[i, j] = base[i, j]
                else:
                    table[i, j] += f16_to_f32(values[k, j])
