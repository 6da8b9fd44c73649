"""The models' side of cluster training: one mixin, the only interface a model has to the cluster package."""
from embkit.cluster.client import train_on_cluster
from embkit.cluster.settings import CLUSTER_PARAMS, check_client, check_cluster_params

__all__ = ["ClusterTraining"]


class ClusterTraining:
    """Mixed into a model that trains on a Dask cluster when given ``client=`` (before its base class).

    The model keeps ``client``, ``syncs_per_epoch``, ``reconcile``, ``exchange_share``, ``exchange_bits``,
    ``staleness`` and ``frequent_rows`` as parameters; its
    :meth:`check_params` checks them too, and the base's ``_fit(local, run)`` trains ``run()`` (the keyword
    arguments of :func:`~embkit.cluster.client.train_on_cluster`: ``shards``, ``epochs``, ``alpha``, ...) on
    the cluster here.  A replica is built from the model's public hooks (``replica_spec``,
    ``from_replica_spec``, ``replica_trainer``, and ``initial_tables`` where it draws a fresh model's tables);
    ``class_rows`` tells the client where the frequent rows are.
    """

    #: model parameters of cluster training (runtime settings: not saved with a model)
    CLUSTER_PARAMS = CLUSTER_PARAMS

    def check_params(self):
        super().check_params()
        check_cluster_params(self)

    def cluster_workers(self):
        """The workers of the model's ``client`` as ``{address: threads}`` (ValueError when it has none)."""
        return check_client(self.client)

    def _train_on_cluster(self, run):
        return train_on_cluster(self, self.client, **run)
