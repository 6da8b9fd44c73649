"""Synthetic extreme-classification data with planted, learnable structure.

Every label ``l`` has a hidden *signature*: ``signature_size`` feature ids drawn from a pool of
features shared between labels, so that each signature feature belongs to about
``feature_sharing`` labels (one feature never names a label; a combination of them does).  A point
gets a few labels (``1 + Poisson(labels_per_point - 1)``, duplicates merged), drawn from a power law
over the labels (``p(rank r) ~ (r + 1) ** -zipf_exponent``, the label ids shuffled) or uniformly, as
in the near-uniform "Amazon-Uniform" variant of Daghaghi et al. (ICML 2021).  Its features are
``signature_draws`` draws from the signature of each of its labels plus ``Poisson(noise_features)``
background features from a log-uniform law over all features (``p(rank r) = log((r + 2) / (r + 1)) /
log(n_features + 1)``, Zipf(1)-like as word frequencies are; the feature ids shuffled); a feature
drawn twice counts twice.  A linear model ``score(x, l) = <sum of the embeddings of x's features, w_l>`` can
learn this: the features of a point point to the labels whose signatures contain many of them.

Generation is vectorised over chunks of points (memory grows with the output, not with the
number of labels beyond the ``n_labels x signature_size`` signature table) and deterministic for a
seed: chunk ``c`` of the training (test) points uses the random stream ``(seed, 1, c)``
(``(seed, 5, c)``), the signatures, the label order and the background order ``(seed, 2)``,
``(seed, 3)`` and ``(seed, 4)``; so the test set does not depend on ``n_train``.

Examples
--------
>>> from embkit.xc.synthetic import make_xc
>>> train, test = make_xc(n_labels=1000, n_features=5000, n_train=2000, n_test=500, seed=1)
>>> train.X.shape, test.Y.shape
((2000, 5000), (500, 1000))
"""
import numpy as np
import scipy.sparse as sp

from embkit.xc.data import XCData

__all__ = ["make_xc", "make_eurlex_like", "EURLEX_4K", "label_signatures", "label_probabilities", "LABEL_LAWS", "VALUE_KINDS"]

#: Label frequency laws.
LABEL_LAWS = ("zipf", "uniform")
#: How feature values are set: ``binary`` (1.0), ``count`` (times drawn), ``tfidf``
#: (``(1 + log count) * log((1 + N) / (1 + df))`` with the training document frequencies, rows
#: L2-normalised).
VALUE_KINDS = ("binary", "count", "tfidf")
_CHUNK = 1 << 15  # points generated at a time (fixed: the output must not depend on it)


#: EURLex-4K's sizes in the XC repository (bag-of-words version) and its mean labels per training point
EURLEX_4K = dict(n_labels=3993, n_features=5000, n_train=15539, n_test=3809, labels_per_point=5.31)
#: labels drawn per point so that 5.31 distinct ones remain after duplicates are merged (Zipf law, measured)
_EURLEX_DRAWS = 5.58


def make_eurlex_like(seed=0, **params):
    """A synthetic stand-in for EURLex-4K: its numbers of labels, features, train and test points, about 5.3
    distinct labels per point (Zipf label frequencies), about 225 distinct tf-idf features per point.

    ``params`` override the arguments of :func:`make_xc`.  Returns ``(train, test)``.
    """
    args = dict(EURLEX_4K, labels_per_point=_EURLEX_DRAWS, label_law="zipf", noise_features=320.0,
                values="tfidf", seed=seed)
    args.update(params)
    return make_xc(**args)


