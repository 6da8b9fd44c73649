"""What Dask's own timers cost a cluster that does nothing: the CPU seconds per second of every process of a
``LocalCluster`` (this process, which holds the scheduler and the nannies, and every worker), started by
``embkit.cluster.local.local_client`` under ``QUIET_DASK`` and under Dask's configuration as it is, one after
the other, ``--repeat`` times.

Usage::

    python -m eval.studies.dask_timers [--workers 2 8] [--seconds 10] [--repeat 2] [--json out.json]

Nothing is asserted; the machine should be otherwise idle.
"""
import argparse
import json
import shlex
import sys
import time

import numpy as np

from eval.studies.cluster_ceiling import process_tree_cpu


def idle_cpu(workers, quiet, seconds):
    """CPU seconds per second of a new cluster of ``workers`` one-thread workers, measured over ``seconds``
    after it has settled."""
    from embkit.cluster.local import local_client

    with local_client(workers, quiet=quiet):
        time.sleep(3)
        start = process_tree_cpu()
        time.sleep(seconds)
        return (process_tree_cpu() - start) / seconds


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workers", type=int, nargs="+", default=[2, 8])
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--json", default=None, metavar="FILE")
    args = p.parse_args(argv)
    runs = []
    for _ in range(args.repeat):
        for n in args.workers:
            for quiet in (True, False):
                used = idle_cpu(n, quiet, args.seconds)
                runs.append({"workers": n, "config": "QUIET_DASK" if quiet else "Dask's defaults",
                             "cpu_per_second": used})
                print("%d workers, %-15s %.3f CPU s a second" % (n, runs[-1]["config"] + ":", used), flush=True)
    print("\n| workers | Dask's configuration | idle CPU s a second (mean, runs) |\n|---:|---|---|")
    for n in args.workers:
        for config in ("QUIET_DASK", "Dask's defaults"):
            got = [r["cpu_per_second"] for r in runs if r["workers"] == n and r["config"] == config]
            print("| %d | %s | %.3f (%s) |" % (n, config, np.mean(got), ", ".join("%.3f" % g for g in got)))
    command = "python -m eval.studies.dask_timers %s" % " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    print("\n`%s`" % command)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"command": command, "runs": runs}, fh, indent=1)


if __name__ == "__main__":
    main()
