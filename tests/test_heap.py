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


def glibc():
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return False
    return hasattr(libc, "mallopt") and hasattr(libc, "gnu_get_libc_version")


pytestmark = pytest.mark.skipif(not glibc(), reason="glibc's malloc only")

FAULTS = textwrap.dedent("""
    import resource
    import numpy as np
    from embkit.core.heap import kept_buffers

    def faults():
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(200):
            buf = np.empty(1 << 20, dtype=np.uint8)
            buf[::4096] = 1          # touch every page
            del buf
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

    first, second = kept_buffers(), kept_buffers()
    out = [faults()]                  # no holder
    first.enter()
    out.append(faults())              # one
    with second:
        first.leave()
        first.leave()                 # a second leave is nothing
        out.append(faults())          # still one
    out.append(faults())              # none again
    print(*out)
""")
PAGES = 200 * (1 << 20) // 4096       # the pages of the buffers allocated in one count


def run_faults(**environment):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env.update(environment)
    out = subprocess.run([sys.executable, "-c", FAULTS], env=env, capture_output=True, text=True, check=True)
    return [int(x) for x in out.stdout.split()]


def test_big_buffers_stay_in_the_heap_while_held_where_the_environment_fixed_the_thresholds():
    outside, held, still_held, after = run_faults(MALLOC_TRIM_THRESHOLD_="65536")
    assert outside > PAGES // 2           # each 1 MiB buffer mapped and faulted in afresh
    assert held < PAGES // 10 and still_held < PAGES // 10      # the freed buffer is reused while one holds
    assert after > PAGES // 2             # the environment's thresholds are back once the last holder left


def test_nothing_changes_where_the_environment_left_the_thresholds_to_glibc():
    # glibc's own threshold grows to keep the buffer, and stays free to grow after the holders left
    assert max(run_faults()) < PAGES // 10
