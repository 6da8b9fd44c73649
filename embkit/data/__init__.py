"""Small evaluation sets and a sample corpus bundled with embkit.

This folder is installed as the package ``embkit.data``.  Files are looked up
relative to this module, so the registry works the same from a wheel, an
editable install or a source checkout.

Examples
--------
>>> from embkit import data
>>> data.path('ws353').endswith('EN-WS-353-ALL.txt')
True
>>> sorted(data.SIMILARITY_SETS)[:3]
['mc30', 'men', 'mturk287']

See ``PROVENANCE.md`` in this folder for sources, licences and citations.
"""

import os

__all__ = [
    'UnknownDatasetError', 'SIMILARITY_SETS', 'ANALOGY_SETS', 'CORPORA', 'FILES',
    'DATA_DIR', 'names', 'path',
]


class UnknownDatasetError(KeyError, ValueError):
    """Raised by :func:`path` for a name that is not in the registry.

    Subclasses both :class:`KeyError` and :class:`ValueError`; unlike a plain
    ``KeyError`` its message is printed without extra quotes.
    """

    def __str__(self):
        return str(self.args[0]) if self.args else ''


#: Directory holding the bundled files.
DATA_DIR = os.path.dirname(os.path.abspath(__file__))

#: Word-similarity sets (``word1<TAB>word2<TAB>score``), short name -> file name.
SIMILARITY_SETS = {
    'ws353': 'EN-WS-353-ALL.txt',
    'ws353-rel': 'EN-WS-353-REL.txt',
    'ws353-sim': 'EN-WS-353-SIM.txt',
    'simlex999': 'EN-SIMLEX-999.txt',
    'men': 'EN-MEN-TR-3k.txt',
    'rw': 'EN-RW-STANFORD.txt',
    'mturk287': 'EN-MTurk-287.txt',
    'mturk771': 'EN-MTurk-771.txt',
    'rg65': 'EN-RG-65.txt',
    'mc30': 'EN-MC-30.txt',
    'yp130': 'EN-YP-130.txt',
    'verb143': 'EN-VERB-143.txt',
    'simverb3500': 'EN-SimVerb-3500.txt',
}

#: Word-analogy sets (``: section`` headers, ``a b c d`` lines), short name -> file name.
ANALOGY_SETS = {
    'questions-words': 'questions-words.txt',
}

#: Training corpora (gzip, one document per line), short name -> file name.
CORPORA = {
    'enwiki-sample': 'enwiki-sample.txt.gz',
}

#: Every bundled file, short name -> file name.
FILES = {**SIMILARITY_SETS, **ANALOGY_SETS, **CORPORA}


def names(kind=None):
    """List the short names of the bundled files.

    Parameters
    ----------
    kind : {None, 'similarity', 'analogy', 'corpus'}, optional
        Restrict the list to one kind of file.  ``None`` lists all of them.

    Returns
    -------
    list of str
        Short names, in registry order.
    """
    table = {
        None: FILES,
        'similarity': SIMILARITY_SETS,
        'analogy': ANALOGY_SETS,
        'corpus': CORPORA,
    }
    if kind not in table:
        raise ValueError(
            "kind must be one of None, 'similarity', 'analogy', 'corpus'; got %r" % (kind,))
    return list(table[kind])


def path(name):
    """Absolute path of a bundled file.

    Parameters
    ----------
    name : str
        Short name such as ``'questions-words'``, ``'ws353'``, ``'simlex999'`` or
        ``'enwiki-sample'`` (case-insensitive; ``_`` is accepted for ``-``).

    Returns
    -------
    str
        Absolute path of the file.

    Raises
    ------
    UnknownDatasetError
        If `name` is not a registered short name (a subclass of ``KeyError`` and
        ``ValueError``); the message lists the valid names.
    FileNotFoundError
        If the name is registered but the file is missing from the installation.
    """
    key = str(name).strip().lower().replace('_', '-')
    if key not in FILES:
        raise UnknownDatasetError(
            "unknown bundled data set %r; valid names are: %s"
            % (name, ', '.join(FILES)))
    full = os.path.join(DATA_DIR, FILES[key])
    if not os.path.isfile(full):
        raise FileNotFoundError(
            "bundled data file %r for %r is missing from %s (broken installation?)"
            % (FILES[key], key, DATA_DIR))
    return full
