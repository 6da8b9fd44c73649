"""Row deltas of table replicas, each in one pass over the rows (used by :mod:`embkit.core.reconcile`).

Deltas are float16 on the wire; here they are ``uint16`` arrays holding the float16 bits (``half.h``
converts a row at a time, with the CPU's F16C instructions where it has them, rounding to nearest even as
numpy does), so that every function runs without the GIL and without temporary float32 tables (one row of
scratch).  Ids are ``int32``; within one delta they are increasing and unique.
"""
import numpy as np

from libc.stdint cimport int32_t, uint16_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, qsort
from libc.string cimport memcpy

cdef extern from "half.h" nogil:
    void halves_from_floats(const float *src, uint16_t *dst, long n, int use_f16c)
    void floats_from_halves(const uint16_t *src, float *dst, long n, int use_f16c)
    int half_f16c()


def has_f16c():
    """Whether the conversions run on the CPU's F16C instructions (else portable C, with the same bits)."""
    return bool(half_f16c())


def to_half(const float[::1] values, bint f16c=True):
    """``values`` as float16 bits (``uint16``); ``f16c=False`` forces the portable conversion (for tests)."""
    out = np.empty(values.shape[0], dtype=np.uint16)
    cdef uint16_t[::1] view = out
    if values.shape[0]:
        with nogil:
            halves_from_floats(&values[0], &view[0], values.shape[0], f16c)
    return out


def from_half(const uint16_t[::1] bits, bint f16c=True):
    """float16 ``bits`` widened to float32; ``f16c=False`` forces the portable conversion (for tests)."""
    out = np.empty(bits.shape[0], dtype=np.float32)
    cdef float[::1] view = out
    if bits.shape[0]:
        with nogil:
            floats_from_halves(&bits[0], &view[0], bits.shape[0], f16c)
    return out


cdef float *_scratch(Py_ssize_t d) except NULL:
    """One row of float32 scratch (freed by the caller)."""
    cdef float *row = <float *>malloc(max(d, 1) * sizeof(float))
    if row == NULL:
        raise MemoryError()
    return row


def _check_rows(const int32_t[::1] ids, Py_ssize_t n_rows, str what):
    cdef Py_ssize_t k
    for k in range(ids.shape[0]):
        if ids[k] < 0 or ids[k] >= n_rows:
            raise ValueError("%s holds row %d outside a table of %d rows" % (what, ids[k], n_rows))


def _check_pair(const float[:, ::1] table, const float[:, ::1] base, str what):
    if base.shape[0] != table.shape[0] or base.shape[1] != table.shape[1]:
        raise ValueError("%s: table %s and base %s differ" % (what, (table.shape[0], table.shape[1]),
                                                              (base.shape[0], base.shape[1])))


def row_energies(const float[:, ::1] table, const float[:, ::1] base, double[::1] out):
    """``out[i] = sum_j (table[i, j] - base[i, j]) ** 2``: how far each row moved."""
    cdef Py_ssize_t n = table.shape[0], d = table.shape[1], i, j
    cdef double total, step
    _check_pair(table, base, "row_energies")
    if out.shape[0] != n:
        raise ValueError("row_energies: %d rows, room for %d" % (n, out.shape[0]))
    with nogil:
        for i in range(n):
            total = 0.0
            for j in range(d):
                step = table[i, j] - base[i, j]
                total += step * step
            out[i] = total


#: buckets of :func:`share_threshold`: a positive double's exponent and top 3 mantissa bits (its bits are
#: ordered as its values), so a bucket spans at most 1/8 of its lower bound
DEF BUCKET_SHIFT = 49
DEF N_BUCKETS = 1 << (63 - BUCKET_SHIFT)


cdef inline Py_ssize_t _bucket(double value) noexcept nogil:
    cdef uint64_t bits
    memcpy(&bits, &value, sizeof(double))
    return <Py_ssize_t>(bits >> BUCKET_SHIFT)


cdef int _descending(const void *a, const void *b) noexcept nogil:
    cdef double x = (<const double *>a)[0], y = (<const double *>b)[0]
    return (x < y) - (x > y)


