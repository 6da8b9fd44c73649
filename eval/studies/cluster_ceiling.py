"""How fast two single-thread workers can train against one on this machine, whatever carries the exchange.

Two measurements bound the speed-up of cluster training before a byte moves:

1. **Replicas without an exchange.** gcide cut into ``--shards`` files (as ``eval.bench.cluster``); the
   one-worker replica (every shard) runs alone in a process, the two replicas of a two-worker run (half the
   shards each) run at once in two processes.  Each is embkit's own replica (``embkit.cluster.replica``)
   running ``--rounds`` rounds an epoch for ``--epochs`` epochs, and doing in each round only what every
   design that reconciles rows does on a replica: train, find the rows it changed, take in the merged
   rows (here its own, as one replica's merge is), with ``--share`` as ``exchange_share``.  The two-worker run
   is made twice: the replicas free, and in step (each waiting for the other after every round, as
   synchronous rounds do).  No Dask, no transfer, no merge of another replica's
   rows: the two-worker run's speed-up here is above anything a real exchange can give.
2. **What Dask spends on a round.**  On a ``LocalCluster`` of two single-thread worker processes, started as
   embkit starts its own (``embkit.cluster.local.local_client``): the wall
   and CPU time (all its processes: client, scheduler, nannies, workers) of one round, carrying no data and
   carrying ``--payload-mb`` each way, in three ways: a round trip of two tasks from the client (the payload
   scattered to both workers and one returned by each: embkit's first exchange), the client calling an
   actor on each worker at once (the payload each way: embkit's exchange while the client merged), and both
   workers calling an actor at once from long-running tasks (a peer's mailbox: embkit's exchange now, the
   replicas posting their rows to each other); and the CPU time of the cluster doing nothing.

The bounds printed for each ``--rounds`` (``n`` round trips in the run, ``w`` / ``c`` a round trip's wall /
CPU time, ``i`` the idle CPU per second; ``T1`` / ``T2`` the no-exchange times of one / two workers):

* rounds that wait for their exchange take at least ``T1 + n w`` and ``T2 + n w``;
* rounds that overlap their exchange with training: one worker's spare core can hide Dask's work, so it takes
  at least ``T1``; two workers keep both cores busy, so every CPU second Dask spends delays them by at least
  half a second: ``T2 + (n c + T2 i) / 2``.

"At most" is the larger of the two speed-ups: no design that moves each round that way gets above it.

Nothing is asserted; timings need the machine to itself.

Usage::

    python -m eval.studies.cluster_ceiling [--corpus FILE] [--shards 8] [--epochs 5] [--rounds 32 16 4 1]
                                           [--repeat 3] [--payload-mb 1] [--share 1]
"""
import argparse
import glob
import os
import multiprocessing
import shlex
import sys
import tempfile
import time

import numpy as np

from eval.repro.common import need


def replica_rounds(spec, files, rounds, epochs, start, share=1.0, in_step=False):
    """Run one replica over ``files``: ``(seconds, kernel seconds, words)`` after ``start`` (a barrier);
    ``in_step``: every replica waits at ``start`` after each round for the others (rounds in step, as
    synchronous rounds are, with nothing exchanged)."""
    from embkit.cluster import worker_name
    from embkit.cluster.replica import Replica
    from embkit.cluster.rounds import RoundPlan
    from embkit.text.shards import TextShard
    worker_name()       # imports what a replica's result names, before the clock
    W_in, W_out = spec[3]
    replica = Replica(spec[:3], [TextShard(f, 0) for f in files], W_in, W_out,
                      {"epochs": epochs, "alpha": 0.05, "min_alpha": 0.0001, "mode": "sum", "share": share})
    start.wait()
    clock = time.perf_counter()
    kernel, words = 0.0, 0
    plan = RoundPlan.uniform(rounds, epochs)
    for epoch in range(epochs):
        for r in range(rounds):
            # a replica alone merges its own rows (its delta) and takes them in: nothing crosses a process
            result = replica.train_round(plan.span(epoch, r))
            kernel += result["seconds"]
            words += result["units"]
            if in_step:
                start.wait()
    replica.close()
    return time.perf_counter() - clock, kernel, words


