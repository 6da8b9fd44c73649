"""Readers for word-similarity and word-analogy benchmark files.

Three formats are understood:

* word-similarity files: one ``word1 word2 score`` triple per line, separated by
  tabs or blanks (the wordvectors.org format).  Blank lines and lines starting
  with ``#`` are ignored; CRLF line endings and a missing final newline are fine.
* word-analogy files in the Google ``questions-words.txt`` format: ``: section``
  header lines followed by ``a b c d`` questions ("a is to b as c is to d").
* the MSR syntactic analogy set in vecto's CSV conversion
  (header ``,type,word1,word2,word3,target``).

Files ending in ``.gz`` are decompressed transparently.  Every reader raises
:class:`FileNotFoundError` naming the file when it does not exist and
:class:`ValueError` naming the file and the 1-based line number of the first
malformed line.
"""

import contextlib
import csv
import errno
import gzip
import math
import os
import zlib
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    'SimilarityDataset', 'AnalogyQuestion', 'AnalogyDataset',
    'read_similarity', 'read_analogies', 'read_msr_analogies',
]


@dataclass(frozen=True, eq=False)
class SimilarityDataset:
    """Word pairs with human similarity judgements.

    Attributes
    ----------
    name : str
        Short name used in result tables.
    pairs : tuple of (str, str)
        The word pairs, in file order.
    scores : numpy.ndarray
        Gold scores (float64), aligned with `pairs`.
    path : str or None
        File the pairs were read from, if any.
    """

    name: str
    pairs: tuple
    scores: np.ndarray
    path: str = None

    def __len__(self):
        return len(self.pairs)


@dataclass(frozen=True)
class AnalogyQuestion:
    """One analogy question: `a` is to `b` as `c` is to `d`."""

    section: str
    a: str
    b: str
    c: str
    d: str
    line: int = 0


@dataclass(frozen=True, eq=False)
class AnalogyDataset:
    """Analogy questions grouped in sections.

    Attributes
    ----------
    name : str
        Short name used in result tables.
    questions : tuple of AnalogyQuestion
        All questions, in file order.
    path : str or None
        File the questions were read from, if any.
    section_kinds : dict of {str: str}
        Optional explicit ``'semantic'``/``'syntactic'`` label per section.
        Sections not listed are syntactic when their name starts with ``'gram'``
        (the Google convention) and semantic otherwise.
    """

    name: str
    questions: tuple
    path: str = None
    section_kinds: dict = field(default_factory=dict)

    def __len__(self):
        return len(self.questions)

    @property
    def sections(self):
        """Section names in order of first appearance."""
        return list(dict.fromkeys(q.section for q in self.questions))

    def kind(self, section):
        """Return ``'syntactic'`` or ``'semantic'`` for a section name."""
        if section in self.section_kinds:
            return self.section_kinds[section]
        return 'syntactic' if section.startswith('gram') else 'semantic'


def _dataset_name(path):
    base = os.path.basename(os.fspath(path))
    for suffix in ('.gz', '.txt', '.csv', '.tsv'):
        if base.lower().endswith(suffix):
            base = base[:-len(suffix)]
    return base


