"""Vocabulary: word counts, the kept words in frequency order, and word2vec subsampling."""
import logging
from array import array
from collections import Counter

import numpy as np

from embkit._kernels.words import WordTable
from embkit.text.blocks import count_blocks, encode_blocks, splits_in_blocks

logger = logging.getLogger(__name__)

#: gensim's trim-rule results (``gensim.utils.RULE_*``): apply ``min_count``, drop the word, keep the word
RULE_DEFAULT, RULE_DISCARD, RULE_KEEP = 0, 1, 2


class EmptyVocabularyError(ValueError, RuntimeError):
    """No word is left to train: an empty corpus, or every word filtered out.

    A ValueError (bad input) that is also the RuntimeError gensim raises in that case.
    """


class DegenerateCorpusError(ValueError):
    """A corpus that gives no training example: one word type, or no sentence with two known words."""


def check_trainable(n_words, longest_sentence=None):
    """Refuse a corpus whose training would change nothing (:class:`DegenerateCorpusError` with the reason).

    Parameters
    ----------
    n_words : int
        Words in the vocabulary: with fewer than two there is nothing to tell apart.
    longest_sentence : int, optional
        Known words of the corpus's longest sentence (None: not known yet): words are trained on the
        words of their own sentence, so a corpus of one-word sentences trains nothing.
    """
    if n_words < 2:
        raise DegenerateCorpusError("the vocabulary has %d word%s: there is nothing to tell apart and training "
                                    "would change nothing (more text, or a lower min_count)"
                                    % (n_words, "" if n_words == 1 else "s"))
    if longest_sentence is not None and longest_sentence < 2:
        raise DegenerateCorpusError("no sentence of the corpus has two words of the vocabulary: words are trained "
                                    "on the words of their sentence, so nothing would be trained (are the "
                                    "sentences split into words? a lower min_count?)")


def keep_word(word, count, min_count, trim_rule=None):
    """Whether ``word`` seen ``count`` times stays in the vocabulary (gensim's rule semantics).

    ``trim_rule(word, count, min_count)`` returns :data:`RULE_KEEP`, :data:`RULE_DISCARD` or
    :data:`RULE_DEFAULT` (then ``count >= min_count`` decides); anything else is a ValueError naming it.
    """
    if trim_rule is None:
        return count >= min_count
    verdict = trim_rule(word, count, min_count)
    if verdict == RULE_DEFAULT and not isinstance(verdict, bool):
        return count >= min_count
    if verdict == RULE_KEEP and not isinstance(verdict, bool):
        return True
    if verdict == RULE_DISCARD and not isinstance(verdict, bool):
        return False
    raise ValueError("trim_rule returned %r for the word %r; it must return RULE_KEEP (2), RULE_DISCARD (1) or "
                     "RULE_DEFAULT (0), e.g. gensim.utils.RULE_DISCARD" % (verdict, word))


