"""Peers of the extreme-classification benchmarks: napkinXC (PLT, OVR), omikuji (Parabel, Bonsai), PECOS
XR-Linear and fastText's supervised classifier.

napkinXC (:func:`run_napkinxc`) trains in this process on the same sparse matrices as embkit (features as
read, labels as lists), with the model's documented defaults and ``threads``; training and prediction of the
whole test set are timed (wall clock).  omikuji (:func:`run_omikuji`) reads its training set from a file
written beforehand (not timed) and predicts row by row through its Python API; PECOS XR-Linear
(:func:`run_pecos`) runs in a child process whose interpreter may be that of an environment of its own.

Every point becomes one fastText training line: its labels as ``__label__<id>`` and its features as
tokens ``f<id>`` (once each for binary features; with ``--weighting repeat`` a feature of value ``v``
is repeated ``max(1, round(v * scale))`` times, ``scale`` making the median value 1).  Points without
labels are left out of training (fastText needs a label per line).  ``fasttext.train_supervised``
learns an embedding per token (``wordNgrams=1``, ``minCount=1``, no n-gram buckets), averages them
and scores labels with a linear layer, trained with
``--loss`` (``ova``: one-vs-all binary logistic losses, the multi-label one; ``softmax``: one label
drawn per step; ``ns``; ``hs``).  The top-5 labels of every test point are scored with
:func:`embkit.evaluation.xc.xc_metrics`: P@k, nDCG@k, and PSP@k with the propensities of the
training labels (the repository's ``A``, ``B`` for the set).

Temporary files go to a temporary folder that is removed afterwards.  fastText runs in a child
process in which glibc zero-fills every allocation (``MALLOC_PERTURB_=255``, see
:func:`train_and_predict`): the build used here otherwise trains from stale memory and fails with
"Encountered NaN" on most sets.  Prints a markdown table with
the settings, the metrics (percent) and the train/predict seconds (wall clock; CPU seconds of all
threads in brackets), then the command.

Usage::

    python -m eval.peers.xc --dataset bibtex --loss ova
    python -m eval.peers.xc --dataset delicious --loss softmax,ova --epoch 10 --lr 0.1 --dim 200
    python -m eval.peers.xc --train a.txt --test b.txt --loss ova       # any XC/svmlight files
    python -m eval.peers.xc --dataset delicious --loss plt,ovr         # napkinXC, its defaults

The sets are read with :func:`embkit.xc.datasets.load_xc_dataset` from ``--root`` (default: the
``extreme-classification`` folder of the shared data, ``$EMBKIT_SHARED_DATA`` or ``../shared/data``
next to the repository, as the tests find it).
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

from embkit.evaluation.xc import xc_metrics
from embkit.xc.data import read_xc
from embkit.xc.datasets import load_xc_dataset, xc_dataset_info
from eval.paths import REPO_ROOT, shared_data

LABEL = "__label__"
KS = (1, 3, 5)
#: Learning rates tried in turn when none is given (the next after a divergence).
AUTO_LRS = (0.5, 0.25, 0.1, 0.05)
#: Environment of the fastText child: glibc fills every allocation with this byte's complement, zero
#: (an mmap threshold of 4 KB was not enough, and a threshold of 0 made training up to 6 times slower).
CHILD_ENV = {"MALLOC_PERTURB_": "255"}
#: The module that trains and predicts in the child process.
CHILD = "eval.peers._fasttext_child"


def fasttext_lines(data, weighting="binary", scale=1.0, with_labels=True, skip_unlabelled=False):
    """Yield one fastText line (no newline) per point of `data`.

    Parameters
    ----------
    data : embkit.xc.data.XCData
    weighting : {"binary", "repeat"}
        ``binary``: each stored feature once; ``repeat``: ``max(1, round(v * scale))`` times.
    scale : float
        Multiplier of the values for ``repeat``.
    with_labels : bool
        Start the line with the point's ``__label__`` tokens.
    skip_unlabelled : bool
        Leave out points without labels.
    """
    X, Y = data.X, data.Y
    for r in range(data.n_points):
        labels = Y.indices[Y.indptr[r]:Y.indptr[r + 1]]
        if skip_unlabelled and not len(labels):
            continue
        ids = X.indices[X.indptr[r]:X.indptr[r + 1]]
        if weighting == "repeat":
            counts = np.maximum(1, np.rint(X.data[X.indptr[r]:X.indptr[r + 1]] * scale)).astype(np.int64)
            ids = np.repeat(ids, counts)
        words = ["f%d" % i for i in ids]
        if with_labels:
            words = [LABEL + str(lab) for lab in labels] + words
        yield " ".join(words)


def repeat_scale(data):
    """Scale that maps the median stored feature value to 1 (for ``weighting="repeat"``)."""
    values = data.X.data[data.X.data > 0]
    return 1.0 / float(np.median(values)) if len(values) else 1.0


def write_lines(path, lines):
    with open(path, "w", encoding="ascii") as fh:
        for line in lines:
            fh.write(line + "\n")


def train_and_predict(train, test, k, weighting="binary", **params):
    """Train fastText on `train` and predict the top-`k` labels of the points of `test`.

    The data go through files in a temporary folder; fastText runs in a child process in which
    glibc zero-fills every allocation (``MALLOC_PERTURB_=255``): the fastText build used here
    otherwise picks up stale heap contents (weights like 1e9 in the learned input embeddings, and
    "Encountered NaN" at any learning rate on most sets).  The child checks the learned input
    weights and fails if they are still corrupted.

    Returns
    -------
    (numpy.ndarray, tuple, tuple)
        Label ids of shape (n_test, k), best first, -1 where fewer were returned; the wall-clock
        and CPU seconds of training and of prediction.

    Raises
    ------
    RuntimeError
        With fastText's message when training fails (e.g. diverges).
    """
    scale = repeat_scale(train)
    with tempfile.TemporaryDirectory(prefix="xc-fasttext-") as workdir:
        paths = [os.path.join(workdir, name) for name in ("train.txt", "test.txt", "top.txt")]
        write_lines(paths[0], fasttext_lines(train, weighting, scale, skip_unlabelled=True))
        write_lines(paths[1], fasttext_lines(test, weighting, scale, with_labels=False))
        env = dict(os.environ, **CHILD_ENV)
        proc = subprocess.run([sys.executable, "-m", CHILD] + paths + [json.dumps(dict(params, k=k))], env=env,
                              capture_output=True, text=True, cwd=REPO_ROOT)
        if proc.returncode:
            raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "fastText failed")
        seconds = json.loads(proc.stdout.strip().splitlines()[-1])
        top = np.full((test.n_points, k), -1, dtype=np.int64)
        with open(paths[2], encoding="ascii") as fh:
            for r, line in enumerate(fh):
                ids = [int(t) for t in line.split()]
                top[r, :len(ids)] = ids
    return top, tuple(seconds["train"]), tuple(seconds["predict"])


def run_fasttext(train, test, loss="ova", epoch=25, lr=None, dim=100, thread=2, seed=0, neg=5,
                 weighting="binary", ks=KS, propensity=(0.55, 1.5)):
    """Train fastText supervised on `train`, predict `test` and score it.

    Parameters
    ----------
    train, test : embkit.xc.data.XCData
    loss : {"ova", "softmax", "ns", "hs"}
    epoch, dim, thread, seed, neg
        fastText's parameters (``wordNgrams=1``, ``minCount=1``, ``bucket=0`` are fixed).
    lr : float or None
        Learning rate; None tries :data:`AUTO_LRS` in turn until training does not diverge (e.g.
        0.5 suits Bibtex, while one-vs-all on Delicious, ~19 labels per point, needs 0.1).
    weighting : {"binary", "repeat"}
        How feature values become tokens (see :func:`fasttext_lines`).
    ks : tuple of int
        Cut-offs of the metrics; ``max(ks)`` labels are predicted per point.
    propensity : (float, float)
        ``(A, B)`` of the propensity model; the propensities come from `train`'s labels.

    Returns
    -------
    dict
        ``metrics`` (:class:`embkit.evaluation.ranking_results.XCResult`), ``train_seconds`` and
        ``train_cpu_seconds`` (all threads) of the run that trained, ``predict_seconds``, ``params``
        (what fastText got, with the learning rate used) and ``diverged`` (learning rates that failed).

    Raises
    ------
    RuntimeError
        When fastText fails, e.g. "Encountered NaN." when training diverges at every rate tried.
    """
    params = dict(loss=loss, dim=dim, epoch=epoch, wordNgrams=1, minCount=1, thread=thread, seed=seed,
                  neg=neg, bucket=0)  # bucket: the word n-gram table, unused with wordNgrams=1
    diverged = []
    for rate in AUTO_LRS if lr is None else (lr,):
        params["lr"] = rate
        try:
            top, train_seconds, predict_seconds = train_and_predict(train, test, max(ks), weighting, **params)
            break
        except RuntimeError as exc:
            if lr is not None or "NaN" not in str(exc) or rate == AUTO_LRS[-1]:
                raise
            diverged.append(rate)
    A, B = propensity
    metrics = xc_metrics(test.Y, top, ks=ks, propensity=train.Y, A=A, B=B, name="fastText %s" % loss)
    return dict(metrics=metrics, train_seconds=train_seconds[0], train_cpu_seconds=train_seconds[1],
                predict_seconds=predict_seconds[0], params=dict(params, weighting=weighting), diverged=diverged)


def napkinxc_version():
    """The installed napkinXC version, or None."""
    try:
        from importlib.metadata import version
        return version("napkinxc")
    except Exception:  # the version is informative only
        return None


def run_napkinxc(train, test, model="PLT", threads=2, seed=None, ks=KS, propensity=(0.55, 1.5), **params):
    """Train a napkinXC model on `train`, predict the top labels of `test` and score them.

    Parameters
    ----------
    train, test : embkit.xc.data.XCData
    model : {"PLT", "OVR"}
        napkinXC's probabilistic label tree or one-vs-rest model, with its documented defaults (liblinear
        logistic loss, C 10, normalised features, bias 1) unless `params` change them.
    threads : int
    seed : int or None
        The PLT's tree-building seed (napkinXC's default None draws one).
    ks : tuple of int
    propensity : (float, float)
        ``(A, B)`` of PSP@k; the propensities come from `train`'s labels.

    Returns
    -------
    dict
        ``metrics`` (:class:`~embkit.evaluation.ranking_results.XCResult`), ``train_seconds``,
        ``predict_seconds`` (the whole test set, top ``max(ks)``) and ``params``.
    """
    from napkinxc import models
    cls = {"PLT": models.PLT, "OVR": models.OVR}[model.upper()]
    Y = train.Y
    labels = [Y.indices[Y.indptr[r]:Y.indptr[r + 1]].tolist() for r in range(train.n_points)]
    k = max(ks)
    if cls is models.PLT and seed is not None:
        params = dict(params, seed=seed)
    with tempfile.TemporaryDirectory(prefix="xc-napkinxc-") as workdir:
        clf = cls(workdir, threads=threads, **params)
        t0 = time.perf_counter()
        clf.fit(train.X, labels)
        train_seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        predicted = clf.predict(test.X, top_k=k)
        predict_seconds = time.perf_counter() - t0
    top = np.full((test.n_points, k), -1, dtype=np.int64)
    for r, ids in enumerate(predicted):
        top[r, :len(ids)] = ids[:k]
    metrics = _scored(test, train, top, "napkinXC %s" % model, ks, propensity)
    return dict(metrics=metrics, train_seconds=train_seconds, predict_seconds=predict_seconds,
                params=dict(params, model=model, threads=threads))


def _scored(test, train, top, name, ks, propensity):
    """P@k, nDCG@k and PSP@k (propensities of `train`'s labels, ``propensity = (A, B)``) of the top labels."""
    A, B = propensity
    return xc_metrics(test.Y, top, ks=ks, propensity=train.Y, A=A, B=B, name=name)


def omikuji_version():
    """The installed omikuji version, or None."""
    try:
        from importlib.metadata import version
        return version("omikuji")
    except Exception:  # the version is informative only
        return None


#: omikuji's hyper-parameters of its two documented settings (its defaults are Parabel's: 3 trees of
#: balanced 2-means down to 100 labels per leaf; Bonsai's trees are shallow and wide, unbalanced 100-means)
OMIKUJI_SETTINGS = {"parabel": {}, "bonsai": {"cluster_k": 100, "max_depth": 3, "cluster_balanced": False}}


def run_omikuji(train, test, setting="parabel", threads=2, ks=KS, propensity=(0.55, 1.5)):
    """Train omikuji (Parabel or Bonsai trees of linear classifiers) on `train`, predict `test`, score it.

    omikuji reads its training set from a file: `train` is written in the XC format to a temporary folder
    and parsed by omikuji before the clock starts, so ``train_seconds`` is training alone.  Prediction goes
    through omikuji's Python API, one row per call (its only form), over the whole test set.

    Returns
    -------
    dict
        ``metrics``, ``train_seconds``, ``predict_seconds`` and ``params`` (the setting and threads).
    """
    import omikuji
    from omikuji import ffi, lib
    from embkit.xc.data import write_xc
    hyper = omikuji.Model.default_hyper_param()
    for name, value in OMIKUJI_SETTINGS[setting].items():
        setattr(hyper, name, value)
    k = max(ks)
    pool = omikuji._ThreadPoolHandle(threads, initialize=True)
    with tempfile.TemporaryDirectory(prefix="xc-omikuji-") as workdir:
        path = os.path.join(workdir, "train.txt")
        write_xc(path, train)
        data = lib.load_omikuji_data_set(ffi.new("char[]", path.encode()), pool.ptr)
        if data == ffi.NULL:
            raise RuntimeError("omikuji could not read the training set")
        data = ffi.gc(data, lib.free_omikuji_data_set)
        t0 = time.perf_counter()
        pointer = lib.train_omikuji_model(data, hyper, pool.ptr)
        train_seconds = time.perf_counter() - t0
    if pointer == ffi.NULL:
        raise RuntimeError("omikuji failed to train")
    model = omikuji.Model(pointer, pool)
    X = test.X
    top = np.full((test.n_points, k), -1, dtype=np.int64)
    t0 = time.perf_counter()
    for r in range(test.n_points):
        lo, hi = X.indptr[r], X.indptr[r + 1]
        found = model.predict(list(zip(X.indices[lo:hi].tolist(), X.data[lo:hi].tolist())), top_k=k)
        top[r, :len(found)] = [label for label, _ in found]
    predict_seconds = time.perf_counter() - t0
    return dict(metrics=_scored(test, train, top, "omikuji %s" % setting, ks, propensity), train_seconds=train_seconds,
                predict_seconds=predict_seconds, params=dict(OMIKUJI_SETTINGS[setting], setting=setting,
                                                             threads=threads))


#: The module that trains and predicts PECOS XR-Linear in a child process.
PECOS_CHILD = "eval.peers._pecos_child"


def run_pecos(train, test, threads=2, python=None, normalize=False, ks=KS, propensity=(0.55, 1.5)):
    """Train PECOS XR-Linear (libpecos) with its defaults on `train`, predict `test` and score it.

    It runs in a child process, on the same matrices (passed in a ``.npz`` file), with the interpreter
    `python` (default: this one): libpecos's release pins numpy < 2 and scipy < 1.14 and fails with newer
    scipy (``scipy.sparse.sputils.get_index_dtype``), so it may need an environment of its own.
    ``normalize`` scales every row to unit L2 norm first (PECOS's data sets come so; its defaults assume it).

    Returns
    -------
    dict
        ``metrics``, ``train_seconds`` (PIFA label embedding, clustering and the rankers), ``predict_seconds``
        and ``params``.

    Raises
    ------
    RuntimeError
        With the child's last line of error output when it fails (e.g. libpecos missing or incompatible).
    """
    k = max(ks)
    with tempfile.TemporaryDirectory(prefix="xc-pecos-") as workdir:
        paths = [os.path.join(workdir, name) for name in ("in.npz", "out.npz")]
        arrays = {}
        for name, matrix in (("X", train.X), ("Y", train.Y), ("T", test.X)):
            matrix = matrix.tocsr()
            arrays.update({name + "_data": matrix.data, name + "_indices": matrix.indices,
                           name + "_indptr": matrix.indptr, name + "_shape": np.array(matrix.shape)})
        np.savez(paths[0], **arrays)
        proc = subprocess.run([python or sys.executable, "-m", PECOS_CHILD] + paths
                              + [json.dumps(dict(threads=threads, k=k, normalize=normalize))],
                              capture_output=True, text=True, cwd=REPO_ROOT)
        if proc.returncode:
            lines = proc.stderr.strip().splitlines()
            raise RuntimeError(lines[-1] if lines else "the XR-Linear child failed")
        seconds = json.loads(proc.stdout.strip().splitlines()[-1])
        top = np.load(paths[1])["top"]
    name = "PECOS XR-Linear" + (" (unit rows)" if normalize else "")
    return dict(metrics=_scored(test, train, top, name, ks, propensity), train_seconds=seconds["train"],
                predict_seconds=seconds["predict"], params=dict(threads=threads, normalize=normalize,
                                                                version=seconds["version"]))


def run(train, test, loss, args, propensity_params):
    """:func:`run_fasttext` (or :func:`run_napkinxc` for ``plt``/``ovr``) with the command-line settings."""
    if loss.upper() in ("PLT", "OVR"):
        out = run_napkinxc(train, test, loss.upper(), threads=args.threads, propensity=propensity_params)
        return dict(out, train_cpu_seconds=float("nan"), diverged=[])
    return run_fasttext(train, test, loss=loss, epoch=args.epoch, lr=args.lr, dim=args.dim, thread=args.threads,
                        seed=args.seed, neg=args.neg, weighting=args.weighting, propensity=propensity_params)


def load(args):
    if args.train or args.test:
        if not (args.train and args.test):
            raise SystemExit("--train and --test go together")
        return read_xc(args.train), read_xc(args.test), (0.55, 1.5), "%s / %s" % (args.train, args.test)
    info = xc_dataset_info(args.dataset)
    train, test = load_xc_dataset(info.name, args.root)
    return train, test, info.propensity, info.name


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="bibtex", help="XC repository set (see embkit.xc.datasets)")
    parser.add_argument("--root", default=shared_data("extreme-classification"), help="folder of the XC sets")
    parser.add_argument("--train", help="train file instead of --dataset")
    parser.add_argument("--test", help="test file instead of --dataset")
    parser.add_argument("--loss", default="ova", help="comma-separated fastText losses (ova, softmax, ns, hs) or napkinXC models (plt, ovr)")
    parser.add_argument("--epoch", type=int, default=25)
    parser.add_argument("--lr", type=float, default=None,
                        help="learning rate (default: %s in turn until training does not diverge)"
                        % ", ".join(map(str, AUTO_LRS)))
    parser.add_argument("--dim", type=int, default=100)
    parser.add_argument("--neg", type=int, default=5, help="negatives of the ns loss")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--weighting", choices=("binary", "repeat"), default="binary")
    parser.add_argument("--repeat", type=int, default=1, help="runs per loss (mean and spread reported)")
    args = parser.parse_args(argv)

    train, test, propensity_params, name = load(args)
    print("%s: train %d x %d features, %d labels (%d unlabelled); test %d points (%d unlabelled)\n"
          % (name, train.n_points, train.n_features, train.n_labels, train.n_unlabelled, test.n_points,
             test.n_unlabelled))
    header = ["set", "loss", "settings"] + ["P@%d" % k for k in KS] + ["nDCG@%d" % k for k in KS] \
        + ["PSP@%d" % k for k in KS] + ["train s (CPU)", "predict s"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for loss in [name.strip() for name in args.loss.split(",")]:
        try:
            runs = [run(train, test, loss, args, propensity_params) for _ in range(max(1, args.repeat))]
        except RuntimeError as exc:  # fastText stops with "Encountered NaN." when training diverges
            print("| %s | %s | lr %s | failed: %s |" % (name, loss, args.lr or "auto", exc))
            continue
        used = runs[0]["params"]
        settings = "napkinXC %s %s defaults, threads %d" % (used["model"], napkinxc_version(), used["threads"]) \
            if "model" in used else "epoch %d, lr %g%s, dim %d, %s, threads %d%s" % (
            used["epoch"], used["lr"], " (diverged at %s)" % ", ".join("%g" % r for r in runs[0]["diverged"])
            if runs[0]["diverged"] else "", used["dim"], used["weighting"], used["thread"],
            ", neg %d" % used["neg"] if loss == "ns" else "")
        cells = []
        for key in ("precision", "ndcg", "psp"):
            for k in KS:
                vals = [getattr(r["metrics"], key)[k] * 100 for r in runs]
                cells.append("%.2f" % np.mean(vals) + (" ± %.2f" % np.std(vals) if len(vals) > 1 else ""))
        train_s = np.mean([r["train_seconds"] for r in runs]), np.mean([r["train_cpu_seconds"] for r in runs])
        predict_s = np.mean([r["predict_seconds"] for r in runs])  # wall clock
        print("| " + " | ".join([name, loss, settings] + cells + ["%.1f (%.1f)" % train_s, "%.2f" % predict_s])
              + " |")
    print("\nfastText %s, napkinXC %s, Python %s, %s; command: python -m eval.peers.xc %s" % (
        _fasttext_version(), napkinxc_version(), platform.python_version(), platform.machine(),
        " ".join(sys.argv[1:] if argv is None else argv)))


def _fasttext_version():
    try:
        from importlib.metadata import version
        return version("fasttext")
    except Exception:  # the version is informative only
        return "(version unknown)"


if __name__ == "__main__":
    main()
