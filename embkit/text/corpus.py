"""Corpus readers: token streams from files, URLs, directories and in-memory iterables.

Files and URLs are read through smart-open (plain, .gz, .bz2, http(s), s3, ...) in blocks, so a text8-style
file that is one single line of 100M characters never sits in memory whole.  Each line is a sentence; a
sentence longer than ``max_sentence_length`` tokens is cut into consecutive pieces (no token is dropped).
Invalid UTF-8 is decoded with replacement characters and counted.
"""
import bz2
import gzip
import logging
import lzma
import os
import re
from dataclasses import dataclass, field

from embkit.core.read_errors import reading

logger = logging.getLogger(__name__)

BLOCK_CHARS = 1 << 18
MAX_SENTENCE_LENGTH = 10000
#: Longest run of characters without a blank read as one token; longer ones are an error (binary file?).
MAX_TOKEN_CHARS = 1 << 20
_LAST_BLANK = re.compile(r"\s\S*\Z")


@dataclass
class ReadStats:
    """What a pass over a corpus saw."""

    sentences: int = 0
    words: int = 0
    replaced_chars: int = 0
    files: list = field(default_factory=list)


def _is_url(path):
    return "://" in str(path)


def list_files(path):
    """Files of a corpus path: the path itself, or the sorted non-hidden files of a directory."""
    path = os.fspath(path)
    if _is_url(path):
        return [path]
    if os.path.isdir(path):
        names = sorted(n for n in os.listdir(path) if not n.startswith("."))
        files = [os.path.join(path, n) for n in names if os.path.isfile(os.path.join(path, n))]
        if not files:
            raise ValueError("corpus directory %r contains no files" % path)
        return files
    if not os.path.exists(path):
        raise FileNotFoundError("corpus file %r does not exist" % path)
    if not os.access(path, os.R_OK):
        raise PermissionError("corpus file %r is not readable" % path)
    return [path]


#: local files these read as smart-open would (it is imported only for the other compressions, and URLs)
_LOCAL_OPENERS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
_SMART_OPEN_ONLY = (".zst", ".lz4")


def _open_text(path):
    """The text of a corpus file, as smart-open opens it: UTF-8 with invalid bytes replaced, universal
    newlines, decompressed by extension."""
    ext = os.path.splitext(str(path))[1].lower()
    try:
        if not _is_url(path) and ext not in _SMART_OPEN_ONLY:
            return _LOCAL_OPENERS.get(ext, open)(path, "rt", encoding="utf-8", errors="replace")
        from smart_open import open as sopen
        return sopen(path, "r", encoding="utf-8", errors="replace")
    except (OSError, ValueError, EOFError) as exc:
        raise OSError("cannot open corpus %r: %s" % (path, exc)) from exc