class Vocab:
    """Words kept for training, most frequent first, with their counts.

    Attributes
    ----------
    index_to_key : list of str
    key_to_index : dict
    counts : ndarray of int64
    raw_words : int
        Tokens seen in the corpus, including those not kept.
    sentences : int
        Sentences (or sentence pieces) seen.
    distinct_words : int
        Distinct words seen in the corpus, kept or not (when built from a corpus).
    effective_min_count : int
        The ``min_count`` applied (raised by ``max_final_vocab`` when needed).
    report : dict
        What the selection did, as gensim's ``prepare_vocab`` reports it: ``drop_unique`` (distinct words
        dropped), ``retain_total`` (tokens of kept words), ``num_retained_words``.
    """

    def __init__(self, words, counts, raw_words=0, sentences=0):
        self.index_to_key = list(words)
        self.key_to_index = dict(zip(self.index_to_key, range(len(self.index_to_key))))
        self.counts = np.asarray(counts, dtype=np.int64)
        self.raw_words = int(raw_words)
        self.sentences = int(sentences)
        self.distinct_words = len(self.index_to_key)
        self.effective_min_count = None
        self.report = {}

    def __len__(self):
        return len(self.index_to_key)

    def __repr__(self):
        return "Vocab(%d words, %d corpus words)" % (len(self), self.total_words)

    @property
    def total_words(self):
        """Corpus tokens that are in the vocabulary (the words one epoch trains on before subsampling)."""
        return int(self.counts.sum())

    @classmethod
    def build(cls, corpus, min_count=5, max_vocab_size=None, max_final_vocab=None, trim_rule=None,
              progress=None, sorted_vocab=True, workers=1):
        """Count the words of ``corpus`` and keep the frequent ones.

        Parameters
        ----------
        corpus : iterable of list of str
            Must provide ``iter_token_blocks()`` (see :mod:`embkit.text.corpus`).
        min_count : int
            Words seen fewer times are dropped.
        max_vocab_size : int or None
            Bound on distinct words held while counting; when exceeded, the rarest words are pruned (as
            word2vec does), so counts of rare words can come out lower.
        max_final_vocab : int or None
            Keep at most this many words by raising the effective ``min_count`` as needed.
        trim_rule : callable or None
            gensim's ``trim_rule(word, count, min_count)`` (see :func:`keep_word`).
        sorted_vocab : bool
            Most frequent words first (else first-seen order).
        workers : int
            Threads that split a file corpus into words (the result is the same for any number).
        """
        words, counts, raw, sentences = cls.count(corpus, max_vocab_size, trim_rule, progress, workers)
        vocab, _ = cls.from_counts(words, counts, raw, min_count, max_final_vocab, trim_rule, sorted_vocab)
        vocab.sentences = sentences
        return vocab

    @staticmethod
    def count(corpus, max_vocab_size=None, trim_rule=None, progress=None, workers=1):
        """Count every distinct word of ``corpus`` (the first step of :meth:`build`).

        With ``max_vocab_size``, the rarest words are pruned whenever more are held after a block of the
        corpus (word2vec.c's rule, see :meth:`build`; a ``trim_rule`` that keeps a word protects it).  A file
        corpus is split into words on ``workers`` threads, with the same result.

        Returns
        -------
        (words, counts, raw_words, sentences)
            Distinct words in first-seen order, their counts (int64), the corpus tokens and sentences.
        """
        if splits_in_blocks(corpus):
            return _count_file(corpus, max_vocab_size, trim_rule, progress, workers)
        counter = Counter()
        raw = 0
        sentences = 0
        min_reduce = 1
        for tokens in corpus.iter_token_blocks():
            try:
                counter.update(tokens)
            except TypeError:
                raise check_tokens(tokens) from None
            raw += len(tokens)
            sentences += 1
            if progress is not None:
                progress(len(tokens))
            if max_vocab_size is not None and len(counter) > max_vocab_size:
                # word2vec.c's pruning: drop words seen at most min_reduce times (a trim rule may keep them)
                counter = Counter({w: c for w, c in counter.items()
                                   if c > min_reduce or (trim_rule is not None and keep_word(w, c, min_reduce + 1,
                                                                                            trim_rule))})
                min_reduce += 1
        if raw == 0:
            raise EmptyVocabularyError("the corpus %r is empty: no tokens found" % (corpus,))
        words = list(counter)
        counts = np.fromiter(counter.values(), dtype=np.int64, count=len(words))
        stats = getattr(corpus, "stats", None)
        if getattr(stats, "sentences", 0):      # a file corpus hands over blocks of lines: it counts the lines
            sentences = stats.sentences
        return words, counts, raw, sentences

    @classmethod
    def from_counts(cls, words, counts, raw_words, min_count=5, max_final_vocab=None, trim_rule=None,
                    sorted_vocab=True):
        """Select the vocabulary from every distinct word and its count.

        Parameters
        ----------
        words : list of str, or WordTable
            Distinct words in first-seen order (a :class:`~embkit._kernels.words.WordTable` decodes only the
            words kept).
        counts : ndarray of int64
            Their counts.
        raw_words : int
            Corpus tokens.

        min_count, max_final_vocab, trim_rule, sorted_vocab :
            As in :meth:`build`.

        Returns
        -------
        vocab : Vocab
            Words seen at least ``min_count`` times (or kept by ``trim_rule``), most frequent first (ties
            keep first-seen order) unless ``sorted_vocab`` is false.
        kept : ndarray of int64
            Position in ``words`` of each vocabulary word.
        """
        effective_min = min_count
        if max_final_vocab is not None and len(words) > max_final_vocab:
            ordered = np.sort(counts)[::-1]
            # smallest count threshold that keeps at most max_final_vocab words
            effective_min = max(min_count, int(ordered[max_final_vocab]) + 1)
        if trim_rule is None:
            kept = np.flatnonzero(counts >= effective_min)
        else:
            kept = np.array([i for i in range(len(words)) if keep_word(words[i], int(counts[i]), effective_min,
                                                                       trim_rule)], dtype=np.int64)
        if kept.size == 0:
            raise EmptyVocabularyError("no word occurs at least min_count=%d times (the corpus has %d tokens, %d distinct, "
                             "most frequent seen %d times): lower min_count"
                             % (effective_min, raw_words, len(words), int(counts.max()) if len(words) else 0))
        if sorted_vocab:
            kept = kept[np.argsort(-counts[kept], kind="stable")]   # ties keep first-seen order
        take = getattr(words, "words_list", None)
        if take is not None:
            chosen = take(kept)
        else:
            odd = [words[i] for i in kept if not isinstance(words[i], str)]
            if odd:
                raise check_tokens(odd, "the corpus")
            # fresh copies of the kept words, so the memory of the counting (every distinct word, spread over
            # the allocator's arenas) can go back to the operating system once the caller drops it
            chosen = [(words[i] + " ")[:-1] for i in kept]
        vocab = cls(chosen, counts[kept], raw_words=raw_words)
        vocab.distinct_words = len(words)
        vocab.effective_min_count = effective_min
        vocab.report = {"drop_unique": len(words) - len(vocab), "retain_total": vocab.total_words,
                        "num_retained_words": len(vocab)}
        logger.info("vocabulary: %d words kept of %d distinct (min_count=%d), %d of %d tokens (%.1f%%)",
                    len(vocab), len(words), effective_min, vocab.total_words, raw_words,
                    100.0 * vocab.total_words / raw_words)
        return vocab, kept

    def updated(self, words, counts, raw_words, min_count, trim_rule=None, sentences=0):
        """This vocabulary grown by a new corpus's counts (online training, gensim's ``update=True``).

        Known words add their new counts and keep their index; new words that pass ``min_count`` and the
        ``trim_rule`` are appended in first-seen order.  Returns ``(vocab, new_words)``: a new :class:`Vocab`
        and how many words it added.
        """
        counts = np.asarray(counts, dtype=np.int64)
        merged = self.counts.copy()
        new_words, new_counts, known = [], [], 0
        for word, count in zip(words, counts.tolist()):
            index = self.key_to_index.get(word)
            if index is not None:
                merged[index] += count
                known += 1
            elif keep_word(word, count, min_count, trim_rule):
                if not isinstance(word, str):
                    raise check_tokens([word], "the corpus")
                new_words.append(word)
                new_counts.append(count)
        vocab = Vocab(self.index_to_key + new_words, np.concatenate([merged, np.asarray(new_counts, np.int64)]),
                      raw_words=self.raw_words + raw_words, sentences=sentences)
        vocab.distinct_words = self.distinct_words + len(new_words)
        vocab.effective_min_count = min_count
        vocab.report = {"drop_unique": len(words) - known - len(new_words), "retain_total": vocab.total_words,
                        "num_retained_words": len(new_words)}
        logger.info("vocabulary update: %d new words (now %d), %d corpus tokens", len(new_words), len(vocab),
                    raw_words)
        return vocab, len(new_words)

    def keep_probabilities(self, sample):
        """Probability of keeping each word under word2vec subsampling with threshold ``sample``.

        A word with frequency ``f = count / total`` is kept with probability
        ``(sqrt(f / sample) + 1) * sample / f``, capped at 1 (word2vec.c's formula).  ``sample = 0`` keeps
        every word.  Returns float32 array, or None when nothing is ever dropped.
        """
        if sample < 0:
            raise ValueError("sample must be >= 0, got %r" % (sample,))
        if sample == 0:
            return None
        threshold = float(sample) * self.total_words
        c = self.counts.astype(np.float64)
        keep = (np.sqrt(c / threshold) + 1.0) * threshold / c
        keep = np.minimum(keep, 1.0).astype(np.float32)
        if np.all(keep >= 1.0):
            return None
        return keep

    def encode(self, corpus, chunk_tokens=1 << 18, workers=1):
        """Encode ``corpus`` into chunks of word ids; see :func:`encode_chunks` (a file corpus is split into
        words on ``workers`` threads, with the same chunks)."""
        if splits_in_blocks(corpus):
            return (EncodedChunk(*chunk) for chunk in encode_blocks(corpus, WordTable(self.index_to_key), chunk_tokens,
                                                                    workers))
        return encode_chunks(corpus, self.key_to_index, chunk_tokens)


