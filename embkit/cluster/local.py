"""A Dask cluster of worker processes on this machine, started the way a run of replicas wants it.

A Dask worker process keeps housekeeping timers of its own: the statistical profiler sampling the threads
that run tasks (an actor's calls among them), the event loop's watchdog tick, the memory monitor and the
system monitor.  They wake every process of the cluster (the client's scheduler too) many times a second,
and where the workers outnumber the cores those wake-ups take turns with the replicas' kernels; without a
dashboard the profiler's and the system monitor's records are read by nobody.  :data:`QUIET_DASK` turns the
profiler off and spaces out the others but the memory monitor; a run's results do not depend on them
(CLUSTER.md, "Dask's own timers").  :func:`local_client` starts a ``LocalCluster`` under them (the CLI's
``--scheduler local:N``, the benchmarks); a cluster started by hand takes them from its Dask configuration
(``dask.config.set`` before it starts, or the workers' YAML).
"""
import contextlib

from embkit.cluster.settings import distributed_module

__all__ = ["QUIET_DASK", "local_client"]

#: Dask configuration of the clusters embkit starts (without a dashboard): no statistical profiler (its samples
#: feed only the dashboard's profile page), the event loop's tick once a second (it only warns of a loop
#: blocked for seconds), the system monitor every two seconds (the dashboard's graphs).  The memory monitor
#: keeps Dask's interval: it enforces the workers' memory limit
QUIET_DASK = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "2s",
}


@contextlib.contextmanager
def local_client(workers, threads=1, quiet=True):
    """A ``dask.distributed.Client`` of a new ``LocalCluster`` of ``workers`` worker processes with ``threads``
    threads each (no dashboard), closed on exit; ``quiet``: started under :data:`QUIET_DASK` (else Dask's
    configuration as it is)."""
    distributed = distributed_module()     # an ImportError saying how to install it, before dask is asked for
    import dask
    with contextlib.ExitStack() as stack:
        with dask.config.set(QUIET_DASK if quiet else {}):
            cluster = stack.enter_context(distributed.LocalCluster(
                n_workers=workers, threads_per_worker=threads, processes=True, dashboard_address=None))
            client = stack.enter_context(distributed.Client(cluster))
        yield client
