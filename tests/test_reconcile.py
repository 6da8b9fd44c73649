"""Reconciling replicas without a cluster: merges, replicas adopting the client's tables bit for bit, float16
conversions exactly as numpy's, bad ids refused."""
import numpy as np
import pytest

from embkit._kernels import deltas
from embkit.cluster.reconcile import (BLOCK_RATE, WIRE_DTYPE, RowDelta, adopt_parts, adopt_update, apply_update,
                                      changed_rows, local_rows, merge, owned_rows, packed_wire, round_to_wire, split,
                                      table_rows)


def _awkward_floats():
    """200k float32 of every magnitude and the values where rounding to float16 is delicate."""
    rng = np.random.default_rng(3)
    magnitudes = 10.0 ** rng.integers(-10, 7, 200_000)
    special = [np.inf, -np.inf, np.nan, 65504, 65519.99, 65520, 1e6, 2.0 ** -14, 2.0 ** -24, 2.0 ** -25,
               2.0 ** -25 * 1.0000001, 3 * 2.0 ** -26, 6e-8, 1e-8, -5.96e-8, 1.5 * 2.0 ** -24]
    # 17 values a copy: each copy shifts them by one lane, so every special value meets every lane of the
    # 8-wide F16C conversion
    return np.concatenate([rng.standard_normal(200_000) * magnitudes] + [special + [1.0]] * 9).astype(np.float32)


def test_both_float16_paths_give_numpys_bits():
    values = _awkward_floats()
    with np.errstate(over="ignore"):
        expected = values.astype(np.float16).view(np.uint16)
    assert np.array_equal(deltas.to_half(values, f16c=False), expected)
    assert np.array_equal(deltas.to_half(values), expected)     # F16C where the CPU has it
    bits = np.arange(65536, dtype=np.uint16)
    wide = bits.view(np.float16).astype(np.float32).view(np.uint32)
    assert np.array_equal(deltas.from_half(bits, f16c=False).view(np.uint32), wide)
    # F16C quiets a signalling NaN as it widens it (numpy keeps the signal bit): NaN either way
    signalling = ((bits & 0x7e00) == 0x7c00) & ((bits & 0x3ff) != 0)
    fast = deltas.from_half(bits).view(np.uint32)
    assert np.array_equal(fast[~signalling], wide[~signalling])
    assert np.isnan(fast[signalling].view(np.float32)).all()


