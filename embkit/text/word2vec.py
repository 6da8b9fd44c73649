"""``embkit.Word2Vec``: skip-gram and CBOW with gensim's constructor arguments and any loss/sampler."""
import logging
import numbers

import numpy as np

from embkit.core import persist
from embkit.core import registry
from embkit.core.checks import check_param as _check, check_names
from embkit._kernels.windows import WindowTrainer
from embkit.text.chunk_cache import ChunkCache, prefetch
from embkit.text.corpus import MAX_SENTENCE_LENGTH, as_corpus
from embkit.text.scan import scan_corpus
from embkit.core.training import run_epochs
from embkit.text.vectors import save_word2vec_format
from embkit.text.vocab import Vocab

logger = logging.getLogger(__name__)

# parameters saved with a model, in constructor order
PARAMS = ("vector_size", "alpha", "window", "min_count", "max_vocab_size", "sample", "seed", "workers",
          "min_alpha", "sg", "hs", "negative", "ns_exponent", "cbow_mean", "epochs", "max_final_vocab",
          "max_sentence_length", "loss", "sampler", "loss_params", "sampler_params", "shared_negatives",
          "chunk_tokens")


@persist.register_model
class Word2Vec:
    """Word embeddings by skip-gram or CBOW, trained by Hogwild Cython kernels.

    The arguments shared with ``gensim.models.Word2Vec`` have the same meaning and defaults.  Training
    starts at once when ``sentences`` or ``corpus_file`` is given.

    Parameters
    ----------
    sentences : iterable of list of str, or str path, optional
        A restartable iterable of tokenised sentences (or a path, treated as ``corpus_file``).
    corpus_file : str, optional
        File, directory or URL (smart-open: plain, .gz, .bz2, http(s), s3); one sentence per line, long lines
        (text8) cut into pieces of ``max_sentence_length`` tokens without dropping any.
    vector_size : int
        Dimension of the vectors (>= 1).
    alpha, min_alpha : float
        Learning rate at the start and at the end; it decays linearly with global progress.  The default
        0.05 is word2vec.c's CBOW rate and fastText's; gensim's is 0.025, which on our benchmarks scores
        clearly lower on word similarity (see BENCHMARKS.md).
    window : int
        Maximum distance between the centre and a context word (>= 1); each centre draws a reduced window
        uniformly in ``[1, window]``, as word2vec does.
    min_count, max_vocab_size, max_final_vocab : int
        Vocabulary limits, see :meth:`embkit.text.vocab.Vocab.build`.
    sample : float
        Subsampling threshold for frequent words (0 disables).
    seed : int
        Seed of the initial vectors and of the kernels' random generators; with ``workers=1`` a run is
        reproducible bit for bit.
    workers : int
        Training threads.
    sg : {0, 1}
        1 for skip-gram, 0 for CBOW.
    hs : {0, 1}
        1 selects the ``hs`` loss (hierarchical softmax) when ``negative`` is 0.
    negative : int
        Negatives per example (0 with ``hs=0`` is invalid).
    ns_exponent : float
        Exponent of the unigram sampler's distribution (0.75 as word2vec, 1 popularity, 0 uniform).
    cbow_mean : {0, 1}
        CBOW hidden vector is the mean (1) or the sum (0) of the context vectors.
    epochs : int
        Passes over the corpus.
    loss : str
        Loss name from :data:`embkit.core.registry.LOSSES` (default ``"sgns"``).
    sampler : str, optional
        Sampler name from :data:`embkit.core.registry.SAMPLERS`; sampled losses default to ``"unigram"`` with
        ``ns_exponent``.  Losses that draw no negatives (``full_softmax``, ``hs``) take none.
    loss_params, sampler_params : dict, optional
        Extra parameters of the loss and the sampler.
    shared_negatives : bool or None
        Skip-gram only: the context words of a centre word share one negative set and train as one
        mini-batch (blocked matrix products; each output row is written once per centre word) instead of
        one set per (centre, context) pair as in word2vec.  ``None`` (default) turns it on for skip-gram:
        on our benchmarks it is faster and scores at least as well (see BENCHMARKS.md).  CBOW has one
        example per centre word, so the setting changes nothing there.
    chunk_tokens : int
        Tokens per kernel call; bounds memory.
    progress : bool
        Show a progress bar.
    """

    def __init__(self, sentences=None, corpus_file=None, vector_size=100, alpha=0.05, window=5, min_count=5,
                 max_vocab_size=None, sample=1e-3, seed=1, workers=3, min_alpha=0.0001, sg=0, hs=0, negative=5,
                 ns_exponent=0.75, cbow_mean=1, epochs=5, max_final_vocab=None,
                 max_sentence_length=MAX_SENTENCE_LENGTH, loss=None, sampler=None, loss_params=None,
                 sampler_params=None, shared_negatives=None, chunk_tokens=1 << 18, progress=False):
        if loss is None:
            if hs == 1 and negative:
                raise ValueError("hs=1 with negative=%r: gensim would train both objectives at once; embkit "
                                 "trains one loss, so set negative=0 for hierarchical softmax (or hs=0)"
                                 % (negative,))
            loss = "hs" if hs else "sgns"
        self.vector_size = vector_size
        self.alpha = alpha
        self.window = window
        self.min_count = min_count
        self.max_vocab_size = max_vocab_size
        self.sample = sample
        self.seed = seed
        self.workers = workers
        self.min_alpha = min_alpha
        self.sg = int(sg)
        self.hs = int(hs)
        self.negative = negative
        self.ns_exponent = ns_exponent
        self.cbow_mean = int(cbow_mean)
        self.epochs = epochs
        self.max_final_vocab = max_final_vocab
        self.max_sentence_length = max_sentence_length
        self.loss = loss
        self.sampler = sampler
        self.loss_params = dict(loss_params or {})
        self.sampler_params = dict(sampler_params or {})
        self.shared_negatives = bool(self.sg) if shared_negatives is None else bool(shared_negatives)
        self.chunk_tokens = chunk_tokens
        self.progress = progress
        self._validate()
        self.vocab = None
        self.wv = None
        self.syn1neg = None
        self.corpus = None
        self._cache = None
        self.last_report = None
        if sentences is not None or corpus_file is not None:
            self.build_vocab(sentences, corpus_file=corpus_file)
            self.train()

    # ------------------------------------------------------------------ checks
    def _validate(self):
        pos_int = (lambda v: v >= 1, "an integer >= 1", numbers.Integral)
        _check("vector_size", self.vector_size, *pos_int)
        _check("window", self.window, *pos_int)
        _check("workers", self.workers, *pos_int)
        _check("epochs", self.epochs, *pos_int)
        _check("min_count", self.min_count, lambda v: v >= 1, "an integer >= 1", numbers.Integral)
        _check("negative", self.negative, lambda v: v >= 0, "an integer >= 0", numbers.Integral)
        _check("seed", self.seed, lambda v: v >= 0, "an integer >= 0", numbers.Integral)
        _check("chunk_tokens", self.chunk_tokens, *pos_int)
        _check("max_sentence_length", self.max_sentence_length, *pos_int)
        _check("sample", self.sample, lambda v: v >= 0 and np.isfinite(v), "a number >= 0")
        _check("alpha", self.alpha, lambda v: v > 0 and np.isfinite(v), "a number > 0")
        _check("min_alpha", self.min_alpha, lambda v: 0 <= v <= self.alpha, "a number in [0, alpha]")
        _check("ns_exponent", self.ns_exponent, lambda v: np.isfinite(v), "a finite number")
        for name in ("max_vocab_size", "max_final_vocab"):
            if getattr(self, name) is not None:
                _check(name, getattr(self, name), *pos_int)
        if self.sg not in (0, 1):
            raise ValueError("sg must be 0 (CBOW) or 1 (skip-gram), got %r" % self.sg)
        if self.cbow_mean not in (0, 1):
            raise ValueError("cbow_mean must be 0 or 1, got %r" % self.cbow_mean)
        if self.hs not in (0, 1):
            raise ValueError("hs must be 0 or 1, got %r" % self.hs)
        check_names(self.loss, self.sampler, registry)
        if self.loss not in registry.UNSAMPLED_LOSSES and self.negative == 0:
            raise ValueError("negative must be >= 1 for the %s loss (negative=0 needs hs=1 or a loss that "
                             "draws no negatives: %s)" % (self.loss, ", ".join(sorted(registry.UNSAMPLED_LOSSES))))

    # ------------------------------------------------------------------ vocabulary
    def build_vocab(self, corpus_iterable=None, corpus_file=None, progress=None):
        """Read the corpus once, count the words and initialise the vectors.

        Parameters
        ----------
        corpus_iterable : iterable of list of str, optional
        corpus_file : str, optional
            Exactly one of the two.
        """
        self.corpus = as_corpus(corpus_iterable, corpus_file, self.max_sentence_length)
        if self._cache is not None:
            self._cache.close()
            self._cache = None
        if self.max_vocab_size is None:
            # one pass: the vocabulary and the encoded corpus for training together
            self.vocab, self._cache = scan_corpus(self.corpus, min_count=self.min_count,
                                                  max_final_vocab=self.max_final_vocab,
                                                  chunk_tokens=self.chunk_tokens)
        else:
            # bounded counting prunes words mid-pass, so the corpus is encoded in the first epoch instead
            self.vocab = Vocab.build(self.corpus, min_count=self.min_count, max_vocab_size=self.max_vocab_size,
                                     max_final_vocab=self.max_final_vocab)
        self._init_vectors()
        return self

    def _init_vectors(self):
        n, d = len(self.vocab), self.vector_size
        rng = np.random.default_rng(self.seed)
        W_in = rng.random((n, d), dtype=np.float32)
        W_in -= 0.5
        W_in /= d
        self._set_tables(W_in, np.zeros((self._make_loss().output_rows(n), d), dtype=np.float32))

    def _set_tables(self, W_in, W_out):
        from gensim.models import KeyedVectors
        kv = KeyedVectors(self.vector_size, count=0, dtype=np.float32)
        kv.index_to_key = self.vocab.index_to_key
        kv.key_to_index = self.vocab.key_to_index
        kv.vectors = W_in
        kv.allocate_vecattrs(attrs=["count"], types=[np.int64])
        kv.expandos["count"][:] = self.vocab.counts
        self.wv = kv
        self.syn1neg = W_out

    # ------------------------------------------------------------------ training
    def _make_loss(self):
        return registry.make_loss(self.loss, counts=self.vocab.counts, **self.loss_params)

    def _make_trainer(self, total_words, alpha, min_alpha):
        n = len(self.vocab)
        loss = self._make_loss()
        sampler = None
        if loss.uses_negatives:
            params = dict(self.sampler_params)
            name = self.sampler or "unigram"
            if name == "unigram":
                params.setdefault("ns_exponent", self.ns_exponent)
            sampler = registry.make_sampler(name, counts=self.vocab.counts, n_classes=n, **params)
            registry.check_pairing(loss, sampler, self.negative, n)
            if not sampler.query_free:
                sampler.bind(self.syn1neg)
        return WindowTrainer(self.wv.vectors, self.syn1neg, self.vocab.keep_probabilities(self.sample), loss,
                             sampler, self.window, self.sg, self.cbow_mean, self.negative, self.shared_negatives,
                             alpha, min_alpha, total_words, self.seed)

    def train(self, corpus_iterable=None, corpus_file=None, total_words=None, epochs=None, start_alpha=None,
              end_alpha=None, progress=None, **_gensim_compat):
        """Train on the corpus given here, or on the one the vocabulary was built from.

        Parameters
        ----------
        total_words : int, optional
            In-vocabulary words per epoch, for the learning-rate schedule; counted when not given.
        epochs, start_alpha, end_alpha : optional
            Override the model's settings for this call.
        progress : bool, optional
            Show a progress bar (defaults to the model's ``progress``).

        Returns
        -------
        TrainingReport
        """
        if self.vocab is None:
            raise RuntimeError("build the vocabulary first (build_vocab) or pass a corpus to the constructor")
        epochs = self.epochs if epochs is None else epochs
        alpha = self.alpha if start_alpha is None else start_alpha
        min_alpha = self.min_alpha if end_alpha is None else end_alpha
        _check("epochs", epochs, lambda v: v >= 1, "an integer >= 1", numbers.Integral)
        _check("start_alpha", alpha, lambda v: v > 0 and np.isfinite(v), "a number > 0")
        corpus = self.corpus
        if corpus_iterable is not None or corpus_file is not None:
            corpus = as_corpus(corpus_iterable, corpus_file, self.max_sentence_length)
        if corpus is None:
            raise RuntimeError("no corpus to train on: this model's vocabulary was not built from a corpus here "
                               "(e.g. it was loaded from a file); pass corpus_iterable or corpus_file")
        cache = self._cache if corpus is self.corpus else None
        if cache is not None and not cache.complete:
            # an interrupted pass (error, Ctrl-C) left it partial: appending to it would duplicate chunks
            cache.close()
            cache = self._cache = None
        if cache is None:
            cache = ChunkCache()
            if total_words is None and corpus is not self.corpus:
                for chunk in self.vocab.encode(corpus, self.chunk_tokens):  # count exactly first
                    cache.append(chunk)
                cache.complete = True
        if corpus is self.corpus:
            self._cache = cache
        if total_words is None:
            total_words = cache.tokens if cache.complete else self.vocab.total_words
        if total_words <= 0:
            raise ValueError("the training corpus has no word of the vocabulary")

        def chunks(epoch):
            if cache.complete:
                return iter(cache)
            return self._encode_into(cache, corpus)

        trainer = self._make_trainer(float(total_words) * epochs, alpha, min_alpha)
        self.wv.norms = None
        report = run_epochs(trainer, chunks, total_words, epochs, self.workers, alpha,
                            progress=self.progress if progress is None else progress,
                            desc="%s %dd" % ("skip-gram" if self.sg else "cbow", self.vector_size))
        self.wv.norms = None
        self.last_report = report
        logger.info("trained %d epochs: %d words in %.1fs (%.0f words/s, %.0f raw words/s), loss %.4f",
                    report.epochs, report.words, report.seconds, report.words_per_second,
                    report.raw_words_per_second, report.epoch_loss[-1] if report.epoch_loss else float("nan"))
        return report

    def _encode_into(self, cache, corpus):
        for chunk in prefetch(self.vocab.encode(corpus, self.chunk_tokens)):
            cache.append(chunk)
            yield chunk
        cache.complete = True

    # ------------------------------------------------------------------ persistence
    def save(self, path, overwrite=True):
        """Save the model (vectors, output table, vocabulary, settings) atomically to ``path``."""
        if self.vocab is None:
            raise RuntimeError("nothing to save: the model has no vocabulary yet")
        config = {name: getattr(self, name) for name in PARAMS}
        config["raw_words"] = self.vocab.raw_words
        persist.save_archive(path, {"model": "Word2Vec", "params": config}, self.vocab.index_to_key,
                             {"W_in": self.wv.vectors, "W_out": self.syn1neg, "counts": self.vocab.counts},
                             overwrite=overwrite)

    @classmethod
    def load(cls, path):
        """Load a model written by :meth:`save`."""
        model, config, words, arrays = persist.load_model(path, cls, PARAMS)
        params = config["params"]
        model.vocab = Vocab(words, arrays["counts"], raw_words=params.get("raw_words", 0))
        model._cache = None
        model._set_tables(arrays["W_in"], arrays["W_out"])
        return model

    def save_word2vec_format(self, path, binary=False, overwrite=True):
        """Export the input vectors in word2vec text (or binary) format, atomically."""
        save_word2vec_format(self.wv, path, binary=binary, overwrite=overwrite)

    def __repr__(self):
        size = len(self.vocab) if self.vocab is not None else 0
        sampler = "-" if self.loss in registry.UNSAMPLED_LOSSES else (self.sampler or "unigram")
        return "Word2Vec<%s, vocab=%d, vector_size=%d, loss=%s, sampler=%s>" % (
            "skip-gram" if self.sg else "cbow", size, self.vector_size, self.loss, sampler)
