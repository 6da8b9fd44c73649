"""Checkpoints of a training run: written atomically between chunks, read back newest first, and the start of
a run (:func:`begin_run`), fresh or resumed (:func:`open_run`).

A checkpoint is an embkit model archive (it loads as a model) whose configuration also holds a
``"checkpoint"`` section: where the run stands (epoch, next chunk, units done, the report so far), what the
run was called with, a fingerprint of its data, and the state of an adaptive sampler and of a validation
tracker (their arrays are stored beside the tables under ``sampler.`` and ``tracker.`` names).

Files are ``checkpoint-000001.embkit``, ``checkpoint-000002.embkit``, ... in the checkpoint directory.  Each
is written to a temporary file and renamed into place only once complete, and the older ones are removed
only after that: a crash at any moment leaves the previous checkpoint intact.  The two newest are kept, so a
checkpoint damaged after the fact (a truncated copy, a flipped bit: the archive's CRCs catch it) falls back
to the one before, with a warning naming the damaged file.
"""
import contextlib
import hashlib
import json
import logging
import os
import re
import time
import zipfile

import numpy as np

from embkit.core import persist
from embkit.core.atomic import remove_stale_temps
from embkit.core.checks import (BOOL, COUNT, FINITE_REAL, MAPPING, NON_NEGATIVE_REAL, POSITIVE_INT, POSITIVE_REAL,
                                TEXT, check_fields, list_of, optional, unknown_names)
from embkit.core.interrupts import TrainingInterrupted
from embkit.core.training import Position, TrainingReport

logger = logging.getLogger(__name__)

__all__ = ["CHECKPOINT_VERSION", "run_record", "CheckpointError", "parse_every", "check_section", "Checkpointer", "list_checkpoints",
           "read_latest", "fingerprint", "as_saved", "resumed_run", "begin_run", "interruption_hint", "open_run"]

#: version of the ``"checkpoint"`` section; a directory written by another version is refused
CHECKPOINT_VERSION = 1
#: checkpoints kept in the directory (the newest and its fallback)
KEEP = 2
_NAME = re.compile(r"checkpoint-(\d{6,})\.embkit\Z")
_TIME_UNITS = {"": 1.0, "s": 1.0, "sec": 1.0, "seconds": 1.0, "m": 60.0, "min": 60.0, "minutes": 60.0,
               "h": 3600.0, "hours": 3600.0}
_COUNT_UNITS = ("words", "pairs", "examples", "units")
#: The fields of a checkpoint's ``"checkpoint"`` section: ``{field: (rule, required)}``
#: (see :func:`embkit.core.checks.check_fields`)
SECTION_FIELDS = {"position": (MAPPING, True), "report": (MAPPING, True), "run": (MAPPING, True),
                  "loss_history": (list_of(FINITE_REAL), False), "states": (list_of(TEXT), False)}
POSITION_FIELDS = {"epoch": (COUNT, True), "chunk": (COUNT, True), "units_done": (NON_NEGATIVE_REAL, False),
                   "epoch_loss": (FINITE_REAL, False), "epoch_examples": (NON_NEGATIVE_REAL, False),
                   "epoch_seconds": (NON_NEGATIVE_REAL, False), "finished": (BOOL, False)}
REPORT_FIELDS = dict({name: (NON_NEGATIVE_REAL, False) for name in ("words", "raw_words", "effective_words",
                                                                     "examples", "seconds")},
                     epochs=(COUNT, False), epoch_loss=(list_of(FINITE_REAL), False),
                     epoch_examples=(list_of(NON_NEGATIVE_REAL), False),
                     epoch_seconds=(list_of(NON_NEGATIVE_REAL), False))
RUN_FIELDS = {"epochs": (POSITIVE_INT, True), "alpha": (POSITIVE_REAL, True), "min_alpha": (NON_NEGATIVE_REAL, True),
              "units_per_epoch": (NON_NEGATIVE_REAL, True), "args": (MAPPING, True),
              "fingerprint": (optional(TEXT), False), "cluster": (optional(MAPPING), False),
              "rounds": (optional(MAPPING), False)}
