"""Shared fixtures of the embkit test suite.

* The tests import ``embkit`` from this checkout (the repository root is put first on ``sys.path``), so
  the kernels must be built in place first: ``python setup.py build_ext --inplace``.
* ``shared_data`` is the folder of real datasets shared between projects: the environment variable
  ``EMBKIT_SHARED_DATA`` (relative paths are taken from the repository root), else ``../shared/data`` next
  to the repository; tests that use it are skipped when it is absent.
* Corpora are small and written to ``tmp_path`` by the tests themselves.
* ``cache`` is an empty download cache (``EMBKIT_CACHE``) in which any download fails as if offline.
"""
import logging
import os
import sys

import numpy as np
import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)


def _shared_data_dir():
    return os.path.normpath(os.path.join(REPO_ROOT, os.environ.get("EMBKIT_SHARED_DATA", "../shared/data")))


@pytest.fixture(scope="session")
def shared_data():
    """Path of the shared real datasets; skips the test when the folder is not there."""
    path = _shared_data_dir()
    if not os.path.isdir(path):
        pytest.skip("shared datasets not available at %s (set EMBKIT_SHARED_DATA)" % path)
    return path


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty EMBKIT_CACHE folder, downloads forbidden unless a test installs a fake opener."""
    import urllib.error

    from embkit.core import downloads

    folder = tmp_path / "cache"
    monkeypatch.setenv("EMBKIT_CACHE", str(folder))
    monkeypatch.delenv("EMBKIT_OFFLINE", raising=False)

    def no_network(url, timeout):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(downloads, "_urlopen", no_network)
    return folder


@pytest.fixture(autouse=True)
def _quiet_gensim(caplog):
    caplog.set_level(logging.WARNING, logger="gensim")


# A small piece of real-ish English: repeated function words, ties between words of equal count,
# punctuation-free tokens, one sentence per line.
ENGLISH = """\
the cat sat on the mat and the dog sat on the rug
a dog and a cat are friends but the cat likes the mat
the rug is red and the mat is blue
on sunday the dog ran to the park with a ball
the cat did not run because the cat was asleep on the mat
a bird sang in the park and the dog barked at the bird
"""


@pytest.fixture
def english_text():
    """The text of a small English corpus, one sentence per line."""
    return ENGLISH


@pytest.fixture
def english_sentences():
    return [line.split() for line in ENGLISH.splitlines()]


@pytest.fixture
def english_file(tmp_path):
    """The small English corpus written to a file."""
    path = tmp_path / "english.txt"
    path.write_text(ENGLISH, encoding="utf-8")
    return str(path)


def make_planted(n_groups=5, per_group=10, n_sentences=1000, length=10, seed=0):
    """Sentences each drawn from one of ``n_groups`` disjoint topic vocabularies.

    Words of a group co-occur and words of different groups never do, so a working trainer puts every
    word's nearest neighbours in its own group.  Returns ``(groups, sentences)``.
    """
    rng = np.random.default_rng(seed)
    groups = [["t%dw%d" % (g, i) for i in range(per_group)] for g in range(n_groups)]
    sentences = []
    for _ in range(n_sentences):
        group = groups[rng.integers(n_groups)]
        sentences.append([group[i] for i in rng.integers(0, per_group, length)])
    return groups, sentences


@pytest.fixture(scope="session")
def planted():
    """``(groups, sentences)`` of :func:`make_planted` with its defaults (10k tokens, 50 words)."""
    return make_planted()


def neighbour_purity(wv, groups, topn=5):
    """Mean fraction of each word's ``topn`` nearest neighbours that are in the word's own group."""
    fractions = []
    for group in groups:
        members = set(group)
        for word in group:
            top = [w for w, _ in wv.most_similar(word, topn=topn)]
            fractions.append(np.mean([w in members for w in top]))
    return float(np.mean(fractions)), float(np.min(fractions))


@pytest.fixture(scope="session")
def purity():
    """The :func:`neighbour_purity` helper, as a fixture (test modules do not import conftest)."""
    return neighbour_purity
