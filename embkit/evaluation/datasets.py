"""Finding evaluation sets: bundled short names, paths, or in-memory data."""

import errno
import os

import numpy as np

from .readers import (
    AnalogyDataset, AnalogyQuestion, SimilarityDataset, read_analogies, read_msr_analogies,
    read_similarity,
)

__all__ = ['bundled_data', 'resolve_path', 'load_similarity', 'load_analogies']


def bundled_data():
    """Return the bundled-data registry module (``embkit.data``)."""
    from embkit import data
    return data


def resolve_path(path_or_name, kind=None):
    """Turn a file path or a bundled short name into an existing path.

    Parameters
    ----------
    path_or_name : str or os.PathLike
        An existing file, or a short name of the bundled registry such as
        ``'ws353'`` or ``'questions-words'``.
    kind : {None, 'similarity', 'analogy', 'corpus'}, optional
        Only used to list the relevant names in the error message.

    Returns
    -------
    str

    Raises
    ------
    FileNotFoundError
        If it is neither an existing file nor a bundled name.
    """
    text = os.fspath(path_or_name)
    if os.path.isfile(text):
        return text
    try:
        registry = bundled_data()
    except ImportError:
        registry = None
    if registry is not None:
        key = text.strip().lower().replace('_', '-')
        if key in registry.FILES:
            return registry.path(key)
        valid = ', '.join(registry.names(kind))
        raise FileNotFoundError(
            errno.ENOENT, 'no such file, and not a bundled data set name (valid names: %s)' % valid, text)
    raise FileNotFoundError(errno.ENOENT, 'evaluation file not found', text)


def _registry_name(path_or_name):
    """Short registry name for `path_or_name` if it is one, else None."""
    if not isinstance(path_or_name, str) or os.path.isfile(path_or_name):
        return None
    key = path_or_name.strip().lower().replace('_', '-')
    try:
        return key if key in bundled_data().FILES else None
    except ImportError:
        return None


def load_similarity(source, name=None):
    """Return a :class:`SimilarityDataset` from a dataset, a path, a bundled name or triples.

    `source` may be a :class:`SimilarityDataset` (returned as is), a path or
    bundled short name, or an iterable of ``(word1, word2, score)`` triples.
    """
    if isinstance(source, SimilarityDataset):
        return source
    if isinstance(source, (str, os.PathLike)):
        dataset = read_similarity(resolve_path(source, 'similarity'))
        label = name or _registry_name(source) or dataset.name
        return SimilarityDataset(label, dataset.pairs, dataset.scores, dataset.path)
    pairs, scores = [], []
    for i, item in enumerate(source):
        try:
            w1, w2, score = item
            score = float(score)
        except (TypeError, ValueError):
            raise ValueError('pair #%d: expected (word1, word2, score), got %r' % (i, item)) from None
        pairs.append((str(w1), str(w2)))
        scores.append(score)
    return SimilarityDataset(name or 'pairs', tuple(pairs), np.asarray(scores, dtype=np.float64))


_ANALOGY_CACHE = {}


def _read_analogies_cached(path):
    """Parse an analogy file, reusing the last parse while the file is unchanged."""
    info = os.stat(path)
    key = (path, info.st_mtime_ns, info.st_size)
    dataset = _ANALOGY_CACHE.get(key)
    if dataset is None:
        reader = read_msr_analogies if path.lower().endswith(('.csv', '.csv.gz')) else read_analogies
        dataset = reader(path)
        _ANALOGY_CACHE.clear()  # keep only the most recent file
        _ANALOGY_CACHE[key] = dataset
    return dataset


def load_analogies(source, name=None):
    """Return an :class:`AnalogyDataset` from a dataset, a path, a bundled name or tuples.

    `source` may be an :class:`AnalogyDataset` (returned as is), a path or
    bundled short name (``.csv`` files are read with :func:`read_msr_analogies`,
    others with :func:`read_analogies`), or an iterable of
    :class:`AnalogyQuestion` or ``(section, a, b, c, d)`` tuples.
    """
    if isinstance(source, AnalogyDataset):
        return source
    if isinstance(source, (str, os.PathLike)):
        path = resolve_path(source, 'analogy')
        dataset = _read_analogies_cached(os.path.abspath(path))
        label = name or _registry_name(source) or dataset.name
        return AnalogyDataset(label, dataset.questions, dataset.path, dataset.section_kinds)
    questions = []
    for i, item in enumerate(source):
        if isinstance(item, AnalogyQuestion):
            questions.append(item)
            continue
        try:
            section, a, b, c, d = item
        except (TypeError, ValueError):
            raise ValueError('question #%d: expected (section, a, b, c, d), got %r' % (i, item)) from None
        questions.append(AnalogyQuestion(str(section), str(a), str(b), str(c), str(d), line=0))
    return AnalogyDataset(name or 'questions', tuple(questions))
