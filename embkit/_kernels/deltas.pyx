"""Row deltas of table replicas, each in one pass over the rows (used by :mod:`embkit.cluster.reconcile`).

Deltas are float16 on the wire; here they are ``uint16`` arrays holding the float16 bits (``half.h``
converts a row at a time, with the CPU's F16C instructions where it has them, rounding to nearest even as
numpy does), so that every function runs without the GIL and without temporary float32 tables (one row of
scratch).  Ids are ``int32``; within one delta they are increasing and unique.

The passes a replica makes every round (:func:`row_energies`, :func:`changed_rows`, :func:`take_rows`,
:func:`merge_rows`, :func:`momentum_merge`, :func:`adopt_rows`) take ``threads``: with more than one (and an
OpenMP build) they split the table's rows into ranges that OpenMP threads walk at once, each row on one
thread, so the result is the same, bit for bit, for any number of threads.
"""
import numpy as np

from libc.math cimport copysignf, fabsf, frexpf, ldexpf
from libc.stdint cimport int8_t, int32_t, int64_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport calloc, free, malloc, qsort
from libc.string cimport memcpy, memmove
from cython.parallel cimport parallel, prange

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


cdef inline double _energy(const float *row, const float *base_row, Py_ssize_t d) noexcept nogil:
    cdef double total = 0.0, step
    cdef Py_ssize_t j
    for j in range(d):
        step = row[j] - base_row[j]
        total += step * step
    return total


def row_energies(const float[:, ::1] table, const float[:, ::1] base, double[::1] out, int threads=1):
    """``out[i] = sum_j (table[i, j] - base[i, j]) ** 2``: how far each row moved."""
    cdef Py_ssize_t n = table.shape[0], d = table.shape[1], i
    _check_pair(table, base, "row_energies")
    if out.shape[0] != n:
        raise ValueError("row_energies: %d rows, room for %d" % (n, out.shape[0]))
    if d == 0:
        for i in range(n):
            out[i] = 0.0
        return
    with nogil:
        if threads > 1:
            for i in prange(n, schedule="static", num_threads=threads):
                out[i] = _energy(&table[i, 0], &base[i, 0], d)
        else:
            for i in range(n):
                out[i] = _energy(&table[i, 0], &base[i, 0], d)


#: buckets of :func:`share_threshold`: a positive double's exponent and top 3 mantissa bits (its bits are
#: ordered as its values), so a bucket spans at most 1/8 of its lower bound
DEF BUCKET_SHIFT = 49
#: ranges of rows per thread of a threaded pass (rows are not changed evenly: more ranges than threads,
#: taken as threads come free, even out the work)
DEF PARTS_PER_THREAD = 4
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


cdef inline uint64_t _stamp(const float *row, Py_ssize_t d) noexcept nogil:
    """A 64-bit digest of the bits of a row: a row whose digest is unchanged is taken as unchanged.  Two
    sums over its 32-bit words, each weighted by its position, with no chain from one word to the next (a
    hash that mixes word by word costs several times the pass it rides on)."""
    cdef const uint32_t *words = <const uint32_t *>row
    cdef uint64_t odd = 0, mixed = 0
    cdef Py_ssize_t j
    for j in range(d):
        odd += <uint64_t>words[j] * <uint64_t>(2 * j + 1)
        mixed += (<uint64_t>words[j] ^ 0x5bd1e995ULL) * <uint64_t>(0x9E3779B97F4A7C15ULL + 2 * <uint64_t>j)
    return odd ^ ((mixed << 29) | (mixed >> 35))


cdef inline bint _differs(const float *row, const float *base_row, Py_ssize_t d) noexcept nogil:
    cdef Py_ssize_t j
    for j in range(d):
        if row[j] != base_row[j]:
            return True
    return False


cdef inline void _write_change(const float *row, const float *base_row, Py_ssize_t d, float *step,
                               uint16_t *out) noexcept nogil:
    """Write ``row - base_row`` as float16 bits to ``out``."""
    cdef Py_ssize_t j
    for j in range(d):
        step[j] = row[j] - base_row[j]
    halves_from_floats(step, out, d, 1)


cdef Py_ssize_t _changed_range(const float[:, ::1] table, const float[:, ::1] base, uint16_t[:, ::1] values,
                               int32_t[::1] ids, const unsigned char[::1] only, bint every, uint64_t *stamps,
                               Py_ssize_t start, Py_ssize_t stop, float *step) noexcept nogil:
    """:func:`changed_rows` of the rows ``[start, stop)``, written from position ``start`` on; their number."""
    cdef Py_ssize_t i, k = start, d = table.shape[1]
    for i in range(start, stop):
        if (every or only[i]) and _differs(&table[i, 0], &base[i, 0], d):
            _write_change(&table[i, 0], &base[i, 0], d, step, &values[k, 0])
            ids[k] = <int32_t>i
            if stamps != NULL:
                stamps[k] = _stamp(&table[i, 0], d)
            k += 1
    return k - start


