"""Reconciling table replicas: the rows a replica changed, their merge over replicas, and the update back.

A replica trains its own copy of ``W_in`` and ``W_out`` from the tables of the last reconciliation (its
``base``).  :func:`changed_rows` finds the rows it changed and their deltas; :func:`merge` combines the
deltas of every replica into one step per changed row; :func:`apply_update` adds that step to the client's
table, and :func:`adopt_update` makes a replica's table and base equal to it, after which every replica
holds the client's tables again, bit for bit (the same float32 additions happen on both sides).  A row
only one replica sent has that replica's step as its merged step (without momentum), so the update a
replica gets back leaves those rows out (:meth:`RowDelta.without`) and it takes them from its own delta.

A replica may send only part of what it changed (``share`` below 1: the rows that moved farthest, holding that
share of the round's squared step, found with a bucketed threshold rather than a sort) and keep the rest in
its table for later rounds (error feedback): it then adopts the merged steps less its own delta, and its table
stays ahead of the reconciled one by what it kept. CLUSTER.md measures how few rows keep the quality.

Deltas travel as float16 (:data:`WIRE_DTYPE`): half the bytes of float32, with a relative rounding error of
at most 2**-11 of a round's step (far below the noise of stochastic gradient steps); the tables stay
float32 everywhere.  Finding, merging and applying the rows runs in :mod:`embkit._kernels.deltas`, one
pass over the rows each, without the GIL (where numpy would take several passes and float16
conversions); merging without momentum visits only the deltas' rows.

With ``exchange_bits=8`` the rows travel at 8 bits a value (:func:`round_to_wire`, :func:`packed_wire`):
each row as multiples of a power of two, none more than 127 of it, an error under 1/127 of the row's
largest step.  A replica rounds its delta so before it uses it, and an owner its merged rows before it
adopts them, so that every replica merges and adopts the very steps the others receive.  The merged rows
relayed to the client stay float16.

Three merges are offered (``mode``); with ``n`` replicas and ``d_i`` the delta of replica ``i`` (zero for
a row it did not change):

* ``"momentum"`` (the default): block momentum over the rounds (Chen and Huo's blockwise model-update
  filtering, with block learning rate 2) of the part of each row's step the replicas agree on.  With
  ``S = sum_i d_i`` and ``Q = sum_i |d_i|^2``, ``r = Q / |S|^2`` (clipped to ``[1/n, 1]``) is ``1/n`` when
  every replica moved the row alike and 1 when their steps are orthogonal (a row only one replica moved, or
  steps that are mostly each replica's own sampling noise); the share ``w = (r - 1/n) / (1 - 1/n)`` of
  ``S`` is taken as independent steps, each a part of one process's path, and moves the row at once, the
  rest goes through the momentum kept by the replica merging the row, ``m = (1 - 2/n) m + (2/n) (1 - w) S``,
  and the row moves by ``w S + m``.  With 2 replicas this is ``"sum"`` exactly (the momentum factor is 0:
  nothing is kept, and ``momentum`` stays as it was).  With more, a row pulled the same way round after round
  moves by ``sum_i d_i`` per round (at once as far as the steps are independent, once the momentum has built
  up as far as they agree: what one process training all the replicas' data would do), a row only one
  replica trained moves by that replica's step at once, and a row that every replica moved all the way to
  its target within the round (the most frequent words) settles there instead of overshooting: as a
  heavy-ball iteration its step is at most twice the error, below the ``2 (1 + momentum)`` where it would
  diverge.
* ``"sum"``: the deltas are added, as when every replica's threads updated one shared table (embkit's own
  Hogwild threads); right while a round moves each row a little, but a row every replica moved all the way
  takes ``n`` such steps: with 2 replicas it may swing around its target, with 3 or more it diverges
  (CLUSTER.md).
* ``"average"``: the mean of the deltas of the replicas that changed the row (model averaging of the changed
  rows): never overshoots, but a row every replica trained moves by one replica's step, so a word of
  middling frequency learns at about ``1/n`` of the one-process rate.

CLUSTER.md compares them.
"""
import numpy as np

from embkit._kernels import deltas as _kernel

