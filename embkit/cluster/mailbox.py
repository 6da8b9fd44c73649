"""A replica's mailbox: the rows its peers post in a round, until its training thread takes them."""
import threading

__all__ = ["Mailbox", "RoundAborted", "WAIT_POLL"]

#: seconds between a waiting replica's checks that its run still wants it
WAIT_POLL = 0.5


class RoundAborted(RuntimeError):
    """The round was called off (a peer was lost, or the run closed): the replica is replaced."""


class Mailbox:
    """What the peers post to a replica, by ``(kind, epoch, round)`` and sender, until its training thread
    takes it; :meth:`abort` makes a waiting :meth:`take` raise :class:`RoundAborted`."""

    def __init__(self, wanted=lambda: True):
        self.cond = threading.Condition()
        self.items = {}
        self.aborted = False
        self.wanted = wanted

    def put(self, key, sender, payload):
        with self.cond:
            self.items.setdefault(key, {})[sender] = payload
            self.cond.notify_all()

    def take(self, key, senders):
        """``{sender: payload}`` of ``senders`` under ``key``, waiting until all have posted."""
        with self.cond:
            while True:
                self.check(key)
                got = self.items.get(key, {})
                if all(s in got for s in senders):
                    return self.items.pop(key, got)
                self.cond.wait(WAIT_POLL)

    def check(self, key):
        """Raise :class:`RoundAborted` when the round ``key`` was called off (or the run let the replica go)."""
        if self.aborted or not self.wanted():
            raise RoundAborted("the round %s was called off" % (key,))

    def abort(self):
        with self.cond:
            self.aborted = True
            self.cond.notify_all()
