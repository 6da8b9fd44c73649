"""Name -> builder registries for losses and samplers.

A loss builder receives the class counts (``counts``) and the user's ``loss_params``; a sampler builder
receives ``counts``, ``n_classes`` and the user's ``sampler_params``.  Both return kernel objects.  Tests
iterate over these registries, so an entry added here is tested without a new test file.  Modules with
more samplers add theirs through :func:`register_sampler`.
"""
import math
import numbers

import numpy as np

from embkit._kernels import boltzmann as _boltzmann
from embkit._kernels import kernel_sampler as _kernel_sampler
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


def _boltzmann_sampler(counts=None, n_classes=None, T=1.0, degeneracy="uniform", alpha=None, method="exact",
                       mh_steps=None, burn_in=None, **params):
    """Boltzmann negative sampling, ``Q(j) ∝ D(j) exp(<h, W_out[j]> / T)`` (Tanielian et al. 2019, Eq. 8).

    Parameters
    ----------
    T : float, default 1.0
        Temperature, ``> 0``.  ``float('inf')`` draws from ``D`` itself (query-free alias table, any method).
    degeneracy : {'uniform', 'popularity'}, default 'uniform'
        ``D``: uniform (UBS) or the class counts raised to ``alpha`` and normalised (PBS).
    alpha : float, default 1.0
        Popularity exponent, finite and ``>= 0`` (``degeneracy='popularity'`` only).
    method : {'exact', 'mh'}, default 'exact'
        'exact' scores every class per draw call (:class:`~embkit._kernels.boltzmann.ExactBoltzmann`, exact
        log-probabilities, ``O(n d)`` per call); 'mh' runs an independent Metropolis-Hastings chain with
        proposals from ``D`` (:class:`~embkit._kernels.boltzmann.MHBoltzmann`, ``O((burn_in + k mh_steps) d)``
        per call, estimated log-probabilities).
    mh_steps : int, default 3
        Chain steps per recorded draw (thinning), ``>= 1`` (``method='mh'`` only).
    burn_in : int, default 50
        Chain steps discarded before the first draw, ``>= 0`` (``method='mh'`` only).

    Parameters that do not apply to the chosen ``degeneracy`` or ``method`` raise ValueError rather than being
    ignored.
    """
    _reject(params, "boltzmann")
    if isinstance(T, bool) or not isinstance(T, numbers.Real) or not T > 0:
        raise ValueError("boltzmann: T (temperature) must be a number > 0 (float('inf') for the degeneracy "
                         "distribution itself), got %r" % (T,))
    if degeneracy not in ("uniform", "popularity"):
        raise ValueError("boltzmann: degeneracy must be 'uniform' or 'popularity', got %r" % (degeneracy,))
    if method not in ("exact", "mh"):
        raise ValueError("boltzmann: method must be 'exact' or 'mh', got %r" % (method,))
    if method == "exact" and (mh_steps is not None or burn_in is not None):
        raise ValueError("boltzmann: mh_steps and burn_in apply to method='mh' only")
    weights = None
    if degeneracy == "popularity":
        alpha = 1.0 if alpha is None else alpha
        if (isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not math.isfinite(alpha)
                or alpha < 0):
            raise ValueError("boltzmann: alpha (popularity exponent) must be a finite number >= 0, got %r"
                             % (alpha,))
        if counts is None:
            raise ValueError("boltzmann: degeneracy='popularity' needs the class counts")
        c = np.asarray(counts, dtype=np.float64)
        if c.shape != (n_classes,) or not np.all(np.isfinite(c)) or np.any(c < 0) or not np.any(c > 0):
            raise ValueError("boltzmann: counts must be %d finite non-negative numbers, not all zero"
                             % n_classes)
        weights = np.power(c, alpha)
    elif alpha is not None:
        raise ValueError("boltzmann: alpha applies to degeneracy='popularity' only")
    if method == "mh":
        chain = {key: value for key, value in (("mh_steps", mh_steps), ("burn_in", burn_in)) if value is not None}
        return _boltzmann.MHBoltzmann(n_classes, T, weights, **chain)
    return _boltzmann.ExactBoltzmann(n_classes, T, weights)


def _softmax_exact(counts=None, n_classes=None, **params):
    """The model's full softmax over the classes, ``Q(j) ∝ exp(<h, W_out[j]>)``: Boltzmann sampling with
    ``T = 1`` and uniform ``D``, drawn exactly (``O(n d)`` per call); the "Exp" baseline of Rawat et al. 2019.
    Takes no parameters."""
    _reject(params, "softmax_exact")
    return _boltzmann.ExactBoltzmann(n_classes, 1.0)


def _topk(counts=None, n_classes=None, **params):
    """The ``negative`` highest-scoring wrong classes for each example (hard negatives); deterministic, so
    only losses that do not correct by ``log Q`` accept it (sgns, relaxed_softmax).  Takes no parameters."""
    _reject(params, "topk")
    return _boltzmann.TopK(n_classes)


def _kernel(counts, n_classes, kernel="rff", D=None, nu=None, alpha=None, bucket=16, seed=1, **params):
    """Kernel-based sampling through a sum tree: RF-softmax (``kernel='rff'``, covered by US patent
    12,205,005) or Quadratic-softmax (``kernel='quadratic'``); see :class:`KernelSampler`."""
    _reject(params, "the kernel sampler")
    return _kernel_sampler.KernelSampler(n_classes, kernel=kernel, D=D, nu=nu, alpha=alpha, bucket=bucket,
                                         seed=seed)


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
    "boltzmann": _boltzmann_sampler,
    "softmax_exact": _softmax_exact,
    "topk": _topk,
    "kernel": _kernel,
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


def build_objective(loss, sampler, counts, n_classes, negative, loss_params=None, sampler_params=None,
                    W_out=None, default_sampler="unigram"):
    """Build a loss and its sampler by name, check that they pair, and bind an adaptive sampler.

    Parameters
    ----------
    loss, sampler : str or None
        Registry names; ``sampler=None`` takes ``default_sampler`` for a sampled loss.
    counts : array of int
        Class popularity (the unigram / popularity samplers, Huffman tree, degeneracy).
    n_classes, negative : int
    loss_params, sampler_params : dict, optional
    W_out : float32 array, optional
        Output table an adaptive sampler reads (bound here).

    Returns
    -------
    (Loss, Sampler or None)
    """
    built = make_loss(loss, counts=counts, **(loss_params or {}))
    if not built.uses_negatives:
        if sampler is not None:
            raise ValueError("loss %r uses no sampler; do not pass sampler=%r" % (loss, sampler))
        return built, None
    made = make_sampler(sampler or default_sampler, counts=counts, n_classes=n_classes, **(sampler_params or {}))
    check_pairing(built, made, negative, n_classes)
    if not made.query_free and W_out is not None:
        made.bind(W_out)
    return built, made
