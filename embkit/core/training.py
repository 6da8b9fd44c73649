"""The epoch loop shared by all trainers: chunks in, kernel calls, progress bar, divergence checks, callbacks,
checkpoints between chunks, and a clean stop on Ctrl-C."""
import dataclasses
import logging
import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from embkit._kernels.common import HAVE_OPENMP
from embkit.core.interrupts import TrainingInterrupted, stop_on_sigint

logger = logging.getLogger(__name__)

#: gensim's ``CallbackAny2Vec`` methods, in the order a run calls them
CALLBACK_EVENTS = ("on_train_begin", "on_epoch_begin", "on_batch_begin", "on_batch_end", "on_epoch_end",
                   "on_train_end")


@dataclass
class TrainingReport:
    """What one call to ``train`` did."""

    epochs: int = 0
    words: int = 0          # in-vocabulary tokens processed (before subsampling)
    raw_words: int = 0      # corpus tokens read, out-of-vocabulary ones included
    examples: int = 0       # (input, target) training examples
    seconds: float = 0.0
    epoch_loss: list = field(default_factory=list)   # mean loss per example, per epoch (0.0 with no example)
    epoch_examples: list = field(default_factory=list)  # examples trained, per epoch
    epoch_seconds: list = field(default_factory=list)  # training time of each epoch (callbacks excluded)

    @property
    def words_per_second(self):
        return self.words / self.seconds if self.seconds > 0 else float("nan")

    @property
    def raw_words_per_second(self):
        return self.raw_words / self.seconds if self.seconds > 0 else float("nan")

    def to_dict(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data):
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
    """tqdm bar over words (words/s, loss, ETA); silent when disabled."""

    def __init__(self, total, desc, enabled, unit="w", initial=0):
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


def chunk_pool(workers):
    """The thread pool that shares a chunk among ``workers`` Python threads when the build has no OpenMP
    (None when OpenMP threads do it, or with one worker); shut it down after the run."""
    return None if HAVE_OPENMP or workers == 1 else ThreadPoolExecutor(workers)


