"""The rounds of a cluster run (embkit.cluster.rounds, embkit.cluster.settings.round_plan): even rounds, and
rounds that shrink towards the end of the run.  No Dask needed."""
import json
import math

import pytest

from embkit.cluster import settings
from embkit.cluster.rounds import RoundPlan


def lengths(plan, epoch):
    cuts = plan.cuts[epoch]
    return [b - a for a, b in zip(cuts, cuts[1:])]


def test_even_rounds_cut_every_shard_as_before():
    plan = RoundPlan.uniform(7, 3)
    assert plan.total == 21 and [plan.rounds(e) for e in range(3)] == [7, 7, 7] and plan.even == 7
    assert RoundPlan.shrinking(2_400_000, 3, 75_000, 1 / 16).even is None
    assert RoundPlan.shrinking(10 ** 12, 2, 10 ** 9, 1 / 16).even is None      # told without walking the scale
    for units in (0, 1, 10, 12345):
        for e in range(3):
            spans = [plan.span(e, r) for r in range(7)]
            assert [s.units(units) for s in spans] == [(units * r // 7, units * (r + 1) // 7) for r in range(7)]
            assert [s.ordinal for s in spans] == [e * 7 + r for r in range(7)]
            assert [s.closes_epoch for s in spans] == [False] * 6 + [True]


@pytest.mark.parametrize("units,epochs", [(26_500_000, 1), (2_400_000, 3), (10_000_000, 5), (1_000_000, 2)])
def test_shrinking_rounds_are_long_first_and_end_at_the_floor(units, epochs):
    least, share = 75_000, 1 / 16
    plan = RoundPlan.shrinking(units, epochs, least, share)
    assert plan.scale == units and plan.epochs == epochs
    everything = [n for e in range(epochs) for n in lengths(plan, e)]
    assert sum(everything) == units * epochs        # every epoch cut whole, each unit in one round
    # each round takes the share of what is left, at least the floor; a round cut short by its epoch's end
    # is the only kind shorter than that, and none is shorter than half of what it would have been
    done = 0
    for n in everything:
        size = max(least, math.ceil(share * (units * epochs - done)))
        epoch_end = (done // units + 1) * units
        assert n == size or (n < size and done + n == epoch_end) or \
            (n > size and done + n == epoch_end and n < size + size // 2 + 1)
        done += n
    # the last rounds are at the floor, the first ones far longer: far fewer rounds than at the floor
    assert lengths(plan, epochs - 1)[-2] == least
    assert everything[0] >= min(units, share * units * epochs)
    assert plan.total <= math.ceil(units * epochs / least)
    if units * epochs >= 100 * least:
        assert plan.total < units * epochs / least / 2


def test_a_corpus_of_a_few_rounds_trains_in_rounds_at_the_floor_and_a_tiny_one_in_one_round_an_epoch():
    plan = RoundPlan.shrinking(200_000, 3, 75_000, 1 / 16)
    assert [lengths(plan, e) for e in range(3)] == [[75_000, 75_000, 50_000]] * 3
    # less than half a round left before an epoch's end goes with the round before
    assert lengths(RoundPlan.shrinking(180_000, 1, 75_000, 1 / 16), 0) == [75_000, 105_000]
    assert RoundPlan.shrinking(1000, 3, 75_000, 1 / 16) == RoundPlan.uniform(1, 3)
    assert RoundPlan.shrinking(0, 2, 75_000, 1 / 16) == RoundPlan.uniform(1, 2)


def test_spans_number_the_rounds_of_the_run():
    plan = RoundPlan.shrinking(2_400_000, 3, 75_000, 1 / 16)
    ordinals = [plan.span(e, r).ordinal for e in range(3) for r in range(plan.rounds(e))]
    assert ordinals == list(range(plan.total))
    for e in range(3):
        spans = [plan.span(e, r) for r in range(plan.rounds(e))]
        assert spans[0].start == 0 and spans[-1].stop == plan.scale
        assert [s.closes_epoch for s in spans] == [False] * (len(spans) - 1) + [True]
        # a shard of any size is cut at the same shares of the epoch, without a gap or an overlap
        for units in (1, 999, 1_234_567):
            pieces = [s.units(units) for s in spans]
            assert pieces[0][0] == 0 and pieces[-1][1] == units
            assert all(a[1] == b[0] for a, b in zip(pieces, pieces[1:]))


def test_a_plan_goes_through_a_checkpoint_record_and_a_damaged_one_is_refused():
    plan = RoundPlan.shrinking(2_400_000, 3, 75_000, 1 / 16)
    assert RoundPlan.from_record(json.loads(json.dumps(plan.record()))) == plan
    for bad in ({"scale": 10, "cuts": [[0, 5, 5, 10]]}, {"scale": 10, "cuts": [[0, 5]]}, {"scale": 0, "cuts": [[0]]},
                {"scale": 10, "cuts": []}, {"scale": 10, "cuts": [[1, 10]]}):
        with pytest.raises(ValueError):
            RoundPlan.from_record(bad)
    with pytest.raises(KeyError):
        RoundPlan.from_record({"cuts": [[0, 1]]})


def test_the_run_plan_shrinks_for_two_replicas_and_is_even_when_asked_alone_or_for_more():
    units = settings.ROUND_UNITS * 40
    assert settings.round_plan(8, [units, units], 2) == RoundPlan.uniform(8, 2)
    assert settings.round_plan(None, [units], 2) == RoundPlan.uniform(settings.rounds_per_epoch(None, [units]), 2)
    shrinking = settings.round_plan(None, [units // 2, units], 2)
    assert shrinking == RoundPlan.shrinking(units, 2, settings.ROUND_UNITS, settings.ROUND_SHARE)
    assert shrinking.rounds(0) < shrinking.rounds(1)
    # the block momentum merge of 3 replicas or more trains rounds of ROUND_UNITS throughout, unless told
    assert settings.round_plan(None, [units] * 3, 2) == RoundPlan.uniform(40, 2)


def test_more_replicas_shrink_their_rounds_up_to_the_settings_bound(monkeypatch):
    units = settings.ROUND_UNITS * 40
    monkeypatch.setattr(settings, "SHRINKING_REPLICAS", 4)
    assert settings.round_plan(None, [units] * 4, 2) == RoundPlan.shrinking(units, 2, settings.ROUND_UNITS,
                                                                           settings.ROUND_SHARE)
    assert settings.round_plan(None, [units] * 5, 2) == RoundPlan.uniform(40, 2)
    assert settings.round_plan(None, [units] * 5, 2, shrinking=5) == settings.round_plan(None, [units] * 4, 2)
    assert settings.round_plan(None, [units], 2) == RoundPlan.uniform(settings.rounds_per_epoch(None, [units]), 2)
