"""Model files: embkit's own archive format.

An embkit model file is a ZIP archive (stored, not compressed) holding ``config.json``, ``vocab.json``
and one ``.npy`` member per array.  Every write goes to a temporary file in the target directory that
replaces the target only once complete, so an interrupted save leaves the previous file intact.
"""
import io
import json
import os
import zipfile

import numpy as np

from embkit.core.atomic import atomic_path

FORMAT = "embkit-model"
FORMAT_VERSION = 1

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
    """Write ``config`` (JSON-able dict), ``words`` (list of str) and named arrays to ``path`` atomically."""
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
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError("model file %r does not exist" % path)
    if not zipfile.is_zipfile(path):
        raise ValueError("%r is not an embkit model file (for word2vec files use load_vectors)" % path)
    with zipfile.ZipFile(path) as zf:
        try:
            config = json.loads(zf.read("config.json"))
            words = json.loads(zf.read("vocab.json"))
        except KeyError as exc:
            raise ValueError("%r is not an embkit model file: %s" % (path, exc)) from None
        if config.get("format") != FORMAT:
            raise ValueError("%r is not an embkit model file" % path)
        if config.get("format_version", 0) > FORMAT_VERSION:
            raise ValueError("%r was written by a newer embkit (format %s)" % (path, config["format_version"]))
        tables = {}
        for name in config["arrays"] if arrays else ():
            with zf.open(name + ".npy") as member:
                tables[name] = np.lib.format.read_array(io.BufferedReader(member), allow_pickle=False)
    return config, words, tables