MODES = ("momentum", "sum", "average")
#: the merge of a model that does not choose one (see the module docstring and CLUSTER.md)
DEFAULT_MODE = "momentum"
#: block learning rate of ``"momentum"``: with it a row every replica moved all the way to its target within
#: a round settles for any number of replicas above 2, and 2 replicas merge as ``"sum"`` (module docstring)
BLOCK_RATE = 2.0
#: dtype of the deltas on the wire
WIRE_DTYPE = np.float16
#: bits a value the exchanged rows may travel at (``exchange_bits``): 16 (float16) or 8 (:func:`round_to_wire`)
WIRE_BITS = (16, 8)


class RowDelta:
    """Steps of some rows of one table: ``ids`` (int32, increasing) and ``values`` (``len(ids) x dim``, of
    :data:`WIRE_DTYPE`); a merge's also ``owner``: per row, the index of the only replica that sent it
    (its step is then that replica's, bit for bit), or -1; a replica's own delta may hold ``stamps``, a
    digest of each row of its table when the delta was found (they stay on the replica: not on the wire),
    and ``packed``, its steps at 8 bits a value (:func:`round_to_wire`)."""

    __slots__ = ("ids", "values", "owner", "stamps", "packed")

    def __init__(self, ids, values, owner=None, stamps=None, packed=None):
        self.ids = ids
        self.values = values
        self.owner = owner
        self.stamps = stamps
        self.packed = packed

    def without(self, replica):
        """The steps a replica needs: those of every row but the rows only ``replica`` sent (it knows them)."""
        if self.owner is None:
            return self
        keep = self.owner != replica
        if keep.all():
            return RowDelta(self.ids, self.values, packed=self.packed)
        packed = None if self.packed is None else tuple(a[keep] for a in self.packed)
        return RowDelta(self.ids[keep], self.values[keep], packed=packed)

    @property
    def wire(self):
        """The arrays as a plain tuple ``(ids, values, owner)``: what travels between processes (Dask sends a
        tuple of arrays without copying them through pickle, which an object of this class would cost)."""
        return self.ids, self.values, self.owner

    @classmethod
    def from_wire(cls, wire):
        """The :class:`RowDelta` of a :attr:`wire` tuple, or of a :func:`packed_wire` one (its steps unpacked to
        float16, bit for bit those the sender rounded them to)."""
        ids, values, owner = wire
        if isinstance(values, tuple):       # 8 bits a value: (multipliers, exponents)
            q, exps = values
            bits = np.empty(q.shape, np.uint16)
            _kernel.unpack_eight(q, exps, bits)
            values = bits.view(WIRE_DTYPE)
        return cls(ids, values, owner)

    def wire_nbytes(self, bits=16):
        """Bytes of :func:`packed_wire` at ``bits`` a value (ids and steps)."""
        if bits == 16:
            return self.nbytes
        return int(self.ids.nbytes + self.values.size + len(self))     # a byte a value, one exponent a row

    @property
    def nbytes(self):
        """Bytes on the wire (ids and values)."""
        return int(self.ids.nbytes + self.values.nbytes)

    def __len__(self):
        return len(self.ids)


def _bits(values):
    """The float16 ``values`` as their uint16 bits (a view), for the kernels."""
    return np.ascontiguousarray(values, dtype=WIRE_DTYPE).view(np.uint16)


def _compact(values, ids, count, owner=None):
    """A :class:`RowDelta` of the first ``count`` rows a kernel wrote into buffers with room for every row
    (views: nearly every row changes in a round, so a copy would save little memory)."""
    return RowDelta(ids[:count], values[:count].view(WIRE_DTYPE), None if owner is None else owner[:count])


def round_to_wire(delta, bits, threads=1, scratch=None):
    """Round ``delta``'s steps in place to what travels at ``bits`` a value: at 8 each row to the multiples of
    the least power of two ``2 ** k`` with every step at most ``127 * 2 ** k``
    (:func:`embkit._kernels.deltas.round_eight`), their int8 multipliers and exponents kept in
    ``delta.packed`` for :func:`packed_wire` (in buffers of ``scratch``, a dict the caller keeps, as
    :func:`changed_rows` keeps its own: valid until the next call with it); at 16 they are float16 already."""
    if bits not in WIRE_BITS:
        raise ValueError("bits must be one of %s, got %r" % (WIRE_BITS, bits))
    if bits == 8:
        delta.packed = (_buffer(scratch, "packed_q", delta.values.shape, np.int8),
                        _buffer(scratch, "packed_exps", (len(delta),), np.int8))
        _kernel.round_eight(_bits(delta.values), *delta.packed, threads=threads)


