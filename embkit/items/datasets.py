"""Downloadable MovieLens rating sets, and the resolution of a rating dataset name or path.

The MovieLens zip archives of files.grouplens.org are downloaded once into the embkit cache
(``$EMBKIT_CACHE``, default ``~/.cache/embkit``) through :func:`embkit.core.downloads.fetch`: the download is
atomic and verified, the rating file (and the title file) is unzipped next to it, and later runs use the
cache without touching the network.  ``EMBKIT_OFFLINE=1`` forbids downloads.

Checksums
---------
The archives have no pinned digest: the SHA-256 of the first download is recorded next to it and
enforced afterwards (trust on first use, see :mod:`embkit.core.downloads`).  The extracted rating and title
files are pinned by size and SHA-256 where an independent copy gave them: ml-100k ``u.data`` and
``u.item``, ml-latest-small ``ratings.csv`` and ``movies.csv`` (its September 2018 release), ml-1m
``movies.dat``, and the size of ml-1m ``ratings.dat``.  ml-latest changes over time and is never pinned.

The Netflix Prize data was withdrawn by Netflix and cannot be downloaded: pass local files.

Examples
--------
>>> from embkit.items.datasets import resolve_ratings
>>> resolve_ratings('ml-100k')            # doctest: +SKIP
'/home/me/.cache/embkit/ml-100k'
>>> resolve_ratings('my/ratings.csv')      # doctest: +SKIP  (an existing path wins)
'my/ratings.csv'
"""
import logging
import os
from dataclasses import dataclass
from typing import Optional

from embkit.core.downloads import ChecksumError, DownloadError, RemoteCorpus, cache_dir, fetch

logger = logging.getLogger(__name__)

__all__ = ["RatingDataset", "MOVIELENS", "NETFLIX_NAMES", "fetch_ratings", "resolve_ratings"]

_BASE_URL = "https://files.grouplens.org/datasets/movielens/"
_HINT = "load_ratings and resolve_ratings take the unzipped folder or its rating file"
#: Names that mean the Netflix Prize data, which cannot be downloaded.
NETFLIX_NAMES = ("netflix", "netflix-prize")


@dataclass(frozen=True)
class RatingDataset:
    """A downloadable rating set: the rating file and, optionally, the title file of one zip archive.

    Attributes
    ----------
    name : str
        Registry name.
    ratings : embkit.core.downloads.RemoteCorpus
        The archive and its rating member.
    titles : embkit.core.downloads.RemoteCorpus or None
        The same archive and its title member.
    description : str
        One line for help texts.
    """

    name: str
    ratings: RemoteCorpus
    titles: Optional[RemoteCorpus] = None
    description: str = ""

    @property
    def url(self):
        return self.ratings.url


def _movielens(name, folder, ratings, titles, description, ratings_pin=(None, None), titles_pin=(None, None)):
    archive = dict(name=name, url=_BASE_URL + name + ".zip", filename=name + ".zip", manual_hint=_HINT,
                   description=description)
    return RatingDataset(
        name=name,
        ratings=RemoteCorpus(member=folder + "/" + ratings, member_size=ratings_pin[0],
                             member_sha256=ratings_pin[1], **archive),
        titles=RemoteCorpus(member=folder + "/" + titles, member_size=titles_pin[0],
                            member_sha256=titles_pin[1], **archive),
        description=description)


