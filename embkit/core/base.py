"""The trainer base of every embkit model: one input table, one output table, one loss and sampler, a driver.

Everything embkit trains scores a target ``j`` for an input ``i`` by ``<h_i, W_out[j]>``, with ``h_i`` built
from rows of ``W_in`` by a driver (``windows``, ``pairs`` or ``rows``, in ``embkit/_kernels``).
:class:`EmbeddingModel` owns what the models share: the common parameters and their checks, table
initialisation, the loss and sampler built from the registry, the epoch loop with its progress bar and
callbacks, save/load of parameters and tables, and ``repr``.  A model is its driver plus a small subclass
that says how examples are made:

* class attributes ``default_sampler`` (the sampler of a sampled loss when none is given), ``chunk_param``
  (the constructor parameter bounding the units per kernel call) and ``unit`` (the progress unit);
* ``_kernel_trainer(loss, sampler, alpha, min_alpha, total)``: the driver's trainer object for a run;
* the persistence hooks ``_state``, ``_words``, ``_arrays``, ``_restore`` and ``_repr_fields``.

Subclasses register themselves as model kinds (:func:`embkit.core.persist.register_model`), so
:meth:`EmbeddingModel.load` (and ``embkit.core.persist.load``) open any model file by the kind it stores.
"""
import inspect
import logging
import os
import types

import numpy as np

from embkit.core import checkpoint, persist, registry
from embkit.core.checks import (MAX_NEGATIVE, MAX_VECTOR_SIZE, MAX_WORKERS, POSITIVE_INT, POSITIVE_REAL, SEED,
                                check_fields, check_flag, check_mapping, check_param, int_in, is_finite,
                                unknown_names)
from embkit.core.draws import uniform_rows
from embkit.core.training import CALLBACK_EVENTS, run_epochs

logger = logging.getLogger(__name__)

__all__ = ["EmbeddingModel", "class_only"]


class class_only:
    """A classmethod that refuses to run on an instance: ``model.load(path)`` would return a new model and
    leave ``model`` as it was, a silent mistake (gensim refuses it the same way, with AttributeError)."""

    def __init__(self, func):
        self.func = func
        self.__doc__ = func.__doc__

    def __get__(self, instance, owner):
        if instance is not None:
            raise AttributeError("%s.%s is called on the class, not on an instance: model = %s.%s(...) returns the "
                                 "model" % (owner.__name__, self.func.__name__, owner.__name__, self.func.__name__))
        return types.MethodType(self.func, owner)


