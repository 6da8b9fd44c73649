"""Name -> builder registries for losses and samplers.

A builder receives the keyword arguments a trainer knows (``counts``, ``n_classes``, and the user's
``loss_params`` / ``sampler_params``) and returns a kernel object.  Tests iterate over these registries, so
an entry added here is tested without a new test file.
"""
from embkit._kernels import losses as _losses
from embkit._kernels import samplers as _samplers


def _unigram(counts, n_classes, ns_exponent=0.75, **params):
    _reject(params, "unigram")
    return _samplers.unigram(counts, ns_exponent)


def _uniform(counts, n_classes, **params):
    _reject(params, "uniform")
    return _samplers.uniform(n_classes)


def _sgns(**params):
    _reject(params, "sgns")
    return _losses.SGNS()


def _reject(params, name):
    if params:
        raise TypeError("%s got unknown parameters: %s" % (name, ", ".join(sorted(params))))


LOSSES = {
    "sgns": _sgns,
}

SAMPLERS = {
    "unigram": _unigram,
    "uniform": _uniform,
}


def make_loss(name, **params):
    """Build the loss registered as ``name``."""
    try:
        builder = LOSSES[name]
    except (KeyError, TypeError):
        raise ValueError("unknown loss %r; valid losses: %s" % (name, ", ".join(sorted(LOSSES)))) from None
    return builder(**params)


def make_sampler(name, counts, n_classes, **params):
    """Build the sampler registered as ``name`` over ``n_classes`` classes with popularity ``counts``."""
    try:
        builder = SAMPLERS[name]
    except (KeyError, TypeError):
        raise ValueError("unknown sampler %r; valid samplers: %s"
                         % (name, ", ".join(sorted(SAMPLERS)))) from None
    return builder(counts=counts, n_classes=n_classes, **params)