def share_threshold(const double[::1] energy, double share):
    """The largest ``t`` such that the rows with ``energy >= t`` hold at least ``share`` of
    ``sum(energy)`` (energies are non-negative): the fewest, farthest moved rows holding that share are
    those at or above it.  ``inf`` when every energy is 0.

    Two passes over the rows and a sort of one bucket's rows, instead of a sort of every row: the rows are
    bucketed by their energy's exponent and top mantissa bits, the bucket where the share is reached is
    found from the top, and only its rows are sorted.
    """
    cdef Py_ssize_t n = energy.shape[0], i, b, c = 0
    cdef double total = 0.0, above = 0.0, target
    cdef double *sums
    cdef double *members
    if not (0.0 < share <= 1.0):
        raise ValueError("share_threshold: share must be in (0, 1], got %r" % share)
    for i in range(n):
        if not energy[i] >= 0.0:
            raise ValueError("share_threshold: energy %d is %r" % (i, energy[i]))
    sums = <double *>calloc(N_BUCKETS, sizeof(double))
    if sums == NULL:
        raise MemoryError()
    with nogil:
        for i in range(n):
            sums[_bucket(energy[i])] += energy[i]
            total += energy[i]
    if total <= 0.0:
        free(sums)
        return float("inf")
    if share == 1.0:        # every row that moved: the smallest positive energy
        free(sums)
        target = total
        for i in range(n):
            if 0.0 < energy[i] < target:
                target = energy[i]
        return target
    target = share * total * (1.0 - 1e-12)     # sums in another order may round below the total
    b = N_BUCKETS - 1
    while b > 0 and above + sums[b] < target:
        above += sums[b]
        b -= 1
    free(sums)
    for i in range(n):
        if _bucket(energy[i]) == b:
            c += 1
    members = <double *>malloc(max(c, 1) * sizeof(double))
    if members == NULL:
        raise MemoryError()
    c = 0
    with nogil:
        for i in range(n):
            if _bucket(energy[i]) == b:
                members[c] = energy[i]
                c += 1
        qsort(members, c, sizeof(double), _descending)
        i = 0
        while i < c - 1 and above + members[i] < target:
            above += members[i]
            i += 1
    result = members[i] if c else 0.0
    free(members)
    return result


def changed_rows(const float[:, ::1] table, const float[:, ::1] base, uint16_t[:, ::1] values,
                 int32_t[::1] ids, const unsigned char[::1] only=None):
    """Write the rows where ``table`` differs from ``base`` (with ``only``, those of them where ``only`` is
    not 0): their ids and ``table - base`` as float16 bits.

    ``values`` and ``ids`` have room for every row; returns the number of rows written.
    """
    cdef Py_ssize_t n = table.shape[0], d = table.shape[1], i, j, k = 0
    cdef bint changed, every = only is None
    _check_pair(table, base, "changed_rows")
    if values.shape[0] < n or values.shape[1] != d or ids.shape[0] < n or (not every and only.shape[0] != n):
        raise ValueError("changed_rows: table %s, values %s, ids %s and only %s do not fit"
                         % ((n, d), (values.shape[0], values.shape[1]), ids.shape[0],
                            None if every else only.shape[0]))
    if d == 0:
        return 0
    cdef float *row = _scratch(d)
    with nogil:
        for i in range(n):
            if not every and only[i] == 0:
                continue
            changed = False
            for j in range(d):
                if table[i, j] != base[i, j]:
                    changed = True
                    break
            if changed:
                for j in range(d):
                    row[j] = table[i, j] - base[i, j]
                halves_from_floats(row, &values[k, 0], d, 1)
                ids[k] = <int32_t>i
                k += 1
    free(row)
    return k


def accumulate(float[:, ::1] total, int32_t[::1] seen, const int32_t[::1] ids, const uint16_t[:, ::1] values):
    """Add the float16 steps ``values`` of rows ``ids`` into ``total`` and count each row in ``seen``."""
    cdef Py_ssize_t m = ids.shape[0], d = total.shape[1], k, j
    cdef int32_t i
    if values.shape[0] != m or (m and values.shape[1] != d):
        raise ValueError("accumulate: %d ids for %d rows of values" % (m, values.shape[0]))
    _check_rows(ids, total.shape[0], "a delta")
    if m == 0 or d == 0:
        return
    cdef float *row = _scratch(d)
    with nogil:
        for k in range(m):
            i = ids[k]
            seen[i] += 1
            floats_from_halves(&values[k, 0], row, d, 1)
            for j in range(d):
                total[i, j] += row[j]
    free(row)


