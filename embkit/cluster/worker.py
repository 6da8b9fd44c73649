"""What code running on a Dask worker needs to know about where it runs."""

__all__ = ["ShardReadError", "worker_name", "wanted"]


class ShardReadError(OSError):
    """A shard a worker could not read; the message names the file and the worker."""


def worker_name():
    """The address of the Dask worker running the current task ("this process" outside a worker)."""
    try:
        from distributed import get_worker
        return get_worker().address
    except (ImportError, ValueError):
        return "this process"


def wanted():
    """A check that the actor of the current task is still held on its worker (its run has not let it go);
    always true outside a worker."""
    try:
        from distributed import get_worker
        worker = get_worker()
        key = worker.get_current_task()
    except (ImportError, ValueError):
        return lambda: True
    return lambda: key in worker.state.actors
