"""Name -> entry registries of the losses and samplers, and the one check of which loss takes which sampler.

An entry names its kernel class and a builder.  The kernel class's capability constants (those of
:class:`~embkit._kernels.losses.Loss`: ``USES_NEGATIVES``, ``NEEDS_LOGQ``, ``CLASS_ROWS``, ``TREE_ROWS``, ...;
of :class:`~embkit._kernels.samplers.Sampler`: ``QUERY_FREE``, ``EXACT_LOGQ``, ``IS_DISTRIBUTION``, ...) say
what every object it builds needs or offers; everything else is derived from them (the models ask
:func:`loss_class` what a loss's output table holds, never its name), and :func:`check_pairing` is the only
place that accepts or refuses a pairing.  Tests iterate over these
registries, so an entry added here is tested without a new test file.

Adding a loss or a sampler takes its kernel class (a ``.pyx`` in ``embkit/_kernels/``, found by the build)
and one :func:`register_loss` / :func:`register_sampler` line in this module.
"""
import inspect
import math
import numbers
from dataclasses import dataclass
from typing import Callable

import numpy as np

from embkit._kernels import boltzmann as _boltzmann
from embkit._kernels import kernel_sampler as _kernel_sampler
from embkit._kernels import losses as _losses
from embkit._kernels import lsh as _lsh
from embkit._kernels import samplers as _samplers
from embkit.core.checks import unknown_names

__all__ = ["LOSSES", "SAMPLERS", "Entry", "register_loss", "register_sampler", "loss_class", "most_frequent",
           "uses_sampler", "make_loss", "make_sampler", "check_pairing", "build_objective"]


@dataclass(frozen=True)
class Entry:
    """A registered loss or sampler.

    Attributes
    ----------
    name : str
    kernel : type
        The kernel class; its capability constants describe every object ``build`` returns.
    build : callable
        ``build(counts=..., n_classes=..., **params)`` -> kernel object; :meth:`check_params` refuses the
        parameters it does not take.
    """

    name: str
    kernel: type
    build: Callable

    @property
    def params(self):
        """The names of the parameters ``build`` takes besides ``counts`` and ``n_classes``."""
        return tuple(name for name, p in inspect.signature(self.build).parameters.items()
                     if name not in ("counts", "n_classes") and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL))

    def check_params(self, params):
        """TypeError naming the parameters of ``params`` that ``build`` does not take, each with the nearest
        valid name, and listing the valid ones."""
        unknown = sorted(set(params) - set(self.params))
        if unknown:
            valid = ("its parameters: %s" % ", ".join(self.params)) if self.params else "it takes no parameters"
            raise TypeError("%s got unknown parameters: %s; %s" % (self.name, unknown_names(unknown, self.params),
                                                                  valid))

    @property
    def doc(self):
        """First line of the builder's (or the kernel class's) docstring."""
        text = self.build.__doc__ or self.kernel.__doc__ or ""
        return text.strip().splitlines()[0] if text.strip() else ""


#: loss name -> :class:`Entry`
LOSSES = {}
#: sampler name -> :class:`Entry`
SAMPLERS = {}


def _plain(cls):
    """A builder that takes no parameters."""
    def build(counts=None, n_classes=None):
        return cls()
    build.__doc__ = cls.__doc__
    return build


def register_loss(name, kernel, build=None):
    """Register the loss ``name`` of kernel class ``kernel`` (built without parameters unless ``build``)."""
    LOSSES[name] = Entry(name, kernel, build or _plain(kernel))


def register_sampler(name, kernel, build):
    """Register the sampler ``name``: ``build(counts=..., n_classes=..., **params)`` returns a ``kernel``."""
    SAMPLERS[name] = Entry(name, kernel, build)


# ------------------------------------------------------------------------------------------ losses
def _sampled_softmax(counts=None, n_classes=None, remove_accidental_hits=True):
    """Softmax over target + negatives with the logQ correction, accidental hits removed (optional)."""
    return _losses.SampledSoftmax(remove_accidental_hits=remove_accidental_hits)


def _tree_loss(name, kernel, counts):
    if counts is None:
        raise ValueError("the %s loss needs the class counts to build its Huffman tree" % name)
    return kernel(counts)


def _hs(counts=None, n_classes=None):
    """Hierarchical softmax on a Huffman tree of the class counts."""
    return _tree_loss("hs", _losses.HierarchicalSoftmax, counts)


def _hs_sgns(counts=None, n_classes=None):
    """Hierarchical softmax and negative sampling together (gensim's hs=1 with negative > 0)."""
    return _tree_loss("hs_sgns", _losses.HsNegative, counts)


