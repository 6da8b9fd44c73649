"""``embkit.ExtremeClassifier``: sparse features -> dense embedding -> scores over a very large label set.

The hidden vector of an example is the weighted sum of its feature rows (optionally L2-normalised and
divided by a temperature ``tau``); a label's score is its dot product with the label's row.  Two trainers:

* ``loss="one_vs_all"`` (the default): a binary logistic loss per label against every label, a learned bias
  per label, tf-idf weighted and L2-normalised rows, Adam steps on mini-batches of BLAS products and a small
  ensemble (:mod:`embkit.xc.one_vs_all`) -- the configuration measured best on Bibtex and Delicious;
* any loss and sampler of the registry (LSH, kernel, uniform, log-uniform, unigram, top-k, full softmax,
  ...) on the ``rows`` driver, the setting of the LSH-negative-sampling and RF-softmax papers, for label
  sets too large to score every label per example.

Examples
--------
>>> import numpy as np, scipy.sparse as sp
>>> from embkit import ExtremeClassifier
>>> X = sp.random(200, 50, density=0.1, format="csr", random_state=0)
>>> Y = sp.csr_matrix((np.ones(200), (np.arange(200), np.arange(200) % 7)), shape=(200, 7))
>>> clf = ExtremeClassifier(vector_size=16, loss="full_softmax", epochs=2, progress=False).fit(X, Y)
>>> clf.predict(X[:3], k=2)[0].shape
(3, 2)
>>> ExtremeClassifier(vector_size=16, ensemble=2, epochs=2, progress=False).fit(X, Y).predict(X[:3], k=2)[0].shape
(3, 2)
"""
import contextlib
import logging
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp

from embkit._kernels.rows import RowTrainer, top_k_rows
from embkit.core.base import EmbeddingModel
from embkit.core.checkpoint import fingerprint
from embkit.core.checks import POSITIVE_INT, POSITIVE_REAL, check_param
from embkit.core.full_batch import check_batch_size
from embkit.core.sparse_checks import check_sparse
import embkit.xc.one_vs_all as one_vs_all
from embkit.xc.features import FEATURE_WEIGHTINGS, feature_weights, weight_rows

logger = logging.getLogger(__name__)

__all__ = ["ExtremeClassifier"]

#: cells of the score block computed at once by ``predict`` (rows x labels).
_SCORE_BLOCK_CELLS = 1 << 24

#: the loss trained by :mod:`embkit.xc.one_vs_all` (not a registry loss: it has no per-example kernel)
ONE_VS_ALL = "one_vs_all"

#: defaults that depend on the trainer: ``(one_vs_all, the registry's losses)``, chosen on a validation
#: split of Bibtex and Delicious for one_vs_all (see BENCHMARKS.md), the RF-softmax settings for the others
_DEFAULTS = {"vector_size": (256, 128), "alpha": (0.01, 0.1), "epochs": (10, 20), "normalize": (False, True),
             "tau": (1.0, 0.1), "batch_size": (256, None), "feature_weighting": ("tfidf", "none"),
             "normalize_rows": (True, False), "ensemble": (2, 1)}


def _blas_threads(limit):
    """A context limiting the BLAS library's threads to ``limit`` (None: unchanged)."""
    if limit is None:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits
    return threadpool_limits(limits=limit, user_api="blas")


class _RowChunk:
    __slots__ = ("kernel_args", "raw_words")

    def __init__(self, order):
        self.kernel_args = (order,)
        self.raw_words = len(order)

    def __len__(self):
        return self.raw_words


def _as_xy(X, Y=None):
    """``(X csr float32, Y csr or None)`` from matrices or an object with ``X`` and ``Y`` (e.g. XCData)."""
    if Y is None and hasattr(X, "X") and hasattr(X, "Y"):
        X, Y = X.X, X.Y
    if not sp.issparse(X):
        X = sp.csr_matrix(np.asarray(X, dtype=np.float32))
    check_sparse(X, "the feature matrix X")
    X = sp.csr_matrix(X, dtype=np.float32)
    X.sort_indices()
    if X.nnz and not np.all(np.isfinite(X.data)):
        raise ValueError("the feature matrix has non-finite values")
    if Y is not None:
        if not sp.issparse(Y):
            Y = sp.csr_matrix(np.asarray(Y))
        check_sparse(Y, "the label matrix Y")
        Y = sp.csr_matrix(Y)
        if Y.nnz and Y.dtype.kind in "fc" and not np.all(np.isfinite(Y.data)):
            raise ValueError("the label matrix has non-finite values")
        Y.sum_duplicates()          # sorted label ids per row (the rows kernel searches them)
        Y.eliminate_zeros()
        if Y.shape[0] != X.shape[0]:
            raise ValueError("X has %d rows but Y has %d" % (X.shape[0], Y.shape[0]))
    return X, Y


