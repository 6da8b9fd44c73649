"""Extreme classification: ``ExtremeClassifier``, the XC repository's file formats and named data sets,
and planted synthetic data."""
__all__ = ["ExtremeClassifier"]


def __getattr__(name):
    if name == "ExtremeClassifier":
        from embkit.xc.classifier import ExtremeClassifier
        return ExtremeClassifier
    raise AttributeError("module 'embkit.xc' has no attribute %r" % name)
