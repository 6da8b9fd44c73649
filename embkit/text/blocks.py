"""A file corpus read in blocks and split into words on worker threads, handed back in corpus order.

One thread reads and decodes the text (:meth:`embkit.text.corpus.TextCorpus.iter_blocks`), ``workers -
SPARED_THREADS`` threads (at least one) split the blocks into words without the GIL
(:func:`embkit._kernels.words.tokenize`), and the caller takes the blocks in order (with one worker, all of it
happens in the calling thread), so what it builds from them (counts, first-seen ids, chunks) is the same for
any number of threads.  At most a few blocks per thread are held at once, so memory stays bounded whatever
the corpus size; an error while reading (naming the file and line) or splitting is raised in the caller after
the threads have stopped.  From :data:`COUNTING_WORKERS` workers on, the threads that split the blocks also
look their words up in the growing table and count those it knows, so the caller adds only the new ones.
"""
import threading

import numpy as np

from embkit._kernels.words import ChunkBuilder, WordTable, tokenize
from embkit.core.threads import ordered_map
from embkit.text.corpus import BLOCK_CHARS
from embkit.text.prefetch import prefetch

__all__ = ["splits_in_blocks", "tokenized_blocks", "count_blocks", "encode_blocks"]

#: blocks a thread may have read or split ahead of the caller
BLOCKS_AHEAD = 2
#: threads of ``workers`` left to the reader and the caller who merges the blocks; the others split words.
#: 0: every worker splits, the reader and the caller run beside them (their work is a fraction of the
#: splitting, and with one splitter of two workers the splitting alone took as long as all of it on one thread)
SPARED_THREADS = 0

#: workers from which the worker threads also count the words the table knows (:class:`KnownWords`), leaving
#: the caller only the words new since: it shortens the caller's share, the one part in a single thread, but
#: adds work in all (each new word is looked for twice, and the outgrown memory is kept), which on two cores,
#: where every thread's work shares them, made the scan slower
COUNTING_WORKERS = 4


def splits_in_blocks(corpus):
    """Whether ``corpus`` is read as blocks of text (a file corpus), so its words are split on threads."""
    return callable(getattr(corpus, "iter_blocks", None))


def tokenized_blocks(corpus, workers=1, block_chars=BLOCK_CHARS, table=None):
    """Yield ``(BlockWords, complete)`` for every block of ``corpus``, in order (``complete``: the block's
    last line ends in it).  With ``table`` (anything with a ``look_up(block)``, such as a
    :class:`~embkit._kernels.words.WordTable`) each block's words are looked up in it on the worker
    threads."""
    def split(item):
        text, complete = item
        block = tokenize(text)
        if table is not None:
            table.look_up(block)
        return block, complete

    if workers <= 1:
        yield from map(split, corpus.iter_blocks(block_chars))
        return
    splitters = max(1, workers - SPARED_THREADS)
    blocks = prefetch(corpus.iter_blocks(block_chars), depth=BLOCKS_AHEAD * splitters)
    try:
        yield from ordered_map(split, blocks, splitters, BLOCKS_AHEAD)
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
    provisional ids of :func:`embkit.text.scan.scan_corpus`, the table filling as the chunks come).
    """
    builder = ChunkBuilder(chunk_tokens, corpus.max_sentence_length)
    known = KnownWords(table) if adding and workers >= COUNTING_WORKERS else None
    blocks = tokenized_blocks(corpus, workers, block_chars, table=known if adding else table)
    try:
        for block, complete in blocks:
            if adding:
                table.add(block)
            yield from builder.add(block, complete)
        if known is not None:
            known.fold()
    finally:
        blocks.close()          # the worker threads have stopped reading the table
        if known is not None:
            known.close()
    last = builder.finish()
    if last is not None:
        yield last


class KnownWords:
    """The worker threads' side of a table that grows in the caller's thread: each thread looks its blocks
    up in the table as it is (:meth:`~embkit._kernels.words.WordTable.count_known`) and counts the words it
    finds in counts of its own, so the caller adds only the words new since, and :meth:`fold` adds the
    threads' counts to the table when every block is in.  The ids and counts are those of adding every
    block whole in the caller's thread."""

    def __init__(self, table):
        self.table = table
        self._mine = threading.local()
        self._counts = []           # a one-item list a thread: its counts (list.append is atomic)
        table.open_to_readers()

    def look_up(self, block):
        """Look ``block`` up and count its known words (on a worker thread)."""
        box = getattr(self._mine, "box", None)
        if box is None:
            box = self._mine.box = [np.zeros(0, dtype=np.int64)]     # count_known grows it to the ids found
            self._counts.append(box)
        box[0] = self.table.count_known(block, box[0])

    def fold(self):
        """Add the threads' counts to the table (in its thread, after the last block was added)."""
        n = len(self.table)
        for box in self._counts:
            self.table.add_counts(box[0][:n])
        self._counts.clear()

    def close(self):
        """End the threads' reading (when none is reading any more)."""
        self.table.close_to_readers()
