"""What every reproduction of ``eval.repro.reproduce`` shares: data paths, the JSON record, progress, plots."""
import json
import os
import platform
import time

from embkit.core.atomic import atomic_path
from eval.paths import shared_data

#: where each shared dataset comes from, for the message when one is missing
SOURCES = {
    "corpora/gcide.txt.gz": "the GCIDE corpus (text8-style normalised); any text8-like file works with --corpus",
    "movielens/ml-100k": "https://files.grouplens.org/datasets/movielens/ml-100k.zip (unzip into movielens/)",
    "movielens/ml-latest-small": "https://files.grouplens.org/datasets/movielens/ml-latest-small.zip "
                                 "(unzip into movielens/)",
    "extreme-classification": "Bibtex and Delicious from the Extreme Classification Repository "
                              "(http://manikvarma.org/downloads/XC/XMLRepository.html)",
}


class MissingData(SystemExit):
    """A dataset is not where it should be; the message says where to get it."""


def need(relative):
    """The path of a shared dataset, or MissingData naming the path and where to get the data."""
    path = shared_data(relative)
    if not os.path.exists(path):
        raise MissingData("missing dataset %s\n  get it from: %s\n  and set EMBKIT_SHARED_DATA to the folder "
                          "that holds %s" % (path, SOURCES.get(relative, "see the reproduction's docstring"),
                                              relative))
    return path


def _cpu_seconds():
    """User and system CPU seconds of this process and of its finished children."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class Record:
    """The numbers of one reproduction, written to ``path`` (atomically) after every addition.

    An interrupted run keeps what finished: every ``add`` rewrites the file.  With ``resume`` the results of
    an existing file are kept (a reproduction then runs only what they lack) and its wall and CPU times are
    carried on.  ``cpu_seconds`` is the CPU time of the process and of the child processes it waited for (every
    thread; more than the wall time when the kernels use both cores, less when the machine is shared).
    """

    def __init__(self, path, name, quick, argv, resume=False):
        self.path = path
        self.start, self.cpu_start = time.perf_counter(), _cpu_seconds()
        self.before = self.cpu_before = 0.0
        self.data = {"reproduction": name, "quick": quick,
                     "command": "python -m eval.repro.reproduce " + " ".join(argv),
                     "machine": "%s, %d cores (shared VM)" % (platform.processor() or platform.machine(),
                                                             os.cpu_count()),
                     "complete": False, "results": {}}
        if resume and os.path.exists(path):
            with open(path) as fh:
                old = json.load(fh)
            self.before = old.get("wall_seconds", 0.0)
            self.cpu_before = old.get("cpu_seconds", 0.0)
            self.data["results"] = old.get("results", {})
            self.data["resumed_from"] = old.get("resumed_from", []) + [
                {"command": old.get("command"), "wall_seconds": self.before}]
        self.save()

    def add(self, key, value):
        self.data["results"][key] = value
        self.save()

    def get(self, key, default=None):
        return self.data["results"].get(key, default)

    def finish(self):
        self.data["complete"] = True
        self.save()

    def save(self):
        self.data["wall_seconds"] = round(self.before + time.perf_counter() - self.start, 1)
        self.data["cpu_seconds"] = round(self.cpu_before + _cpu_seconds() - self.cpu_start, 1)
        os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
        with atomic_path(self.path) as tmp:
            with open(tmp, "w") as fh:
                json.dump(self.data, fh, indent=1, default=float)


_T0 = time.perf_counter()


def say(message):
    """A progress line with the time since the start."""
    print("[%6.0fs] %s" % (time.perf_counter() - _T0, message), flush=True)


def pyplot():
    """matplotlib's pyplot on the Agg backend; SystemExit naming the extra when it is not installed."""
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("the plots need matplotlib: pip install 'embkit[plots]' (the JSON is written)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save_figure(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    say("plot written to %s" % path)


def mean_spread(values):
    """``(mean, standard deviation)`` of a list (spread 0 for one value)."""
    import numpy as np
    v = np.asarray([x for x in values if x is not None], dtype=float)
    if len(v) == 0:
        return None, None
    return float(v.mean()), float(v.std(ddof=1)) if len(v) > 1 else 0.0


def by_method(runs, methods):
    """``(method, its runs)`` for every method of ``methods`` (in that order) that has runs."""
    for method in methods:
        mine = [r for r in runs if r["method"] == method]
        if mine:
            yield method, mine