class EncodedChunk:
    """A run of sentences as word ids: ``tokens`` (int32) and each sentence's end offset ``ends`` (int32).

    ``raw_units`` counts the corpus tokens the chunk covers, including out-of-vocabulary ones (the training
    loop's raw units).
    """

    __slots__ = ("tokens", "ends", "raw_units")

    def __init__(self, tokens, ends, raw_units):
        self.tokens = tokens
        self.ends = ends
        self.raw_units = raw_units

    def __len__(self):
        return self.tokens.shape[0]

    @property
    def longest_sentence(self):
        """Tokens of the chunk's longest sentence (0 for a chunk without sentences)."""
        return int(np.diff(self.ends, prepend=0).max()) if len(self.ends) else 0

    @property
    def kernel_args(self):
        """What the ``windows`` driver's ``train_chunk`` takes before its common arguments."""
        return self.tokens, self.ends

    @property
    def input_rows(self):
        """The ``W_in`` rows that training the chunk may change: its words (the ``windows`` driver writes the
        input rows of the words in a window only)."""
        return self.tokens

    @classmethod
    def join(cls, chunks):
        """One chunk of ``chunks``' sentences, in order."""
        starts = np.cumsum([0] + [len(c) for c in chunks[:-1]])
        return cls(np.concatenate([c.tokens for c in chunks]),
                   np.concatenate([c.ends + int(s) for c, s in zip(chunks, starts)]).astype(np.int32, copy=False),
                   sum(c.raw_units for c in chunks))


