"""Argument checks shared by the trainers: one clear error naming the parameter and its allowed range."""
import numbers

import numpy as np

POSITIVE_INT = (lambda v: v >= 1, "an integer >= 1", numbers.Integral)
NON_NEGATIVE_INT = (lambda v: v >= 0, "an integer >= 0", numbers.Integral)
POSITIVE_REAL = (lambda v: v > 0 and np.isfinite(v), "a number > 0")


def check_param(name, value, ok, rule, kind=numbers.Real):
    """Raise ValueError ``"<name> must be <rule>, got <value>"`` unless ``value`` is a ``kind`` with ``ok``."""
    if isinstance(value, bool) or not isinstance(value, kind) or not ok(value):
        raise ValueError("%s must be %s, got %r" % (name, rule, value))


def check_names(loss, sampler, registry):
    """Raise ValueError for an unknown loss or sampler name, listing the valid ones."""
    if loss not in registry.LOSSES:
        raise ValueError("unknown loss %r; valid losses: %s" % (loss, ", ".join(sorted(registry.LOSSES))))
    if sampler is not None and sampler not in registry.SAMPLERS:
        raise ValueError("unknown sampler %r; valid samplers: %s" % (sampler, ", ".join(sorted(registry.SAMPLERS))))
    if loss in registry.UNSAMPLED_LOSSES and sampler is not None:
        raise ValueError("the %s loss draws no negatives, so sampler=%r does not apply; leave sampler unset"
                         % (loss, sampler))