_MULTIPLIERS = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9}


class CheckpointError(ValueError):
    """A checkpoint directory cannot be resumed (empty, from another version or model, or damaged)."""


def parse_every(value):
    """``checkpoint_every`` as ``("seconds", x)`` or ``("units", n)``.

    A number is seconds; a string is seconds with a unit (``"90s"``, ``"10 min"``, ``"1h"``) or a count of
    the driver's units (``"5M words"``, ``"200k pairs"``, ``"50000 examples"``).  ValueError otherwise.
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not value > 0 or value != value or value == float("inf"):
            raise ValueError("checkpoint_every must be > 0 seconds, got %r" % (value,))
        return "seconds", float(value)
    text = str(value).strip().lower()
    m = re.fullmatch(r"([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([a-z ]*)", text)
    if m and float(m.group(1)) > 0:
        number, rest = float(m.group(1)), m.group(2).strip()
        if rest in _TIME_UNITS:
            return "seconds", number * _TIME_UNITS[rest]
        count = re.fullmatch(r"([kmg]?)\s*(%s)" % "|".join(_COUNT_UNITS), rest)
        if count:
            return "units", number * _MULTIPLIERS[count.group(1)]
    raise ValueError("checkpoint_every must be seconds (600, '90s', '10 min', '1h') or a count of units "
                     "('5M words', '200k pairs', '50000 examples'), got %r" % (value,))


def fingerprint(*arrays):
    """A digest of arrays (their dtype, shape and bytes; None entries count as absent): how a resumed run
    checks that it trains on the checkpoint's data."""
    digest = hashlib.blake2b(digest_size=16)
    for arr in arrays:
        if arr is None:
            digest.update(b"none;")
            continue
        a = np.ascontiguousarray(arr)
        digest.update(("%s%s;" % (a.dtype.str, a.shape)).encode())
        digest.update(memoryview(a).cast("B"))
    return digest.hexdigest()


def list_checkpoints(directory):
    """Checkpoint files of ``directory``, newest first (``[]`` when there is none or no directory)."""
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    found = [(int(m.group(1)), name) for name in names for m in [_NAME.match(name)] if m]
    return [os.path.join(directory, name) for _, name in sorted(found, reverse=True)]


def read_latest(directory, kind=None):
    """The newest readable checkpoint of ``directory``: ``(path, config, words, arrays)``.

    A damaged checkpoint is skipped with a warning naming it, and the one before is used.

    Raises
    ------
    CheckpointError
        No checkpoint at all, none readable, one from another embkit checkpoint version, or one of another
        model kind than ``kind`` (a class name).
    """
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        raise CheckpointError("checkpoint directory %r does not exist" % directory)
    paths = list_checkpoints(directory)
    if not paths:
        raise CheckpointError("%r holds no checkpoint (checkpoint-NNNNNN.embkit files)" % directory)
    errors = []
    for path in paths:
        try:
            config, words, arrays = persist.load_archive(path)
            section = config.get("checkpoint")
            if not isinstance(section, dict):
                raise ValueError("it is a model file, not a checkpoint")
            if section.get("version") == CHECKPOINT_VERSION:
                check_section(path, section)
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            logger.warning("checkpoint %s is damaged (%s); trying the previous one", path, exc)
            errors.append("%s: %s" % (os.path.basename(path), exc))
            continue
        if section.get("version") != CHECKPOINT_VERSION:
            raise CheckpointError("%s was written by another embkit checkpoint version (%r, this embkit reads %d)"
                                  % (path, section.get("version"), CHECKPOINT_VERSION))
        if kind is not None and config.get("model") != kind:
            raise CheckpointError("%s is a checkpoint of a %s, not of a %s" % (path, config.get("model"), kind))
        return path, config, words, arrays
    raise CheckpointError("no readable checkpoint in %r: %s" % (directory, "; ".join(errors)))


