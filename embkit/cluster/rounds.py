"""The rounds of a cluster run: where each epoch is cut, so that the replicas reconcile between the pieces.

Every round trains the same share of every replica's shards, so that at each reconciliation every replica's
progress (and learning rate) is the run's.  A plan holds, per epoch, the round boundaries as positions on a
common ``scale``: in a round from ``start`` to ``stop`` a shard of ``u`` units trains its units
``u * start // scale`` to ``u * stop // scale``.

* :meth:`RoundPlan.uniform`: ``k`` rounds an epoch, each ``1/k`` of it (``syncs_per_epoch``, and a lone
  replica's rounds).
* :meth:`RoundPlan.shrinking`: the default of two replicas.  Each round trains a share of what is
  left of the run (at least a fixed number of units per replica), so the rounds are long at the start and
  shrink to that floor at the end.  The last rounds decide the quality: for as many rounds, rounds
  shrinking towards the end kept more of one process's quality than even rounds, and rounds growing towards
  the end the least (CLUSTER.md); what the replicas drift apart early, later training mends.  A large
  corpus so trains in far fewer rounds than at the floor's length, and a small one (a few floors' worth of
  units per replica) in rounds of the floor's length.

A round never straddles an epoch (an epoch's end is a reconciliation, for ``on_epoch`` and validation), and
a round that would leave less than half a round before its epoch's end takes that rest too.
"""
import math
from typing import NamedTuple

__all__ = ["RoundPlan", "RoundSpan"]


class RoundSpan(NamedTuple):
    """One round, as a replica is asked to train it: round ``index`` of ``epoch``, from ``start`` to ``stop``
    on ``scale`` (see the module docstring); ``ordinal`` is its number in the run (its random streams'),
    ``closes_epoch`` whether it is its epoch's last."""
    epoch: int
    index: int
    start: int
    stop: int
    scale: int
    ordinal: int
    closes_epoch: bool

    def units(self, units):
        """``(first, stop)``: the units ``[first, stop)`` of a shard of ``units`` units that the round trains."""
        return units * self.start // self.scale, units * self.stop // self.scale

    def part(self, k, parts):
        """Part ``k`` of the round cut into ``parts`` equal parts, as a span of the same round (the same
        ``ordinal``; ``closes_epoch`` only for the last part): its units of any shard lie within the round's,
        and the parts' units join up to them."""
        width = self.stop - self.start
        return self._replace(start=self.start * parts + k * width, stop=self.start * parts + (k + 1) * width,
                             scale=self.scale * parts, closes_epoch=self.closes_epoch and k == parts - 1)


class RoundPlan:
    """The rounds of every epoch of a run (see the module docstring).

    Parameters
    ----------
    cuts : list of sequences of int
        Per epoch, the positions from 0 to ``scale`` (increasing) where its rounds begin and end.
    scale : int
        What a whole epoch is on the cuts' scale.
    """

    def __init__(self, cuts, scale):
        self.scale = int(scale)
        self.cuts = [tuple(int(c) for c in epoch) for epoch in cuts]
        if self.scale < 1 or not self.cuts:
            raise ValueError("a round plan needs a positive scale and an epoch, got scale %r and %d epochs"
                             % (scale, len(self.cuts)))
        for e, epoch in enumerate(self.cuts):
            if len(epoch) < 2 or epoch[0] != 0 or epoch[-1] != self.scale or \
                    any(b <= a for a, b in zip(epoch, epoch[1:])):
                raise ValueError("epoch %d's round cuts must rise from 0 to %d, got %r" % (e, self.scale, epoch))
        self.offsets = [0]
        for epoch in self.cuts:
            self.offsets.append(self.offsets[-1] + len(epoch) - 1)

    @classmethod
    def uniform(cls, rounds, epochs):
        """``rounds`` equal rounds in each of ``epochs`` epochs."""
        rounds = max(1, int(rounds))
        return cls([range(rounds + 1)] * max(1, int(epochs)), rounds)

    @classmethod
    def shrinking(cls, units, epochs, least, share):
        """Rounds that each train ``share`` of what is left of the run, and at least ``least`` units (the
        whole rest when less is left), on a replica of ``units`` units an epoch (the largest replica's)."""
        units, epochs, least = int(units), max(1, int(epochs)), max(1, int(least))
        if units < 1:
            return cls.uniform(1, epochs)
        total = units * epochs
        cuts = [[0] for _ in range(epochs)]
        done = 0
        while done < total:
            size = max(least, math.ceil(share * (total - done)))
            epoch = done // units
            epoch_end = (epoch + 1) * units
            stop = min(done + size, epoch_end)
            if epoch_end - stop < size // 2:
                stop = epoch_end
            cuts[epoch].append(stop - epoch * units)
            done = stop
        if all(len(epoch) == 2 for epoch in cuts):     # an epoch a round: the even plan of one round an epoch
            return cls.uniform(1, epochs)
        return cls(cuts, units)

    def __eq__(self, other):
        return isinstance(other, RoundPlan) and (self.cuts, self.scale) == (other.cuts, other.scale)

    def __repr__(self):
        return "RoundPlan(%d rounds in %d epochs)" % (self.offsets[-1], len(self.cuts))

    @property
    def epochs(self):
        """Epochs of the run."""
        return len(self.cuts)

    @property
    def even(self):
        """The rounds an epoch of an even plan (:meth:`uniform`'s), else None."""
        # rising cuts from 0 to the scale, one more than the scale: every step of it
        return self.scale if all(len(epoch) == self.scale + 1 for epoch in self.cuts) else None

    @property
    def total(self):
        """Rounds of the whole run."""
        return self.offsets[-1]

    def rounds(self, epoch):
        """Rounds of ``epoch``."""
        return len(self.cuts[epoch]) - 1

    def ordinal(self, epoch, index):
        """The number in the run of round ``index`` of ``epoch`` (from 0)."""
        return self.offsets[epoch] + index

    def span(self, epoch, index):
        """The :class:`RoundSpan` of round ``index`` of ``epoch``."""
        cuts = self.cuts[epoch]
        return RoundSpan(epoch, index, cuts[index], cuts[index + 1], self.scale, self.ordinal(epoch, index),
                         index == len(cuts) - 2)

    def record(self):
        """The plan as JSON (what a checkpoint keeps: a resumed run trains the same rounds)."""
        return {"scale": self.scale, "cuts": [list(epoch) for epoch in self.cuts]}

    @classmethod
    def from_record(cls, record):
        """The plan of :meth:`record`'s JSON."""
        return cls(record["cuts"], record["scale"])
