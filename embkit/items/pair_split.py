"""Random train / validation / test splits of pair counts, by pair occurrence.

Each stored count ``c`` of a (context, target) pair is thinned multinomially: its ``c`` occurrences
are dealt to the splits independently with probabilities ``fractions``, so each split's count of the
pair is ``Binomial(c, fraction)`` and the splits' counts add up to ``c`` exactly.  This splits the
*occurrences* 70/10/20 as the paper does (the same pair can sit in train and test, as a word pair seen
several times in a corpus), and every split keeps the full item index.
"""
import numpy as np

__all__ = ["split_pairs", "split_names"]


def split_names(n_splits):
    """Names of the splits in messages and sources: train/test, train/validation/test, or split 0, 1, ..."""
    if n_splits == 2:
        return ("train", "test")
    if n_splits == 3:
        return ("train", "validation", "test")
    return tuple("split %d" % k for k in range(n_splits))


def _check_fractions(fractions):
    fr = np.asarray(fractions, dtype=np.float64)
    if fr.ndim != 1 or len(fr) < 2:
        raise ValueError("fractions must be a sequence of at least 2 numbers, got %r" % (fractions,))
    if not np.all(np.isfinite(fr)) or np.any(fr < 0):
        raise ValueError("fractions must be finite and >= 0, got %r" % (fractions,))
    if abs(fr.sum() - 1.0) > 1e-6:
        raise ValueError("fractions must add up to 1, got %r (sum %g)" % (fractions, fr.sum()))
    return fr / fr.sum()


def split_pairs(counts, fractions=(0.7, 0.1, 0.2), seed=0):
    """Split pair counts into train / validation / test counts over the same item index.

    Parameters
    ----------
    counts : embkit.items.cooccurrence.PairCounts
        The counts to split.
    fractions : sequence of float
        Expected share of the pair occurrences in each split; they must add up to 1.  Two fractions
        give (train, test), three (train, validation, test).
    seed : int or None
        Seed of :func:`numpy.random.default_rng`; the same seed gives the same splits.

    Returns
    -------
    tuple of PairCounts
        One per fraction; their counts add up to ``counts`` entry by entry.

    Raises
    ------
    ValueError
        Bad fractions, no pairs to split, or a split that drew no occurrence at all (its name, fraction
        and the number of occurrences are given).
    """
    fr = _check_fractions(fractions)
    names = split_names(len(fr))
    total = counts.total
    if total == 0:
        raise ValueError("no pair occurrences to split in %r" % (counts,))
    rng = np.random.default_rng(seed)
    dealt = rng.multinomial(counts.matrix.data, fr)  # (stored pairs, splits)
    sizes = dealt.sum(axis=0)
    for name, fraction, size in zip(names, fr, sizes):
        if size == 0:
            why = ("its fraction is 0" if fraction == 0 else
                   "fraction %g of %d pair occurrences drew none; use more data or a larger fraction"
                   % (fraction, total))
            raise ValueError("the %s split is empty: %s" % (name, why))
    source = counts.source or "pairs"
    return tuple(counts.with_counts(dealt[:, k], source="%s [%s %.3g]" % (source, name, fr[k]))
                 for k, name in enumerate(names))
