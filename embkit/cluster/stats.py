"""What a cluster run exchanged and how long its parts took."""

__all__ = ["ClusterStats"]


class ClusterStats:
    """What a cluster run exchanged and how long it took.

    Attributes
    ----------
    replicas : int
    rounds : int
        Reconciliations done.
    hot_syncs : int
        Reconciliations of the frequent rows within the rounds (:func:`~embkit.cluster.settings.hot_rows`).
    bytes_up, bytes_down : int
        Bytes of changed rows the replicas sent to the owners of those rows, and of merged rows the
        owners sent to the other replicas and to the client, over the run (the frequent rows' reconciliations
        within the rounds included).
    rows_changed : list of int
        Rows (both tables) changed per round that adopted a reconciliation (with ``staleness`` 1 an epoch's
        last round adopts two: theirs together).
    round_seconds, apply_seconds : float
        Wall time of the rounds (training and reconciling) and of the client adding the merged rows to
        its tables, or fetching them.
    fetches : int
        Times the client fetched the reconciled tables from a replica (instead of receiving every round's
        merged rows).
    train_seconds : float
        Time the slowest replica of each round spent in the kernels, summed over rounds (the rest of
        ``round_seconds`` is reconciling and the calls).
    train_cpu_seconds : float
        CPU time of the worker processes while their replicas trained, summed over replicas and rounds.
    pass_seconds, find_seconds, merge_seconds, adopt_seconds, wait_seconds : float
        Time the slowest replica of each round spent finding, merging and adopting rows (of which finding the
        changed rows, merging them and adopting the merged rows: the next three, each the slowest replica's),
        and waiting for the other replicas' rows and for them to take this replica's (their lateness and the
        transfer), summed over rounds.
    call_seconds : float
        Wall time of the rounds outside the slowest replica's call: the calls there and back, and the results'
        transfer to the client.
    lag : list of int
        Per round, the rounds by which the replicas' reconciled tables were behind the round just trained when
        its call returned (0: reconciled; 1 with ``staleness`` 1 but at an epoch's end).
    reopened : list of str
        One entry per replica opened again after its worker was lost.
    """

    def __init__(self, replicas):
        self.replicas = replicas
        self.rounds = self.fetches = self.hot_syncs = 0
        self.bytes_up = self.bytes_down = 0
        self.rows_changed = []
        self.round_seconds = self.apply_seconds = self.train_seconds = self.pass_seconds = 0.0
        self.wait_seconds = self.find_seconds = self.call_seconds = self.train_cpu_seconds = 0.0
        self.merge_seconds = self.adopt_seconds = 0.0
        self.reopened = []
        self.lag = []

    @property
    def bytes_per_round(self):
        """Mean bytes (up and down) of one reconciliation of every row, with the frequent rows' within its round."""
        return (self.bytes_up + self.bytes_down) / max(1, self.rounds)

    def to_dict(self):
        return {"replicas": self.replicas, "rounds": self.rounds, "hot_syncs": self.hot_syncs, "fetches": self.fetches,
                "bytes_up": self.bytes_up, "bytes_down": self.bytes_down, "bytes_per_round": self.bytes_per_round,
                "rows_changed": list(self.rows_changed), "round_seconds": self.round_seconds,
                "apply_seconds": self.apply_seconds, "train_seconds": self.train_seconds,
                "train_cpu_seconds": self.train_cpu_seconds,
                "pass_seconds": self.pass_seconds, "find_seconds": self.find_seconds,
                "merge_seconds": self.merge_seconds, "adopt_seconds": self.adopt_seconds,
                "wait_seconds": self.wait_seconds, "call_seconds": self.call_seconds,
                "lag": list(self.lag), "reopened": list(self.reopened)}
