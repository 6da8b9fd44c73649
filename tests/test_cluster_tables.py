"""The tables a cluster run's replicas open with (embkit.cluster.tables): drawn on the workers where they are
what the model's seed draws, else sent.  The draw and its checks, in this process (runs on a real
LocalCluster that draw them, and fall back to sending them, are in test_cluster.py)."""
import numpy as np
import pytest

from embkit import Word2Vec
from embkit.cluster.tables import TablesNotDrawn, drawn_tables, recipe
from embkit.core.checkpoint import fingerprint

SMALL = dict(vector_size=16, min_count=1, window=3, epochs=2, sample=0, workers=1, seed=3)


def replica_model(model):
    spec = model.replica_spec()
    return spec[0].from_replica_spec(spec, None, None)


def test_a_fresh_models_tables_are_drawn_again_from_its_recipe(planted):
    _, sentences = planted
    model = Word2Vec(**SMALL).build_vocab(sentences)
    made = recipe(model)
    assert made is not None and made.shapes == (model.W_in.shape, model.W_out.shape)
    W_in, W_out = drawn_tables(replica_model(model), made)
    np.testing.assert_array_equal(W_in, model.W_in)
    np.testing.assert_array_equal(W_out, model.W_out)
    assert made.digests == (fingerprint(W_in), "zeros <f4")       # the fresh output table is zeros, not hashed


def test_changed_or_trained_tables_are_not_drawn(planted):
    _, sentences = planted
    model = Word2Vec(**SMALL).build_vocab(sentences)
    model.W_in[5, 3] += 1e-3            # the first row is still the draw's: the digest tells
    made = recipe(model)
    assert made is not None
    with pytest.raises(TablesNotDrawn):
        drawn_tables(replica_model(model), made)
    model.W_in[5, 3] -= 1e-3
    model.W_out[2, 1] = -0.0            # equal to 0.0, but not the draw's bits
    assert recipe(model).digests[1] != "zeros <f4"
    with pytest.raises(TablesNotDrawn):
        drawn_tables(replica_model(model), recipe(model))
    model.W_out[2, 1] = 0.0
    drawn_tables(replica_model(model), recipe(model))
    model.W_in[0, 0] += 1e-3            # the first row tells at once: nothing to draw
    assert recipe(model) is None
    trained = Word2Vec(sentences, **SMALL)
    assert recipe(trained) is None
    other_seed = Word2Vec(**dict(SMALL, seed=4)).build_vocab(sentences)
    with pytest.raises(TablesNotDrawn):
        drawn_tables(replica_model(other_seed), recipe(model.build_vocab(sentences)))


def test_a_model_draws_its_initial_tables_as_it_initialised_them(planted):
    _, sentences = planted
    model = Word2Vec(**SMALL).build_vocab(sentences)
    W_in, W_out = model.initial_tables(len(model.W_in), len(model.W_out))
    np.testing.assert_array_equal(W_in, model.W_in)
    np.testing.assert_array_equal(W_out, model.W_out)
