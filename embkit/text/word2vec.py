"""``embkit.Word2Vec``: skip-gram and CBOW with gensim's constructor arguments and any loss/sampler."""
import logging
import os

import numpy as np

from embkit._kernels.windows import WindowTrainer
from embkit.cluster import (EXCHANGE_BITS, EXCHANGE_SHARE, FREQUENT_ROWS, RECONCILE, STALENESS, SYNCS_PER_EPOCH,
                            ClusterTraining)
from embkit.core.base import EmbeddingModel, class_only
from embkit.core.checkpoint import CheckpointError, fingerprint
from embkit.core.checks import (BOOL, COUNT, FINITE_REAL, INT64_MAX, MAX_WINDOW, NON_NEGATIVE_INT, NON_NEGATIVE_REAL,
                                PATHS, POSITIVE_INT, POSITIVE_REAL, check_flag, check_param, int_in,
                                optional)
from embkit.core.batched_softmax import check_batch_size
from embkit.core.hot_rows import word_hot_rows
from embkit.core.pickles import check_consent, is_pickle
from embkit.core.training import TrainingReport
from embkit.text.chunk_cache import ChunkCache
from embkit.text.corpus import MAX_SENTENCE_LENGTH, as_corpus
from embkit.text.gensim_models import cum_table, load_gensim_model
from embkit.text.predict import predict_output_word, score_sentences
from embkit.text.prefetch import prefetch
from embkit.text.shards import sharded_run
from embkit.text.vectors import save_word2vec_format
from embkit.text.vocab import Vocab, check_trainable
from embkit.text.vocab_methods import VocabularyMethods
from embkit.text.window_batches import WindowBatches

logger = logging.getLogger(__name__)


def _output_table(name, flag, first, doc):
    """A property for the part of the output table gensim calls ``name``, held by losses with ``flag``;
    assigning to it writes into the table."""
    def read(self):
        return self._output_part(name, getattr(self._loss_class(), flag), first)

    def write(self, table):
        read(self)[...] = table
    return property(read, write, doc=doc)


