"""The thread helpers of embkit.core.threads: order of results, every item once, errors after every task."""
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from embkit.core import threads
from embkit.core.threads import helped_ordered_map, map_on_threads, map_with_helpers, ordered_map


@pytest.mark.parametrize("helpers", [0, 1, 3, 10])
def test_map_with_helpers_computes_every_item_once_in_order(helpers):
    calls = []
    lock = threading.Lock()

    def fn(i):
        with lock:
            calls.append(i)
        time.sleep(0.001 * (i % 3))
        return i * i

    with ThreadPoolExecutor(max(helpers, 1)) as pool:
        assert map_with_helpers(fn, 12, pool if helpers else None, helpers) == [i * i for i in range(12)]
    assert sorted(calls) == list(range(12))
    assert map_with_helpers(fn, 0) == []


def test_the_helpers_work_beside_the_caller():
    # item 0 waits until another item runs at the same time: it only ends if a helper takes item 1
    others = threading.Event()

    def fn(i):
        if i == 0:
            assert others.wait(5), "no helper ran beside the caller"
        else:
            others.set()
        return threading.get_ident()

    with ThreadPoolExecutor(2) as pool:
        idents = map_with_helpers(fn, 4, pool, 2)
    assert len(set(idents)) >= 2


def test_an_error_is_raised_after_every_task_has_ended():
    ended = []

    def fn(i):
        if i == 1:
            raise ValueError("item 1")
        time.sleep(0.02)
        ended.append(i)
        return i

    with ThreadPoolExecutor(3) as pool:
        with pytest.raises(ValueError, match="item 1"):
            map_with_helpers(fn, 6, pool, 3)
        running = len(ended)
        time.sleep(0.1)
        assert len(ended) == running       # nothing went on after the call returned


def test_map_on_threads_and_ordered_map_keep_the_items_order():
    assert map_on_threads(lambda v: -v, range(7), 3) == [-v for v in range(7)]
    assert list(ordered_map(lambda v: v + 1, iter(range(9)), 2)) == list(range(1, 10))
    assert list(ordered_map(lambda v: v + 1, iter(range(3)), 0)) == [1, 2, 3]


@pytest.mark.parametrize("threads", [0, 1, 3])
@pytest.mark.parametrize("n", [0, 1, 7, 60])
def test_helped_ordered_map_yields_every_item_once_in_order(threads, n):
    calls = []      # list.append is atomic

    def slow_triple(v):
        calls.append(v)
        time.sleep(0.0005 * (v % 4))
        return v * 3

    assert list(helped_ordered_map(slow_triple, iter(range(n)), threads)) == [v * 3 for v in range(n)]
    assert sorted(calls) == list(range(n))


def test_helped_ordered_map_computes_in_the_caller_and_stays_within_its_window():
    caller = threading.get_ident()
    where, taken, yielded = [], [0], [0]

    def items():
        for v in range(40):
            taken[0] += 1
            assert taken[0] - yielded[0] <= 2 * (1 + 1) + 1     # ahead 2 a thread, one helper and the caller
            yield v

    def fn(v):
        where.append(threading.get_ident())
        time.sleep(0.002)
        return v

    for v in helped_ordered_map(fn, items(), 1, ahead=2):
        yielded[0] += 1
    assert where.count(caller) > 0 and len(set(where)) == 2


@pytest.mark.parametrize("threads", [1, 2])
def test_helped_ordered_map_raises_an_error_at_its_place_after_the_helpers_stop(threads):
    started = []

    def fn(v):
        started.append(v)
        if v == 5:
            raise ValueError("item 5")
        time.sleep(0.001)
        return v

    out = []
    with pytest.raises(ValueError, match="item 5"):
        for v in helped_ordered_map(fn, iter(range(100)), threads):
            out.append(v)
    assert out == [0, 1, 2, 3, 4]
    running = len(started)
    time.sleep(0.05)
    assert len(started) == running
    assert not any(t.name.startswith("embkit-map") for t in threading.enumerate())

    def failing_items():
        yield from range(8)
        raise OSError("corpus.txt, line 9: unreadable")

    out = []
    with pytest.raises(OSError, match="line 9"):
        for v in helped_ordered_map(lambda v: v, failing_items(), threads):
            out.append(v)
    assert out == list(range(8))


@pytest.mark.parametrize("caller_works", [True, False])
@pytest.mark.parametrize("workers", [1, 2, 4])
def test_worker_map_keeps_the_order_whether_or_not_the_caller_works(monkeypatch, caller_works, workers):
    monkeypatch.setattr(threads, "CALLER_WORKS", caller_works)
    assert list(threads.worker_map(lambda v: -v, iter(range(30)), workers)) == [-v for v in range(30)]
