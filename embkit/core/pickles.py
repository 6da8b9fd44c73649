"""Consent before unpickling: which files are pickles, and when embkit may read one.

Unpickling runs whatever code the file holds.  embkit's own formats (model archives, checkpoints, the word2vec
formats) never unpickle.  A gensim pickle is read only where gensim's semantics are the point
(``Word2Vec.load`` of a gensim model) or where the caller says so (``allow_pickle=True``, ``--allow-pickle``),
and never when the file is named as an embkit archive (``*.embkit``): such a name promises a file that runs
no code.
"""
import os

__all__ = ["ARCHIVE_SUFFIX", "PickleRefused", "is_pickle", "named_as_archive", "check_consent"]

#: The file name ending of embkit's model archives and checkpoints.
ARCHIVE_SUFFIX = ".embkit"


class PickleRefused(ValueError):
    """A pickle that embkit will not unpickle (no consent, or a file named as an embkit archive)."""


def is_pickle(path):
    """Whether ``path`` starts like a pickle of protocol 2 or later (as gensim's ``save`` writes)."""
    with open(path, "rb") as fh:
        return fh.read(1) == b"\x80"


def named_as_archive(path):
    """Whether the name of ``path`` says it is an embkit model archive or checkpoint."""
    return os.fspath(path).lower().endswith(ARCHIVE_SUFFIX)


def check_consent(path, allowed, how):
    """Raise :class:`PickleRefused` naming ``path`` unless the pickle at ``path`` may be unpickled.

    Parameters
    ----------
    path : str
        A file :func:`is_pickle` said is a pickle.
    allowed : bool
        The caller consented (``allow_pickle=True``, or gensim's own ``load`` semantics).
    how : str
        How to consent, for the message (``"pass allow_pickle=True"``).
    """
    path = os.fspath(path)
    if named_as_archive(path):
        raise PickleRefused("%r is named as an embkit archive (%s) but holds a pickle: embkit's own files never "
                            "run code, so it is not unpickled (a gensim file you trust: rename it)"
                            % (path, ARCHIVE_SUFFIX))
    if not allowed:
        raise PickleRefused("%r is a pickle (as gensim's save writes): unpickling runs any code the file holds, "
                            "so embkit reads one only when told: %s for a file you trust" % (path, how))
