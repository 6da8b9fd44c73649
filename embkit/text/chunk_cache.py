"""A spill file for encoded chunks, so epochs after the first skip reading and encoding the corpus.

Chunks are appended to an anonymous temporary file (deleted automatically) and read back one at a time,
so memory stays bounded by one chunk whatever the corpus size.
"""
import hashlib
import tempfile

import numpy as np

from embkit.text.vocab import EncodedChunk


class ChunkCache:
    """Append-only store of :class:`EncodedChunk` in a temporary file."""

    def __init__(self, directory=None):
        self._file = tempfile.TemporaryFile(prefix="embkit-chunks-", dir=directory)
        self._index = []  # (offset, n_tokens, n_sentences, raw_words)
        self._end = 0
        self.complete = False
        #: tokens of the longest sentence stored
        self.longest_sentence = 0

    def __len__(self):
        return len(self._index)

    @property
    def tokens(self):
        """In-vocabulary tokens stored."""
        return sum(n for _, n, _, _ in self._index)

    @property
    def raw_units(self):
        """Corpus tokens covered, out-of-vocabulary ones included."""
        return sum(r for _, _, _, r in self._index)

    def append(self, chunk):
        self._file.seek(self._end)
        # the arrays' own memory is written (no bytes copy of a chunk); the file holds C ints
        self._file.write(np.ascontiguousarray(chunk.tokens, dtype=np.int32).data)
        self._file.write(np.ascontiguousarray(chunk.ends, dtype=np.int32).data)
        self._index.append((self._end, len(chunk.tokens), len(chunk.ends), chunk.raw_units))
        self._end = self._file.tell()
        self.longest_sentence = max(self.longest_sentence, chunk.longest_sentence)

    def __iter__(self):
        for i, (_, n_tok, _, raw) in enumerate(self._index):
            yield EncodedChunk(self.read_tokens(i, 0, n_tok), self.read_ends(i), raw)

    def entries(self):
        """``(tokens, sentences, raw_units)`` of every chunk stored, in order (nothing read from the file)."""
        return [(n_tok, n_sent, raw) for _, n_tok, n_sent, raw in self._index]

    def read_tokens(self, i, start, stop):
        """Tokens ``[start, stop)`` of chunk ``i`` (only those are read)."""
        offset, n_tok = self._index[i][:2]
        start, stop = max(start, 0), min(stop, n_tok)
        self._file.seek(offset + 4 * start)
        return np.fromfile(self._file, dtype=np.int32, count=max(stop - start, 0))

    def read_ends(self, i):
        """Sentence ends of chunk ``i``."""
        offset, n_tok, n_sent, _ = self._index[i]
        self._file.seek(offset + 4 * n_tok)
        return np.fromfile(self._file, dtype=np.int32, count=n_sent)

    def digest(self):
        """A digest of every chunk stored (ids and sentence ends), read back in blocks."""
        digest = hashlib.blake2b(digest_size=16)
        self._file.seek(0)
        left = self._end
        while left > 0:
            block = self._file.read(min(left, 1 << 22))
            if not block:
                break
            digest.update(block)
            left -= len(block)
        digest.update(repr(self._index).encode())
        return digest.hexdigest()

    def close(self):
        self._file.close()
