"""``embkit.ItemEmbedding``: implicit factorisation of an item -> item co-occurrence matrix (next-item prediction).

The model scores a target item ``j`` after a context item ``i`` by ``<W_in[i], W_out[j]>`` and is trained on
the ``pairs`` driver with any loss and sampler of the registry: pairs ``(i, j)`` are drawn in proportion to
their co-occurrence counts.  This is the setting of the relaxed-softmax paper's next-item experiments
(MovieLens, Netflix, text pairs).  A user's history is scored by the recency-weighted sum of its items'
context vectors (:mod:`embkit.items.histories`), to which the model may add the log of the history's
co-occurrence counts with a weight chosen on validation users (:mod:`embkit.items.count_blend`); the
queries, by item id, are in :mod:`embkit.items.recommender`.

Examples
--------
>>> import scipy.sparse as sp
>>> from embkit import ItemEmbedding
>>> counts = sp.random(50, 50, density=0.2, format="csr", random_state=0) * 10
>>> model = ItemEmbedding(vector_size=16, epochs=2, progress=False).fit(counts)
>>> ids, scores = model.recommend([3, 7], N=5)      # next items after item 3, then item 7
>>> ids.shape, scores.shape
((5,), (5,))
"""
import logging

import numpy as np
import scipy.sparse as sp

from embkit._kernels.pairs import PairTrainer
from embkit._kernels.samplers import AliasSampler
from embkit.core.base import EmbeddingModel
from embkit.cluster import (EXCHANGE_BITS, EXCHANGE_SHARE, FREQUENT_ROWS, RECONCILE, STALENESS, SYNCS_PER_EPOCH,
                            ClusterTraining)
from embkit.core.checkpoint import fingerprint
from embkit.core.checks import NON_NEGATIVE_INT, NON_NEGATIVE_REAL, POSITIVE_INT, check_param, optional
from embkit.core.hot_rows import pair_hot_rows
from embkit.core.batched_softmax import check_batch_size
from embkit.core.sparse_checks import MAX_ROWS, check_sparse
from embkit.core.validation import KEEPS, BestEpoch, check_keep
from embkit.items.count_blend import COUNT_NORMS, blend_counts, check_count_matrix, choose_count_weight
from embkit.items.histories import history_matrix
from embkit.items.item_ids import ItemIds
from embkit.items.leave_one_out import HeldOut
from embkit.items.pair_batches import PairBatches
from embkit.items.pair_shards import PairChunk, pair_shards
from embkit.items.recommender import ItemQueries

logger = logging.getLogger(__name__)

__all__ = ["ItemEmbedding", "as_pair_matrix", "DEFAULT_KEEP"]

#: What ``fit(validation=...)`` keeps by default (:data:`~embkit.core.validation.KEEPS`).
DEFAULT_KEEP = "average"

#: ``ItemEmbedding.evaluate`` metric names that ``fit(validation=pairs)`` can select the best epoch by.
VALIDATION_METRICS = ("mpr_approx", "mpr", "likelihood", "log_likelihood", "prec5", "prec15", "prec50")
#: The metric names of ``fit(validation=HeldOut)`` (leave-one-out: NDCG@k, Hit@k, MPR over unseen items).
NEXT_ITEM_METRICS = ("ndcg10", "hit10", "mpr", "ndcg20", "hit20", "ndcg5", "hit5")
#: Cut-offs of the leave-one-out metrics ``evaluate`` reports.
NEXT_ITEM_KS = (5, 10, 20)


#: Most pairs one epoch draws (the counts' sum): beyond 2**53 a float64 count no longer counts one by one.
MAX_PAIRS = 2 ** 53


def as_pair_matrix(pairs, n_items=None):
    """Turn co-occurrence data into ``(csr counts, item ids or None)``.

    Parameters
    ----------
    pairs : scipy.sparse matrix, object with ``matrix`` (and ``ids``), or array-like (n, 2) / (n, 3)
        Square count matrix (rows: context items, columns: next items), a ``PairCounts`` (its ``ids``
        become the item ids), or ``(context, target[, count])`` rows of indices ``0..n-1``.
    n_items : int, optional
        Number of items for array input (default: the largest index + 1).

    Returns
    -------
    (scipy.sparse.csr_matrix of float64, list of ids or None)
    """
    names = None
    if hasattr(pairs, "matrix"):
        names = getattr(pairs, "ids", None)
        names = None if names is None else list(names)
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
        raise ValueError("%d item ids for %d items" % (len(names), m.shape[0]))
    return m, names


