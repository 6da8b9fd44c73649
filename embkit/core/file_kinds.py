"""What a file holds, told from its first bytes without running it, so that a loader given a file it does not
read names the format it got and the call that reads it.

The formats are embkit's model archives and checkpoints (ZIP files), gensim's pickles (whose class is read
from the pickle's opcodes, never by unpickling), word2vec vectors (a ``<count> <dimension>`` header, plain or
compressed), NumPy ``.npy`` arrays and directories.
"""
import io
import json
import os
import pickletools
import re
import zipfile
from collections import namedtuple

from embkit.core.binary_files import open_binary
from embkit.core.pickles import named_as_archive
from embkit.core.read_errors import DECOMPRESS_ERRORS

__all__ = ["FileKind", "identify", "wrong_file"]

#: ``name``: a short name (``"archive"``, ``"pickle"``, ``"word2vec"``, ``"npy"``, ``"zip"``, ``"directory"``,
#: ``"unknown"``); ``description``: what the file is, as a phrase; ``hint``: what to do with it (the call that
#: reads it), or None; ``model``: the model class an archive or pickle names, or None
FileKind = namedtuple("FileKind", "name description hint model")

_WORD2VEC_HEADER = re.compile(rb"\s*\d+[ \t]+\d+[ \t]*\r?\n")
#: pickle opcodes read before giving up on finding the class of the pickled object
_PICKLE_OPS = 64


def identify(path):
    """The :class:`FileKind` of ``path`` (an existing file or directory)."""
    path = os.fspath(path)
    if os.path.isdir(path):
        return _directory(path)
    if zipfile.is_zipfile(path):
        return _zip(path)
    try:
        with open_binary(path) as fh:
            head = fh.read(4096)
    except (OSError, ValueError) + DECOMPRESS_ERRORS:
        head = b""
    if head.startswith(b"\x80"):
        return _pickle(path)
    if head.startswith(b"\x93NUMPY"):
        return FileKind("npy", "a NumPy array file (.npy)", None, None)
    if _WORD2VEC_HEADER.match(head):
        return FileKind("word2vec", "a word2vec vectors file (words and vectors only)", "embkit.load_vectors reads it",
                        None)
    return FileKind("unknown", "a file of no format embkit knows", None, None)


def wrong_file(path, wanted):
    """A ValueError for a loader that reads ``wanted`` (a phrase: ``"an embkit model archive"``) given
    ``path``: it names what the file is and, where there is one, the call that reads it."""
    kind = identify(path)
    message = "%r is %s, not %s" % (os.fspath(path), kind.description, wanted)
    if kind.hint:
        message += ": %s" % kind.hint
    return ValueError(message)


def _directory(path):
    try:
        archives = [entry for entry in os.scandir(path) if entry.name.endswith(".embkit") and entry.is_file()]
    except OSError:
        archives = []
    if not archives:
        return FileKind("directory", "a directory", None, None)
    newest = max(archives, key=lambda entry: (entry.stat().st_mtime, entry.name))
    return FileKind("directory", "a directory of %d embkit archive%s" % (len(archives), "s"[:len(archives) > 1]),
                    "pass one of its files (the newest is %r)" % os.path.join(path, newest.name), None)


def _zip(path):
    try:
        with zipfile.ZipFile(path) as zf:
            with zf.open("config.json") as member:
                config = json.loads(member.read(1 << 20).decode("utf-8"))
        model = config.get("model") if config.get("format") == "embkit-model" else None
    except (KeyError, OSError, ValueError, AttributeError, zipfile.BadZipFile, RuntimeError, EOFError):
        model = None
    if not isinstance(model, str):
        return FileKind("zip", "a ZIP archive that is not an embkit model file", None, None)
    what = "checkpoint" if isinstance(config.get("checkpoint"), dict) else "model archive"
    return FileKind("archive", "an embkit %s %s" % (model, what), "%s.load reads it" % model, model)


def _pickle(path):
    cls = _pickled_class(path)
    name = cls.rpartition(".")[2] if cls else None
    description = "a pickle%s (as gensim's save writes; unpickling runs any code it holds)" \
        % (" of %s" % cls if cls else "")
    if named_as_archive(path):
        hint = "embkit never unpickles a file named as its archive (rename it, if you trust it)"
    elif name == "Word2Vec":
        hint = "Word2Vec.load reads it"
    elif name and name.endswith("KeyedVectors"):
        hint = "embkit.load_vectors reads it with allow_pickle=True"
    else:
        hint = None
    return FileKind("pickle", description, hint, name)


def _pickled_class(path):
    """The dotted name of the class a pickle's first global names (``gensim.models.word2vec.Word2Vec``), read
    from its opcodes without unpickling; None when the first opcodes name none."""
    try:
        with open(path, "rb") as fh:
            data = io.BytesIO(fh.read(1 << 16))
        strings = []
        for number, (op, arg, _) in enumerate(pickletools.genops(data)):
            if op.name == "GLOBAL":
                return str(arg).replace(" ", ".")
            if op.name == "STACK_GLOBAL" and len(strings) >= 2:
                return "%s.%s" % (strings[-2], strings[-1])
            if isinstance(arg, str):
                strings.append(arg)
            if number >= _PICKLE_OPS:
                break
    except Exception:  # noqa: BLE001 - a damaged or truncated pickle: its class is unknown
        return None
    return None