class _OneVsAllRows:
    """What the base asks of a loss for one_vs_all: one output row per label, every label scored."""

    CLASS_ROWS, TREE_ROWS, STACKED, SCORES_ALL_CLASSES, USES_NEGATIVES = True, False, False, True, False

    @staticmethod
    def output_rows(n_classes):
        return n_classes

    @staticmethod
    def classes_for_table(out_rows, n_classes=-1, name=None):
        if n_classes >= 0 and out_rows != n_classes:
            raise ValueError("W_out has %d rows, but one_vs_all trains %d for %d labels"
                             % (out_rows, n_classes, n_classes))
        return out_rows if n_classes < 0 else n_classes


class ExtremeClassifier(EmbeddingModel):
    """Multi-label classifier over many labels with sampled (or full) softmax-type losses.

    Parameters left at None take the default of the trainer of ``loss`` (one_vs_all / the registry's losses).

    Parameters
    ----------
    vector_size : int, optional
        Width of the tables: 256 (two members of 128) for one_vs_all, 128 otherwise (as in the XC papers).
    loss : str
        ``"one_vs_all"`` (default: binary logistic loss of every label, with a bias per label, trained in
        BLAS mini-batches with Adam) or a registry loss on the per-example kernel (``sampled_softmax``,
        ``sgns``, ``nce``, ``relaxed_softmax``, ``full_softmax``, ``hs``).
    sampler : str, optional
        Registry sampler of a sampled loss (default ``uniform``); e.g. ``unigram`` (label frequency ** 0.75),
        ``log_uniform``, ``lsh`` (``sampler_params={"query": "label" | "embedding", "family": "simhash" |
        "dwta"}``), ``kernel``, ``topk``, ``boltzmann``.  ``sgns`` with ``topk`` or ``lsh`` is one-vs-all with
        adaptive hard negatives.
    negative : int
        Negatives per positive label (sampled losses; one_vs_all takes every label).
    normalize : bool, optional
        L2-normalise the hidden vector (default: off for one_vs_all, on otherwise).
    tau : float, optional
        Temperature: scores are divided by ``tau`` (default 1 for one_vs_all, 0.1 otherwise).  With
        ``normalize`` and ``normalize_classes`` scores are cosines / tau (the RF-softmax setting); 0.1-0.2
        worked best on Bibtex and Delicious.
    normalize_classes : bool, optional
        Keep class vectors on the unit sphere (projected after every update).  Default: on, except for
        ``hs`` (whose rows are tree nodes) and one_vs_all (which does not support it).
    one_label : bool
        Train on one positive label per example visit, drawn at random (fastText's softmax); default trains
        on every positive label.  Registry losses only.
    alpha, min_alpha : float, optional
        Learning rate at the start and end (linear decay; ``min_alpha`` defaults to ``alpha / 1000``);
        ``alpha`` defaults to 0.01 (Adam's step) for one_vs_all, 0.1 otherwise.
    epochs : int, optional
        Passes (default 10 for one_vs_all, 20 otherwise).
    workers, seed : int
    feature_weighting : {"tfidf", "none"}, optional
        Multiply every feature by its inverse document frequency in the training rows (default ``tfidf``
        for one_vs_all, ``none`` otherwise); the weights are kept and applied to every later call.
    normalize_rows : bool, optional
        Scale every (weighted) row to unit L2 norm (default: on for one_vs_all, off otherwise).
    ensemble : int, optional
        one_vs_all only: independent members (2 by default), each ``vector_size / ensemble`` wide with its
        own initialisation, order and biases; their probabilities are averaged.
    label_bias : bool
        one_vs_all only: learn a bias per label (on by default).
    loss_params, sampler_params : dict, optional
    chunk_examples : int
        Examples per kernel call (adaptive samplers refresh between calls).
    batch_size : int, optional
        one_vs_all: examples per Adam step (256 by default).  With ``loss="full_softmax"``: train exact full
        softmax in mini-batches of this many examples with BLAS products (:mod:`embkit.xc.full_batch`), which
        reads each class row once per batch instead of once per example -- much faster with many labels.
        None uses the per-example kernel.
    callbacks : sequence
        gensim ``CallbackAny2Vec``-style objects, called with the model.
    checkpoint_dir, checkpoint_every :
        Checkpoints of the training run (see :class:`~embkit.core.base.EmbeddingModel` and :meth:`resume`).
    progress : bool
        Show a progress bar.

    Attributes
    ----------
    feature_vectors : numpy.ndarray (n_features, vector_size)
    label_vectors : numpy.ndarray (n_labels, vector_size)
    label_counts : numpy.ndarray of int64
        Positive examples per label in the training data.
    label_biases : numpy.ndarray (ensemble, n_labels) or None
        The learned biases (one_vs_all).
    feature_weight_vector : numpy.ndarray (n_features,) or None
        The tf-idf weights of ``feature_weighting``.
    n_skipped : int
        Training rows without any label (skipped).
    n_train : int
        Training rows (for the propensities of PSP@k).
    last_report : TrainingReport
    """

    default_sampler = "uniform"
    chunk_param = "chunk_examples"

    def __init__(self, vector_size=None, loss=ONE_VS_ALL, sampler=None, negative=50, normalize=None,
                 tau=None, normalize_classes=None, one_label=False, alpha=None, min_alpha=None, epochs=None,
                 workers=2, seed=1, loss_params=None, sampler_params=None, chunk_examples=1 << 13, batch_size=None,
                 feature_weighting=None, normalize_rows=None, ensemble=None, label_bias=True,
                 callbacks=(), checkpoint_dir=None, checkpoint_every=600, progress=True):
        given = dict(vector_size=vector_size, alpha=alpha, epochs=epochs, normalize=normalize, tau=tau,
                     batch_size=batch_size, feature_weighting=feature_weighting, normalize_rows=normalize_rows,
                     ensemble=ensemble)
        which = 0 if loss == ONE_VS_ALL else 1
        v = {k: (_DEFAULTS[k][which] if val is None else val) for k, val in given.items()}
        self.normalize = bool(v["normalize"])
        self.tau = v["tau"]
        self.normalize_classes = (loss not in ("hs", ONE_VS_ALL)) if normalize_classes is None \
            else bool(normalize_classes)
        self.one_label = bool(one_label)
        self.chunk_examples = chunk_examples
        self.batch_size = v["batch_size"]
        self.feature_weighting = v["feature_weighting"]
        self.normalize_rows = bool(v["normalize_rows"])
        self.ensemble = v["ensemble"]
        self.label_bias = bool(label_bias)
        self.label_biases = None
        self.feature_weight_vector = None
        self._optimizer = None
        self.label_counts = None
        self.n_skipped = 0
        self.n_train = 0
        self._data = None
        super().__init__(vector_size=v["vector_size"], loss=loss, sampler=sampler, negative=negative,
                         alpha=v["alpha"], min_alpha=min_alpha, epochs=v["epochs"], workers=workers, seed=seed, loss_params=loss_params,
                         sampler_params=sampler_params, callbacks=callbacks, checkpoint_dir=checkpoint_dir,
                         checkpoint_every=checkpoint_every, progress=progress)

    def check_params(self):
        """Raise ValueError naming the first invalid parameter."""
        super().check_params()
        check_param("tau", self.tau, *POSITIVE_REAL)
        check_param("ensemble", self.ensemble, *POSITIVE_INT)
        if self.feature_weighting not in FEATURE_WEIGHTINGS:
            raise ValueError("feature_weighting must be one of %s, got %r"
                             % (", ".join(FEATURE_WEIGHTINGS), self.feature_weighting))
        if self.loss == ONE_VS_ALL:
            check_param("batch_size", self.batch_size, *POSITIVE_INT)
            if self.vector_size % self.ensemble:
                raise ValueError("vector_size (%d) must be a multiple of ensemble (%d): every member gets "
                                 "vector_size / ensemble columns" % (self.vector_size, self.ensemble))
            for name in ("normalize_classes", "one_label"):
                if getattr(self, name):
                    raise ValueError("%s applies to the registry's losses, not to loss='one_vs_all'" % name)
        else:
            for name, default in (("ensemble", 1), ("label_bias", True)):
                if getattr(self, name) != default:
                    raise ValueError("%s applies to loss='one_vs_all' only, got loss=%r" % (name, self.loss))
            check_batch_size(self.batch_size, self.loss)
        if self.normalize_classes and self.loss == "hs":
            raise ValueError("normalize_classes needs one vector per label; the hs loss has tree nodes instead")

    @property
    def sampler_name(self):
        """The sampler a run uses (None for one_vs_all: every label is a negative)."""
        return self.sampler if self.loss == ONE_VS_ALL else super().sampler_name

    def _check_objective(self):
        if self.loss != ONE_VS_ALL:
            super()._check_objective()
        elif self.sampler is not None:
            raise ValueError("loss='one_vs_all' takes every label as a negative: it has no sampler (got %r); "
                             "use loss='sgns' with a sampler for sampled or hard negatives" % self.sampler)

    def _loss_class(self):
        return _OneVsAllRows if self.loss == ONE_VS_ALL else super()._loss_class()

    def _build_loss(self, counts, n_classes):
        return _OneVsAllRows() if self.loss == ONE_VS_ALL else super()._build_loss(counts, n_classes)

    def _objective(self, counts, n_classes):
        return (None, None) if self.loss == ONE_VS_ALL else super()._objective(counts, n_classes)

    @property
    def feature_vectors(self):
        """Input table: one row per feature."""
        return self.W_in

    @property
    def label_vectors(self):
        """Output table: one row per label (per Huffman-tree node with ``hs``)."""
        return self.W_out

    # ------------------------------------------------------------------ training
    def fit(self, X, Y=None, on_epoch=None):
        """Train on features ``X`` (n x F, sparse) and labels ``Y`` (n x L, sparse binary), or an XCData.

        Rows without labels are skipped and counted (``n_skipped``).  ``on_epoch(epoch, report)`` is
        called after every epoch (e.g. to evaluate); returning True stops training.

        Returns
        -------
        self
        """
        X, Y = _as_xy(X, Y)
        if Y is None:
            raise ValueError("fit needs the label matrix Y")
        fresh = self._resuming is None
        if fresh:
            self.feature_weight_vector = feature_weights(X, self.feature_weighting)
        X = weight_rows(X, self.feature_weight_vector, self.normalize_rows)
        n, n_features = X.shape
        n_labels = Y.shape[1]
        if n_labels < 1 or n_features < 1:
            raise ValueError("need at least one feature and one label, got %d features and %d labels"
                             % (n_features, n_labels))
        has_labels = np.diff(Y.indptr) > 0
        self.n_skipped = int(n - has_labels.sum())
        if self.n_skipped:
            logger.info("%d of %d training rows have no label and are skipped", self.n_skipped, n)
        rows = np.flatnonzero(has_labels & (np.diff(X.indptr) > 0)).astype(np.int32)
        if len(rows) == 0:
            raise ValueError("no training row has both a feature and a label")
        self.label_counts = np.bincount(Y.indices, minlength=n_labels).astype(np.int64)
        self.n_train = n
        self._init_tables(n_features, n_labels, np.ones(n_labels, dtype=np.int64))
        ova = self.loss == ONE_VS_ALL
        if ova and fresh:
            self._init_one_vs_all(n_labels, len(rows))

        def chunks(epoch):
            # the order of an epoch depends on the seed and the epoch only, so a resumed run sees the same
            order = np.random.default_rng([self.seed, epoch]).permutation(rows).astype(np.int32)
            for start in range(0, len(order), self.chunk_examples):
                yield _RowChunk(order[start:start + self.chunk_examples])

        self._data = (X, Y)
        # one_vs_all: members train on the worker threads, each with a single-threaded BLAS (the products are
        # small: threaded BLAS on them costs more than it gives, and much more on a busy machine)
        single = ova and self.ensemble == 1
        try:
            with _blas_threads(1 if ova else None):
                self._train(chunks, len(rows), self.label_counts, n_labels, on_epoch=on_epoch,
                            desc="xc %s" % self.loss, min_chunk_per_thread=len(rows) + 1 if single else None,
                            fingerprint=fingerprint(X.indptr, X.indices, X.data, Y.indptr, Y.indices))
        finally:
            self._data = None
            self._optimizer = None
        return self

    def _init_one_vs_all(self, n_labels, n_rows):
        """Members' input rows drawn N(0, 1/d) (each member from its own seed), zero label rows, biases at
        the labels' log-odds and a fresh optimizer state."""
        d = self.vector_size // self.ensemble
        for m in range(self.ensemble):
            rng = np.random.default_rng([self.seed, m])
            self.W_in[:, m * d:(m + 1) * d] = rng.standard_normal((len(self.W_in), d), dtype=np.float32) / np.sqrt(d)
        self.W_out[:] = 0.0
        bias = one_vs_all.initial_bias(self.label_counts, n_rows) if self.label_bias \
            else np.zeros(n_labels, np.float32)
        self.label_biases = np.tile(bias, (self.ensemble, 1))
        self._optimizer = {"adam_step": np.zeros(self.ensemble, np.int64)}
        for name, like in (("in", self.W_in), ("out", self.W_out), ("bias", self.label_biases)):
            self._optimizer["adam_m_" + name] = np.zeros_like(like)
            self._optimizer["adam_v_" + name] = np.zeros_like(like)

    @classmethod
    def resume(cls, directory, X, Y=None, on_epoch=None, callbacks=(), progress=None, **params):
        """Continue the run checkpointed in ``directory`` on the same ``X``, ``Y``.

        The result is the model the uninterrupted run would have given: bit-identical with ``workers=1``.
        ``params`` may repeat constructor parameters; one that differs from the checkpoint's is refused
        (``workers`` may change).  Returns the trained model.
        """
        model, _ = cls._open_checkpoint(directory, params, callbacks, progress)
        return model.fit(X, Y, on_epoch=on_epoch)

    def _kernel_trainer(self, loss, sampler, alpha, min_alpha, total):
        X, Y = self._data
        if self.loss == ONE_VS_ALL:
            return one_vs_all.OneVsAllBatches(X, Y, self.W_in, self.W_out, self.label_biases, self._optimizer,
                                              self.batch_size, self.ensemble, alpha, min_alpha, total,
                                              self.normalize, self.tau, self.seed, learn_bias=self.label_bias)
        if self.batch_size is not None:
            from embkit.xc.full_batch import FullSoftmaxBatches
            return FullSoftmaxBatches(X, Y, self.W_in, self.W_out, self.batch_size, alpha, min_alpha, total,
                                      self.normalize, self.tau, self.normalize_classes)
        return RowTrainer(self.W_in, self.W_out, X.indptr.astype(np.int64), X.indices.astype(np.int32),
                          X.data.astype(np.float32), Y.indptr.astype(np.int64), Y.indices.astype(np.int32), loss,
                          sampler, self.negative, self.normalize, self.tau, self.normalize_classes, self.one_label,
                          alpha, min_alpha, total, self.seed)

    def _init_output(self, rng, rows):
        if not self.normalize_classes:
            return super()._init_output(rng, rows)
        W_out = rng.standard_normal((rows, self.vector_size), dtype=np.float32)
        W_out /= np.linalg.norm(W_out, axis=1, keepdims=True)
        return W_out

    # ------------------------------------------------------------------ prediction
    def _check_fitted(self):
        if self.W_in is None:
            raise RuntimeError("the model is not trained yet: call fit() first")
        if self.loss == "hs":
            raise NotImplementedError("prediction with the hs loss is not supported: its output rows are tree "
                                      "nodes, not labels; train with another loss to predict")

    def embed(self, X):
        """Hidden vectors of the rows of ``X`` (as scored: normalised and divided by ``tau`` if set)."""
        self._check_fitted()
        X, _ = _as_xy(X)
        if X.shape[1] != self.feature_vectors.shape[0]:
            raise ValueError("X has %d features, the model %d" % (X.shape[1], self.feature_vectors.shape[0]))
        X = weight_rows(X, self.feature_weight_vector, self.normalize_rows)
        H = np.asarray(X @ self.feature_vectors, dtype=np.float32)
        if self.normalize and self.ensemble > 1:
            return np.ascontiguousarray(H / np.float32(self.tau))    # members normalise their own columns
        if self.normalize:
            norms = np.linalg.norm(H, axis=1, keepdims=True)
            np.divide(H, norms, out=H, where=norms > 0)
        if self.tau != 1.0:
            H /= self.tau
        return np.ascontiguousarray(H)

    def predict(self, X, k=5, workers=None):
        """The ``k`` best labels of every row of ``X`` and their scores, best first.

        Scores are computed in blocks of rows (one BLAS product per block) and each block's top-k is
        selected by a multi-threaded C scan; blocks run on ``workers`` threads.

        Returns
        -------
        (ids int64 (n, k), scores float32 (n, k))
        """
        check_param("k", k, *POSITIVE_INT)
        H = self.embed(X)
        n_labels = self.label_vectors.shape[0]
        k = min(k, n_labels)
        workers = self.workers if workers is None else workers
        block = max(1, min(-(-len(H) // max(workers, 1)), _SCORE_BLOCK_CELLS // max(n_labels, 1)))
        ids = np.empty((len(H), k), dtype=np.int64)
        vals = np.empty((len(H), k), dtype=np.float32)

        def run(start):
            if self.label_biases is None:
                S = H[start:start + block] @ self.label_vectors.T
            else:
                S = one_vs_all.member_scores(H[start:start + block], self.label_vectors, self.label_biases,
                                             self.ensemble, self.normalize, self.tau)
            ids[start:start + block], vals[start:start + block] = top_k_rows(np.ascontiguousarray(S), k, 1)

        starts = range(0, len(H), block)
        if workers > 1 and len(starts) > 1:
            with _blas_threads(1), ThreadPoolExecutor(workers) as pool:
                list(pool.map(run, starts))
        else:
            for s in starts:
                run(s)
        return ids, vals

    def evaluate(self, X, Y=None, ks=(1, 3, 5), train_labels=None, A=0.55, B=1.5):
        """P@k, nDCG@k, PSP@k and PSnDCG@k on ``(X, Y)`` (or an XCData).

        ``train_labels`` gives the propensities of PSP@k (default: the training label counts).
        """
        from embkit.evaluation.xc import xc_metrics
        X, Y = _as_xy(X, Y)
        if Y is None:
            raise ValueError("evaluate needs the true labels Y")
        if Y.shape[1] != self.label_vectors.shape[0]:
            raise ValueError("Y has %d labels, the model %d" % (Y.shape[1], self.label_vectors.shape[0]))
        top, _ = self.predict(X, k=max(ks))
        propensity = train_labels
        if propensity is None and self.n_train >= 3:
            from embkit.evaluation.xc import inverse_propensities_from_counts
            propensity = 1.0 / inverse_propensities_from_counts(self.label_counts, self.n_train, A, B)
        return xc_metrics(Y, top, ks=ks, propensity=propensity, A=A, B=B)

    # ------------------------------------------------------------------ persistence
    def _state(self):
        return {"n_train": self.n_train}

    def _arrays(self):
        arrays = {"label_counts": self.label_counts}
        for name in ("label_biases", "feature_weight_vector"):
            if getattr(self, name) is not None:
                arrays[name] = getattr(self, name)
        arrays.update(self._optimizer or {})        # only while training: a checkpoint's optimizer state
        return arrays

    def _restore(self, state, words, arrays):
        self.label_counts = arrays["label_counts"]
        self.n_train = int(state.get("n_train", 0))
        self.label_biases = None if arrays.get("label_biases") is None else np.array(arrays["label_biases"])
        self.feature_weight_vector = arrays.get("feature_weight_vector")
        if all(name in arrays for name in one_vs_all.OPTIMIZER_ARRAYS):
            self._optimizer = {name: np.array(arrays[name]) for name in one_vs_all.OPTIMIZER_ARRAYS}

    def _repr_fields(self):
        shape = (0, 0) if self.W_in is None else (len(self.W_in), len(self.W_out))
        return ["features=%d" % shape[0], "labels=%d" % shape[1]]
