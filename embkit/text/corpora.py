"""Training corpora by name: the bundled sample and downloadable corpora (text8).

Checksums
---------
``text8.zip`` is pinned by size and SHA-256, and the extracted ``text8`` too.  The digests are not
computed here (this package was written offline); they are the values published independently by several
public projects that download the same file (e.g. a torchtext-based ``_download_extract_validate`` call
and a corpus registry with ``zip_sha256``/``raw_sha256`` fields), which agree with each other, and the
sizes are the widely quoted 31,344,016 bytes (zip) and 100,000,000 bytes (text).

Examples
--------
>>> from embkit.text.corpora import resolve_corpus
>>> resolve_corpus(None).endswith('enwiki-sample.txt.gz')   # bundled sample
True
>>> resolve_corpus('my/corpus.txt')                         # anything else passes through
'my/corpus.txt'
"""
import os

from embkit.core.downloads import RemoteCorpus, fetch

__all__ = ["CORPORA", "BUNDLED_DEFAULT", "fetch_corpus", "resolve_corpus"]

#: The corpus used when none is given.
BUNDLED_DEFAULT = "enwiki-sample"

#: Downloadable corpora, name -> :class:`RemoteCorpus`.
CORPORA = {
    "text8": RemoteCorpus(
        name="text8",
        url="http://mattmahoney.net/dc/text8.zip",
        filename="text8.zip",
        size=31344016,
        sha256="a6640522afe85d1963ad56c05b0ede0a0c000dddc9671758a6cc09b7a38e5232",
        member="text8",
        member_size=100000000,
        member_sha256="6e890197040d37d85beb962ae1f041ff1d9a9ca8d20c7d99c85027eebf51dca7",
        description="first 10^8 bytes of English Wikipedia (2006), cleaned; 17M words on one line",
    ),
}


def fetch_corpus(name, progress=True):
    """Local path of the registered corpus ``name`` (see :data:`CORPORA`), downloaded on first use.

    Raises KeyError for an unknown name; see :func:`embkit.core.downloads.fetch` for the rest.
    """
    return fetch(CORPORA[name], progress=progress)


def _bundled_path(name):
    from embkit import data
    return data.path(name)


def resolve_corpus(name_or_path, progress=True):
    """Turn a ``--corpus`` value into something ``Word2Vec(corpus_file=...)`` reads.

    Parameters
    ----------
    name_or_path : str, os.PathLike or None
        None or ``'enwiki-sample'``: the bundled sample corpus; a name of :data:`CORPORA` (``'text8'``):
        the cached download (fetched on first use); anything else -- a file, a directory or a URL -- is
        returned unchanged.  An existing local file or folder wins over a registry name of the same
        spelling.
    progress : bool
        Show a progress bar if a download is needed.

    Returns
    -------
    str
        A local path, or the URL given.
    """
    if name_or_path is None:
        return _bundled_path(BUNDLED_DEFAULT)
    text = os.fspath(name_or_path)
    if os.path.exists(text):
        return text
    key = text.strip().lower()
    if key == BUNDLED_DEFAULT:
        return _bundled_path(key)
    if key in CORPORA:
        return fetch_corpus(key, progress=progress)
    return text
