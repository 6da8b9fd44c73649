"""Running a function over items on threads: the pattern of the passes whose work releases the GIL (NumPy
and SciPy products, the kernels) and whose items are independent (blocks of rows or of text, ensemble
members).
"""
import itertools
from collections import deque
from concurrent.futures import ThreadPoolExecutor, wait

__all__ = ["map_on_threads", "ordered_map", "map_with_helpers"]


def map_on_threads(fn, items, workers):
    """``[fn(item) for item in items]``, on ``min(workers, len(items))`` threads (in the calling thread when
    that is one); the results in the items' order, the first exception raised after every call has ended."""
    items = list(items)
    threads = min(max(1, int(workers)), len(items))
    if threads <= 1:
        return [fn(item) for item in items]
    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(fn, items))


def ordered_map(fn, items, threads, ahead=2):
    """``fn(item)`` for every item of the iterable ``items`` on ``threads`` threads besides the caller's (0: in
    the calling thread), yielded in the items' order; at most ``ahead`` items a thread are taken ahead of the
    caller, so memory stays bounded however many items there are."""
    if threads < 1:
        yield from map(fn, items)
        return
    with ThreadPoolExecutor(threads, thread_name_prefix="embkit-map") as pool:
        pending = deque()
        try:
            for item in items:
                pending.append(pool.submit(fn, item))
                if len(pending) > ahead * threads:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()


def map_with_helpers(fn, n, pool=None, helpers=0):
    """``[fn(i) for i in range(n)]``, computed by the calling thread and up to ``helpers`` tasks of ``pool``
    beside it, each taking the next ``i`` not yet taken: the caller works instead of waiting, and a helper
    that starts late (its pool busy with other callers' work) finds nothing left and returns.  The results
    are in order; the first exception is raised after every task has ended."""
    results = [None] * n
    taken = itertools.count()       # next() of a count is atomic: each i is taken once

    def drain():
        for i in iter(taken.__next__, None):
            if i >= n:
                return
            results[i] = fn(i)

    tasks = [pool.submit(drain) for _ in range(min(helpers, n - 1))] if pool is not None else []
    try:
        drain()
    finally:
        wait(tasks)
    for task in tasks:
        task.result()
    return results

