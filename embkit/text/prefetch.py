"""Run an iterable in a background thread, a few items ahead of its consumer."""
import queue
import threading

__all__ = ["prefetch"]


def prefetch(iterable, depth=2):
    """Run ``iterable`` in a background thread, ``depth`` items ahead; exceptions re-raise in the caller.

    Encoding holds the GIL only between kernel calls, so reading the corpus overlaps with training.
    """
    q = queue.Queue(maxsize=depth)
    done = object()
    stop = threading.Event()

    def worker():
        try:
            for item in iterable:
                if stop.is_set():
                    return
                q.put((item, None))
        except BaseException as exc:  # handed to the consumer
            q.put((None, exc))
            return
        q.put((done, None))

    thread = threading.Thread(target=worker, name="embkit-reader", daemon=True)
    thread.start()
    try:
        while True:
            item, exc = q.get()
            if exc is not None:
                raise exc
            if item is done:
                return
            yield item
    finally:
        stop.set()
        # unblock a producer waiting on a full queue
        while thread.is_alive():
            try:
                q.get_nowait()
            except queue.Empty:
                thread.join(0.05)