def make_xc(n_labels=10000, n_features=100000, n_train=50000, n_test=10000, *, label_law="zipf",
            zipf_exponent=1.0, labels_per_point=3.0, signature_size=16, signature_draws=6,
            noise_features=30.0, feature_sharing=16.0, values="binary", seed=0):
    """Generate a train and a test set of synthetic XC data.

    Parameters
    ----------
    n_labels, n_features : int
        Sizes of the label and feature spaces.
    n_train, n_test : int
        Points in each set (same distribution, independent draws).
    label_law : {"zipf", "uniform"}
        Label frequency law.
    zipf_exponent : float
        Exponent ``a`` of ``p(rank r) ~ (r + 1) ** -a`` (``label_law="zipf"``); 0 is uniform.
    labels_per_point : float
        Mean number of labels drawn per point (>= 1); a label drawn twice is kept once.
    signature_size : int
        Features in each label's signature.
    signature_draws : int
        Features drawn (with replacement) from the signature of each label of a point.
    noise_features : float
        Mean number of background features per point.
    feature_sharing : float
        Mean number of labels whose signatures contain a given signature feature (>= 1); the
        signatures use ``n_labels * signature_size / feature_sharing`` features (at most all).
    values : {"binary", "count", "tfidf"}
        Feature values (see :data:`VALUE_KINDS`).
    seed : int
        Seed; equal arguments give equal data.

    Returns
    -------
    (XCData, XCData)
        Train and test sets; ``source`` describes the parameters.

    Raises
    ------
    ValueError
        Naming the parameter that is out of range.
    """
    _check(n_labels=n_labels, n_features=n_features, n_train=n_train, n_test=n_test, label_law=label_law,
           zipf_exponent=zipf_exponent, labels_per_point=labels_per_point, signature_size=signature_size,
           signature_draws=signature_draws, noise_features=noise_features, feature_sharing=feature_sharing,
           values=values)
    signatures = label_signatures(n_labels, n_features, signature_size, feature_sharing, seed)
    label_cdf = np.cumsum(label_probabilities(n_labels, label_law, zipf_exponent, seed))
    background = _background_order(n_features, seed)
    sets = []
    for stream, n in ((1, n_train), (5, n_test)):
        chunks = [_chunk(np.random.default_rng([seed, stream, c]), min(_CHUNK, n - lo), signatures, label_cdf,
                         background, labels_per_point, signature_draws, noise_features)
                  for c, lo in enumerate(range(0, n, _CHUNK))]
        sets.append((_stack([x for x, _ in chunks], n_features), _stack([y for _, y in chunks], n_labels)))
    (X_train, Y_train), (X_test, Y_test) = sets
    if values == "binary":
        X_train.data[:] = 1.0
        X_test.data[:] = 1.0
    elif values == "tfidf":
        X_train, X_test = _tfidf(X_train, X_test)
    source = ("synthetic(n_labels=%d, n_features=%d, label_law=%r, zipf_exponent=%g, labels_per_point=%g, "
              "signature_size=%d, signature_draws=%d, noise_features=%g, feature_sharing=%g, values=%r, "
              "seed=%d)" % (n_labels, n_features, label_law, zipf_exponent, labels_per_point, signature_size,
                            signature_draws, noise_features, feature_sharing, values, seed))
    return XCData(X_train, Y_train, source=source + " train"), XCData(X_test, Y_test, source=source + " test")


def label_signatures(n_labels, n_features, signature_size=16, feature_sharing=16.0, seed=0):
    """The hidden signature of every label, int32 array of shape (n_labels, signature_size).

    Signature features come from a random pool of ``min(n_features, max(signature_size,
    n_labels * signature_size / feature_sharing))`` features, uniformly.
    """
    rng = np.random.default_rng([seed, 2])
    pool_size = int(min(n_features, max(signature_size, round(n_labels * signature_size / feature_sharing))))
    pool = rng.permutation(n_features)[:pool_size].astype(np.int32)
    return pool[rng.integers(0, pool_size, size=(n_labels, signature_size))]


def label_probabilities(n_labels, label_law="zipf", zipf_exponent=1.0, seed=0):
    """Probability of drawing each label: a shuffled power law or uniform (float64, sums to 1)."""
    if label_law == "uniform":
        return np.full(n_labels, 1.0 / n_labels)
    weights = np.arange(1, n_labels + 1, dtype=np.float64) ** -float(zipf_exponent)
    weights /= weights.sum()
    rng = np.random.default_rng([seed, 3])
    return weights[np.argsort(rng.permutation(n_labels))]  # label rng.permutation(n)[r] has rank r


def _background_order(n_features, seed):
    """Feature id of each background rank (a random permutation, int32)."""
    return np.random.default_rng([seed, 4]).permutation(n_features).astype(np.int32)


def _log_uniform(rng, n, size):
    """`size` ranks in [0, n) with ``p(r) = log((r + 2) / (r + 1)) / log(n + 1)`` (a Zipf(1)-like law)."""
    ranks = np.floor(np.exp(rng.random(size) * np.log(n + 1.0))).astype(np.int64) - 1
    return np.clip(ranks, 0, n - 1)


