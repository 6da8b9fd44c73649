"""Model files: embkit's own archive format, word2vec text/binary export, and atomic writes.

An embkit model file is a ZIP archive (stored, not compressed) holding ``config.json``, ``vocab.json``
and one ``.npy`` member per array.  Every write goes to a temporary file in the target directory that
replaces the target only once complete, so an interrupted save leaves the previous file intact.
"""
import contextlib
import io
import json
import os
import zipfile

import numpy as np

FORMAT = "embkit-model"
FORMAT_VERSION = 1


@contextlib.contextmanager
def atomic_path(path, overwrite=True):
    """Yield a temporary path next to ``path``; move it onto ``path`` when the block succeeds.

    The temporary name keeps ``path``'s suffix so libraries that pick compression by extension still
    do.  On any error (or interruption) the temporary file is removed and ``path`` is untouched.
    """
    path = os.fspath(path)
    if not overwrite and os.path.exists(path):
        raise FileExistsError("%r exists; pass overwrite=True (CLI: --overwrite) to replace it" % path)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise FileNotFoundError("directory %r does not exist" % directory)
    tmp = _create_temp(directory, os.path.basename(path))
    try:
        if os.path.exists(path):  # keep the permissions of the file being replaced
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        yield tmp
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _create_temp(directory, name):
    """Create an empty ``.tmp-<random>-<name>`` in ``directory``, mode 0666 minus the umask like open().

    (``tempfile.mkstemp`` would make it 0600, and the saved file would keep that.)
    """
    while True:
        tmp = os.path.join(directory, ".tmp-%s-%s" % (os.urandom(6).hex(), name))
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return tmp
        except FileExistsError:
            continue


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


def load_archive(path):
    """Read a file written by :func:`save_archive`; returns ``(config, words, arrays)``."""
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
        arrays = {}
        for name in config["arrays"]:
            with zf.open(name + ".npy") as member:
                arrays[name] = np.lib.format.read_array(io.BufferedReader(member), allow_pickle=False)
    return config, words, arrays


def load_model(path, cls, params, **overrides):
    """Read a model archive written for ``cls`` and construct ``cls`` from its saved ``params``.

    Returns ``(model, config, words, arrays)``; the caller sets the tables.  ValueError if the file holds
    another kind of model.
    """
    config, words, arrays = load_archive(path)
    if config.get("model") != cls.__name__:
        raise ValueError("%r holds a %s model, not %s" % (os.fspath(path), config.get("model"), cls.__name__))
    saved = config["params"]
    model = cls(**{k: saved[k] for k in params if k in saved}, **overrides)
    return model, config, words, arrays


def save_word2vec_format(kv, path, binary=False, overwrite=True):
    """Export KeyedVectors ``kv`` in word2vec text or binary format, atomically."""
    with atomic_path(path, overwrite) as tmp:
        kv.save_word2vec_format(tmp, binary=binary)


def load_vectors(path, binary=None):
    """Load word vectors from an embkit model, a word2vec text/binary file or a gensim KeyedVectors file.

    ``binary=None`` sniffs the word2vec flavour from the file.
    """
    from gensim.models import KeyedVectors

    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError("vectors file %r does not exist" % path)
    if zipfile.is_zipfile(path):
        from embkit.word2vec import Word2Vec
        return Word2Vec.load(path).wv
    with open(path, "rb") as fh:
        head = fh.read(2)
    if head[:1] == b"\x80":  # pickle protocol 2+: a gensim KeyedVectors.save file
        return KeyedVectors.load(path)
    if binary is None:
        binary = _sniff_binary(path)
    try:
        return KeyedVectors.load_word2vec_format(path, binary=binary)
    except (ValueError, UnicodeDecodeError, EOFError) as exc:
        raise ValueError("cannot read %r as word2vec %s format: %s"
                         % (path, "binary" if binary else "text", exc)) from exc


def _sniff_binary(path):
    """True if a word2vec file's first vector line is not plain text."""
    from smart_open import open as sopen
    with sopen(path, "rb") as fh:
        fh.readline()
        sample = fh.read(4096)
    if b"\x00" in sample:  # never in a text file; all-zero float32 vectors are valid UTF-8
        return True
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start < len(sample) - 4  # a truncated multibyte char at the end is still text
    return False