class Word2Vec(VocabularyMethods, ClusterTraining, EmbeddingModel):
    """Word embeddings by skip-gram or CBOW, trained by Hogwild Cython kernels.

    gensim's ``Word2Vec`` API with gensim's semantics: the constructor's arguments (in gensim's order),
    ``build_vocab`` (with ``update=True`` for online training), ``train``, ``scan_vocab`` /
    ``prepare_vocab`` / ``prepare_weights``, ``build_vocab_from_freq``, ``corpus_count``,
    ``corpus_total_words``, ``syn1`` / ``syn1neg``, ``predict_output_word``, ``score``,
    ``get_latest_training_loss``, ``estimate_memory``, ``reset_from``, and ``load`` of gensim's own model
    files.  ``wv`` is a ``gensim.models.KeyedVectors``.  Training starts at once when ``sentences`` or
    ``corpus_file`` is given.  Where embkit differs (the default ``alpha``, ``hashfxn``) the parameter says so.

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
        Vocabulary limits, see :meth:`embkit.text.vocab.Vocab.build` (``min_count=0`` keeps every word).
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
        1 selects the ``hs`` loss (hierarchical softmax) when ``negative`` is 0, and ``hs_sgns`` (both
        objectives, as gensim trains them, with a warning as gensim's) when it is not.
    negative : int
        Negatives per example (0 with ``hs=0`` is invalid).
    ns_exponent : float
        Exponent of the unigram sampler's distribution (0.75 as word2vec, 1 popularity, 0 uniform).
    cbow_mean : {0, 1}
        CBOW hidden vector is the mean (1) or the sum (0) of the context vectors.
    hashfxn : callable
        Accepted for gensim's signature; it changes nothing: gensim seeds each word's initial vector from
        ``hashfxn(word + str(seed))``, embkit draws the whole table from ``seed`` (not saved).
    epochs : int
        Passes over the corpus.
    null_word : {0, 1}
        1 adds gensim's padding word ``"\0"`` (count 1) at the end of the vocabulary.
    trim_rule : callable, optional
        gensim's ``trim_rule(word, count, min_count)`` returning ``gensim.utils.RULE_KEEP``,
        ``RULE_DISCARD`` or ``RULE_DEFAULT``; used while the vocabulary is built, not saved (as gensim).
    sorted_vocab : {0, 1}
        1 orders the vocabulary by descending count (else first-seen order).
    batch_words : int
        Fewest words one training thread takes at a time: a chunk smaller than ``workers * batch_words``
        runs on fewer threads (so tiny corpora train deterministically, as in gensim).  On a cluster a
        replica's threads share even a shorter round, each taking the round's words over the threads.
    compute_loss : bool
        Accepted for gensim's API; embkit always accumulates the loss (float64, per epoch), see
        :meth:`get_latest_training_loss` and ``loss_history``.
    comment : str, optional
        Free text kept with the model.
    shrink_windows : bool
        Draw a reduced window in ``[1, window]`` per centre word (word2vec, default); False always uses
        ``window``.
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
        Tokens per chunk of the encoded corpus (chunks are what threads share and memory is bounded by).
    hot_rows : int or None
        Each training thread keeps its own copies of the output rows of the ``hot_rows`` most frequent
        words (the rows most steps write, which threads otherwise keep taking from each other's caches) and
        adds its change to the table after ``128 // workers`` steps on a row, every 65,536 centre words and
        at the end of each slice (:mod:`embkit.core.hot_rows`); skip-gram's threads, from 16 workers on, of
        those words' input rows too, each written back after ``64 // workers`` steps.  None (default): for
        skip-gram from 4 workers on as many words as 400 KiB of copies a table holds (512 at 100 dimensions),
        none with fewer workers (two threads on two cores were faster sharing the tables) or for CBOW (its
        analogy accuracy was lower with them, BENCHMARKS.md); 0: every step writes the table.  One worker
        keeps no copies; nor does a loss that reaches its output rows otherwise (``hs``, the full softmax) or
        a sampler that scores the table at every draw (``topk``, ``boltzmann``: its draws would not see the
        thread's own steps).
    batch_size : int, optional
        Skip-gram with ``loss="full_softmax"`` only: train the exact softmax in mini-batches of this many
        (context, centre) pairs with BLAS products (:mod:`embkit.text.window_batches`), which reads each
        output row once per batch instead of once per pair; None (default) runs the per-example kernel.
    callbacks : sequence
        gensim ``CallbackAny2Vec`` objects (or any object with some of their methods), called with the model.
    checkpoint_dir, checkpoint_every :
        Checkpoints of the training run (see :class:`~embkit.core.base.EmbeddingModel` and :meth:`resume`).
    progress : bool
        Show a progress bar.
    client : dask.distributed.Client, optional
        Train on the workers of this Dask cluster (the ``[cluster]`` extra): ``corpus_file`` is then a path,
        glob or list of files on any fsspec filesystem, every file (every 32 MiB of a plain-text one) a shard
        read by one worker (:mod:`embkit.text.shards`); each worker trains a replica of the tables with
        ``workers`` threads (see :mod:`embkit.cluster`).  Not saved.
    syncs_per_epoch : int or None
        With ``client``: reconciliations of the replicas per epoch, evenly spaced.  None (the default): for
        two workers, rounds that each train a sixteenth of what is left of the run, and at least about
        75,000 words a replica (:data:`embkit.cluster.ROUND_UNITS`): long at the start, shrinking to rounds
        short enough to keep one process's quality at the end, which decides it
        (:mod:`embkit.cluster.rounds`); for more workers, even rounds of about 75,000 words.  Fewer or
        longer last rounds cost less exchange and lose quality (CLUSTER.md).
    reconcile : {"momentum", "sum", "average"}
        With ``client``: how the replicas' changed rows are merged (see :mod:`embkit.cluster.reconcile`).
    exchange_share : float
        With ``client``: the share of each round's squared step a replica sends: 1 (the default) sends every
        row it changed; below 1, only the rows that moved farthest, holding that share, and the rest stays in
        the replica's table for later rounds (the run's last round sends all of it).  0.5 sends far fewer
        bytes at about the same quality (CLUSTER.md); a replica lost mid-run, and a run stopped
        before its last round, lose what the replicas kept, and a resumed run does not end bit for bit as
        the uninterrupted one.
    exchange_bits : {16, 8}
        With ``client``: bits a value of the rows the replicas exchange: 16 (float16, the default) or 8
        (each row rounded to 8 bits a value: about half the bytes; see :mod:`embkit.cluster.reconcile`, and
        CLUSTER.md for its quality and cost).
    staleness : {0, 1}
        With ``client``: 1 lets a replica train the next round while the last round's rows are exchanged,
        adopting them when that round ends (the other replicas' steps arrive one round late; an epoch's last
        round is reconciled at once); 0 (the default) reconciles every round before the next.  It applies to
        two workers: runs of more, and runs with checkpoints or callbacks, reconcile every round
        (:func:`embkit.cluster.settings.run_staleness`, CLUSTER.md).
    frequent_rows : bool
        With ``client`` and 3 workers or more: reconcile the rows of the most frequent words (those every
        replica moves within a round) after every part of about 12,500 words of a round as well as at its end
        (True, the default; :func:`embkit.cluster.settings.hot_rows`).  With 8 workers on gcide this kept
        one process's quality at the default rounds, which lose 2-3 analogy points without it; False
        exchanges less (CLUSTER.md).
    """

    chunk_param = "chunk_tokens"
    NAMED_ROWS = True
    unit = "word"
    STATE_FIELDS = dict({name: (optional(COUNT), False) for name in ("raw_words", "corpus_count", "corpus_total_words",
                                                                     "effective_min_count")},
                        min_alpha_yet_reached=(optional(NON_NEGATIVE_REAL), False))
    RUN_ARG_FIELDS = {"corpus_file": (PATHS, False), "vocab_corpus": (BOOL, False),
                      "total_words": (optional(COUNT), False), "epochs": (optional(POSITIVE_INT), False),
                      "start_alpha": (optional(POSITIVE_REAL), False), "end_alpha": (optional(NON_NEGATIVE_REAL), False)}
    STACKED_OUTPUTS = True
    CLUSTER_STATE = "vocab"
    CLASS_INPUTS = True
    RUNTIME_PARAMS = EmbeddingModel.RUNTIME_PARAMS | {"sentences", "corpus_file", "hashfxn", "trim_rule"} | ClusterTraining.CLUSTER_PARAMS
    #: a resumed run may move to (or between) clusters; the cluster settings are checked against its run
    RESUMABLE_CHANGES = EmbeddingModel.RESUMABLE_CHANGES | ClusterTraining.CLUSTER_PARAMS
    #: the encoded corpus (a temporary file: encoded again by the next train), gensim's view of the tables
    #: (made again when read) and the cluster client (a restored model trains in its own process)
    TRANSIENT = EmbeddingModel.TRANSIENT | {"_cache", "_wv", "client"}

    def __init__(self, sentences=None, corpus_file=None, vector_size=100, alpha=0.05, window=5, min_count=5,
                 max_vocab_size=None, sample=1e-3, seed=1, workers=3, min_alpha=0.0001, sg=0, hs=0, negative=5,
                 ns_exponent=0.75, cbow_mean=1, hashfxn=hash, epochs=5, null_word=0, trim_rule=None,
                 sorted_vocab=1, batch_words=10000, compute_loss=False, callbacks=(), comment=None,
                 max_final_vocab=None, shrink_windows=True, max_sentence_length=MAX_SENTENCE_LENGTH, loss=None,
                 sampler=None, loss_params=None, sampler_params=None, shared_negatives=None,
                 chunk_tokens=1 << 18, hot_rows=None, batch_size=None, checkpoint_dir=None, checkpoint_every=600,
                 progress=False,
                 client=None, syncs_per_epoch=SYNCS_PER_EPOCH, reconcile=RECONCILE,
                 exchange_share=EXCHANGE_SHARE, exchange_bits=EXCHANGE_BITS, staleness=STALENESS,
                 frequent_rows=FREQUENT_ROWS):
        sg, hs, cbow_mean, null_word, sorted_vocab = (check_flag(name, value) for name, value in (
            ("sg", sg), ("hs", hs), ("cbow_mean", cbow_mean), ("null_word", null_word), ("sorted_vocab", sorted_vocab)))
        if loss is None:
            if hs == 1 and negative:
                logger.warning("Both hierarchical softmax and negative sampling are activated. This is probably a "
                               "mistake. You should set either 'hs=0' or 'negative=0' to disable one of them.")
            loss = ("hs_sgns" if negative else "hs") if hs == 1 else "sgns"
        self.window = window
        self.min_count = min_count
        self.max_vocab_size = max_vocab_size
        self.sample = sample
        self.sg = sg
        self.hs = hs
        self.ns_exponent = ns_exponent
        self.cbow_mean = cbow_mean
        self.max_final_vocab = max_final_vocab
        self.max_sentence_length = max_sentence_length
        self.hashfxn = hashfxn
        self.null_word = null_word
        self.trim_rule = trim_rule
        self.sorted_vocab = sorted_vocab
        self.batch_words = batch_words
        self.compute_loss = bool(check_flag("compute_loss", compute_loss))
        self.comment = comment
        self.shrink_windows = bool(check_flag("shrink_windows", shrink_windows))
        self.shared_negatives = bool(self.sg if shared_negatives is None else check_flag("shared_negatives",
                                                                                          shared_negatives))
        self.chunk_tokens = chunk_tokens
        self.hot_rows = hot_rows
        self.client, self.syncs_per_epoch, self.reconcile = client, syncs_per_epoch, reconcile
        self.exchange_share, self.exchange_bits = exchange_share, exchange_bits
        self.frequent_rows = frequent_rows
        self.staleness = staleness
        self.batch_size = batch_size
        self.vocab = None
        self._wv = None
        self.corpus = None
        self._cache = None
        self._corpus_words = None     # in-vocabulary tokens of ``corpus`` (one epoch's words)
        self.corpus_count = 0
        self.corpus_total_words = 0
        self.raw_vocab = None
        self._scanned = None          # the corpus scan_vocab counted, until prepare_vocab takes it
        self.effective_min_count = None
        self.min_alpha_yet_reached = None
        super().__init__(vector_size=vector_size, loss=loss, sampler=sampler, negative=negative, alpha=alpha,
                         min_alpha=min_alpha, epochs=epochs, workers=workers, seed=seed, loss_params=loss_params,
                         sampler_params=sampler_params, callbacks=callbacks, checkpoint_dir=checkpoint_dir,
                         checkpoint_every=checkpoint_every, progress=progress)
        self.min_alpha_yet_reached = float(self.alpha)
        if sentences is not None or corpus_file is not None:
            self.build_vocab(sentences, corpus_file=corpus_file, trim_rule=trim_rule)
            self.train(callbacks=self.callbacks)

    def check_params(self):
        """Raise ValueError naming the first invalid parameter."""
        super().check_params()
        check_param("window", self.window, *int_in(1, MAX_WINDOW))
        for name in ("max_sentence_length", "batch_words"):
            check_param(name, getattr(self, name), *POSITIVE_INT)
        check_param("hot_rows", self.hot_rows, *optional(NON_NEGATIVE_INT))
        check_param("min_count", self.min_count, *COUNT)
        check_batch_size(self.batch_size, self.loss)
        if self.batch_size is not None and not self.sg:
            raise ValueError("batch_size needs skip-gram (sg=1): the batched full softmax has no CBOW path")
        check_param("sample", self.sample, *NON_NEGATIVE_REAL)
        check_param("ns_exponent", self.ns_exponent, *FINITE_REAL)
        for name in ("max_vocab_size", "max_final_vocab"):
            if getattr(self, name) is not None:
                check_param(name, getattr(self, name), *int_in(1, INT64_MAX))
        if self.comment is not None and not isinstance(self.comment, str):
            raise ValueError("comment must be a string or None, got %r" % (self.comment,))
        if not callable(self.hashfxn):
            raise ValueError("hashfxn must be callable, got %r" % (self.hashfxn,))
        if self.trim_rule is not None and not callable(self.trim_rule):
            raise ValueError("trim_rule must be callable as trim_rule(word, count, min_count), got %r"
                             % (self.trim_rule,))
        for name in ("sg", "cbow_mean", "hs", "null_word", "sorted_vocab"):
            check_flag(name, getattr(self, name))

    # ------------------------------------------------------------------ gensim's table names
    def _output_part(self, name, held, first):
        """The part of ``W_out`` that gensim calls ``name``: all of it, or its ``first`` half (else its second)
        when the loss stacks two tables; AttributeError unless the loss ``held`` it (a capability flag)."""
        if not held or self.W_out is None:
            raise AttributeError("this model has no %s table (loss %s%s)"
                                 % (name, self.loss, "" if self.W_out is not None else ", not initialised"))
        if not self._loss_class().STACKED:
            return self.W_out
        return self.W_out[:len(self.vocab)] if first else self.W_out[len(self.vocab):]

    syn1neg = _output_table("syn1neg", "CLASS_ROWS", True,
                            "The words' output vectors (gensim's name): the output table, or its first half with "
                            "``hs_sgns``.")
    syn1 = _output_table("syn1", "TREE_ROWS", False,
                         "The hierarchical-softmax table (gensim's name: a row per word, the last unused); "
                         "hs models only.")

    @property
    def cum_table(self):
        """gensim's cumulative unigram table of the vocabulary (uint32, see ``gensim_models.cum_table``)."""
        self._check_vocab()
        return cum_table(self.vocab.counts, self.ns_exponent)

    @property
    def layer1_size(self):
        """gensim's name for ``vector_size``."""
        return self.vector_size

    def _adopt_tables(self, W_in, W_out):
        """Take tables made elsewhere (a converted gensim model) for the current vocabulary."""
        rows = self._build_loss(self.vocab.counts, len(self.vocab)).output_rows(len(self.vocab))
        if W_in.shape != (len(self.vocab), self.vector_size) or W_out.shape != (rows, self.vector_size):
            raise ValueError("tables of shape %s and %s do not fit %d words of %d dimensions (loss %s)"
                             % (W_in.shape, W_out.shape, len(self.vocab), self.vector_size, self.loss))
        self._set_tables(W_in, np.ascontiguousarray(W_out, dtype=np.float32))

    @property
    def wv(self):
        """The word vectors: a ``gensim.models.KeyedVectors`` over the input table (rows shared, so it follows
        training), made when first read; None before the vocabulary is built."""
        if self._wv is None and self.W_in is not None and self.vocab is not None:
            self._wv = self._keyed_vectors()
        return self._wv

    @wv.setter
    def wv(self, kv):
        self._wv = kv

    def _set_tables(self, W_in, W_out):
        self._wv = None         # made again from the new tables when read
        self.W_in, self.W_out = W_in, W_out

    def _forget_norms(self):
        """Drop the vector norms gensim caches on ``wv`` (training changes the vectors)."""
        if self._wv is not None:
            self._wv.norms = None

    def _keyed_vectors(self):
        from gensim.models import KeyedVectors      # not at import: gensim takes about a second to import
        kv = KeyedVectors(self.vector_size, count=0, dtype=np.float32)
        kv.index_to_key = self.vocab.index_to_key
        kv.key_to_index = self.vocab.key_to_index
        kv.vectors = self.W_in
        kv.allocate_vecattrs(attrs=["count"], types=[np.int64])
        kv.expandos["count"][:] = self.vocab.counts
        kv.vectors_lockf = np.ones(1, dtype=np.float32)     # gensim's per-word update factors (1: all train)
        if self._loss_class().TREE_ROWS:
            # gensim's per-word Huffman paths: the inner nodes (rows of syn1) and the branch codes
            from embkit._kernels.losses import huffman_paths
            offsets, points, codes = huffman_paths(self.vocab.counts)
            kv.allocate_vecattrs(attrs=["code", "point"], types=[object, object])
            for i in range(len(self.vocab)):
                kv.expandos["code"][i] = codes[offsets[i]:offsets[i + 1]]
                kv.expandos["point"][i] = points[offsets[i]:offsets[i + 1]]
        return kv

    # ------------------------------------------------------------------ training
    def _sampler_params(self):
        params = dict(self.sampler_params)
        if self.sampler_name == "unigram":
            params.setdefault("ns_exponent", self.ns_exponent)
        return params

    def _kernel_trainer(self, loss, sampler, alpha, min_alpha, total):
        lockf = getattr(self._wv, "vectors_lockf", None)      # set by the user on wv, if they made it
        if lockf is not None:
            lockf = np.asarray(lockf, dtype=np.float32).reshape(-1)
            if lockf.size == 0 or (lockf.size == 1 and lockf[0] == 1.0):
                lockf = None
            elif lockf.size not in (1, len(self.vocab)):
                raise ValueError("wv.vectors_lockf has %d entries for %d words: give one factor, or one per word"
                                 % (lockf.size, len(self.vocab)))
        if self.batch_size is not None:
            return WindowBatches(self.W_in, self.W_out, self.vocab.keep_probabilities(self.sample), self.window,
                                 self.shrink_windows, self.batch_size, alpha, min_alpha, total, self.seed,
                                 lockf=lockf)
        trainer = WindowTrainer(self.W_in, self.W_out, self.vocab.keep_probabilities(self.sample), loss, sampler,
                                self.window, self.sg, self.cbow_mean, self.negative, self.shared_negatives,
                                alpha, min_alpha, total, self.seed, lockf=lockf, shrink_windows=self.shrink_windows)
        trainer.hot_rows(**word_hot_rows(self.hot_rows, self.vocab.counts, self.vector_size, self.workers,
                                          self.sg))
        return trainer

    def _cluster_classes(self):
        return self.vocab.counts, len(self.vocab)

    def train(self, corpus_iterable=None, corpus_file=None, total_examples=None, total_words=None, epochs=None,
              start_alpha=None, end_alpha=None, word_count=0, queue_factor=2, report_delay=1.0,
              compute_loss=None, callbacks=None, progress=None, **_gensim_kwargs):
        """Train on a corpus (gensim's ``train``), or on the one the vocabulary was built from.

        Parameters
        ----------
        corpus_iterable, corpus_file : optional
            The corpus, as in :meth:`build_vocab`.  Given one, gensim's rules apply: ``epochs`` and one of
            ``total_examples`` / ``total_words`` are required (ValueError otherwise).  With neither, the
            vocabulary's corpus is trained on with the model's settings.
        total_examples : int, optional
            Sentences per epoch (gensim's ``corpus_count``).
        total_words : int, optional
            Words per epoch.  embkit's learning-rate schedule runs over the in-vocabulary words it trains,
            counted exactly (the vocabulary's count, or a pass over a new corpus before training), so either
            total only has to be given, as gensim asks.
        epochs, start_alpha, end_alpha : optional
            Override the model's settings for this call (gensim stores them on the model).
        word_count, queue_factor, report_delay :
            Accepted for gensim's API.  embkit has no job queue (threads share each chunk) and reports
            through the progress bar and the log once per epoch; its schedule covers this call.
        compute_loss : bool, optional
            Stored as gensim does; the loss is always accumulated.
        callbacks : sequence, optional
            gensim ``CallbackAny2Vec`` objects for this call (the model's ``callbacks`` when None).
        progress : bool, optional
            Show a progress bar (defaults to the model's ``progress``).

        Returns
        -------
        (effective_words, raw_words) : (int, int)
            As gensim's: the words trained (in the vocabulary, after subsampling) and the corpus tokens read
            (unknown ones included), over the call's epochs.  The call's whole :class:`TrainingReport` is
            ``last_report``.  A corpus with no word of the vocabulary trains nothing and returns
            ``(0, raw_words)``, with a warning.
        """
        explicit = corpus_iterable is not None or corpus_file is not None
        if explicit:
            for name, value in (("total_examples", total_examples), ("total_words", total_words)):
                if value is not None:
                    check_param(name, value, *POSITIVE_REAL)
            if total_examples is None and total_words is None:
                raise ValueError("You must specify either total_examples or total_words, for proper learning-rate "
                                 "and progress calculations. If you've just built the vocabulary using the same "
                                 "corpus, using the count cached in the model is sufficient: "
                                 "total_examples=model.corpus_count.")
            if epochs is None or epochs <= 0:
                raise ValueError("You must specify an explicit epochs count. The usual value is "
                                 "epochs=model.epochs.")
        self._check_vocab()
        if compute_loss is not None:
            self.compute_loss = bool(compute_loss)
        if callbacks is not None:
            saved_callbacks, self.callbacks = self.callbacks, tuple(callbacks)
        try:
            report = self._train_corpus(corpus_iterable, corpus_file, epochs, start_alpha, end_alpha, progress)
        finally:
            if callbacks is not None:
                self.callbacks = saved_callbacks
        return report.trained_units, report.raw_units

    def _train_corpus(self, corpus_iterable, corpus_file, epochs, start_alpha, end_alpha, progress):
        check_trainable(len(self.vocab))
        args = corpus_iterable, corpus_file, epochs, start_alpha, end_alpha, progress
        try:
            return self._fit(lambda: self._train_here(*args), lambda: sharded_run(self, *args))
        finally:
            self._forget_norms()

    def _train_here(self, corpus_iterable, corpus_file, epochs, start_alpha, end_alpha, progress):
        """:meth:`train` in this process (the vocabulary's chunk cache, or the corpus given)."""
        corpus = self.corpus
        if corpus_iterable is not None or corpus_file is not None:
            corpus = as_corpus(corpus_iterable, corpus_file, self.max_sentence_length)
            if _same_corpus(corpus, self.corpus):
                corpus = self.corpus           # the vocabulary's corpus again: train on its encoded chunks
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
            if corpus is not self.corpus or self._corpus_words is None:
                for chunk in self.vocab.encode(corpus, self.chunk_tokens, self.workers):  # count exactly first
                    cache.append(chunk)
                cache.complete = True
        if corpus is self.corpus:
            self._cache = cache
        total_words = cache.tokens if cache.complete else self._corpus_words
        if total_words <= 0:
            epochs = self.epochs if epochs is None else epochs
            logger.warning("the training corpus (%d tokens) has no word of the vocabulary: nothing trained",
                           cache.raw_units)
            self.last_report = TrainingReport(raw_units=cache.raw_units * epochs, unit=self.unit)
            return self.last_report
        if cache.complete:
            check_trainable(len(self.vocab), cache.longest_sentence)
        alpha = self.alpha if start_alpha is None else start_alpha
        if self.min_alpha_yet_reached is not None and alpha > self.min_alpha_yet_reached:
            logger.warning("Effective 'alpha' higher than previous training cycles")

        def chunks(epoch):
            if cache.complete:
                return iter(cache)
            return self._encode_into(cache, corpus)

        run_args = {"corpus_file": getattr(corpus, "source", None), "vocab_corpus": corpus is self.corpus,
                    "total_words": total_words, "epochs": epochs, "start_alpha": start_alpha, "end_alpha": end_alpha}
        digest = None
        if self.checkpoint_dir is not None or self._resuming is not None:
            digest = self._vocab_digest()
            if cache.complete:
                digest += "-" + cache.digest()
        self._forget_norms()
        try:
            report = self._train(chunks, total_words, self.vocab.counts, len(self.vocab), epochs, start_alpha,
                                 end_alpha, desc="%s %dd" % ("skip-gram" if self.sg else "cbow", self.vector_size),
                                 progress=progress, run_args=run_args, fingerprint=digest,
                                 min_chunk_per_thread=self.batch_words)
        finally:
            self._forget_norms()
        self.min_alpha_yet_reached = self.min_alpha if end_alpha is None else end_alpha
        logger.info("trained %d epochs: %d words in %.1fs (%.0f words/s, %.0f raw words/s), loss %.4f",
                    report.epochs, report.units, report.seconds, report.units_per_second,
                    report.raw_units_per_second, report.epoch_loss[-1] if report.epoch_loss else float("nan"))
        return report

    def _vocab_digest(self):
        """A digest of the vocabulary (words and counts): part of a run's data fingerprint."""
        return fingerprint(np.asarray(self.vocab.counts), np.frombuffer(
            "\n".join(self.vocab.index_to_key).encode("utf-8", "surrogatepass"), dtype=np.uint8))

    # ------------------------------------------------------------------ what the model says
    def predict_output_word(self, context_words_list, topn=10):
        """The ``topn`` most probable centre words given context words (or their indices), gensim's method.

        Uses the full softmax over the words' output vectors, so it needs them (not ``hs`` alone).  Returns
        ``[(word, probability), ...]``, or None when no context word is known.
        """
        if self.W_in is None or self.vocab is None:
            raise RuntimeError("Parameters required for predicting the output words not found: the model is not "
                               "trained (or only its word vectors were loaded)")
        try:
            out = self.syn1neg
        except AttributeError:
            raise RuntimeError("We have currently only implemented predict_output_word for the negative sampling "
                               "scheme, so you need to have run word2vec with negative > 0 for this to work.") \
                from None
        return predict_output_word(self.W_in, out, self.vocab.index_to_key, self.vocab.key_to_index,
                                   context_words_list, topn, bool(self.cbow_mean))

    def score(self, sentences, total_sentences=int(1e6), chunksize=100, queue_factor=2, report_delay=1):
        """Log-probability of each sentence under the model (gensim's ``score``; ``hs`` models only).

        Returns a float32 array with one score per sentence.
        """
        if not self._loss_class().TREE_ROWS:
            raise RuntimeError("We have currently only implemented score for the hierarchical softmax scheme, so "
                               "you need to have run word2vec with hs=1 for this to work (this model's loss is "
                               "%s)." % self.loss)
        self._check_vocab("scoring")
        from embkit._kernels.losses import huffman_paths
        offsets, points, codes = huffman_paths(self.vocab.counts)
        return score_sentences(sentences, self.W_in, self.syn1, self.vocab.key_to_index, offsets, points, codes,
                               self.window, self.sg, bool(self.cbow_mean), total_sentences)

    def estimate_memory(self, vocab_size=None, report=None):
        """Bytes the model needs for ``vocab_size`` words (default: its vocabulary), by part; logs the total.

        Parts: ``vocab`` (the words and their index, estimated at 150 bytes a word), ``vectors``
        (``W_in``), ``syn1`` / ``syn1neg`` (the output tables), ``sampler`` (the unigram alias table),
        ``corpus_cache`` (4 bytes per in-vocabulary token of the vocabulary's corpus, kept between epochs)
        and ``total``.
        """
        n = len(self.vocab) if vocab_size is None and self.vocab is not None else (vocab_size or 0)
        row = 4 * self.vector_size * n
        report = dict(report or {})
        report["vocab"] = 150 * n
        report["vectors"] = row
        caps = self._loss_class()
        if caps.TREE_ROWS:
            report["syn1"] = row
        if caps.CLASS_ROWS:
            report["syn1neg"] = row
        if caps.USES_NEGATIVES:
            report["sampler"] = 12 * n
        report["corpus_cache"] = 4 * int(self._corpus_words or 0) if vocab_size is None else 0
        report["total"] = sum(report.values())
        logger.info("estimated required memory for %d words and %d dimensions: %d bytes", n, self.vector_size,
                    report["total"])
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
        args["epochs"] = args.get("epochs") or model.epochs      # train() on a given corpus needs it
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
        (the tables are the checkpoint's: a resuming model keeps them)."""
        saved, where = self.vocab, self._resuming["path"]
        self.build_vocab(corpus_iterable, corpus_file)
        vocab = self.vocab
        if vocab.index_to_key != saved.index_to_key or not np.array_equal(vocab.counts, saved.counts):
            differ = next((i for i, (a, b, x, y) in enumerate(zip(vocab.index_to_key, saved.index_to_key,
                                                                    vocab.counts, saved.counts))
                           if a != b or x != y), min(len(vocab), len(saved)))
            ours = "%r (count %d)" % (vocab.index_to_key[differ], vocab.counts[differ]) if differ < len(vocab) \
                else "nothing"
            theirs = "%r (count %d)" % (saved.index_to_key[differ], saved.counts[differ]) if differ < len(saved) \
                else "nothing"
            raise CheckpointError("%s: the corpus %s is not the checkpoint's: word %d of its vocabulary is %s, the "
                                  "checkpoint's %s (%d and %d words)" % (where, self.corpus, differ, ours, theirs,
                                                                        len(vocab), len(saved)))

    def _encode_into(self, cache, corpus):
        """Encode ``corpus`` into ``cache`` chunk by chunk as the first epoch trains on them; a corpus that
        turns out degenerate is refused at the end of that epoch (nothing was trained on it)."""
        for chunk in prefetch(self.vocab.encode(corpus, self.chunk_tokens, self.workers)):
            cache.append(chunk)
            yield chunk
        check_trainable(len(self.vocab), cache.longest_sentence)
        cache.complete = True

    # ------------------------------------------------------------------ persistence
    @class_only
    def load(cls, path, mmap=None):
        """Load an embkit model file, or a full gensim ``Word2Vec`` model saved by gensim (4.x, and older
        versions as far as gensim 4 reads them), which then trains on in embkit.

        gensim files are pickles, which run code when loaded: as gensim's own ``load``, this reads one
        whatever it holds, so load only files you trust; a pickle named as an embkit archive (``*.embkit``) is
        refused (:class:`~embkit.core.pickles.PickleRefused`), as embkit's own files never run code.  A gensim
        file holding something else (``KeyedVectors``: use ``embkit.load_vectors``), or one gensim cannot
        read, is a :class:`~embkit.text.gensim_models.GensimFileError` naming it.
        """
        if os.path.isfile(path) and is_pickle(path):
            check_consent(path, True, "")
            return load_gensim_model(cls, path, mmap)
        return super(Word2Vec, cls).load(path, mmap)

    def _state(self):
        return {"raw_words": self.vocab.raw_words, "corpus_count": self.corpus_count,
                "corpus_total_words": self.corpus_total_words, "effective_min_count": self.effective_min_count,
                "min_alpha_yet_reached": self.min_alpha_yet_reached}

    def _words(self):
        return self.vocab.index_to_key

    def _arrays(self):
        return {"counts": self.vocab.counts}

    def _restore(self, state, words, arrays):
        self.vocab = Vocab(words, arrays["counts"], raw_words=state.get("raw_words", 0),
                           sentences=state.get("corpus_count") or 0)
        for key in ("corpus_count", "corpus_total_words", "effective_min_count", "min_alpha_yet_reached"):
            if key in state:
                setattr(self, key, state[key])
        self._corpus_words = self.vocab.total_words
        self._set_tables(self.W_in, self.W_out)

    def save_word2vec_format(self, path, binary=False, overwrite=True):
        """Export the input vectors in word2vec text (or binary) format, atomically."""
        save_word2vec_format(self.wv, path, binary=binary, overwrite=overwrite)

    def _repr_fields(self):
        return ["skip-gram" if self.sg else "cbow", "vocab=%d" % (len(self.vocab) if self.vocab is not None else 0)]


def _same_corpus(corpus, vocab_corpus):
    """Whether ``corpus`` reads what ``vocab_corpus`` reads: the same iterable, or the same files."""
    if vocab_corpus is None:
        return False
    if hasattr(corpus, "sentences") and hasattr(vocab_corpus, "sentences"):
        return corpus.sentences is vocab_corpus.sentences
    return getattr(corpus, "files", None) is not None and getattr(corpus, "files", None) == getattr(
        vocab_corpus, "files", None)