def packed_wire(delta, bits):
    """:attr:`RowDelta.wire` at ``bits`` a value: at 8 the steps are the int8 ``(multipliers, exponents)`` pair
    :func:`round_to_wire` left in ``delta.packed`` (:meth:`RowDelta.from_wire` gives back the rounded steps
    bit for bit)."""
    if bits == 16:
        return delta.wire
    if delta.packed is None:
        raise ValueError("a delta goes out at 8 bits a value once round_to_wire has rounded it")
    return delta.ids, delta.packed, delta.owner


def changed_rows(table, base, share=1.0, scratch=None, threads=1, rows=None, stamp=False):
    """:class:`RowDelta` of the rows where ``table`` differs from ``base`` (``table - base`` there); with
    ``share`` below 1, only the fewest rows (the farthest moved) that hold that share of
    ``sum ((table - base) ** 2)`` (rows moved exactly as far as the last of them included).

    ``rows`` (a uint8 mask of the table's rows, or None) marks the only rows that may differ: the others are
    not read (a round that touched a fifth of the rows compares a fifth of the table).  With ``share`` below
    1 every row is read.  ``stamp``: the delta holds a digest of each of its rows of ``table`` (``stamps``),
    with which :func:`adopt_update` tells the rows trained since from the others.

    ``scratch`` (a dict the caller keeps for one table) holds the buffers from one call to the next, so that
    a replica does not allocate (and the system zero) a table's worth of memory every round; the result
    then views them, and is valid until the next call with the same ``scratch``.  ``threads``: OpenMP
    threads of the passes over the rows (the result is the same for any number).
    """
    scratch = {} if scratch is None else scratch
    if scratch.get("shape") != table.shape:
        scratch.clear()
        scratch.update(shape=table.shape, values=np.empty(table.shape, dtype=np.uint16),
                       ids=np.empty(table.shape[0], dtype=np.int32), energy=np.empty(table.shape[0], np.float64),
                       stamps=np.empty(table.shape[0], dtype=np.uint64))
    values, ids = scratch["values"], scratch["ids"]
    stamps = scratch["stamps"] if stamp else None
    only = None if rows is None else np.ascontiguousarray(rows, dtype=np.uint8)
    if share < 1:
        energy = scratch["energy"]
        _kernel.row_energies(table, base, energy, threads)
        only = (energy >= _kernel.share_threshold(energy, share)).view(np.uint8)
    count = _kernel.changed_rows(table, base, values, ids, only, threads, stamps)
    delta = _compact(values, ids, count)
    delta.stamps = None if stamps is None else stamps[:count]
    return delta


