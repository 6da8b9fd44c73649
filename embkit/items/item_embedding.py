"""``embkit.ItemEmbedding``: implicit factorisation of an item -> item co-occurrence matrix (next-item prediction).

The model scores a target item ``j`` after a context item ``i`` by ``<W_in[i], W_out[j]>`` and is trained on
the ``pairs`` driver with any loss and sampler of the registry: pairs ``(i, j)`` are drawn in proportion to
their co-occurrence counts.  This is the setting of the relaxed-softmax paper's next-item experiments
(MovieLens, Netflix, text pairs).

Examples
--------
>>> import scipy.sparse as sp
>>> from embkit import ItemEmbedding
>>> counts = sp.random(50, 50, density=0.2, format="csr", random_state=0) * 10
>>> model = ItemEmbedding(vector_size=16, epochs=2, progress=False).fit(counts)
>>> model.recommend(3, topn=5).shape
(5,)
"""
import logging

import numpy as np
import scipy.sparse as sp

from embkit._kernels.pairs import PairTrainer
from embkit._kernels.samplers import AliasSampler
from embkit.core.base import EmbeddingModel
from embkit.cluster import EXCHANGE_SHARE, RECONCILE, SYNCS_PER_EPOCH, ClusterTraining
from embkit.core.checkpoint import fingerprint
from embkit.core.checks import POSITIVE_INT, check_param
from embkit.core.batched_softmax import check_batch_size
from embkit.core.sparse_checks import MAX_ROWS, check_sparse
from embkit.core.validation import BestEpoch
from embkit.items.pair_batches import PairBatches
from embkit.items.pair_shards import PairChunk, pair_shards

logger = logging.getLogger(__name__)

__all__ = ["ItemEmbedding", "as_pair_matrix"]

#: ``ItemEmbedding.evaluate`` metric names that ``fit(validation=...)`` can select the best epoch by.
VALIDATION_METRICS = ("mpr_approx", "mpr", "likelihood", "log_likelihood", "prec5", "prec15", "prec50")


#: Most pairs one epoch draws (the counts' sum): beyond 2**53 a float64 count no longer counts one by one.
MAX_PAIRS = 2 ** 53


def as_pair_matrix(pairs, n_items=None):
    """Turn co-occurrence data into ``(csr counts, item names or None)``.

    Parameters
    ----------
    pairs : scipy.sparse matrix, object with ``matrix`` (and ``items``), or array-like (n, 2) / (n, 3)
        Square count matrix (rows: context items, columns: next items), a ``PairCounts`` (its
        ``names`` become the item names), or
        ``(context, target[, count])`` rows.
    n_items : int, optional
        Number of items for array input (default: the largest id + 1).

    Returns
    -------
    (scipy.sparse.csr_matrix of float64, list of str or None)
    """
    names = None
    if hasattr(pairs, "matrix"):
        names = getattr(pairs, "names", None)
        names = None if names is None else [str(x) for x in names]
        pairs = pairs.matrix
    if sp.issparse(pairs):
        check_sparse(pairs, "the co-occurrence matrix")
        m = sp.csr_matrix(pairs, dtype=np.float64)
    else:
        arr = np.asarray(pairs)
        if arr.ndim != 2 or arr.shape[1] not in (2, 3) or arr.shape[0] == 0:
            raise ValueError("pairs must be a sparse matrix or a non-empty (n, 2) or (n, 3) array of "
                             "(context, target[, count]) rows, got shape %s" % (arr.shape,))
        ids = arr[:, :2]
        if not np.issubdtype(ids.dtype, np.integer):
            if not np.all(np.equal(np.mod(ids, 1), 0)):
                raise ValueError("pair ids must be integers")
            ids = ids.astype(np.int64)
        if ids.min() < 0:
            raise ValueError("pair ids must be >= 0, got %d" % ids.min())
        n = int(ids.max()) + 1 if n_items is None else int(n_items)
        if n - 1 > MAX_ROWS:
            raise ValueError("pair id %d is too large (at most %d)" % (n - 1, MAX_ROWS))
        if ids.max() >= n:
            raise ValueError("pair id %d is out of range for n_items=%d" % (ids.max(), n))
        w = arr[:, 2].astype(np.float64) if arr.shape[1] == 3 else np.ones(len(arr))
        m = sp.csr_matrix((w, (ids[:, 0], ids[:, 1])), shape=(n, n))
    if m.shape[0] != m.shape[1]:
        raise ValueError("the co-occurrence matrix must be square (items x items), got %s" % (m.shape,))
    m.sum_duplicates()
    m.eliminate_zeros()
    if m.nnz and (not np.all(np.isfinite(m.data)) or m.data.min() < 0):
        raise ValueError("co-occurrence counts must be finite and >= 0")
    if m.data.sum() > MAX_PAIRS:
        raise ValueError("co-occurrence counts sum to %.3g pairs, more than an epoch can draw (%d)"
                         % (m.data.sum(), MAX_PAIRS))
    if m.nnz == 0:
        raise ValueError("the co-occurrence matrix has no pairs")
    if names is not None and len(names) != m.shape[0]:
        raise ValueError("%d item names for %d items" % (len(names), m.shape[0]))
    return m, names


