"""``embkit.Word2Vec``: skip-gram and CBOW with gensim's constructor arguments and any loss/sampler."""
import logging

import numpy as np

from embkit._kernels.windows import WindowTrainer
from embkit.core.base import EmbeddingModel
from embkit.core.checkpoint import CheckpointError, fingerprint
from embkit.core.checks import NON_NEGATIVE_REAL, POSITIVE_INT, POSITIVE_REAL, check_param
from embkit.text.chunk_cache import ChunkCache, prefetch
from embkit.text.corpus import MAX_SENTENCE_LENGTH, as_corpus
from embkit.text.scan import scan_corpus
from embkit.text.vectors import save_word2vec_format
from embkit.text.vocab import Vocab

logger = logging.getLogger(__name__)


class Word2Vec(EmbeddingModel):
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
    callbacks : sequence
        gensim ``CallbackAny2Vec`` objects (or any object with some of their methods), called with the model.
    checkpoint_dir, checkpoint_every :
        Checkpoints of the training run (see :class:`~embkit.core.base.EmbeddingModel` and :meth:`resume`).
    progress : bool
        Show a progress bar.
    """

    chunk_param = "chunk_tokens"
    unit = "w"
    RUNTIME_PARAMS = EmbeddingModel.RUNTIME_PARAMS | {"sentences", "corpus_file"}

    def __init__(self, sentences=None, corpus_file=None, vector_size=100, alpha=0.05, window=5, min_count=5,
                 max_vocab_size=None, sample=1e-3, seed=1, workers=3, min_alpha=0.0001, sg=0, hs=0, negative=5,
                 ns_exponent=0.75, cbow_mean=1, epochs=5, max_final_vocab=None,
                 max_sentence_length=MAX_SENTENCE_LENGTH, loss=None, sampler=None, loss_params=None,
                 sampler_params=None, shared_negatives=None, chunk_tokens=1 << 18, callbacks=(), checkpoint_dir=None,
                 checkpoint_every=600, progress=False):
        if loss is None:
            if hs == 1 and negative:
                raise ValueError("hs=1 with negative=%r: gensim would train both objectives at once; embkit "
                                 "trains one loss, so set negative=0 for hierarchical softmax (or hs=0)"
                                 % (negative,))
            loss = "hs" if hs else "sgns"
        self.window = window
        self.min_count = min_count
        self.max_vocab_size = max_vocab_size
        self.sample = sample
        self.sg = int(sg)
        self.hs = int(hs)
        self.ns_exponent = ns_exponent
        self.cbow_mean = int(cbow_mean)
        self.max_final_vocab = max_final_vocab
        self.max_sentence_length = max_sentence_length
        self.shared_negatives = bool(self.sg) if shared_negatives is None else bool(shared_negatives)
        self.chunk_tokens = chunk_tokens
        self.vocab = None
        self.wv = None
        self.corpus = None
        self._cache = None
        super().__init__(vector_size=vector_size, loss=loss, sampler=sampler, negative=negative, alpha=alpha,
                         min_alpha=min_alpha, epochs=epochs, workers=workers, seed=seed, loss_params=loss_params,
                         sampler_params=sampler_params, callbacks=callbacks, checkpoint_dir=checkpoint_dir,
                         checkpoint_every=checkpoint_every, progress=progress)
        if sentences is not None or corpus_file is not None:
            self.build_vocab(sentences, corpus_file=corpus_file)
            self.train()

    def check_params(self):
        """Raise ValueError naming the first invalid parameter."""
        super().check_params()
        for name in ("window", "min_count", "max_sentence_length"):
            check_param(name, getattr(self, name), *POSITIVE_INT)
        check_param("sample", self.sample, *NON_NEGATIVE_REAL)
        check_param("ns_exponent", self.ns_exponent, lambda v: np.isfinite(v), "a finite number")
        for name in ("max_vocab_size", "max_final_vocab"):
            if getattr(self, name) is not None:
                check_param(name, getattr(self, name), *POSITIVE_INT)
        for name, values, what in (("sg", (0, 1), "0 (CBOW) or 1 (skip-gram)"), ("cbow_mean", (0, 1), "0 or 1"),
                                   ("hs", (0, 1), "0 or 1")):
            if getattr(self, name) not in values:
                raise ValueError("%s must be %s, got %r" % (name, what, getattr(self, name)))

    @property
    def syn1neg(self):
        """The output table (gensim's name; one row per word, or per Huffman-tree node with ``hs``)."""
        return self.W_out

    @syn1neg.setter
    def syn1neg(self, table):
        self.W_out = table

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
        self._init_tables(len(self.vocab), len(self.vocab), self.vocab.counts)
        self._set_tables(self.W_in, self.W_out)

    def _set_tables(self, W_in, W_out):
        from gensim.models import KeyedVectors
        kv = KeyedVectors(self.vector_size, count=0, dtype=np.float32)
        kv.index_to_key = self.vocab.index_to_key
        kv.key_to_index = self.vocab.key_to_index
        kv.vectors = W_in
        kv.allocate_vecattrs(attrs=["count"], types=[np.int64])
        kv.expandos["count"][:] = self.vocab.counts
        self.wv = kv
        self.W_in, self.W_out = W_in, W_out

    # ------------------------------------------------------------------ training
    def _sampler_params(self):
        params = dict(self.sampler_params)
        if self.sampler_name == "unigram":
            params.setdefault("ns_exponent", self.ns_exponent)
        return params

    def _kernel_trainer(self, loss, sampler, alpha, min_alpha, total):
        return WindowTrainer(self.W_in, self.W_out, self.vocab.keep_probabilities(self.sample), loss, sampler,
                             self.window, self.sg, self.cbow_mean, self.negative, self.shared_negatives,
                             alpha, min_alpha, total, self.seed)

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
        else:
            check_param("total_words", total_words, *POSITIVE_REAL)
        if total_words <= 0:
            raise ValueError("the training corpus has no word of the vocabulary")

        def chunks(epoch):
            if cache.complete:
                return iter(cache)
            return self._encode_into(cache, corpus)

        run_args = {"corpus_file": getattr(corpus, "source", None), "vocab_corpus": corpus is self.corpus,
                    "total_words": total_words, "epochs": epochs, "start_alpha": start_alpha, "end_alpha": end_alpha}
        digest = None
        if self.checkpoint_dir is not None or self._resuming is not None:
            digest = fingerprint(np.asarray(self.vocab.counts), np.frombuffer(
                "\n".join(self.vocab.index_to_key).encode("utf-8", "surrogatepass"), dtype=np.uint8))
            if cache.complete:
                digest += "-" + cache.digest()
        self.wv.norms = None
        try:
            report = self._train(chunks, total_words, self.vocab.counts, len(self.vocab), epochs, start_alpha,
                                 end_alpha, desc="%s %dd" % ("skip-gram" if self.sg else "cbow", self.vector_size),
                                 progress=progress, run_args=run_args, fingerprint=digest)
        finally:
            self.wv.norms = None
        logger.info("trained %d epochs: %d words in %.1fs (%.0f words/s, %.0f raw words/s), loss %.4f",
                    report.epochs, report.words, report.seconds, report.words_per_second,
                    report.raw_words_per_second, report.epoch_loss[-1] if report.epoch_loss else float("nan"))
        return report

    @classmethod
    def resume(cls, directory, corpus_iterable=None, corpus_file=None, callbacks=(), progress=None, **params):
        """Continue the run checkpointed in ``directory``; returns the trained model.

        The corpus is read again (the file the run trained on, unless another ``corpus_file`` or a
        ``corpus_iterable`` is given: an iterable corpus must be passed again) and must give the
        checkpoint's vocabulary and text.  The result is the model the uninterrupted run would have given:
        bit-identical with ``workers=1``.  ``params`` may repeat constructor parameters; one that differs
        from the checkpoint's is refused (``workers`` may change).
        """
        model, run = cls._open_checkpoint(directory, params, callbacks, progress)
        args = dict(run["args"])
        saved_file = args.pop("corpus_file", None)
        if corpus_iterable is None and corpus_file is None:
            if saved_file is None:
                raise CheckpointError("the checkpointed run trained on an iterable corpus: pass it again as "
                                      "corpus_iterable")
            corpus_file = saved_file
        if args.pop("vocab_corpus", False):
            # the run trained on the corpus its vocabulary came from: read it the way build_vocab did
            model._read_again(corpus_iterable, corpus_file)
            model.train(**args)
        else:
            model.train(corpus_iterable, corpus_file, **args)
        return model

    def _read_again(self, corpus_iterable, corpus_file):
        """Read the vocabulary corpus of a resumed run as build_vocab did; the same vocabulary must come out
        (the tables are kept)."""
        saved = self.vocab
        self.corpus = as_corpus(corpus_iterable, corpus_file, self.max_sentence_length)
        if self.max_vocab_size is None:
            vocab, self._cache = scan_corpus(self.corpus, min_count=self.min_count,
                                             max_final_vocab=self.max_final_vocab, chunk_tokens=self.chunk_tokens)
        else:
            vocab = Vocab.build(self.corpus, min_count=self.min_count, max_vocab_size=self.max_vocab_size,
                                max_final_vocab=self.max_final_vocab)
        if vocab.index_to_key != saved.index_to_key or not np.array_equal(vocab.counts, saved.counts):
            raise CheckpointError("the corpus %s is not the checkpoint's: its vocabulary has %d words (%d corpus "
                                  "words), the checkpoint's %d (%d)" % (self.corpus, len(vocab), vocab.raw_words,
                                                                      len(saved), saved.raw_words))
        self.vocab = vocab
        self._set_tables(self.W_in, self.W_out)

    def _encode_into(self, cache, corpus):
        for chunk in prefetch(self.vocab.encode(corpus, self.chunk_tokens)):
            cache.append(chunk)
            yield chunk
        cache.complete = True

    # ------------------------------------------------------------------ persistence
    def _state(self):
        return {"raw_words": self.vocab.raw_words}

    def _words(self):
        return self.vocab.index_to_key

    def _arrays(self):
        return {"counts": self.vocab.counts}

    def _restore(self, state, words, arrays):
        self.vocab = Vocab(words, arrays["counts"], raw_words=state.get("raw_words", 0))
        self._set_tables(self.W_in, self.W_out)

    def save_word2vec_format(self, path, binary=False, overwrite=True):
        """Export the input vectors in word2vec text (or binary) format, atomically."""
        save_word2vec_format(self.wv, path, binary=binary, overwrite=overwrite)

    def _repr_fields(self):
        return ["skip-gram" if self.sg else "cbow", "vocab=%d" % (len(self.vocab) if self.vocab is not None else 0)]
