"""Training on a Dask cluster (the ``[cluster]`` extra; CLUSTER.md).

A model mixes in :class:`ClusterTraining` and trains through it when given ``client=``:

* :mod:`~embkit.cluster.client`: the run on the client (replicas opened, rounds called, faults handled,
  checkpoints written);
* :mod:`~embkit.cluster.replica`: a replica of the tables training its shards on a worker (a Dask actor), and
  :mod:`~embkit.cluster.mailbox`, where its peers' rows arrive;
* :mod:`~embkit.cluster.reconcile`: finding, merging and applying the rows the replicas changed;
* :mod:`~embkit.cluster.plan` (shards dealt to the workers), :mod:`~embkit.cluster.rounds` (where a run's
  epochs are cut into rounds), :mod:`~embkit.cluster.settings` (parameters, defaults, the rounds' plan),
  :mod:`~embkit.cluster.stats`, :mod:`~embkit.cluster.worker`;
* :mod:`~embkit.cluster.local`: a local cluster started with the Dask settings replicas train under.

The shards themselves live beside their readers (``embkit.text.shards``, ``embkit.items.pair_shards``).
"""
from embkit.cluster.settings import (CLUSTER_PARAMS, EXCHANGE_BITS, EXCHANGE_SHARE, FREQUENT_ROWS, LONE_ROUND_UNITS,
                                     RECONCILE, ROUND_SHARE, ROUND_UNITS, STALENESS, SYNCS_PER_EPOCH, check_client)
from embkit.cluster.local import QUIET_DASK, local_client
from embkit.cluster.stats import ClusterStats
from embkit.cluster.trainable import ClusterTraining
from embkit.cluster.worker import ShardReadError, worker_name

__all__ = ["ClusterTraining", "ClusterStats", "ShardReadError", "worker_name", "check_client", "CLUSTER_PARAMS",
           "SYNCS_PER_EPOCH", "ROUND_UNITS", "ROUND_SHARE", "LONE_ROUND_UNITS", "RECONCILE", "EXCHANGE_SHARE",
           "EXCHANGE_BITS", "STALENESS", "FREQUENT_ROWS", "local_client", "QUIET_DASK"]