@contextlib.contextmanager
def _open_text(path):
    """Open `path` for reading lines of text (gzip by suffix); yields an iterator of lines.

    Lines end with ``"\\n"`` (CRLF and a lone CR end a line too); a UTF-8 byte order mark is dropped.
    Invalid UTF-8, a damaged ``.gz`` file or an I/O error raise an error naming the file (and line).
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(errno.ENOENT, 'evaluation file not found', path)
    opener = gzip.open if path.endswith('.gz') else open
    try:
        with opener(path, 'rb') as fh:
            yield _decoded_lines(fh, path)
    except OSError as exc:                        # I/O errors, a file that is not gzip
        if path in str(exc):
            raise
        message = 'cannot read %s: %s' % (path, exc.strerror or exc)
        raise (OSError(exc.errno, message) if exc.errno else OSError(message)) from exc
    except (EOFError, zlib.error) as exc:         # a damaged .gz file
        raise ValueError('cannot read %s: %s: %s' % (path, type(exc).__name__, exc)) from exc


def _decoded_lines(fh, path):
    number = 0
    for raw in fh:
        if number == 0 and raw.startswith(b'\xef\xbb\xbf'):
            raw = raw[3:]
        body = raw[:-1] if raw.endswith(b'\n') else raw
        if body.endswith(b'\r'):
            body = body[:-1]
        for piece in body.split(b'\r'):
            number += 1
            try:
                text = piece.decode('utf-8')
            except UnicodeDecodeError as exc:
                raise ValueError('%s, line %d: not valid UTF-8 (byte 0x%02x at column %d)'
                                 % (path, number, piece[exc.start], exc.start + 1)) from None
            yield text + '\n'


def _malformed(path, line_no, message, line):
    return ValueError('%s, line %d: %s (got %r)' % (path, line_no, message, line.rstrip('\r\n')))


def read_similarity(path, delimiter=None, comment='#', header=False, name=None):
    """Read a word-similarity file of ``word1 word2 score`` lines.

    Parameters
    ----------
    path : str or os.PathLike
        The file (``.gz`` allowed).
    delimiter : str, optional
        Field separator.  By default a line is split on tabs when it contains
        one, otherwise on runs of blanks.
    comment : str, optional
        Lines starting with this prefix are skipped.  Blank lines are always skipped.
    header : bool, optional
        Skip the first non-comment line (a column header).
    name : str, optional
        Name of the data set; defaults to the file name without extension.

    Returns
    -------
    SimilarityDataset

    Raises
    ------
    FileNotFoundError
        If `path` does not exist.
    ValueError
        On a line without exactly three fields or with a non-numeric score,
        naming the file and line number; or if the file holds no pairs.
    """
    path = os.fspath(path)
    pairs, scores = [], []
    with _open_text(path) as fin:
        for line_no, line in enumerate(fin, 1):
            text = line.strip()
            if not text or (comment and text.startswith(comment)):
                continue
            if header:
                header = False
                continue
            if delimiter is not None:
                fields = [f.strip() for f in text.split(delimiter)]
            elif '\t' in text:
                fields = [f.strip() for f in text.split('\t')]
            else:
                fields = text.split()
            if len(fields) != 3 or not fields[0] or not fields[1]:
                raise _malformed(path, line_no, 'expected 3 fields "word1 word2 score"', line)
            try:
                score = float(fields[2])
            except ValueError:
                raise _malformed(path, line_no, 'score %r is not a number' % fields[2], line) from None
            if not math.isfinite(score):
                raise _malformed(path, line_no, 'score is not finite', line)
            pairs.append((fields[0], fields[1]))
            scores.append(score)
    if not pairs:
        raise ValueError('%s: no word pairs found' % path)
    return SimilarityDataset(name or _dataset_name(path), tuple(pairs),
                             np.asarray(scores, dtype=np.float64), path)


def read_analogies(path, comment='#', name=None):
    """Read an analogy file in the Google ``questions-words.txt`` format.

    Parameters
    ----------
    path : str or os.PathLike
        The file (``.gz`` allowed).  ``: name`` lines open a section, every other
        non-blank line is a question ``a b c d``.
    comment : str, optional
        Lines starting with this prefix are skipped.
    name : str, optional
        Name of the data set; defaults to the file name without extension.

    Returns
    -------
    AnalogyDataset

    Raises
    ------
    FileNotFoundError
        If `path` does not exist.
    ValueError
        On a question line without exactly four words, a question before the
        first section header or an empty section name (file and line named),
        or if the file holds no questions.
    """
    path = os.fspath(path)
    questions = []
    section = None
    with _open_text(path) as fin:
        for line_no, line in enumerate(fin, 1):
            text = line.strip()
            if not text or (comment and text.startswith(comment)):
                continue
            if text.startswith(':'):
                section = text[1:].strip()
                if not section:
                    raise _malformed(path, line_no, 'empty section name', line)
                continue
            words = text.split()
            if len(words) != 4:
                raise _malformed(path, line_no, 'expected 4 words "a b c d"', line)
            if section is None:
                raise _malformed(path, line_no, 'question before the first ": section" header', line)
            questions.append(AnalogyQuestion(section, *words, line=line_no))
    if not questions:
        raise ValueError('%s: no analogy questions found' % path)
    return AnalogyDataset(name or _dataset_name(path), tuple(questions), path)


def read_msr_analogies(path, name=None):
    """Read the MSR syntactic analogies in vecto's CSV format.

    Parameters
    ----------
    path : str or os.PathLike
        CSV file with columns ``word1, word2, word3, target`` and optionally
        ``type`` (used as the section name); other columns are ignored.
    name : str, optional
        Name of the data set; defaults to the file name without extension.

    Returns
    -------
    AnalogyDataset
        All sections are labelled syntactic.

    Raises
    ------
    FileNotFoundError
        If `path` does not exist.
    ValueError
        If required columns are missing, or a row has an empty word or a
        word containing blanks (file and line named).
    """
    path = os.fspath(path)
    questions = []
    with _open_text(path) as fin:
        reader = csv.reader(fin)
        columns = None
        for row in reader:
            line_no = reader.line_num
            if not row or all(not cell.strip() for cell in row):
                continue
            if columns is None:
                columns = [c.strip().lower() for c in row]
                missing = [c for c in ('word1', 'word2', 'word3', 'target') if c not in columns]
                if missing:
                    raise _malformed(path, line_no, 'CSV header lacks column(s) %s' % ', '.join(missing),
                                     ','.join(row))
                at = {c: columns.index(c) for c in ('word1', 'word2', 'word3', 'target')}
                at_type = columns.index('type') if 'type' in columns else None
                continue
            if len(row) != len(columns):
                raise _malformed(path, line_no, 'expected %d columns' % len(columns), ','.join(row))
            words = [row[at[c]].strip() for c in ('word1', 'word2', 'word3', 'target')]
            if any(not w or len(w.split()) != 1 for w in words):
                raise _malformed(path, line_no, 'expected four single words', ','.join(row))
            section = row[at_type].strip() if at_type is not None else 'msr'
            questions.append(AnalogyQuestion(section or 'msr', *words, line=line_no))
    if not questions:
        raise ValueError('%s: no analogy questions found' % path)
    kinds = {q.section: 'syntactic' for q in questions}
    return AnalogyDataset(name or _dataset_name(path), tuple(questions), path, kinds)
