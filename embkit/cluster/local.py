"""A Dask cluster of worker processes on this machine, started the way a run of replicas wants it.

A Dask worker process keeps a few housekeeping timers of its own: the statistical profiler sampling the
threads that run tasks (an actor's calls among them), the event loop's watchdog tick, the memory monitor and
the system monitor.  Each wakes the process many times a second, every process of the cluster (the client's
scheduler too), and where the workers outnumber the cores those wake-ups take turns with the replicas'
kernels.  :data:`QUIET_DASK` spaces them out; a run's results do not depend on them (CLUSTER.md, "Dask's own
timers").  :func:`local_client` starts a ``LocalCluster`` under them (the CLI's ``--scheduler local:N``, the
benchmarks); a cluster started by hand takes them from its Dask configuration (``dask.config.set`` before it
starts, or the workers' YAML).
"""
import contextlib

from embkit.cluster.settings import distributed_module

__all__ = ["QUIET_DASK", "local_client"]

#: Dask configuration of the clusters embkit starts: no statistical profiler (its samples feed only the
#: dashboard's profile page), the event loop's tick and the memory monitor once a second (the tick only warns
#: of a blocked loop; a replica's memory is its tables, which Dask neither spills nor pauses for), the system
#: monitor every two seconds (the dashboard's graphs)
QUIET_DASK = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.admin.system-monitor.interval": "2s",
}


@contextlib.contextmanager
def local_client(workers, threads=1, quiet=True):
    """A ``dask.distributed.Client`` of a new ``LocalCluster`` of ``workers`` worker processes with ``threads``
    threads each (no dashboard), closed on exit; ``quiet``: started under :data:`QUIET_DASK` (else Dask's
    configuration as it is)."""
    import dask
    distributed = distributed_module()
    with contextlib.ExitStack() as stack:
        with dask.config.set(QUIET_DASK if quiet else {}):
            cluster = stack.enter_context(distributed.LocalCluster(
                n_workers=workers, threads_per_worker=threads, processes=True, dashboard_address=None))
            client = stack.enter_context(distributed.Client(cluster))
        yield client
