"""A file corpus read in blocks and split into words on worker threads, handed back in corpus order.

One thread reads and decodes the text (:meth:`embkit.text.corpus.TextCorpus.iter_blocks`), ``workers``
threads split the blocks into words without the GIL (:func:`embkit._kernels.words.tokenize`): the caller and
``workers - 1`` threads beside it, the caller splitting the next block no thread has taken whenever the next
one in order is not ready (:func:`embkit.core.threads.worker_map`).  The caller takes the blocks in order
(with one worker, all of it happens in the calling thread), so what it builds from them (counts, first-seen
ids, chunks) is the same for any number of threads.  At most a few blocks per thread are held at once, so
memory stays bounded whatever the corpus size; an error while reading (naming the file and line) or
splitting is raised in the caller after the threads have stopped.  The words of a scan may be counted on the
splitting threads too, into a :class:`PartedTable`.
"""
import threading

import numpy as np

from embkit._kernels.words import ChunkBuilder, WordTable, tokenize
from embkit.core.threads import worker_map
from embkit.text.corpus import BLOCK_CHARS
from embkit.text.prefetch import prefetch

__all__ = ["splits_in_blocks", "tokenized_blocks", "count_blocks", "encode_blocks", "PartedTable"]

#: blocks a thread may have read or split ahead of the caller
BLOCKS_AHEAD = 2


def splits_in_blocks(corpus):
    """Whether ``corpus`` is read as blocks of text (a file corpus), so its words are split on threads."""
    return callable(getattr(corpus, "iter_blocks", None))


def tokenized_blocks(corpus, workers=1, block_chars=BLOCK_CHARS, table=None, on_split=None):
    """Yield ``(BlockWords, complete)`` for every block of ``corpus``, in order (``complete``: the block's
    last line ends in it).  With ``table`` (anything with a ``look_up(block)``, such as a
    :class:`~embkit._kernels.words.WordTable`) each block's words are looked up in it on the worker
    threads; ``on_split(index, block)`` runs there after it, ``index`` the block's place (0, 1, ...)."""
    def split(item):
        index, (text, complete) = item
        block = tokenize(text)
        if table is not None:
            table.look_up(block)
        if on_split is not None:
            on_split(index, block)
        return block, complete

    if workers <= 1:
        yield from map(split, enumerate(corpus.iter_blocks(block_chars)))
        return
    blocks = prefetch(corpus.iter_blocks(block_chars), depth=BLOCKS_AHEAD * workers)
    try:
        yield from worker_map(split, enumerate(blocks), workers, BLOCKS_AHEAD)
    finally:
        blocks.close()


def count_blocks(corpus, workers=1, on_block=None):
    """Count the words of a file corpus: ``(table, raw_words, lines)``, the table's ids in first-seen order.

    ``on_block(table)`` runs after each block is counted (the bounded counting of
    :meth:`embkit.text.vocab.Vocab.count` prunes there); the blocks are those of ``iter_token_blocks``.
    """
    table = WordTable()
    raw = lines = 0
    for block, complete in tokenized_blocks(corpus, workers):
        table.add(block)
        raw += block.n_tokens
        lines += block.newlines + (1 if complete else 0)
        if on_block is not None:
            on_block(table, block.n_tokens)
    return table, raw, lines


def encode_blocks(corpus, table, chunk_tokens, workers=1, block_chars=BLOCK_CHARS, adding=False):
    """Yield ``(tokens, ends, raw_words)`` chunks of a file corpus, its words mapped to their ids in ``table``.

    Without ``adding`` the words not in ``table`` are dropped (encoding with a vocabulary: the rules of
    :func:`embkit.text.vocab.encode_chunks`); with it every word is added in first-seen order and kept (the
    provisional ids of :func:`embkit.text.scan.scan_corpus`, the table filling as the chunks come).  A
    :class:`PartedTable` is filled on the threads that split the blocks, the caller waiting for each block's
    words; a :class:`~embkit._kernels.words.WordTable` in the caller's thread.
    """
    builder = ChunkBuilder(chunk_tokens, corpus.max_sentence_length)
    parted = adding and hasattr(table, "offer")
    blocks = tokenized_blocks(corpus, workers, block_chars, table=None if adding else table,
                              on_split=table.offer if parted else None)
    try:
        for index, (block, complete) in enumerate(blocks):
            if parted:
                table.wait(index)
            elif adding:
                table.add(block)
            yield from builder.add(block, complete)
    finally:
        blocks.close()          # the worker threads have stopped
    last = builder.finish()
    if last is not None:
        yield last