def _draw(rng, cdf, size):
    """`size` ids drawn from the distribution with cumulative probabilities `cdf`."""
    return np.minimum(np.searchsorted(cdf, rng.random(size) * cdf[-1], side="right"), len(cdf) - 1)


def _chunk(rng, n, signatures, label_cdf, background, labels_per_point, signature_draws, noise_features):
    """Features (counts) and labels of `n` points, as two CSR matrices."""
    n_labels, signature_size = signatures.shape
    n_features = len(background)
    k = 1 + rng.poisson(labels_per_point - 1.0, size=n) if labels_per_point > 1 else np.ones(n, dtype=np.int64)
    rows = np.repeat(np.arange(n, dtype=np.int64), k)
    key = np.unique(rows * n_labels + _draw(rng, label_cdf, len(rows)))
    rows, labels = np.divmod(key, n_labels)
    Y = sp.csr_matrix((np.ones(len(key), dtype=np.float32), (rows, labels)), shape=(n, n_labels))

    planted_rows = np.repeat(rows, signature_draws)
    slots = rng.integers(0, signature_size, size=len(planted_rows))
    planted = signatures[np.repeat(labels, signature_draws), slots]
    n_noise = rng.poisson(noise_features, size=n)
    noise_rows = np.repeat(np.arange(n, dtype=np.int64), n_noise)
    noise = background[_log_uniform(rng, n_features, len(noise_rows))]
    key, counts = np.unique(np.concatenate([planted_rows * n_features + planted, noise_rows * n_features + noise]),
                            return_counts=True)
    rows, features = np.divmod(key, n_features)
    X = sp.csr_matrix((counts.astype(np.float32), (rows, features)), shape=(n, n_features))
    return X, Y


def _stack(mats, n_cols):
    """Row-wise concatenation of CSR matrices with `n_cols` columns (float32, int32 indices)."""
    counts = np.concatenate([np.diff(m.indptr) for m in mats] or [np.zeros(0, dtype=np.int64)])
    indptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    index_dtype = np.int32 if indptr[-1] < 2 ** 31 else np.int64
    data = np.concatenate([m.data for m in mats] or [np.zeros(0, np.float32)]).astype(np.float32, copy=False)
    indices = np.concatenate([m.indices for m in mats] or [np.zeros(0, index_dtype)]).astype(index_dtype, copy=False)
    return sp.csr_matrix((data, indices, indptr.astype(index_dtype)), shape=(len(counts), n_cols))


def _tfidf(X_train, X_test):
    """``(1 + log count) * idf`` with the training document frequencies, rows L2-normalised."""
    df = np.bincount(X_train.indices, minlength=X_train.shape[1])
    idf = np.log((1.0 + X_train.shape[0]) / (1.0 + df)) + 1.0
    out = []
    for X in (X_train, X_test):
        X = X.copy()
        X.data = ((1.0 + np.log(X.data)) * idf[X.indices]).astype(np.float32)
        norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
        X.data /= np.repeat(np.maximum(norms, 1e-12), np.diff(X.indptr)).astype(np.float32)
        out.append(X)
    return tuple(out)


def _check(**params):
    """Range checks; each failure names its parameter."""
    def need(ok, name, what):
        if not ok:
            raise ValueError("%s must be %s, got %r" % (name, what, params[name]))

    for name in ("n_labels", "n_features"):
        need(isinstance(params[name], (int, np.integer)) and 1 <= params[name] < 2 ** 31, name,
             "an integer in [1, 2**31)")
    for name in ("n_train", "n_test"):
        need(isinstance(params[name], (int, np.integer)) and params[name] >= 0, name, "a non-negative integer")
    need(params["label_law"] in LABEL_LAWS, "label_law", "one of %s" % (LABEL_LAWS,))
    need(params["values"] in VALUE_KINDS, "values", "one of %s" % (VALUE_KINDS,))
    need(params["zipf_exponent"] >= 0, "zipf_exponent", ">= 0")
    need(params["labels_per_point"] >= 1, "labels_per_point", ">= 1")
    need(isinstance(params["signature_size"], (int, np.integer)) and params["signature_size"] >= 1,
         "signature_size", "a positive integer")
    need(isinstance(params["signature_draws"], (int, np.integer)) and params["signature_draws"] >= 1,
         "signature_draws", "a positive integer")
    need(params["noise_features"] >= 0, "noise_features", ">= 0")
    need(params["feature_sharing"] >= 1, "feature_sharing", ">= 1")