def finished_checkpoint(directory):
    """The newest checkpoint of ``directory`` when it closes a finished run, else None (no checkpoint, an
    unfinished run, or one that does not read: resuming then says why)."""
    paths = list_checkpoints(directory)
    if not paths:
        return None
    try:
        config, _, _ = persist.load_archive(paths[0], arrays=False)
        finished = config["checkpoint"]["position"]["finished"]
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile):
        return None
    return paths[0] if finished is True else None


def check_section(path, section):
    """ValueError naming the file ``path`` and the field unless the ``"checkpoint"`` section's fields have
    the types and ranges a resumed run relies on."""
    check_fields(path, "checkpoint", section, SECTION_FIELDS)
    for name, spec in (("position", POSITION_FIELDS), ("report", REPORT_FIELDS), ("run", RUN_FIELDS)):
        check_fields(path, "checkpoint." + name, section[name], spec)
    epoch, epochs = section["position"]["epoch"], section["run"]["epochs"]
    if epoch > epochs or (epoch == epochs and not section["position"].get("finished")):
        raise ValueError("%r: checkpoint.position.epoch is %d, but the run has %d epochs" % (path, epoch, epochs))


class Checkpointer:
    """Decides when a checkpoint is due and writes it (between chunks, with the GIL).

    Parameters
    ----------
    directory : str
        Created if missing.
    every : number or str
        See :func:`parse_every`.
    payload : callable
        ``payload(position)`` -> ``(config, words, arrays)`` of the archive to write.
    """

    def __init__(self, directory, every, payload):
        self.directory = os.fspath(directory)
        self.mode, self.interval = parse_every(every)
        self.payload = payload
        os.makedirs(self.directory, exist_ok=True)
        remove_stale_temps(self.directory)    # left by a run killed while writing a checkpoint
        existing = list_checkpoints(self.directory)
        self.sequence = int(_NAME.match(os.path.basename(existing[0])).group(1)) if existing else 0
        self.last_time = time.monotonic()
        self.last_units = None
        self.latest = existing[0] if existing else None
        self.seconds = []        # time of each write
        self.sizes = []          # bytes of each checkpoint written

    def due(self, units_done):
        """Whether a checkpoint is due after ``units_done`` units of the run (counted from its start)."""
        if self.last_units is None:
            self.last_units = units_done
        if self.mode == "seconds":
            return time.monotonic() - self.last_time >= self.interval
        return units_done - self.last_units >= self.interval

    def write(self, position, units_done=None):
        """Write a checkpoint of ``position``; returns its path.  Older ones beyond :data:`KEEP` are removed
        once it is complete."""
        start = time.perf_counter()
        self.sequence += 1
        path = os.path.join(self.directory, "checkpoint-%06d.embkit" % self.sequence)
        config, words, arrays = self.payload(position)
        persist.save_archive(path, config, words, arrays)
        for old in list_checkpoints(self.directory)[KEEP:]:
            try:
                os.unlink(old)
            except OSError as exc:
                logger.warning("could not remove the old checkpoint %s: %s", old, exc)
        self.seconds.append(time.perf_counter() - start)
        self.sizes.append(os.path.getsize(path))
        self.last_time = time.monotonic()
        if units_done is not None:
            self.last_units = units_done
        self.latest = path
        logger.info("checkpoint %s written (%.1f MB in %.2f s)", path, self.sizes[-1] / 1e6, self.seconds[-1])
        return path


# ------------------------------------------------------------------------------------------ runs
def as_saved(value):
    """``value`` as it reads back from a JSON file (tuples become lists): how a saved setting compares."""
    return json.loads(json.dumps(value))


