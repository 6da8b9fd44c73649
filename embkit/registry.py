"""Name -> builder registries for losses and samplers.

A loss builder receives the class counts (``counts``) and the user's ``loss_params``; a sampler builder
receives ``counts``, ``n_classes`` and the user's ``sampler_params``.  Both return kernel objects.  Tests
iterate over these registries, so an entry added here is tested without a new test file.  Modules with
more samplers add theirs through :func:`register_sampler`.
"""
from embkit._kernels import losses as _losses
from embkit._kernels import lsh as _lsh_kernels
from embkit._kernels import samplers as _samplers


def _reject(params, name):
    if params:
        raise TypeError("%s got unknown parameters: %s" % (name, ", ".join(sorted(params))))


def _plain(cls, name):
    def build(counts=None, **params):
        _reject(params, name)
        return cls()
    return build


def _sampled_softmax(counts=None, remove_accidental_hits=True, **params):
    _reject(params, "sampled_softmax")
    return _losses.SampledSoftmax(correct=True, remove_accidental_hits=remove_accidental_hits)


def _relaxed_softmax(counts=None, **params):
    _reject(params, "relaxed_softmax")
    return _losses.SampledSoftmax(correct=False, remove_accidental_hits=True)


def _hs(counts=None, **params):
    _reject(params, "hs")
    if counts is None:
        raise ValueError("the hs loss needs the class counts to build its Huffman tree")
    return _losses.HierarchicalSoftmax(counts)


def _unigram(counts, n_classes, ns_exponent=0.75, **params):
    _reject(params, "unigram")
    return _samplers.unigram(counts, ns_exponent)


def _uniform(counts, n_classes, **params):
    _reject(params, "uniform")
    return _samplers.uniform(n_classes)


def _log_uniform(counts, n_classes, **params):
    _reject(params, "log_uniform")
    return _samplers.log_uniform(n_classes)


def _lsh(counts, n_classes, family="simhash", K=None, L=None, query="label", bin_size=8, rebuild_initial=0.01,
         rebuild_decay=1.5, seed=1, **params):
    """LSH negative sampling (Daghaghi et al. 2021); see :class:`embkit._kernels.lsh.LSHSampler`."""
    _reject(params, "lsh")
    return _lsh_kernels.LSHSampler(n_classes, family=family, K=K, L=L, query=query, bin_size=bin_size,
                                   rebuild_initial=rebuild_initial, rebuild_decay=rebuild_decay, seed=seed)


LOSSES = {
    "sgns": _plain(_losses.SGNS, "sgns"),
    "nce": _plain(_losses.NCE, "nce"),
    "sampled_softmax": _sampled_softmax,
    "relaxed_softmax": _relaxed_softmax,
    "full_softmax": _plain(_losses.FullSoftmax, "full_softmax"),
    "hs": _hs,
}

#: Losses that compute their normaliser without negatives (no sampler).
UNSAMPLED_LOSSES = frozenset({"full_softmax", "hs"})

SAMPLERS = {
    "unigram": _unigram,
    "uniform": _uniform,
    "log_uniform": _log_uniform,
    "lsh": _lsh,
}


def register_sampler(name, builder):
    """Add a sampler builder ``builder(counts=..., n_classes=..., **params)`` under ``name``."""
    SAMPLERS[name] = builder


def make_loss(name, counts=None, **params):
    """Build the loss registered as ``name``."""
    try:
        builder = LOSSES[name]
    except (KeyError, TypeError):
        raise ValueError("unknown loss %r; valid losses: %s" % (name, ", ".join(sorted(LOSSES)))) from None
    return builder(counts=counts, **params)


def make_sampler(name, counts, n_classes, **params):
    """Build the sampler registered as ``name`` over ``n_classes`` classes with popularity ``counts``."""
    try:
        builder = SAMPLERS[name]
    except (KeyError, TypeError):
        raise ValueError("unknown sampler %r; valid samplers: %s"
                         % (name, ", ".join(sorted(SAMPLERS)))) from None
    return builder(counts=counts, n_classes=n_classes, **params)


def check_pairing(loss, sampler, negative, n_classes):
    """Raise ValueError when ``sampler`` cannot serve ``loss`` (built objects), saying why."""
    if not loss.uses_negatives:
        return
    if sampler is None:
        raise ValueError("this loss draws negatives and needs a sampler")
    if negative < 1:
        raise ValueError("negative must be >= 1 for a sampled loss, got %d" % negative)
    if negative > n_classes:
        raise ValueError("negative=%d exceeds the number of classes (%d)" % (negative, n_classes))
    if loss.needs_logq and not sampler.is_distribution:
        raise ValueError("%s corrects by the sampler's log-probabilities, but %s picks negatives "
                         "deterministically and has none; use sgns or relaxed_softmax with it"
                         % (type(loss).__name__, type(sampler).__name__))
