"""Reproductions of the papers' headline results, run through ``python -m eval.repro.reproduce``."""