def merge_rows(list ids, list values, Py_ssize_t n_rows, bint average, uint16_t[:, ::1] out_values,
               int32_t[::1] out_ids, float[:, ::1] table=None, int32_t[::1] owner=None):
    """One float16 step per row of any delta: the sum of the deltas' steps (added in the deltas' order,
    as :func:`accumulate` adds them), or with ``average`` the sum over the number of deltas holding the
    row; with ``table``, also add each step (as float16 widened) to it; with ``owner``, the index of the
    only delta holding each row, or -1 (a row only one delta holds has that delta's step, bit for bit).

    ``ids`` and ``values`` hold one delta each (ids increasing, below ``n_rows``); the deltas are walked
    together in id order, so only their rows are visited.  ``out_values`` / ``out_ids`` (and ``owner``)
    have room for every row of every delta; returns the number written.
    """
    cdef Py_ssize_t n = len(ids), d = out_values.shape[1], k, j, c = 0, total_rows = 0
    cdef int32_t low
    cdef int seen, only
    cdef float scale
    cdef bint apply = table is not None, owners = owner is not None
    cdef const int32_t[::1] one_ids
    cdef const uint16_t[:, ::1] one_values
    if len(values) != n:
        raise ValueError("merge_rows: %d id arrays for %d value arrays" % (n, len(values)))
    if table is not None and (table.shape[0] != n_rows or table.shape[1] != d):
        raise ValueError("merge_rows: the table has shape %s, the merge %s" % ((table.shape[0], table.shape[1]),
                                                                             (n_rows, d)))
    for k in range(n):
        one_ids, one_values = ids[k], values[k]
        if one_values.shape[0] != one_ids.shape[0] or (one_ids.shape[0] and one_values.shape[1] != d):
            raise ValueError("merge_rows: delta %d has %d ids for %d rows of values" % (k, one_ids.shape[0],
                                                                                    one_values.shape[0]))
        _check_rows(one_ids, n_rows, "a delta")
        for j in range(1, one_ids.shape[0]):
            if one_ids[j] <= one_ids[j - 1]:
                raise ValueError("merge_rows: delta %d: its ids are not increasing at %d" % (k, j))
        total_rows += one_ids.shape[0]
    if out_ids.shape[0] < total_rows or out_values.shape[0] < total_rows or (owners and owner.shape[0] < total_rows):
        raise ValueError("merge_rows: room for %d rows, the deltas hold %d" % (out_ids.shape[0], total_rows))
    if n == 0 or d == 0 or total_rows == 0:
        return 0
    cdef const int32_t **id_ptr = <const int32_t **>malloc(n * sizeof(int32_t *))
    cdef const uint16_t **value_ptr = <const uint16_t **>malloc(n * sizeof(uint16_t *))
    cdef Py_ssize_t *length = <Py_ssize_t *>malloc(n * sizeof(Py_ssize_t))
    cdef Py_ssize_t *at = <Py_ssize_t *>calloc(n, sizeof(Py_ssize_t))
    cdef float *row = <float *>malloc(d * sizeof(float))
    cdef float *step = <float *>malloc(d * sizeof(float))
    if id_ptr == NULL or value_ptr == NULL or length == NULL or at == NULL or row == NULL or step == NULL:
        free(id_ptr); free(value_ptr); free(length); free(at); free(row); free(step)
        raise MemoryError()
    for k in range(n):
        one_ids, one_values = ids[k], values[k]
        length[k] = one_ids.shape[0]
        id_ptr[k] = &one_ids[0] if length[k] else NULL
        value_ptr[k] = &one_values[0, 0] if length[k] else NULL
    with nogil:
        while True:
            low = -1
            for k in range(n):
                if at[k] < length[k] and (low < 0 or id_ptr[k][at[k]] < low):
                    low = id_ptr[k][at[k]]
            if low < 0:
                break
            for j in range(d):
                step[j] = 0.0
            seen = 0
            for k in range(n):
                if at[k] < length[k] and id_ptr[k][at[k]] == low:
                    floats_from_halves(value_ptr[k] + at[k] * d, row, d, 1)
                    for j in range(d):
                        step[j] += row[j]
                    seen += 1
                    only = k
                    at[k] += 1
            if average and seen > 1:
                scale = 1.0 / seen
                for j in range(d):
                    step[j] = step[j] * scale
            halves_from_floats(step, &out_values[c, 0], d, 1)
            if apply:
                floats_from_halves(&out_values[c, 0], step, d, 1)
                for j in range(d):
                    table[low, j] += step[j]
            out_ids[c] = low
            if owners:
                owner[c] = only if seen == 1 else -1
            c += 1
    free(id_ptr); free(value_ptr); free(length); free(at); free(row); free(step)
    return c


