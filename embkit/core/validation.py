"""Validation during training: a score after every epoch, the tables of the best epoch kept, early stopping."""
import logging
import math

import numpy as np

logger = logging.getLogger(__name__)

__all__ = ["BestEpoch", "KEEPS", "check_keep"]

#: What :class:`BestEpoch` puts back: the mean of the tables of the best epoch and of every epoch after it,
#: or the best epoch's tables.
KEEPS = ("average", "best")


def check_keep(keep):
    """ValueError naming ``keep`` unless it is one of :data:`KEEPS`."""
    if keep not in KEEPS:
        raise ValueError("keep must be one of %s, got %r" % (", ".join(KEEPS), keep))


class BestEpoch:
    """An ``on_epoch`` hook that scores the model after each epoch and keeps the best epoch's tables.

    Parameters
    ----------
    model : EmbeddingModel
        Its ``W_in`` and ``W_out`` are copied when an epoch scores best, and put back by :meth:`restore`.
    score : callable
        ``score(epoch, report)`` -> dict of metrics for the epoch (higher is better for ``metric``).
    metric : str
        The key of the dict that decides the best epoch.
    patience : int or None
        Stop after this many epochs without improvement (None: run every epoch).
    keep : {"average", "best"}
        What :meth:`restore` puts back: the mean of the tables of the best epoch and of the epochs after it
        (the last epochs train at the smallest steps around the best one; their mean is a smoother model),
        or the best epoch's tables.

    Attributes
    ----------
    history : list of dict
        One row per epoch: ``epoch`` (1-based) and the metrics.
    best_epoch : int or None
    best_score : float
    """

    def __init__(self, model, score, metric, patience=None, keep="best"):
        check_keep(keep)
        self.model, self.score, self.metric, self.patience, self.keep = model, score, metric, patience, keep
        self.history = []
        self.best_epoch = None
        self.best_score = -math.inf
        self._tables = None         # the best epoch's tables, or (keep="average") the float64 sums since it
        self._summed = 0            # epochs in the sums

    def __call__(self, epoch, report):
        row = dict(epoch=epoch + 1, **self.score(epoch, report))
        self.history.append(row)
        logger.info("epoch %d validation: %s", epoch + 1,
                    ", ".join("%s %.4f" % (k, v) for k, v in row.items() if k != "epoch"))
        value = row[self.metric]
        tables = (self.model.W_in, self.model.W_out)
        if value > self.best_score:
            self.best_score, self.best_epoch = value, epoch + 1
            dtype = np.float64 if self.keep == "average" else None
            self._tables = tuple(np.array(t, dtype=dtype) for t in tables)
            self._summed = 1
        elif self.keep == "average" and self._tables is not None:
            for total, t in zip(self._tables, tables):
                total += t
            self._summed += 1
        return self.patience is not None and epoch + 1 - self.best_epoch >= self.patience

    def get_state(self):
        """History, best epoch and its tables (for checkpoints)."""
        state = {"history": self.history, "best_epoch": self.best_epoch, "best_score": self.best_score,
                 "summed": self._summed}
        if self._tables is not None:
            state["W_in"], state["W_out"] = self._tables
        return state

    def set_state(self, state):
        """Restore what :meth:`get_state` returned."""
        self.history = [dict(row) for row in state.get("history") or []]
        self.best_epoch = state.get("best_epoch")
        self.best_score = float(state.get("best_score", -math.inf))
        self._tables = (state["W_in"], state["W_out"]) if "W_in" in state else None
        self._summed = int(state.get("summed", 1))
        if self._tables is not None and self.keep == "average":
            self._tables = tuple(np.array(t, dtype=np.float64) for t in self._tables)

    def restore(self):
        """Put back (in place) the mean of the tables from the best epoch on, or the best epoch's tables
        (``keep``); nothing to do when the last epoch was the best."""
        if self._tables is None or self.best_epoch == len(self.history):
            return
        logger.info("keeping the tables of epoch %d%s (best validation %s %.4f)", self.best_epoch,
                    " averaged with the %d after it" % (self._summed - 1) if self.keep == "average" else "",
                    self.metric, self.best_score)
        for table, kept in zip((self.model.W_in, self.model.W_out), self._tables):
            table[...] = kept / self._summed if self.keep == "average" else kept