@pytest.mark.parametrize("width", [4, 100])
def test_float16_steps_round_as_numpy_does(width):
    values = _awkward_floats()
    values = values[:len(values) // width * width]
    table = values.reshape(-1, width)
    delta = changed_rows(table, np.zeros_like(table))
    changed = np.flatnonzero((table != 0).any(axis=1))
    assert np.array_equal(delta.ids, changed)
    assert delta.values.dtype == WIRE_DTYPE
    with np.errstate(over="ignore"):       # numpy warns where a value becomes infinity
        expected = table[changed].astype(np.float16)
    assert np.array_equal(delta.values.view(np.uint16), expected.view(np.uint16))


def test_float16_widens_exactly_for_every_bit_pattern():
    bits = np.arange(65536, dtype=np.uint16).reshape(-1, 1)
    table = np.zeros((65536, 1), np.float32)
    deltas.add_rows(table, np.arange(65536, dtype=np.int32), bits)
    expected = bits.view(np.float16).astype(np.float32)
    nan = np.isnan(expected)
    assert np.array_equal(table[~nan], expected[~nan]) and np.isnan(table[nan]).all()


def test_a_delta_naming_a_row_outside_the_table_is_refused():
    table = np.zeros((4, 2), np.float32)
    with pytest.raises(ValueError, match="row 7 outside a table of 4 rows"):
        deltas.add_rows(table, np.array([1, 7], np.int32), np.zeros((2, 2), np.uint16))
    bad = changed_rows(np.ones((8, 2), np.float32), np.zeros((8, 2), np.float32))
    with pytest.raises(ValueError, match="outside a table of 4 rows"):
        merge(4, [bad, bad], "sum")


def test_the_momentum_merge_refuses_arrays_of_other_lengths():
    momentum, values, ids = np.zeros((4, 2), np.float32), np.zeros((4, 2), np.uint16), np.zeros(4, np.int32)
    one = ([np.array([1], np.int32)], [np.zeros((1, 2), np.uint16)])
    with pytest.raises(ValueError, match="momentum"):
        deltas.momentum_merge(*one, 4, 4, 0.5, 0.5, np.zeros((3, 2), np.float32), values, ids)
    with pytest.raises(ValueError, match="room for 3 rows"):
        deltas.momentum_merge(*one, 4, 4, 0.5, 0.5, momentum, values[:3], ids)
    with pytest.raises(ValueError, match="table"):
        deltas.momentum_merge(*one, 4, 4, 0.5, 0.5, momentum, values, ids, np.zeros((4, 3), np.float32))
    with pytest.raises(ValueError, match="delta 0 has 1 ids for 2 rows"):
        deltas.momentum_merge(one[0], [np.zeros((2, 2), np.uint16)], 4, 4, 0.5, 0.5, momentum, values, ids)
    with pytest.raises(ValueError, match="row 7 outside a table of 4 rows"):
        deltas.momentum_merge([np.array([7], np.int32)], one[1], 4, 4, 0.5, 0.5, momentum, values, ids, None, 3)


@pytest.mark.parametrize("replicas", [3, 8])
def test_the_momentum_merge_is_the_dense_rule_on_any_number_of_threads(replicas):
    # the block momentum merge walks every row once (a row with momentum moves without a delta), summing
    # the deltas' steps of a row in their order: the rule of the module docstring computed densely over the
    # table, and the same bits on any number of threads (momentum, steps, rows and the table)
    rng = np.random.default_rng(replicas)
    n, dim = 503, 7
    rate = BLOCK_RATE / replicas
    momentum = (rng.standard_normal((n, dim)) * 1e-3).astype(np.float32)
    momentum[::5] = 0                                       # rows without momentum, and some without deltas
    table = rng.standard_normal((n, dim)).astype(np.float32)
    found = []
    for size in (400, 0, 120, 1, 490)[:replicas]:
        ids = np.sort(rng.choice(n, size, replace=False)).astype(np.int32)
        found.append(RowDelta(ids, (rng.standard_normal((size, dim)) * 1e-2).astype(WIRE_DTYPE)))
    found[2] = RowDelta(found[0].ids[:120].copy(), found[0].values[:120].copy())    # rows moved alike
    total, squares = np.zeros((n, dim), np.float64), np.zeros(n, np.float64)
    for d in found:
        steps = d.values.astype(np.float64)
        total[d.ids] += steps
        squares[d.ids] += (steps ** 2).sum(axis=1)
    norm = (total ** 2).sum(axis=1)
    least = 1.0 / replicas
    share = np.where(norm > 0, np.clip(squares / np.where(norm > 0, norm, 1), least, 1), least)
    share = (share - least) / (1 - least)
    held = (1 - rate) * momentum.astype(np.float64) + rate * (1 - share)[:, None] * total
    step = share[:, None] * total + held
    runs = {}
    for threads in (1, 2, 3, 8):
        m, t = momentum.copy(), table.copy()
        update = merge(n, found, "momentum", t, m, replicas, threads)
        runs[threads] = (m, t, update.ids.copy(), update.values.copy())
        np.testing.assert_allclose(m, held, rtol=1e-4, atol=1e-7)
        moved = np.flatnonzero(np.abs(step.astype(WIRE_DTYPE).astype(np.float32)).max(axis=1) > 0)
        assert set(update.ids) <= set(np.flatnonzero(np.abs(step).max(axis=1) > 0))
        assert abs(len(update) - len(moved)) <= 2           # float16 rounding at the edge of zero
        np.testing.assert_allclose(update.values.astype(np.float32), step[update.ids], rtol=2e-3, atol=1e-6)
        stepped = table.copy()
        stepped[update.ids] += update.values.astype(np.float32)
        np.testing.assert_array_equal(t, stepped)
        assert np.all(np.diff(update.ids) > 0)
    for threads in (2, 3, 8):
        for one, other in zip(runs[1], runs[threads]):
            assert np.array_equal(one.view(np.uint8), other.view(np.uint8)), threads


def test_merge_adds_or_averages_the_rows_each_replica_changed():
    current = np.arange(12, dtype=np.float32).reshape(4, 3)
    a = current.copy()
    a[0] += 1.0
    a[2] += 4.0
    b = current.copy()
    b[2] += 2.0
    b[3] -= 3.0
    deltas = [changed_rows(a, current), changed_rows(b, current)]
    assert deltas[0].ids.tolist() == [0, 2] and deltas[1].ids.tolist() == [2, 3]
    total = merge(4, deltas, "sum")
    assert total.ids.tolist() == [0, 2, 3]
    np.testing.assert_allclose(total.values.astype(np.float32), [[1.0] * 3, [6.0] * 3, [-3.0] * 3])
    # a row one replica changed keeps its whole step; a row both changed moves by the mean step
    avg = merge(4, deltas, "average")
    np.testing.assert_allclose(avg.values.astype(np.float32), [[1.0] * 3, [3.0] * 3, [-3.0] * 3])
    with pytest.raises(ValueError, match="mode"):
        merge(4, deltas, "median")


@pytest.mark.parametrize("trained", [20, 50], ids=["some rows", "every row"])
def test_replicas_adopt_exactly_the_clients_table(trained):
    # a delta holds the changed rows only; after the merge every replica holds the client's table bit for bit
    rng = np.random.default_rng(0)
    client_table = rng.standard_normal((50, 8)).astype(np.float32)
    replicas = [client_table.copy() for _ in range(2)]
    bases = [client_table.copy() for _ in range(2)]
    for k, table in enumerate(replicas):       # each replica trains some rows
        rows = rng.choice(50, trained, replace=False)
        table[rows] += 1e-3 * rng.standard_normal((trained, 8)).astype(np.float32)
    deltas = [changed_rows(t, b) for t, b in zip(replicas, bases)]
    assert [len(d) for d in deltas] == [trained] * 2
    update = merge(50, deltas, "sum")
    apply_update(update, client_table)
    for k, (table, base) in enumerate(zip(replicas, bases)):
        # the same from the whole update, or from the rows a replica did not send alone and its own delta
        whole_table, whole_base = table.copy(), base.copy()
        adopt_update(update, whole_table, whole_base)
        mine = update.without(k)
        assert len(mine) < len(update) or trained == 50
        adopt_update(mine, table, base, deltas[k])
        for t in (table, base, whole_table, whole_base):
            assert np.array_equal(t, client_table)


@pytest.mark.parametrize("mode", ["average", "sum"])
def test_a_merge_visits_the_union_of_the_deltas_rows_as_a_dense_sum_would(mode):
    # the sparse merge walks the deltas' ids together; a dense float32 sum over the whole table (in the
    # deltas' order) gives the same float16 steps for the same rows
    rng = np.random.default_rng(7)
    n, dim = 1000, 9
    deltas = []
    for size in (300, 0, 650, 1):
        ids = np.sort(rng.choice(n, size, replace=False)).astype(np.int32)
        deltas.append(RowDelta(ids, (rng.standard_normal((size, dim)) * 1e-2).astype(WIRE_DTYPE)))
    total, seen = np.zeros((n, dim), np.float32), np.zeros(n, np.int32)
    for d in deltas:
        total[d.ids] += d.values.astype(np.float32)
        seen[d.ids] += 1
    rows = np.flatnonzero(seen)
    expected = total[rows] * (np.float32(1) / seen[rows, None].astype(np.float32) if mode == "average" else 1)
    table = rng.standard_normal((n, dim)).astype(np.float32)
    before = table.copy()
    update = merge(n, deltas, mode, table=table)
    assert np.array_equal(update.ids, rows)
    assert np.array_equal(update.values, expected.astype(WIRE_DTYPE))
    before[rows] += update.values.astype(np.float32)
    assert np.array_equal(table, before)
    shuffled = RowDelta(deltas[0].ids[::-1].copy(), deltas[0].values)
    with pytest.raises(ValueError, match="not increasing"):
        merge(n, [shuffled, deltas[2]], mode)


@pytest.mark.parametrize("replicas", [2, 3])
def test_the_owners_merges_are_the_merge_of_every_row(replicas):
    # each owner merges its own rows (every n-th), numbered among them; two replicas swap their whole
    # deltas and each merges every row (Replica._swap): the same steps, bit for bit, and the same rows only
    # one replica sent
    rng = np.random.default_rng(8)
    n, dim = 1001, 7
    deltas = []
    for size in (420, 610, 77)[:replicas]:
        ids = np.sort(rng.choice(n, size, replace=False)).astype(np.int32)
        deltas.append(RowDelta(ids, (rng.standard_normal((size, dim)) * 1e-2).astype(WIRE_DTYPE)))
    whole = merge(n, deltas, "sum")
    parts = split(whole, replicas)
    assert sorted(np.concatenate([p.ids for p in parts]).tolist()) == whole.ids.tolist()
    for g, part in enumerate(parts):
        assert np.all(part.ids % replicas == g) and np.all(np.diff(part.ids) > 0)
        local = [local_rows(split(d, replicas)[g], replicas) for d in deltas]
        owned = table_rows(merge(owned_rows(n, replicas, g), local, "sum"), replicas, g)
        assert np.array_equal(part.ids, owned.ids)
        assert np.array_equal(part.values.view(np.uint16), owned.values.view(np.uint16))
        assert np.array_equal(part.owner, owned.owner)
    assert sum(owned_rows(n, replicas, g) for g in range(replicas)) == n


@pytest.mark.parametrize("threads", [1, 3])
def test_a_delta_split_among_its_owners_on_threads_into_kept_buffers_is_split_in_order(threads):
    # each owner's part holds its rows (every n-th from its group) in order, with their steps, owners and
    # stamps; the steps land in a buffer kept in the scratch dict, reused by the next split of that table
    rng = np.random.default_rng(threads)
    n, dim, replicas = 997, 5, 4
    scratch, held = {}, None
    for size in (900, 400, 3):
        ids = np.sort(rng.choice(n, size, replace=False)).astype(np.int32)
        delta = RowDelta(ids, (rng.standard_normal((size, dim)) * 1e-2).astype(WIRE_DTYPE),
                         rng.integers(0, 3, size).astype(np.int32), rng.integers(0, 1 << 60, size, dtype=np.uint64))
        parts = split(delta, replicas, threads, scratch)
        for g, part in enumerate(parts):
            mine = ids % replicas == g
            assert np.array_equal(part.ids, ids[mine]) and np.array_equal(part.owner, delta.owner[mine])
            assert np.array_equal(part.values.view(np.uint16), delta.values[mine].view(np.uint16))
            assert np.array_equal(part.stamps, delta.stamps[mine])
        assert held is None or np.shares_memory(parts[0].values, held)
        held = scratch["split values"]
    with pytest.raises(ValueError, match="row 9 outside 2 rows"):
        deltas.take_rows(np.zeros((2, 3), np.uint16), np.array([0, 9]), np.zeros((2, 3), np.uint16), threads)


@pytest.mark.parametrize("mode", ["average", "sum"])
def test_a_merge_given_the_table_applies_its_steps_as_apply_update_does(mode):
    rng = np.random.default_rng(1)
    base = rng.standard_normal((30, 5)).astype(np.float32)
    replicas = [base.copy() for _ in range(3)]
    for table in replicas:
        rows = rng.choice(30, 12, replace=False)
        table[rows] += 1e-2 * rng.standard_normal((12, 5)).astype(np.float32)
    deltas = [changed_rows(t, base) for t in replicas]
    separate, fused = base.copy(), base.copy()
    update = merge(30, deltas, mode)
    apply_update(update, separate)
    fused_update = merge(30, deltas, mode, table=fused)
    assert np.array_equal(update.ids, fused_update.ids) and np.array_equal(update.values, fused_update.values)
    assert np.array_equal(separate, fused)


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("mode", ["momentum", "sum", "average"])
def test_two_replicas_adopting_in_the_merges_walk_adopt_what_adopt_update_gives(mode, threads):
    # Replica._swap of a replica that sent every row it changed: the merge adds the steps to its base and
    # copies each such row into its table; the same bits as merging, then adopting (rows only it sent, rows
    # only its peer sent, rows both sent, and a peer that sent nothing)
    rng = np.random.default_rng(5)
    n, dim = 1200, 6
    start = rng.standard_normal((n, dim)).astype(np.float32)
    tables = [start + (rng.standard_normal((n, dim)) * 1e-2 * (rng.random((n, 1)) < f)).astype(np.float32)
              for f in (0.6, 0.3)]
    for peers in ([0, 1], [0, None]):
        sent = [changed_rows(tables[g] if g is not None else start, start) for g in peers]
        for me in range(2):
            walked = merge(n, sent, mode, None, None, 2, threads)
            table, base = (tables[peers[me]] if peers[me] is not None else start).copy(), start.copy()
            adopt_update(walked, table, base, sent[me], False, me, threads)
            fused_table, fused_base = (tables[peers[me]] if peers[me] is not None else start).copy(), start.copy()
            fused = merge(n, sent, mode, fused_base, None, 2, threads, mirror=fused_table)
            assert np.array_equal(fused.ids, walked.ids) and np.array_equal(fused.owner, walked.owner)
            assert np.array_equal(fused.values.view(np.uint16), walked.values.view(np.uint16))
            assert np.array_equal(fused_table, table) and np.array_equal(fused_base, base)
            assert np.array_equal(fused_table[walked.ids], fused_base[walked.ids])
    with pytest.raises(ValueError, match="a mirror needs a table"):
        merge(n, sent, "sum", None, mirror=start.copy())
    with pytest.raises(ValueError, match="cannot mirror"):
        merge(n, sent, "momentum", start.copy(), np.zeros_like(start), 4, mirror=start.copy())


def _rounds(mode, replicas, step_of, rounds, rows=3, dim=4):
    """The client's table after ``rounds`` reconciliations in which every replica's delta is
    ``step_of(table, replica)`` (float32 rows), through the real merge."""
    table = np.zeros((rows, dim), np.float32)
    momentum = np.zeros_like(table)
    for _ in range(rounds):
        deltas = [changed_rows(table + step_of(table, k), table) for k in range(replicas)]
        merge(rows, deltas, mode, table=table, momentum=momentum, replicas=replicas)
    return table


def test_block_momentum_converges_where_adding_the_steps_diverges():
    # every replica moves a row all the way to its target within a round (a frequent word in a long round):
    # adding the four steps overshoots fourfold and diverges; block momentum settles on the target
    target = np.float32(0.5)
    saturated = lambda table, k: target - table
    assert abs(_rounds("sum", 4, saturated, 6) - target).max() > 100       # 3**6 times the first error
    assert abs(_rounds("momentum", 4, saturated, 60) - target).max() < 1e-2
    assert abs(_rounds("average", 4, saturated, 12) - target).max() < 1e-3


def test_block_momentum_moves_a_steadily_pulled_row_by_the_sum_of_the_steps():
    # far from saturation (the same small step every round) a row moves as fast as with "sum", once the
    # momentum has built up, where "average" moves it 1/replicas as fast
    steady = lambda table, k: np.full_like(table, 1e-3)
    rounds = 200
    summed = _rounds("sum", 4, steady, rounds)[0, 0]
    assert abs(_rounds("momentum", 4, steady, rounds)[0, 0] / summed - 1) < 0.05
    assert abs(_rounds("average", 4, steady, rounds)[0, 0] / summed - 0.25) < 0.01


def test_block_momentum_moves_a_row_one_replica_trained_by_its_step_at_once():
    # a rare word, trained on one replica in one round: the row moves by that replica's step in that round
    # (nothing agreed, so nothing goes through the momentum), not by replicas times it, nor later
    table = np.zeros((2, 3), np.float32)
    momentum = np.zeros_like(table)
    trained = table.copy()
    trained[1] = 0.01
    merge(2, [changed_rows(trained, table), changed_rows(table, table)], "momentum", table=table, momentum=momentum,
          replicas=4)
    np.testing.assert_array_equal(table[1], np.float16(0.01))
    assert not momentum.any()
    for _ in range(5):
        merge(2, [], "momentum", table=table, momentum=momentum, replicas=4)
    np.testing.assert_array_equal(table[1], np.float16(0.01))
    assert not table[0].any()
    with pytest.raises(ValueError, match="momentum"):
        merge(2, [], "momentum")


def test_block_momentum_moves_a_row_by_the_independent_share_of_its_steps_at_once():
    # replicas whose steps of a row are orthogonal (each its own words' pull, or sampling noise) move it by
    # their sum in the round; steps that agree go through the momentum (2/n of the sum in the first round);
    # halfway between, a part of each
    replicas, dim = 4, 8
    base = np.zeros((3, dim), np.float32)
    apart = [base.copy() for _ in range(replicas)]
    for k in range(replicas):
        apart[k][0, k] = 0.25                   # row 0: orthogonal steps
        apart[k][1] = 0.25                      # row 1: the same step
        apart[k][2, k] = apart[k][2, 7] = 0.25  # row 2: half shared, half its own
    table, momentum = base.copy(), np.zeros_like(base)
    merge(3, [changed_rows(t, base) for t in apart], "momentum", table=table, momentum=momentum, replicas=replicas)
    np.testing.assert_array_equal(table[0], [0.25] * 4 + [0] * 4)
    assert not momentum[0].any()
    np.testing.assert_allclose(table[1], 0.5 * 4 * 0.25 * np.ones(dim))     # (2/4) of the sum of four steps
    np.testing.assert_allclose(momentum[1], table[1])
    # row 2: Q = 4 * 2 * 0.25^2, |S|^2 = 4 * 0.25^2 + 1: r = 0.4, w = (0.4 - 0.25) / 0.75 = 0.2
    w = 0.2
    summed = np.array([0.25] * 4 + [0] * 3 + [1.0], np.float32)
    np.testing.assert_allclose(momentum[2], 0.5 * (1 - w) * summed, rtol=1e-6)
    np.testing.assert_allclose(table[2], w * summed + momentum[2], rtol=1e-3)


def test_block_momentum_of_two_replicas_is_their_sum():
    rng = np.random.default_rng(5)
    base = rng.standard_normal((20, 6)).astype(np.float32)
    summed, moved = base.copy(), base.copy()
    momentum = np.zeros_like(base)
    for _ in range(3):
        replicas = [summed + 1e-2 * rng.standard_normal(base.shape).astype(np.float32) for _ in range(2)]
        deltas = [changed_rows(t, summed) for t in replicas]
        merge(20, deltas, "sum", table=summed)
        merge(20, deltas, "momentum", table=moved, momentum=momentum, replicas=2)
        assert np.array_equal(summed, moved)


def test_block_momentum_of_one_replica_applies_its_delta():
    base = np.arange(12, dtype=np.float32).reshape(4, 3)
    trained = base.copy()
    trained[[1, 3]] += 0.25
    delta = changed_rows(trained, base)
    table, momentum = base.copy(), np.zeros_like(base)
    update = merge(4, [delta], "momentum", table=table, momentum=momentum, replicas=1)
    assert np.array_equal(update.ids, delta.ids) and np.array_equal(update.values, delta.values)
    assert np.array_equal(table, trained)
    assert len(update.without(0)) == 0      # every row is the replica's own: nothing goes back to it


def test_a_share_sends_the_fewest_rows_that_hold_it():
    rng = np.random.default_rng(4)
    base = rng.standard_normal((300, 8)).astype(np.float32)
    table = base.copy()
    table[::3] += (rng.standard_normal((100, 8)) * rng.uniform(0.001, 1, (100, 1))).astype(np.float32)
    energy = ((table - base).astype(np.float64) ** 2).sum(axis=1)
    everything = changed_rows(table, base)
    assert np.array_equal(everything.ids, np.arange(0, 300, 3))
    for share in (0.9, 0.5, 0.1):
        part = changed_rows(table, base, share)
        assert energy[part.ids].sum() >= share * energy.sum()
        # the fewest such rows: the same number of the largest ones, and one fewer would not hold the share
        largest = np.sort(energy)[::-1]
        assert largest[:len(part.ids) - 1].sum() < share * energy.sum()
        assert energy[part.ids].min() >= largest[len(part.ids) - 1]
        np.testing.assert_array_equal(part.values, (table - base)[part.ids].astype(WIRE_DTYPE))


def test_changed_rows_reuse_their_buffers_round_after_round():
    rng = np.random.default_rng(5)
    base = rng.standard_normal((200, 8)).astype(np.float32)
    scratch = {}
    held = None
    for share, every in ((1.0, 2), (0.5, 3), (1.0, 5)):
        table = base.copy()
        table[::every] += rng.standard_normal((len(table[::every]), 8)).astype(np.float32)
        fresh = changed_rows(table, base, share)
        reused = changed_rows(table, base, share, scratch)
        np.testing.assert_array_equal(reused.ids, fresh.ids)
        np.testing.assert_array_equal(reused.values, fresh.values)
        assert held is None or np.shares_memory(reused.values, held)     # no new table-sized buffer
        held = reused.values
    changed_rows(np.zeros((10, 4), np.float32), np.ones((10, 4), np.float32), 1.0, scratch)    # another shape
    assert scratch["values"].shape == (10, 4)


@pytest.mark.parametrize("kind", ["heavy tail", "ties", "zeros", "tiny"])
def test_the_share_threshold_is_the_one_a_full_sort_gives(kind):
    rng = np.random.default_rng(len(kind))
    for n in (1, 2, 7, 1000, 50_000):
        energy = rng.pareto(1.0, n) ** 2
        if kind == "ties":
            energy = np.round(energy, 1)
        elif kind == "zeros":
            energy[rng.random(n) < 0.7] = 0.0
        elif kind == "tiny":
            energy *= 1e-300
        if not energy.any():
            assert deltas.share_threshold(energy, 0.5) == np.inf
            continue
        held = np.cumsum(np.sort(energy)[::-1])
        for share in (1e-9, 0.1, 0.5, 0.9):
            # the energy of the last row a sort takes to hold the share (within the rounding of the sums)
            expected = np.sort(energy)[::-1][min(int(np.searchsorted(held, share * held[-1] * (1 - 1e-12))), n - 1)]
            assert deltas.share_threshold(energy, share) == expected, (n, share)
        assert deltas.share_threshold(energy, 1.0) == energy[energy > 0].min()


def test_the_share_threshold_refuses_a_bad_share_or_energy():
    with pytest.raises(ValueError, match="share"):
        deltas.share_threshold(np.ones(3), 0.0)
    with pytest.raises(ValueError, match="energy 1 is nan"):
        deltas.share_threshold(np.array([1.0, np.nan]), 0.5)


def test_a_replica_that_sent_part_of_its_rows_keeps_the_rest():
    # values exact in float16: the replica ends at the reconciled table plus what it did not send
    base = np.zeros((5, 2), np.float32)
    table = np.array([[4, 0], [0.25, 0], [0, 0], [2, 2], [0.5, 0]], np.float32)
    sent = changed_rows(table, base, 0.8)
    assert sent.ids.tolist() == [0, 3]
    other = changed_rows(np.array([[0, 1], [0, 0], [1, 0], [0, 0], [0, 0]], np.float32), base)
    update = merge(5, [sent, other], "sum")
    assert update.without(0).ids.tolist() == [0, 2]     # row 3 only it sent: it knows its step
    reconciled = base + np.array([[4, 1], [0, 0], [1, 0], [2, 2], [0, 0]], np.float32)
    adopt_update(update.without(0), table, base, sent, partial=True)
    np.testing.assert_array_equal(base, reconciled)
    kept = np.array([[0, 0], [0.25, 0], [0, 0], [0, 0], [0.5, 0]], np.float32)
    np.testing.assert_array_equal(table, reconciled + kept)
    # the next round finds what it kept, with whatever it trains meanwhile
    assert changed_rows(table, base).ids.tolist() == [1, 4]


@pytest.mark.parametrize("threads", [1, 3])
def test_a_reconciliation_adopted_under_training_leaves_only_the_trained_rows_apart(threads):
    # a replica finds its rows (with stamps), trains on (some rows move again), then adopts the merged
    # steps: the rows it did not train since are the reconciled rows exactly (the float16 rounding of its
    # step dropped, as when it adopts at once), the trained ones the reconciled rows plus that training and
    # the rounding; without the stamps every row it sent stays apart by its rounding
    rng = np.random.default_rng(5)
    found, start = _replica_round(rng, 400, 7, 0.6)
    other = changed_rows(*_replica_round(rng, 400, 7, 0.5))
    trained = np.sort(rng.choice(changed_rows(found, start).ids, 40, replace=False))
    training = (rng.standard_normal((40, 7)) * 1e-3).astype(np.float32)
    apart = {}
    for stamp in (True, False):
        table, base = found.copy(), start.copy()
        sent = changed_rows(table, base, stamp=stamp, threads=threads)
        assert (sent.stamps is not None) == stamp
        table[trained] += training
        adopt_update(merge(400, [sent, other], "sum"), table, base, sent, partial=True, replica=0,
                     threads=threads, trained=True)
        apart[stamp] = changed_rows(table, base).ids
        own = sent.values.astype(np.float32)[np.searchsorted(sent.ids, trained)]
        np.testing.assert_allclose(table[trained] - base[trained],
                                   found[trained] - start[trained] - own + training, atol=1e-6)
    np.testing.assert_array_equal(apart[True], trained)
    assert len(apart[False]) > 2 * len(trained)


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("partial", [False, True])
def test_adopting_every_owners_part_in_one_walk_is_adopting_them_one_by_one(threads, partial):
    # 5 replicas on a table of 1,500 rows (blocks of 512 rows, each taking every part's rows): replica 2
    # adopts the owners' merged parts with its own parts of its delta, at once or under training
    rng = np.random.default_rng(11)
    n, me, rows = 5, 2, 1500
    start = rng.standard_normal((rows, 6)).astype(np.float32)
    tables = [start + (rng.standard_normal((rows, 6)) * 1e-2 * (rng.random((rows, 1)) < 0.7)).astype(np.float32)
              for _ in range(n)]
    sents = [changed_rows(t, start, stamp=True) for t in tables]
    parts = [split(d, n) for d in sents]
    updates = [table_rows(merge(len(range(p, rows, n)), [local_rows(parts[k][p], n) for k in range(n)], "sum"), n, p)
               for p in range(n)]
    trained = np.sort(rng.choice(sents[me].ids, 60, replace=False))
    one_by_one, at_once = (tables[me].copy(), start.copy()), (tables[me].copy(), start.copy())
    for table, _ in (one_by_one, at_once):
        table[trained] += 1e-3
    for p in range(n):
        adopt_update(updates[p], one_by_one[0], one_by_one[1], parts[me][p], partial, me, threads, trained=True)
    adopt_parts(updates, at_once[0], at_once[1], parts[me], partial, me, threads, trained=True)
    np.testing.assert_array_equal(one_by_one[0], at_once[0])
    np.testing.assert_array_equal(one_by_one[1], at_once[1])
    assert not np.array_equal(at_once[1], start)
    with pytest.raises(ValueError, match="part 1 has"):
        adopt_parts(updates, at_once[0], at_once[1], [parts[me][0], RowDelta(parts[me][1].ids, parts[me][0].values)]
                    + parts[me][2:], partial, me)
    with pytest.raises(ValueError, match=r"holds a row of another part \(part p of n holds the rows i with i % n"):
        adopt_parts(updates[1:] + updates[:1], at_once[0], at_once[1], parts[me], partial, me, threads)


def _replica_round(rng, n, dim, share_rows):
    """A base table and a table where ``share_rows`` of the rows moved (steps of every magnitude)."""
    base = rng.standard_normal((n, dim)).astype(np.float32)
    table = base.copy()
    rows = rng.choice(n, int(share_rows * n), replace=False)
    table[rows] += (rng.standard_normal((len(rows), dim)) * 10.0 ** rng.integers(-6, 0, (len(rows), 1))
                    ).astype(np.float32)
    return table, base


@pytest.mark.parametrize("n", [1, 7, 1001])
@pytest.mark.parametrize("share", [1.0, 0.5])
def test_the_passes_give_the_same_bits_on_any_number_of_threads(n, share):
    # every pass a replica makes in a round, on 1 thread and on several: finding its rows, merging the
    # replicas' deltas (with the table), adopting the merged rows (skipping its own by their owner, whole
    # or partial): the same bits, whatever ranges the threads walked
    rng = np.random.default_rng(n)
    rounds = [_replica_round(rng, n, 9, f) for f in (0.3, 0.9, 0.0)]

    def passes(threads):
        found = [changed_rows(t, b, share, None, threads) for t, b in rounds]
        client = rounds[0][1].copy()
        merged = merge(n, found, "sum", client, replicas=3, threads=threads)
        out = {"client": client, "merged ids": merged.ids, "merged steps": merged.values,
               "owners": np.zeros(0, np.int32) if merged.owner is None else merged.owner}
        for g, (t, b) in enumerate(rounds):
            out["ids %d" % g], out["steps %d" % g] = found[g].ids, found[g].values
            out["table %d" % g], out["base %d" % g] = t.copy(), b.copy()
            adopt_update(merged, out["table %d" % g], out["base %d" % g], found[g], share < 1, g, threads)
        return out

    one = passes(1)
    for threads in (2, 3, 8):
        many = passes(threads)
        for name, array in one.items():
            other = many[name]
            assert array.dtype == other.dtype and np.array_equal(array.view(np.uint8), other.view(np.uint8)), \
                (threads, name)
    # and adopting through the owners is adopting the update without the rows only it sent
    found = [changed_rows(t, b, share) for t, b in rounds]
    update = merge(n, found, "sum")
    for g, (t, b) in enumerate(rounds):
        table, base = t.copy(), b.copy()
        adopt_update(update.without(g), table, base, found[g], share < 1)
        assert np.array_equal(table, one["table %d" % g]) and np.array_equal(base, one["base %d" % g])


def test_a_threaded_pass_refuses_what_a_single_thread_refuses():
    table = np.zeros((6, 2), np.float32)
    with pytest.raises(ValueError, match="row 9 outside a table of 6 rows"):
        deltas.adopt_rows(table, table.copy(), np.array([1, 9], np.int32), np.zeros((2, 2), np.uint16),
                          np.zeros(0, np.int32), np.zeros((0, 2), np.uint16), True, None, -1, 4)
    with pytest.raises(ValueError, match="owners"):
        deltas.adopt_rows(table, table.copy(), np.array([1, 2], np.int32), np.zeros((2, 2), np.uint16),
                          np.zeros(0, np.int32), np.zeros((0, 2), np.uint16), True, np.zeros(1, np.int32), 0, 4)
    with pytest.raises(ValueError, match="not increasing"):
        deltas.merge_rows([np.array([3, 1], np.int32)], [np.zeros((2, 2), np.uint16)], 6, False,
                          np.zeros((2, 2), np.uint16), np.zeros(2, np.int32), None, None, 3)


def test_a_delta_travels_as_a_plain_tuple_of_its_arrays():
    # Dask sends a tuple of arrays as they are, where an object holding them goes through pickle
    delta = RowDelta(np.array([1, 4], np.int32), np.ones((2, 3), WIRE_DTYPE), np.array([0, -1], np.int32))
    wire = delta.wire
    assert type(wire) is tuple and all(isinstance(a, np.ndarray) for a in wire)
    back = RowDelta.from_wire(wire)
    assert back.ids is delta.ids and back.values is delta.values and back.owner is delta.owner
    assert RowDelta.from_wire(RowDelta(delta.ids, delta.values).wire).owner is None


def _steps_of_every_scale(rows=2000, dim=37):
    """float16 steps whose rows span float16's range, with rows of zeros, of subnormals and of one value."""
    rng = np.random.default_rng(5)
    steps = rng.standard_normal((rows, dim)) * 2.0 ** rng.uniform(-30, 12, (rows, 1))
    steps[0] = 0
    steps[1, ::2] = 0
    steps[2] = 2.0 ** -24 * rng.integers(-300, 300, dim)      # float16 subnormals
    steps[3] = 0
    steps[3, 5] = -3.0
    steps[4] = 65504
    return np.clip(steps, -65504, 65504).astype(WIRE_DTYPE)


@pytest.mark.parametrize("threads", [1, 3])
def test_eight_bits_a_value_round_each_row_to_a_power_of_two_grid_and_travel_exactly(threads):
    steps = _steps_of_every_scale()
    delta = RowDelta(np.arange(len(steps), dtype=np.int32), steps.copy())
    round_to_wire(delta, 8, threads)
    before, after = steps.astype(np.float64), delta.values.astype(np.float64)
    top = np.abs(before).max(axis=1)
    # within half a step of the row's grid, the grid's step under 2/127 of the row's largest value, and a row
    # of zeros stays zeros; float16's largest value is not rounded up past it (to infinity) but down a step
    error = np.abs(after - before).max(axis=1)
    assert np.all(np.delete(error <= top / 127 + 2.0 ** -25, 4)) and error[4] == 65504 - 64512
    assert np.array_equal(after[0], before[0]) and after[3, 5] == -3.0 and np.all(after[4] == 64512)
    assert np.all(np.sign(after) * np.sign(before) >= 0)
    # at most 127 multiples of one power of two a row
    for row in after[np.abs(after).max(axis=1) > 0]:
        k = max(np.ceil(np.log2(np.abs(row).max() / 127)), -24)
        multiples = row / 2.0 ** k
        assert np.array_equal(multiples, np.round(multiples)) and np.abs(multiples).max() <= 127
    # rounding again changes nothing, and the packed wire gives back the rounded steps bit for bit
    again = RowDelta(delta.ids, delta.values.copy())
    round_to_wire(again, 8, 1)
    assert np.array_equal(again.values.view(np.uint16), delta.values.view(np.uint16))
    wire = packed_wire(delta, 8)
    ids, (q, exps), owner = wire
    assert q.dtype == np.int8 and exps.dtype == np.int8 and q.shape == steps.shape and owner is None
    back = RowDelta.from_wire(wire)
    assert np.array_equal(back.values.view(np.uint16), delta.values.view(np.uint16)) and back.ids is ids
    # the rounded steps packed afresh (rounded again), and an owner's parts (which carry their share of the
    # packing), travel as the same steps; a delta not rounded does not go out at 8 bits
    fresh = RowDelta.from_wire(packed_wire(again, 8))
    assert np.array_equal(fresh.values.view(np.uint16), delta.values.view(np.uint16))
    for part in split(delta, 3):
        assert part.packed is not None
        repacked = RowDelta(part.ids, part.values.copy())
        round_to_wire(repacked, 8)
        for packed in (packed_wire(part, 8), packed_wire(repacked, 8)):
            assert np.array_equal(RowDelta.from_wire(packed).values.view(np.uint16), part.values.view(np.uint16))
    with pytest.raises(ValueError, match="once round_to_wire has rounded it"):
        packed_wire(RowDelta(delta.ids, delta.values), 8)
    assert delta.wire_nbytes(8) == ids.nbytes + q.nbytes + exps.nbytes < 0.55 * delta.wire_nbytes(16)
    # 16 bits: the steps as they are, the plain wire
    same = RowDelta(delta.ids, steps.copy())
    round_to_wire(same, 16)
    assert np.array_equal(same.values.view(np.uint16), steps.view(np.uint16)) and packed_wire(same, 16)[1] is \
        same.values
    with pytest.raises(ValueError, match="bits must be one of"):
        round_to_wire(same, 4)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("threads", [1, 3])
def test_a_step_that_is_not_finite_is_not_sent_at_eight_bits(bad, threads):
    # (int8 holds no infinity or NaN: rounding them to numbers would hide a diverged training)
    steps = _steps_of_every_scale()
    steps[1500, 3] = bad
    with pytest.raises(FloatingPointError, match="not finite.*diverged"):
        round_to_wire(RowDelta(np.arange(len(steps), dtype=np.int32), steps), 8, threads)
    with pytest.raises(FloatingPointError, match="not finite"):     # a row not finite after finite ones
        round_to_wire(RowDelta(np.arange(2000, dtype=np.int32), np.roll(steps, 400, axis=0)), 8, threads)


def test_unpacking_refuses_an_exponent_outside_float16s_range():
    with pytest.raises(ValueError, match="row 1 has the exponent 11"):
        RowDelta.from_wire((np.arange(2, dtype=np.int32), (np.ones((2, 3), np.int8), np.array([0, 11], np.int8)),
                            None))


@pytest.mark.parametrize("mode, replicas", [("sum", 2), ("average", 3), ("momentum", 3)])
def test_merges_reuse_their_buffers_round_after_round(mode, replicas):
    # a Dask worker's allocator hands freed memory back at once: a merge keeps its buffers between rounds,
    # with the same steps as a merge into fresh ones
    rng = np.random.default_rng(11)
    n, dim = 300, 6
    scratch, held = {}, None
    momentum_fresh = np.zeros((n, dim), np.float32)
    momentum_reused = momentum_fresh.copy()
    for sizes in ((250, 30, 299), (120, 200, 0), (10, 5, 1)):
        deltas = [RowDelta(np.sort(rng.choice(n, size, replace=False)).astype(np.int32),
                           (rng.standard_normal((size, dim)) * 1e-2).astype(WIRE_DTYPE)) for size in sizes]
        fresh = merge(n, deltas, mode, momentum=momentum_fresh, replicas=replicas)
        reused = merge(n, deltas, mode, momentum=momentum_reused, replicas=replicas, scratch=scratch)
        np.testing.assert_array_equal(reused.ids, fresh.ids)
        np.testing.assert_array_equal(reused.values, fresh.values)
        if fresh.owner is not None:
            np.testing.assert_array_equal(reused.owner, fresh.owner)
        assert held is None or np.shares_memory(reused.values, held)     # no new buffer once it is large enough
        held = scratch["values"]
    np.testing.assert_array_equal(momentum_reused, momentum_fresh)
