# cython: cdivision=True
"""Kernel-based negative sampling through a divide-and-conquer sum tree (RF-softmax and Quadratic-softmax).

The sampler draws class ``i`` for the query ``q`` (the example's hidden vector) with probability close to
``K(q, c_i) / sum_j K(q, c_j)`` for a kernel ``K`` that a feature map ``phi`` linearises,
``K(q, c) ~= <phi(q), phi(c)>`` (Rawat et al., "Sampled Softmax with Random Fourier Features", NeurIPS 2019,
section 3.1, after Blanc & Rendle 2018).  Every node of a binary tree over the classes stores the sum of
``phi(c)`` over its classes, so the mass of a node for a query is one dot product with ``phi(q)`` and a draw
descends from the root in ``O(D log n)``.

Patent notice: RF-softmax, sampled softmax with a proposal built from Random Fourier Features, is covered by
US patent 12,205,005 ("Sampled Softmax with Random Fourier Features").  The ``'rff'`` kernel of
:class:`KernelSampler` implements that method; check whether the patent applies to your use before
deploying it.  The ``'quadratic'`` kernel is the baseline of Blanc & Rendle.
"""
import math

import numpy as np

cimport cython
from libc.math cimport cos, sin, log, exp, sqrt, INFINITY
from libc.stdint cimport uint64_t
from libc.string cimport memcpy, memset

from embkit._kernels.common cimport emb_dot, rng_uniform, rng_below
from embkit._kernels.samplers cimport Sampler

cdef enum:
    # nodes 1 .. NODE_CACHE - 1 (the top six levels) have their mass computed once per draw call
    NODE_CACHE = 64

#: Floats of features computed at once while (re)building the tree.
BUILD_FLOATS = 1 << 23
#: Refresh updates the changed leaves in place when at most this fraction of the leaves changed.
INCREMENTAL_FRACTION = 0.125

KERNELS = ("rff", "quadratic")


def _positive_int(name, value, low=1):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError("%s must be an integer >= %d, got %r" % (name, low, value))
    return int(value)


def _number(name, value, ok, what):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError("%s must be %s, got %r" % (name, what, value))
    value = float(value)
    if not (math.isfinite(value) and ok(value)):
        raise ValueError("%s must be %s, got %r" % (name, what, value))
    return value


def _unit_rows(X):
    """Rows of ``X`` divided by their L2 norms; zero or non-finite rows become zero vectors."""
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    good = np.isfinite(norms) & (norms > 0)
    scale = np.zeros_like(norms)
    scale[good] = 1.0 / norms[good]
    out = X * scale[:, None]
    out[~good] = 0.0
    return out


def _inverse_norms(X):
    """``1 / ||x||`` of each row in float64; 0 for zero or non-finite rows."""
    norms = np.sqrt(np.einsum("ij,ij->i", X, X).astype(np.float64))
    good = np.isfinite(norms) & (norms > 0)
    out = np.zeros(X.shape[0])
    out[good] = 1.0 / norms[good]
    return out


