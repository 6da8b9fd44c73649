"""gensim's vocabulary methods of ``Word2Vec``: ``build_vocab`` (one pass, or an online update),
``scan_vocab`` / ``prepare_vocab`` / ``prepare_weights``, ``build_vocab_from_freq`` and ``reset_from``.

:class:`VocabularyMethods` is a mixin of :class:`embkit.text.word2vec.Word2Vec`: it sets ``vocab``,
``corpus`` (the corpus the vocabulary came from), ``corpus_count``, ``corpus_total_words``, ``raw_vocab``
and ``effective_min_count``, and sizes the tables through the model's ``_init_tables`` / ``_set_tables``.
"""
import logging
import os

import numpy as np

from embkit.text.corpus import as_corpus
from embkit.text.scan import scan_corpus
from embkit.text.shards import ShardedCorpus, cluster_vocab
from embkit.text.vocab import Vocab

logger = logging.getLogger(__name__)

__all__ = ["VocabularyMethods"]


class VocabularyMethods:
    """The vocabulary half of gensim's ``Word2Vec`` API (see the module docstring)."""

    def build_vocab(self, corpus_iterable=None, corpus_file=None, update=False, progress_per=10000,
                    keep_raw_vocab=False, trim_rule=None, progress=None, **_gensim_kwargs):
        """Read the corpus once, count the words and initialise the vectors (gensim's ``build_vocab``).

        Parameters
        ----------
        corpus_iterable : iterable of list of str, optional
        corpus_file : str, optional
            Exactly one of the two.
        update : bool
            Online training: add the corpus's new words (those passing ``min_count`` and ``trim_rule``) to
            the vocabulary, add its counts to the known words', and grow the tables (new input rows drawn
            as at initialisation, new output rows zero); the Huffman tree and the sampler follow the new
            counts.  The next ``train`` continues from the current weights.
        progress_per : int
            Accepted for gensim's API (embkit logs once per pass).
        keep_raw_vocab : bool
            Keep every distinct word's count in ``raw_vocab`` (a dict) instead of dropping it.
        trim_rule : callable, optional
            gensim's trim rule for this call (else the model's).
        """
        trim_rule = trim_rule if trim_rule is not None else self.trim_rule
        if update:      # the words of a new corpus, read here (an online update)
            return self._build_vocab_here(corpus_iterable, corpus_file, True, keep_raw_vocab, trim_rule)
        return self._local_or_cluster(
            lambda: self._build_vocab_here(corpus_iterable, corpus_file, False, keep_raw_vocab, trim_rule),
            lambda: self._build_cluster_vocab(corpus_iterable, corpus_file, trim_rule))

    def _build_vocab_here(self, corpus_iterable, corpus_file, update, keep_raw_vocab, trim_rule):
        """build_vocab in this process."""
        corpus = as_corpus(corpus_iterable, corpus_file, self.max_sentence_length)
        if update:
            self._check_vocab("an online vocabulary update (update=True)")
            self.scan_vocab(corpus, trim_rule=trim_rule)
            self.prepare_vocab(update=True, keep_raw_vocab=keep_raw_vocab, trim_rule=trim_rule)
            self.prepare_weights(update=True)
            return self
        self._drop_cache()
        self.corpus = corpus
        if self.max_vocab_size is None and not keep_raw_vocab:
            # one pass: the vocabulary and the encoded corpus for training together
            self.vocab, self._cache = scan_corpus(corpus, min_count=self.min_count,
                                                  max_final_vocab=self.max_final_vocab, trim_rule=trim_rule,
                                                  sorted_vocab=bool(self.sorted_vocab),
                                                  chunk_tokens=self.chunk_tokens, workers=self.workers)
            self._vocab_chosen(self.vocab.sentences, self.vocab.raw_words)
            self.prepare_weights()
        else:
            # bounded counting prunes words mid-pass, so the corpus is encoded in the first epoch instead
            self.scan_vocab(corpus, trim_rule=trim_rule)
            self.prepare_vocab(keep_raw_vocab=keep_raw_vocab, trim_rule=trim_rule)
            self.prepare_weights()
        return self

    def _build_cluster_vocab(self, corpus_iterable, corpus_file, trim_rule):
        """build_vocab of a cluster run: the words of a sharded corpus counted on the workers."""
        if corpus_file is None and isinstance(corpus_iterable, (str, os.PathLike, list, tuple)) and all(
                isinstance(p, (str, os.PathLike)) for p in ([corpus_iterable] if isinstance(
                    corpus_iterable, (str, os.PathLike)) else corpus_iterable)):
            corpus_iterable, corpus_file = None, corpus_iterable
        if corpus_iterable is not None or corpus_file is None:
            raise ValueError("a cluster run (client=) reads its corpus on the workers: give corpus_file (a path, glob "
                             "or list of files on any fsspec filesystem), not an in-memory iterable")
        self._drop_cache()
        self.corpus = ShardedCorpus(corpus_file, self.max_sentence_length)
        self.vocab = cluster_vocab(self.client, self.corpus, self, trim_rule)
        self._vocab_chosen(self.vocab.sentences, self.vocab.raw_words)
        self.prepare_weights()
        return self

    def scan_vocab(self, corpus_iterable=None, corpus_file=None, progress_per=10000, workers=None,
                   trim_rule=None):
        """Count every word of a corpus into ``raw_vocab`` (gensim's first step of ``build_vocab``).

        Returns ``(total_words, corpus_count)``: the corpus's tokens and sentences.
        """
        corpus = corpus_iterable if hasattr(corpus_iterable, "iter_token_blocks") else \
            as_corpus(corpus_iterable, corpus_file, self.max_sentence_length)
        words, counts, raw, sentences = Vocab.count(corpus, self.max_vocab_size,
                                                    trim_rule if trim_rule is not None else self.trim_rule,
                                                    workers=self.workers if workers is None else workers)
        self.raw_vocab = dict(zip(words, counts.tolist()))
        self._scanned = corpus
        self.corpus_count = sentences
        self.corpus_total_words = raw
        return raw, sentences

    def prepare_vocab(self, update=False, keep_raw_vocab=False, trim_rule=None, min_count=None, sample=None,
                      dry_run=False):
        """Choose the vocabulary from ``raw_vocab`` (gensim's second step of ``build_vocab``).

        Applies ``min_count`` (raised by ``max_final_vocab`` when needed: ``effective_min_count``), the trim
        rule and ``null_word``; with ``update`` grows the current vocabulary instead.  ``min_count`` and
        ``sample`` replace the model's; ``dry_run`` only reports.

        Returns
        -------
        dict
            gensim's report: ``drop_unique``, ``retain_total``, ``downsample_unique``, ``downsample_total``,
            ``num_retained_words``.
        """
        if self.raw_vocab is None:
            raise RuntimeError("no word counts to choose from: call scan_vocab (or build_vocab) first")
        min_count = self.min_count if min_count is None else min_count
        sample = self.sample if sample is None else sample
        trim_rule = trim_rule if trim_rule is not None else self.trim_rule
        words = list(self.raw_vocab)
        counts = np.fromiter(self.raw_vocab.values(), dtype=np.int64, count=len(words))
        raw = getattr(self, "corpus_total_words", None) or int(counts.sum())
        if update:
            self._check_vocab("an online vocabulary update (update=True)")
            vocab, _ = self.vocab.updated(words, counts, raw, min_count, trim_rule, self.corpus_count)
        else:
            vocab, _ = Vocab.from_counts(words, counts, raw, min_count, self.max_final_vocab, trim_rule,
                                         bool(self.sorted_vocab))
            vocab.sentences = self.corpus_count
            vocab = self._with_null_word(vocab)
        keep = vocab.keep_probabilities(sample)
        report = dict(vocab.report)
        report["downsample_unique"] = 0 if keep is None else int((keep < 1.0).sum())
        report["downsample_total"] = int(vocab.total_words if keep is None else round(float(
            (vocab.counts * keep).sum())))
        if dry_run:
            return report
        if not keep_raw_vocab:
            self.raw_vocab = None
        self.effective_min_count = vocab.effective_min_count
        self.vocab = vocab
        self._drop_cache()
        self.corpus = getattr(self, "_scanned", None)
        self._scanned = None
        if update and self.corpus is not None:
            # one epoch of the new corpus: its tokens that are in the grown vocabulary
            self._corpus_words = int(sum(c for w, c in zip(words, counts.tolist()) if w in vocab.key_to_index))
        else:
            self._corpus_words = vocab.total_words
        return report

    def prepare_weights(self, update=False):
        """Initialise the tables for the vocabulary, or grow them after an online update (gensim's third step)."""
        self._check_vocab()
        n = len(self.vocab)
        if not update or self.W_in is None:
            self._init_tables(n, n, self.vocab.counts)
            self._set_tables(self.W_in, self.W_out)
            self.min_alpha_yet_reached = float(self.alpha)    # fresh tables: a new schedule
            return
        old = self.W_in.shape[0]
        W_in = np.vstack([self.W_in, self._input_rows(n - old, np.random.default_rng((self.seed, old)))])
        rows = self._build_loss(self.vocab.counts, n).output_rows(n)
        W_out = np.zeros((rows, self.vector_size), dtype=np.float32)
        if self._loss_class().STACKED:        # two stacked tables: each keeps its rows
            half = self.W_out.shape[0] // 2
            W_out[:half] = self.W_out[:half]
            W_out[n:n + half] = self.W_out[half:]     # (the tree's rows follow the new counts' tree)
        else:
            W_out[:min(rows, self.W_out.shape[0])] = self.W_out[:rows]
        self._set_tables(W_in, W_out)

    def build_vocab_from_freq(self, word_freq, keep_raw_vocab=False, corpus_count=None, trim_rule=None,
                              update=False):
        """Build (or with ``update`` grow) the vocabulary from a ``{word: count}`` mapping, as gensim's.

        There is no corpus to train on afterwards: pass one to :meth:`train`.
        """
        if not isinstance(word_freq, dict):
            raise TypeError("word_freq must be a dict of word -> count, got %s" % type(word_freq).__name__)
        bad = next(((w, c) for w, c in word_freq.items() if not isinstance(c, (int, np.integer)) or c < 0), None)
        if bad is not None:
            raise ValueError("word_freq[%r] = %r is not a non-negative integer count" % bad)
        if update:
            self._check_vocab("an online vocabulary update (update=True)")
        self.raw_vocab = dict(word_freq)
        self._scanned = None
        self.corpus_count = corpus_count or 0
        self.corpus_total_words = int(sum(word_freq.values()))
        self.prepare_vocab(update=update, keep_raw_vocab=keep_raw_vocab, trim_rule=trim_rule)
        self.prepare_weights(update=update)
        return self

    def reset_from(self, other_model):
        """Take ``other_model``'s vocabulary and corpus counts and start from fresh tables (gensim's)."""
        other_model._check_vocab()
        self.vocab = other_model.vocab
        self.corpus = other_model.corpus
        self._corpus_words = other_model._corpus_words
        self.corpus_count = other_model.corpus_count
        self.corpus_total_words = other_model.corpus_total_words
        self._drop_cache()
        self.prepare_weights()

    def _with_null_word(self, vocab):
        if not self.null_word or "\0" in vocab.key_to_index:
            return vocab
        grown = Vocab(vocab.index_to_key + ["\0"], np.append(vocab.counts, 1), raw_words=vocab.raw_words,
                      sentences=vocab.sentences)
        grown.distinct_words, grown.effective_min_count = vocab.distinct_words, vocab.effective_min_count
        grown.report = vocab.report
        return grown

    def _vocab_chosen(self, sentences, raw_words):
        """Record what a one-pass scan of the vocabulary corpus saw."""
        self.vocab = self._with_null_word(self.vocab)
        self.effective_min_count = self.vocab.effective_min_count
        self.corpus_count = sentences
        self.corpus_total_words = raw_words
        self._corpus_words = self.vocab.total_words

    def _check_vocab(self, what="training"):
        if self.vocab is None or len(self.vocab) == 0:
            raise RuntimeError("you must first build vocabulary before %s: call build_vocab (or pass a corpus to "
                               "the constructor)" % what)

    def _drop_cache(self):
        if self._cache is not None:
            self._cache.close()
            self._cache = None
