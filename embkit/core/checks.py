"""Argument checks: one clear error naming the parameter and its allowed range.

A rule is a tuple ``(ok, text, kind)`` for :func:`check_param`.  Integer rules carry the limits of the C
types the kernels hold them in (``int``: :data:`INT32_MAX`; counts ``int64``; seeds ``uint64``), and the
sizes the kernels allocate per thread or per step (:data:`MAX_VECTOR_SIZE`, :data:`MAX_WINDOW`,
:data:`MAX_NEGATIVE`, :data:`MAX_WORKERS`) are bounded so that a product of two of them still fits, so
a value that passes here cannot overflow where it is used.
"""
import difflib
import math
import numbers

__all__ = ["INT32_MAX", "INT64_MAX", "MAX_VECTOR_SIZE", "MAX_WINDOW", "MAX_NEGATIVE", "MAX_WORKERS", "int_in",
           "POSITIVE_INT", "NON_NEGATIVE_INT", "COUNT", "SEED", "POSITIVE_REAL", "NON_NEGATIVE_REAL",
           "FINITE_REAL", "BOOL", "TEXT", "MAPPING", "PATHS", "optional", "list_of", "is_finite", "check_param",
           "check_flag", "check_mapping", "check_name", "check_fields", "nearest", "unknown_names"]

INT32_MAX = 2 ** 31 - 1
INT64_MAX = 2 ** 63 - 1
#: Dimensions of the tables (columns of ``W_in`` and ``W_out``).
MAX_VECTOR_SIZE = 1 << 20
#: Context window (the kernels hold ``2 * window`` context rows per centre word).
MAX_WINDOW = 1 << 20
#: Negatives per example (the kernels score ``negative + 1`` columns per step).
MAX_NEGATIVE = 1 << 20
#: Training threads.
MAX_WORKERS = 4096


def int_in(low, high):
    """The rule of an integer in ``[low, high]``."""
    return (lambda v: low <= v <= high, "an integer in [%d, %d]" % (low, high), numbers.Integral)


def is_finite(value):
    """Whether a real number is finite (False for an int too large for a float)."""
    try:
        return math.isfinite(value)
    except (OverflowError, TypeError, ValueError):
        return False


POSITIVE_INT = int_in(1, INT32_MAX)
NON_NEGATIVE_INT = int_in(0, INT32_MAX)
COUNT = int_in(0, INT64_MAX)
SEED = int_in(0, 2 ** 64 - 1)
POSITIVE_REAL = (lambda v: is_finite(v) and v > 0, "a finite number > 0")
NON_NEGATIVE_REAL = (lambda v: is_finite(v) and v >= 0, "a finite number >= 0")
FINITE_REAL = (is_finite, "a finite number")


def _matches(value, ok, kind=numbers.Real):
    if kind is bool:
        return isinstance(value, bool)
    return not isinstance(value, bool) and isinstance(value, kind) and ok(value)


def check_param(name, value, ok, rule, kind=numbers.Real):
    """Raise ValueError ``"<name> must be <rule>, got <value>"`` unless ``value`` is a ``kind`` with ``ok``."""
    if not _matches(value, ok, kind):
        raise ValueError("%s must be %s, got %s" % (name, rule, _shown(value)))


def optional(rule):
    """The rule ``rule``, or None."""
    ok, text, kind = (tuple(rule) + (numbers.Real,))[:3]
    return (lambda v: v is None or _matches(v, ok, kind), text + " or null", object)


def list_of(rule):
    """A list whose every item follows ``rule``."""
    ok, text, kind = (tuple(rule) + (numbers.Real,))[:3]
    return (lambda v: all(_matches(x, ok, kind) for x in v), "a list of items each %s" % text, list)


BOOL = (None, "true or false", bool)
TEXT = (lambda v: True, "a string", str)
MAPPING = (lambda v: all(isinstance(k, str) for k in v), "a mapping", dict)
PATHS = (lambda v: v is None or isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v)),
         "a path, a list of paths or null", object)


def check_fields(path, where, value, spec):
    """ValueError naming the file ``path`` and the field unless ``value`` (a field ``where`` of a JSON file)
    is a mapping whose fields follow ``spec``: ``{key: (rule, required)}`` (rules as for :func:`check_param`).
    Fields not in ``spec`` are left alone."""
    if not isinstance(value, dict):
        raise ValueError("%r: %s must be a mapping, got %s" % (str(path), where, _shown(value)))
    for key, (rule, required) in spec.items():
        if key not in value:
            if required:
                raise ValueError("%r: %s has no field %r" % (str(path), where, key))
            continue
        if not _matches(value[key], *rule[:1], *rule[2:]):
            raise ValueError("%r: %s.%s must be %s, got %s" % (str(path), where, key, rule[1], _shown(value[key])))


def check_flag(name, value):
    """``value`` as 0 or 1: a bool, or a number equal to 0 or 1; ValueError naming ``name`` otherwise."""
    if isinstance(value, numbers.Real) and is_finite(value) and value in (0, 1):
        return int(value)
    raise ValueError("%s must be 0 or 1 (or False / True), got %s" % (name, _shown(value)))


def check_mapping(name, value):
    """``value`` as a dict with string keys (None: empty); ValueError naming ``name`` otherwise."""
    if value is None:
        return {}
    if not hasattr(value, "keys") or not all(isinstance(k, str) for k in value.keys()):
        raise ValueError("%s must be a dict of parameter names to values, got %s" % (name, _shown(value)))
    return dict(value)


def check_name(name, value, known, optional=False):
    """ValueError naming ``name`` unless ``value`` is one of the strings ``known`` (or None if ``optional``)."""
    if optional and value is None:
        return
    if not isinstance(value, str) or value not in known:
        raise ValueError("%s must be one of %s, got %s" % (name, ", ".join(sorted(known)), _shown(value)))


def nearest(name, valid):
    """The name of ``valid`` nearest the misspelt ``name`` (difflib's similarity >= 0.6), or None."""
    found = difflib.get_close_matches(name, sorted(valid), n=1, cutoff=0.6)
    return found[0] if found else None


def unknown_names(unknown, valid):
    """The ``unknown`` names for an error message, each with the nearest of ``valid`` where one is near:
    ``"vectorsize (did you mean vector_size?), foo"``."""
    shown = []
    for name in unknown:
        near = nearest(name, valid) if isinstance(name, str) else None
        shown.append("%s (did you mean %s?)" % (name, near) if near else str(name))
    return ", ".join(shown)


def _shown(value):
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
