"""Shared kernel helpers (see common.pxd) and their Python-visible probes."""
from libc.stdint cimport uint64_t

emb_init_tables()

HAVE_OPENMP = bool(EMBKIT_HAVE_OPENMP)


cdef uint64_t mix_seed(uint64_t a, uint64_t b) noexcept nogil:
    """Combine two integers into a well-mixed 64-bit seed."""
    cdef uint64_t s = a * <uint64_t>0x9E3779B97F4A7C15 + b
    rng_next(&s)
    return rng_next(&s)


def py_sigmoid(float x):
    """Table sigmoid, exposed for tests."""
    return emb_sigmoid(x)


def py_log_sigmoid(float x):
    """Table log-sigmoid, exposed for tests."""
    return emb_log_sigmoid(x)


def py_dot(float[::1] a, float[::1] b):
    """Dispatched dot product, exposed for tests and micro-benchmarks."""
    return emb_dot(&a[0], &b[0], a.shape[0])
