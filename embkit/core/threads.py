"""Running a function over a few items on threads: the pattern of the passes whose work releases the GIL
(NumPy and SciPy products, the kernels) and whose items are independent (blocks of rows, ensemble members).
"""
from concurrent.futures import ThreadPoolExecutor

__all__ = ["map_on_threads"]


def map_on_threads(fn, items, workers):
    """``[fn(item) for item in items]``, on ``min(workers, len(items))`` threads (in the calling thread when
    that is one); the results in the items' order, the first exception raised after every call has ended."""
    items = list(items)
    threads = min(max(1, int(workers)), len(items))
    if threads <= 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(fn, items))