register_loss("sgns", _losses.SGNS)
register_loss("nce", _losses.NCE)
register_loss("sampled_softmax", _losses.SampledSoftmax, _sampled_softmax)
register_loss("relaxed_softmax", _losses.RelaxedSoftmax)
register_loss("full_softmax", _losses.FullSoftmax)
register_loss("hs", _losses.HierarchicalSoftmax, _hs)
register_loss("hs_sgns", _losses.HsNegative, _hs_sgns)


# ------------------------------------------------------------------------------------------ samplers
def _unigram(counts=None, n_classes=None, ns_exponent=0.75):
    """Class counts raised to ``ns_exponent`` (0.75 as word2vec, 1 popularity, 0 uniform), alias table."""
    if counts is None:
        raise ValueError("the unigram sampler needs the class counts")
    counts = np.asarray(counts, dtype=np.float64)
    if counts.size and not np.any(counts > 0):
        raise ValueError("unigram: every class count is zero: there is no distribution to draw from")
    with np.errstate(over="ignore"):
        if counts.size and not np.isfinite(np.power(counts.max(), ns_exponent)):
            raise ValueError("unigram: ns_exponent=%r raises the largest count (%d) beyond a float"
                             % (ns_exponent, counts.max()))
    return _samplers.unigram(counts, ns_exponent)


def _uniform(counts=None, n_classes=None):
    """Uniform over the classes."""
    return _samplers.uniform(n_classes)


def _log_uniform(counts=None, n_classes=None):
    """Log-uniform (Zipfian) over ids sorted by decreasing frequency."""
    return _samplers.log_uniform(n_classes)


def _boltzmann_sampler(counts=None, n_classes=None, T=1.0, degeneracy="uniform", alpha=None, method="exact",
               mh_steps=None, burn_in=None):
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


def _softmax_exact(counts=None, n_classes=None):
    """The model's full softmax over the classes, ``Q(j) ∝ exp(<h, W_out[j]>)``, drawn exactly.

    Boltzmann sampling with ``T = 1`` and uniform ``D`` (``O(n d)`` per call); the "Exp" baseline of Rawat et
    al. 2019.  Takes no parameters.
    """
    return _boltzmann.ExactBoltzmann(n_classes, 1.0)


def _topk(counts=None, n_classes=None):
    """The ``negative`` highest-scoring wrong classes for each example (hard negatives).

    Deterministic, so only losses that do not correct by ``log Q`` accept it (sgns, relaxed_softmax).  Takes
    no parameters.
    """
    return _boltzmann.TopK(n_classes)


def _kernel(counts=None, n_classes=None, kernel="rff", D=None, nu=None, alpha=None, bucket=16, seed=1):
    """Kernel-based sampling through a sum tree: RF-softmax or Quadratic-softmax.

    ``kernel='rff'`` (RF-softmax) is covered by US patent 12,205,005; ``kernel='quadratic'`` is the quadratic
    kernel baseline.  See :class:`~embkit._kernels.kernel_sampler.KernelSampler`.
    """
    return _kernel_sampler.KernelSampler(n_classes, kernel=kernel, D=D, nu=nu, alpha=alpha, bucket=bucket,
                                         seed=seed)


def _lsh_sampler(counts=None, n_classes=None, family="simhash", K=None, L=None, query="label", bin_size=8,
                 rebuild_initial=0.01, rebuild_decay=1.5, seed=1):
    """LSH negative sampling (Daghaghi et al. 2021); see :class:`~embkit._kernels.lsh.LSHSampler`."""
    return _lsh.LSHSampler(n_classes, family=family, K=K, L=L, query=query, bin_size=bin_size,
                           rebuild_initial=rebuild_initial, rebuild_decay=rebuild_decay, seed=seed)


register_sampler("unigram", _samplers.AliasSampler, _unigram)
register_sampler("uniform", _samplers.AliasSampler, _uniform)
register_sampler("log_uniform", _samplers.AliasSampler, _log_uniform)
register_sampler("boltzmann", _boltzmann.Boltzmann, _boltzmann_sampler)
register_sampler("softmax_exact", _boltzmann.ExactBoltzmann, _softmax_exact)
register_sampler("topk", _boltzmann.TopK, _topk)
register_sampler("kernel", _kernel_sampler.KernelSampler, _kernel)
register_sampler("lsh", _lsh.LSHSampler, _lsh_sampler)


# ------------------------------------------------------------------------------------------ lookups
def _entry(table, kind, name):
    try:
        return table[name]
    except (KeyError, TypeError):
        plural = "losses" if kind == "loss" else kind + "s"
        raise ValueError("unknown %s %r; valid %s: %s" % (kind, name, plural, ", ".join(sorted(table)))) from None


def most_frequent(counts, n):
    """Ids of the ``n`` classes with the highest ``counts`` (ties: lower id first), most frequent first."""
    counts = np.asarray(counts)
    return np.argsort(-counts, kind="stable")[:max(0, int(n))].astype(np.int32)