class TextCorpus:
    """Sentences of whitespace-separated tokens from a file, URL or directory of files.

    Parameters
    ----------
    source : str or path-like
        File, directory (its files in sorted order) or URL understood by smart-open.
    max_sentence_length : int
        Longer lines are cut into pieces of this many tokens.
    """

    def __init__(self, source, max_sentence_length=MAX_SENTENCE_LENGTH):
        if max_sentence_length < 1:
            raise ValueError("max_sentence_length must be >= 1, got %r" % (max_sentence_length,))
        self.source = os.fspath(source)
        self.files = list_files(self.source)
        self.max_sentence_length = max_sentence_length
        self.stats = ReadStats()

    def __repr__(self):
        return "TextCorpus(%r)" % self.source

    def _open(self, path):
        """The text stream of one file (smart-open)."""
        return _open_text(path)

    def iter_blocks(self, block_chars=BLOCK_CHARS):
        """Yield ``(text, line_complete)`` pieces of about ``block_chars`` characters: whole lines, or a
        partial line when a line is very long.

        A piece never splits a token.  ``line_complete`` is False when the line continues in the next piece.
        A damaged compressed file, an I/O error or a token longer than :data:`MAX_TOKEN_CHARS` (not a text
        file?) raises an error naming the file.
        """
        self.stats = ReadStats(files=list(self.files))
        for path in self.files:
            with reading(path, "corpus"):
                with self._open(path) as fh:
                    yield from self._file_blocks(fh, path, block_chars)

    def _file_blocks(self, fh, path, block_chars):
        carry = ""
        open_line = False  # the last piece handed over was a partial line
        line = 1
        replaced = 0
        while True:
            block = fh.read(block_chars)
            if not block:
                break
            replaced += block.count("\ufffd")
            block = carry + block
            cut = block.rfind("\n")
            if cut >= 0:
                yield block[:cut], True
                line += block.count("\n", 0, cut + 1)
                carry = block[cut + 1:]
                open_line = False
            else:
                # one long line: hand over everything up to the last blank
                last = _LAST_BLANK.search(block)
                if last is not None and last.start() > 0:
                    yield block[:last.start()], False
                    carry = block[last.start() + 1:]
                    open_line = True
                else:
                    carry = block
            if len(carry) > MAX_TOKEN_CHARS:
                raise ValueError("%s, line %d: a token of more than %d characters (no blank in them): is it "
                                 "a text file?" % (path, line, MAX_TOKEN_CHARS))
        if carry or open_line:
            # end of file ends the line, even if its last piece was handed over already
            yield carry, True
        self.stats.replaced_chars += replaced
        if replaced:
            logger.warning("%s: %d invalid UTF-8 sequences replaced by U+FFFD", path, replaced)

    def iter_token_blocks(self):
        """Yield lists of tokens, ignoring sentence boundaries (fast path for counting); ``stats.sentences``
        counts the lines read."""
        lines = 0
        for text, complete in self.iter_blocks():
            lines += text.count("\n") + (1 if complete else 0)
            yield text.split()
        self.stats.sentences = lines

    def __iter__(self):
        """Yield sentences as lists of tokens (pieces of at most ``max_sentence_length``)."""
        limit = self.max_sentence_length
        pending = []
        for text, complete in self.iter_blocks():
            lines = text.split("\n")
            for n, line in enumerate(lines):
                tokens = line.split()
                if pending:
                    tokens = pending + tokens
                    pending = []
                if not complete and n == len(lines) - 1:
                    # the line goes on in the next block: emit its full pieces, keep the rest
                    full = len(tokens) - len(tokens) % limit
                    for s in range(0, full, limit):
                        yield tokens[s:s + limit]
                    pending = tokens[full:]
                    break
                for s in range(0, len(tokens), limit):
                    yield tokens[s:s + limit]
        if pending:
            for s in range(0, len(pending), limit):
                yield pending[s:s + limit]


class IterableCorpus:
    """Wrap a restartable iterable of token lists, checking its shape as it is read."""

    def __init__(self, sentences, max_sentence_length=MAX_SENTENCE_LENGTH):
        if sentences is None:
            raise ValueError("sentences is None")
        if iter(sentences) is sentences:
            raise TypeError("sentences must be a restartable iterable (a list, or an object whose __iter__ "
                            "starts over), not a one-shot iterator or generator: it is read once for the "
                            "vocabulary and once for training")
        self.sentences = sentences
        self.max_sentence_length = max_sentence_length
        self.stats = ReadStats()

    def __repr__(self):
        return "IterableCorpus(%s)" % type(self.sentences).__name__

    def __iter__(self):
        limit = self.max_sentence_length
        for n, sentence in enumerate(self.sentences):
            if isinstance(sentence, (str, bytes)):
                raise TypeError("sentence %d is a %s, not a list of tokens; split it first (or pass a file "
                                "as corpus_file)" % (n, type(sentence).__name__))
            if not isinstance(sentence, list):
                sentence = list(sentence)
            for s in range(0, max(len(sentence), 1), limit):
                yield sentence[s:s + limit]

    def iter_token_blocks(self):
        return iter(self)


def as_corpus(sentences=None, corpus_file=None, max_sentence_length=MAX_SENTENCE_LENGTH):
    """Return a corpus object for exactly one of ``sentences`` and ``corpus_file``."""
    if (sentences is None) == (corpus_file is None):
        raise ValueError("give exactly one of sentences and corpus_file")
    if corpus_file is not None:
        return TextCorpus(corpus_file, max_sentence_length)
    if isinstance(sentences, (TextCorpus, IterableCorpus)):
        return sentences
    if isinstance(sentences, (str, os.PathLike)):
        return TextCorpus(sentences, max_sentence_length)
    path = getattr(sentences, "corpus_path", None)      # a LineSentence over a whole file
    if path is not None:
        return TextCorpus(path, min(max_sentence_length, sentences.max_sentence_length))
    return IterableCorpus(sentences, max_sentence_length)
