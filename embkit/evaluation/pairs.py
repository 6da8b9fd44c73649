"""Held-out (context, target) pair files and model tables for the ranking evaluation.

A pair file has one pair per line, two fields separated by blanks or a tab:
``context_word target_word``, or ``i j`` integer row ids.  Blank lines and
lines starting with ``#`` are skipped; ``.gz`` files are decompressed.  With
``kind='auto'`` a file whose fields are all non-negative integers holds ids,
any other file holds words (pass ``kind='words'`` for a vocabulary of numbers).
Pairs with a word outside the vocabulary are skipped and counted; malformed
lines and ids out of range are errors naming the file and line.
"""

import os
from dataclasses import dataclass

import numpy as np

from .ranking import evaluate_ranking
from .ranking_results import RankingResult
from .readers import _dataset_name, _malformed, _open_text

__all__ = ['PairDataset', 'read_pairs', 'evaluate_ranking_pairs', 'PAIR_KINDS']

#: Largest row id (tables are indexed with int64).
_MAX_ID = np.iinfo(np.int64).max
#: Values of the `kind` argument of :func:`read_pairs`.
PAIR_KINDS = ('auto', 'words', 'ids')


@dataclass(frozen=True, eq=False)
class PairDataset:
    """Held-out pairs as row ids.

    Attributes
    ----------
    name : str
        Name used in result tables.
    pairs : numpy.ndarray of int64, shape (n, 2)
        ``(context id, target id)`` rows of the pairs that are in the vocabulary.
    lines : numpy.ndarray of int64
        1-based line number of each pair in the file.
    n_skipped : int
        Pairs skipped because a word is not in the vocabulary.
    kind : str
        ``'words'`` or ``'ids'``.
    path : str or None
        The file read.
    """

    name: str
    pairs: np.ndarray
    lines: np.ndarray
    n_skipped: int = 0
    kind: str = 'ids'
    path: str = None

    def __len__(self):
        return len(self.pairs)


def _is_id(text):
    return text.isdigit() and text.isascii()


def read_pairs(path, key_to_index=None, kind='auto', n_contexts=None, n_targets=None, comment='#', name=None):
    """Read a file of held-out ``context target`` pairs.

    Parameters
    ----------
    path : str or os.PathLike
        The file (``.gz`` allowed).
    key_to_index : mapping of str to int, optional
        Vocabulary for word pairs (e.g. ``kv.key_to_index``); the same ids
        index the context and the target table.  Required for word pairs.
    kind : {'auto', 'words', 'ids'}, optional
        How to read the fields (see the module docstring).
    n_contexts, n_targets : int, optional
        When given, ids must lie in ``[0, n_contexts)`` and ``[0, n_targets)``.
    comment : str, optional
        Lines starting with this prefix are skipped.
    name : str, optional
        Name of the set; defaults to the file name without extension.

    Returns
    -------
    PairDataset

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    ValueError
        On a line without exactly two fields, a field that is not an id in an
        ids file, an id out of range (file and line named), a word file without
        `key_to_index`, or a file without any pair.
    """
    if kind not in PAIR_KINDS:
        raise ValueError('kind must be one of %s, got %r' % (', '.join(PAIR_KINDS), kind))
    path = os.fspath(path)
    fields, lines, all_ids = [], [], True
    with _open_text(path) as fin:
        for line_no, line in enumerate(fin, 1):
            text = line.strip()
            if not text or (comment and text.startswith(comment)):
                continue
            parts = text.split()
            if len(parts) != 2:
                raise _malformed(path, line_no, 'expected 2 fields "context target"', line)
            if kind == 'ids' and not (_is_id(parts[0]) and _is_id(parts[1])):
                raise _malformed(path, line_no, 'expected two non-negative integer ids', line)
            all_ids = all_ids and _is_id(parts[0]) and _is_id(parts[1])
            fields.append(parts)
            lines.append(line_no)
    if not fields:
        raise ValueError('%s: no pairs found' % path)
    kind = ('ids' if all_ids else 'words') if kind == 'auto' else kind
    label = name or _dataset_name(path)
    lines = np.asarray(lines, dtype=np.int64)
    if kind == 'ids':
        for k, (a, b) in enumerate(fields):
            if max(int(a), int(b)) > _MAX_ID:
                raise ValueError('%s, line %d: id %d is too large (at most %d)'
                                 % (path, lines[k], max(int(a), int(b)), _MAX_ID))
        pairs = np.array([[int(a), int(b)] for a, b in fields], dtype=np.int64)
        for col, limit, what in ((0, n_contexts, 'context'), (1, n_targets, 'target')):
            if limit is not None and (pairs[:, col] >= limit).any():
                k = int(np.argmax(pairs[:, col] >= limit))
                raise ValueError('%s, line %d: %s id %d is out of range [0, %d)'
                                 % (path, lines[k], what, pairs[k, col], limit))
        return PairDataset(label, pairs, lines, 0, 'ids', path)
    if key_to_index is None:
        raise ValueError('%s holds words; a vocabulary (key_to_index) is needed to map them to rows' % path)
    ids = [(key_to_index.get(a), key_to_index.get(b)) for a, b in fields]
    found = np.array([a is not None and b is not None for a, b in ids], dtype=bool)
    pairs = np.array([p for p, ok in zip(ids, found) if ok], dtype=np.int64).reshape(-1, 2)
    return PairDataset(label, pairs, lines[found], int((~found).sum()), 'words', path)


def evaluate_ranking_pairs(context_vectors, target_vectors, dataset, **kwargs):
    """:func:`~embkit.evaluation.evaluate_ranking` on a :class:`PairDataset`.

    A set whose pairs were all skipped (out of vocabulary) gives a result with
    ``n_pairs == 0`` and no metrics instead of an error.  Keyword arguments go
    to :func:`~embkit.evaluation.evaluate_ranking`.
    """
    kwargs.setdefault('name', dataset.name)
    if not len(dataset):
        return RankingResult(kwargs['name'], 0, len(target_vectors), n_skipped=dataset.n_skipped)
    result = evaluate_ranking(context_vectors, target_vectors, dataset.pairs, **kwargs)
    result.n_skipped = dataset.n_skipped
    return result
