"""The epoch loop shared by all trainers: chunks in, kernel calls, progress bar, divergence checks, callbacks,
checkpoints between chunks, and a clean stop on Ctrl-C.

Chunks go to the trainer's pipeline (:mod:`embkit._kernels.drive`): up to :data:`CHUNKS_IN_FLIGHT` at
once, so the worker threads go from one chunk to the next without waiting for the slowest slice, while the
loop reads the following chunk and reports the finished one.  The results come back in chunk order, and a
checkpoint or a Ctrl-C stop first lets the chunks in flight finish, so a checkpoint always holds the tables
of whole chunks.
"""
import dataclasses
import logging
import math
import time
from collections import deque
from dataclasses import dataclass, field

from embkit.core.interrupts import TrainingInterrupted, stop_on_sigint

logger = logging.getLogger(__name__)

#: gensim's ``CallbackAny2Vec`` methods, in the order a run calls them
CALLBACK_EVENTS = ("on_train_begin", "on_epoch_begin", "on_batch_begin", "on_batch_end", "on_epoch_end",
                   "on_train_end")
#: chunks a run keeps on its pipeline at once (1 where chunks may not overlap)
CHUNKS_IN_FLIGHT = 3


@dataclass
class TrainingReport:
    """What one call to ``train`` did, counted in the model's units (``unit``: a word of Word2Vec's corpus, a
    pair of ItemEmbedding's, an example of ExtremeClassifier's).

    ``words``, ``raw_words`` and ``effective_words`` are the same counts under gensim's names (Word2Vec's
    units are words).
    """

    epochs: int = 0
    units: int = 0          # units trained on (Word2Vec: in-vocabulary tokens, before subsampling)
    raw_units: int = 0      # units read (Word2Vec: corpus tokens, out-of-vocabulary ones included)
    trained_units: int = 0  # of the units, those left by subsampling (gensim's effective words)
    examples: int = 0       # (input, target) training examples
    seconds: float = 0.0
    epoch_loss: list = field(default_factory=list)   # mean loss per example, per epoch (0.0 with no example)
    epoch_examples: list = field(default_factory=list)  # examples trained, per epoch
    epoch_seconds: list = field(default_factory=list)  # training time of each epoch (callbacks excluded)
    unit: str = "unit"

    @property
    def units_per_second(self):
        return self.units / self.seconds if self.seconds > 0 else float("nan")

    @property
    def raw_units_per_second(self):
        return self.raw_units / self.seconds if self.seconds > 0 else float("nan")

    words = property(lambda self: self.units, doc="``units`` under gensim's name.")
    raw_words = property(lambda self: self.raw_units, doc="``raw_units`` under gensim's name.")
    effective_words = property(lambda self: self.trained_units, doc="``trained_units`` under gensim's name.")
    words_per_second = units_per_second
    raw_words_per_second = raw_units_per_second

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data):
        """The report of :meth:`to_dict` (also of a checkpoint written before the units had one name)."""
        data = dict(data)
        for old, new in (("words", "units"), ("raw_words", "raw_units"), ("effective_words", "trained_units")):
            if old in data and new not in data:
                data[new] = data.pop(old)
        return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data})


@dataclass
class Position:
    """Where a run stands between two chunks: what a checkpoint records and a resumed run starts from."""

    epoch: int = 0              # current epoch (0-based)
    chunk: int = 0              # index of the next chunk of that epoch
    units_done: float = 0.0     # units of the epoch trained before that chunk
    epoch_loss: float = 0.0     # loss summed over the epoch so far
    epoch_examples: int = 0
    epoch_seconds: float = 0.0  # training time of the epoch so far
    finished: bool = False      # the run is complete

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data):
        return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data})


class _Bar:
    """tqdm bar over units (units/s, loss, ETA); silent when disabled."""

    def __init__(self, total, desc, enabled, unit="unit", initial=0):
        self.bar = None
        if enabled:
            from tqdm.auto import tqdm
            self.bar = tqdm(total=int(total), desc=desc, unit=unit, unit_scale=True, dynamic_ncols=True,
                            smoothing=0.1, initial=int(initial))

    def update(self, n, loss):
        if self.bar is not None:
            self.bar.set_postfix_str("loss=%.4f" % loss, refresh=False)
            self.bar.update(int(n))

    def close(self):
        if self.bar is not None:
            self.bar.close()


def _fire(callbacks, event, model):
    """Call ``callback.<event>(model)`` on every callback that has the method (gensim's protocol)."""
    for callback in callbacks:
        method = getattr(callback, event, None)
        if method is not None:
            method(model)


