"""Argument checks: one clear error naming the parameter and its allowed range."""
import numbers

import numpy as np

POSITIVE_INT = (lambda v: v >= 1, "an integer >= 1", numbers.Integral)
NON_NEGATIVE_INT = (lambda v: v >= 0, "an integer >= 0", numbers.Integral)
POSITIVE_REAL = (lambda v: v > 0 and np.isfinite(v), "a number > 0")
NON_NEGATIVE_REAL = (lambda v: v >= 0 and np.isfinite(v), "a number >= 0")


def check_param(name, value, ok, rule, kind=numbers.Real):
    """Raise ValueError ``"<name> must be <rule>, got <value>"`` unless ``value`` is a ``kind`` with ``ok``."""
    if isinstance(value, bool) or not isinstance(value, kind) or not ok(value):
        raise ValueError("%s must be %s, got %r" % (name, rule, value))