def _fingerprints(W, multipliers):
    """One 64-bit hash per row of the float32 table ``W``: it changes whenever any bit of the row does.

    The hash is ``sum_j w_j m_j mod 2**64`` over the row's 64-bit words ``w_j`` (two floats each; single
    floats when ``d`` is odd) with odd ``m_j``, invertible mod 2**64: changing one word always changes it,
    several collide with probability ~2**-64.
    """
    out = np.empty(W.shape[0], dtype=np.uint64)
    step = max(1, (1 << 20) // max(1, W.shape[1]))
    for start in range(0, W.shape[0], step):
        block = np.ascontiguousarray(W[start:start + step])
        if block.shape[1] % 2 == 0:
            words = block.view(np.uint64)             # two floats per word: half the multiplications
            bits = words * multipliers[:words.shape[1]]
        else:
            bits = block.view(np.uint32).astype(np.uint64) * multipliers
        out[start:start + step] = bits.sum(axis=1, dtype=np.uint64)
    return out


@cython.final
cdef class KernelSampler(Sampler):
    """Draws classes with probability ~ ``K(q, c) / sum K`` by descending a sum tree of kernel features.

    Patent notice: the ``'rff'`` kernel (RF-softmax) is covered by US patent 12,205,005, "Sampled Softmax
    with Random Fourier Features"; check whether it applies to your use.

    Parameters
    ----------
    n_classes : int
    kernel : {'rff', 'quadratic'}
    D : int, optional
        Random projections of the ``'rff'`` map (>= 1; default 128).  Only for ``'rff'``.
    nu : float, optional
        Temperature of the ``'rff'`` kernel, in ``(0, 100]`` (default 4: the paper's best
        ``T = 1/sqrt(nu) = 0.5`` on PennTreeBank).  Only for ``'rff'``.
    alpha : float, optional
        Scale of the quadratic kernel, ``>= 0`` (default 100 as in Blanc & Rendle).  Only for
        ``'quadratic'``.
    bucket : int
        Classes per leaf (>= 1).
    seed : int
        Seed of the random projections (>= 0).

    Attributes
    ----------
    n_features : int
        ``F``, the length of ``phi``: ``2 D`` for ``'rff'``, ``1 + d (d + 1) / 2`` for ``'quadratic'``
        (0 until bound).
    n_leaves : int
        ``L = ceil(n_classes / bucket)``.
    last_refresh : tuple or None
        ``("full" | "incremental", rows recomputed)`` of the latest refresh.
    node_sums, node_sizes, memory_bytes
        See the properties.

    Notes
    -----
    Kernels.  ``'rff'`` (RF-softmax, Rawat et al. 2019, eq. 16-19): ``q`` and ``c`` are L2-normalised (a zero
    or non-finite vector stays zero) and ``K(q, c) = exp(-nu ||q - c||^2 / 2)``, which for unit vectors is
    ``exp(-nu) exp(nu <q, c>)``: the softmax kernel at temperature ``nu`` up to a constant (in a trainer whose
    logits are raw ``<h, c>``, a cosine softmax).  ``phi(u) = [cos(W u), sin(W u)] / sqrt(D)`` with the
    ``D`` rows of ``W`` drawn from ``N(0, nu I)``, so ``<phi(q), phi(c)>`` is an unbiased estimate of ``K``
    (the paper prints ``N(0, I/nu)``, but its kernel ``exp(-nu ||x - y||^2 / 2)`` needs variance ``nu``).
    As in the paper's eq. 17, ``D`` counts the random projections: the feature vector has ``2 D`` entries (a
    cosine and a sine per projection).  ``'quadratic'`` (Quadratic-softmax, Blanc & Rendle 2018; the
    paper's eq. 15 baseline): ``K(q, c) = alpha <q, c>^2 + 1`` on the raw vectors, linearised exactly by
    ``phi(u) = [sqrt(alpha) u_i u_i (i), sqrt(2 alpha) u_i u_j (i < j), 1]``, of dimension
    ``1 + d (d + 1) / 2`` (the upper triangle of ``u u^T``; the full ``u (x) u`` would take ``1 + d^2``).

    The tree.  The classes are cut into buckets of ``bucket`` consecutive ids; the buckets are the leaves
    of a complete binary tree stored as a heap (node ``i`` has children ``2i`` and ``2i + 1``, leaves at
    ``L .. 2L - 1``).  Node ``v`` stores ``S_v = sum phi(c)`` over its classes (float32).  A draw computes
    ``phi(q)`` once per ``draw`` call, then for each sample goes from the root to a leaf, taking child ``x``
    of ``{l, r}`` with probability ``m(x) / (m(l) + m(r))``, where

        ``m(v) = min(max(<phi(q), S_v>, |v| k_min), |v| k_max)``

    and ``|v|`` is the number of classes under ``v``, ``[k_min, k_max]`` the range of the exact kernel:
    ``[exp(-2 nu), 1]`` for ``'rff'`` and ``[1, inf)`` for ``'quadratic'``.  An RFF estimate can be negative
    or exceed what the node's classes could sum to; clamping it into the range the true mass must lie in
    never moves it away from the true mass, and keeps every class reachable (no ``-inf`` log-probabilities).
    A non-finite mass (diverged vectors) becomes the floor.  In the leaf the class is chosen with
    probability ``K(q, c) / sum_{bucket} K(q, c')`` computed exactly from the current rows (``bucket`` dot
    products of length ``d``; ``'rff'`` divides them by the row norms of the latest refresh).

    The log-probability reported for a draw is the sum of the logs of the branch probabilities actually used
    on its path plus the log of its in-bucket probability: the exact probability of the sampler's own
    distribution (``exact_logq``), even where that distribution departs from ``K / sum K`` by the RFF error
    and the clamping.  ``target_logq`` walks the target's path the same way, ``O(D log n)``.  With the
    quadratic kernel no clamp binds (up to float rounding) and the distribution is ``K / sum K``.
    :meth:`probabilities` enumerates the distribution for a query.

    Cost and memory.  ``phi(q)`` costs ``O(D d)`` per ``draw`` call (``O(d^2)`` for quadratic), each sample
    ``2 F log2(L)`` multiply-adds down the tree (the top six levels are computed once per call) plus
    ``bucket d`` in its leaf.  The tree holds ``2 L`` nodes of ``F`` float32: ``8 F ceil(n / bucket)``
    bytes.  For ``n = 1e6`` classes and ``D = 256`` projections (``F = 512``): 4.1 GB with ``bucket=1``,
    256 MB with ``bucket=16`` (the default), 128 MB with ``bucket=32``, 64 MB with ``bucket=64``; for
    ``D = 128`` half of that.  Besides: a uint64 hash and (``'rff'``) a float64 inverse norm per class,
    16 MB for ``n = 1e6``, and the ``D x d`` projections.  The quadratic map with ``d = 128`` has
    ``F = 8257``: 4.1 GB for ``n = 1e6`` at ``bucket=16``.

    Updates and threads.  :meth:`refresh` (called by trainers between chunks, and by :meth:`bind`) hashes
    the rows of the bound table, and rebuilds the whole tree when more than 1/8 of the leaves changed,
    otherwise updates the changed leaves and their ancestors (as :meth:`update_rows`).  A rebuild is
    vectorised numpy, ``O(n d D)`` for the projections.  ``draw`` only reads the tree and the table; its
    per-thread scratch holds ``phi(q)``, the normalised query, the cached masses and the bucket weights.
    :meth:`refresh` and :meth:`update_rows` must not run while draws do.  Until :meth:`bind` the sampler
    draws uniformly.
    """
    QUERY_FREE = False
    REFRESHES = True
    DRAWS_UNBOUND = True
    cdef readonly str kernel
    cdef readonly int D
    cdef readonly double nu
    cdef readonly double alpha
    cdef readonly int bucket
    cdef readonly object seed
    cdef readonly int n_features      # F: length of phi
    cdef readonly int n_leaves        # L: buckets, the leaves of the tree
    cdef readonly object last_refresh  # ("full" | "incremental", rows changed) of the latest refresh
    cdef bint rff
    cdef double kmin, kmax            # range of the exact kernel for one class
    cdef object _omega                # (D, dim) float32 projections
    cdef float *omega
    cdef object _nodes                # (2 L, F) float32 node sums; row 0 unused
    cdef float *nodes
    cdef object _size                 # (2 L,) float64 classes under each node
    cdef double *size
    cdef object _prints               # (n,) uint64 row hashes at the latest refresh
    cdef object _inv_norm             # (n,) float64 1 / ||c|| at the latest refresh (0: zero row), 'rff'
    cdef double *inv_norm
    cdef object _multipliers
    cdef int built_dim                # dim the layout was set up for (0: none)

    def __init__(self, int n_classes, kernel="rff", D=None, nu=None, alpha=None, bucket=16, seed=1):
        Sampler.__init__(self, n_classes)
        if kernel not in KERNELS:
            raise ValueError("kernel must be one of %s, got %r" % (", ".join(repr(k) for k in KERNELS), kernel))
        self.kernel = kernel
        self.rff = kernel == "rff"
        unused = [name for name, value, used in (("D", D, self.rff), ("nu", nu, self.rff),
                                                 ("alpha", alpha, not self.rff))
                  if value is not None and not used]
        if unused:
            raise ValueError("%s only appl%s to kernel=%r"
                             % (", ".join(unused), "ies" if len(unused) == 1 else "y",
                                "quadratic" if self.rff else "rff"))
        self.D = _positive_int("D", 128 if D is None else D)
        self.nu = _number("nu", 4.0 if nu is None else nu, lambda v: 0 < v <= 100, "a number in (0, 100]")
        self.alpha = _number("alpha", 100.0 if alpha is None else alpha, lambda v: v >= 0, "a number >= 0")
        self.bucket = _positive_int("bucket", bucket)
        self.seed = _positive_int("seed", seed, 0)
        if self.rff:
            self.kmin, self.kmax = exp(-2.0 * self.nu), 1.0
        else:
            self.kmin, self.kmax = 1.0, INFINITY
        self.n_leaves = (n_classes + self.bucket - 1) // self.bucket
        self.n_features = 0
        self.built_dim = 0
        self.last_refresh = None

    # ------------------------------------------------------------------ layout and features

    def _setup(self):
        """Allocate the tree and draw the projections for the bound table's dimension."""
        d = self.dim
        rng = np.random.default_rng(self.seed)
        if self.rff:
            self.n_features = 2 * self.D
            self._omega = np.ascontiguousarray(rng.standard_normal((self.D, d)) * math.sqrt(self.nu),
                                               dtype=np.float32)
            self.omega = <float *> <Py_ssize_t> self._omega.ctypes.data
        else:
            self.n_features = 1 + d * (d + 1) // 2
            self._omega = None
            self.omega = NULL
        self._multipliers = rng.integers(0, 1 << 62, size=d, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
        L = self.n_leaves
        self._nodes = np.zeros((2 * L, self.n_features), dtype=np.float32)
        self.nodes = <float *> <Py_ssize_t> self._nodes.ctypes.data
        size = np.zeros(2 * L, dtype=np.float64)
        size[L:] = np.minimum(self.bucket, self.n_classes - self.bucket * np.arange(L))
        _sum_levels(size, L)
        self._size = size
        self.size = <double *> <Py_ssize_t> size.ctypes.data
        self._prints = None
        self._inv_norm = np.zeros(self.n_classes if self.rff else 1, dtype=np.float64)
        self.inv_norm = <double *> <Py_ssize_t> self._inv_norm.ctypes.data
        self.built_dim = d

    def features(self, X):
        """The feature map ``phi`` of the rows of ``X`` (``'rff'``: of the L2-normalised rows).

        Parameters
        ----------
        X : array_like, (m, d) or (d,)
            float32 input gives float32 features, anything else float64.

        Returns
        -------
        ndarray, (m, n_features)
            ``features(q) @ features(C).T`` estimates (``'rff'``) or equals (``'quadratic'``)
            :meth:`kernel_values`.
        """
        self._check_bound()
        X = np.asarray(X)
        X = np.atleast_2d(X.astype(np.float32 if X.dtype == np.float32 else np.float64, copy=False))
        if X.shape[1] != self.dim:
            raise ValueError("rows have %d dimensions, the class vectors %d" % (X.shape[1], self.dim))
        return self._features(X, True)

    def _features(self, X, bint scaled):
        """:meth:`features` of a validated 2-d float array; ``'rff'`` leaves out the ``1/sqrt(D)`` factor
        unless ``scaled``."""
        dtype = X.dtype.type
        if not np.isfinite(X).all():
            X = np.where(np.isfinite(X).all(axis=1)[:, None], X, 0).astype(dtype)
        out = np.empty((X.shape[0], self.n_features), dtype=dtype)
        if self.rff:
            T = _unit_rows(X) @ self._omega.T.astype(dtype, copy=False)
            np.cos(T, out=out[:, :self.D])
            np.sin(T, out=out[:, self.D:])
            if scaled:
                out *= dtype(1.0 / math.sqrt(self.D))
        else:
            i, j = np.triu_indices(self.dim)
            scale = np.where(i == j, math.sqrt(self.alpha), math.sqrt(2.0 * self.alpha)).astype(dtype)
            np.multiply(X[:, i] * X[:, j], scale, out=out[:, :i.size])
            out[:, i.size] = 1.0
        return out

    def kernel_values(self, query, X):
        """The exact kernel ``K(query, x)`` for the rows ``x`` of ``X`` (float64).

        ``'rff'``: ``exp(-nu ||q - x||^2 / 2)`` of the normalised vectors (``exp(nu (<q, x> - 1))`` for unit
        vectors); ``'quadratic'``: ``alpha <q, x>^2 + 1``.
        """
        q = np.asarray(query, dtype=np.float64).reshape(1, -1)
        X = np.atleast_2d(np.asarray(X, dtype=np.float64))
        if self.rff:
            q, X = _unit_rows(q), _unit_rows(X)
            dist2 = (q * q).sum() + (X * X).sum(axis=1) - 2.0 * (X @ q[0])
            return np.exp(-0.5 * self.nu * dist2)
        return self.alpha * (X @ q[0]) ** 2 + 1.0

    def query_features(self, query):
        """``phi(query)`` as ``draw`` computes it (float32, in C): for tests against :meth:`features`."""
        self._check_bound()
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.dim:
            raise ValueError("query has %d dimensions, the class vectors %d" % (q.shape[0], self.dim))
        phi = np.empty(self.n_features, dtype=np.float32)
        qv = np.empty(self.dim, dtype=np.float32)
        cdef float[::1] q_v = q, phi_v = phi, qv_v = qv
        with nogil:
            _query_features(self, &q_v[0], &qv_v[0], &phi_v[0])
        return phi

    # ------------------------------------------------------------------ building and updating

    def _table(self):
        cdef float[:, ::1] view = <float[:self.n_classes, :self.dim]> self.out
        return np.asarray(view)

    def refresh(self, double progress=0.0):
        """Bring the tree up to date with the bound table (trainers call this between chunks).

        Rows whose bits changed since the last refresh are found by hashing the table (``O(n d)``); with at
        most 1/8 of the leaves touched only those leaves and their ancestors are recomputed, otherwise the
        whole tree is rebuilt.  ``progress`` is not used.
        """
        if self.out == NULL:
            return
        if self.built_dim != self.dim:
            self._setup()
        W = self._table()
        prints = _fingerprints(W, self._multipliers)
        changed = None if self._prints is None else np.flatnonzero(prints != self._prints)
        leaves = None if changed is None else np.unique(changed // self.bucket)
        if leaves is not None and leaves.size <= INCREMENTAL_FRACTION * self.n_leaves:
            self._update_leaves(W, leaves)
            self.last_refresh = ("incremental", int(changed.size))
        else:
            self._update_leaves(W, np.arange(self.n_leaves))
            self.last_refresh = ("full", self.n_classes)
        self._prints = prints

    def get_state(self):
        """The node sums, row hashes and norms of the latest refresh (the projections come from ``seed``)."""
        if self._prints is None:
            return {}
        return {"nodes": np.array(self._nodes), "prints": np.array(self._prints),
                "inv_norm": np.array(self._inv_norm)}

    def set_state(self, state):
        """Restore the tree of :meth:`get_state` (after :meth:`bind`)."""
        if not state:
            return
        self._check_bound()
        for name, current in (("nodes", self._nodes), ("prints", self._prints), ("inv_norm", self._inv_norm)):
            arr = np.asarray(state[name])
            if current is not None and (arr.shape != current.shape or arr.dtype != current.dtype):
                raise ValueError("kernel sampler state %s has shape %s (%s), expected %s (%s)"
                                 % (name, arr.shape, arr.dtype, current.shape, current.dtype))
        self._nodes[...] = state["nodes"]
        self._inv_norm[...] = state["inv_norm"]
        self._prints = np.array(state["prints"], dtype=np.uint64)

    def rebuild(self):
        """Recompute the whole tree from the bound table."""
        self._check_bound()
        if self.built_dim != self.dim:
            self._setup()
        W = self._table()
        self._update_leaves(W, np.arange(self.n_leaves))
        self._prints = _fingerprints(W, self._multipliers)
        self.last_refresh = ("full", self.n_classes)

    def update_rows(self, ids):
        """Recompute the leaves holding the classes ``ids`` and their ancestors.

        Each touched leaf costs ``bucket`` feature maps (``O(bucket d D)``) and each ancestor one sum of
        two children (``O(D)``, ``log2(n / bucket)`` of them per leaf).  The result equals a full rebuild
        (up to the rounding of the matrix products).
        """
        self._check_bound()
        ids = np.asarray(ids)
        if ids.size == 0:
            return
        if ids.dtype.kind not in "iu" or ids.min() < 0 or ids.max() >= self.n_classes:
            raise IndexError("class ids must be integers in [0, %d)" % self.n_classes)
        W = self._table()
        ids = np.unique(ids.ravel())
        self._update_leaves(W, np.unique(ids // self.bucket))
        if self._prints is not None:
            self._prints[ids] = _fingerprints(W[ids], self._multipliers)

    def _update_leaves(self, W, buckets):
        """Recompute the sums of the leaves ``buckets`` (sorted, distinct) and of all their ancestors."""
        L, b, n, F = self.n_leaves, self.bucket, self.n_classes, self.n_features
        nodes = self._nodes
        scale = np.float32(1.0 / math.sqrt(self.D)) if self.rff else None
        per_block = max(1, BUILD_FLOATS // (b * F))
        for start in range(0, buckets.size, per_block):
            group = buckets[start:start + per_block]
            if group[group.size - 1] - group[0] + 1 == group.size:     # consecutive leaves: a view of the table
                ids = slice(group[0] * b, min(n, (group[group.size - 1] + 1) * b))
            else:
                ids = (group[:, None] * b + np.arange(b)).ravel()
                ids = ids[ids < n]                              # only the last bucket can be short
            rows = W[ids]
            phi = self._features(rows, False)
            if phi.shape[0] < group.size * b:
                phi = np.concatenate([phi, np.zeros((group.size * b - phi.shape[0], F), phi.dtype)])
            sums = phi.reshape(group.size, b, F).sum(axis=1)
            if scale is not None:
                sums *= scale
                self._inv_norm[ids] = _inverse_norms(rows)
            nodes[L + group] = sums
        if buckets.size == L:
            _sum_levels(nodes, L)
            return
        parents = np.unique((L + buckets) // 2)        # L >= 2 here, so every parent is >= 1
        while parents.size:
            # one level at a time, deepest first: leaves sit on the last two levels of the complete tree
            level = np.floor(np.log2(parents)).astype(np.int64)
            deepest = parents[level == level.max()]
            nodes[deepest] = nodes[2 * deepest] + nodes[2 * deepest + 1]
            parents = np.unique(np.r_[parents[level != level.max()], deepest // 2])
            parents = parents[parents > 0]

    def _check_bound(self):
        if self.out == NULL:
            raise RuntimeError("bind the sampler to the output table first (bind(W_out))")

    # ------------------------------------------------------------------ the distribution

    def _log_probs(self, query, target):
        """The exact distribution ``draw`` samples from for ``query``, by enumerating the tree (numpy).

        Each class gets the product of the branch probabilities on its path times its in-bucket
        probability; ``exp(logq)`` of every draw equals this up to float rounding.  The target does not
        change the law.
        """
        if query is None:
            raise ValueError("the kernel sampler needs a query vector")
        with np.errstate(divide="ignore"):
            return np.log(self._probabilities(query))

    def _probabilities(self, q):
        self._check_bound()
        L, b, n = self.n_leaves, self.bucket, self.n_classes
        phi = self.features(q.astype(np.float64))[0]
        mass = self._nodes.astype(np.float64) @ phi
        size = np.asarray(self._size)
        mass = np.where(np.isfinite(mass), mass, -np.inf)
        mass = np.maximum(mass, size * self.kmin)
        if self.rff:
            mass = np.minimum(mass, size * self.kmax)
        reach = np.zeros(2 * L)
        reach[1] = 1.0
        for lo, hi in _levels(L):
            parent = np.arange(lo, hi)
            left, right = mass[2 * parent], mass[2 * parent + 1]
            reach[2 * parent] = reach[parent] * left / (left + right)
            reach[2 * parent + 1] = reach[parent] * right / (left + right)
        weights = np.zeros(L * b)     # padding past n keeps weight 0
        W = self._table()
        if self.rff:
            # the kernel of the current rows with the norms of the latest refresh, as draw computes it
            qn = _unit_rows(q[None].astype(np.float64))[0]
            inv = np.asarray(self._inv_norm)
            dist2 = (qn @ qn) + (inv > 0) - 2.0 * (W @ qn) * inv
            weights[:n] = np.exp(-0.5 * self.nu * dist2)
        else:
            weights[:n] = self.kernel_values(q, W)
        weights[:n] = np.clip(np.nan_to_num(weights[:n], nan=self.kmin), self.kmin, 1e300)
        weights = weights.reshape(L, b)
        within = weights / weights.sum(axis=1, keepdims=True)
        return (reach[L:, None] * within).ravel()[:n]

    @property
    def node_sums(self):
        """Read-only view of the node sums ``S_v`` (row ``v`` of ``2 L``; row 0 unused), or None unbound."""
        if self._nodes is None:
            return None
        view = self._nodes.view()
        view.flags.writeable = False
        return view

    @property
    def node_sizes(self):
        """Number of classes under each node (float64, ``2 L``; entry 0 unused), or None unbound."""
        return None if self._size is None else self._size.copy()

    @property
    def memory_bytes(self):
        """Bytes held by the tree, the class counts per node, the row hashes and the projections."""
        total = 0
        for arr in (self._nodes, self._size, self._prints, self._omega, self._inv_norm):
            if arr is not None:
                total += arr.nbytes
        return total

    @staticmethod
    def tree_bytes(n_classes, n_features, bucket):
        """Bytes of the node sums for ``n_classes`` classes, ``n_features`` floats per node and ``bucket``."""
        return 2 * (-(-int(n_classes) // int(bucket))) * int(n_features) * 4

    # ------------------------------------------------------------------ drawing

    cpdef Py_ssize_t scratch_bytes(self):
        """Cached masses and bucket weights (doubles), then ``phi(q)`` and the normalised query (floats)."""
        if self.out == NULL:
            return 0
        return (NODE_CACHE + self.bucket) * sizeof(double) + (self.n_features + self.dim) * sizeof(float)

    cdef int draw(self, uint64_t *rng, const float *query, int target, int k, int *ids, double *logq,
                  double *target_logq, void *scratch) noexcept nogil:
        cdef int i
        cdef double uniform_logq = -log(<double>self.n_classes)
        if self.nodes == NULL or scratch == NULL:
            # not bound yet: uniform
            for i in range(k):
                ids[i] = rng_below(rng, self.n_classes)
                if logq != NULL:
                    logq[i] = uniform_logq
            if target_logq != NULL and target >= 0:
                target_logq[0] = uniform_logq
            return k
        cdef double *cache = <double *> scratch
        cdef double *weights = cache + NODE_CACHE
        cdef float *phi = <float *> (weights + self.bucket)
        cdef float *qv = phi + self.n_features
        cdef double qn2 = _query_features(self, query, qv, phi)
        for i in range(NODE_CACHE):
            cache[i] = -1.0
        for i in range(k):
            ids[i] = _descend(self, rng, phi, qv, qn2, cache, weights, NULL if logq == NULL else logq + i)
        if target_logq != NULL and target >= 0:
            target_logq[0] = _path_log_prob(self, target, phi, qv, qn2, cache, weights)
        return k


# ---------------------------------------------------------------------- C helpers of the draw
cdef double _query_features(KernelSampler s, const float *query, float *qv, float *phi) noexcept nogil:
    """Write the query as the kernel sees it to ``qv`` and ``phi(qv)`` to ``phi``; returns ``||qv||^2``."""
    cdef int d = s.dim, r, i, j, f = 0
    cdef double nrm2, scale, t, sa, sa2
    if query == NULL:
        memset(qv, 0, d * sizeof(float))
    else:
        memcpy(qv, query, d * sizeof(float))
    nrm2 = emb_dot(qv, qv, d)
    if not (nrm2 < INFINITY):           # inf or NaN: the zero vector
        memset(qv, 0, d * sizeof(float))
        nrm2 = 0.0
    if s.rff:
        if nrm2 > 0.0:
            scale = 1.0 / sqrt(nrm2)
            for i in range(d):
                qv[i] = <float>(qv[i] * scale)
            nrm2 = 1.0
        scale = 1.0 / sqrt(<double>s.D)
        for r in range(s.D):
            t = emb_dot(s.omega + <Py_ssize_t>r * d, qv, d)
            phi[r] = <float>(cos(t) * scale)
            phi[s.D + r] = <float>(sin(t) * scale)
    else:
        sa = sqrt(s.alpha)
        sa2 = sqrt(2.0 * s.alpha)
        for i in range(d):
            phi[f] = <float>(sa * qv[i] * qv[i])
            f += 1
            for j in range(i + 1, d):
                phi[f] = <float>(sa2 * qv[i] * qv[j])
                f += 1
        phi[f] = 1.0
    return nrm2


cdef inline double _mass(KernelSampler s, const float *phi, double *cache, int node) noexcept nogil:
    """``<phi(q), S_node>`` clamped into ``[|node| k_min, |node| k_max]`` (memoised for the top nodes)."""
    if node < NODE_CACHE and cache[node] >= 0.0:
        return cache[node]
    cdef double m = emb_dot(phi, s.nodes + <Py_ssize_t>node * s.n_features, s.n_features)
    cdef double lo = s.kmin * s.size[node]
    cdef double hi = s.kmax * s.size[node]
    if not (m >= lo):                   # also NaN
        m = lo
    elif m > hi:
        m = hi
    if node < NODE_CACHE:
        cache[node] = m
    return m


cdef inline int _bucket_weights(KernelSampler s, int leaf, const float *qv, double qn2, double *w,
                                double *total) noexcept nogil:
    """Exact kernel of the query with each class of bucket ``leaf`` into ``w``; returns the class count."""
    cdef int d = s.dim, j
    cdef int first = leaf * s.bucket
    cdef int m = s.n_classes - first
    cdef const float *row
    cdef double dot, inv, v, tot = 0.0
    if m > s.bucket:
        m = s.bucket
    for j in range(m):
        row = s.out + <Py_ssize_t>(first + j) * d
        dot = emb_dot(qv, row, d)
        if s.rff:
            inv = s.inv_norm[first + j]
            v = exp(s.nu * (dot * inv - 0.5 * (qn2 + (1.0 if inv > 0.0 else 0.0))))
        else:
            v = s.alpha * dot * dot + 1.0
        if not (v >= s.kmin):           # also NaN
            v = s.kmin
        elif v > 1e300:
            v = 1e300
        w[j] = v
        tot += v
    total[0] = tot
    return m


cdef inline int _descend(KernelSampler s, uint64_t *rng, const float *phi, const float *qv, double qn2,
                         double *cache, double *w, double *logq) noexcept nogil:
    """One sample: root to leaf by the clamped masses, then a class of the leaf; ``logq`` gets its log-prob."""
    cdef int node = 1, j, m
    cdef double a, b, total, cum, u, lp = 0.0
    while node < s.n_leaves:
        a = _mass(s, phi, cache, 2 * node)
        b = _mass(s, phi, cache, 2 * node + 1)
        if rng_uniform(rng) * (a + b) < a:
            node = 2 * node
            if logq != NULL:
                lp += log(a / (a + b))
        else:
            node = 2 * node + 1
            if logq != NULL:
                lp += log(b / (a + b))
    m = _bucket_weights(s, node - s.n_leaves, qv, qn2, w, &total)
    u = rng_uniform(rng) * total
    j = 0
    cum = w[0]
    while j + 1 < m and cum <= u:
        j += 1
        cum += w[j]
    if logq != NULL:
        logq[0] = lp + log(w[j] / total)
    return (node - s.n_leaves) * s.bucket + j


cdef inline double _path_log_prob(KernelSampler s, int target, const float *phi, const float *qv, double qn2,
                                  double *cache, double *w) noexcept nogil:
    """Log-probability of ``target`` under the descent: its branch probabilities and in-bucket share."""
    cdef int leaf = s.n_leaves + target // s.bucket
    cdef int depth = 0, node, child
    cdef double a, b, total, lp = 0.0
    node = leaf
    while node > 1:
        node >>= 1
        depth += 1
    while depth > 0:
        depth -= 1
        child = leaf >> depth
        node = child >> 1
        a = _mass(s, phi, cache, 2 * node)
        b = _mass(s, phi, cache, 2 * node + 1)
        lp += log((a if child == 2 * node else b) / (a + b))
    _bucket_weights(s, leaf - s.n_leaves, qv, qn2, w, &total)
    return lp + log(w[target - (leaf - s.n_leaves) * s.bucket] / total)


# ---------------------------------------------------------------------- tree levels

def _levels(L):
    """``(lo, hi)`` ranges of the internal nodes of a heap with ``L`` leaves, root level first."""
    out = []
    lo = 1
    while lo < L:
        out.append((lo, min(2 * lo, L)))
        lo *= 2
    return out


def _sum_levels(nodes, L):
    """Fill the internal nodes ``1 .. L - 1`` with the sums of their children, deepest level first."""
    for lo, hi in reversed(_levels(L)):
        np.add(nodes[2 * lo:2 * hi:2], nodes[2 * lo + 1:2 * hi:2], out=nodes[lo:hi])