#: Downloadable MovieLens sets, name -> :class:`RatingDataset`.
MOVIELENS = {ds.name: ds for ds in (
    _movielens("ml-100k", "ml-100k", "u.data", "u.item",
               "100,000 ratings (1-5 stars) of 1,682 movies by 943 users (1998)",
               ratings_pin=(1979173, "06416e597f82b7342361e41163890c81036900f418ad91315590814211dca490"),
               titles_pin=(236344, "553841ebc7de3a0fd0d6b62a204ea30c1e651aacfb2814c7a6584ac52f2c5701")),
    _movielens("ml-1m", "ml-1m", "ratings.dat", "movies.dat",
               "1,000,209 ratings (1-5 stars) of 3,706 movies by 6,040 users (2003)",
               ratings_pin=(24594131, None),
               titles_pin=(171308, "0140fc2356357c1a851d0f52e893a1e4d3696df632c4141cea8d5bc3d621f0b9")),
    _movielens("ml-10m", "ml-10M100K", "ratings.dat", "movies.dat",
               "10,000,054 ratings (half stars) of 10,677 movies by 69,878 users (2009)"),
    _movielens("ml-20m", "ml-20m", "ratings.csv", "movies.csv",
               "20,000,263 ratings (half stars) of 26,744 movies by 138,493 users (2015)"),
    _movielens("ml-latest-small", "ml-latest-small", "ratings.csv", "movies.csv",
               "100,836 ratings (half stars) of 9,742 movies by 610 users (2018 release)",
               ratings_pin=(2483723, "aa289ca83157595d0df6aea1be6a4ded676ddc4385472e8313a8ed9805352646"),
               titles_pin=(494431, "5a5f32dd9bb3797b8e728a1b98958789d2b13f294a69fdfbc5727f8a9611aa07")),
    _movielens("ml-latest", "ml-latest", "ratings.csv", "movies.csv",
               "the full, periodically updated MovieLens release (tens of millions of ratings)"),
)}


def _names():
    return ", ".join(sorted(MOVIELENS))


def fetch_ratings(name, progress=True):
    """Folder of a registered rating set in the cache, downloading and unzipping it on first use.

    The title file is extracted too when the archive is in the cache; it is never downloaded on its own.

    Parameters
    ----------
    name : str
        A name of :data:`MOVIELENS`.
    progress : bool
        Show a progress bar while downloading.

    Returns
    -------
    str
        The folder holding the rating file (and the title file), for :func:`embkit.items.ratings.load_ratings`.

    Raises
    ------
    KeyError
        Unknown name.
    embkit.core.downloads.DownloadError
        Not cached and not downloadable (offline, ``EMBKIT_OFFLINE``, HTTP error); the message says how to
        fetch it by hand.
    embkit.core.downloads.ChecksumError
        The archive or the rating file does not match its expected size or SHA-256.
    """
    key = name.strip().lower()
    if key not in MOVIELENS:
        raise KeyError("unknown rating dataset %r (registered: %s)" % (name, _names()))
    dataset = MOVIELENS[key]
    ratings_path = fetch(dataset.ratings, progress=progress)
    titles = dataset.titles
    if titles is not None:
        archive = os.path.join(cache_dir(), titles.filename)
        if os.path.exists(archive) or os.path.exists(os.path.join(cache_dir(), titles.member)):
            try:
                fetch(titles, progress=progress)
            except (ChecksumError, DownloadError) as exc:
                logger.warning("%s: no item titles (%s)", dataset.name, exc)
    return os.path.dirname(ratings_path)


def resolve_ratings(name_or_path, progress=True):
    """Turn a rating dataset name or path into a path :func:`embkit.items.ratings.load_ratings` reads.

    Parameters
    ----------
    name_or_path : str, os.PathLike or list
        An existing file or folder (wins over a registered name of the same spelling), a URL or a list
        of files (returned unchanged); else a name of :data:`MOVIELENS` (fetched on first use).
    progress : bool
        Show a progress bar if a download is needed.

    Returns
    -------
    str or list
        A local path (a folder for registered names), the URL or the list given.

    Raises
    ------
    embkit.core.downloads.DownloadError
        For the Netflix Prize (withdrawn: a local path is needed), or a registered set that is not cached
        and cannot be downloaded.
    FileNotFoundError
        Neither an existing path nor a registered name; the message lists the names.
    """
    if isinstance(name_or_path, (list, tuple)):
        return name_or_path
    text = os.fspath(name_or_path)
    if os.path.exists(text) or "://" in text:
        return text
    key = text.strip().lower()
    if key in MOVIELENS:
        return fetch_ratings(key, progress=progress)
    if key in NETFLIX_NAMES:
        raise DownloadError("the Netflix Prize ratings were withdrawn by Netflix and cannot be downloaded: pass a "
                            "local path instead (combined_data_*.txt files, a list of them, the training_set "
                            "folder of mv_*.txt files, or the folder holding them)")
    raise FileNotFoundError("%r is neither an existing rating file or folder nor a registered dataset (registered: "
                            "%s; Netflix needs a local path)" % (text, _names()))