class EmbeddingModel:
    """Base of embkit's models.

    Parameters
    ----------
    vector_size : int
        Dimension of the rows of both tables.
    loss : str
        Loss name (:data:`embkit.core.registry.LOSSES`).
    sampler : str or None
        Sampler name (:data:`embkit.core.registry.SAMPLERS`) of a loss that draws negatives; None takes the
        model's ``default_sampler``.  Losses that draw none (``full_softmax``, ``hs``) take no sampler.
    negative : int
        Negatives per example.
    alpha, min_alpha : float
        Learning rate at the start and at the end of a run; it decays linearly with the units trained.
        ``min_alpha=None`` is ``alpha / 1000``.
    epochs, workers, seed : int
        Passes, training threads, and the seed of the tables and of the kernels' generators (with
        ``workers=1`` a run is reproducible bit for bit).
    loss_params, sampler_params : dict or None
        Extra parameters of the loss and the sampler.
    callbacks : sequence
        Objects with any of gensim's ``CallbackAny2Vec`` methods, called with the model (see
        :func:`embkit.core.training.run_epochs`); not saved with the model.
    checkpoint_dir : str or None
        Write checkpoints of every training run here (see :mod:`embkit.core.checkpoint`): every
        ``checkpoint_every``, when Ctrl-C stops a run, and when it ends; :meth:`resume` continues from the
        newest.  Not saved with the model.
    checkpoint_every : number or str
        Seconds between checkpoints (``600``, ``"10 min"``) or a count of the driver's units (``"5M words"``,
        ``"200k pairs"``, ``"50000 examples"``).
    progress : bool
        Show a progress bar; not saved with the model.

    Attributes
    ----------
    W_in, W_out : numpy.ndarray of float32, or None before training
        The input and output tables.
    last_report : TrainingReport or None
        What the latest training call did.
    loss_history : list of float
        Mean training loss per epoch, over every training call.
    """

    #: sampler of a sampled loss when ``sampler`` is None
    default_sampler = "unigram"
    #: the constructor parameter that bounds the units of one kernel call
    chunk_param = None
    #: what one of the driver's units is (the report's and the progress bar's unit)
    unit = "example"
    #: constructor parameters that are not saved with a model
    RUNTIME_PARAMS = frozenset({"progress", "callbacks", "checkpoint_dir", "checkpoint_every"})
    #: parameters a resumed run may change (they do not change what is computed, only how fast or where)
    RESUMABLE_CHANGES = frozenset({"workers"})
    #: attributes holding what a process has open (files, a cluster client, caches): a pickled or copied model
    #: leaves them out, and makes or opens them again when it needs them
    TRANSIENT = frozenset({"last_checkpointer", "last_cluster_stats"})
    #: the model reads an output table that stacks two (the ``hs_sgns`` loss: word vectors, then tree nodes)
    STACKED_OUTPUTS = False
    #: the attribute that, with the parameters and the tables, makes a cluster replica (``counts``, ``vocab``)
    CLUSTER_STATE = None
    #: row ``i`` of ``W_in`` is class ``i`` (a word, an item), whose count ``_cluster_classes`` gives: a cluster
    #: run reconciles the rows of the most frequent more often (:func:`embkit.cluster.settings.hot_rows`)
    CLASS_INPUTS = False
    #: :meth:`_words` names the input rows (one word or item per row of ``W_in``)
    NAMED_ROWS = False
    #: the fields of what :meth:`_state` saves, checked when a file is loaded: ``{field: (rule, required)}``
    #: (:func:`embkit.core.checks.check_fields`)
    STATE_FIELDS = {}
    #: the arguments of a training call that its checkpoints keep for ``resume``: ``{field: (rule, required)}``
    #: (a checkpoint with any other is refused, naming the file)
    RUN_ARG_FIELDS = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        persist.register_model(cls)

    def __new__(cls, *args, **kwargs):
        # before __init__, so that a misspelt keyword gets the nearest valid name, not Python's bare TypeError
        accepted = inspect.signature(cls.__init__).parameters
        if not any(p.kind == p.VAR_KEYWORD for p in accepted.values()):
            unknown = [name for name in kwargs if name not in accepted or name == "self"]
            if unknown:
                raise TypeError("%s() got unexpected keyword arguments: %s"
                                % (cls.__name__, unknown_names(unknown, [n for n in accepted if n != "self"])))
        return super().__new__(cls)

    def __init__(self, *, vector_size, loss, sampler, negative, alpha, min_alpha, epochs, workers, seed,
                 loss_params=None, sampler_params=None, callbacks=(), checkpoint_dir=None, checkpoint_every=600,
                 progress=True):
        self.vector_size = vector_size
        self.loss = loss
        self.sampler = sampler
        self.negative = negative
        self.alpha = alpha
        if min_alpha is None and isinstance(alpha, (int, float)) and not isinstance(alpha, bool) and is_finite(alpha):
            min_alpha = alpha / 1000.0
        self.min_alpha = min_alpha
        self.epochs = epochs
        self.workers = workers
        self.seed = seed
        self.loss_params = check_mapping("loss_params", loss_params)
        self.sampler_params = check_mapping("sampler_params", sampler_params)
        if callbacks is not None and not hasattr(callbacks, "__iter__"):
            raise ValueError("callbacks must be a sequence of callback objects, got %r" % (callbacks,))
        self.callbacks = tuple(callbacks or ())
        if checkpoint_dir is not None and not isinstance(checkpoint_dir, (str, bytes, os.PathLike)):
            raise ValueError("checkpoint_dir must be a path or None, got %r" % (checkpoint_dir,))
        self.checkpoint_dir = None if checkpoint_dir is None else os.fspath(checkpoint_dir)
        self.checkpoint_every = checkpoint_every
        self.progress = progress
        self.W_in = self.W_out = None
        self.last_report = None
        self.loss_history = []
        self._resuming = None      # the checkpoint section a resumed run starts from
        self.last_checkpointer = None
        self.check_params()
        self._check_extra_params()

    # ------------------------------------------------------------------ parameters
    @classmethod
    def _param_names(cls):
        """Constructor parameters saved with a model, in signature order."""
        names = []
        for name, p in inspect.signature(cls.__init__).parameters.items():
            if name == "self" or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) or name in cls.RUNTIME_PARAMS:
                continue
            names.append(name)
        return tuple(names)

    @classmethod
    def _current_params(cls, params):
        """Constructor parameters (some or all) with the values an earlier version wrote replaced by today's
        (subclasses that renamed a value); the same ``params`` here."""
        return params

    def get_params(self):
        """The constructor parameters of this model (those saved with it), as a dict."""
        return {name: getattr(self, name) for name in self._param_names()}

    @property
    def sampler_name(self):
        """The sampler a run uses: ``sampler``, the model's default for a sampled loss, or None."""
        if not self._loss_class().USES_NEGATIVES:
            return self.sampler
        return self.sampler or self.default_sampler

    def check_params(self):
        """Raise ValueError naming the first invalid parameter (subclasses extend it)."""
        check_param("vector_size", self.vector_size, *int_in(1, MAX_VECTOR_SIZE))
        check_param("workers", self.workers, *int_in(1, MAX_WORKERS))
        for name in ("epochs",) + ((self.chunk_param,) if self.chunk_param else ()):
            check_param(name, getattr(self, name), *POSITIVE_INT)
        check_param("negative", self.negative, *int_in(0, MAX_NEGATIVE))
        check_param("seed", self.seed, *SEED)
        check_param("alpha", self.alpha, *POSITIVE_REAL)
        check_param("min_alpha", self.min_alpha, lambda v: is_finite(v) and 0 <= v <= self.alpha,
                    "a number in [0, alpha]")
        check_flag("progress", self.progress)
        if not isinstance(self.loss, str):
            raise ValueError("loss must be the name of a loss, got %r" % (self.loss,))
        if self.sampler is not None and not isinstance(self.sampler, str):
            raise ValueError("sampler must be the name of a sampler or None, got %r" % (self.sampler,))
        for cb in self.callbacks:
            if not any(callable(getattr(cb, event, None)) for event in CALLBACK_EVENTS):
                raise ValueError("callbacks must have at least one of the methods %s, got %r"
                                 % (", ".join(CALLBACK_EVENTS), cb))
        self._check_objective()
        if self._loss_class().STACKED and not self.STACKED_OUTPUTS:
            raise ValueError("the %s loss stacks two output tables, which %s cannot use: use sgns or hs"
                             % (self.loss, type(self).__name__))
        checkpoint.parse_every(self.checkpoint_every)

    def _check_extra_params(self):
        """ValueError naming ``loss_params`` / ``sampler_params`` that the loss or the sampler refuses (they are
        built once on two classes, so a typo fails here rather than when training starts)."""
        counts = np.ones(2, dtype=np.int64)
        try:
            self._build_loss(counts, 2)
        except (TypeError, ValueError) as exc:
            raise ValueError("loss_params %r do not fit the %s loss: %s" % (self.loss_params, self.loss, exc)) \
                from None
        if self.sampler_name is not None:
            try:
                registry.make_sampler(self.sampler_name, counts, 2, **self._sampler_params())
            except (TypeError, ValueError) as exc:
                raise ValueError("sampler_params %r do not fit the %s sampler: %s"
                                 % (self.sampler_params, self.sampler_name, exc)) from None

    def _check_objective(self):
        """ValueError unless the registry accepts the loss with the sampler (a model with losses of its own
        overrides it with :meth:`sampler_name`, :meth:`_build_loss` and :meth:`_objective`)."""
        registry.check_pairing(self.loss, self.sampler_name, self.negative)

    def _loss_class(self):
        """The kernel class of the model's loss: its capability constants say what the output table holds
        (:class:`~embkit._kernels.losses.Loss`)."""
        return registry.loss_class(self.loss)

    def _sampler_params(self):
        """Sampler parameters of a run (subclasses add model-level defaults)."""
        return dict(self.sampler_params)

    # ------------------------------------------------------------------ tables and objective
    def _check_fitted(self):
        if self.W_in is None:
            raise RuntimeError("the %s is not trained yet" % type(self).__name__)

    def _init_tables(self, n_inputs, n_classes, counts=None):
        """Fresh tables: input rows uniform in ``[-0.5, 0.5) / vector_size`` (word2vec's), output rows from
        :meth:`_init_output` (zeros) with as many rows as the loss trains for ``n_classes`` classes.

        A resumed run keeps the tables of its checkpoint instead."""
        if self._resuming is not None:
            if self.W_in.shape[0] != n_inputs:
                raise checkpoint.CheckpointError("the data has %d inputs, the checkpoint's tables %d"
                                                 % (n_inputs, self.W_in.shape[0]))
            return
        rows = self._build_loss(counts, n_classes).output_rows(n_classes)
        self.W_in, self.W_out = self.initial_tables(n_inputs, rows)

    def initial_tables(self, n_inputs, output_rows):
        """``(W_in, W_out)`` as a fresh model of these parameters (its ``seed``) draws them, with ``n_inputs``
        input rows and ``output_rows`` output rows (a cluster's replicas draw their first tables so instead
        of receiving them)."""
        rng = np.random.default_rng(self.seed)
        W_in = self._input_rows(n_inputs, rng)
        return W_in, self._init_output(rng, output_rows)

    def _input_rows(self, n, rng):
        """``n`` fresh input rows drawn from ``rng``: uniform in ``[-0.5, 0.5) / vector_size`` (word2vec's)."""
        rows = uniform_rows(rng, n, self.vector_size, self.workers)
        rows -= 0.5
        rows /= self.vector_size
        return rows

    def _init_output(self, rng, rows):
        """The initial output table (``rows x vector_size``); zeros, as word2vec."""
        return np.zeros((rows, self.vector_size), dtype=np.float32)

    def _set_tables(self, W_in, W_out):
        """Take ``W_in`` and ``W_out`` as the model's tables."""
        self.W_in, self.W_out = W_in, W_out

    def _build_loss(self, counts, n_classes):
        return registry.make_loss(self.loss, counts=counts, n_classes=n_classes, **self.loss_params)

    def _objective(self, counts, n_classes):
        """``(loss, sampler)`` built from the registry, checked, the sampler bound to ``W_out``."""
        return registry.build_objective(self.loss, self.sampler_name, counts, n_classes, self.negative,
                                        self.loss_params, self._sampler_params(), self.W_out)

    # ------------------------------------------------------------------ training
    def _kernel_trainer(self, loss, sampler, alpha, min_alpha, total):
        """The driver's trainer for a run over ``total`` units (subclasses)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ replicas (training elsewhere)
    def replica_spec(self):
        """What a copy of this model in another process is built from (:meth:`from_replica_spec`): its class,
        parameters and ``CLUSTER_STATE`` (the vocabulary, the class counts)."""
        return type(self), self.get_params(), getattr(self, self.CLUSTER_STATE)

    @staticmethod
    def from_replica_spec(spec, W_in, W_out):
        """The model of :meth:`replica_spec`'s ``spec``, holding the tables ``W_in`` and ``W_out``."""
        cls, params, state = spec
        model = cls(**params, progress=False)
        setattr(model, cls.CLUSTER_STATE, state)
        model._set_tables(W_in, W_out)
        return model

    def replica_trainer(self, alpha, min_alpha, total):
        """``(loss, sampler, trainer)`` of a run over ``total`` units on the model's tables, built as this
        process's own training builds them (the registry's loss and sampler, the driver's kernel trainer)."""
        loss, sampler = self._objective(*self._cluster_classes())
        return loss, sampler, self._kernel_trainer(loss, sampler, alpha, min_alpha, total)

    def _cluster_classes(self):
        """``(counts, n_classes)`` the loss and sampler are built from (subclasses)."""
        raise NotImplementedError

    def class_rows(self):
        """``(counts, input_classes, output_classes)``: the classes' counts, and whether row ``i`` of ``W_in``
        (:attr:`CLASS_INPUTS`) and of ``W_out`` (the loss's ``CLASS_ROWS``) is class ``i``: where a cluster run
        finds its frequent rows (:func:`embkit.cluster.settings.hot_rows`)."""
        counts, n_classes = self._cluster_classes()
        return np.asarray(counts)[:n_classes], self.CLASS_INPUTS, bool(self._loss_class().CLASS_ROWS)

    def _train_on_cluster(self, run):
        """Train the ``run`` (:meth:`_fit`) on the model's cluster (the cluster mixin's)."""
        raise TypeError("%s does not train on a cluster" % type(self).__name__)

    def _local_or_cluster(self, local, cluster):
        """The one place where a model's work forks on where it runs: ``local()`` in this process, or
        ``cluster()`` when the model has a cluster ``client``."""
        return local() if getattr(self, "client", None) is None else cluster()

    def _fit(self, local, run):
        """Training: ``local()`` in this process, or the run that ``run()`` describes on the model's cluster
        (:meth:`_train_on_cluster`); returns the :class:`TrainingReport`."""
        return self._local_or_cluster(local, lambda: self._train_on_cluster(run()))

    def _train(self, chunks, units_per_epoch, counts, n_classes, epochs=None, alpha=None, min_alpha=None,
               on_epoch=None, desc=None, progress=None, run_args=None, fingerprint=None, min_chunk_per_thread=None):
        """Run the epoch loop on the driver: the shared body of every model's ``fit`` / ``train``.

        Parameters
        ----------
        chunks : callable
            ``chunks(epoch)`` -> iterable of chunks (``kernel_args``, ``raw_units``) for the driver, the same
            ones each time it is called for an epoch.
        units_per_epoch : int
            Units (words, pairs, examples) of one epoch: the learning-rate schedule's unit.
        counts, n_classes :
            Class popularity and number of classes, for the loss and the sampler.
        epochs, alpha, min_alpha : optional
            Override the model's settings for this run.
        on_epoch : callable, optional
            ``on_epoch(epoch, report)`` after each epoch; returning True stops.  With ``get_state`` /
            ``set_state`` methods its state goes into checkpoints.
        run_args : dict, optional
            The JSON-able arguments of the ``fit``/``train`` call, kept in checkpoints so that
            :meth:`resume` can repeat the call.
        fingerprint : str, optional
            A digest of the training data; a resumed run refuses data with another one.
        min_chunk_per_thread : int, optional
            Fewest units a thread trains of one chunk: smaller chunks run on fewer threads.

        Returns
        -------
        TrainingReport
        """
        epochs, alpha, min_alpha = self._run_settings(epochs, alpha, min_alpha)
        run = checkpoint.run_record(epochs, alpha, min_alpha, units_per_epoch, run_args, fingerprint)
        loss, sampler = self._objective(counts, n_classes)
        states = {"sampler": sampler, "tracker": on_epoch}
        history_before, start, report, checkpointer = checkpoint.begin_run(self, run, states)
        if start is not None and start.finished:
            return report
        trainer = self._kernel_trainer(loss, sampler, alpha, min_alpha, float(units_per_epoch) * epochs)
        with checkpoint.interruption_hint(self):
            try:
                run_epochs(trainer, chunks, units_per_epoch, epochs, self.workers, alpha,
                           progress=self.progress if progress is None else progress,
                           desc=desc or "%s %s" % (type(self).__name__, self.loss), unit=self.unit,
                           on_epoch=on_epoch, callbacks=self.callbacks, model=self, report=report, start=start,
                           checkpointer=checkpointer, min_chunk_per_thread=min_chunk_per_thread)
            finally:
                self.loss_history = history_before + report.epoch_loss
        return report

    def _run_settings(self, epochs=None, alpha=None, min_alpha=None):
        """``(epochs, alpha, min_alpha)`` of a training run: those given, else the model's; ValueError naming
        a bad one."""
        epochs = self.epochs if epochs is None else epochs
        alpha = self.alpha if alpha is None else alpha
        min_alpha = self.min_alpha if min_alpha is None else min_alpha
        check_param("epochs", epochs, *POSITIVE_INT)
        check_param("start_alpha", alpha, *POSITIVE_REAL)
        check_param("end_alpha", min_alpha, lambda v: 0 <= v <= alpha, "a number in [0, start_alpha]")
        return epochs, alpha, min_alpha

    def get_latest_training_loss(self):
        """Mean loss per example of the latest epoch trained (float64), or 0.0 before any training.

        During training (from a callback) it is the epoch that just ended; it never accumulates across
        epochs or calls, unlike gensim's running total.  An epoch that trained no example (a tiny corpus
        after subsampling) has no loss: the latest epoch that had one counts.
        """
        report = self.last_report
        if report is not None:
            for loss, examples in zip(reversed(report.epoch_loss), reversed(report.epoch_examples)):
                if examples:
                    return float(loss)
        return float(self.loss_history[-1]) if self.loss_history else 0.0

    # ------------------------------------------------------------------ persistence
    def _state(self):
        """JSON-able model state saved beside the parameters (subclasses)."""
        return {}

    def _words(self):
        """The names of the input rows saved in the archive (subclasses)."""
        return []

    def _arrays(self):
        """Arrays saved beside ``W_in`` and ``W_out`` (subclasses)."""
        return {}

    def _restore(self, state, words, arrays):
        """Set what :meth:`_state`, :meth:`_words` and :meth:`_arrays` saved (subclasses)."""

    def save(self, path, overwrite=True, **gensim_kwargs):
        """Save parameters, tables and state atomically to ``path`` (an interrupted save keeps the old file).

        gensim's layout options (``separately``, ``sep_limit``, ``ignore``, ``pickle_protocol``) are accepted
        and change nothing: an embkit model is always one archive file.
        """
        unknown = set(gensim_kwargs) - {"separately", "sep_limit", "ignore", "pickle_protocol"}
        if unknown:
            raise TypeError("save() got unexpected keyword arguments: %s" % ", ".join(sorted(unknown)))
        if self.W_in is None:
            raise RuntimeError("nothing to save: the %s is not trained yet" % type(self).__name__)
        arrays = dict(self._arrays(), W_in=self.W_in, W_out=self.W_out)
        persist.save_archive(path, {"model": type(self).__name__, "params": self.get_params(),
                                    "state": self._state()}, self._words(), arrays, overwrite=overwrite)

    @class_only
    def load(cls, path, mmap=None):
        """Load a model written by :meth:`save`; ``EmbeddingModel.load`` opens any kind of model file.

        A checkpoint file loads as the model it holds, as of the moment it was written.  ``mmap`` is
        accepted for gensim's signature; the tables are read into memory (they are checked as they are
        read, and training writes to them).
        """
        config, words, arrays = persist.load_archive(path)
        return cls._from_archive(config, words, arrays, path)

    @classmethod
    def _from_archive(cls, config, words, arrays, path):
        """The model an archive holds: parameters, tables and state (checkpoint arrays left aside)."""
        arrays = {k: v for k, v in arrays.items() if not k.startswith(("sampler.", "tracker."))}
        kind = persist.model_class(config.get("model"), path)
        if not issubclass(kind, cls):
            raise ValueError("%r holds a %s model, not %s: %s.load reads it"
                             % (str(path), kind.__name__, cls.__name__, kind.__name__))
        params = config.get("params") or {}
        names = set(kind._param_names())
        try:
            model = kind(**{k: v for k, v in params.items() if k in names}, progress=False)
        except (TypeError, ValueError) as exc:
            raise ValueError("%r holds bad %s parameters: %s" % (str(path), kind.__name__, exc)) from None
        missing = [name for name in ("W_in", "W_out") if name not in arrays]
        if missing:
            raise ValueError("%r is not a complete %s file: no %s table" % (str(path), kind.__name__, missing[0]))
        model.W_in, model.W_out = arrays.pop("W_in"), arrays.pop("W_out")
        _check_loaded_tables(path, model, arrays.get("counts", arrays.get("label_counts")))
        state = config.get("state") or {}
        check_fields(path, "state", state, kind.STATE_FIELDS)
        try:
            model._restore(state, words, arrays)
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError("%r is not a complete %s file: %s: %s"
                             % (str(path), kind.__name__, type(exc).__name__, exc)) from None
        return model

    @classmethod
    def _open_checkpoint(cls, directory, params, callbacks=(), progress=None):
        """The model of the newest readable checkpoint in ``directory``, set to resume its run, and the run's
        record (:func:`embkit.core.checkpoint.open_run`)."""
        return checkpoint.open_run(cls, directory, params, callbacks, progress)

    # ------------------------------------------------------------------ pickling
    def __getstate__(self):
        """The model without its :attr:`TRANSIENT` attributes (``pickle``, ``copy.deepcopy``, joblib)."""
        return {key: (None if key in self.TRANSIENT else value) for key, value in self.__dict__.items()}

    # ------------------------------------------------------------------ display
    def _repr_fields(self):
        """Model-specific ``key=value`` fields shown first in ``repr`` (subclasses)."""
        return []

    def __repr__(self):
        fields = list(self._repr_fields()) + ["vector_size=%d" % self.vector_size, "loss=%s" % self.loss,
                                              "sampler=%s" % (self.sampler_name or "-")]
        return "%s<%s>" % (type(self).__name__, ", ".join(fields))