class ItemEmbedding(ClusterTraining, EmbeddingModel):
    """Item vectors from an item -> item co-occurrence matrix, for similar items and next-item prediction.

    Parameters
    ----------
    vector_size : int
        Dimension of the item vectors.
    loss : str
        Registry loss: ``sgns``, ``nce``, ``sampled_softmax``, ``relaxed_softmax``, ``full_softmax``, ``hs``.
    sampler : str, optional
        Registry sampler for the negatives (default ``unigram``: target popularity ** 0.75; ``uniform``,
        ``boltzmann`` with ``T`` and ``degeneracy``, ``lsh``, ``kernel``, ...).
    negative : int
        Negatives per pair.
    alpha, min_alpha : float
        Learning rate at the start and end (linear decay; ``min_alpha`` defaults to ``alpha / 1000``).
    epochs : int
        Passes; one pass draws as many pairs as the matrix counts.
    workers : int
        Threads.
    seed : int
        Initialisation and sampling seed (``workers=1`` runs are reproducible).
    loss_params, sampler_params : dict, optional
        Extra parameters of the loss and sampler (e.g. ``{"T": 3, "degeneracy": "popularity"}``).
    chunk_pairs : int
        Pairs per kernel call (adaptive samplers refresh between calls).
    batch_size : int, optional
        ``loss="full_softmax"`` only: train the exact softmax in mini-batches of this many pairs with BLAS
        products (:mod:`embkit.items.pair_batches`), which reads each item row once per batch instead of once
        per pair; None (default) runs the per-example kernel.
    callbacks : sequence
        gensim ``CallbackAny2Vec``-style objects, called with the model.
    checkpoint_dir, checkpoint_every :
        Checkpoints of the training run (see :class:`~embkit.core.base.EmbeddingModel` and :meth:`resume`).
    progress : bool
        Show a progress bar.
    client, syncs_per_epoch, reconcile, exchange_share :
        Train on a Dask cluster, as ``Word2Vec``'s parameters of the same names: the matrix's entries are
        dealt into one shard per worker (see :mod:`embkit.items.pair_shards`); ``validation`` scores the
        reconciled tables on the client after each epoch, as in one process.

    Attributes
    ----------
    context_vectors, target_vectors : numpy.ndarray (n_items, vector_size)
        Input (context) and output (target) tables.
    items : list of str
        Item names (ids as strings when none were given).
    last_report : TrainingReport
    history : list of dict
        Validation metrics per epoch when ``fit`` had ``validation``.
    best_epoch : int or None
        The epoch whose tables were kept (by validation), None without validation.
    """

    chunk_param = "chunk_pairs"
    NAMED_ROWS = True
    unit = "pair"
    CLUSTER_STATE = "counts"
    RUNTIME_PARAMS = EmbeddingModel.RUNTIME_PARAMS | ClusterTraining.CLUSTER_PARAMS
    #: a resumed run may move to (or between) clusters; the cluster settings are checked against its run
    RESUMABLE_CHANGES = EmbeddingModel.RESUMABLE_CHANGES | ClusterTraining.CLUSTER_PARAMS
    #: the cluster client and the name -> row lookup (made again when needed)
    TRANSIENT = EmbeddingModel.TRANSIENT | {"client", "_lookup"}

    def __init__(self, vector_size=100, loss="sgns", sampler=None, negative=5, alpha=0.025, min_alpha=None,
                 epochs=5, workers=2, seed=1, loss_params=None, sampler_params=None, chunk_pairs=1 << 16,
                 batch_size=None, callbacks=(), checkpoint_dir=None, checkpoint_every=600, progress=True,
                 client=None, syncs_per_epoch=SYNCS_PER_EPOCH, reconcile=RECONCILE,
                 exchange_share=EXCHANGE_SHARE):
        self.chunk_pairs = chunk_pairs
        self.batch_size = batch_size
        self.client, self.syncs_per_epoch, self.reconcile = client, syncs_per_epoch, reconcile
        self.exchange_share = exchange_share
        self.items = None
        self.counts = None
        self.history = []
        self.best_epoch = None
        self._pairs = None
        super().__init__(vector_size=vector_size, loss=loss, sampler=sampler, negative=negative, alpha=alpha,
                         min_alpha=min_alpha, epochs=epochs, workers=workers, seed=seed, loss_params=loss_params,
                         sampler_params=sampler_params, callbacks=callbacks, checkpoint_dir=checkpoint_dir,
                         checkpoint_every=checkpoint_every, progress=progress)

    @property
    def context_vectors(self):
        """Input (context) table, ``n_items x vector_size``."""
        return self.W_in

    @property
    def target_vectors(self):
        """Output (target) table: one row per item (per Huffman-tree node with ``hs``)."""
        return self.W_out

    def check_params(self):
        """Raise ValueError naming the first invalid parameter."""
        super().check_params()
        check_batch_size(self.batch_size, self.loss)

    # ------------------------------------------------------------------ training
    def _kernel_trainer(self, loss, sampler, alpha, min_alpha, total):
        contexts, targets, entries, weights = self._pairs
        if self.batch_size is not None:
            return PairBatches(self.W_in, self.W_out, contexts, targets, weights, self.batch_size, alpha,
                               min_alpha, total, self.seed)
        return PairTrainer(self.W_in, self.W_out, contexts, targets, entries, loss, sampler, self.negative, alpha,
                           min_alpha, total, self.seed)

    def fit(self, pairs, validation=None, metric="mpr_approx", patience=None, items=None, n_negatives=100):
        """Train on a co-occurrence matrix; optionally track a validation split and stop early.

        Parameters
        ----------
        pairs : scipy.sparse matrix, PairCounts or array-like
            Training co-occurrences (see :func:`as_pair_matrix`).
        validation : same kinds as `pairs`, optional
            Held-out pairs scored after every epoch (``history``); the tables of the best epoch by
            `metric` are kept.
        metric : str
            One of :data:`VALIDATION_METRICS` (higher is better).
        patience : int, optional
            Stop after this many epochs without improvement of `metric` (None: run all epochs).
        items : list of str, optional
            Item names (default: from `pairs` if it has them, else ``"0"``, ``"1"``, ...).
        n_negatives : int
            Uniform negatives per validation pair for the approximate MPR.

        Returns
        -------
        self
        """
        matrix, names = as_pair_matrix(pairs)
        n = matrix.shape[0]
        if items is not None:
            names = [str(x) for x in items]
            if len(names) != n:
                raise ValueError("%d item names for %d items" % (len(names), n))
        self.items = names if names is not None else [str(i) for i in range(n)]
        if metric not in VALIDATION_METRICS:
            raise ValueError("metric must be one of %s, got %r" % (", ".join(VALIDATION_METRICS), metric))
        if patience is not None:
            check_param("patience", patience, *POSITIVE_INT)
        val = None
        if validation is not None:
            vm, _ = as_pair_matrix(validation, n_items=n)
            if vm.shape[0] != n:
                raise ValueError("the validation matrix has %d items, the training matrix %d" % (vm.shape[0], n))
            val = _pairs_of(vm)
        self.counts = np.rint(np.asarray(matrix.sum(axis=0)).ravel()).astype(np.int64)   # target popularity
        self._init_tables(n, n, self.counts)
        coo = matrix.tocoo()
        self._pairs = (coo.row.astype(np.int32), coo.col.astype(np.int32), AliasSampler(coo.data), coo.data)
        pairs_per_epoch = max(int(round(coo.data.sum())), 1)

        def chunks(epoch):
            left = pairs_per_epoch
            while left > 0:
                n_pairs = min(left, self.chunk_pairs)
                left -= n_pairs
                yield PairChunk(n_pairs)

        run_args = {"metric": metric, "patience": patience, "n_negatives": n_negatives}
        digest = fingerprint(coo.row, coo.col, coo.data, None if val is None else val)
        tracker = None
        if val is not None:
            def score(epoch, report):
                return dict(loss=report.epoch_loss[-1], **_metrics_of(self.evaluate(val, n_negatives=n_negatives)))
            tracker = BestEpoch(self, score, metric, patience)
        try:
            self._fit(lambda: self._train(chunks, pairs_per_epoch, self.counts, n, on_epoch=tracker,
                                          desc="items %s" % self.loss, run_args=run_args, fingerprint=digest),
                      lambda: {"shards": pair_shards(coo, len(self.cluster_workers())), "epochs": self.epochs,
                               "alpha": self.alpha, "min_alpha": self.min_alpha, "progress": self.progress,
                               "desc": "items %s on a cluster" % self.loss, "run_args": run_args,
                               "fingerprint": digest, "on_epoch": tracker})
        finally:
            self._pairs = None
        self.history = tracker.history if tracker else []
        self.best_epoch = tracker.best_epoch if tracker else None
        if tracker:
            tracker.restore()
        return self

    def _cluster_classes(self):
        return self.counts, len(self.counts)

    @classmethod
    def resume(cls, directory, pairs, validation=None, items=None, callbacks=(), progress=None, **params):
        """Continue the run checkpointed in ``directory`` on the same ``pairs`` (and ``validation``).

        The result is the model the uninterrupted run would have given: bit-identical with ``workers=1``.
        ``params`` may repeat constructor parameters; one that differs from the checkpoint's is refused
        (``workers`` may change).  Returns the trained model.
        """
        model, run = cls._open_checkpoint(directory, params, callbacks, progress)
        return model.fit(pairs, validation=validation, items=items, **run["args"])

    # ------------------------------------------------------------------ queries
    def _check_fitted(self):
        if self.W_in is None:
            raise RuntimeError("the model is not trained yet: call fit() first")

    def _index(self, item):
        self._check_fitted()
        if isinstance(item, (int, np.integer)) and not isinstance(item, bool):
            if not 0 <= item < len(self.items):
                raise KeyError("item id %d is out of range [0, %d)" % (item, len(self.items)))
            return int(item)
        lookup = getattr(self, "_lookup", None)
        if lookup is None or len(lookup) != len(self.items):
            lookup = self._lookup = {name: i for i, name in enumerate(self.items)}
        try:
            return lookup[str(item)]
        except KeyError:
            raise KeyError("unknown item %r" % (item,)) from None

    def _check_target_vectors(self):
        if not self._loss_class().CLASS_ROWS:
            raise NotImplementedError("ranking targets needs one output vector per item; the %s loss trains "
                                      "tree nodes instead -- use the context vectors (similar_items) or "
                                      "another loss" % self.loss)

    def scores(self, item):
        """Scores ``<W_in[item], W_out[j]>`` of every target ``j`` after context ``item`` (name or id)."""
        i = self._index(item)
        self._check_target_vectors()
        return self.target_vectors[:len(self.items)] @ self.context_vectors[i]

    def recommend(self, item, topn=10, exclude=(), return_scores=False):
        """The ``topn`` most likely next items after ``item``, best first (ids).

        Parameters
        ----------
        item : int or str
        topn : int
        exclude : iterable of int or str
            Items to leave out (e.g. those already seen).
        return_scores : bool
            Also return the scores.
        """
        check_param("topn", topn, *POSITIVE_INT)
        s = self.scores(item)
        drop = [self._index(x) for x in exclude]
        if drop:
            s = s.copy()
            s[drop] = -np.inf
        topn = min(topn, len(s) - len(set(drop)))
        top = np.argpartition(-s, topn - 1)[:topn] if topn < len(s) else np.arange(len(s))
        top = top[np.lexsort((top, -s[top]))]
        return (top, s[top]) if return_scores else top

    def similar_items(self, item, topn=10, space="context"):
        """Items whose vectors are closest to ``item``'s by cosine: ``[(name, similarity), ...]``.

        ``space`` is ``"context"`` (input vectors), ``"target"`` (output vectors) or ``"both"`` (their sum).
        """
        return self.keyed_vectors(space).most_similar(self.items[self._index(item)], topn=topn)

    def keyed_vectors(self, space="context"):
        """The item vectors of ``space`` as a gensim ``KeyedVectors`` keyed by item name."""
        from gensim.models import KeyedVectors
        self._check_fitted()
        n = len(self.items)
        if space not in ("context", "target", "both"):
            raise ValueError("space must be 'context', 'target' or 'both', got %r" % (space,))
        if space != "context":
            self._check_target_vectors()
        vectors = {"context": lambda: self.context_vectors, "target": lambda: self.target_vectors[:n],
                   "both": lambda: self.context_vectors + self.target_vectors[:n]}[space]()
        kv = KeyedVectors(self.vector_size, count=0, dtype=np.float32)
        kv.add_vectors(self.items, vectors)
        return kv

    @property
    def wv(self):
        """Context vectors as a gensim ``KeyedVectors`` (as ``Word2Vec.wv``)."""
        return self.keyed_vectors("context")

    def evaluate(self, pairs, ks=(5, 15, 50), n_negatives=100, seed=0, exclude=None, workers=None):
        """Likelihood, MPR (exact and approximate) and Prec@k of held-out pairs.

        Parameters
        ----------
        pairs : scipy.sparse matrix, PairCounts or array-like (n, 2) / (n, 3)
            Test co-occurrences over this model's item ids (counts become repeated rows).

        Returns
        -------
        embkit.evaluation.RankingResult
        """
        from embkit.evaluation.ranking import evaluate_ranking
        self._check_fitted()
        self._check_target_vectors()
        n = len(self.items)
        if sp.issparse(pairs) or hasattr(pairs, "matrix"):
            m, _ = as_pair_matrix(pairs)
            if m.shape[0] != n:
                raise ValueError("the evaluation matrix has %d items, the model %d" % (m.shape[0], n))
            pairs = _pairs_of(m)
        elif not isinstance(pairs, np.ndarray) or pairs.ndim != 2 or pairs.shape[1] != 2:
            m, _ = as_pair_matrix(pairs, n_items=n)
            pairs = _pairs_of(m)
        return evaluate_ranking(self.context_vectors, self.target_vectors[:n], pairs, ks=ks,
                                n_negatives=n_negatives, seed=seed, exclude=exclude, workers=workers)

    # ------------------------------------------------------------------ persistence
    def _words(self):
        return self.items

    def _arrays(self):
        return {"counts": self.counts}

    def _restore(self, state, words, arrays):
        self.items = list(words)
        self.counts = arrays["counts"]

    def _repr_fields(self):
        return ["items=%d" % (len(self.items) if self.items is not None else 0)]


def _pairs_of(matrix):
    """(context, target) rows of a count matrix, each repeated by its (rounded) count."""
    coo = matrix.tocoo()
    reps = np.maximum(np.rint(coo.data).astype(np.int64), 1)
    return np.column_stack([np.repeat(coo.row, reps), np.repeat(coo.col, reps)]).astype(np.int64)


def _metrics_of(result):
    """Flat dict of the ranking metrics that validation can select by."""
    out = {"mpr_approx": result.mpr_approx, "mpr": result.mpr, "likelihood": result.likelihood,
           "log_likelihood": result.log_likelihood}
    for k, v in result.precision.items():
        out["prec%d" % k] = v
    return {k: (float("nan") if v is None else float(v)) for k, v in out.items()}