def run_record(epochs, alpha, min_alpha, units_per_epoch, run_args=None, fingerprint=None, **more):
    """The record of a training run that its checkpoints keep and a resumed run must match (``more``:
    further settings, e.g. a cluster run's)."""
    return dict({"epochs": int(epochs), "alpha": float(alpha), "min_alpha": float(min_alpha),
                 "units_per_epoch": units_per_epoch, "args": dict(run_args or {}), "fingerprint": fingerprint},
                **more)


def resumed_run(model):
    """The record of the run that ``model`` resumes (:func:`run_record`'s, as its checkpoint keeps it), before
    :func:`begin_run` takes it up; None for a fresh run."""
    resuming = getattr(model, "_resuming", None)
    return None if resuming is None else resuming["run"]


def begin_run(model, run, states):
    """Start a training run of ``model``, fresh or resumed from the checkpoint :func:`open_run` opened.

    ``run`` is the run's record (:func:`run_record`); ``states`` maps a name to an object whose
    ``get_state`` / ``set_state`` go into checkpoints (None entries are skipped).  Returns ``(loss history
    before the run, start position or None, report, checkpointer or None)``; a resumed run that had finished
    is complete already (``start.finished``).
    """
    history_before, start, report = list(model.loss_history), None, TrainingReport()
    resuming, model._resuming = model._resuming, None
    if resuming is not None:
        history_before, start, report = _continue_from(resuming, run, states)
    report.unit = model.unit
    model.last_report = report
    if start is not None and start.finished:
        logger.info("the checkpoint's run is complete: nothing left to train")
        model.loss_history = history_before + report.epoch_loss
        return history_before, start, report, None
    checkpointer = None
    if model.checkpoint_dir is not None:
        if resuming is None:
            _check_fresh_dir(model)

        def payload(position):
            return _payload(model, position, report, run, history_before, states)
        checkpointer = Checkpointer(model.checkpoint_dir, model.checkpoint_every, payload)
    model.last_checkpointer = checkpointer
    return history_before, start, report, checkpointer


@contextlib.contextmanager
def interruption_hint(model):
    """A Ctrl-C stop (TrainingInterrupted) inside says how to resume ``model``'s run, or how to be able to."""
    try:
        yield
    except TrainingInterrupted as exc:
        if exc.checkpoint:
            hint = "; checkpoint %s written (continue with %s.resume(%r))" % (
                exc.checkpoint, type(model).__name__, model.checkpoint_dir)
        else:
            hint = "; no checkpoint written: set checkpoint_dir= to be able to resume"
        raise TrainingInterrupted(exc.where, exc.checkpoint, hint) from None


def _check_fresh_dir(model):
    """A new run may not write into a directory holding another run's checkpoints (a later resume could mix
    the two); the model's own earlier runs are fine."""
    existing = list_checkpoints(model.checkpoint_dir)
    mine = model.last_checkpointer.latest if model.last_checkpointer is not None else None
    if existing and existing[0] != mine:
        raise CheckpointError(
            "checkpoint_dir %r already holds checkpoints of another run: continue that run with %s.resume(), "
            "or give an empty directory" % (model.checkpoint_dir, type(model).__name__))


def _payload(model, position, report, run, history_before, states):
    """``(config, words, arrays)`` of a checkpoint: the model archive plus the run's position and the
    ``get_state()`` of each of ``states`` (its arrays stored beside the tables as ``name.key``)."""
    arrays = dict(model._arrays(), W_in=model.W_in, W_out=model.W_out)
    section = {"version": CHECKPOINT_VERSION, "position": position.to_dict(), "report": report.to_dict(),
               "run": run, "loss_history": history_before, "states": list(states)}
    for prefix, holder in states.items():
        state = holder.get_state() if hasattr(holder, "get_state") else {}
        section[prefix] = {}
        for key, value in state.items():
            if isinstance(value, np.ndarray):
                arrays["%s.%s" % (prefix, key)] = value
            else:
                section[prefix][key] = value
    config = {"model": type(model).__name__, "params": model.get_params(), "state": model._state(),
              "checkpoint": section}
    return config, model._words(), arrays


