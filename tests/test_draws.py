"""embkit.core.draws: a table drawn on threads is the one-thread draw, bit for bit, and leaves the same stream."""
import numpy as np
import pytest

from embkit.core import draws
from embkit.core.draws import uniform_rows


@pytest.mark.parametrize("n,dim,workers", [(1000, 100, 2), (1001, 3, 2), (2001, 101, 3), (7, 5, 16), (3, 1, 4)])
def test_uniform_rows_on_threads_are_the_one_call_draw(monkeypatch, n, dim, workers):
    monkeypatch.setattr(draws, "PARALLEL_VALUES", 0)
    one = np.random.default_rng(11)
    expected = one.random((n, dim), dtype=np.float32)
    many = np.random.default_rng(11)
    got = uniform_rows(many, n, dim, workers)
    assert got.dtype == np.float32 and got.shape == (n, dim)
    assert np.array_equal(got, expected)
    assert np.array_equal(many.random(5), one.random(5))      # the generator goes on where one call left it


def test_a_stream_holding_half_an_output_or_another_generator_draws_on_one_thread(monkeypatch):
    monkeypatch.setattr(draws, "PARALLEL_VALUES", 0)
    one, many = np.random.default_rng(3), np.random.default_rng(3)
    one.random(1, dtype=np.float32)
    many.random(1, dtype=np.float32)            # half of a 64-bit output is left in the generator
    assert np.array_equal(uniform_rows(many, 50, 7, 4), one.random((50, 7), dtype=np.float32))
    mt = np.random.Generator(np.random.MT19937(5))
    assert np.array_equal(uniform_rows(mt, 40, 9, 3),
                          np.random.Generator(np.random.MT19937(5)).random((40, 9), dtype=np.float32))


def test_a_model_draws_the_same_tables_on_any_number_of_workers(monkeypatch):
    from embkit import Word2Vec
    monkeypatch.setattr(draws, "PARALLEL_VALUES", 0)
    corpus = [["alpha", "beta", "gamma", "delta"] * 3] * 20
    tables = [Word2Vec(vector_size=12, min_count=1, workers=w, seed=4).build_vocab(corpus).W_in for w in (1, 3)]
    assert np.array_equal(tables[0], tables[1])