def _child(spec, files, rounds, epochs, start, out, share, in_step):
    out.put(replica_rounds(spec, files, rounds, epochs, start, share, in_step))


def run_replicas(spec, groups, rounds, epochs, share=1.0, in_step=False):
    """The replicas of ``groups`` (lists of files) at once, one process each; their results."""
    ctx = multiprocessing.get_context("spawn")
    start, out = ctx.Barrier(len(groups)), ctx.Queue()
    procs = [ctx.Process(target=_child, args=(spec, files, rounds, epochs, start, out, share, in_step))
             for files in groups]
    for p in procs:
        p.start()
    results = [out.get() for _ in procs]
    for p in procs:
        p.join()
    return results


def _echo(data, n_bytes):
    """Task: ``n_bytes`` made on the worker, to bring back."""
    return np.ones(n_bytes, np.uint8)


class Mailbox:
    """An actor that answers every call with ``n_bytes`` (a parameter server's or a peer's side of a round)."""

    def exchange(self, data, n_bytes):
        return np.ones(n_bytes, np.uint8)


def _call_actor(actor, n_bytes, calls):
    """Task: ``calls`` synchronous calls of ``actor.exchange`` carrying ``n_bytes`` each way."""
    payload = np.ones(n_bytes, np.uint8) if n_bytes else None
    for _ in range(calls):
        actor.exchange(payload, n_bytes).result()
    return calls


def process_tree_cpu():
    """CPU seconds (user and system) used so far by this process and every process under it (a
    ``LocalCluster``'s nannies and workers)."""
    import psutil

    me = psutil.Process()
    return sum(sum(p.cpu_times()[:2]) for p in [me] + me.children(recursive=True))


def cluster_costs(payloads_mb, round_trips, idle_seconds):
    """A two-worker LocalCluster's idle CPU per second, and ``{(kind, payload MB): (wall, CPU)}`` of one round:
    kind "tasks", a round trip of two tasks that get the payload (scattered to both) and return one each;
    kind "client to actors", the client calling an actor on each worker at once, the payload each way
    (embkit's exchange); kind "actor", both workers calling an actor (on the first of them) at once, the
    payload each way (a parameter server's or a peer's mailbox)."""
    from embkit.cluster.local import local_client

    cpu = process_tree_cpu
    with local_client(2) as client:
        workers = sorted(client.nthreads())
        client.gather([client.submit(_echo, None, 0, workers=[w], pure=False) for w in workers])
        actor = client.submit(Mailbox, workers=[workers[0]], actor=True).result()
        mailboxes = [client.submit(Mailbox, workers=[w], actor=True).result() for w in workers]
        time.sleep(2)
        used = cpu()
        time.sleep(idle_seconds)
        idle = (cpu() - used) / idle_seconds
        costs = {}
        for mb in payloads_mb:
            n_bytes = int(mb * 1e6)
            used, clock = cpu(), time.perf_counter()
            for _ in range(round_trips):
                data = client.scatter(np.ones(n_bytes, np.uint8), workers=workers, broadcast=True, hash=False) \
                    if n_bytes else None
                client.gather([client.submit(_echo, data, n_bytes, workers=[w], pure=False) for w in workers])
                del data
            costs["tasks", mb] = ((time.perf_counter() - clock) / round_trips, (cpu() - used) / round_trips)
        for mb in payloads_mb:
            n_bytes = int(mb * 1e6)
            payload = np.ones(n_bytes, np.uint8) if n_bytes else None
            used, clock = cpu(), time.perf_counter()
            for _ in range(round_trips):
                [call.result() for call in [box.exchange(payload, n_bytes) for box in mailboxes]]
            costs["client to actors", mb] = ((time.perf_counter() - clock) / round_trips, (cpu() - used) / round_trips)
        for mb in payloads_mb:
            used, clock = cpu(), time.perf_counter()
            client.gather([client.submit(_call_actor, actor, int(mb * 1e6), round_trips, workers=[w], pure=False)
                           for w in workers])
            costs["actor", mb] = ((time.perf_counter() - clock) / round_trips, (cpu() - used) / round_trips)
    return idle, costs