def open_run(cls, directory, params, callbacks=(), progress=None):
    """The model (of class ``cls``) of the newest readable checkpoint in ``directory``, set to resume its run.

    ``params`` are constructor parameters the caller gives again: any that differs from the checkpoint's
    (other than ``cls.RESUMABLE_CHANGES``) is refused, naming it.  ``callbacks`` and ``progress`` (None: the
    model's default) are the resumed run's.  Returns ``(model, run)`` with ``run`` the checkpoint's record of
    the interrupted call; the next :func:`begin_run` of the model continues it.
    """
    path, config, words, arrays = read_latest(directory, kind=cls.__name__)
    model = cls._from_archive(config, words, arrays, path)
    args = config["checkpoint"]["run"]["args"]
    unknown = sorted(set(args) - set(cls.RUN_ARG_FIELDS))
    if unknown:
        raise CheckpointError("%s: checkpoint.run.args has fields no %s run writes: %s"
                              % (path, cls.__name__, unknown_names(unknown, cls.RUN_ARG_FIELDS)))
    try:
        check_fields(path, "checkpoint.run.args", args, cls.RUN_ARG_FIELDS)
    except ValueError as exc:
        raise CheckpointError(str(exc)) from None
    saved = cls._current_params(config.get("params") or {})
    differing = ["%s=%r here, %r in the checkpoint" % (k, v, saved.get(k))
                 for k, v in sorted(cls._current_params(params).items())
                 if k in saved and k not in cls.RESUMABLE_CHANGES and as_saved(v) != saved[k]]
    if differing:
        raise CheckpointError("%s: cannot resume with other parameters: %s" % (path, "; ".join(differing)))
    for key in cls.RESUMABLE_CHANGES & set(params):
        setattr(model, key, params[key])
    cluster = config["checkpoint"]["run"].get("cluster")
    for key, value in (cluster or {}).items():
        if key not in params:       # a cluster run's settings, unless given again (then checked)
            setattr(model, key, value)
    if cluster and params.get("client") is None:
        raise CheckpointError("%s: the run trained on a Dask cluster: resume it with client=" % path)
    section = dict(config["checkpoint"])
    names = tuple("%s." % name for name in section.get("states", ("sampler", "tracker")))
    section["arrays"] = {k: v for k, v in arrays.items() if k.startswith(names)}
    section["path"] = path
    model.checkpoint_dir = os.fspath(directory)
    model.callbacks = tuple(callbacks or ())
    if progress is not None:
        model.progress = progress
    model._resuming = section
    logger.info("resuming from %s (epoch %d)", path, section["position"]["epoch"] + 1)
    return model, section["run"]


def _continue_from(section, run, states):
    """Check a resumed run against its checkpoint and restore the ``states`` (see :func:`begin_run`).

    Returns ``(loss history before the run, start position, report so far)``.
    """
    saved = section["run"]
    differing = [key for key in ("epochs", "alpha", "min_alpha", "cluster", "units_per_epoch", "fingerprint")
                 if saved.get(key) != run.get(key)]
    if differing:
        what = "the training data differs" if differing[-1] in ("fingerprint", "units_per_epoch") else \
            "the run's settings differ"
        raise CheckpointError("%s: %s from the checkpoint's (%s)" % (section["path"], what, ", ".join(
            "%s %r now, %r then" % (k, run.get(k), saved.get(k)) for k in differing)))
    for prefix, target in states.items():
        state = dict(section.get(prefix) or {})
        state.update({k[len(prefix) + 1:]: v for k, v in section["arrays"].items() if k.startswith(prefix + ".")})
        if state:
            try:
                target.set_state(state)
            except (KeyError, TypeError, ValueError) as exc:
                raise CheckpointError("%s: the saved %s state does not fit this run: %s"
                                      % (section["path"], prefix, exc)) from None
    return (list(section.get("loss_history") or []), Position.from_dict(section["position"]),
            TrainingReport.from_dict(section["report"]))
