"""The C heap (glibc's malloc) under the corpus readers and the kernels: giving freed pages back, and keeping
big buffers while a heavy phase runs in a process whose environment fixed the heap's thresholds.

glibc serves an allocation of ``M_MMAP_THRESHOLD`` bytes or more with its own ``mmap`` and unmaps it when it is
freed.  The threshold grows on its own (up to 32 MiB) as big buffers are freed, unless the environment sets
``MALLOC_TRIM_THRESHOLD_`` or ``MALLOC_MMAP_THRESHOLD_`` (a Dask nanny sets the first in its workers): then it
stays at 128 KiB, and a reader that splits block after block of text into fresh buffers maps, faults in and
unmaps each one, which doubles the time of counting a corpus on a Dask worker.  :func:`kept_buffers` raises
the thresholds to what glibc's own adjustment would reach while the heavy work runs, then puts the
environment's back and trims the heap.  Without glibc both are no-ops.
"""
import ctypes
import os
import threading

__all__ = ["release_free_memory", "kept_buffers", "heap_fixed_by_environment"]

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
#: glibc's defaults and the most its own adjustment reaches on 64-bit (the mmap threshold's maximum, and twice
#: it for trimming)
_DEFAULT_TRIM, _DEFAULT_MMAP = 128 * 1024, 128 * 1024
_KEPT_TRIM, _KEPT_MMAP = 64 << 20, 32 << 20

_ENVIRONMENT = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_")
_lock = threading.Lock()
_holders = 0


def _libc():
    try:
        libc = ctypes.CDLL(None)
        return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None
    except OSError:
        return None


def release_free_memory():
    """Hand the heap pages freed so far back to the operating system (``malloc_trim``).

    Python frees the memory of a pass's scratch (a word index, encoded blocks), but glibc keeps it mapped;
    trimming keeps the next phase's peak below the last one's high-water mark.  A no-op without glibc.
    """
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


def heap_fixed_by_environment():
    """Whether this process's environment fixed glibc's heap thresholds (so they do not grow by themselves)."""
    return any(name in os.environ for name in _ENVIRONMENT)


def _environment_value(name, default):
    try:
        return int(os.environ[name])
    except (KeyError, ValueError):
        return default


class kept_buffers:
    """Context manager (also entered and left by hand: :meth:`enter`, :meth:`leave`): while any holder is
    inside, big freed buffers stay in the heap for the next allocation, where the environment fixed the
    heap's thresholds; the last one out puts the environment's thresholds back and trims the heap.

    The thresholds are the process's: threads that enter at once share one setting (a count of holders).
    """

    def __init__(self):
        self.held = False

    def enter(self):
        global _holders
        if self.held:
            return self
        self.held = True
        with _lock:
            _holders += 1
            if _holders == 1 and heap_fixed_by_environment():
                libc = _libc()
                if libc is not None:
                    libc.mallopt(_M_MMAP_THRESHOLD, _KEPT_MMAP)
                    libc.mallopt(_M_TRIM_THRESHOLD, _KEPT_TRIM)
        return self

    def leave(self):
        global _holders
        if not self.held:
            return
        self.held = False
        with _lock:
            _holders -= 1
            if _holders == 0 and heap_fixed_by_environment():
                libc = _libc()
                if libc is not None:
                    libc.mallopt(_M_MMAP_THRESHOLD, _environment_value("MALLOC_MMAP_THRESHOLD_", _DEFAULT_MMAP))
                    libc.mallopt(_M_TRIM_THRESHOLD, _environment_value("MALLOC_TRIM_THRESHOLD_", _DEFAULT_TRIM))
                    libc.malloc_trim(0)

    def __enter__(self):
        return self.enter()

    def __exit__(self, *exc):
        self.leave()