class PartedTable:
    """The distinct words of a file corpus and their counts in ``parts`` word tables, each word in the one
    its hash picks (:meth:`~embkit._kernels.words.WordTable.add_part`), filled on the threads that split
    the blocks: a thread that has split a block adds its words to every table free to take it, and then
    every block waiting for that table in order, so no thread waits for another and no single thread adds
    every word.  A word's id in the chunks is ``id * parts + part``; :meth:`in_first_seen_order` gives the
    words in the order they were first seen in the corpus, as one table would have numbered them.
    """

    def __init__(self, parts):
        self.tables = [WordTable() for _ in range(parts)]
        self._lock = threading.Lock()
        self._merged = threading.Condition(self._lock)
        self._next = [0] * parts            # the block each table takes next
        self._ready = [{} for _ in range(parts)]    # per table: blocks split and waiting for it, by index
        self._busy = [False] * parts        # a thread is adding blocks to the table
        self._left = {}                     # block index -> tables still to add it
        self._failed = None

    def offer(self, index, block):
        """Hand over the split block ``index`` and add what can be added now (on a splitting thread)."""
        parts = len(self.tables)
        block.open_parts(parts)
        with self._lock:
            self._left[index] = parts
            for ready in self._ready:
                ready[index] = block
        for k in range(parts):
            self._drain((index + k) % parts)        # threads start at different tables

    def _drain(self, part):
        """Add to table ``part`` the blocks waiting for it in order, unless another thread does."""
        with self._lock:
            if self._busy[part] or self._failed is not None:
                return
            self._busy[part] = True
        try:
            while True:
                with self._lock:
                    index = self._next[part]
                    block = self._ready[part].pop(index, None)
                    if block is None or self._failed is not None:
                        self._busy[part] = False
                        return
                self.tables[part].add_part(block, part, len(self.tables), index)
                with self._lock:
                    self._next[part] = index + 1
                    self._left[index] -= 1
                    if not self._left[index]:
                        del self._left[index]
                        self._merged.notify_all()
        except BaseException as exc:
            with self._lock:
                self._failed = exc
                self._busy[part] = False
                self._merged.notify_all()
            raise

    def wait(self, index):
        """Wait until block ``index`` (offered) is in every table; raises if adding a block failed."""
        with self._lock:
            while index in self._left and self._failed is None:
                self._merged.wait()
            if self._failed is not None:
                raise RuntimeError("counting the words of a block failed on another thread") from self._failed

    def in_first_seen_order(self):
        """``(words, counts, ids)``: every word in the order of its first occurrence in the corpus (``words``
        a :class:`FirstSeenWords`), its count and its id in the chunks."""
        parts = len(self.tables)
        keys = np.concatenate([t.first_seen() for t in self.tables])
        ids = np.concatenate([np.arange(len(t), dtype=np.int64) * parts + p for p, t in enumerate(self.tables)])
        counts = np.concatenate([t.counts() for t in self.tables])
        order = np.argsort(keys, kind="stable")
        return FirstSeenWords(self.tables, ids[order]), counts[order], ids[order]


class FirstSeenWords:
    """The words of a :class:`PartedTable` by their place in first-seen order, as a
    :class:`~embkit._kernels.words.WordTable` gives its own (``len``, ``[i]``, :meth:`words_list`)."""

    def __init__(self, tables, ids):
        self.tables = tables
        self.ids = ids

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        word = int(self.ids[i])
        return self.tables[word % len(self.tables)][word // len(self.tables)]

    def words_list(self, places):
        """The words (str) at ``places``."""
        ids = self.ids[np.asarray(places, dtype=np.int64)]
        parts = len(self.tables)
        out = [None] * len(ids)
        for p, table in enumerate(self.tables):
            at = np.flatnonzero(ids % parts == p)
            for k, word in zip(at.tolist(), table.words_list(ids[at] // parts)):
                out[k] = word
        return out
