"""The Extreme Classification Repository's data sets by name: published sizes, and loading from a folder.

Nothing is downloaded: the repository's files are large and behind links that change, so
:func:`load_xc_dataset` reads them from a folder the user has filled, finds the train and test files
by the usual names (the older layout, one file per split, or the newer one, ``trn_X_Xf.txt``,
``trn_X_Y.txt``, ``tst_X_Xf.txt``, ``tst_X_Y.txt``), and checks their sizes against the published ones.

Where the numbers come from
---------------------------
The table of the Extreme Classification Repository (Bhatia et al. 2016,
http://manikvarma.org/downloads/XC/XMLRepository.html), bag-of-words versions: columns "feature
dimensionality", "label dimensionality", "number of train points", "number of test points".  They
were written down from that table, not downloaded here.  Cross-checks made for this module:

* Mediamill, Bibtex, Delicious: all four numbers read again on a stored copy of the repository page;
  Bibtex and Delicious also match the files of the shared test data.
* Amazon-670K, WikiLSHTC-325K: all four numbers as in Table 1 of Daghaghi et al., "A Tale of Two
  Efficient and Informative Negative Sampling Distributions", ICML 2021.
* AmazonCat-13K: the train/test point counts as in a public copy of the set (1,186,239 / 306,782).
* EURLex-4K: a test file with the header ``3809 5000 3993`` (test points, features, labels).
* Wiki10-31K, Delicious-200K: from the repository's table only, not re-checked.

Propensity parameters ``(A, B)`` follow the repository's recommendation (see
:mod:`embkit.evaluation.xc`): Amazon sets 0.6/2.6, Wikipedia sets 0.5/0.4, the others 0.55/1.5.
"""
import os
import re
from dataclasses import dataclass

from embkit.evaluation.xc import PROPENSITY_PARAMETERS
from embkit.xc.data import read_xc, read_xc_header, read_xc_pair

__all__ = ["XCDatasetInfo", "XC_DATASETS", "xc_dataset_info", "find_xc_files", "load_xc_dataset",
           "StatisticsMismatch"]


@dataclass(frozen=True)
class XCDatasetInfo:
    """Published sizes of an XC repository data set.

    Attributes
    ----------
    name : str
        The repository's name (e.g. ``"EURLex-4K"``).
    n_train, n_test : int
        Points in the train and test split.
    n_features, n_labels : int
        Feature and label dimensionality (bag-of-words features).
    family : str
        Key of :data:`embkit.evaluation.xc.PROPENSITY_PARAMETERS`: ``"amazon"``, ``"wikipedia"``
        or ``"default"``.
    aliases : tuple of str
        Other names accepted by :func:`xc_dataset_info` (compared case-insensitively, ignoring
        anything but letters and digits).
    """

    name: str
    n_train: int
    n_test: int
    n_features: int
    n_labels: int
    family: str = "default"
    aliases: tuple = ()

    @property
    def propensity(self):
        """``(A, B)`` of the propensity model recommended for this set."""
        return PROPENSITY_PARAMETERS[self.family]


_TABLE = [
    XCDatasetInfo("Mediamill", 30993, 12914, 120, 101),
    XCDatasetInfo("Bibtex", 4880, 2515, 1836, 159),
    XCDatasetInfo("Delicious", 12920, 3185, 500, 983),
    XCDatasetInfo("EURLex-4K", 15539, 3809, 5000, 3993, aliases=("eurlex",)),
    XCDatasetInfo("Wiki10-31K", 14146, 6616, 101938, 30938, "wikipedia", aliases=("wiki10",)),
    XCDatasetInfo("AmazonCat-13K", 1186239, 306782, 203882, 13330, "amazon", aliases=("amazoncat",)),
    XCDatasetInfo("Delicious-200K", 196606, 100095, 782585, 205443, aliases=("deliciouslarge",)),
    XCDatasetInfo("WikiLSHTC-325K", 1778351, 587084, 1617899, 325056, "wikipedia",
                  aliases=("wikilshtc", "wiki325k")),
    XCDatasetInfo("Amazon-670K", 490449, 153025, 135909, 670091, "amazon", aliases=("amazon670", "amazon")),
]

#: The known sets, name -> :class:`XCDatasetInfo`.
XC_DATASETS = {info.name: info for info in _TABLE}

