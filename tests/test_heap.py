"""The C heap under a heavy phase (embkit.core.heap): where the environment fixed glibc's thresholds, as a
Dask nanny does, big buffers freed inside :class:`kept_buffers` stay in the heap for the next allocation
(counted here as the page faults of allocating and freeing a big buffer over and over), and the environment's
thresholds come back when the last holder leaves."""
import ctypes
import os
import subprocess
import sys
import textwrap

import pytest

from embkit.core import heap


def glibc():
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return False
    return hasattr(libc, "mallopt") and hasattr(libc, "gnu_get_libc_version")


pytestmark = pytest.mark.skipif(not glibc(), reason="glibc's malloc only")

FAULTS = textwrap.dedent("""
    import resource, sys
    import numpy as np
    from embkit.core.heap import kept_buffers

    def faults(hold):
        holder = kept_buffers()
        if hold:
            holder.enter()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(200):
            buf = np.empty(1 << 20, dtype=np.uint8)
            buf[::4096] = 1          # touch every page
            del buf
        after = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        holder.leave()
        return after - before

    print(faults(False), faults(True), faults(False))
""")


def run_faults(env):
    out = subprocess.run([sys.executable, "-c", FAULTS], env=env, capture_output=True, text=True, check=True)
    return [int(x) for x in out.stdout.split()]


def test_big_buffers_stay_in_the_heap_while_held_where_the_environment_fixed_the_thresholds():
    env = dict(os.environ, MALLOC_TRIM_THRESHOLD_="65536")
    env.pop("MALLOC_MMAP_THRESHOLD_", None)
    outside, held, after = run_faults(env)
    pages = 200 * (1 << 20) // 4096
    assert outside > pages // 2           # each 1 MiB buffer mapped and faulted in afresh
    assert held < pages // 10             # the freed buffer is reused
    assert after > pages // 2             # the environment's thresholds are back once the holder left


def test_holders_are_counted_and_leaving_twice_is_harmless(monkeypatch):
    calls = []

    class Libc:
        def mallopt(self, option, value):
            calls.append((option, value))

        def malloc_trim(self, pad):
            calls.append(("trim", pad))

    monkeypatch.setattr(heap, "_libc", lambda: Libc())
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    first, second = heap.kept_buffers().enter(), heap.kept_buffers()
    with second:
        first.leave()
        first.leave()
        assert [c[0] for c in calls] == [heap._M_MMAP_THRESHOLD, heap._M_TRIM_THRESHOLD]   # set once, still held
    assert calls[2:] == [(heap._M_MMAP_THRESHOLD, 128 * 1024), (heap._M_TRIM_THRESHOLD, 65536), ("trim", 0)]


def test_nothing_changes_where_the_environment_left_the_thresholds_to_glibc(monkeypatch):
    calls = []
    monkeypatch.setattr(heap, "_libc", lambda: type("L", (), {"mallopt": lambda s, *a: calls.append(a),
                                                               "malloc_trim": lambda s, *a: calls.append(a)})())
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    with heap.kept_buffers():
        pass
    assert calls == []