def changed_rows(const float[:, ::1] table, const float[:, ::1] base, uint16_t[:, ::1] values,
                 int32_t[::1] ids, const unsigned char[::1] only=None, int threads=1, uint64_t[::1] stamps=None):
    """Write the rows where ``table`` differs from ``base`` (with ``only``, those of them where ``only`` is
    not 0): their ids and ``table - base`` as float16 bits; with ``stamps``, a digest of each such row of
    ``table`` (for :func:`adopt_rows`).

    ``values`` and ``ids`` have room for every row; returns the number of rows written.  With ``threads``,
    each thread writes the rows of its ranges of rows from the range's first row on, and the ranges are then
    moved together (reading the table once: counting the rows first would read it twice).
    """
    cdef Py_ssize_t n = table.shape[0], d = table.shape[1], k = 0, p, c, parts
    cdef bint every = only is None
    cdef float *step = NULL
    cdef Py_ssize_t *counts
    cdef uint64_t *stamp_ptr = NULL
    _check_pair(table, base, "changed_rows")
    if stamps is not None:
        if stamps.shape[0] < n:
            raise ValueError("changed_rows: %d stamps for a table of %d rows" % (stamps.shape[0], n))
        if n:
            stamp_ptr = &stamps[0]
    if values.shape[0] < n or values.shape[1] != d or ids.shape[0] < n or (not every and only.shape[0] != n):
        raise ValueError("changed_rows: table %s, values %s, ids %s and only %s do not fit"
                         % ((n, d), (values.shape[0], values.shape[1]), ids.shape[0],
                            None if every else only.shape[0]))
    if d == 0 or n == 0:
        return 0
    if threads <= 1:
        step = _scratch(d)
        with nogil:
            k = _changed_range(table, base, values, ids, only, every, stamp_ptr, 0, n, step)
        free(step)
        return k
    parts = min(n, PARTS_PER_THREAD * threads)
    counts = <Py_ssize_t *>calloc(parts, sizeof(Py_ssize_t))
    if counts == NULL:
        raise MemoryError()
    with nogil, parallel(num_threads=threads):
        step = <float *>malloc(d * sizeof(float))
        for p in prange(parts, schedule="dynamic"):
            if step == NULL:
                counts[p] = -1
            else:
                counts[p] = _changed_range(table, base, values, ids, only, every, stamp_ptr, n * p // parts,
                                           n * (p + 1) // parts, step)
        free(step)
    for p in range(parts):
        if counts[p] < 0:
            free(counts)
            raise MemoryError()
    with nogil:
        for p in range(parts):
            c = counts[p]
            if c and k != n * p // parts:
                memmove(&values[k, 0], &values[n * p // parts, 0], c * d * sizeof(uint16_t))
                memmove(&ids[k], &ids[n * p // parts], c * sizeof(int32_t))
                if stamp_ptr != NULL:
                    memmove(stamp_ptr + k, stamp_ptr + n * p // parts, c * sizeof(uint64_t))
            k += c
    free(counts)
    return k


cdef inline Py_ssize_t _lower_bound(const int32_t *ids, Py_ssize_t length, int32_t value) noexcept nogil:
    """The first position of the increasing ``ids`` holding ``value`` or more."""
    cdef Py_ssize_t lo = 0, hi = length, mid
    while lo < hi:
        mid = (lo + hi) // 2
        if ids[mid] < value:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _check_deltas(list ids, list values, Py_ssize_t n_rows, Py_ssize_t d, str what):
    """Check one id array and one ``(rows, d)`` value array a delta, ids increasing and below ``n_rows``;
    the deltas' rows in all."""
    cdef Py_ssize_t k, p, total_rows = 0
    cdef const int32_t[::1] one_ids
    cdef const uint16_t[:, ::1] one_values
    if len(values) != len(ids):
        raise ValueError("%s: %d id arrays for %d value arrays" % (what, len(ids), len(values)))
    for k in range(len(ids)):
        one_ids, one_values = ids[k], values[k]
        if one_values.shape[0] != one_ids.shape[0] or (one_ids.shape[0] and one_values.shape[1] != d):
            raise ValueError("%s: delta %d has %d ids for %d rows of values" % (what, k, one_ids.shape[0],
                                                                             one_values.shape[0]))
        _check_rows(one_ids, n_rows, "a delta")
        for p in range(1, one_ids.shape[0]):
            if one_ids[p] <= one_ids[p - 1]:
                raise ValueError("%s: delta %d: its ids are not increasing at %d" % (what, k, p))
        total_rows += one_ids.shape[0]
    return total_rows


cdef void _delta_cuts(list ids, list values, Py_ssize_t n_rows, Py_ssize_t parts, const int32_t **id_ptr,
                      const uint16_t **value_ptr, Py_ssize_t *cuts):
    """Each delta's arrays (``id_ptr``, ``value_ptr``), and where range ``p`` of ``parts`` (rows ``[n_rows p /
    parts, n_rows (p + 1) / parts)``) starts in delta ``k``: ``cuts[p * n + k]`` (``p = parts``: its end)."""
    cdef Py_ssize_t n = len(ids), k, p
    cdef const int32_t[::1] one_ids
    cdef const uint16_t[:, ::1] one_values
    for k in range(n):
        one_ids, one_values = ids[k], values[k]
        id_ptr[k] = &one_ids[0] if one_ids.shape[0] else NULL
        value_ptr[k] = &one_values[0, 0] if one_ids.shape[0] else NULL
        for p in range(parts + 1):
            cuts[p * n + k] = one_ids.shape[0] if p == parts else \
                _lower_bound(id_ptr[k], one_ids.shape[0], <int32_t>(n_rows * p // parts))


cdef Py_ssize_t _merge_range(Py_ssize_t n, const int32_t **id_ptr, const uint16_t **value_ptr, Py_ssize_t *at,
                             const Py_ssize_t *end, Py_ssize_t d, bint average, uint16_t *out_values,
                             int32_t *out_ids, int32_t *owner, float *table, float *mirror, float *row,
                             float *step) noexcept nogil:
    """Merge the deltas' rows ``at[k] .. end[k]`` of every delta ``k`` (``at`` advances), writing from the
    start of the outputs; with ``out_values`` NULL only count the rows.  Their number."""
    cdef Py_ssize_t c = 0, k, j
    cdef int32_t low
    cdef int seen, only = 0
    cdef float scale
    while True:
        low = -1
        for k in range(n):
            if at[k] < end[k] and (low < 0 or id_ptr[k][at[k]] < low):
                low = id_ptr[k][at[k]]
        if low < 0:
            break
        if out_values == NULL:
            for k in range(n):
                if at[k] < end[k] and id_ptr[k][at[k]] == low:
                    at[k] += 1
            c += 1
            continue
        for j in range(d):
            step[j] = 0.0
        seen = 0
        for k in range(n):
            if at[k] < end[k] and id_ptr[k][at[k]] == low:
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
        halves_from_floats(step, out_values + c * d, d, 1)
        if table != NULL:
            floats_from_halves(out_values + c * d, step, d, 1)
            for j in range(d):
                table[low * d + j] += step[j]
            if mirror != NULL:
                memcpy(mirror + low * d, table + low * d, d * sizeof(float))
        out_ids[c] = low
        if owner != NULL:
            owner[c] = only if seen == 1 else -1
        c += 1
    return c


def merge_rows(list ids, list values, Py_ssize_t n_rows, bint average, uint16_t[:, ::1] out_values,
               int32_t[::1] out_ids, float[:, ::1] table=None, int32_t[::1] owner=None, int threads=1,
               float[:, ::1] mirror=None):
    """One float16 step per row of any delta: the sum of the deltas' steps (added in the deltas' order,
    as :func:`momentum_merge` adds them), or with ``average`` the sum over the number of deltas holding the
    row; with ``table``, also add each step (as float16 widened) to it, and with ``mirror`` (a table of the
    same shape) copy each such row of ``table`` into it afterwards; with ``owner``, the index of the
    only delta holding each row, or -1 (a row only one delta holds has that delta's step, bit for bit).

    ``ids`` and ``values`` hold one delta each (ids increasing, below ``n_rows``); the deltas are walked
    together in id order, so only their rows are visited.  ``out_values`` / ``out_ids`` (and ``owner``)
    have room for every row of every delta; returns the number written.  With ``threads``, the rows are
    cut into ranges: the threads count each range's rows, then merge each range into its place.
    """
    cdef Py_ssize_t n = len(ids), d = out_values.shape[1], p, c = 0, total_rows, parts
    cdef bint failed = False
    if table is not None and (table.shape[0] != n_rows or table.shape[1] != d):
        raise ValueError("merge_rows: the table has shape %s, the merge %s" % ((table.shape[0], table.shape[1]),
                                                                             (n_rows, d)))
    if mirror is not None and (table is None or mirror.shape[0] != n_rows or mirror.shape[1] != d):
        raise ValueError("merge_rows: a mirror needs a table of its shape")
    total_rows = _check_deltas(ids, values, n_rows, d, "merge_rows")
    if out_ids.shape[0] < total_rows or out_values.shape[0] < total_rows or (owner is not None and
                                                                             owner.shape[0] < total_rows):
        raise ValueError("merge_rows: room for %d rows, the deltas hold %d" % (out_ids.shape[0], total_rows))
    if n == 0 or d == 0 or total_rows == 0:
        return 0
    parts = 1 if threads <= 1 else min(n_rows, PARTS_PER_THREAD * threads)
    cdef const int32_t **id_ptr = <const int32_t **>malloc(n * sizeof(int32_t *))
    cdef const uint16_t **value_ptr = <const uint16_t **>malloc(n * sizeof(uint16_t *))
    cdef Py_ssize_t *cuts = <Py_ssize_t *>malloc((parts + 1) * n * sizeof(Py_ssize_t))
    cdef Py_ssize_t *offset = <Py_ssize_t *>calloc(parts + 1, sizeof(Py_ssize_t))
    if id_ptr == NULL or value_ptr == NULL or cuts == NULL or offset == NULL:
        free(id_ptr); free(value_ptr); free(cuts); free(offset)
        raise MemoryError()
    _delta_cuts(ids, values, n_rows, parts, id_ptr, value_ptr, cuts)
    cdef Py_ssize_t *written = <Py_ssize_t *>calloc(parts, sizeof(Py_ssize_t))
    if written == NULL:
        free(id_ptr); free(value_ptr); free(cuts); free(offset)
        raise MemoryError()
    cdef float *table_ptr = &table[0, 0] if table is not None else NULL
    cdef float *mirror_ptr = &mirror[0, 0] if mirror is not None else NULL
    cdef int32_t *owner_ptr = &owner[0] if owner is not None else NULL
    cdef Py_ssize_t *at = NULL
    cdef float *row = NULL
    cdef float *step = NULL
    if parts > 1:       # each range's place: the rows of the ranges before it
        with nogil, parallel(num_threads=threads):
            at = <Py_ssize_t *>malloc(n * sizeof(Py_ssize_t))
            for p in prange(parts, schedule="dynamic"):
                if at == NULL:
                    written[p] = -1
                else:
                    memcpy(at, cuts + p * n, n * sizeof(Py_ssize_t))
                    offset[p + 1] = _merge_range(n, id_ptr, value_ptr, at, cuts + (p + 1) * n, d, average, NULL,
                                                 NULL, NULL, NULL, NULL, NULL, NULL)
            free(at)
        for p in range(parts):
            failed = failed or written[p] < 0
            offset[p + 1] += offset[p]
    if not failed:
        with nogil, parallel(num_threads=max(1, threads)):
            at = <Py_ssize_t *>malloc(n * sizeof(Py_ssize_t))
            row = <float *>malloc(d * sizeof(float))
            step = <float *>malloc(d * sizeof(float))
            for p in prange(parts, schedule="dynamic"):
                if at == NULL or row == NULL or step == NULL:
                    written[p] = -1
                else:
                    memcpy(at, cuts + p * n, n * sizeof(Py_ssize_t))
                    written[p] = _merge_range(n, id_ptr, value_ptr, at, cuts + (p + 1) * n, d, average,
                                              &out_values[0, 0] + offset[p] * d, &out_ids[0] + offset[p],
                                              owner_ptr + offset[p] if owner_ptr != NULL else NULL, table_ptr,
                                              mirror_ptr, row, step)
            free(at)
            free(row)
            free(step)
        for p in range(parts):
            failed = failed or written[p] < 0
            c += written[p]
    free(id_ptr); free(value_ptr); free(cuts); free(offset); free(written)
    if failed:
        raise MemoryError()
    return c


cdef Py_ssize_t _momentum_range(Py_ssize_t n, const int32_t **id_ptr, const uint16_t **value_ptr, Py_ssize_t *at,
                                const Py_ssize_t *end, Py_ssize_t lo, Py_ssize_t hi, Py_ssize_t d, float least,
                                float scale, float mu, float *momentum, uint16_t *out_values, int32_t *out_ids,
                                float *table, float *summed, float *row) noexcept nogil:
    """:func:`momentum_merge` of the rows ``lo .. hi`` (the deltas' rows ``at[k] .. end[k]`` among them; ``at``
    advances), the rows that move written from the start of the outputs.  Their number."""
    cdef Py_ssize_t c = 0, i, k, j
    cdef float norm, squares, share, agreed
    cdef float *held
    cdef uint16_t *out
    cdef bint moved
    for i in range(lo, hi):
        for j in range(d):
            summed[j] = 0.0
        squares = 0
        for k in range(n):      # the deltas' steps of row i, added in the deltas' order
            if at[k] < end[k] and id_ptr[k][at[k]] == i:
                floats_from_halves(value_ptr[k] + at[k] * d, row, d, 1)
                norm = 0
                for j in range(d):
                    summed[j] += row[j]
                    norm += row[j] * row[j]
                squares += norm
                at[k] += 1
        norm = 0
        for j in range(d):
            norm += summed[j] * summed[j]
        share = 0
        if norm > 0:
            share = min(max(squares / norm, least), 1.0)
            share = (share - least) / (1 - least)
        agreed = scale * (1 - share)
        held = momentum + i * d
        for j in range(d):
            held[j] = mu * held[j] + agreed * summed[j]
            row[j] = share * summed[j] + held[j]
        out = out_values + c * d
        halves_from_floats(row, out, d, 1)
        floats_from_halves(out, row, d, 1)
        moved = False
        for j in range(d):
            if out[j] & 0x7fff:
                moved = True
                break
        if table != NULL:
            for j in range(d):
                table[i * d + j] += row[j]
        if moved:
            out_ids[c] = <int32_t>i
            c += 1
    return c


def momentum_merge(list ids, list values, Py_ssize_t n_rows, int replicas, float scale, float mu,
                   float[:, ::1] momentum, uint16_t[:, ::1] out_values, int32_t[::1] out_ids,
                   float[:, ::1] table=None, int threads=1):
    """Block momentum of the part of each row's summed step that the replicas agree on, over every row of a
    table of ``n_rows`` (a row with momentum moves without any delta holding it).

    ``ids`` and ``values`` hold one delta each (ids increasing, below ``n_rows``; float16 bits), walked together
    in id order.  A row's ``S`` is the sum of the deltas' steps (added in the deltas' order) and ``Q`` the sum
    of their squared norms; ``r = Q / |S|^2``, clipped to ``[1/replicas, 1]``, is ``1/replicas`` when all
    moved it alike and 1 when their steps are orthogonal.  The independent share ``w = (r - 1/n) / (1 -
    1/n)`` of ``S`` is a step now; the rest goes through the momentum: ``momentum = mu * momentum + scale *
    (1 - w) * S``, and the row's step is ``w * S + momentum``, rounded to float16 and added to ``table`` if
    given.  The rows whose step is not zero are written to ``out_values`` / ``out_ids`` (room for ``n_rows``
    rows), in row order.  Returns their number.  With ``threads``, ranges of rows are merged at once (each
    row by one thread, the same bits for any number), then moved up to their places.
    """
    cdef Py_ssize_t n = len(ids), d = momentum.shape[1], p, c = 0, parts, lo
    cdef bint failed = False
    if momentum.shape[0] != n_rows or out_values.shape[0] < n_rows or out_ids.shape[0] < n_rows or \
            out_values.shape[1] != d or (table is not None and (table.shape[0] != n_rows or table.shape[1] != d)):
        raise ValueError("momentum_merge: %d rows of %d, momentum %s, room for %d rows of %d and table %s differ"
                         % (n_rows, d, (momentum.shape[0], momentum.shape[1]), min(out_values.shape[0],
                            out_ids.shape[0]), out_values.shape[1],
                            (table.shape[0], table.shape[1]) if table is not None else None))
    _check_deltas(ids, values, n_rows, d, "momentum_merge")
    if n_rows == 0 or d == 0:
        return 0
    parts = 1 if threads <= 1 else min(n_rows, PARTS_PER_THREAD * threads)
    cdef const int32_t **id_ptr = <const int32_t **>malloc(max(n, 1) * sizeof(int32_t *))
    cdef const uint16_t **value_ptr = <const uint16_t **>malloc(max(n, 1) * sizeof(uint16_t *))
    cdef Py_ssize_t *cuts = <Py_ssize_t *>malloc((parts + 1) * max(n, 1) * sizeof(Py_ssize_t))
    cdef Py_ssize_t *written = <Py_ssize_t *>calloc(parts, sizeof(Py_ssize_t))
    if id_ptr == NULL or value_ptr == NULL or cuts == NULL or written == NULL:
        free(id_ptr); free(value_ptr); free(cuts); free(written)
        raise MemoryError()
    _delta_cuts(ids, values, n_rows, parts, id_ptr, value_ptr, cuts)
    cdef float least = 1.0 / max(replicas, 2)
    cdef float *table_ptr = &table[0, 0] if table is not None else NULL
    cdef uint16_t *value_out = &out_values[0, 0]
    cdef int32_t *id_out = &out_ids[0]
    cdef Py_ssize_t *at = NULL
    cdef float *summed = NULL
    cdef float *row = NULL
    with nogil, parallel(num_threads=max(1, threads)):
        at = <Py_ssize_t *>malloc(max(n, 1) * sizeof(Py_ssize_t))
        summed = <float *>malloc(d * sizeof(float))
        row = <float *>malloc(d * sizeof(float))
        for p in prange(parts, schedule="dynamic"):
            if at == NULL or summed == NULL or row == NULL:
                written[p] = -1
            else:       # range p writes from its first row's place: it moves at most as many rows as it holds
                memcpy(at, cuts + p * n, n * sizeof(Py_ssize_t))
                lo = n_rows * p // parts
                written[p] = _momentum_range(n, id_ptr, value_ptr, at, cuts + (p + 1) * n, lo,
                                             n_rows * (p + 1) // parts, d, least, scale, mu, &momentum[0, 0],
                                             value_out + lo * d, id_out + lo, table_ptr, summed, row)
        free(at)
        free(summed)
        free(row)
    for p in range(parts):      # each range's rows up to the end of the ranges before it
        if written[p] < 0:
            failed = True
            break
        lo = n_rows * p // parts
        if c != lo and written[p]:
            memmove(value_out + c * d, value_out + lo * d, written[p] * d * sizeof(uint16_t))
            memmove(id_out + c, id_out + lo, written[p] * sizeof(int32_t))
        c += written[p]
    free(id_ptr); free(value_ptr); free(cuts); free(written)
    if failed:
        raise MemoryError()
    return c


def take_rows(const uint16_t[:, ::1] values, const int64_t[::1] order, uint16_t[:, ::1] out, int threads=1):
    """``out[i] = values[order[i]]`` for every ``i`` of ``order`` (a delta's rows in another order, e.g. by
    owner), ranges of rows copied at once on ``threads``."""
    cdef Py_ssize_t m = order.shape[0], n = values.shape[0], d = values.shape[1], i, p, parts
    if out.shape[0] != m or out.shape[1] != d:
        raise ValueError("take_rows: room for %s, %d rows of %d wanted" % ((out.shape[0], out.shape[1]), m, d))
    for i in range(m):
        if order[i] < 0 or order[i] >= n:
            raise ValueError("take_rows: row %d outside %d rows" % (order[i], n))
    if m == 0 or d == 0:
        return
    parts = 1 if threads <= 1 else min(m, PARTS_PER_THREAD * threads)
    with nogil, parallel(num_threads=max(1, threads)):
        for p in prange(parts, schedule="static"):
            for i in range(m * p // parts, m * (p + 1) // parts):
                memcpy(&out[i, 0], &values[order[i], 0], d * sizeof(uint16_t))


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


cdef void _adopt_range(float *table, float *base, Py_ssize_t d, const int32_t *ids, const uint16_t *values,
                       const int32_t *owner, int32_t me, Py_ssize_t a, Py_ssize_t m, const int32_t *sent_ids,
                       const uint16_t *sent_values, const uint64_t *stamps, Py_ssize_t b, Py_ssize_t s, bint exact,
                       float *step, float *own_step) noexcept nogil:
    """:func:`adopt_rows` of the update's rows ``[a, m)`` and the sent rows ``[b, s)``."""
    cdef Py_ssize_t j
    cdef int32_t i
    cdef bint merged, own, same
    while a < m or b < s:
        if owner != NULL and a < m and owner[a] == me:
            a += 1      # a row only this replica sent: its step is the one it sent, taken below
            continue
        if b >= s or (a < m and ids[a] < sent_ids[b]):
            i, merged, own = ids[a], True, False
        elif a >= m or sent_ids[b] < ids[a]:
            i, merged, own = sent_ids[b], False, True
        else:
            i, merged, own = ids[a], True, True
        same = False
        if merged:
            floats_from_halves(values + a * d, step, d, 1)
            a += 1
        if own:
            floats_from_halves(sent_values + b * d, own_step, d, 1)
            same = stamps != NULL and _stamp(table + i * d, d) == stamps[b]
            b += 1
            if not merged:
                memcpy(step, own_step, d * sizeof(float))
        for j in range(d):
            base[i * d + j] += step[j]
        if exact or same:
            memcpy(table + i * d, base + i * d, d * sizeof(float))
        elif merged:
            for j in range(d):
                table[i * d + j] += step[j]
            if own:
                for j in range(d):
                    table[i * d + j] -= own_step[j]


def adopt_rows(float[:, ::1] table, float[:, ::1] base, const int32_t[::1] ids, const uint16_t[:, ::1] values,
               const int32_t[::1] sent_ids, const uint16_t[:, ::1] sent_values, bint exact,
               const int32_t[::1] owner=None, int32_t me=-1, int threads=1, const uint64_t[::1] stamps=None):
    """A replica takes in a reconciliation, in one walk over the rows of the update and of what it sent.

    ``ids`` / ``values``: the merged steps; the rows only this replica sent have its own step as their
    merged step (bit for bit): the update may leave them out, or mark them with ``owner == me`` (a merge's
    owners), and they are taken from ``sent_ids`` / ``sent_values``.  ``base`` takes every merged step.
    With ``exact`` (it sent every row it changed) ``table`` equals ``base`` on those rows afterwards; else
    ``table`` takes the merged step less what it sent, so that what it kept stays; but with ``stamps`` (the
    digests :func:`changed_rows` gave of the sent rows), a sent row whose digest is unchanged (not trained
    since) equals ``base`` afterwards, as with ``exact``.  Ids increasing.  With ``threads``, the rows are
    cut into ranges walked at once.
    """
    cdef Py_ssize_t m = ids.shape[0], s = sent_ids.shape[0], d = table.shape[1], n_rows = table.shape[0], p, parts
    cdef Py_ssize_t a0, a1, b0, b1
    cdef int32_t lo, hi
    cdef bint failed = False
    _check_pair(table, base, "adopt_rows")
    _check_rows(ids, n_rows, "an update")
    _check_rows(sent_ids, n_rows, "a delta")
    if values.shape[0] != m or sent_values.shape[0] != s or (m and values.shape[1] != d) or \
            (s and sent_values.shape[1] != d) or (owner is not None and owner.shape[0] != m) or \
            (stamps is not None and stamps.shape[0] != s):
        raise ValueError("adopt_rows: %d ids for %d rows of values (%s owners), %d sent ids for %d rows"
                         % (m, values.shape[0], None if owner is None else owner.shape[0], s,
                            sent_values.shape[0]))
    if (m == 0 and s == 0) or d == 0:
        return
    cdef const int32_t *id_ptr = &ids[0] if m else NULL
    cdef const uint16_t *value_ptr = &values[0, 0] if m else NULL
    cdef const int32_t *owner_ptr = &owner[0] if owner is not None and m else NULL
    cdef const int32_t *sent_ptr = &sent_ids[0] if s else NULL
    cdef const uint16_t *sent_value_ptr = &sent_values[0, 0] if s else NULL
    cdef const uint64_t *stamp_ptr = &stamps[0] if stamps is not None and s else NULL
    cdef float *table_ptr = &table[0, 0]
    cdef float *base_ptr = &base[0, 0]
    cdef float *step = NULL
    cdef float *own_step = NULL
    parts = 1 if threads <= 1 else min(n_rows, PARTS_PER_THREAD * threads)
    cdef unsigned char *status = <unsigned char *>calloc(parts, 1)
    if status == NULL:
        raise MemoryError()
    with nogil, parallel(num_threads=max(1, threads)):
        step = <float *>malloc(d * sizeof(float))
        own_step = <float *>malloc(d * sizeof(float))
        for p in prange(parts, schedule="dynamic"):
            if step == NULL or own_step == NULL:
                status[p] = 1
            else:       # range p: rows [n_rows p / parts, n_rows (p + 1) / parts)
                lo = <int32_t>(n_rows * p // parts)
                hi = <int32_t>(n_rows * (p + 1) // parts)
                a0 = _lower_bound(id_ptr, m, lo)
                a1 = _lower_bound(id_ptr, m, hi)
                b0 = _lower_bound(sent_ptr, s, lo)
                b1 = _lower_bound(sent_ptr, s, hi)
                _adopt_range(table_ptr, base_ptr, d, id_ptr, value_ptr, owner_ptr, me, a0, a1, sent_ptr,
                             sent_value_ptr, stamp_ptr, b0, b1, exact, step, own_step)
        free(step)
        free(own_step)
    for p in range(parts):
        failed = failed or status[p]
    free(status)
    if failed:
        raise MemoryError()



def adopt_parts(float[:, ::1] table, float[:, ::1] base, list ids, list values, list owners, list sent_ids,
                list sent_values, bint exact, int32_t me=-1, int threads=1, list stamps=None):
    """:func:`adopt_rows` of the owners' parts of a reconciliation (part ``p`` of ``n``: the rows ``i`` with
    ``i % n == p``, :func:`~embkit.cluster.reconcile.owned_rows`), each with the part of this replica's delta on
    its rows, in one walk over the table in row order instead of one strided walk per part (which reads
    the table about twice as slowly).  Each row goes through the steps :func:`adopt_rows` of its part gives
    it: the result is the same, bit for bit.  ``owners`` and ``stamps`` hold an array or None per part; a
    part holding another part's row is refused."""
    cdef Py_ssize_t n = len(ids), d = table.shape[1], n_rows = table.shape[0], k, p, parts
    cdef Py_ssize_t a0, a1, b0, b1
    cdef int32_t lo, hi, i
    cdef bint failed = False
    cdef const int32_t[::1] one_ids
    cdef const uint16_t[:, ::1] one_values
    cdef const int32_t[::1] one_owner
    cdef const int32_t[::1] one_sent
    cdef const uint16_t[:, ::1] one_sent_values
    cdef const uint64_t[::1] one_stamps
    _check_pair(table, base, "adopt_parts")
    if len(values) != n or len(owners) != n or len(sent_ids) != n or len(sent_values) != n or \
            (stamps is not None and len(stamps) != n):
        raise ValueError("adopt_parts: %d id arrays for %d value arrays, %d owners, %d sent id arrays, %d sent "
                         "value arrays and %s stamps" % (n, len(values), len(owners), len(sent_ids),
                                                         len(sent_values), None if stamps is None else len(stamps)))
    for k in range(n):
        one_ids, one_values, one_sent, one_sent_values = ids[k], values[k], sent_ids[k], sent_values[k]
        _check_rows(one_ids, n_rows, "an update")
        _check_rows(one_sent, n_rows, "a delta")
        if one_values.shape[0] != one_ids.shape[0] or one_sent_values.shape[0] != one_sent.shape[0] or \
                (one_ids.shape[0] and one_values.shape[1] != d) or \
                (one_sent.shape[0] and one_sent_values.shape[1] != d) or \
                (owners[k] is not None and len(owners[k]) != one_ids.shape[0]) or \
                (stamps is not None and stamps[k] is not None and len(stamps[k]) != one_sent.shape[0]):
            raise ValueError("adopt_parts: part %d has %d ids for %d rows of values, %d sent ids for %d rows"
                             % (k, one_ids.shape[0], one_values.shape[0], one_sent.shape[0],
                                one_sent_values.shape[0]))
    if n == 0 or d == 0:
        return
    cdef const int32_t **id_ptr = <const int32_t **>calloc(n, sizeof(int32_t *))
    cdef const uint16_t **value_ptr = <const uint16_t **>calloc(n, sizeof(uint16_t *))
    cdef const int32_t **owner_ptr = <const int32_t **>calloc(n, sizeof(int32_t *))
    cdef const int32_t **sent_ptr = <const int32_t **>calloc(n, sizeof(int32_t *))
    cdef const uint16_t **sent_value_ptr = <const uint16_t **>calloc(n, sizeof(uint16_t *))
    cdef const uint64_t **stamp_ptr = <const uint64_t **>calloc(n, sizeof(uint64_t *))
    cdef Py_ssize_t *lengths = <Py_ssize_t *>calloc(2 * n, sizeof(Py_ssize_t))
    parts = 1 if threads <= 1 else min(n_rows, PARTS_PER_THREAD * threads)
    cdef unsigned char *status = <unsigned char *>calloc(parts, 1)
    if id_ptr == NULL or value_ptr == NULL or owner_ptr == NULL or sent_ptr == NULL or sent_value_ptr == NULL or \
            stamp_ptr == NULL or lengths == NULL or status == NULL:
        free(id_ptr); free(value_ptr); free(owner_ptr); free(sent_ptr); free(sent_value_ptr); free(stamp_ptr)
        free(lengths); free(status)
        raise MemoryError()
    for k in range(n):      # the lists hold the arrays for the call: their buffers stay put
        one_ids, one_values, one_sent, one_sent_values = ids[k], values[k], sent_ids[k], sent_values[k]
        lengths[2 * k], lengths[2 * k + 1] = one_ids.shape[0], one_sent.shape[0]
        if one_ids.shape[0]:
            id_ptr[k], value_ptr[k] = &one_ids[0], &one_values[0, 0]
            if owners[k] is not None:
                one_owner = owners[k]
                owner_ptr[k] = &one_owner[0]
        if one_sent.shape[0]:
            sent_ptr[k], sent_value_ptr[k] = &one_sent[0], &one_sent_values[0, 0]
            if stamps is not None and stamps[k] is not None:
                one_stamps = stamps[k]
                stamp_ptr[k] = &one_stamps[0]
    cdef float *table_ptr = &table[0, 0]
    cdef float *base_ptr = &base[0, 0]
    cdef float *step = NULL
    cdef float *own_step = NULL
    cdef Py_ssize_t *at = NULL
    with nogil, parallel(num_threads=max(1, threads)):
        step = <float *>malloc(d * sizeof(float))
        own_step = <float *>malloc(d * sizeof(float))
        at = <Py_ssize_t *>malloc(2 * n * sizeof(Py_ssize_t))     # each part's next update row and sent row
        for p in prange(parts, schedule="dynamic"):
            if step == NULL or own_step == NULL or at == NULL:
                status[p] = 1
            else:       # range p: rows [n_rows p / parts, n_rows (p + 1) / parts), in order
                lo = <int32_t>(n_rows * p // parts)
                hi = <int32_t>(n_rows * (p + 1) // parts)
                for k in range(n):
                    at[2 * k] = _lower_bound(id_ptr[k], lengths[2 * k], lo)
                    at[2 * k + 1] = _lower_bound(sent_ptr[k], lengths[2 * k + 1], lo)
                k = lo % n          # the part of row i, counted along (no division a row)
                for i in range(lo, hi):
                    a0 = at[2 * k]
                    b0 = at[2 * k + 1]
                    a1 = a0 + (a0 < lengths[2 * k] and id_ptr[k][a0] == i)
                    b1 = b0 + (b0 < lengths[2 * k + 1] and sent_ptr[k][b0] == i)
                    if a0 < a1 or b0 < b1:
                        _adopt_range(table_ptr, base_ptr, d, id_ptr[k], value_ptr[k], owner_ptr[k], me, a0, a1,
                                     sent_ptr[k], sent_value_ptr[k], stamp_ptr[k], b0, b1, exact, step, own_step)
                        at[2 * k] = a1
                        at[2 * k + 1] = b1
                    k = k + 1
                    if k == n:
                        k = 0
                for k in range(n):      # a row of another part, never taken, stops its part's walk
                    if at[2 * k] != _lower_bound(id_ptr[k], lengths[2 * k], hi) or \
                            at[2 * k + 1] != _lower_bound(sent_ptr[k], lengths[2 * k + 1], hi):
                        status[p] = 2
        free(step)
        free(own_step)
        free(at)
    cdef bint misplaced = False
    for p in range(parts):
        failed = failed or status[p] == 1
        misplaced = misplaced or status[p] == 2
    free(id_ptr); free(value_ptr); free(owner_ptr); free(sent_ptr); free(sent_value_ptr); free(stamp_ptr)
    free(lengths); free(status)
    if failed:
        raise MemoryError()
    if misplaced:
        raise ValueError("adopt_parts: a part holds a row of another part (part p of n holds the rows i with "
                         "i % n == p); the rows taken until then are adopted")


# --- 8 bits a value on the wire -------------------------------------------------------------------------------

#: the exponent of a row of zeros, and the least of any row: float16's grid below 2 ** -14 is 2 ** -24
DEF EIGHT_LEAST_EXP = -24
#: what :func:`_eight_exponent` gives a row that is not finite
DEF EIGHT_NOT_FINITE = 127
NOT_FINITE = ("a step to send at 8 bits a value is not finite (an infinity or a NaN): the training diverged; lower "
              "alpha")


cdef inline int _eight_exponent(const float *row, Py_ssize_t d) noexcept nogil:
    """The least ``k`` (not below ``EIGHT_LEAST_EXP``) with ``max |row| <= 127 * 2 ** k``; ``EIGHT_NOT_FINITE``
    for a row holding an infinity or a NaN."""
    cdef float top = 0.0, a
    cdef int e, k
    cdef Py_ssize_t j
    for j in range(d):
        a = fabsf(row[j])
        if not a <= 65504.0:    # an infinity or a NaN (float16 holds nothing else above it)
            return EIGHT_NOT_FINITE
        if a > top:
            top = a
    if top == 0.0:
        return EIGHT_LEAST_EXP
    frexpf(top, &e)             # top = f * 2 ** e, f in [0.5, 1): 127 * 2 ** (e - 7) is 0.99 * 2 ** e
    k = e - 7
    if ldexpf(127.0, k) < top:
        k += 1
    return k if k > EIGHT_LEAST_EXP else EIGHT_LEAST_EXP


cdef inline void _eight_row(float *row, Py_ssize_t d, int k, int8_t *q) noexcept nogil:
    """Round ``row`` (float32) to the multiples of ``2 ** k`` in place (halves away from zero), their
    multipliers in ``q`` (each in [-127, 127]: ``k`` is the row's :func:`_eight_exponent`); a multiple past
    float16's largest value (65504) is taken one nearer zero."""
    cdef float down = ldexpf(1.0, -k), up = ldexpf(1.0, k), x
    cdef int m
    cdef Py_ssize_t j
    for j in range(d):      # no branch: the compiler makes it vector code
        x = row[j] * down
        m = <int>(x + copysignf(0.5, x))
        q[j] = <int8_t>m
        row[j] = <float>m * up
    if k >= 9:              # 127 * 2 ** 9 is past 65504
        for j in range(d):
            if row[j] > 65504.0 or row[j] < -65504.0:
                q[j] = <int8_t>(q[j] - 1 if q[j] > 0 else q[j] + 1)
                row[j] = <float>q[j] * up


cdef bint _eight_range(uint16_t *values, Py_ssize_t d, int8_t *q, int8_t *exps, Py_ssize_t start,
                       Py_ssize_t stop, float *row) noexcept nogil:
    """Rows ``[start, stop)`` of the ``d`` columns at ``values`` rounded in place, their multipliers into ``q``
    and exponents into ``exps``; False (and the rows from the first not finite left as they are) when a row
    is not finite."""
    cdef Py_ssize_t i
    cdef int k
    for i in range(start, stop):
        floats_from_halves(values + i * d, row, d, 1)
        k = _eight_exponent(row, d)
        if k == EIGHT_NOT_FINITE:
            return False
        _eight_row(row, d, k, q + i * d)
        exps[i] = <int8_t>k
        halves_from_floats(row, values + i * d, d, 1)
    return True


cdef object _eight_pass(uint16_t *values, Py_ssize_t n, Py_ssize_t d, int8_t *q, int8_t *exps, int threads):
    """:func:`_eight_range` of every row, on ``threads`` OpenMP threads (each row on one); FloatingPointError
    when a row is not finite."""
    cdef Py_ssize_t p, parts = 1 if threads <= 1 else min(n, PARTS_PER_THREAD * threads)
    cdef float *row
    cdef char *status      # per range: 0 done, 1 no scratch, 2 a row not finite
    cdef bint no_memory = False, not_finite = False
    if n == 0 or d == 0:
        return
    status = <char *>calloc(parts, 1)
    if status == NULL:
        raise MemoryError()
    with nogil, parallel(num_threads=threads if threads > 1 else 1):
        row = <float *>malloc(d * sizeof(float))
        for p in prange(parts, schedule="dynamic"):
            if row == NULL:
                status[p] = 1
            elif not _eight_range(values, d, q, exps, n * p // parts, n * (p + 1) // parts, row):
                status[p] = 2
        free(row)
    for p in range(parts):
        no_memory = no_memory or status[p] == 1
        not_finite = not_finite or status[p] == 2
    free(status)
    if no_memory:
        raise MemoryError()
    if not_finite:
        raise FloatingPointError(NOT_FINITE)


def round_eight(uint16_t[:, ::1] values, int8_t[:, ::1] q, int8_t[::1] exps, int threads=1):
    """Round each row of the float16 steps ``values`` (bits) in place to 8 bits a value: to the multiples of
    ``2 ** k`` of magnitude at most ``127 * 2 ** k``, with ``k`` the least for the row's largest value (not
    below -24, float16's finest grid), an error under 1/127 of that value; the multipliers into ``q`` and the
    exponents into ``exps``, which :func:`unpack_eight` turns back into the rounded rows bit for bit.  Exact
    in float16, and rounding a rounded row again leaves its values as they are.  The result is the same for
    any number of ``threads``.  FloatingPointError when a row holds an infinity or a NaN (training
    diverged)."""
    cdef Py_ssize_t n = values.shape[0], d = values.shape[1]
    if q.shape[0] != n or (n and q.shape[1] != d) or exps.shape[0] != n:
        raise ValueError("round_eight: values %s, q %s and exps %d do not fit" % ((n, d), (q.shape[0], q.shape[1]),
                                                                                  exps.shape[0]))
    if n and d:
        _eight_pass(&values[0, 0], n, d, &q[0, 0], &exps[0], threads)


def unpack_eight(const int8_t[:, ::1] q, const int8_t[::1] exps, uint16_t[:, ::1] out):
    """Float16 bits of the rows ``q * 2 ** exps`` (what :func:`round_eight` packed) into ``out``: exact."""
    cdef Py_ssize_t n = q.shape[0], d = q.shape[1], i, j
    cdef float *row
    cdef float up
    if exps.shape[0] != n or out.shape[0] != n or (n and out.shape[1] != d):
        raise ValueError("unpack_eight: q %s, exps %d and out %s do not fit" % ((n, d), exps.shape[0],
                                                                              (out.shape[0], out.shape[1])))
    if n == 0 or d == 0:
        return
    for i in range(n):      # float16's largest value (65504) rounds with 2 ** 10: a larger one was not packed here
        if exps[i] < EIGHT_LEAST_EXP or exps[i] > 10:
            raise ValueError("unpack_eight: row %d has the exponent %d (outside [-24, 10])" % (i, exps[i]))
    row = _scratch(d)
    with nogil:
        for i in range(n):
            up = ldexpf(1.0, exps[i])
            for j in range(d):
                row[j] = <float>q[i, j] * up
            halves_from_floats(row, &out[i, 0], d, 1)
    free(row)