class ItemEmbedding(ItemQueries, ClusterTraining, EmbeddingModel):
    """Item vectors from an item -> item co-occurrence matrix, for next-item recommendation and similar items.

    The defaults (sampled softmax with unigram negatives, 30 epochs, ``recency=0.6``, with the pairs of
    ``PairCounts.from_timelines``'s defaults, the tables of the epochs from the best one on averaged, and the
    count blend of the cosine-normalised counts with its weight chosen on the validation users)
    are the configuration that ranked held-out next items best on validation users
    (``eval/studies/item_defaults.py``; RESULTS.md, "Recommendation").

    Parameters
    ----------
    vector_size : int
        Dimension of the item vectors.
    loss : str
        Registry loss: ``sampled_softmax`` (the default: softmax over the negatives with the log-probability
        correction of the sampler), ``sgns``, ``nce``, ``relaxed_softmax``, ``full_softmax``, ``hs``.
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
    recency : float
        Weight ratio, in ``[0, 1]``, between an item of a user's history and the item after it when the
        history is scored (:mod:`embkit.items.histories`): the most recent item weighs 1, the one before
        ``recency``, and so on.
    count_weight : float, optional
        Weight ``w >= 0`` of the co-occurrence counts in a history's scores: ``<u, W_out[j]> + w * log(1 + c_j)``
        with ``c`` the history's recency-weighted count rows (:mod:`embkit.items.count_blend`).  None (the
        default): ``fit(validation=HeldOut)`` picks it from :data:`~embkit.items.count_blend.COUNT_WEIGHTS`
        by the validation metric, after the best epoch is restored; without such validation it is 0 (the
        embedding alone).
    count_norm : {"cosine", "none"}
        How the blend's counts are prepared (:func:`~embkit.items.count_blend.blend_counts`): ``"cosine"``
        (the default) divides each count by the geometric mean of its two items' pair counts and multiplies
        it by the mean pair count of an item, so that the pairs of popular items weigh less; ``"none"`` blends
        the raw counts.
    loss_params, sampler_params : dict, optional
        Extra parameters of the loss and sampler (e.g. ``{"T": 3, "degeneracy": "popularity"}``).
    chunk_pairs : int
        Pairs per kernel call (adaptive samplers refresh between calls).
    hot_rows : int, optional
        Each training thread keeps its own copies of the output rows of the ``hot_rows`` most counted items
        (the rows most negatives write, which threads otherwise keep taking from each other's caches) and
        adds its change to the table after ``128 // workers`` steps on a row, every 65,536 pairs and at the
        end of each slice (:func:`embkit.core.hot_rows.pair_hot_rows`).  None or 0 (the default): every step
        writes the tables (on two cores the copies did not pay; BENCHMARKS.md).  One worker keeps no
        copies, nor do the losses and samplers that reach the output rows otherwise (as ``Word2Vec``'s).
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
    client, syncs_per_epoch, reconcile, exchange_share, exchange_bits, staleness, frequent_rows :
        Train on a Dask cluster, as ``Word2Vec``'s parameters of the same names: the matrix's entries are
        dealt into one shard per worker (see :mod:`embkit.items.pair_shards`); ``validation`` scores the
        reconciled tables on the client after each epoch, as in one process.

    Attributes
    ----------
    context_vectors, target_vectors : numpy.ndarray (n_items, vector_size)
        Input (context) and output (target) tables.
    items : list of int or list of str
        The item ids, in row order: those of the data (``PairCounts.ids``, ``items=``), ints for row
        numbers when the data had none.
    last_report : TrainingReport
    history : list of dict
        Validation metrics per epoch when ``fit`` had ``validation`` (this is not a user history).
    best_epoch : int or None
        The epoch whose tables were kept (by validation), None without validation.
    blend_weight : float
        The count weight the queries and ``evaluate`` use (``count_weight``, or the one validation chose).
    blend_history : dict
        Validation metric of each count weight tried by ``fit`` (empty when none was).
    pair_counts : scipy.sparse.csr_matrix or None
        The training co-occurrence counts as ``count_norm`` prepares them for the blend (float32, the model's
        rows), kept when ``blend_weight > 0``.
    """

    chunk_param = "chunk_pairs"
    NAMED_ROWS = True
    unit = "pair"
    CLUSTER_STATE = "counts"
    CLASS_INPUTS = True
    RUNTIME_PARAMS = EmbeddingModel.RUNTIME_PARAMS | ClusterTraining.CLUSTER_PARAMS
    #: a resumed run may move to (or between) clusters; the cluster settings are checked against its run
    RESUMABLE_CHANGES = EmbeddingModel.RESUMABLE_CHANGES | ClusterTraining.CLUSTER_PARAMS
    #: the cluster client
    TRANSIENT = EmbeddingModel.TRANSIENT | {"client"}
    STATE_FIELDS = {"blend_weight": (NON_NEGATIVE_REAL, False)}
    RUN_ARG_FIELDS = {"metric": ((lambda v: v in VALIDATION_METRICS + NEXT_ITEM_METRICS,
                                  "one of " + ", ".join(VALIDATION_METRICS + NEXT_ITEM_METRICS), str), False),
                      "patience": (optional(POSITIVE_INT), False), "n_negatives": (POSITIVE_INT, False),
                      "keep": ((lambda v: v in KEEPS, "one of " + ", ".join(KEEPS), str), False)}

    def __init__(self, vector_size=100, loss="sampled_softmax", sampler=None, negative=5, alpha=0.025,
                 min_alpha=None, epochs=30, workers=2, seed=1, loss_params=None, sampler_params=None,
                 chunk_pairs=1 << 16, batch_size=None, recency=0.6, count_weight=None, count_norm="cosine",
                 hot_rows=None, callbacks=(),
                 checkpoint_dir=None, checkpoint_every=600, progress=True, client=None, syncs_per_epoch=SYNCS_PER_EPOCH,
                 reconcile=RECONCILE, exchange_share=EXCHANGE_SHARE, exchange_bits=EXCHANGE_BITS, staleness=STALENESS,
                 frequent_rows=FREQUENT_ROWS):
        self.chunk_pairs = chunk_pairs
        self.batch_size = batch_size
        self.recency = recency
        self.count_weight = count_weight
        self.count_norm = count_norm
        self.hot_rows = hot_rows
        self.blend_weight = 0.0
        self.blend_history = {}
        self.pair_counts = None
        self.client, self.syncs_per_epoch, self.reconcile = client, syncs_per_epoch, reconcile
        self.exchange_share, self.exchange_bits = exchange_share, exchange_bits
        self.frequent_rows = frequent_rows
        self.staleness = staleness
        self._ids = None
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
        check_param("recency", self.recency, lambda v: 0 <= v <= 1, "a number in [0, 1]")
        check_param("count_weight", self.count_weight, *optional(NON_NEGATIVE_REAL))
        check_param("count_norm", self.count_norm, lambda v: v in COUNT_NORMS,
                    "one of " + ", ".join(map(repr, COUNT_NORMS)), str)
        check_param("hot_rows", self.hot_rows, *optional(NON_NEGATIVE_INT))

    # ------------------------------------------------------------------ training
    def _kernel_trainer(self, loss, sampler, alpha, min_alpha, total):
        contexts, targets, entries, weights = self._pairs
        if self.batch_size is not None:
            return PairBatches(self.W_in, self.W_out, contexts, targets, weights, self.batch_size, alpha,
                               min_alpha, total, self.seed)
        trainer = PairTrainer(self.W_in, self.W_out, contexts, targets, entries, loss, sampler, self.negative,
                              alpha, min_alpha, total, self.seed)
        trainer.hot_rows(**pair_hot_rows(self.hot_rows, self.counts, self.workers))
        return trainer

    def fit(self, pairs, validation=None, metric=None, patience=None, items=None, n_negatives=100, keep=DEFAULT_KEEP):
        """Train on a co-occurrence matrix; optionally track a validation split and stop early.

        Parameters
        ----------
        pairs : scipy.sparse matrix, PairCounts or array-like
            Training co-occurrences (see :func:`as_pair_matrix`).
        validation : HeldOut, or the same kinds as `pairs`, optional
            Scored after every epoch (``history``); the tables kept are those of the best epoch by `metric`
            (see `keep`).  A :class:`~embkit.items.leave_one_out.HeldOut` set (users' histories and next
            items) is scored with the leave-one-out metrics, held-out pairs with the pair metrics (see
            :meth:`evaluate`).
        metric : str, optional
            For held-out pairs one of :data:`VALIDATION_METRICS` (default ``"mpr_approx"``), for a
            ``HeldOut`` set one of :data:`NEXT_ITEM_METRICS` (default ``"ndcg10"``); higher is better.
        patience : int, optional
            Stop after this many epochs without improvement of `metric` (None: run all epochs).
        items : sequence of int or str, optional
            Item ids (default: from `pairs` if it has them, else the rows ``0, 1, ...``).
        n_negatives : int
            Uniform negatives per validation pair for the approximate MPR.
        keep : {"average", "best"}
            With `validation`: the tables kept are the mean of those of the best epoch and of every epoch
            after it (``"average"``, the default: chosen on the validation items of ml-100k and
            ml-latest-small, the epoch picked on half of the users and scored on the other half), or the best
            epoch's own.

        Returns
        -------
        self
        """
        matrix, names = as_pair_matrix(pairs)
        n = matrix.shape[0]
        if items is not None:
            names = list(items)
            if len(names) != n:
                raise ValueError("%d item ids for %d items" % (len(names), n))
        self._ids = ItemIds(names if names is not None else range(n))
        next_items = isinstance(validation, HeldOut)
        metric = metric or ("ndcg10" if next_items else "mpr_approx")
        allowed = NEXT_ITEM_METRICS if next_items else VALIDATION_METRICS
        if metric not in allowed:
            raise ValueError("metric must be one of %s, got %r" % (", ".join(allowed), metric))
        if patience is not None:
            check_param("patience", patience, *POSITIVE_INT)
        check_keep(keep)
        val, val_arrays = None, (None,)
        if next_items:
            val = self._held_out_queries(validation)     # refuses ids the model does not know before training
            val_arrays = (validation.items, validation.offsets, validation.targets)
        elif validation is not None:
            vm, _ = as_pair_matrix(validation, n_items=n)
            if vm.shape[0] != n:
                raise ValueError("the validation matrix has %d items, the training matrix %d" % (vm.shape[0], n))
            val = _pairs_of(vm)
            val_arrays = (val,)
        self.blend_weight, self.blend_history, self.pair_counts = 0.0, {}, None   # the embedding alone meanwhile
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

        run_args = {"metric": metric, "patience": patience, "n_negatives": n_negatives, "keep": keep}
        digest = fingerprint(coo.row, coo.col, coo.data, *val_arrays)
        tracker = None
        if val is not None:
            def score(epoch, report):
                result = (self._evaluate_held_out(*val, NEXT_ITEM_KS, validation.name) if next_items else
                          self._evaluate_pair_rows(val, (5, 15, 50), n_negatives, 0, None, None))
                return dict(loss=report.epoch_loss[-1], **_metrics_of(result))
            tracker = BestEpoch(self, score, metric, patience, keep)
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
        self._fit_blend(matrix, val if next_items else None, metric, validation)
        return self

    def _fit_blend(self, matrix, held_out, metric, validation):
        """Set the count blend: ``count_weight``, else the weight of the best ``metric`` on the leave-one-out
        ``held_out`` queries (0 without them); keep the counts when the weight is above zero."""
        if self.count_weight == 0:
            return
        self.pair_counts = blend_counts(matrix, self.count_norm)
        if self.count_weight is not None:
            weight = float(self.count_weight)
        elif held_out is not None and self._loss_class().CLASS_ROWS:
            weight, self.blend_history = choose_count_weight(
                lambda w: _metrics_of(self._evaluate_held_out(*held_out, NEXT_ITEM_KS, validation.name, w)), metric)
            logger.info("count blend weight %s (validation %s by weight: %s)", weight, metric,
                        ", ".join("%s %.4f" % kv for kv in self.blend_history.items()))
        else:
            weight = 0.0
        self.blend_weight = weight
        if not weight:
            self.pair_counts = None

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
        args = dict({"keep": "best"}, **run["args"])      # a run from before ``keep`` kept the best epoch's
        return model.fit(pairs, validation=validation, items=items, **args)

    # ------------------------------------------------------------------ queries
    def _check_fitted(self):
        if self.W_in is None:
            raise RuntimeError("the model is not trained yet: call fit() first")

    def _check_target_vectors(self):
        if not self._loss_class().CLASS_ROWS:
            raise NotImplementedError("ranking targets needs one output vector per item; the %s loss trains "
                                      "tree nodes instead -- use the context vectors (similar_items) or "
                                      "another loss" % self.loss)

    def evaluate(self, data, ks=None, n_negatives=100, seed=0, exclude=None, workers=None, filter_seen=True):
        """Score held-out data: leave-one-out next items, or held-out pairs.

        Parameters
        ----------
        data : HeldOut, PairCounts, scipy.sparse matrix or array-like (n, 2) / (n, 3)
            A :class:`~embkit.items.leave_one_out.HeldOut` set (each user's history and next item, by id):
            Hit@k, NDCG@k, Prec@k and MPR of the next item ranked against every item the user has not
            seen (:func:`embkit.evaluation.evaluate_next_items`).  Otherwise test co-occurrences: a
            ``PairCounts`` (matched to the model by its ids), a count matrix over the model's items in row
            order, or ``(context, target[, count])`` rows of item ids (counts become repeated rows):
            likelihood, MPR (exact and approximate) and Prec@k (:func:`embkit.evaluation.evaluate_ranking`).
        ks : sequence of int, optional
            Cut-offs (default ``(5, 10, 20)`` for next items, ``(5, 15, 50)`` for pairs).
        n_negatives, seed, exclude, workers :
            Pairs only: see :func:`embkit.evaluation.evaluate_ranking`.
        filter_seen : bool
            Next items only: filter each user's history from its ranking (the protocol people report).

        Next items are scored as :meth:`recommend` scores them (the count blend included); pairs by the
        vectors alone.

        Returns
        -------
        embkit.evaluation.NextItemResult or embkit.evaluation.RankingResult
        """
        self._check_fitted()
        self._check_target_vectors()
        if isinstance(data, HeldOut):
            weights, seen, targets = self._held_out_queries(data)
            return self._evaluate_held_out(weights, seen if filter_seen else None, targets, ks or NEXT_ITEM_KS,
                                           data.name)
        return self._evaluate_pair_rows(self._pair_rows(data), ks or (5, 15, 50), n_negatives, seed, exclude,
                                        workers)

    def _evaluate_pair_rows(self, pairs, ks, n_negatives, seed, exclude, workers):
        """Pair metrics of ``(n, 2)`` (context row, target row) pairs."""
        from embkit.evaluation.ranking import evaluate_ranking
        return evaluate_ranking(self.context_vectors, self.target_vectors[:len(self._ids)], pairs, ks=ks,
                                n_negatives=n_negatives, seed=seed, exclude=exclude, workers=workers)

    def _held_out_queries(self, held_out):
        """History weights and seen items (users x the model's items) and next-item rows of a ``HeldOut`` set,
        matched by id."""
        used = np.unique(np.concatenate([held_out.items, held_out.targets]))
        remap = np.zeros(len(held_out.item_ids), dtype=np.int64)
        remap[used] = self._ids.rows(held_out.item_ids[used])
        weights, seen = history_matrix([remap[h] for h in held_out.histories()], len(self._ids), self.recency)
        return weights, seen, remap[held_out.targets]

    def _evaluate_held_out(self, weights, seen, targets, ks, name, blend_weight=None):
        """Leave-one-out metrics of history weights (users x items) and next-item rows, the counts blended with
        ``blend_weight`` (default: the model's)."""
        from embkit.evaluation.next_item import evaluate_next_items
        users = np.asarray(weights @ self.context_vectors, dtype=np.float32)
        items = self.target_vectors[:len(self._ids)]
        extra = self._count_part(weights, blend_weight)
        if extra is None:
            return evaluate_next_items((users, items), targets, seen, ks=ks, name=name)

        def scores(start, stop):
            return users[start:stop] @ items.T + extra(start, stop)
        return evaluate_next_items(scores, targets, seen, ks=ks, name=name, n_items=len(items))

    def _pair_rows(self, pairs):
        """``(n, 2)`` (context, target) rows of test pairs: ids of a PairCounts or of rows mapped to the model's
        rows, a matrix taken in the model's row order."""
        n = len(self._ids)
        ids = getattr(pairs, "ids", None)
        if ids is not None and hasattr(pairs, "matrix") and list(ids) != self._ids.values:
            coo = pairs.matrix.tocoo()
            remap = self.item_index(np.asarray(ids))
            pairs = sp.csr_matrix((coo.data, (remap[coo.row], remap[coo.col])), shape=(n, n))
        if sp.issparse(pairs) or hasattr(pairs, "matrix"):
            m, _ = as_pair_matrix(pairs)
            if m.shape[0] != n:
                raise ValueError("the evaluation matrix has %d items, the model %d" % (m.shape[0], n))
            return _pairs_of(m)
        arr = np.asarray(pairs)
        if arr.ndim != 2 or arr.shape[1] not in (2, 3) or arr.shape[0] == 0:
            raise ValueError("pairs must be a non-empty (n, 2) or (n, 3) array of (context, target[, count]) "
                             "rows, got shape %s" % (arr.shape,))
        ids = arr[:, :2]
        if ids.dtype.kind == "f" and np.isfinite(ids).all() and (ids == np.round(ids)).all():
            ids = ids.astype(np.int64)
        rows = self.item_index(ids.ravel()).reshape(-1, 2)
        counts = arr[:, 2] if arr.shape[1] == 3 else np.ones(len(arr))
        m, _ = as_pair_matrix(np.column_stack([rows, counts]), n_items=n)
        return _pairs_of(m)

    # ------------------------------------------------------------------ persistence
    def _words(self):
        return self._ids.words()

    def _state(self):
        return {"blend_weight": float(self.blend_weight)}

    def _arrays(self):
        arrays = dict(self._ids.saved_arrays(), counts=self.counts)
        if self.pair_counts is not None:
            arrays.update({"pair_counts." + key: getattr(self.pair_counts, key)
                           for key in ("indptr", "indices", "data")})
        return arrays

    @classmethod
    def _from_archive(cls, config, words, arrays, path):
        """The saved model; one written before ``count_norm`` existed blends the raw counts it holds."""
        model = super()._from_archive(config, words, arrays, path)
        if "count_norm" not in (config.get("params") or {}):
            model.count_norm = "none"
        return model

    def _restore(self, state, words, arrays):
        self._ids = ItemIds.from_saved(words, arrays)
        self.counts = arrays["counts"]
        self.blend_weight = float(state.get("blend_weight", 0.0))
        self.pair_counts = None
        if self.blend_weight:
            parts = [arrays.get("pair_counts." + key) for key in ("indptr", "indices", "data")]
            if any(part is None for part in parts):
                raise ValueError("blend_weight is %s but the file holds no co-occurrence counts" % self.blend_weight)
            self.pair_counts = check_count_matrix(*parts, len(self._ids))

    def _repr_fields(self):
        return ["items=%d" % (len(self._ids) if self._ids is not None else 0)]


def _pairs_of(matrix):
    """(context, target) rows of a count matrix, each repeated by its (rounded) count."""
    coo = matrix.tocoo()
    reps = np.maximum(np.rint(coo.data).astype(np.int64), 1)
    return np.column_stack([np.repeat(coo.row, reps), np.repeat(coo.col, reps)]).astype(np.int64)


def _metrics_of(result):
    """Flat dict of the metrics that validation can select by (next-item or pair metrics)."""
    if hasattr(result, "hit"):
        out = {"mpr": result.mpr}
        for k in result.hit:
            out["hit%d" % k], out["ndcg%d" % k] = result.hit[k], result.ndcg[k]
        return {k: (float("nan") if v is None else float(v)) for k, v in out.items()}
    out = {"mpr_approx": result.mpr_approx, "mpr": result.mpr, "likelihood": result.likelihood,
           "log_likelihood": result.log_likelihood}
    for k, v in result.precision.items():
        out["prec%d" % k] = v
    return {k: (float("nan") if v is None else float(v)) for k, v in out.items()}
