"""gensim's line-per-sentence corpus iterables: ``LineSentence`` and ``PathLineSentences``.

Both are restartable iterables of token lists with gensim's semantics (one sentence per line, tokens split
on whitespace, long lines cut into pieces of ``max_sentence_length``), so scripts that build them keep
working after switching the import.  As a ``Word2Vec`` corpus, ``LineSentence`` over a path reads as
``corpus_file`` does.
"""
import itertools
import os

from embkit.core.read_errors import reading
from embkit.text.corpus import MAX_SENTENCE_LENGTH

__all__ = ["LineSentence", "PathLineSentences"]


def _pieces(lines, max_sentence_length, limit):
    """Sentences of ``lines`` (bytes or str): whitespace-split, cut into pieces, the first ``limit`` lines."""
    for line in itertools.islice(lines, limit):
        if isinstance(line, bytes):
            line = line.decode("utf-8", errors="replace")
        tokens = line.split()
        for start in range(0, len(tokens), max_sentence_length):
            yield tokens[start:start + max_sentence_length]


def _read_file(path, max_sentence_length, limit):
    from smart_open import open as sopen
    with reading(path, "corpus"):
        with sopen(path, "rb") as fh:
            yield from _pieces(fh, max_sentence_length, limit)


class LineSentence:
    """Sentences of a text file (or an open file object), one per line.

    Parameters
    ----------
    source : str, path-like or file object
        A path or URL (compressed files by extension, through smart-open), or an object with ``read`` and
        ``seek``, which is rewound before every pass.
    max_sentence_length : int
        Lines with more tokens are cut into pieces of this many (none dropped).
    limit : int or None
        Read only the first ``limit`` lines.
    """

    def __init__(self, source, max_sentence_length=MAX_SENTENCE_LENGTH, limit=None):
        if max_sentence_length < 1:
            raise ValueError("max_sentence_length must be >= 1, got %r" % (max_sentence_length,))
        if not hasattr(source, "read"):
            source = os.fspath(source)
        self.source = source
        self.max_sentence_length = max_sentence_length
        self.limit = limit

    def __repr__(self):
        return "LineSentence(%r)" % (self.source,)

    @property
    def corpus_path(self):
        """The path this reads whole (no ``limit``), which ``Word2Vec`` reads as ``corpus_file``; else None."""
        return self.source if isinstance(self.source, str) and self.limit is None else None

    def __iter__(self):
        if hasattr(self.source, "read"):
            self.source.seek(0)
            return _pieces(self.source, self.max_sentence_length, self.limit)
        return _read_file(self.source, self.max_sentence_length, self.limit)


class PathLineSentences:
    """Sentences of every file in a directory (sorted by name, subdirectories skipped), or of one file.

    Same reading as :class:`LineSentence` per file; ``limit`` applies to each file.
    """

    def __init__(self, source, max_sentence_length=MAX_SENTENCE_LENGTH, limit=None):
        source = os.fspath(source)
        if os.path.isfile(source):
            self.input_files = [source]
        elif os.path.isdir(source):
            self.input_files = sorted(os.path.join(source, name) for name in os.listdir(source)
                                      if os.path.isfile(os.path.join(source, name)))
            if not self.input_files:
                raise ValueError("directory %r holds no files" % source)
        else:
            raise ValueError("%r is neither a file nor a directory" % source)
        self.source = source
        self.max_sentence_length = max_sentence_length
        self.limit = limit

    def __repr__(self):
        return "PathLineSentences(%r)" % (self.source,)

    def __iter__(self):
        for path in self.input_files:
            yield from _read_file(path, self.max_sentence_length, self.limit)