def momentum_step(const float[:, ::1] total, float scale, float mu, float[:, ::1] momentum, uint16_t[:, ::1] values,
                  int32_t[::1] ids, float[:, ::1] table=None):
    """Block momentum on every row: ``momentum = mu * momentum + scale * total``, rounded to float16 (the
    stored momentum is the rounded step, so that every holder of the table adds the same numbers), added to
    ``table`` if given; the rows whose step is not zero are written to ``values`` / ``ids``.  Returns their
    number."""
    cdef Py_ssize_t n = total.shape[0], d = total.shape[1], i, j, k = 0
    cdef bint moved, apply = table is not None
    if momentum.shape[0] != n or momentum.shape[1] != d or (apply and (table.shape[0] != n or table.shape[1] != d)):
        raise ValueError("momentum_step: total %s, momentum %s and table %s differ"
                         % ((n, d), (momentum.shape[0], momentum.shape[1]),
                            (table.shape[0], table.shape[1]) if apply else None))
    if d == 0:
        return 0
    cdef float *row = _scratch(d)
    with nogil:
        for i in range(n):
            for j in range(d):
                row[j] = mu * momentum[i, j] + scale * total[i, j]
            halves_from_floats(row, &values[k, 0], d, 1)
            floats_from_halves(&values[k, 0], row, d, 1)
            moved = False
            for j in range(d):
                momentum[i, j] = row[j]
                if apply:
                    table[i, j] += row[j]
                if values[k, j] & 0x7fff:
                    moved = True
            if moved:
                ids[k] = <int32_t>i
                k += 1
    free(row)
    return k


def add_rows(float[:, ::1] table, const int32_t[::1] ids, const uint16_t[:, ::1] values):
    """``table[ids] += values`` (float16 steps widened to float32)."""
    cdef Py_ssize_t m = ids.shape[0], d = table.shape[1], k, j
    cdef int32_t i
    _check_rows(ids, table.shape[0], "an update")
    if values.shape[0] != m or (m and values.shape[1] != d):
        raise ValueError("add_rows: %d ids for %d rows of values" % (m, values.shape[0]))
    if m == 0 or d == 0:
        return
    cdef float *row = _scratch(d)
    with nogil:
        for k in range(m):
            i = ids[k]
            floats_from_halves(&values[k, 0], row, d, 1)
            for j in range(d):
                table[i, j] += row[j]
    free(row)


def adopt_rows(float[:, ::1] table, float[:, ::1] base, const int32_t[::1] ids, const uint16_t[:, ::1] values,
               const int32_t[::1] sent_ids, const uint16_t[:, ::1] sent_values, bint exact):
    """A replica takes in a reconciliation, in one walk over the rows of the update and of what it sent.

    ``ids`` / ``values``: the merged steps, except (possibly) of rows only this replica sent, whose merged
    step is what it sent (``sent_ids`` / ``sent_values``).  ``base`` takes every merged step.  With
    ``exact`` (it sent every row it changed) ``table`` equals ``base`` on those rows afterwards; else
    ``table`` takes the merged step less what it sent, so that what it kept stays.  Ids increasing.
    """
    cdef Py_ssize_t m = ids.shape[0], s = sent_ids.shape[0], d = table.shape[1], a = 0, b = 0, j
    cdef int32_t i
    cdef bint merged, own
    _check_pair(table, base, "adopt_rows")
    _check_rows(ids, table.shape[0], "an update")
    _check_rows(sent_ids, table.shape[0], "a delta")
    if values.shape[0] != m or sent_values.shape[0] != s or (m and values.shape[1] != d) or \
            (s and sent_values.shape[1] != d):
        raise ValueError("adopt_rows: %d ids for %d rows of values, %d sent ids for %d rows"
                         % (m, values.shape[0], s, sent_values.shape[0]))
    if (m == 0 and s == 0) or d == 0:
        return
    cdef float *step = _scratch(d)
    cdef float *own_step = _scratch(d)
    with nogil:
        while a < m or b < s:
            if b >= s or (a < m and ids[a] < sent_ids[b]):
                i, merged, own = ids[a], True, False
            elif a >= m or sent_ids[b] < ids[a]:
                i, merged, own = sent_ids[b], False, True
            else:
                i, merged, own = ids[a], True, True
            if merged:
                floats_from_halves(&values[a, 0], step, d, 1)
                a += 1
            if own:
                floats_from_halves(&sent_values[b, 0], own_step, d, 1)
                b += 1
                if not merged:
                    memcpy(step, own_step, d * sizeof(float))
            for j in range(d):
                base[i, j] += step[j]
            if exact:
                for j in range(d):
                    table[i, j] = base[i, j]
            elif merged:
                for j in range(d):
                    table[i, j] += step[j]
                if own:
                    for j in range(d):
                        table[i, j] -= own_step[j]
    free(step)
    free(own_step)