_TRAIN_WORDS = ("train", "trn")
_TEST_WORDS = ("test", "tst")
_SUFFIXES = (".gz", ".bz2", ".txt", ".xc", ".svm", ".libsvm", ".data")
#: the repository's newer layout: features and labels of a split in separate files (``.gz``/``.bz2`` too)
NEWER_LAYOUT = {"train": ("trn_X_Xf.txt", "trn_X_Y.txt"), "test": ("tst_X_Xf.txt", "tst_X_Y.txt")}


class StatisticsMismatch(ValueError):
    """A data file's size disagrees with the published statistics of its set."""


def _key(text):
    return re.sub(r"[^0-9a-z]", "", text.lower())


def xc_dataset_info(name):
    """The :class:`XCDatasetInfo` of a set, by name or alias (case and punctuation ignored).

    Raises
    ------
    ValueError
        For an unknown name; the message lists the known ones.
    """
    key = _key(str(name))
    for info in _TABLE:
        if key == _key(info.name) or key in (_key(a) for a in info.aliases):
            return info
    raise ValueError("unknown XC data set %r; known sets: %s" % (name, ", ".join(XC_DATASETS)))


def _names(info):
    """Normalised names a folder or file prefix of this set may carry."""
    return [_key(info.name)] + [_key(a) for a in info.aliases]


def _candidate_dirs(info, root):
    """``root``'s sub-folders named after the set (and such folders inside them), then ``root``."""
    names = _names(info)

    def named(parent):
        return [os.path.join(parent, e) for e in sorted(os.listdir(parent))
                if _key(e) in names and os.path.isdir(os.path.join(parent, e))]

    found = []
    for folder in named(root):
        found += [folder] + named(folder)
    return found + [root]


def _file_kind(filename, names):
    """``(split, rank)`` of a file name: split "train"/"test" or None; rank 0 when it names the set."""
    stem = filename.lower()
    changed = True
    while changed:
        changed = False
        for suffix in _SUFFIXES:
            if stem.endswith(suffix) and len(stem) > len(suffix):
                stem, changed = stem[:-len(suffix)], True
    stem = _key(stem)
    for split, words in (("train", _TRAIN_WORDS), ("test", _TEST_WORDS)):
        for word in words:
            if stem == word:
                return split, 1
            if stem.endswith(word) and stem[:-len(word)] in names:
                return split, 0
    return None, None


def find_xc_files(name, root):
    """Paths of the train and test files of a set in a folder.

    Looked for, in this order: a sub-folder of `root` named after the set (any case and
    punctuation, e.g. ``Bibtex/``, ``eurlex-4k/``, and such a folder inside it), then `root` itself.
    In a folder, train files are named ``<set>_train``, ``<set>-trn``, ``train``, ``trn`` (test:
    ``test``, ``tst``), with any of the endings ``.txt``, ``.xc``, ``.svm``, ``.libsvm``, ``.data``,
    ``.gz``, ``.bz2`` (e.g. ``bibtex_train.xc.txt.gz``, ``Bibtex/train.txt``); a file named after
    the set wins over a bare ``train.txt``.  The repository's newer layout, features and labels in
    separate files (:data:`NEWER_LAYOUT`: ``trn_X_Xf.txt``, ``trn_X_Y.txt``, ``tst_X_Xf.txt``,
    ``tst_X_Y.txt``, bag-of-words features), is found in the same folders and wins over the older one.

    Returns
    -------
    (str, str) or ((str, str), (str, str))
        Train and test file; with the newer layout, ``(features, labels)`` files of each.

    Raises
    ------
    FileNotFoundError
        If `root` is not a folder or a split has no file, or a folder holds one split (or some files of
        the newer layout) without the other: the message names the missing file and says where it looked.
    ValueError
        If a folder holds several equally good files for a split.
    """
    info = xc_dataset_info(name)
    root = os.fspath(root)
    if not os.path.isdir(root):
        raise FileNotFoundError("XC data folder %r does not exist" % root)
    names = _names(info)
    dirs = _candidate_dirs(info, root)
    for directory in dirs:
        newer = _newer_layout(directory)
        if newer is not None:
            return newer
        best = {}
        for entry in sorted(os.listdir(directory)):
            path = os.path.join(directory, entry)
            split, rank = _file_kind(entry, names)
            if split and os.path.isfile(path):
                best.setdefault(split, {}).setdefault(rank, []).append(path)
        if "train" in best and "test" in best:
            return tuple(_pick(best[split], split, info.name) for split in ("train", "test"))
        if best and directory != root or any(0 in ranked for ranked in best.values()):
            have, missing = ("train", "test") if "train" in best else ("test", "train")
            raise FileNotFoundError(
                "%s: found the %s file %s of %s but no %s file (looked for '%s_%s.txt', '%s.txt', '%s.txt', "
                "optionally .gz/.bz2)" % (directory, have, _pick(best[have], have, info.name), info.name, missing,
                                          names[0], missing, missing, "tst" if missing == "test" else "trn"))
    raise FileNotFoundError(
        "no train and test files of %s found; looked in %s for files named like '%s_train.txt', "
        "'train.txt', '%s_test.xc.txt.gz', 'tst.txt' (optionally .gz/.bz2)"
        % (info.name, ", ".join(repr(d) for d in dirs), names[0], names[0]))


