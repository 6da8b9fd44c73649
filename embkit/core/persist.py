"""Model files: embkit's own archive format.

An embkit model file is a ZIP archive (stored, not compressed) holding ``config.json``, ``vocab.json``
and one ``.npy`` member per array.  Every write goes to a temporary file in the target directory that
replaces the target only once complete, so an interrupted save leaves the previous file intact.
"""
import errno
import json
import os
import re
import zipfile

import numpy as np

from embkit.core import safe_zip
from embkit.core.atomic import atomic_path
from embkit.core.file_kinds import wrong_file

FORMAT = "embkit-model"
FORMAT_VERSION = 1
_ARRAY_NAME = re.compile(r"(?=.{1,128}\Z)[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*")

#: arrays besides the tables (a sampler's state, an optimizer's moments) may hold this many bytes per byte
#: of the tables ``W_in`` and ``W_out``
EXTRA_BYTES_PER_TABLE_BYTE = 4
#: model kind (an archive's ``"model"`` field) -> class; model classes register themselves here
MODEL_KINDS = {}


def register_model(cls):
    """Make archives of kind ``cls.__name__`` load as ``cls`` (see :func:`load`)."""
    MODEL_KINDS[cls.__name__] = cls
    return cls


def model_class(kind, path="<archive>"):
    """The class that loads archives of ``kind``; ValueError naming ``path`` for an unknown kind."""
    if kind not in MODEL_KINDS:
        import embkit  # the public API names every model kind; importing one defines and registers it
        if kind in getattr(embkit, "__all__", ()):
            getattr(embkit, kind)
    try:
        return MODEL_KINDS[kind]
    except KeyError:
        raise ValueError("%r holds a model of unknown kind %r (known: %s)"
                         % (os.fspath(path), kind, ", ".join(sorted(MODEL_KINDS)) or "none")) from None


def load(path):
    """Load any embkit model archive as the model class its ``"model"`` field names."""
    config, _, _ = load_archive(path, arrays=False)
    return model_class(config.get("model"), path).load(path)


