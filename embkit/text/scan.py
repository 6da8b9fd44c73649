"""One pass over a corpus that yields both the vocabulary and the encoded corpus.

Tokens get provisional ids in first-seen order while the text is read; their counts come from those ids,
the vocabulary is chosen from the counts, and the provisional chunks are then rewritten with final ids
(out-of-vocabulary tokens dropped).  The corpus text is therefore read and tokenised once in all, not once
for the vocabulary and again in the first epoch.  A file corpus is split into words on worker threads
(:mod:`embkit.text.blocks`) and its chunks rewritten on them; the vocabulary and the chunks are the same for
any number of threads.
"""
from array import array

import numpy as np

from embkit._kernels.words import WordTable, remap_chunk
from embkit.core.heap import release_free_memory
from embkit.core.threads import worker_map
from embkit.text.blocks import PartedTable, encode_blocks, splits_in_blocks
from embkit.text.chunk_cache import ChunkCache
from embkit.text.vocab import EmptyVocabularyError, EncodedChunk, Vocab, check_tokens

#: characters of text a thread splits at a time when scanning a file corpus: a process's first scan faults in
#: the memory of every block in flight (a few per thread), so small blocks start faster (BENCHMARKS.md, 2 cores)
SCAN_BLOCK_CHARS = 1 << 17


#: most threads a scan uses, whatever the workers: past them the calling thread's work in corpus order
#: (adding each block's words to the table, cutting the chunks) is the bound, and more threads only add
#: hand-offs (gcide on 16 cores: 0.154 s on 2 workers, 0.160 on 4, 0.176 on 8, 0.237 on 16; BENCHMARKS.md)
SCAN_MAX_WORKERS = 4

#: workers from which the words are counted on the threads that split the blocks (:class:`PartedTable`, a
#: part a worker), not in the caller's thread: the caller's share, the one part in a single thread, falls by
#: a third, but the parts add work in all, and on two cores two workers were faster without them
#: (BENCHMARKS.md)
PARTED_WORKERS = 4


def scan_corpus(corpus, min_count=5, max_final_vocab=None, trim_rule=None, chunk_tokens=1 << 18, sorted_vocab=True,
                workers=1):
    """Build the vocabulary of ``corpus`` and encode it.

    Parameters
    ----------
    corpus : iterable of list of str
        Sentences (see :mod:`embkit.text.corpus`).
    min_count, max_final_vocab, trim_rule, sorted_vocab
        As in :meth:`embkit.text.vocab.Vocab.build`.
    chunk_tokens : int
        Tokens per encoded chunk.
    workers : int
        Threads that split a file corpus into words and rewrite the chunks (at most
        :data:`SCAN_MAX_WORKERS`).

    Returns
    -------
    vocab : Vocab
    cache : ChunkCache
        The corpus in final word ids, complete.
    """
    workers = max(1, min(workers, SCAN_MAX_WORKERS))
    provisional = ChunkCache()
    try:
        scan = _scan_file if splits_in_blocks(corpus) else _scan_sentences
        words, counts, ids, raw_total, sentences = scan(corpus, provisional, chunk_tokens, workers)
        if raw_total == 0:
            raise EmptyVocabularyError("the corpus %r is empty: no tokens found" % (corpus,))
        vocab, kept = Vocab.from_counts(words, counts, raw_total, min_count, max_final_vocab, trim_rule,
                                        sorted_vocab)
        vocab.sentences = sentences
        del words
        remap = np.full(int(ids.max()) + 1 if ids.size else 0, -1, dtype=np.int32)
        remap[ids[kept]] = np.arange(kept.size, dtype=np.int32)
        return vocab, remapped(provisional, remap, workers)
    finally:
        provisional.close()
        release_free_memory()


def remapped(provisional, remap, workers=1):
    """A complete :class:`ChunkCache` of the chunks of ``provisional`` with each token's id ``i`` replaced by
    ``remap[i]``, the tokens mapped to -1 dropped (the encoding's rule for words outside the vocabulary),
    rewritten on ``workers`` threads."""
    cache = ChunkCache()

    def final(chunk):
        return EncodedChunk(*remap_chunk(chunk.tokens, chunk.ends, remap), chunk.raw_units)

    try:
        for chunk in worker_map(final, provisional, workers):
            cache.append(chunk)
    except BaseException:
        cache.close()
        raise
    cache.complete = True
    return cache


def _scan_file(corpus, provisional, chunk_tokens, workers):
    """Provisional chunks of a file corpus into ``provisional``; ``(words, counts, ids, raw_words,
    sentences)``: the distinct words in first-seen order, their counts and their provisional ids.  From
    :data:`PARTED_WORKERS` workers on the words are counted on the threads that split the blocks."""
    parted = workers >= PARTED_WORKERS
    table = PartedTable(workers) if parted else WordTable()
    raw_total = sentences = 0
    for tokens, ends, raw in encode_blocks(corpus, table, chunk_tokens, workers, SCAN_BLOCK_CHARS, adding=True):
        provisional.append(EncodedChunk(tokens, ends, raw))
        raw_total += raw
        sentences += len(ends)
    if parted:
        return table.in_first_seen_order() + (raw_total, sentences)
    return table, table.counts(), np.arange(len(table), dtype=np.int64), raw_total, sentences


def _scan_sentences(corpus, provisional, chunk_tokens, workers):
    """Provisional chunks of an iterable corpus (read in this thread); as :func:`_scan_file`, the ids in
    first-seen order."""
    index = {}          # word -> provisional id; its insertion order is the first-seen order
    counts = np.zeros(0, dtype=np.int64)
    raw_total = sentences = 0
    try:
        for chunk in _provisional_chunks(corpus, index, chunk_tokens):
            provisional.append(chunk)
            grown = np.bincount(chunk.tokens, minlength=len(index))
            grown[:counts.size] += counts
            counts = grown
            raw_total += chunk.raw_units
            sentences += len(chunk.ends)
        return list(index), counts, np.arange(len(index), dtype=np.int64), raw_total, sentences
    finally:
        index.clear()


def _provisional_chunks(corpus, index, chunk_tokens):
    """Encode sentences with ids in first-seen order, adding unseen words to ``index``."""
    get = index.get
    ids, ends, raw = array("i"), array("i"), 0
    for sentence in corpus:
        if not sentence:
            continue
        try:
            enc = list(map(get, sentence))
        except TypeError:
            raise check_tokens(sentence) from None
        if None in enc:  # new words: rare once the common ones are in
            for p, v in enumerate(enc):
                if v is None:
                    w = sentence[p]
                    v = get(w)
                    if v is None:
                        if not isinstance(w, str):
                            raise check_tokens(sentence)
                        v = index[w] = len(index)
                    enc[p] = v
        ids.extend(enc)
        ends.append(len(ids))
        raw += len(enc)
        if len(ids) >= chunk_tokens:
            yield EncodedChunk(np.frombuffer(ids, dtype=np.int32), np.frombuffer(ends, dtype=np.int32), raw)
            ids, ends, raw = array("i"), array("i"), 0
    if ids:
        yield EncodedChunk(np.frombuffer(ids, dtype=np.int32), np.frombuffer(ends, dtype=np.int32), raw)