def loss_class(name):
    """The kernel class of the loss registered as ``name``: its capability constants (``Loss.CLASS_ROWS``,
    ``TREE_ROWS``, ...) say what the loss needs and what its output table holds."""
    return _entry(LOSSES, "loss", name).kernel


def uses_sampler(loss):
    """Whether the loss ``loss`` (a name or a built loss) draws negatives from a sampler."""
    if isinstance(loss, str):
        return _entry(LOSSES, "loss", loss).kernel.USES_NEGATIVES
    return bool(loss.uses_negatives)


def make_loss(name, counts=None, n_classes=None, **params):
    """Build the loss registered as ``name``."""
    entry = _entry(LOSSES, "loss", name)
    entry.check_params(params)
    return entry.build(counts=counts, n_classes=n_classes, **params)


def make_sampler(name, counts, n_classes, **params):
    """Build the sampler registered as ``name`` over ``n_classes`` classes with popularity ``counts``."""
    entry = _entry(SAMPLERS, "sampler", name)
    entry.check_params(params)
    return entry.build(counts=counts, n_classes=n_classes, **params)


def _caps(obj, table, kind):
    """``(name, capability source)`` of a registry name (its kernel class) or of a built object."""
    if obj is None or not isinstance(obj, str):
        return (None if obj is None else type(obj).__name__), obj
    return obj, _entry(table, kind, obj).kernel


def check_pairing(loss, sampler, negative=None, n_classes=None):
    """Accept or refuse a loss with a sampler: ValueError saying why, else None.

    ``loss`` and ``sampler`` are registry names (checked from their kernel classes' capabilities, before any
    data is read) or built objects (checked from their own flags, with ``n_classes`` known).  ``sampler`` is
    None when none is given; ``negative`` is the number of negatives per example.
    """
    loss_name, loss_caps = _caps(loss, LOSSES, "loss")
    sampler_name, sampler_caps = _caps(sampler, SAMPLERS, "sampler")
    by_name = isinstance(loss, str)
    uses_negatives = loss_caps.USES_NEGATIVES if by_name else loss_caps.uses_negatives
    if not uses_negatives:
        if sampler is not None:
            raise ValueError("the %s loss draws no negatives, so sampler=%r does not apply; leave sampler unset"
                             % (loss_name, sampler_name))
        return
    _losses.require_sampler(loss_name, True, sampler is not None)
    if negative is not None and negative < 1:
        raise ValueError("negative must be >= 1 for the %s loss (it draws negatives), got %d; losses without "
                         "negatives: %s" % (loss_name, negative,
                                            ", ".join(sorted(n for n in LOSSES if not uses_sampler(n)))))
    is_distribution = (sampler_caps.IS_DISTRIBUTION if isinstance(sampler, str)
                       else sampler_caps.is_distribution)
    if negative is not None and n_classes is not None and negative > n_classes and not is_distribution:
        # random samplers draw with replacement; a deterministic choice has only n_classes candidates
        raise ValueError("negative=%d exceeds the number of classes (%d), which the %s sampler picks without "
                         "repetition" % (negative, n_classes, sampler_name))
    query_free = sampler_caps.QUERY_FREE if isinstance(sampler, str) else sampler_caps.query_free
    if loss_caps.NEEDS_QUERY_FREE and not query_free:
        raise ValueError("the %s loss stacks two output tables, which the %s sampler cannot read; use a sampler "
                         "that reads none (%s)" % (loss_name, sampler_name,
                                                   ", ".join(sorted(n for n, e in SAMPLERS.items()
                                                                    if e.kernel.QUERY_FREE))))
    needs_logq = loss_caps.NEEDS_LOGQ if by_name else loss_caps.needs_logq
    if needs_logq and not is_distribution:
        raise ValueError("the %s loss corrects by the sampler's log-probabilities, but the %s sampler picks "
                         "negatives deterministically and has none; use sgns or relaxed_softmax with it"
                         % (loss_name, sampler_name))


def build_objective(loss, sampler, counts, n_classes, negative, loss_params=None, sampler_params=None,
                    W_out=None):
    """Build a loss and its sampler by name, check that they pair, and bind an adaptive sampler.

    Parameters
    ----------
    loss : str
        Registry name of the loss.
    sampler : str or None
        Registry name of the sampler (None for a loss that draws no negatives).
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
    check_pairing(loss, sampler, negative, n_classes)
    built = make_loss(loss, counts=counts, n_classes=n_classes, **(loss_params or {}))
    if sampler is None:
        return built, None
    made = make_sampler(sampler, counts=counts, n_classes=n_classes, **(sampler_params or {}))
    check_pairing(built, made, negative, n_classes)
    if not made.query_free and W_out is not None:
        made.bind(W_out)
    return built, made
