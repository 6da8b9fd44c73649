"""Running a function over items on threads: the pattern of the passes whose work releases the GIL (NumPy
and SciPy products, the kernels) and whose items are independent (blocks of rows or of text, ensemble
members).
"""
import itertools
import os
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor, wait

__all__ = ["map_on_threads", "ordered_map", "helped_ordered_map", "worker_map", "map_with_helpers",
           "running_threads"]

#: whether the calling thread of :func:`worker_map` is one of its workers (:func:`helped_ordered_map`); else
#: ``workers`` threads compute beside it while it waits (:func:`ordered_map`): a thread more than the cores
#: asked for, whose own use of the results then competes with them (two workers on two cores: the scan of
#: ``build_vocab`` 1.6x one worker against 1.4x; BENCHMARKS.md)
CALLER_WORKS = True


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


def helped_ordered_map(fn, items, threads, ahead=2):
    """:func:`ordered_map` whose calling thread takes items too: while the next result in order is not ready,
    the caller computes the next item no thread has taken instead of waiting, so ``threads`` helpers and the
    caller keep ``threads + 1`` cores busy (:func:`ordered_map` with ``threads + 1`` threads leaves its caller
    beside them, a thread more than the cores, whose own use of the results then competes with them for a
    core).  Items are taken in order, at most ``ahead`` a thread beyond the caller's next; an exception of
    ``items`` or of ``fn`` is raised in the caller at its place in the order, after the helpers have stopped.
    """
    if threads < 1:
        yield from map(fn, items)
        return
    source = iter(items)
    cond = threading.Condition()
    results = {}                    # index -> (value, exception)
    state = {"taken": 0, "head": 0, "end": None, "stop": False}
    window = ahead * (threads + 1)

    def take():
        """The next ``(index, item)`` to compute, or None (called holding ``cond``)."""
        if state["stop"] or state["end"] is not None or state["taken"] >= state["head"] + window:
            return None
        index = state["taken"]
        try:
            item = next(source)
        except StopIteration:
            state["end"] = index
            cond.notify_all()
            return None
        except BaseException as exc:    # raised in the caller at this item's place
            results[index] = (None, exc)
            state["end"] = index + 1
            cond.notify_all()
            return None
        state["taken"] = index + 1
        return index, item

    def compute(index, item):
        try:
            outcome = (fn(item), None)
        except BaseException as exc:
            outcome = (None, exc)
        with cond:
            results[index] = outcome
            cond.notify_all()

    def helper():
        while True:
            with cond:
                got = take()
                while got is None:
                    if state["stop"] or state["end"] is not None:
                        return
                    cond.wait()
                    got = take()
            compute(*got)

    with ThreadPoolExecutor(threads, thread_name_prefix="embkit-map") as pool:
        helpers = [pool.submit(helper) for _ in range(threads)]
        try:
            while True:
                with cond:
                    head = state["head"]
                    got = None
                    while head not in results:
                        got = take()
                        if got is not None or head in results:     # taking may have met the items' error
                            break
                        if state["end"] is not None and head >= state["end"]:
                            return
                        cond.wait()
                if got is not None:
                    compute(*got)
                    continue
                with cond:
                    value, exc = results.pop(head)
                    state["head"] = head + 1
                    cond.notify_all()
                if exc is not None:
                    raise exc
                yield value
        finally:
            with cond:
                state["stop"] = True
                cond.notify_all()
            wait(helpers)


def worker_map(fn, items, workers, ahead=2):
    """``fn(item)`` for every item of ``items``, yielded in order, on ``workers`` threads counting the
    caller's (:data:`CALLER_WORKS`); at most ``ahead`` items a thread are taken ahead of the caller."""
    if CALLER_WORKS:
        return helped_ordered_map(fn, items, workers - 1, ahead)
    return ordered_map(fn, items, workers if workers > 1 else 0, ahead)


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


def running_threads(workers):
    """Threads of ``workers`` that run at once: no more than the cores this process may use (its CPU affinity
    where the system tells it)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(int(workers), cores))