def _newer_layout(directory):
    """``((train X, train Y), (test X, test Y))`` of the newer layout in `directory`, None when it has none
    of its files; FileNotFoundError naming the missing ones when it has only some."""
    found, missing = {}, []
    for split, names in NEWER_LAYOUT.items():
        for name in names:
            paths = [os.path.join(directory, name + ext) for ext in ("", ".gz", ".bz2")]
            hit = [p for p in paths if os.path.isfile(p)]
            if hit:
                found[name] = hit[0]
            else:
                missing.append(name)
    if not found:
        return None
    if missing:
        raise FileNotFoundError("%s holds %s of the XC repository's newer layout but not %s"
                                % (directory, ", ".join(sorted(os.path.basename(p) for p in found.values())),
                                   ", ".join(missing)))
    return tuple(tuple(found[name] for name in NEWER_LAYOUT[split]) for split in ("train", "test"))


def _pick(ranked, split, name):
    paths = ranked[min(ranked)]
    if len(paths) > 1:
        raise ValueError("several %s files for %s: %s; pass the paths to read_xc instead"
                         % (split, name, ", ".join(paths)))
    return paths[0]


def load_xc_dataset(name, root, *, allow_mismatch=False, base=0, workers=1):
    """Read the train and test split of an XC repository set from a folder, checking their sizes.

    Parameters
    ----------
    name : str
        Set name or alias, any case (see :data:`XC_DATASETS`).
    root : str or path-like
        Folder holding the files (see :func:`find_xc_files` for the names looked for).
    allow_mismatch : bool, optional
        Accept files whose sizes differ from the published ones (e.g. a subset or another version).
    base : int, optional
        Id base of the files (0 in the XC format; 1 for LIBSVM conversions).
    workers : int, optional
        Threads that parse the files' blocks (:func:`embkit.xc.data.read_xc`).

    Returns
    -------
    (XCData, XCData)
        Train and test set.  Files without a header are read with the published feature and label
        counts (unless `allow_mismatch`), so that both splits have the published shapes.

    Raises
    ------
    StatisticsMismatch
        (a ValueError) Naming the file, the statistic, its value and the published one.
    FileNotFoundError, ValueError
        From :func:`find_xc_files` and :func:`embkit.xc.data.read_xc`.
    """
    info = xc_dataset_info(name)
    train_path, test_path = find_xc_files(info.name, root)
    out = []
    for split, path, n_points in (("train", train_path, info.n_train), ("test", test_path, info.n_test)):
        if isinstance(path, tuple):               # the newer layout: features and labels files
            data = read_xc_pair(*path, workers=workers)
            path = " + ".join(path)
        elif read_xc_header(path) is None and not allow_mismatch:
            data = read_xc(path, base=base, n_features=info.n_features, n_labels=info.n_labels, workers=workers)
        else:
            data = read_xc(path, base=base, workers=workers)
        if not allow_mismatch:
            _check_stats(path, split, data, n_points, info)
        out.append(data)
    return tuple(out)


def _check_stats(path, split, data, n_points, info):
    for what, actual, expected in (("points", data.n_points, n_points), ("features", data.n_features, info.n_features),
                                   ("labels", data.n_labels, info.n_labels)):
        if actual != expected:
            raise StatisticsMismatch(
                "%s: %d %s, but the %s split of the XC repository's %s has %d (pass allow_mismatch=True "
                "to accept)" % (path, actual, what, split, info.name, expected))