def _check_loaded_tables(path, model, counts):
    """ValueError naming ``path`` unless the tables are ``vector_size`` wide, ``W_out`` has the rows the
    model's loss trains for its classes (``len(counts)``) and a sampler drawn from the counts can be built."""
    if model.W_in.shape[1] != model.vector_size:
        raise ValueError("%r: vector_size is %d but the tables have %d columns"
                         % (str(path), model.vector_size, model.W_in.shape[1]))
    if counts is None:
        return
    try:
        loss = model._build_loss(counts, len(counts))
        sampler = model.sampler_name
        if sampler is not None and registry.SAMPLERS[sampler].kernel.QUERY_FREE:
            # a table of the counts, cheap to build: the counts and the sampler's parameters can train
            registry.make_sampler(sampler, counts, len(counts), **model._sampler_params())
    except (TypeError, ValueError) as exc:
        raise ValueError("%r holds a %s that cannot train: %s" % (str(path), type(model).__name__, exc)) from None
    caps = model._loss_class()
    if caps.TREE_ROWS and not caps.STACKED and model.W_out.shape[0] == loss.output_rows(len(counts)) - 1:
        # files written before the hs table had a (never used) row per class, as word2vec's
        model.W_out = np.vstack([model.W_out, np.zeros((1, model.W_out.shape[1]), np.float32)])
    try:
        loss.classes_for_table(model.W_out.shape[0], len(counts), model.loss)
    except ValueError as exc:
        raise ValueError("%r: %s" % (str(path), exc)) from None
