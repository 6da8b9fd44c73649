# cython: cdivision=True
"""LSH negative sampling (LNS, Daghaghi et al., ICML 2021): negatives drawn from locality-sensitive hash
buckets of the output vectors, in time independent of the number of classes.

The class vectors (rows of the bound output table) are hashed into ``L`` tables with ``K`` hash functions
each; a draw hashes the query (the true class's vector for *LSH Label*, the example's hidden vector for
*LSH Embedding*), picks a table and returns a member of the query's bucket.  The tables are rebuilt from
the current output table on a decaying schedule (:meth:`LSHSampler.refresh`).
"""
import math
import numbers

import numpy as np

from libc.stdint cimport uint64_t, int32_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy
from libc.math cimport log, INFINITY

from embkit._kernels.common cimport emb_dot_rows, emb_prefetch_row, rng_below
from embkit._kernels.samplers cimport Sampler

FAMILIES = ("simhash", "dwta")
QUERIES = ("label", "embedding")
#: K when not given: SimHash bits per table; DWTA winner indices per table (the paper uses 5-6).
DEFAULT_K = {"simhash": 8, "dwta": 5}
DEFAULT_L = 16

cdef enum:
    SIMHASH = 0
    DWTA = 1
    # densification: how many other bins an empty DWTA bin tries before giving up (hash value 0)
    NPROBES = 32
    # draws whose table slots are picked (and prefetched) before their ids are read
    GATHER = 32

N_PROBES = NPROBES


cdef struct TableState:
    # what one draw() call knows about one table (per-thread scratch)
    int code        # the query's bucket, -1 until the table is hashed
    int start       # the bucket's members are tab[t * n + start : t * n + start + size]
    int size
    int tpos        # index of the target in the table's id row if it is in the bucket, else -1
    int eligible    # members other than the target
    double weight   # probability a draw takes a given eligible member from this table: 1 / (L eligible), or 0


cdef inline int fold(uint64_t key, int bits, bint direct) noexcept nogil:
    """Bucket of a hash key: the key itself when the key range fits, else Fibonacci hashing to ``bits``."""
    if direct:
        return <int>key
    return <int>((key * <uint64_t>0x9E3779B97F4A7C15) >> (64 - bits))


cdef inline int dwta_winner(const float *x, const int32_t *bin, int bin_size) noexcept nogil:
    """Position of the largest non-zero coordinate of ``x`` among ``bin`` (first on ties), -1 if all are 0."""
    cdef int i, best = -1
    cdef float v, bv = -INFINITY
    cdef bint gt
    for i in range(bin_size):
        # written without branches (random data would mispredict them): zeros count as -inf
        v = x[bin[i]]
        v = v if v != 0.0 else -INFINITY
        gt = v > bv
        best = i if gt else best
        bv = v if gt else bv
    return best


cdef inline bint is_zero(const float *x, int n) noexcept nogil:
    cdef int i
    for i in range(n):
        if x[i] != 0.0:
            return False
    return True


def _check_int(name, value, lo, hi):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not lo <= value <= hi:
        raise ValueError("%s must be an integer in [%d, %d], got %r" % (name, lo, hi, value))
    return int(value)


def _check_choice(name, value, choices):
    if value not in choices:
        raise ValueError("%s must be one of %s, got %r" % (name, ", ".join(repr(c) for c in choices), value))
    return value


