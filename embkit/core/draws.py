"""Random tables drawn on several threads, bit for bit as one thread draws them.

A fresh model's input table is a few million uniform draws; in a new process most of their time is the first
touch of the table's memory, which one thread pays alone.  NumPy's default bit generator (PCG64) can jump
ahead, so each thread fills its own rows from the point of the stream where one thread would have reached
them: the table, and the generator's state afterwards, are those of one ``rng.random`` call.
"""
import numpy as np

from embkit.core.threads import map_on_threads

__all__ = ["uniform_rows"]

#: values below which a table is drawn on one thread (starting threads costs more than it saves)
PARALLEL_VALUES = 1 << 20


def uniform_rows(rng, n, dim, workers=1):
    """``rng.random((n, dim), dtype=np.float32)``, drawn on up to ``workers`` threads.

    The values and the state ``rng`` is left in are those of the one call, for any ``workers``: each thread
    starts a copy of ``rng``'s PCG64 at its first row's place in the stream (a float32 takes half of one
    64-bit output).  Another bit generator, a stream holding half an output, or a small table: one thread.
    """
    out = np.empty((n, dim), dtype=np.float32)
    bits = rng.bit_generator
    state = bits.state
    if workers <= 1 or n * dim < PARALLEL_VALUES or type(bits) is not np.random.PCG64 or state["has_uint32"]:
        rng.random(dtype=np.float32, out=out)
        return out
    rows = -(-n // workers)
    rows += (rows * dim) % 2            # every block but the last holds whole 64-bit outputs

    def fill(start):
        part = np.random.PCG64()
        part.state = state
        part.advance(start * dim // 2)
        np.random.Generator(part).random(dtype=np.float32, out=out[start:start + rows])
        return part.state

    bits.state = map_on_threads(fill, range(0, n, rows), workers)[-1]
    return out
