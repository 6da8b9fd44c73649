"""``embkit.ExtremeClassifier``: sparse features -> dense embedding -> scores over a very large label set.

The hidden vector of an example is the weighted sum of its feature rows (optionally L2-normalised and
divided by a temperature ``tau``); a label's score is its dot product with the label's row.  Two solvers
(``solver=``, objects of :class:`~embkit.xc.solver.Solver` that the classifier asks what differs):

* ``"one_vs_all"`` (the default): a binary logistic loss per label against every label, a learned bias per
  label, tf-idf weighted and L2-normalised rows, Adam steps on mini-batches of BLAS products and a small
  ensemble (:mod:`embkit.xc.one_vs_all`) -- the configuration measured best on Bibtex and Delicious;
* ``"sampled"``: any loss and sampler of the registry (LSH, kernel, uniform, log-uniform, unigram, top-k,
  full softmax, ...) on the ``rows`` driver (:mod:`embkit.xc.sampled`), the setting of the
  LSH-negative-sampling and RF-softmax papers, for label sets too large to score every label per example.

``solver`` may be left out: a registry loss (``loss="sampled_softmax"``) selects ``"sampled"``.

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

from embkit.core.base import EmbeddingModel
from embkit.core.batched_softmax import to_unit_sphere
from embkit.core.checkpoint import fingerprint
from embkit.core.checks import (COUNT, FINITE_REAL, POSITIVE_INT, POSITIVE_REAL, TEXT, check_flag, check_param,
                                is_finite, list_of, optional)
from embkit.core.sparse_checks import check_sparse
from embkit.xc.blend import blend, choose_weights, top_k
from embkit.xc.features import FEATURE_WEIGHTINGS, feature_weights, weight_rows
from embkit.xc.head_fits import HeadFits
from embkit.xc.heads import HEADS, head_params as checked_head_params
from embkit.xc.prediction_input import feature_rows
from embkit.xc.one_vs_all import OneVsAll
from embkit.xc.sampled import Sampled

logger = logging.getLogger(__name__)

__all__ = ["ExtremeClassifier", "SOLVERS", "DEFAULT_SOLVER"]

#: cells of the score block computed at once by ``predict`` (rows x labels).
_SCORE_BLOCK_CELLS = 1 << 24
#: fewest training rows on each side of the blend's validation split (fewer: no blend)
_MIN_BLEND_ROWS = 20
#: the heads' state entry of the tf-idf weights of the heads' rows when the model's rows have none
_HEAD_WEIGHTS = "feature_weights"
#: most training rows held out for the blend (enough to choose a few weights; the model trains on the rest)
_MAX_BLEND_ROWS = 2000
#: the stream of the seed that draws the blend's validation split
_BLEND_STREAM = 7919

#: ``solver=`` -> the solver
SOLVERS = {solver.name: solver for solver in (OneVsAll(), Sampled())}
#: the solver of ``solver=None`` without a loss
DEFAULT_SOLVER = OneVsAll.name
#: loss names of calls and files from before ``solver=`` -> the ``(solver, loss)`` they mean
_LEGACY_LOSSES = {"one_vs_all": (OneVsAll.name, OneVsAll.default_loss)}


def _unalias(solver, loss):
    """``(solver, loss)`` with a legacy loss name replaced by the loss it means and, unless ``solver`` is
    given, by its solver."""
    legacy = _LEGACY_LOSSES.get(loss) if isinstance(loss, str) else None
    return (solver, loss) if legacy is None else (solver or legacy[0], legacy[1])


def _solver_and_loss(solver, loss):
    """``(solver object, loss name)`` of the constructor's ``solver`` and ``loss`` (either may be None).

    ``loss`` selects the solver that trains it (a legacy name, its solver and loss); without a loss,
    ``solver`` (default :data:`DEFAULT_SOLVER`) trains its default loss.  ValueError naming the parameter for
    an unknown solver or loss, or a loss of another solver than ``solver``.
    """
    solver, loss = _unalias(solver, loss)
    if solver is not None and solver not in SOLVERS:
        raise ValueError("solver must be one of %s, got %r" % (", ".join(map(repr, SOLVERS)), solver))
    if loss is None:
        chosen = SOLVERS[solver or DEFAULT_SOLVER]
        return chosen, chosen.default_loss
    owners = {name: owner for owner, s in SOLVERS.items() for name in s.losses}
    if not isinstance(loss, str) or loss not in owners:
        raise ValueError("unknown loss %r; valid losses: %s" % (loss, "; ".join(
            "%s (solver=%r)" % (", ".join(s.losses), name) for name, s in SOLVERS.items())))
    owner = owners[loss]
    if solver not in (None, owner):
        raise ValueError("loss=%r is a loss of solver=%r, not of solver=%r" % (loss, owner, solver))
    return SOLVERS[owner], loss


def _head_names(heads):
    """``heads`` as a tuple of names of :data:`~embkit.xc.heads.HEADS`; ValueError naming a bad one."""
    if isinstance(heads, str) or not hasattr(heads, "__iter__"):
        raise ValueError("heads must be a list of head names (%s), got %r" % (", ".join(HEADS), heads))
    names = tuple(heads)
    for name in names:
        if not isinstance(name, str) or name not in HEADS:
            raise ValueError("heads must be a list of head names (%s), got %r" % (", ".join(HEADS), name))
    if len(set(names)) != len(names):
        raise ValueError("heads names a head twice: %r" % (names,))
    return names


def _saved_rows(state):
    n = state.get("n_train")
    return n if isinstance(n, int) and not isinstance(n, bool) and n >= 0 else 0


def _head_array_bounds():
    """:attr:`ExtremeClassifier.BOUNDED_ARRAYS`: the most elements each saved array of a sparse head holds
    (``n_in`` features, ``n_out`` labels, ``n_train`` training rows in the saved state)."""
    bounds = {}
    for name, rows, cols in (("centroids", lambda n_in, n_out, n: n_in, lambda n_in, n_out, n: n_out),
                             ("neighbour_rows_t", lambda n_in, n_out, n: n_in, lambda n_in, n_out, n: n),
                             ("neighbour_labels", lambda n_in, n_out, n: n, lambda n_in, n_out, n: n_out)):
        def entries(n_in, n_out, state, rows=rows, cols=cols):
            n = _saved_rows(state)
            return rows(n_in, n_out, n) * cols(n_in, n_out, n)

        def pointers(n_in, n_out, state, rows=rows):
            return rows(n_in, n_out, _saved_rows(state)) + 1

        bounds.update({"head_%s_data" % name: entries, "head_%s_indices" % name: entries,
                       "head_%s_indptr" % name: pointers, "head_%s_shape" % name: lambda n_in, n_out, state: 2})
    return bounds


def _blas_threads(limit):
    """A context limiting the BLAS library's threads to ``limit`` (None: unchanged)."""
    if limit is None:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits
    return threadpool_limits(limits=limit, user_api="blas")