def train_chunk(trainer, chunk, words_before, seed, workers, pool=None, min_chunk_per_thread=None):
    """Train one chunk on up to ``workers`` threads; returns ``(loss_sum, examples, units)``.

    A chunk of ``len(chunk)`` units runs on at most ``len(chunk) // min_chunk_per_thread`` threads; ``pool``
    (:func:`chunk_pool`) runs the slices on Python threads when the build has no OpenMP.
    """
    threads = workers
    if min_chunk_per_thread:
        threads = max(1, min(workers, len(chunk) // min_chunk_per_thread))
    if pool is None or threads == 1:
        return trainer.train_chunk(*chunk.kernel_args, words_before, seed, threads)
    parts = list(pool.map(lambda t: trainer.train_chunk(*chunk.kernel_args, words_before, seed, threads, t),
                          range(threads)))
    return sum(p[0] for p in parts), sum(p[1] for p in parts), sum(p[2] for p in parts)


def check_finite(loss, epoch, fraction, alpha):
    """FloatingPointError when the loss of a chunk is NaN or infinite (divergence), naming the remedy."""
    if not math.isfinite(loss):
        raise FloatingPointError(
            "training diverged (loss is %s) in epoch %d at %.1f%% of the run; the learning rate is too high: "
            "lower alpha (now %g), e.g. alpha=%g" % (loss, epoch + 1, 100.0 * fraction, alpha, alpha / 10))


def run_epochs(trainer, chunk_epochs, words_per_epoch, epochs, workers, alpha, progress=True, desc="train",
               unit="w", on_epoch=None, callbacks=(), model=None, report=None, start=None, checkpointer=None,
               min_chunk_per_thread=None):
    """Train ``trainer`` over ``epochs`` passes.

    Parameters
    ----------
    trainer : kernel trainer
        Has ``train_chunk(*chunk.kernel_args, words_before, chunk_seed, n_threads, slice_index)``
        returning ``(loss_sum, examples, words)``, and ``before_chunk(progress)`` (called with the GIL
        between chunks).
    chunk_epochs : callable
        ``chunk_epochs(epoch)`` returns an iterable of chunks for that epoch; a chunk has ``kernel_args``
        and ``raw_words``.  It must give the same chunks every time it is called for an epoch (a resumed run
        skips the chunks already trained).
    words_per_epoch : int
        Expected units per epoch (words, pairs or examples: the learning-rate schedule's unit).
    workers : int
        Threads.
    alpha : float
        Starting learning rate, quoted in the divergence error.
    progress, desc, unit :
        Show a progress bar, with this label and unit.
    on_epoch : callable, optional
        ``on_epoch(epoch, report)`` after each epoch (with the GIL), before the callbacks' ``on_epoch_end``;
        returning True stops training after this epoch.
    callbacks : sequence
        Objects with any of gensim's ``CallbackAny2Vec`` methods (:data:`CALLBACK_EVENTS`), each called with
        ``model``: a batch is one chunk.  They run between chunks with the GIL held; an exception in one
        stops training with that exception (the tables stay as the last chunk left them).
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
        After Ctrl-C, at the end of the chunk being trained (a second Ctrl-C stops at once).
    FloatingPointError
        When the loss becomes NaN or infinite (divergence).
    """
    pool = chunk_pool(workers)
    total_units = words_per_epoch * epochs

    def chunk_steps(epoch, first):
        for index, chunk in enumerate(chunk_epochs(epoch)):
            if index >= first:
                yield _chunk_step(trainer, chunk, epoch, index, total_units, workers, pool, alpha,
                                  min_chunk_per_thread)

    try:
        return run_steps(chunk_steps, words_per_epoch, epochs, progress=progress, desc=desc, unit=unit,
                         on_epoch=on_epoch, callbacks=callbacks, model=model, report=report, start=start,
                         checkpointer=checkpointer)
    finally:
        if pool is not None:
            pool.shutdown()


def _chunk_step(trainer, chunk, epoch, index, total_units, workers, pool, alpha, min_chunk_per_thread):
    """One chunk as a step of :func:`run_steps`."""
    def step(units_before):
        seed = epoch * 1000003 + index
        trainer.before_chunk(units_before / max(1, total_units))
        loss, examples, words = train_chunk(trainer, chunk, units_before, seed, workers, pool,
                                            min_chunk_per_thread)
        check_finite(loss, epoch, units_before / max(1, total_units), alpha)
        return loss, examples, words, chunk.raw_words
    return step


def run_steps(steps, units_per_epoch, epochs, progress=True, desc="train", unit="w", on_epoch=None, callbacks=(),
              model=None, report=None, start=None, checkpointer=None):
    """The epochs of a training run, as steps (a chunk, or a round of a cluster), with its report, progress
    bar, callbacks, checkpoints and Ctrl-C.

    ``steps(epoch, first)`` yields the steps of an epoch from index ``first`` on: callables
    ``step(units_before)`` (the run's units trained before it) that train and return ``(loss_sum, examples,
    units, raw_units)``.  The other parameters, the return value and the exceptions are those of
    :func:`run_epochs`; a checkpoint's position counts steps.
    """
    report = TrainingReport() if report is None else report
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
                for index, step in enumerate(steps(epoch, first), first):
                    _fire(callbacks, "on_batch_begin", model)
                    loss, examples, units, raw = step(epoch * units_per_epoch + units_done)
                    epoch_loss += loss
                    epoch_examples += examples
                    units_done += units
                    report.raw_words += raw
                    report.examples += examples
                    report.seconds = seconds_before + time.perf_counter() - clock
                    bar.update(units, loss / max(examples, 1))
                    _fire(callbacks, "on_batch_end", model)
                    done = epoch * units_per_epoch + units_done
                    if stop.requested or (checkpointer is not None and checkpointer.due(done)):
                        here = Position(epoch, index + 1, units_done, epoch_loss, epoch_examples,
                                        time.perf_counter() - epoch_start)
                        path = checkpointer.write(here, done) if checkpointer is not None else None
                        if stop.requested:
                            raise TrainingInterrupted(
                                "training interrupted in epoch %d of %d at %.1f%% of the run"
                                % (epoch + 1, epochs, 100.0 * done / max(1, total_units)), checkpoint=path)
                report.words += units_done
                report.epochs += 1
                mean = epoch_loss / max(epoch_examples, 1)
                report.epoch_loss.append(mean)
                report.epoch_examples.append(epoch_examples)
                report.epoch_seconds.append(time.perf_counter() - epoch_start)
                report.seconds = seconds_before + time.perf_counter() - clock
                logger.info("epoch %d/%d: loss %.4f, %d %s, %.0f %s/s", epoch + 1, epochs, mean, units_done, unit,
                            report.words / max(report.seconds, 1e-9), unit)
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