def save_archive(path, config, words, arrays, overwrite=True):
    """Write ``config`` (JSON-able dict), ``words`` (list of str) and named arrays to ``path`` atomically.

    Float arrays with NaN or infinity (a diverged run) are refused before anything is written.
    """
    for name, arr in arrays.items():
        arr = np.asarray(arr)
        if arr.dtype.kind == "f" and not np.isfinite(arr).all():
            raise ValueError("refusing to save %r: %s holds NaN or infinity (did training diverge? lower alpha)"
                             % (os.fspath(path), name))
    with atomic_path(path, overwrite) as tmp:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
            meta = dict(config, format=FORMAT, format_version=FORMAT_VERSION, arrays=sorted(arrays))
            zf.writestr("config.json", json.dumps(meta, indent=1, sort_keys=True))
            zf.writestr("vocab.json", json.dumps(list(words), ensure_ascii=False))
            for name, arr in arrays.items():
                with zf.open(name + ".npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, np.ascontiguousarray(arr), allow_pickle=False)


def load_archive(path, arrays=True):
    """Read a file written by :func:`save_archive`; returns ``(config, words, arrays)``.

    With ``arrays=False`` only the configuration and the words are read (``arrays`` is then ``{}``).
    A damaged or hostile file (truncated, bit-flipped, unsafe member names, sizes it cannot hold,
    non-numeric or non-finite arrays, tables of inconsistent shapes) raises ValueError naming it;
    the checks are in :mod:`embkit.core.safe_zip` and :func:`_check_tables`.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError("model file %r does not exist" % path)
    if os.path.isdir(path) or not zipfile.is_zipfile(path):
        raise wrong_file(path, "an embkit model file")
    try:
        with zipfile.ZipFile(path) as zf:
            return _read_archive(zf, path, arrays)
    except safe_zip.ZIP_ERRORS as exc:
        raise ValueError("%r is damaged: %s" % (path, str(exc)[:200])) from None
    except OSError as exc:
        if exc.errno == errno.EINVAL:     # a seek to a negative offset: the archive's directory is damaged
            raise ValueError("%r is damaged: %s" % (path, exc)) from None
        raise OSError(exc.errno, "cannot read model file %r: %s" % (path, exc.strerror or exc)) from None


def _read_archive(zf, path, arrays):
    safe_zip.check_members(zf, path)
    names = set(zf.namelist())
    if "config.json" not in names or "vocab.json" not in names:
        raise ValueError("%r is not an embkit model file: no config.json or vocab.json" % path)
    config = safe_zip.read_json(zf, "config.json", path)
    if not isinstance(config, dict) or config.get("format") != FORMAT:
        raise ValueError("%r is not an embkit model file: its config.json is not an embkit model's" % path)
    version = config.get("format_version", 0)
    if not isinstance(version, int) or isinstance(version, bool):
        raise ValueError("%r: format_version %r is not an integer" % (path, version))
    if version > FORMAT_VERSION:
        raise ValueError("%r was written by a newer embkit (format %s)" % (path, version))
    listed = config.get("arrays")
    if not isinstance(listed, list) or not all(isinstance(n, str) and _ARRAY_NAME.fullmatch(n) for n in listed):
        raise ValueError("%r: config.json lists arrays %r, not a list of plain names" % (path, listed))
    if not isinstance(config.get("params", {}), dict):
        raise ValueError("%r: config.json has params that are not a mapping" % path)
    words = safe_zip.read_json(zf, "vocab.json", path)
    _check_words(path, words)
    if not arrays:
        return config, words, {}
    headers = {name: safe_zip.read_npy_header(zf, name + ".npy", path) for name in listed}
    kind = config.get("model")
    check_shapes(path, config, words, headers, named_rows=bool(words) or _kind_attribute(kind, "NAMED_ROWS", False),
                 table_shaped=_kind_attribute(kind, "TABLE_SHAPED_ARRAYS", {}),
                 bounded=_kind_attribute(kind, "BOUNDED_ARRAYS", {}))
    tables = {name: safe_zip.read_npy(zf, header, path) for name, header in headers.items()}
    _check_tables(path, config, words, tables)
    return config, words, tables


def _kind_attribute(kind, name, default):
    """The class attribute ``name`` of models of ``kind`` (``NAMED_ROWS``, ``TABLE_SHAPED_ARRAYS``, ...), or
    ``default`` for a kind no class registers (a generic archive)."""
    if not isinstance(kind, str):
        return default
    try:
        return getattr(model_class(kind), name, default)
    except ValueError:
        return default


def check_shapes(path, config, words, headers, named_rows=True, table_shaped=None, bounded=None):
    """Check the shapes the arrays declare against the vocabulary, the parameters and each other, before any
    array is inflated: ValueError naming ``path``.

    ``W_in`` and ``W_out`` are 2-d float tables of the width ``params["vector_size"]``; ``W_in`` has a row
    per word and ``counts`` a count per word (with ``named_rows``: the model names its input rows), ``W_out`` at most the rows a loss
    trains for the classes counted (two per class: a stacked table); an array saved beside a table
    (``tracker.W_in``, ...) has that table's shape; all other arrays together hold at most
    :data:`EXTRA_BYTES_PER_TABLE_BYTE` times the tables' bytes (plus 1 MiB), but for those of ``table_shaped``
    (name -> ``f(rows of W_in, rows of W_out)``), which must have exactly the shape ``f`` gives, and those of
    ``bounded`` (name -> ``f(rows of W_in, rows of W_out, state)``), which may hold at most the number of
    elements ``f`` gives for the sizes the tables and the saved state (``config["state"]``) declare.
    """
    for name in ("W_in", "W_out"):
        header = headers.get(name)
        if header is not None and (header.ndim != 2 or header.dtype.kind != "f"):
            raise ValueError("%r: table %s is %s of shape %s, not a 2-d float table"
                             % (path, name, header.dtype, header.shape))
    W_in, W_out = headers.get("W_in"), headers.get("W_out")
    if W_in is not None and W_out is not None and W_in.shape[1] != W_out.shape[1]:
        raise ValueError("%r: W_in has %d columns but W_out %d" % (path, W_in.shape[1], W_out.shape[1]))
    if W_in is not None:
        rows, width = W_in.shape
        size = config.get("params", {}).get("vector_size", width)
        if size != width:
            raise ValueError("%r: vector_size is %r but W_in has %d columns" % (path, size, width))
        if named_rows and len(words) != rows:
            raise ValueError("%r: %d words but W_in has %d rows" % (path, len(words), rows))
    for name in ("counts", "label_counts"):
        header = headers.get(name)
        if header is None:
            continue
        if header.ndim != 1 or header.dtype.kind not in "iu":
            raise ValueError("%r: %s must be a 1-d array of non-negative integers, got %s of shape %s"
                             % (path, name, header.dtype, header.shape))
        if name == "counts" and named_rows and header.shape[0] != len(words):
            raise ValueError("%r: %d counts for %d words" % (path, header.shape[0], len(words)))
        if W_out is not None and W_out.shape[0] > 2 * header.shape[0] + 1:
            raise ValueError("%r: W_out has %d rows for %d classes, more than any loss trains"
                             % (path, W_out.shape[0], header.shape[0]))
    tables = {h.name[:-len(".npy")]: h for h in (W_in, W_out) if h is not None}
    extra = 0
    for name, header in headers.items():
        if name in tables or name in ("counts", "label_counts"):
            continue
        copied = name.rpartition(".")[2]
        if "." in name and copied in tables:
            if header.shape != tables[copied].shape:
                raise ValueError("%r: %s has shape %s but %s %s" % (path, name, header.shape, copied,
                                                                    tables[copied].shape))
            continue
        if name in (table_shaped or {}) and W_in is not None and W_out is not None:
            shape = tuple(table_shaped[name](W_in.shape[0], W_out.shape[0]))
            if header.shape != shape:
                raise ValueError("%r: %s has shape %s, not %s" % (path, name, header.shape, shape))
            continue
        if name in (bounded or {}) and W_in is not None and W_out is not None:
            state = config.get("state") if isinstance(config.get("state"), dict) else {}
            most = int(bounded[name](W_in.shape[0], W_out.shape[0], state))
            size = int(np.prod(header.shape, dtype=np.int64)) if header.shape else 1
            if size > most:
                raise ValueError("%r: %s has %d elements, more than %d for the sizes declared"
                                 % (path, name, size, most))
            continue
        extra += header.nbytes
    limit = EXTRA_BYTES_PER_TABLE_BYTE * sum(h.nbytes for h in tables.values()) + (1 << 20)
    if extra > limit:
        raise ValueError("%r: its other arrays declare %d bytes, more than %d for tables of %d"
                         % (path, extra, limit, sum(h.nbytes for h in tables.values())))


def _check_words(path, words):
    """ValueError naming ``path`` and the word unless ``words`` is a list of distinct strings that UTF-8 can
    encode (a lone surrogate such as ``"\\ud800"`` would load, then fail when saved)."""
    if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
        raise ValueError("%r: vocab.json is not a list of words" % path)
    seen = {}
    for i, word in enumerate(words):
        try:
            word.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("%r: vocab.json word %d (%r) is not valid Unicode (a lone surrogate)"
                             % (path, i, word[:40])) from None
        first = seen.setdefault(word, i)
        if first != i:
            raise ValueError("%r: vocab.json word %d (%r) repeats word %d" % (path, i, word[:40], first))


def _check_tables(path, config, words, tables):
    """The values of the tables (their shapes are :func:`check_shapes`'): finite, W_in/W_out as float32,
    non-negative counts."""
    for name, arr in tables.items():
        if arr.dtype.kind == "f" and not np.isfinite(arr).all():
            raise ValueError("%r: array %s holds non-finite values (NaN or infinity)" % (path, name))
    for name in ("W_in", "W_out"):
        if name in tables:
            with np.errstate(over="ignore"):
                tables[name] = arr = np.ascontiguousarray(tables[name], dtype=np.float32)
            if not np.isfinite(arr).all():
                raise ValueError("%r: table %s overflows float32" % (path, name))
    for name in ("counts", "label_counts"):
        if name in tables:
            arr = tables[name]
            if arr.size and (arr.min() < 0 or (arr.dtype.kind == "u" and arr.max() > np.iinfo(np.int64).max)):
                raise ValueError("%r: %s must be a 1-d array of non-negative integers, got %s of shape %s"
                                 % (path, name, arr.dtype, arr.shape))
            tables[name] = arr.astype(np.int64, copy=False)
