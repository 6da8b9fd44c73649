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


def check_trainer(model, registry, chunk_name):
    """The checks every embedding trainer shares: sizes, seed, learning rates, loss/sampler names, negatives.

    ``model`` has ``vector_size``, ``epochs``, ``workers``, ``negative``, ``seed``, ``alpha``, ``min_alpha``,
    ``loss``, ``sampler`` and the chunk-size attribute ``chunk_name``.
    """
    for name in ("vector_size", "epochs", "workers", chunk_name):
        check_param(name, getattr(model, name), *POSITIVE_INT)
    check_param("negative", model.negative, *NON_NEGATIVE_INT)
    check_param("seed", model.seed, *NON_NEGATIVE_INT)
    check_param("alpha", model.alpha, *POSITIVE_REAL)
    check_param("min_alpha", model.min_alpha, lambda v: 0 <= v <= model.alpha, "a number in [0, alpha]")
    check_names(model.loss, model.sampler, registry)
    if model.loss not in registry.UNSAMPLED_LOSSES and model.negative == 0:
        raise ValueError("negative must be >= 1 for the %s loss" % model.loss)
