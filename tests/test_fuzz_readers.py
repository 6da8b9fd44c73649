"""A small fuzzing budget for every reader (``eval.robustness.fuzz_readers`` runs >= 10,000 inputs per reader).

Each input is a valid seed file mutated by :mod:`fuzz_mutate` (or a string of grammar tokens), drawn by
hypothesis with a fixed seed (``derandomize=True``, no example database), so CI runs the same inputs
every time.  Every input must end as ``parsed`` (agreeing with the oracle of :mod:`fuzz_targets`) or as a
clean error naming the file: never a crash, a hang or a silent wrong result.
"""
import logging

import pytest

pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from fuzz_targets import TARGETS, run_input  # noqa: E402

#: inputs per reader in the test suite (the archive target loads and uses a model per input)
EXAMPLES = {"archive": 150, "checkpoint": 150}
DEFAULT_EXAMPLES = 400


@pytest.fixture(autouse=True)
def _quiet(caplog):
    caplog.set_level(logging.ERROR)


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_seeds_parse(name, tmp_path):
    """The oracle accepts the valid files the fuzzer starts from (so a fuzz run tests something)."""
    target = TARGETS[name]
    for seed in target.seed_inputs():
        outcome, detail, _ = run_input(target, seed, str(tmp_path))
        assert outcome == "parsed", "%s: seed %r: %s %s" % (name, seed[:80], outcome, detail)


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_fuzzed_inputs_parse_or_fail_cleanly(name, tmp_path):
    target = TARGETS[name]

    @settings(max_examples=EXAMPLES.get(name, DEFAULT_EXAMPLES), derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(st.randoms(use_true_random=False))
    def check(rnd):
        data = target.generate(rnd)
        outcome, detail, _ = run_input(target, data, str(tmp_path), timeout=20)
        assert outcome in ("parsed", "error"), "%s on input %r: %s" % (outcome, data[:300], detail)

    check()
