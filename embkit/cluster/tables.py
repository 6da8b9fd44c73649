"""The tables a run's replicas open with: sent by the client, or drawn on the workers.

A run's first replicas would receive the client's tables, which for a fresh model are what the model's seed
draws (:meth:`~embkit.core.base.EmbeddingModel.initial_tables`): random input rows and zero output rows, two
tables of the vocabulary's size for every worker.  Instead the client sends a :class:`TableRecipe` (the
tables' shapes and a digest of each, :func:`table_digest`) and each replica draws the tables itself and checks
the digests.  Where the draw differs (the client's tables were changed or trained since they were drawn, or a
worker's numpy draws another stream), the replica raises :class:`TablesNotDrawn` and the client sends its
tables.
"""
from typing import NamedTuple

import numpy as np

from embkit.core.checkpoint import fingerprint

__all__ = ["TableRecipe", "TablesNotDrawn", "recipe", "drawn_tables", "table_digest"]


class TablesNotDrawn(RuntimeError):
    """A replica's draw of the tables is not the client's (their digests differ): the client sends them."""


class TableRecipe(NamedTuple):
    """What a replica draws its first tables from: their ``shapes`` and the ``digests`` of the client's
    (:func:`table_digest`)."""
    shapes: tuple
    digests: tuple


def table_digest(table):
    """What tells two tables apart: ``"zeros <dtype>"`` for a table whose every bit is 0 (a fresh output table:
    checked bit for bit, without hashing its bytes), else its :func:`~embkit.core.checkpoint.fingerprint`."""
    bits = np.ascontiguousarray(table).view(np.uint8).ravel()
    if bits[:4096].any() or bits.any():         # a table of draws has a nonzero bit at once
        return fingerprint(table)
    return "zeros %s" % table.dtype.str


def recipe(model):
    """The :class:`TableRecipe` of ``model``'s tables, or None where they are not what its seed draws (the
    first input row shows it without drawing them all: a trained or resumed model's differs)."""
    W_in, W_out = model.W_in, model.W_out
    if W_in is None or W_out is None or len(W_in) == 0:
        return None
    first, _ = model.initial_tables(1, 0)
    if not np.array_equal(first[0], W_in[0]):
        return None
    return TableRecipe((W_in.shape, W_out.shape), (table_digest(W_in), table_digest(W_out)))


def drawn_tables(model, recipe):
    """``(W_in, W_out)`` drawn by ``model`` (a replica's) as ``recipe`` says; :class:`TablesNotDrawn` when they
    are not the client's."""
    (n_in, _), (n_out, _) = recipe.shapes
    tables = model.initial_tables(n_in, n_out)
    if tuple(t.shape for t in tables) != tuple(tuple(s) for s in recipe.shapes) or \
            tuple(table_digest(t) for t in tables) != tuple(recipe.digests):
        raise TablesNotDrawn("the tables drawn on this worker are not the client's")
    return tables
