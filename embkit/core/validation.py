"""Validation during training: a score after every epoch, the tables of the best epoch kept, early stopping."""
import logging
import math

logger = logging.getLogger(__name__)

__all__ = ["BestEpoch"]


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

    Attributes
    ----------
    history : list of dict
        One row per epoch: ``epoch`` (1-based) and the metrics.
    best_epoch : int or None
    best_score : float
    """

    def __init__(self, model, score, metric, patience=None):
        self.model, self.score, self.metric, self.patience = model, score, metric, patience
        self.history = []
        self.best_epoch = None
        self.best_score = -math.inf
        self._tables = None

    def __call__(self, epoch, report):
        row = dict(epoch=epoch + 1, **self.score(epoch, report))
        self.history.append(row)
        logger.info("epoch %d validation: %s", epoch + 1,
                    ", ".join("%s %.4f" % (k, v) for k, v in row.items() if k != "epoch"))
        value = row[self.metric]
        if value > self.best_score:
            self.best_score, self.best_epoch = value, epoch + 1
            self._tables = (self.model.W_in.copy(), self.model.W_out.copy())
        return self.patience is not None and epoch + 1 - self.best_epoch >= self.patience

    def get_state(self):
        """History, best epoch and its tables (for checkpoints)."""
        state = {"history": self.history, "best_epoch": self.best_epoch, "best_score": self.best_score}
        if self._tables is not None:
            state["W_in"], state["W_out"] = self._tables
        return state

    def set_state(self, state):
        """Restore what :meth:`get_state` returned."""
        self.history = [dict(row) for row in state.get("history") or []]
        self.best_epoch = state.get("best_epoch")
        self.best_score = float(state.get("best_score", -math.inf))
        self._tables = (state["W_in"], state["W_out"]) if "W_in" in state else None

    def restore(self):
        """Put the best epoch's tables back (in place) unless the last epoch was the best."""
        if self._tables is None or self.best_epoch == len(self.history):
            return
        logger.info("keeping the tables of epoch %d (best validation %s %.4f)", self.best_epoch, self.metric,
                    self.best_score)
        self.model.W_in[...] = self._tables[0]
        self.model.W_out[...] = self._tables[1]
