"""Ctrl-C during training: the first one stops the run at the end of the current chunk, a second one at once."""
import contextlib
import signal
import threading

__all__ = ["TrainingInterrupted", "StopRequest", "stop_on_sigint"]


class TrainingInterrupted(KeyboardInterrupt):
    """Training stopped at a chunk boundary after Ctrl-C; the tables are as the last chunk left them.

    Attributes
    ----------
    where : str
        Where the run stopped ("training interrupted in epoch 2 of 5 at 31.0% of the run").
    checkpoint : str or None
        The checkpoint written on the way out (None when the model has no ``checkpoint_dir``).
    """

    def __init__(self, where, checkpoint=None, hint=""):
        super().__init__(where + hint)
        self.where, self.checkpoint = where, checkpoint

    def __str__(self):
        return str(self.args[0]) if self.args else "training interrupted"


class StopRequest:
    """Set by the SIGINT handler of :func:`stop_on_sigint`; read by the epoch loop between chunks."""

    def __init__(self):
        self.requested = False


@contextlib.contextmanager
def stop_on_sigint():
    """Within this block the first SIGINT only sets ``StopRequest.requested``; the second raises
    KeyboardInterrupt as usual (files being written are protected by their atomic writes).

    Signal handlers belong to the main thread: elsewhere the block changes nothing (Ctrl-C keeps its
    default behaviour).  The previous handler is restored on exit.
    """
    stop = StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    previous = signal.getsignal(signal.SIGINT)

    def handler(signum, frame):
        if stop.requested:
            signal.signal(signal.SIGINT, previous if callable(previous) else signal.default_int_handler)
            raise KeyboardInterrupt
        stop.requested = True

    try:
        signal.signal(signal.SIGINT, handler)
    except ValueError:      # not in the main interpreter thread after all
        yield stop
        return
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)
