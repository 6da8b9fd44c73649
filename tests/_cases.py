"""Parameter lists shared by the trainer tests, generated from the registry (a new entry is tested at once)."""
import pytest

from embkit.core import registry


def pairings():
    """Every registered loss with every registered sampler it can use (losses without negatives once)."""
    cases = []
    for loss in sorted(registry.LOSSES):
        if not registry.uses_sampler(loss):
            cases.append(pytest.param(loss, None, id=loss))
            continue
        for sampler in sorted(registry.SAMPLERS):
            cases.append(pytest.param(loss, sampler, id="%s-%s" % (loss, sampler)))
    return cases


def refused(exc):
    """A pairing the registry refuses must say why."""
    text = str(exc)
    return "cannot" in text or "deterministically" in text or "no negatives" in text
