"""Fitting a blend's heads beside the model's training.

The heads (:mod:`embkit.xc.heads`) are fitted from the rows and labels alone, so their work need not wait
for the model.  :class:`HeadFits` fits every usable head twice: on the rows the model trains on (these fits
score the held-out rows while the blend's weights are chosen) and on every row (the fit a head keeps when
its weight is nonzero; a head with :meth:`~embkit.xc.heads.Head.statistics` adds the other rows' sums to
the first fit's instead of reading those rows again).  :meth:`HeadFits.start` runs the fits, and the
held-out rows' scores where they are small (:data:`HELD_OUT_CELLS`), on a thread of their own, so that they
overlap the model's training; without it each is computed when first asked for, and only the heads asked
for are fitted on every row.  Either way a head's arrays and scores are the same.
"""
import threading

import numpy as np

from embkit.xc.heads import HEADS, add_statistics

__all__ = ["HeadFits", "HELD_OUT_CELLS"]

#: most cells (held-out rows x labels) of a head's held-out scores that the thread computes ahead and keeps
HELD_OUT_CELLS = 1 << 24


class _Cancelled(Exception):
    """The fits were cancelled between two steps."""


class HeadFits:
    """The fits of the heads ``usable`` on the rows ``fitted`` of ``H`` and ``Y`` and on all of them, and
    the first fits' scores of the rows ``held_out``.

    Parameters
    ----------
    H : csr_matrix (n x F)
        The rows as the heads take them (weighted, unit norm).
    Y : csr_matrix (n x L)
        Their labels.
    fitted, held_out : int arrays
        The rows the first fits see, and the rows they score (sorted).
    usable : tuple of str
        Names of :data:`~embkit.xc.heads.HEADS`.
    params : dict
        ``head_params``.
    workers : int
        Threads of a head's own passes.
    """

    def __init__(self, H, Y, fitted, held_out, usable, params, workers):
        self.H, self.Y, self.fitted, self.held_out = H, Y, fitted, held_out
        self.usable, self.params, self.workers = tuple(usable), params, workers
        self._part, self._sums, self._whole, self._scores = {}, {}, {}, {}
        self._B = H[held_out]
        self._thread = None
        self._error = None
        self._cancel = threading.Event()
        self._scoring_ready = threading.Event()

    # ------------------------------------------------------------------ the steps
    def _step(self):
        if self._cancel.is_set():
            raise _Cancelled()

    def _fit_part(self, name):
        if name not in self._part:
            head = HEADS[name]
            A, Ya = self.H[self.fitted], self.Y[self.fitted]
            self._sums[name] = head.statistics(A, Ya, self.workers)
            self._part[name] = head.fit(A, Ya, self.params, self.workers, statistics=self._sums[name])
        return self._part[name]

    def _fit_whole(self, name):
        if name not in self._whole:
            self._fit_part(name)
            head, total = HEADS[name], self._sums[name]
            if total is not None:       # the fitted rows' sums plus those of every other row
                others = np.setdiff1d(np.arange(self.H.shape[0]), self.fitted)
                total = add_statistics(total, head.statistics(self.H[others], self.Y[others], self.workers))
            self._whole[name] = head.fit(self.H, self.Y, self.params, self.workers, statistics=total)
        return self._whole[name]

    def _score(self, name, rows):
        return HEADS[name].scores(self._fit_part(name), self._B[rows], self.params, self.workers)

    def _run(self):
        try:
            try:
                for name in self.usable:
                    self._step()
                    self._fit_part(name)
                if len(self.held_out) * self.Y.shape[1] <= HELD_OUT_CELLS:
                    for name in self.usable:
                        self._step()
                        self._scores[name] = self._score(name, slice(None))
            finally:
                self._scoring_ready.set()       # the held-out scores can be asked for (or the error seen)
            for name in self.usable:
                self._step()
                self._fit_whole(name)
        except _Cancelled:
            pass
        except BaseException as exc:       # handed to the caller by the next request
            self._error = exc

    # ------------------------------------------------------------------ the interface
    def start(self):
        """Fit every head, on the fitted rows and on every row, on a thread of its own; returns self."""
        self._thread = threading.Thread(target=self._run, name="embkit-xc-heads", daemon=True)
        self._thread.start()
        return self

    @property
    def running(self):
        """Whether the fits run on a thread of their own now (:meth:`start`; until they are joined)."""
        return self._thread is not None

    def _join(self):
        if self._thread is not None:
            self._thread.join()
            self._thread = None
            if self._error is not None:
                raise self._error

    def held_out_scorer(self, name):
        """A function of a slice of the held-out rows giving head ``name``'s scores of them (first fit); with
        the thread running, once its first fits and held-out scores are done (its fits on every row may go
        on)."""
        if self._thread is not None:
            self._scoring_ready.wait()
            if self._error is not None:
                self._join()
        kept = self._scores.get(name)
        if kept is not None:
            return lambda rows: kept[rows]
        self._fit_part(name)
        return lambda rows: self._score(name, rows)

    def whole_state(self, name):
        """The arrays of head ``name`` fitted on every row."""
        self._join()
        return self._fit_whole(name)

    def cancel(self):
        """Stop the thread after its current step and wait for it (nothing raised)."""
        if self._thread is not None:
            self._cancel.set()
            self._thread.join()
            self._thread = None