class _RowChunk:
    __slots__ = ("kernel_args", "raw_units")

    def __init__(self, order):
        self.kernel_args = (order,)
        self.raw_units = len(order)

    def __len__(self):
        return self.raw_units


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


class ExtremeClassifier(EmbeddingModel):
    """Multi-label classifier over many labels: one-vs-all logistic, or sampled (or full) softmax-type losses.

    Parameters left at None take the default of the solver (one_vs_all / sampled).

    Parameters
    ----------
    vector_size : int, optional
        Width of the tables: 256 (two members of 128) for one_vs_all, 128 for sampled (as in the XC papers).
    loss : str, optional
        The loss the solver trains: ``"logistic"`` for one_vs_all (binary logistic loss of every label, with a
        bias per label), a registry loss for sampled (``sampled_softmax``, its default, ``sgns``, ``nce``,
        ``relaxed_softmax``, ``full_softmax``, ``hs``).  ``"one_vs_all"``, the name of the one-vs-all
        trainer before ``solver`` existed, means ``solver="one_vs_all"``.
    sampler : str, optional
        Registry sampler of a sampled loss (default ``uniform``); e.g. ``unigram`` (label frequency ** 0.75),
        ``log_uniform``, ``lsh`` (``sampler_params={"query": "label" | "embedding", "family": "simhash" |
        "dwta"}``), ``kernel``, ``topk``, ``boltzmann``.  ``sgns`` with ``topk`` or ``lsh`` is one-vs-all with
        adaptive hard negatives.
    negative : int
        Negatives per positive label (sampled; one_vs_all takes every label).
    normalize : bool, optional
        L2-normalise the hidden vector (default: off for one_vs_all, on for sampled).
    tau : float, optional
        Temperature: scores are divided by ``tau`` (default 1 for one_vs_all, 0.1 for sampled).  With
        ``normalize`` and ``normalize_classes`` scores are cosines / tau (the RF-softmax setting); 0.1-0.2
        worked best on Bibtex and Delicious.
    normalize_classes : bool, optional
        sampled only: keep class vectors on the unit sphere (projected after every update).  Default: on when
        the loss's output rows are the labels' vectors (not with ``hs``, whose rows are tree nodes).
    one_label : bool
        sampled only: train on one positive label per example visit, drawn at random (fastText's softmax);
        default trains on every positive label.
    alpha, min_alpha : float, optional
        Learning rate at the start and end (linear decay; ``min_alpha`` defaults to ``alpha / 1000``);
        ``alpha`` defaults to 0.01 (Adam's step) for one_vs_all, 0.1 for sampled.
    epochs : int, optional
        Passes (default 20 for sampled; 10 for one_vs_all, 4 when ``heads`` asks for any).
    workers, seed : int
    feature_weighting : {"tfidf", "none"}, optional
        Multiply every feature by its inverse document frequency in the training rows (default ``tfidf``
        for one_vs_all, ``none`` for sampled); the weights are kept and applied to every later call.
    normalize_rows : bool, optional
        Scale every (weighted) row to unit L2 norm (default: on for one_vs_all, off for sampled).
    ensemble : int, optional
        one_vs_all only: independent members (2 by default), each ``vector_size / ensemble`` wide with its
        own initialisation, order and biases; their probabilities are averaged.
    label_bias : bool
        one_vs_all only: learn a bias per label (on by default).
    heads : sequence of str, optional
        Closed-form label scorers (:mod:`embkit.xc.heads`: ``centroids``, ``least_squares``, ``neighbours``)
        whose scores are blended with the model's; None: the solver's (all three, for either solver, unless
        the loss's output rows are not the labels, as with ``hs``), ``()`` none.  The heads see the rows
        tf-idf weighted and of unit norm whatever the model's ``feature_weighting`` and ``normalize_rows``.
        With heads, the model is trained once, on the training rows less those held out
        (``blend_validation``); the blend weights (a grid on the simplex, the model's own scores alone
        included) are those of the best mean P@1/3/5 on the held-out rows, scored by the model and by heads
        fitted on the other rows; then the heads of nonzero weight are fitted on every row.  The heads are
        fitted on a thread of their own while the model trains (when the training keeps BLAS on one thread,
        as both solvers do but for ``batch_size`` batches); then, after the model's first epoch, a blend that
        gives it weight 0 stops its training there.  The weights are chosen over each held-out row's
        candidate labels (every scorer's top labels), so no score matrix is dense over every label at once.  A head that cannot be fitted on the data (least squares beyond
        ``max_gram_features`` features) is left out, and so is the blend with fewer than 20 rows on either
        side of the split.
    head_params : dict, optional
        The heads' parameters (:data:`embkit.xc.heads.HEAD_PARAMS` and their defaults).
    blend_validation : float
        Fraction of the training rows held out to choose the blend weights, at most 2,000 rows; the model
        does not train on them.
    solver : {"one_vs_all", "sampled"}, optional
        The training algorithm (:data:`SOLVERS`): ``"one_vs_all"`` (the default, :mod:`embkit.xc.one_vs_all`)
        trains the logistic loss of every label in BLAS mini-batches with Adam; ``"sampled"``
        (:mod:`embkit.xc.sampled`) trains a registry loss and sampler per example on the ``rows`` kernel.
        None: the solver of ``loss`` (a registry loss selects ``"sampled"``).
    loss_params, sampler_params : dict, optional
    chunk_examples : int
        Examples per kernel call (adaptive samplers refresh between calls).
    hot_rows : int, optional
        sampled on the per-example kernel, with more than one worker: each training thread keeps its own
        copies of the output rows of the ``hot_rows`` most frequent labels and every 1024 examples adds its
        change to them, divided by ``workers`` (the threads' mean), to the table.  A label table is small and
        every example writes dozens of its rows, so threads writing it directly keep taking its rows from each
        other's caches.  None (default): every label's rows, up to 2 MiB of copies a thread
        (:data:`embkit.core.hot_rows.HOT_ROW_BYTES`); 0: every step writes the table.  One worker has nothing
        to share, and a sampler that scores the table at every draw (``topk``, ``boltzmann``) would not see
        the thread's own steps: the setting changes nothing there.
    batch_size : int, optional
        one_vs_all: examples per Adam step (256 by default).  sampled with ``loss="full_softmax"``: train exact
        full softmax in mini-batches of this many examples with BLAS products (:mod:`embkit.xc.row_batches`),
        which reads each class row once per batch instead of once per example -- much faster with many
        labels.  None uses the per-example kernel.
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
    blend_heads : tuple of str
        The heads blended at prediction (those of nonzero weight; empty: the model's scores alone).
    blend_weights : tuple of float or None
        The weight of the model's scores, then one per head of ``blend_heads``.
    n_skipped : int
        Training rows without any label (skipped).
    n_train : int
        Training rows (for the propensities of PSP@k).
    last_report : TrainingReport
    """

    default_sampler = "uniform"
    chunk_param = "chunk_examples"
    STATE_FIELDS = {"n_train": (optional(COUNT), False), "blend_heads": (optional(list_of(TEXT)), False),
                    "blend_weights": (optional(list_of(FINITE_REAL)), False)}
    #: arrays saved beside the tables whose shape follows from the tables' (rows of W_in, rows of W_out)
    TABLE_SHAPED_ARRAYS = {"head_least_squares_weights": lambda n_in, n_out: (n_in + 1, n_out),
                           "head_" + _HEAD_WEIGHTS: lambda n_in, n_out: (n_in,)}
    #: the heads' sparse arrays: name -> most elements for the tables' rows and the saved ``n_train``
    BOUNDED_ARRAYS = _head_array_bounds()

    def __init__(self, vector_size=None, loss=None, sampler=None, negative=50, normalize=None,
                 tau=None, normalize_classes=None, one_label=False, alpha=None, min_alpha=None, epochs=None,
                 workers=2, seed=1, loss_params=None, sampler_params=None, chunk_examples=1 << 13, batch_size=None,
                 feature_weighting=None, normalize_rows=None, ensemble=None, label_bias=True, solver=None,
                 heads=None, head_params=None, blend_validation=0.2, hot_rows=None,
                 callbacks=(), checkpoint_dir=None, checkpoint_every=600, progress=True):
        chosen, loss = _solver_and_loss(solver, loss)
        self.solver = chosen.name
        given = dict(vector_size=vector_size, alpha=alpha, epochs=epochs, normalize=normalize, tau=tau,
                     batch_size=batch_size, feature_weighting=feature_weighting, normalize_rows=normalize_rows,
                     ensemble=ensemble, normalize_classes=normalize_classes)
        self.heads = chosen.heads_of(loss) if heads is None else _head_names(heads)
        defaults = chosen.defaults(loss, self.heads)
        v = {k: (defaults[k] if val is None else val) for k, val in given.items()}
        self.normalize = bool(check_flag("normalize", v["normalize"]))
        self.tau = v["tau"]
        self.normalize_classes = bool(check_flag("normalize_classes", v["normalize_classes"]))
        self.one_label = bool(check_flag("one_label", one_label))
        self.chunk_examples = chunk_examples
        self.hot_rows = hot_rows
        self.batch_size = v["batch_size"]
        self.feature_weighting = v["feature_weighting"]
        self.normalize_rows = bool(check_flag("normalize_rows", v["normalize_rows"]))
        self.ensemble = v["ensemble"]
        self.label_bias = bool(check_flag("label_bias", label_bias))
        self.head_params = checked_head_params(head_params)
        self.blend_validation = blend_validation
        self.blend_heads = ()
        self.blend_weights = None
        self._head_state = {}
        self.label_biases = None
        self.feature_weight_vector = None
        self._optimizer = None
        self.label_counts = None
        self.n_skipped = 0
        self.n_train = 0
        self._data = None
        super().__init__(vector_size=v["vector_size"], loss=loss, sampler=sampler, negative=negative,
                         alpha=v["alpha"], min_alpha=min_alpha, epochs=v["epochs"], workers=workers, seed=seed,
                         loss_params=loss_params, sampler_params=sampler_params, callbacks=callbacks,
                         checkpoint_dir=checkpoint_dir, checkpoint_every=checkpoint_every, progress=progress)

    @classmethod
    def _current_params(cls, params):
        """A legacy loss name replaced by the loss and the solver it means (a solver given too is kept)."""
        if "loss" not in params:
            return params
        solver, loss = _unalias(params.get("solver"), params["loss"])
        return dict(params, loss=loss, **({} if solver is None else {"solver": solver}))

    @property
    def _solver(self):
        """The :class:`~embkit.xc.solver.Solver` of ``solver``."""
        return SOLVERS[self.solver]

    def check_params(self):
        """Raise ValueError naming the first invalid parameter."""
        super().check_params()
        check_param("tau", self.tau, *POSITIVE_REAL)
        check_param("ensemble", self.ensemble, *POSITIVE_INT)
        if self.feature_weighting not in FEATURE_WEIGHTINGS:
            raise ValueError("feature_weighting must be one of %s, got %r"
                             % (", ".join(FEATURE_WEIGHTINGS), self.feature_weighting))
        check_param("blend_validation", self.blend_validation, lambda v: is_finite(v) and 0 < v < 1,
                    "a number in (0, 1)")
        if self.heads and not self._loss_class().CLASS_ROWS:
            raise ValueError("heads blend scores of labels with the model's, but the %s loss's output rows are "
                             "not labels: use heads=() or another loss" % self.loss)
        self._solver.check_params(self)

    def _check_objective(self):
        self._solver.check_objective(self)

    def _loss_class(self):
        return self._solver.loss_class(self.loss)

    def _build_loss(self, counts, n_classes):
        return self._solver.build_loss(self, counts, n_classes)

    def _objective(self, counts, n_classes):
        return self._solver.objective(self, counts, n_classes)

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
        called after every epoch (e.g. to evaluate); returning True stops training.  With ``heads``, the
        blend is chosen and its heads fitted after training (see ``heads``; ``on_epoch`` and the callbacks
        see the model's own training only).

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
        solver = self._solver
        if fresh:
            self.label_biases, self._optimizer = solver.fresh_state(self, len(rows))
        split = self._blend_split(X, Y, rows)
        trained = rows if split is None else split[0]

        def chunks(epoch):
            # the order of an epoch depends on the seed and the epoch only, so a resumed run sees the same
            order = np.random.default_rng([self.seed, epoch]).permutation(trained).astype(np.int32)
            for start in range(0, len(order), self.chunk_examples):
                yield _RowChunk(order[start:start + self.chunk_examples])

        self.blend_heads, self.blend_weights, self._head_state = (), None, {}
        fits = None
        if split is not None:
            if self.feature_weight_vector is None:      # the heads take tf-idf weighted rows all the same
                self._head_state[_HEAD_WEIGHTS] = feature_weights(X, "tfidf")
            fits = HeadFits(self._head_rows(X), Y, *split, self.head_params, self.workers)
        self._data = (X, Y)
        try:
            blas_limit = solver.blas_threads(self)
            with _blas_threads(blas_limit):
                if fits is not None and blas_limit == 1:
                    fits.start()        # beside the training: the heads' products keep one BLAS thread too
                watch = fits is not None and fits.running and self.epochs > 1
                try:
                    self._train(chunks, len(trained), self.label_counts, n_labels,
                                on_epoch=self._stop_unused(X, Y, fits, on_epoch) if watch else on_epoch,
                                desc="xc %s %s" % (self.solver, self.loss),
                                min_chunk_per_thread=solver.min_chunk_per_thread(self, len(trained)),
                                fingerprint=fingerprint(X.indptr, X.indices, X.data, Y.indptr, Y.indices))
                    if self.normalize_classes:
                        # every step projects the rows it moved, but threads that step on one row at once
                        # can leave it a little off the sphere: the trained vectors are put back on it
                        to_unit_sphere(self.W_out)
                finally:
                    self._data = None
                    self._optimizer = None
                if fits is not None:
                    with _blas_threads(1):
                        self._fit_blend(X, Y, fits)
        except BaseException:
            if fits is not None:
                fits.cancel()
            raise
        if not self.blend_heads:
            self._head_state = {}
        return self

    def _head_rows(self, X):
        """The rows the heads fit and score, tf-idf weighted and of unit norm, from rows weighted as the
        model's (``X``): the weights the model's rows lack (:data:`_HEAD_WEIGHTS` of the heads' state), then
        every row scaled to unit norm (a row's scale before does not matter)."""
        extra = self._head_state.get(_HEAD_WEIGHTS)
        return X if extra is None and self.normalize_rows else weight_rows(X, extra, True)

    def _blend_split(self, X, Y, rows):
        """``(fitted, held out, heads)``: the training rows ``rows`` split at random for the blend (a fraction
        ``blend_validation`` held out) and the :attr:`heads` that can be fitted on ``X`` (weighted) and
        ``Y``; None without a blend (no usable head, or too few rows on a side)."""
        usable = []
        for name in self.heads:
            why = HEADS[name].unusable(X.shape[1], Y.shape[1], self.head_params)
            if why is None:
                usable.append(name)
            else:
                logger.info("head %s left out: %s", name, why)
        n_valid = min(int(round(self.blend_validation * len(rows))), _MAX_BLEND_ROWS)
        if not usable or n_valid < _MIN_BLEND_ROWS or len(rows) - n_valid < _MIN_BLEND_ROWS:
            if usable:
                logger.info("no blend: %d training rows are too few to hold %s of them out", len(rows),
                            self.blend_validation)
            return None
        order = np.random.default_rng([self.seed, _BLEND_STREAM]).permutation(rows)
        return np.sort(order[n_valid:]), np.sort(order[:n_valid]), tuple(usable)

    def _choose_blend(self, X, Y, fits):
        """``(weights, value)`` of the blend of the model's scores and of the heads of ``fits`` (a
        :class:`HeadFits`) that ranks its held-out rows best (the model, trained on the other rows, and the
        heads fitted on those score them).  ``X``: the rows weighted as the model's."""
        model_rows = X[fits.held_out]
        # every scorer scores the held-out rows a block at a time (dense over the labels only in a block)
        scores = [lambda rows: self._own_scores(self.embed_weighted(model_rows[rows]))]
        scores += [fits.held_out_scorer(name) for name in fits.usable]
        return choose_weights(scores, Y[fits.held_out], workers=self.workers)

    def _stop_unused(self, X, Y, fits, on_epoch):
        """An ``on_epoch`` hook: ``on_epoch``'s answer, and after the first epoch a stop when the held-out blend
        gives the model weight 0 (its later epochs would be spent only to be left out again; where the blend
        uses it, every epoch runs)."""
        def hook(epoch, report):
            stop = bool(on_epoch(epoch, report)) if on_epoch is not None else False
            if epoch == 0 and not stop and self._choose_blend(X, Y, fits)[0][0] == 0:
                logger.info("the held-out blend gives the model weight 0 after its first epoch: training stops")
                return True
            return stop
        return hook

    def _fit_blend(self, X, Y, fits):
        """Choose the blend's weights (:meth:`_choose_blend`), then keep the heads of nonzero weight fitted on
        every row."""
        weights, value = self._choose_blend(X, Y, fits)
        logger.info("blend weights (model, %s) %s: mean P@1/3/5 %.4f on %d held-out rows",
                    ", ".join(fits.usable), weights, value, len(fits.held_out))
        kept = [name for name, w in zip(fits.usable, weights[1:]) if w > 0]
        self.blend_weights = (float(weights[0]),) + tuple(float(w) for w in weights[1:] if w > 0)
        self.blend_heads = tuple(kept)
        for name in kept:
            self._head_state.update(fits.whole_state(name))

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
        return self._solver.trainer(self, X, Y, loss, sampler, alpha, min_alpha, total)

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
        if not self._loss_class().CLASS_ROWS:
            raise NotImplementedError("prediction with the %s loss is not supported: its output rows are not "
                                      "labels; train with another loss to predict" % self.loss)

    def _weighted(self, X, unknown_features="error"):
        """The rows of ``X`` (any form of :func:`~embkit.xc.prediction_input.feature_rows`) as the model's
        width, weighted and normalised as the training rows were."""
        X = feature_rows(X, self.feature_vectors.shape[0], unknown_features)
        return weight_rows(X, self.feature_weight_vector, self.normalize_rows)

    def embed(self, X, unknown_features="error"):
        """Hidden vectors of the rows of ``X`` (as scored: normalised and divided by ``tau`` if set).

        ``X``: a sparse or dense matrix, or a list of rows each a dict ``{feature id: value}`` or a list of
        ``(feature id, value)`` pairs.  Fewer columns than the model's features are zero features; a feature
        id beyond them is a ValueError naming the row and the id, unless ``unknown_features="ignore"``
        (dropped with a warning).
        """
        self._check_fitted()
        return self.embed_weighted(self._weighted(X, unknown_features))

    def embed_weighted(self, X):
        """Hidden vectors of rows already weighted as the model's (:meth:`embed` without the checks)."""
        H = np.asarray(X @ self.feature_vectors, dtype=np.float32)
        if self.normalize and self.ensemble > 1:
            return np.ascontiguousarray(H / np.float32(self.tau))    # members normalise their own columns
        if self.normalize:
            norms = np.linalg.norm(H, axis=1, keepdims=True)
            np.divide(H, norms, out=H, where=norms > 0)
        if self.tau != 1.0:
            H /= self.tau
        return np.ascontiguousarray(H)

    def _own_scores(self, H):
        return np.ascontiguousarray(self._solver.scores(self, H), dtype=np.float32)

    def predict(self, X, k=5, workers=None, unknown_features="error"):
        """The ``k`` best labels of every row of ``X`` and their scores, best first.

        ``X`` as for :meth:`embed`.  ``k`` larger than the number of labels is clipped to it (the arrays
        have that many columns).  With :attr:`blend_heads`, a row's scores are the weighted sum of the
        model's and the heads' (:attr:`blend_weights`); a row that only sparse heads score may have fewer
        than ``k`` labels, padded with id -1 and score 0.  Scores are computed in blocks of rows (one BLAS
        product per block) and each block's top-k is selected by a multi-threaded C scan; blocks run on
        ``workers`` threads.

        Returns
        -------
        (ids int64 (n, k), scores float32 (n, k))
        """
        check_param("k", k, *POSITIVE_INT)
        self._check_fitted()
        Xw = self._weighted(X, unknown_features)
        n_labels = self.label_vectors.shape[0]
        k = min(k, n_labels)
        workers = self.workers if workers is None else workers
        block = max(1, min(-(-Xw.shape[0] // max(workers, 1)), _SCORE_BLOCK_CELLS // max(n_labels, 1)))
        ids = np.empty((Xw.shape[0], k), dtype=np.int64)
        vals = np.empty((Xw.shape[0], k), dtype=np.float32)

        def run(start):
            rows = Xw[start:start + block]
            ids[start:start + block], vals[start:start + block] = top_k(self.block_scores(rows), k, 1)

        starts = range(0, Xw.shape[0], block)
        if workers > 1 and len(starts) > 1:
            with _blas_threads(1), ThreadPoolExecutor(workers) as pool:
                list(pool.map(run, starts))
        else:
            for s in starts:
                run(s)
        vals[ids < 0] = 0.0
        return ids, vals

    def block_scores(self, rows):
        """Scores of weighted rows (as :meth:`_weighted` gives them) against every label: the model's, or
        their blend with the heads' (dense, or csr when only sparse heads weigh)."""
        if not self.blend_heads:
            return self._own_scores(self.embed_weighted(rows))
        own = self.blend_weights[0]
        parts = [self._own_scores(self.embed_weighted(rows)) if own > 0 else None]
        head_rows = self._head_rows(rows)
        parts += [HEADS[name].scores(self._head_state, head_rows, self.head_params, 1) for name in self.blend_heads]
        return blend(parts, self.blend_weights)

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
        return {"n_train": self.n_train, "blend_heads": list(self.blend_heads),
                "blend_weights": None if self.blend_weights is None else list(self.blend_weights)}

    def _arrays(self):
        arrays = {"label_counts": self.label_counts}
        for name in ("label_biases", "feature_weight_vector"):
            if getattr(self, name) is not None:
                arrays[name] = getattr(self, name)
        arrays.update({"head_" + key: value for key, value in self._head_state.items()})
        arrays.update(self._optimizer or {})        # only while training: a checkpoint's optimizer state
        return arrays

    def _restore(self, state, words, arrays):
        self.label_counts = arrays["label_counts"]
        self.n_train = int(state.get("n_train", 0))
        self.label_biases = None if arrays.get("label_biases") is None else np.array(arrays["label_biases"])
        self.feature_weight_vector = arrays.get("feature_weight_vector")
        self._optimizer = self._solver.optimizer_state(arrays)
        heads, weights = state.get("blend_heads") or [], state.get("blend_weights")
        _head_names(heads)
        if heads and (weights is None or len(weights) != len(heads) + 1):
            raise ValueError("blend_weights must give one weight for the model and one per head of blend_heads %r, "
                             "got %r" % (heads, weights))
        self._head_state = {key[len("head_"):]: value for key, value in arrays.items() if key.startswith("head_")}
        self.blend_heads = tuple(heads)
        self.blend_weights = None if weights is None or not heads else tuple(float(w) for w in weights)

    def _repr_fields(self):
        shape = (0, 0) if self.W_in is None else (len(self.W_in), len(self.W_out))
        return ["solver=%s" % self.solver, "features=%d" % shape[0], "labels=%d" % shape[1]]