def bound(t1, t2, n, wall, cpu, idle):
    """The larger speed-up of a design waiting for its ``n`` round trips and one overlapping them."""
    return max((t1 + n * wall) / (t2 + n * wall), t1 / (t2 + (n * cpu + t2 * idle) / 2))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", default=None, help="default: the shared data's corpora/gcide.txt.gz")
    p.add_argument("--shards", type=int, default=8)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--rounds", type=int, nargs="+", default=[32, 16, 4, 1])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--round-trips", type=int, default=100)
    p.add_argument("--share", type=float, default=1.0, help="the replicas' exchange_share (the rows they choose)")
    p.add_argument("--payload-mb", type=float, default=1.0,
                   help="data a round trip carries down to both workers and up from each (MB)")
    args = p.parse_args(argv)
    from embkit import Word2Vec
    from eval.bench.cluster import params, write_shards

    corpus = args.corpus or need("corpora/gcide.txt.gz")
    idle, costs = cluster_costs([0.0, args.payload_mb], args.round_trips, 5.0)
    dask = "Dask, LocalCluster of 2 single-thread workers: idle %.0f ms CPU per second; a round %s" % (
        1e3 * idle, "; ".join("through %s carrying %g MB: %.1f ms wall, %.1f ms CPU"
                              % (kind, mb, 1e3 * w, 1e3 * c) for (kind, mb), (w, c) in costs.items()))
    print(dask, flush=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="embkit-ceiling-") as tmp:
        files = sorted(glob.glob(os.path.join(write_shards(corpus, tmp, args.shards), "*.txt")))
        model = Word2Vec(**dict(params(argparse.Namespace(epochs=args.epochs, alpha=0.05), 1, 1), progress=False))
        model.build_vocab(corpus_file=corpus)
        spec = model.replica_spec() + ((model.W_in, model.W_out),)
        half = len(files) // 2
        for rounds in args.rounds:
            for rep in range(args.repeat):
                (t1, k1, _), = run_replicas(spec, [files], rounds, args.epochs, args.share)
                two = run_replicas(spec, [files[:half], files[half:]], rounds, args.epochs, args.share)
                t2, k2 = max(r[0] for r in two), max(r[1] for r in two)
                t2s = max(r[0] for r in run_replicas(spec, [files[:half], files[half:]], rounds, args.epochs,
                                                     args.share, in_step=True))
                n = rounds * args.epochs
                limits = [bound(t1, t2, n, wall, cpu, idle) for wall, cpu in costs.values()]
                row = (rounds, rep + 1, t1, k1, t2, k2, t1 / t2, k1 / k2, t2s, t1 / t2s) + tuple(limits)
                rows.append(row)
                print("  %d rounds an epoch, run %d: 1 worker %.2f s (kernels %.2f), 2 workers %.2f s (kernels %.2f): "
                      "%.2fx (kernels %.2fx); 2 workers in step %.2f s: %.2fx; at most " % row[:10]
                      + ", ".join("%.2fx (%s, %g MB)" % (b, kind, mb) for b, (kind, mb) in zip(limits, costs)),
                      flush=True)
    print("\n| rounds an epoch | run | 1 worker: s (kernels) | 2 workers: s (kernels) | speed-up without exchange "
          "(kernels alone) | 2 workers in step: s, speed-up | "
          + " | ".join("at most: %s, %g MB" % key for key in costs)
          + " |")
    print("|---:|---:|---:|---:|---:|---:|" + "---:|" * len(costs))
    for r in rows:
        print("| %d | %d | %.2f (%.2f) | %.2f (%.2f) | %.2fx (%.2fx) | %.2f, %.2fx | " % r[:10]
              + " | ".join("%.2fx" % b for b in r[10:]) + " |")
    print("\n" + dask)
    print("\nCommand: python -m eval.studies.cluster_ceiling "
          + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:])))


if __name__ == "__main__":
    main()
