"""Feature weighting of the XC models: tf-idf weights learned on the training rows, per-row L2 normalisation.

The weights are a property of the model (saved with it), so the rows of any later call are weighted as the
training rows were.
"""
import numpy as np
import scipy.sparse as sp

__all__ = ["FEATURE_WEIGHTINGS", "feature_weights", "weight_rows"]

#: accepted values of ``ExtremeClassifier(feature_weighting=...)``
FEATURE_WEIGHTINGS = ("none", "tfidf")


def feature_weights(X, weighting):
    """Per-feature multipliers learned from the rows of ``X`` (csr), or None for ``weighting="none"``.

    ``"tfidf"``: the smoothed inverse document frequency ``1 + log((1 + n) / (1 + df))`` of every feature
    (``df``: rows where it is stored), so a feature seen in every row keeps weight 1 and rare ones weigh more.
    """
    if weighting == "none":
        return None
    if weighting != "tfidf":
        raise ValueError("feature_weighting must be one of %s, got %r" % (", ".join(FEATURE_WEIGHTINGS), weighting))
    n = X.shape[0]
    df = np.bincount(X.indices, minlength=X.shape[1])
    return (1.0 + np.log((1.0 + n) / (1.0 + df))).astype(np.float32)


def weight_rows(X, weights, normalize_rows):
    """``X`` (csr float32) with its columns multiplied by ``weights`` (None: unchanged) and, with
    ``normalize_rows``, every row scaled to unit L2 norm (empty rows stay empty).  Returns a new matrix
    when anything changes."""
    if weights is None and not normalize_rows:
        return X
    X = sp.csr_matrix(X, dtype=np.float32, copy=True)
    if weights is not None:
        X.data *= weights[X.indices]
    if normalize_rows and X.nnz:
        rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
        norms = np.sqrt(np.bincount(rows, weights=X.data.astype(np.float64) ** 2, minlength=X.shape[0]))
        norms[norms == 0] = 1.0
        X.data /= norms[rows].astype(np.float32)
    return X