cdef class LSHSampler(Sampler):
    """Locality-sensitive negative sampling over ``n_classes`` output vectors (LSH Label / LSH Embedding).

    Hashing.  ``family='simhash'``: each table's code is ``K`` sign bits ``[<r_i, x> > 0]`` of Gaussian
    projections (Charikar), so two vectors at angle ``theta`` share a bit with probability
    ``1 - theta / pi``.  ``family='dwta'``: densified winner-take-all hashing (Chen & Shrivastava; the
    paper's and SLIDE's choice): each of the ``K`` hashes of a table is the position of the largest
    non-zero coordinate within a random bin of ``bin_size`` distinct coordinates; a bin whose coordinates
    are all 0 borrows the value of another bin, tried in a fixed random order (up to ``N_PROBES``, else 0).
    The ``K`` values form a key (bits, or base-``bin_size`` digits); when the key range exceeds
    ``2**bucket_bits`` (``bucket_bits = max(10, ceil(log2 n_classes))``, at most 30) keys are folded into
    that many buckets by multiplicative hashing.  Each table is stored in CSR form: ``tables[t]`` lists the
    class ids sorted by bucket, ``offsets[t, b]`` where bucket ``b`` starts.

    Drawing.  The query vector ``x`` is ``W_out[target]`` with ``query='label'`` (LSH Label; the hidden
    vector is used when there is no target) and the hidden vector with ``query='embedding'`` (LSH
    Embedding).  Each of the ``k`` draws of one call picks a table ``t`` uniformly and returns a uniformly
    random member of ``x``'s bucket ``B_t`` other than the target; when the bucket has no such member, the
    draw is padded with a uniformly random class other than the target (the target can be drawn only when
    ``n_classes == 1``).  ``x`` is hashed at most once per table and call (lazily: only the tables the call
    picks, or all ``L`` when log-probabilities are asked for), so one draw costs ``O(K d)`` hashing (DWTA:
    ``O(K bin_size)``) plus ``O(1)``, whatever ``n_classes``.

    Log-probabilities (``exact_logq = True``).  ``logq`` is the exact probability of the procedure above
    given the current tables: with ``c_t = |B_t \\ {target}|`` and ``e`` the number of tables where
    ``c_t = 0``,

        ``Q(j) = (1/L) sum_t [j in B_t] / c_t + e / (L (n - 1))``  for ``j != target``

    (``n`` instead of ``n - 1`` when there is no target).  Asking for it costs ``O(K L d)`` hashing and
    ``O(L)`` a draw.  Over random hash functions ``P(j in B_t) = a_j^K``, with ``a_j`` the collision
    probability of ``x`` and ``w_j`` (``1 - angle / pi`` for SimHash), so ``Q(j)`` is about
    ``a_j^K E[1 / c_t]`` plus padding: increasing in ``a_j`` like the paper's Theorems 1-2, whose
    ``1 - (1 - a_j^K)^L`` is the probability that ``j`` is in the union of the ``L`` buckets (the set the
    paper's Algorithm 3 retrieves; here each draw samples one table instead).

    ``target_logq`` is the log-probability the same procedure would give the target if it were not
    excluded, ``(1/L) sum_t [target in B_t] / |B_t| + e0 / (L n)`` with ``e0`` the number of empty
    buckets, floored at ``1 / (L n)`` so that it stays finite (the excluding sampler gives it 0, and an
    infinite logQ correction would break the corrected losses).

    Updates.  The tables are built when the table is bound and rebuilt from the current output vectors by
    :meth:`refresh` (between chunks, with the GIL) on a decaying schedule: at progress ``r``, ``r + r g``,
    ``r + r g + r g**2``, ... with ``r = rebuild_initial`` and ``g = rebuild_decay`` (the paper: a short
    initial period, then exponentially rarer updates).  A rebuild costs ``O(n L K d)`` (SimHash, one
    matrix product) or ``O(n L K bin_size)`` (DWTA) plus an ``O(n L)`` counting sort.
    Draws only read the tables, so any number of threads may draw at once, each with its own scratch.

    Parameters
    ----------
    n_classes : int
    family : {'simhash', 'dwta'}
    K : int, optional
        Hash functions per table, in [1, 64] (default 8 for SimHash, 5 for DWTA).
    L : int, optional
        Number of tables, in [1, 4096] (default 16; the paper uses 150-400 with DWTA).
    query : {'label', 'embedding'}
    bin_size : int
        DWTA bin size, in [2, 1024], at most the vector dimension (ignored by SimHash).
    rebuild_initial : float
        First rebuild interval as a fraction of the run, in (0, 1].
    rebuild_decay : float
        Factor (>= 1) by which each interval grows; 1 rebuilds every ``rebuild_initial``.
    seed : int
        Seed of the hash functions (>= 0).
    """
    QUERY_FREE = False
    REFRESHES = True
    DRAWS_UNBOUND = True
    cdef readonly str family
    cdef readonly str query
    cdef readonly int K
    cdef readonly int L
    cdef readonly int bin_size
    cdef readonly double rebuild_initial
    cdef readonly double rebuild_decay
    cdef readonly uint64_t seed
    cdef readonly int bucket_bits
    cdef readonly int n_buckets
    cdef readonly int rebuilds          # tables built so far (the one at bind included)
    cdef readonly double next_rebuild   # progress at which refresh rebuilds next
    cdef double interval
    cdef double last_progress
    cdef bint built
    cdef bint direct
    cdef int fam
    cdef bint by_label
    cdef int hash_dim                   # dimension the hash functions were made for (0: none)
    cdef object _proj, _row_ids, _bins, _probes, _offsets, _tables, _pos
    cdef float *proj                    # SimHash: (L K) x dim projections
    cdef int *row_ids                   # SimHash: 0 .. L K - 1, the projection rows of each table
    cdef int32_t *bins                  # DWTA: (L K) x bin_size coordinates
    cdef int32_t *probes                # DWTA: (L K) x N_PROBES bins to borrow from
    cdef int32_t *offsets               # L x (n_buckets + 1)
    cdef int32_t *tab                   # L x n_classes: ids sorted by bucket
    cdef int32_t *pos                   # n_classes x L: where each id sits in each table's row

    def __init__(self, int n_classes, family="simhash", K=None, L=None, query="label", bin_size=8,
                 rebuild_initial=0.01, rebuild_decay=1.5, seed=1):
        Sampler.__init__(self, n_classes)
        self.family = _check_choice("family", family, FAMILIES)
        self.query = _check_choice("query", query, QUERIES)
        self.K = _check_int("K", DEFAULT_K[family] if K is None else K, 1, 64)
        self.L = _check_int("L", DEFAULT_L if L is None else L, 1, 4096)
        self.bin_size = _check_int("bin_size", bin_size, 2, 1024)
        if (isinstance(rebuild_initial, bool) or not isinstance(rebuild_initial, numbers.Real)
                or not 0.0 < rebuild_initial <= 1.0):
            raise ValueError("rebuild_initial must be a number in (0, 1], got %r" % (rebuild_initial,))
        if (isinstance(rebuild_decay, bool) or not isinstance(rebuild_decay, numbers.Real)
                or not 1.0 <= rebuild_decay < math.inf):
            raise ValueError("rebuild_decay must be a finite number >= 1, got %r" % (rebuild_decay,))
        self.rebuild_initial = rebuild_initial
        self.rebuild_decay = rebuild_decay
        self.seed = _check_int("seed", seed, 0, 2 ** 63 - 1)
        self.fam = SIMHASH if family == "simhash" else DWTA
        self.by_label = query == "label"
        self.bucket_bits = min(30, max(10, int(math.ceil(math.log2(max(n_classes, 2))))))
        if self.fam == SIMHASH:
            self.direct = self.K <= self.bucket_bits
            self.n_buckets = (1 << self.K) if self.direct else (1 << self.bucket_bits)
        else:
            self.direct = self.bin_size ** self.K <= (1 << self.bucket_bits)
            self.n_buckets = self.bin_size ** self.K if self.direct else (1 << self.bucket_bits)
        self.built = False
        self.rebuilds = 0

    # ------------------------------------------------------------------ hash functions
    def _make_hashes(self, int dim):
        """Draw the hash functions for vectors of ``dim`` coordinates (deterministic in ``seed``)."""
        cdef int nh = self.K * self.L
        rng = np.random.default_rng([self.seed, dim])
        if self.fam == SIMHASH:
            proj = np.ascontiguousarray(rng.standard_normal((nh, dim)), dtype=np.float32)
            self._set_array("_proj", proj)
            self._set_array("_row_ids", np.arange(nh, dtype=np.int32))
        else:
            if self.bin_size > dim:
                raise ValueError("bin_size must be at most the vector dimension (%d), got %d"
                                 % (dim, self.bin_size))
            per_perm = dim // self.bin_size    # bins cut from one permutation: distinct coordinates
            n_perm = -(-nh // per_perm)
            cuts = [rng.permutation(dim)[:per_perm * self.bin_size] for _ in range(n_perm)]
            bins = np.concatenate(cuts).reshape(-1, self.bin_size)[:nh]
            self._set_array("_bins", np.ascontiguousarray(bins, dtype=np.int32))
            self._set_array("_probes", np.ascontiguousarray(rng.integers(0, nh, (nh, N_PROBES)), dtype=np.int32))
        self.hash_dim = dim

    def _check_dim(self, int dim):
        """Make the hash functions on first use; afterwards vectors must have their dimension."""
        if self.hash_dim == 0:
            self._make_hashes(dim)
        elif dim != self.hash_dim:
            raise ValueError("vectors have %d dimensions, the hash functions %d" % (dim, self.hash_dim))

    def _set_array(self, name, arr):
        """Keep ``arr`` alive as attribute ``name`` and point the matching C pointer at it."""
        cdef float[::1] fv
        cdef int32_t[::1] iv
        flat = arr.reshape(-1)
        if name == "_proj":
            fv = flat
            self._proj, self.proj = arr, &fv[0]
            return
        iv = flat if flat.size else np.zeros(1, dtype=np.int32)
        if name == "_bins":
            self._bins, self.bins = arr, &iv[0]
        elif name == "_probes":
            self._probes, self.probes = arr, &iv[0]
        elif name == "_offsets":
            self._offsets, self.offsets = arr, &iv[0]
        elif name == "_tables":
            self._tables, self.tab = arr, &iv[0]
        elif name == "_pos":
            self._pos, self.pos = arr, &iv[0]
        elif name == "_row_ids":
            self._row_ids, self.row_ids = arr, <int *> &iv[0]

    cdef int table_code(self, const float *x, int t) noexcept nogil:
        """Bucket of vector ``x`` (``hash_dim`` floats) in table ``t``."""
        cdef uint64_t key = 0
        cdef int i, h, a, idx
        cdef int dim = self.hash_dim
        cdef float p[64]
        if self.fam == SIMHASH:
            # the table's K projections in one pass (two rows at a time share the loads of x)
            emb_dot_rows(x, self.proj, self.row_ids + t * self.K, self.K, dim, p)
            for i in range(self.K):
                if p[i] > 0.0:
                    key |= (<uint64_t>1) << i
        else:
            for i in range(self.K):
                idx = t * self.K + i
                h = dwta_winner(x, self.bins + <Py_ssize_t>idx * self.bin_size, self.bin_size)
                a = 0
                while h < 0 and a < NPROBES:
                    h = dwta_winner(x, self.bins + <Py_ssize_t>self.probes[idx * NPROBES + a] * self.bin_size,
                                    self.bin_size)
                    a += 1
                if h < 0:
                    h = 0
                key = key * <uint64_t>self.bin_size + <uint64_t>h
        return fold(key, self.bucket_bits, self.direct)

    cdef void row_codes(self, const float *x, int32_t *codes) noexcept nogil:
        """Buckets of ``x`` in every table (an all-zero vector has key 0 everywhere)."""
        cdef int t
        cdef bint zero = is_zero(x, self.hash_dim)
        for t in range(self.L):
            codes[t] = 0 if zero else self.table_code(x, t)

    def hash_rows(self, X):
        """Bucket codes of the rows of ``X`` (m x dim) in every table, as the tables are built: (m, L) int32."""
        X = np.ascontiguousarray(X, dtype=np.float32)
        if X.ndim != 2:
            raise ValueError("hash_rows needs a 2-d array")
        self._check_dim(X.shape[1])
        cdef Py_ssize_t m = X.shape[0], start, stop, j
        codes = np.empty((m, self.L), dtype=np.int32)
        if m == 0:
            return codes
        cdef int32_t[:, ::1] cv = codes
        cdef float[:, ::1] xv = X
        cdef float[:, ::1] pv
        cdef Py_ssize_t block = 1 << 15
        if self.fam == SIMHASH:
            for start in range(0, m, block):
                stop = min(m, start + block)
                # one matrix product per block; the signs are packed like the query path's
                P = np.ascontiguousarray(X[start:stop] @ self._proj.T)
                pv = P
                with nogil:
                    for j in range(stop - start):
                        self._pack_signs(&pv[j, 0], &cv[start + j, 0])
        else:
            with nogil:
                for j in range(m):
                    self.row_codes(&xv[j, 0], &cv[j, 0])
        return codes

    cdef void _pack_signs(self, const float *p, int32_t *codes) noexcept nogil:
        """SimHash codes of one vector from its ``L K`` projections ``p``."""
        cdef int t, i
        cdef uint64_t key
        for t in range(self.L):
            key = 0
            for i in range(self.K):
                if p[t * self.K + i] > 0.0:
                    key |= (<uint64_t>1) << i
            codes[t] = fold(key, self.bucket_bits, self.direct)

    def py_hash(self, x):
        """Bucket codes of one vector in every table, computed by the query path: (L,) int32."""
        xa = np.ascontiguousarray(x, dtype=np.float32).reshape(-1)
        self._check_dim(xa.shape[0])
        codes = np.empty(self.L, dtype=np.int32)
        cdef float[::1] xv = xa
        cdef int32_t[::1] cv = codes
        self.row_codes(&xv[0], &cv[0])
        return codes

    # ------------------------------------------------------------------ tables
    def bind(self, W_out not None):
        """Hash the rows of ``W_out`` (n_classes x dim) into the tables and restart the rebuild schedule."""
        if self.fam == DWTA and self.bin_size > W_out.shape[1]:
            raise ValueError("bin_size must be at most the vector dimension (%d), got %d"
                             % (W_out.shape[1], self.bin_size))
        self.built = False
        Sampler.bind(self, W_out)

    def refresh(self, double progress):
        """Rebuild the tables when ``progress`` (fraction of the run done) reaches the next scheduled point.

        The first call after :meth:`bind` (or a ``progress`` lower than the previous call's: a new run)
        builds the tables and restarts the schedule.  Several points passed at once cost one rebuild.
        Returns True when the tables were rebuilt.
        """
        if self.W_out is None:
            return False
        if not self.built or progress < self.last_progress:
            self.interval = self.rebuild_initial
            self.next_rebuild = progress + self.interval
            self.rebuild()
        elif progress + 1e-9 >= self.next_rebuild:      # tolerance: points are sums of floats
            while self.next_rebuild <= progress + 1e-9:
                self.interval *= self.rebuild_decay
                self.next_rebuild += self.interval
            self.rebuild()
        else:
            self.last_progress = progress
            return False
        self.last_progress = progress
        return True

    def get_state(self):
        """The hash tables and the rebuild schedule (the hash functions come from ``seed``)."""
        if not self.built:
            return {}
        return {"offsets": np.array(self._offsets), "tables": np.array(self._tables), "pos": np.array(self._pos),
                "interval": self.interval, "next_rebuild": self.next_rebuild, "last_progress": self.last_progress,
                "rebuilds": self.rebuilds}

    def set_state(self, state):
        """Restore the tables and schedule of :meth:`get_state` (after :meth:`bind`)."""
        if not state:
            return
        shapes = {"offsets": (self.L, self.n_buckets + 1), "tables": (self.L, self.n_classes),
                  "pos": (self.n_classes, self.L)}
        for name, shape in shapes.items():
            arr = np.ascontiguousarray(state[name], dtype=np.int32)
            if arr.shape != shape:
                raise ValueError("LSH state %s has shape %s, expected %s" % (name, arr.shape, shape))
            if name != "offsets" and arr.size and (arr.min() < 0 or arr.max() >= max(shape)):
                raise ValueError("LSH state %s holds ids out of range" % name)
            self._set_array("_" + name, arr)
        self.interval = float(state["interval"])
        self.next_rebuild = float(state["next_rebuild"])
        self.last_progress = float(state["last_progress"])
        self.rebuilds = int(state["rebuilds"])
        self.built = True

    def rebuild(self):
        """Hash the current output vectors into fresh tables now (outside the schedule)."""
        if self.W_out is None:
            raise RuntimeError("bind an output table first")
        W = np.asarray(self.W_out)
        if W.shape[1] != self.hash_dim:
            self._make_hashes(W.shape[1])                         # bound to a table of another width
        codes = np.ascontiguousarray(self.hash_rows(W).T)        # L x n
        cdef int n = self.n_classes, L = self.L, B = self.n_buckets
        offsets = np.zeros((L, B + 1), dtype=np.int32)
        tables = np.empty((L, n), dtype=np.int32)
        pos = np.empty((n, L), dtype=np.int32)
        cursor = np.empty(B, dtype=np.int32)
        cdef int32_t[:, ::1] cv = codes, ov = offsets, tv = tables, pv = pos
        cdef int32_t[::1] cur = cursor
        cdef int t, j, b, p, c
        with nogil:
            for t in range(L):
                # counting sort of the ids by bucket
                for j in range(n):
                    ov[t, cv[t, j] + 1] += 1
                for b in range(B):
                    ov[t, b + 1] += ov[t, b]
                memcpy(&cur[0], &ov[t, 0], B * sizeof(int32_t))
                for j in range(n):
                    c = cv[t, j]
                    p = cur[c]
                    cur[c] = p + 1
                    tv[t, p] = j
                    pv[j, t] = p
        self._set_array("_offsets", offsets)
        self._set_array("_tables", tables)
        self._set_array("_pos", pos)
        self.built = True
        self.rebuilds += 1

    @property
    def offsets(self):
        """``offsets[t, b]``: start of bucket ``b`` in ``tables[t]`` (L x (n_buckets + 1)), or None."""
        return self._offsets if self.built else None

    @property
    def tables(self):
        """``tables[t]``: the class ids sorted by their bucket in table ``t`` (L x n_classes), or None."""
        return self._tables if self.built else None

    @property
    def projections(self):
        """SimHash projection vectors, (L K) x dim (None for DWTA or before binding)."""
        return self._proj

    @property
    def dwta_bins(self):
        """DWTA bins: (L K) x bin_size coordinate indices (None for SimHash or before binding)."""
        return self._bins

    @property
    def dwta_probes(self):
        """DWTA densification order: row ``i`` lists the bins an empty bin ``i`` borrows from, in order."""
        return self._probes

    # ------------------------------------------------------------------ drawing
    cdef const float *query_vector(self, const float *query, int target) noexcept nogil:
        if not self.built:
            return NULL
        if self.by_label and target >= 0:
            return self.out + <Py_ssize_t>target * self.dim
        return query

    cdef int pad(self, uint64_t *rng, int target) noexcept nogil:
        """A uniformly random class other than ``target`` (any class if there is no target or only one)."""
        cdef int i
        if target < 0 or self.n_classes == 1:
            return <int>rng_below(rng, self.n_classes)
        i = <int>rng_below(rng, self.n_classes - 1)
        return i + 1 if i >= target else i

    cdef void probe(self, const float *x, bint zero, int t, int target, TableState *st) noexcept nogil:
        """Hash ``x`` in table ``t`` and record its bucket and whether the target is in it."""
        st.code = 0 if zero else self.table_code(x, t)
        self.locate(t, target, st)

    cdef void locate(self, int t, int target, TableState *st) noexcept nogil:
        """Fill in the bucket bounds of ``st.code`` in table ``t`` and the target's place in it."""
        cdef int code = st.code
        cdef int32_t *off = self.offsets + <Py_ssize_t>t * (self.n_buckets + 1)
        cdef int p
        st.start = off[code]
        st.size = off[code + 1] - off[code]
        st.tpos = -1
        if target >= 0:
            p = self.pos[<Py_ssize_t>target * self.L + t]
            if st.start <= p < st.start + st.size:
                st.tpos = p
        st.eligible = st.size - (1 if st.tpos >= 0 else 0)
        st.weight = 1.0 / (self.L * <double>st.eligible) if st.eligible > 0 else 0.0

    cdef int draw(self, uint64_t *rng, const float *query, int target, int k, int *ids, double *logq,
                  double *target_logq, void *scratch) noexcept nogil:
        cdef int n = self.n_classes, L = self.L
        cdef const float *x = self.query_vector(query, target)
        cdef TableState *st = <TableState *> scratch
        cdef bint own = False, zero = False
        cdef int i, i0, m, t, c
        cdef Py_ssize_t slot[GATHER]
        if x != NULL and st == NULL:
            st = <TableState *> malloc(L * sizeof(TableState))
            own = True
            if st == NULL:
                x = NULL
        if x != NULL:
            zero = is_zero(x, self.dim)
            if logq != NULL or target_logq != NULL:
                # every table is needed: hash them all first, prefetching the bucket bounds to look up
                for t in range(L):
                    st[t].code = 0 if zero else self.table_code(x, t)
                    emb_prefetch_row(<const float *>(self.offsets + <Py_ssize_t>t * (self.n_buckets + 1)
                                                     + st[t].code), 2)
                if target >= 0:
                    emb_prefetch_row(<const float *>(self.pos + <Py_ssize_t>target * L), L)
                for t in range(L):
                    self.locate(t, target, &st[t])
            else:
                for t in range(L):
                    st[t].code = -1
        # in blocks: first pick every draw's table slot and prefetch it, then gather the ids, so the
        # (with many classes, cache-missing) reads of the tables overlap
        i0 = 0
        while i0 < k:
            m = k - i0 if k - i0 < GATHER else GATHER
            for i in range(m):
                if x == NULL:
                    slot[i] = -1 - self.pad(rng, target)
                    continue
                t = <int>rng_below(rng, L)
                if st[t].code < 0:
                    self.probe(x, zero, t, target, &st[t])
                if st[t].eligible > 0:
                    c = st[t].start + <int>rng_below(rng, st[t].eligible)
                    if st[t].tpos >= 0 and c >= st[t].tpos:
                        c += 1                               # skip the target's slot
                    slot[i] = <Py_ssize_t>t * n + c
                    emb_prefetch_row(<const float *>(self.tab + slot[i]), 1)
                else:
                    slot[i] = -1 - self.pad(rng, target)
            for i in range(m):
                ids[i0 + i] = self.tab[slot[i]] if slot[i] >= 0 else <int>(-1 - slot[i])
            i0 += m
        if logq != NULL or target_logq != NULL:
            self.log_probs(x != NULL, st, target, k, ids, logq, target_logq)
        if own:
            free(st)
        return k

    cdef void log_probs(self, bint hashed, const TableState *st, int target, int k, const int *ids,
                        double *logq, double *target_logq) noexcept nogil:
        """Exact log-probabilities of the draws (see the class docstring) from the per-table states."""
        cdef int n = self.n_classes, L = self.L, i, t, j
        cdef const int32_t *row
        cdef int padded = L, empty = L
        cdef double pool = n - 1 if (target >= 0 and n > 1) else n
        cdef double q, pad_mass, incl
        if hashed:
            padded = 0
            empty = 0
            for t in range(L):
                padded += (st[t].eligible == 0)
                empty += (st[t].size == 0)
        pad_mass = padded / (L * pool)
        if logq != NULL:
            if hashed:
                for i in range(k):
                    emb_prefetch_row(<const float *>(self.pos + <Py_ssize_t>ids[i] * L), L)
            for i in range(k):
                j = ids[i]
                if j == target and n > 1:
                    logq[i] = log(0.0)
                    continue
                q = pad_mass
                if hashed:
                    row = self.pos + <Py_ssize_t>j * L
                    for t in range(L):
                        # j is in the bucket iff its place in table t lies in the bucket's range
                        q += st[t].weight * <double>(<unsigned int>(row[t] - st[t].start)
                                                     < <unsigned int>st[t].size)
                logq[i] = log(q)
        if target_logq != NULL and target >= 0:
            if n == 1:
                target_logq[0] = 0.0
                return
            incl = empty / (L * <double>n)
            if hashed:
                for t in range(L):
                    if st[t].tpos >= 0:
                        incl += 1.0 / (L * <double>st[t].size)
            if incl < 1.0 / (L * <double>n):
                incl = 1.0 / (L * <double>n)
            target_logq[0] = log(incl)

    cpdef Py_ssize_t scratch_bytes(self):
        """Per-thread scratch: one :c:type:`TableState` per table."""
        return self.L * sizeof(TableState)

    # ------------------------------------------------------------------ Python probes
    def _draws_without_query(self, targets):
        """Label queries hash the target's own vector: calls with a target need no query."""
        return self.by_label and (targets.size == 0 or targets.min() >= 0)

    def _query_array(self, query, int target):
        """The vector a draw with ``query``/``target`` hashes (None: every draw is padding)."""
        if not self.built:
            return None
        if self.by_label and target >= 0:
            return np.asarray(self.W_out)[target]
        return query

    def _log_probs(self, query, target):
        """Exact probability of each class for one draw with ``query``/``target`` (the docstring's ``Q``).

        ``O(n_classes + L)``: for tests and benchmarks, not for training.
        """
        cdef int n = self.n_classes, L = self.L
        x = self._query_array(query, target)
        Q = np.zeros(n, dtype=np.float64)
        padded = L
        if x is not None:
            codes = self.py_hash(x)
            padded = 0
            for t in range(L):
                lo, hi = self._offsets[t, codes[t]], self._offsets[t, codes[t] + 1]
                members = self._tables[t, lo:hi]
                if target >= 0:
                    members = members[members != target]
                if members.size:
                    Q[members] += 1.0 / (L * members.size)
                else:
                    padded += 1
        if target >= 0 and n > 1:
            pad = np.full(n, padded / (L * (n - 1.0)))
            pad[target] = 0.0
        else:
            pad = np.full(n, padded / (L * float(n)))
        with np.errstate(divide="ignore"):
            return np.log(Q + pad)
