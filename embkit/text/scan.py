"""One pass over a corpus that yields both the vocabulary and the encoded corpus.

Tokens get provisional ids in first-seen order while the text is read; their counts come from those ids,
the vocabulary is chosen from the counts, and the provisional chunks are then rewritten with final ids
(vectorised, out-of-vocabulary tokens dropped).  The corpus text is therefore read and tokenised once in
all, not once for the vocabulary and again in the first epoch.
"""
import ctypes
from array import array

import numpy as np

from embkit.text.chunk_cache import ChunkCache
from embkit.text.vocab import EmptyVocabularyError, EncodedChunk, Vocab, check_tokens


def scan_corpus(corpus, min_count=5, max_final_vocab=None, trim_rule=None, chunk_tokens=1 << 18, sorted_vocab=True):
    """Build the vocabulary of ``corpus`` and encode it.

    Parameters
    ----------
    corpus : iterable of list of str
        Sentences (see :mod:`embkit.text.corpus`).
    min_count, max_final_vocab, trim_rule, sorted_vocab
        As in :meth:`embkit.text.vocab.Vocab.build`.
    chunk_tokens : int
        Tokens per encoded chunk.

    Returns
    -------
    vocab : Vocab
    cache : ChunkCache
        The corpus in final word ids, complete.
    """
    index = {}          # word -> provisional id; its insertion order is the first-seen order
    provisional = ChunkCache()
    counts = np.zeros(0, dtype=np.int64)
    raw_total = 0
    sentences = 0
    try:
        for chunk in _provisional_chunks(corpus, index, chunk_tokens):
            provisional.append(chunk)
            grown = np.bincount(chunk.tokens, minlength=len(index))
            grown[:counts.size] += counts
            counts = grown
            raw_total += chunk.raw_words
            sentences += len(chunk.ends)
        if raw_total == 0:
            raise EmptyVocabularyError("the corpus %r is empty: no tokens found" % (corpus,))
        words = list(index)
        index.clear()
        vocab, kept = Vocab.from_counts(words, counts, raw_total, min_count, max_final_vocab, trim_rule,
                                        sorted_vocab)
        vocab.sentences = sentences
        del words
        remap = np.full(counts.size, -1, dtype=np.int32)
        remap[kept] = np.arange(kept.size, dtype=np.int32)
        cache = ChunkCache()
        for chunk in provisional:
            cache.append(_remap(chunk, remap))
        cache.complete = True
        return vocab, cache
    finally:
        provisional.close()
        index.clear()
        release_free_memory()


def release_free_memory():
    """Hand the heap pages freed by the scan (its word index) back to the operating system.

    Python frees the index's memory, but glibc keeps it mapped; ``malloc_trim`` returns it, which keeps
    the training peak below the scan's high-water mark plus the tables.  A no-op without glibc.
    """
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return
    trim(0)


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


def _remap(chunk, remap):
    """Map a provisional chunk to final ids, dropping out-of-vocabulary tokens and emptied sentences."""
    ids = remap[chunk.tokens]
    keep = ids >= 0
    tokens = np.ascontiguousarray(ids[keep])
    kept_before = np.cumsum(keep, dtype=np.int64)
    ends = kept_before[chunk.ends - 1] if len(chunk.ends) else np.zeros(0, np.int64)
    # a sentence whose words were all dropped ends where the previous one did
    starts = np.concatenate([[0], ends[:-1]])
    ends = ends[ends > starts].astype(np.int32)
    return EncodedChunk(tokens, ends, chunk.raw_words)