def _count_file(corpus, max_vocab_size, trim_rule, progress, workers):
    """:meth:`Vocab.count` of a file corpus: the blocks split on threads, counted and pruned in order."""
    min_reduce = 1

    def after_block(table, tokens):
        nonlocal min_reduce
        if progress is not None:
            progress(tokens)
        if max_vocab_size is not None and len(table) > max_vocab_size:
            keep = None
            if trim_rule is not None:
                counts = table.counts()
                rare = np.flatnonzero(counts <= min_reduce)
                keep = np.zeros(len(counts), dtype=bool)
                keep[rare] = [keep_word(w, int(c), min_reduce + 1, trim_rule)
                              for w, c in zip(table.words_list(rare), counts[rare])]
            table.prune(min_reduce + 1, keep)
            min_reduce += 1

    table, raw, lines = count_blocks(corpus, workers, after_block)
    corpus.stats.sentences = lines
    if raw == 0:
        raise EmptyVocabularyError("the corpus %r is empty: no tokens found" % (corpus,))
    return table.words_list(), table.counts(), raw, lines


def check_tokens(sentence, where="a sentence"):
    """TypeError naming the first token of ``sentence`` that is not a string (tokens must be str)."""
    bad = next((t for t in sentence if not isinstance(t, str)), None)
    return TypeError("tokens must be strings; %s holds %r (a %s): %r"
                     % (where, bad, type(bad).__name__, list(sentence)[:10]))


def encode_chunks(corpus, key_to_index, chunk_tokens=1 << 18):
    """Yield :class:`EncodedChunk` of about ``chunk_tokens`` in-vocabulary tokens each.

    Out-of-vocabulary tokens are removed before windows are formed (as in word2vec); sentences left empty
    are skipped.  Memory stays bounded by the chunk size whatever the corpus size.
    """
    get = key_to_index.get
    ids = array("i")     # C ints: 4 bytes a token, not a Python object each
    ends = array("i")
    raw = 0
    for sentence in corpus:
        raw += len(sentence)
        try:
            ids.extend([i for i in map(get, sentence) if i is not None])
        except TypeError:
            raise check_tokens(sentence) from None
        if len(ids) > (ends[-1] if ends else 0):
            ends.append(len(ids))
        if len(ids) >= chunk_tokens:
            yield _chunk(ids, ends, raw)
            ids, ends, raw = array("i"), array("i"), 0
    if ids or raw:
        yield _chunk(ids, ends, raw)


def _chunk(ids, ends, raw):
    # the arrays share the buffers of ``ids`` and ``ends`` (array "i" is a 4-byte C int)
    return EncodedChunk(np.frombuffer(ids, dtype=np.int32), np.frombuffer(ends, dtype=np.int32), raw)