class SerialPipeline:
    """The pipeline interface (:class:`embkit._kernels.drive.Pipeline`) over a trainer that trains one chunk
    at a time itself, in ``train_chunk(*kernel_args, before, chunk_seed, n_threads)`` (the Python trainers
    of the batched losses, which thread through BLAS)."""

    overlaps = False
    capacity = 1

    def __init__(self, trainer, n_threads):
        self.trainer, self.n_threads = trainer, n_threads
        self._pending = deque()

    @property
    def in_flight(self):
        return len(self._pending)

    def prepare(self, args, before, chunk_seed, threads):
        return args, before, chunk_seed, threads

    def submit(self, job):
        self._pending.append(job)

    def wait(self):
        args, before, chunk_seed, threads = self._pending.popleft()
        loss, examples, units = self.trainer.train_chunk(*args, before, chunk_seed, threads)
        return loss, examples, units, units

    def close(self):
        """Nothing runs between calls."""

    def abort(self):
        self._pending.clear()


def open_pipeline(trainer, workers):
    """The trainer's pipeline of ``workers`` threads (its own, or a :class:`SerialPipeline`); close or abort
    it after the run."""
    make = getattr(trainer, "pipeline", None)
    return make(workers) if make is not None else SerialPipeline(trainer, workers)


def threads_for(units, workers, min_chunk_per_thread=None):
    """Threads that share a chunk of ``units``: ``workers``, fewer when the chunk has less than
    ``min_chunk_per_thread`` units a thread (gensim's ``batch_words``: small chunks are not cut into
    slivers, and a chunk trained by one thread is trained deterministically)."""
    if not min_chunk_per_thread:
        return workers
    return max(1, min(workers, units // min_chunk_per_thread))


class ChunkSteps:
    """The steps of one epoch's chunks, in order: callables that return the chunk's ``(loss_sum, examples,
    units, raw_units, kept_units)`` once it is trained.

    Up to ``depth`` chunks are in flight on ``pipe`` (one when it cannot overlap chunks); a chunk shared by
    fewer threads than the pipeline has trains alone, so its result does not depend on the others'.
    :meth:`settle` stops submitting until the chunks in flight are returned (a checkpoint, a stop).

    Parameters
    ----------
    pipe : Pipeline or SerialPipeline
    trainer : object
        Its ``before_chunk(progress)`` runs before each chunk is submitted.
    chunks : iterable
        The epoch's chunks from index ``first`` on (``kernel_args``, ``raw_units``, ``len``).
    first : int
        Index of the first of them in the epoch (chunk seeds are ``seed_of(index)``).
    units_before, total_units : float
        The run's units trained before the first chunk, and in the whole run.
    seed_of : callable
    on_result : callable
        ``on_result(loss, fraction_done)`` checks each chunk's result as it comes back (divergence).
    min_chunk_per_thread : int, optional
        See :func:`threads_for`.
    depth : int
    """

    def __init__(self, pipe, trainer, chunks, first, units_before, total_units, seed_of, on_result,
                 min_chunk_per_thread=None, depth=CHUNKS_IN_FLIGHT):
        self.pipe, self.trainer = pipe, trainer
        self.chunks = iter(chunks)
        self.index = first
        self.units_before = units_before
        self.total_units = max(1, total_units)
        self.seed_of, self.on_result = seed_of, on_result
        self.min_chunk_per_thread = min_chunk_per_thread
        self.depth = max(1, min(depth if pipe.overlaps else 1, pipe.capacity))
        self.flight = deque()       # (raw_units, units_before, alone) of the chunks submitted
        self.waiting = None         # the next chunk, read but not submitted
        self.settling = False

    @property
    def in_flight(self):
        return len(self.flight)

    def settle(self):
        """Submit nothing more until the chunks in flight have been returned."""
        self.settling = True

    def __iter__(self):
        return self

    def __next__(self):
        if not self.flight:
            self.settling = False
            if self.waiting is None:
                self.waiting = next(self.chunks, None)
            if self.waiting is None:
                raise StopIteration
        return self._result

    def _result(self):
        self._fill()
        loss, examples, units, kept = self.pipe.wait()
        raw, before, _ = self.flight.popleft()
        self.on_result(loss, before / self.total_units)
        return loss, examples, units, raw, kept

    def _fill(self):
        workers = self.pipe.n_threads
        while not self.settling and len(self.flight) < self.depth and not any(f[2] for f in self.flight):
            chunk = self.waiting if self.waiting is not None else next(self.chunks, None)
            self.waiting = None
            if chunk is None:
                return
            threads = threads_for(len(chunk), workers, self.min_chunk_per_thread)
            alone = threads < workers
            if alone and self.flight:
                self.waiting = chunk       # a chunk that trains alone waits for the pipeline to empty
                return
            self.trainer.before_chunk(self.units_before / self.total_units)
            self.pipe.submit(self.pipe.prepare(tuple(chunk.kernel_args), self.units_before,
                                               self.seed_of(self.index), threads))
            self.flight.append((chunk.raw_units, self.units_before, alone))
            self.units_before += len(chunk)
            self.index += 1


def check_finite(loss, epoch, fraction, alpha):
    """FloatingPointError when the loss of a chunk is NaN or infinite (divergence), naming the remedy."""
    if not math.isfinite(loss):
        raise FloatingPointError(
            "training diverged (loss is %s) in epoch %d at %.1f%% of the run; the learning rate is too high: "
            "lower alpha (now %g), e.g. alpha=%g" % (loss, epoch + 1, 100.0 * fraction, alpha, alpha / 10))


def run_epochs(trainer, chunk_epochs, units_per_epoch, epochs, workers, alpha, progress=True, desc="train",
               unit="unit", on_epoch=None, callbacks=(), model=None, report=None, start=None, checkpointer=None,
               min_chunk_per_thread=None):
    """Train ``trainer`` over ``epochs`` passes.

    Parameters
    ----------
    trainer : kernel trainer
        A driver (:class:`embkit._kernels.drive.Driver`: ``pipeline(n_threads)``), or an object with
        ``train_chunk(*chunk.kernel_args, units_before, chunk_seed, n_threads)`` returning ``(loss_sum,
        examples, units)``; either has ``before_chunk(progress)`` (called with the GIL before each chunk).
    chunk_epochs : callable
        ``chunk_epochs(epoch)`` returns an iterable of chunks for that epoch; a chunk has ``kernel_args``,
        ``raw_units`` and a length (its units).  It must give the same chunks every time it is called for an
        epoch (a resumed run skips the chunks already trained).
    units_per_epoch : int
        Units per epoch (words, pairs or examples: the learning-rate schedule's unit).
    workers : int
        Threads.
    alpha : float
        Starting learning rate, quoted in the divergence error.
    progress, desc, unit :
        Show a progress bar, with this label; ``unit`` names the units (the report's ``unit``).
    on_epoch : callable, optional
        ``on_epoch(epoch, report)`` after each epoch (with the GIL), before the callbacks' ``on_epoch_end``;
        returning True stops training after this epoch.
    callbacks : sequence
        Objects with any of gensim's ``CallbackAny2Vec`` methods (:data:`CALLBACK_EVENTS`), each called with
        ``model``: a batch is one chunk.  They run between chunks with the GIL held; an exception in one
        stops training with that exception (the tables stay as the chunks trained so far left them).  With
        ``on_batch_begin`` or ``on_batch_end`` among them, chunks train one at a time, so a batch event sees
        the tables of exactly the chunks before it.
    model : object, optional
        What the callbacks receive.
    report : TrainingReport, optional
        Filled in place (so a caller sees the epochs done when a callback raises); a new one by default.
        A resumed run passes the report of its checkpoint.
    start : Position, optional
        Resume here instead of at the first chunk.
    checkpointer : Checkpointer, optional
        Writes a checkpoint when one is due, when Ctrl-C stops the run, and when the run ends.
    min_chunk_per_thread : int, optional
        A chunk of ``len(chunk)`` units runs on at most ``len(chunk) // min_chunk_per_thread`` threads (at
        least one), so small chunks are not split into slivers (gensim's ``batch_words``).

    Returns
    -------
    TrainingReport

    Raises
    ------
    TrainingInterrupted
        After Ctrl-C, once the chunks in flight are trained (a second Ctrl-C stops at once).
    FloatingPointError
        When the loss becomes NaN or infinite (divergence).
    """
    total_units = units_per_epoch * epochs
    one_at_a_time = any(getattr(cb, event, None) is not None for cb in callbacks
                        for event in ("on_batch_begin", "on_batch_end"))
    pipe = open_pipeline(trainer, workers)

    def chunk_steps(epoch, first, units_before):
        def check(loss, fraction):
            check_finite(loss, epoch, fraction, alpha)
        chunks = (chunk for index, chunk in enumerate(chunk_epochs(epoch)) if index >= first)
        return ChunkSteps(pipe, trainer, chunks, first, units_before, total_units,
                          lambda index: epoch * 1000003 + index, check, min_chunk_per_thread,
                          depth=1 if one_at_a_time else CHUNKS_IN_FLIGHT)

    try:
        report = run_steps(chunk_steps, units_per_epoch, epochs, progress=progress, desc=desc, unit=unit,
                           on_epoch=on_epoch, callbacks=callbacks, model=model, report=report, start=start,
                           checkpointer=checkpointer)
    except BaseException:
        pipe.abort()
        raise
    pipe.close()
    return report


def run_steps(steps, units_per_epoch, epochs, progress=True, desc="train", unit="unit", on_epoch=None, callbacks=(),
              model=None, report=None, start=None, checkpointer=None):
    """The epochs of a training run, as steps (a chunk, or a round of a cluster), with its report, progress
    bar, callbacks, checkpoints and Ctrl-C.

    ``steps(epoch, first, units_before)`` gives an epoch's steps from index ``first`` on, in order: callables
    that train (or wait for) the step and return ``(loss_sum, examples, units, raw_units, kept_units)``;
    ``units_before`` is the run's units trained before the first.  A source that trains ahead
    (:class:`ChunkSteps`) has ``in_flight`` and ``settle()``: before a checkpoint or a stop, the steps in
    flight are taken in first.  The other parameters, the return value
    and the exceptions are those of :func:`run_epochs`; a checkpoint's position counts steps.
    """
    report = TrainingReport(unit=unit) if report is None else report
    start = Position() if start is None else start
    total_units = units_per_epoch * epochs
    first_units = start.epoch * units_per_epoch + start.units_done
    bar = _Bar(total_units, desc, progress, unit, initial=min(first_units, total_units))
    clock = time.perf_counter()
    seconds_before = report.seconds
    try:
        with stop_on_sigint() as stop:
            _fire(callbacks, "on_train_begin", model)
            for epoch in range(start.epoch, epochs):
                resumed = epoch == start.epoch
                _fire(callbacks, "on_epoch_begin", model)
                epoch_start = time.perf_counter() - (start.epoch_seconds if resumed else 0.0)
                epoch_loss = start.epoch_loss if resumed else 0.0
                epoch_examples = start.epoch_examples if resumed else 0
                units_done = start.units_done if resumed else 0
                first = start.chunk if resumed else 0
                source = steps(epoch, first, epoch * units_per_epoch + units_done)
                for index, step in enumerate(source, first):
                    _fire(callbacks, "on_batch_begin", model)
                    loss, examples, units, raw, kept = step()
                    report.trained_units += kept
                    epoch_loss += loss
                    epoch_examples += examples
                    units_done += units
                    report.raw_units += raw
                    report.examples += examples
                    report.seconds = seconds_before + time.perf_counter() - clock
                    bar.update(units, loss / max(examples, 1))
                    _fire(callbacks, "on_batch_end", model)
                    done = epoch * units_per_epoch + units_done
                    if stop.requested and done >= total_units:
                        logger.info("Ctrl-C after the run's last step: the run completes")
                        stop.requested = False
                    if stop.requested or (checkpointer is not None and checkpointer.due(done)):
                        if getattr(source, "in_flight", 0):
                            source.settle()         # take the steps in flight in first
                            continue
                        here = Position(epoch, index + 1, units_done, epoch_loss, epoch_examples,
                                        time.perf_counter() - epoch_start)
                        path = checkpointer.write(here, done) if checkpointer is not None else None
                        if stop.requested:
                            raise TrainingInterrupted(
                                "training interrupted in epoch %d of %d at %.1f%% of the run"
                                % (epoch + 1, epochs, 100.0 * done / max(1, total_units)), checkpoint=path)
                report.units += units_done
                report.epochs += 1
                mean = epoch_loss / max(epoch_examples, 1)
                report.epoch_loss.append(mean)
                report.epoch_examples.append(epoch_examples)
                report.epoch_seconds.append(time.perf_counter() - epoch_start)
                report.seconds = seconds_before + time.perf_counter() - clock
                logger.info("epoch %d/%d: loss %.4f, %d %ss, %.0f %ss/s", epoch + 1, epochs, mean, units_done,
                            unit, report.units / max(report.seconds, 1e-9), unit)
                stopping = on_epoch is not None and on_epoch(epoch, report)
                _fire(callbacks, "on_epoch_end", model)
                if stopping:
                    logger.info("stopped after epoch %d", epoch + 1)
                    break
            if checkpointer is not None:
                checkpointer.write(Position(epochs, 0, 0.0, finished=True), total_units)
            _fire(callbacks, "on_train_end", model)
    finally:
        report.seconds = seconds_before + time.perf_counter() - clock
        bar.close()
    return report