def _buffer(scratch, name, shape, dtype):
    """An array of ``shape`` kept in ``scratch`` (a dict) from one call to the next, grown when too small: in a
    Dask worker (whose allocator returns freed memory to the system at once) a fresh table-sized array
    costs a page fault per page every round."""
    if scratch is None:
        return np.empty(shape, dtype=dtype)
    held = scratch.get(name)
    if held is None or held.shape[0] < shape[0] or held.shape[1:] != shape[1:] or held.dtype != dtype:
        held = scratch[name] = np.empty((shape[0] + shape[0] // 4,) + tuple(shape[1:]), dtype=dtype)
    return held[:shape[0]]


def merge(n_rows, deltas, mode=DEFAULT_MODE, table=None, momentum=None, replicas=None, threads=1, scratch=None,
          mirror=None):
    """One step per row that any replica changed (with ``"momentum"``: per row that moves).

    Parameters
    ----------
    n_rows : int
        Rows of the table.
    deltas : list of RowDelta
        One per replica that returned one.
    mode : {"momentum", "sum", "average"}
        See the module docstring.
    table : ndarray, optional
        A reconciled table: the steps are added to it in the same pass (as :func:`apply_update` would).
    momentum : ndarray, optional
        With ``"momentum"`` and 3 replicas or more: the table's momentum (float32, ``n_rows`` rows, zeros
        at the start of a run), updated in place (with fewer replicas it has no part in the steps).  It holds
        the agreed part of the steps only (see the module docstring).
    replicas : int, optional
        With ``"momentum"``: the number of replicas ``n`` of the run (the momentum is ``1 - 2/n``).
    threads : int
        OpenMP threads of the merge (the result is the same for any number).
    scratch : dict, optional
        Kept by the caller for one table: the buffers are reused from one call to the next, and the result
        views them (valid until the next call with the same ``scratch``).
    mirror : ndarray, optional
        With ``table``, a merge that carries no momentum: each row the steps change in ``table`` is copied
        into ``mirror`` in the same pass.  A replica that sent every row it changed adopts the merge so
        (``table`` its base, ``mirror`` its table): what :func:`adopt_update` gives, bit for bit (a row only
        it sent has its own step as the merged step), in one walk instead of two.

    Returns
    -------
    RowDelta
        The merged steps, for :func:`apply_update` and :func:`adopt_update`.
    """
    if mode not in MODES:
        raise ValueError("mode must be one of %s, got %r" % (", ".join(MODES), mode))
    rate = min(BLOCK_RATE, replicas or 1)
    if mode == "momentum" and (not replicas or (rate < replicas and momentum is None)):
        raise ValueError('mode="momentum" needs the number of replicas, and with more than %g the momentum'
                         % BLOCK_RATE)
    index = [k for k, d in enumerate(deltas) if len(d)]
    deltas = [deltas[k] for k in index]
    if mode != "momentum" or rate == replicas:  # no momentum carries over (1 replica: its delta; 2: the sum)
        if not deltas:
            return RowDelta(np.zeros(0, np.int32), np.zeros((0, 0), WIRE_DTYPE))
        if len(deltas) == 1 and mirror is None:
            if table is not None:
                apply_update(deltas[0], table)
            return RowDelta(deltas[0].ids, deltas[0].values, np.full(len(deltas[0]), index[0], np.int32))
        dim = deltas[0].values.shape[1]
        room = sum(len(d) for d in deltas)
        values = _buffer(scratch, "values", (room, dim), np.uint16)
        ids = _buffer(scratch, "ids", (room,), np.int32)
        owner = _buffer(scratch, "owner", (room,), np.int32)
        count = _kernel.merge_rows([np.ascontiguousarray(d.ids, dtype=np.int32) for d in deltas],
                                   [_bits(d.values) for d in deltas], n_rows, mode == "average", values, ids, table,
                                   owner, threads, mirror)
        only = owner[:count] >= 0
        owner[:count][only] = np.asarray(index, np.int32)[owner[:count][only]]
        return _compact(values, ids, count, owner)
    if mirror is not None:
        raise ValueError("a merge with momentum cannot mirror its table (its momentum moves rows no delta holds)")
    dim = momentum.shape[1]
    values = _buffer(scratch, "values", (n_rows, dim), np.uint16)
    ids = _buffer(scratch, "ids", (n_rows,), np.int32)
    count = _kernel.momentum_merge([np.ascontiguousarray(d.ids, dtype=np.int32) for d in deltas],
                                   [_bits(d.values) for d in deltas], n_rows, replicas, rate / replicas,
                                   1.0 - rate / replicas, momentum, values, ids, table, threads)
    return _compact(values, ids, count)


def owned_rows(n_rows, parts, part):
    """Rows of a table of ``n_rows`` that owner ``part`` of ``parts`` merges: every ``parts``-th row from row
    ``part`` (so that the frequent rows at the top of a frequency-sorted vocabulary, which every replica
    changes every round, are spread evenly over the owners); their number."""
    return len(range(part, n_rows, parts))


def split(delta, parts, threads=1, scratch=None):
    """The parts of ``delta`` each of ``parts`` owners merges (:func:`owned_rows`): part ``p`` holds its rows
    ``p, p + parts, ...``, in order.  Their steps are copied on ``threads`` into a buffer kept in ``scratch``
    (a dict, see :func:`merge`; the parts view it until the next call with the same ``scratch``)."""
    if parts == 1:
        return [delta]
    owner = delta.ids % parts
    order = np.argsort(owner, kind="stable")
    cuts = np.searchsorted(owner[order], np.arange(parts + 1))
    ids = delta.ids[order]
    values = _buffer(scratch, "split values", delta.values.shape, np.uint16)
    _kernel.take_rows(_bits(delta.values), order.astype(np.int64, copy=False), values, threads)
    values = values.view(WIRE_DTYPE)
    rows = None if delta.owner is None else delta.owner[order]
    stamps = None if delta.stamps is None else delta.stamps[order]
    packed = None if delta.packed is None else tuple(a[order] for a in delta.packed)
    return [RowDelta(ids[a:b], values[a:b], None if rows is None else rows[a:b],
                     None if stamps is None else stamps[a:b],
                     None if packed is None else (packed[0][a:b], packed[1][a:b]))
            for a, b in zip(cuts[:-1], cuts[1:])]


def local_rows(delta, parts):
    """A part of :func:`split` numbered among its owner's rows (row ``i`` becomes ``i // parts``)."""
    return RowDelta((delta.ids // parts).astype(np.int32, copy=False), delta.values, delta.owner)


def table_rows(delta, parts, part):
    """:func:`local_rows` of owner ``part`` back in the table's numbering."""
    return RowDelta((delta.ids * parts + part).astype(np.int32, copy=False), delta.values, delta.owner)


def apply_update(update, table):
    """Add the merged steps to ``table`` (the client's reconciled table)."""
    if len(update):
        _kernel.add_rows(table, update.ids, _bits(update.values))


def adopt_update(update, table, base, sent=None, partial=False, replica=None, threads=1, trained=False):
    """Make a replica's ``base`` the reconciled table: ``base`` takes the merged steps (as the client's table
    did) and ``table`` copies the changed rows from it, in one pass (:func:`embkit._kernels.deltas.adopt_rows`).

    Parameters
    ----------
    update : RowDelta
        The merged steps; it may leave out the rows only this replica sent (:meth:`RowDelta.without`), or
        hold them with their ``owner`` (a merge's) when ``replica`` is given.
    table, base : ndarray
        The replica's table and its copy of the last reconciled one.
    sent : RowDelta, optional
        The replica's own delta in the merge (the steps of the rows the update leaves out).
    partial : bool
        The replica sent only part of what it changed (``exchange_share`` below 1): ``table`` takes the
        merged steps less its own instead, so that what it kept (``table - base`` outside ``sent``, and the
        rounding of ``sent``) stays for later rounds.
    replica : int, optional
        This replica's index in the merge: the update's rows whose ``owner`` it is are taken from ``sent``
        (as if the update left them out, without copying it).
    threads : int
        OpenMP threads of the pass (the result is the same for any number).
    trained : bool
        ``table`` trained on since ``sent`` was found (with ``partial``): a sent row whose digest
        (``sent.stamps``) is unchanged was not, and equals ``base`` afterwards (its float16 rounding dropped,
        as without ``partial``), so that it does not differ from the reconciled table in later rounds.
    """
    if sent is None:
        sent = RowDelta(np.zeros(0, np.int32), np.zeros((0, table.shape[1]), WIRE_DTYPE))
    ids, values, owner, sent_ids, sent_values, stamps = _adoption(update, sent, partial, replica, trained)
    _kernel.adopt_rows(table, base, ids, values, sent_ids, sent_values, not partial, owner,
                       -1 if replica is None else replica, threads, stamps)


def _adoption(update, sent, partial, replica, trained):
    """The kernels' arrays of adopting ``update`` with ``sent`` (:func:`adopt_update`'s rules): ids, float16
    bits, owners (None without ``replica``), sent ids and bits, and the sent rows' stamps where they count."""
    return (np.ascontiguousarray(update.ids, dtype=np.int32), _bits(update.values),
            None if replica is None or update.owner is None else np.ascontiguousarray(update.owner, dtype=np.int32),
            np.ascontiguousarray(sent.ids, dtype=np.int32), _bits(sent.values),
            sent.stamps if trained and partial and sent.stamps is not None else None)


def adopt_parts(updates, table, base, sents, partial=False, replica=None, threads=1, trained=False):
    """:func:`adopt_update` of every owner's part of a reconciliation: ``updates[p]`` with this replica's part
    ``sents[p]`` of its delta on the same rows, in one walk over the table instead of one per part (the same
    result, bit for bit: :func:`embkit._kernels.deltas.adopt_parts`).  The other parameters as
    :func:`adopt_update` takes them."""
    if not updates:
        return
    ids, values, owners, sent_ids, sent_values, stamps = zip(*(_adoption(u, d, partial, replica, trained)
                                                                for u, d in zip(updates, sents)))
    _kernel.adopt_parts(table, base, list(ids), list(values), list(owners), list(sent_ids), list(sent_values),
                        not partial, -1 if replica is None else replica, threads, list(stamps))
