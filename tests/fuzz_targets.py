"""Fuzz targets: every embkit reader and parser, as a function of the bytes of one file.

A :class:`Target` names a reader, the file name it is given (the layout of some readers comes from the
name), valid seed files to mutate and grammar tokens to insert.  :func:`run_input` writes the bytes, runs
the reader and sorts the result into one outcome:

``parsed``
    The reader returned, and the oracle agrees: a reference parse of the same bytes written without
    embkit's code (:mod:`fuzz_references` for word2vec files, XC files and archives; the rating and corpus
    references here), plus the same reader with tiny read blocks and the vectorised parser against the
    line parser where those exist.
``error``
    A ``ValueError`` or ``OSError`` whose message names the file (``error_line`` counts those that also
    name a line).
``unclear``
    A ``ValueError`` or ``OSError`` that does not name the file.
``crash``
    Any other exception (``KeyError``, ``MemoryError``, ``zlib.error``, ...), or a hang (``timeout``).
``wrong``
    The reader returned something the oracle contradicts (a silent wrong result, the worst outcome), or
    refused a file the reference parse reads.

Used by the small fuzz budget of the test suite (``tests/test_fuzz_readers.py``) and by the long run of
``eval.robustness.fuzz_readers``.
"""
import contextlib
import gzip
import io
import os
import re
import signal
import traceback
from dataclasses import dataclass, field

import numpy as np

if __package__:        # imported as ``tests.fuzz_targets`` (by ``eval.robustness.fuzz_readers``)
    from . import fuzz_references as references
    from .fuzz_mutate import generate, mutate_archive
else:                  # imported by the test suite, which has tests/ on sys.path
    import fuzz_references as references
    from fuzz_mutate import generate, mutate_archive

OUTCOMES = ("parsed", "error", "unclear", "crash", "wrong")
CLEAN_ERRORS = (ValueError, OSError)
_LINE = re.compile(r"\blines? \d+")


class Mismatch(AssertionError):
    """The oracle contradicts what a reader returned."""


class Timeout(BaseException):
    """A reader ran past its time limit (raised by the alarm of :func:`run_input`)."""


@dataclass
class Target:
    """One reader under fuzzing.

    Attributes
    ----------
    name : str
    filename : str
        Name of the file the input is written to.
    read : callable
        ``read(path, data)`` runs the reader (and its oracle, raising :class:`Mismatch`).
    seeds : callable
        ``seeds()`` -> list of valid inputs (bytes).
    tokens : tuple of bytes
        Grammar pieces the mutator inserts.
    archive : bool
        Inputs are ZIP archives (mutated member by member too).
    """

    name: str
    filename: str
    read: object
    seeds: object
    tokens: tuple = ()
    archive: bool = False
    _seed_cache: list = field(default=None, repr=False)

    def seed_inputs(self):
        if self._seed_cache is None:
            self._seed_cache = list(self.seeds())
        return self._seed_cache

    def generate(self, rnd):
        """One input drawn with ``rnd`` (a ``random.Random``)."""
        seeds = self.seed_inputs()
        if self.archive and rnd.random() < 0.9:
            return mutate_archive(rnd.choice(seeds), rnd, seeds)
        return generate(rnd, seeds, self.tokens)


@contextlib.contextmanager
def _alarm(seconds):
    if not seconds or not hasattr(signal, "setitimer"):
        yield
        return

    def fire(signum, frame):
        raise Timeout("no result after %gs" % seconds)

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run_input(target, data, directory, timeout=None):
    """Run ``target`` on ``data``; returns ``(outcome, detail, names_line)`` (see the module docstring)."""
    path = os.path.join(directory, target.filename)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data)
    try:
        with _alarm(timeout):
            target.read(path, data)
    except Mismatch as exc:
        return "wrong", str(exc)[:500], False
    except CLEAN_ERRORS as exc:
        message = str(exc)
        if path not in message:
            return "unclear", "%s: %s" % (type(exc).__name__, message[:300]), False
        return "error", message[:300], bool(_LINE.search(message.replace(path, "")))
    except Timeout as exc:
        return "crash", "timeout: %s" % exc, False
    except Exception as exc:  # noqa: BLE001 - the point is to catch what escapes
        tb = traceback.extract_tb(exc.__traceback__)
        where = "%s:%d" % (os.path.basename(tb[-1].filename), tb[-1].lineno) if tb else "?"
        return "crash", "%s at %s: %s" % (type(exc).__name__, where, str(exc)[:300]), False
    return "parsed", "", False


def differential(first, second, describe):
    """Run two ways of reading the same file; they must agree (both fail alike, or both give equal results).

    ``first()`` and ``second()`` return comparable results; ``describe(a, b)`` returns None when they agree
    or a text saying how they differ.  Returns the first's result (or raises its error).
    """
    outcomes = []
    for fn in (first, second):
        try:
            outcomes.append((fn(), None))
        except CLEAN_ERRORS as exc:
            outcomes.append((None, exc))
    (a, ea), (b, eb) = outcomes
    if (ea is None) != (eb is None):
        raise Mismatch("one reading failed and the other did not: %r / %r" % (ea or "parsed", eb or "parsed"))
    if ea is not None:
        if str(ea) != str(eb):
            raise Mismatch("different errors: %s / %s" % (ea, eb))
        raise ea
    why = describe(a, b)
    if why:
        raise Mismatch(why)
    return a


def _arrays_differ(names, a, b):
    for name, x, y in zip(names, a, b):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape or x.dtype != y.dtype or not np.array_equal(x, y, equal_nan=x.dtype.kind == "f"):
            return "%s differs: %r vs %r" % (name, x[:10], y[:10])
    return None


# ---------------------------------------------------------------------------------------------- text corpora
def _naive_sentences(text, limit):
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    out = []
    for line in text.split("\n"):
        tokens = line.split()
        out.extend(tokens[s:s + limit] for s in range(0, len(tokens), limit))
    return out


def _read_corpus(path, data, decompress=None):
    from embkit.text import corpus as corpus_module
    limit = 3
    old = corpus_module.BLOCK_CHARS
    corpus_module.BLOCK_CHARS = 8   # tiny blocks: every seam of the block reader is exercised
    try:
        got = list(corpus_module.TextCorpus(path, max_sentence_length=limit))
    finally:
        corpus_module.BLOCK_CHARS = old
    try:
        raw = decompress(data) if decompress is not None else data
    except Exception as exc:  # noqa: BLE001
        raise Mismatch("read %d sentences from a file that does not decompress (%s)" % (len(got), exc)) from None
    want = _naive_sentences(raw.decode("utf-8", "replace"), limit)
    if got != want:
        raise Mismatch("sentences differ from a plain split: %r vs %r" % (got[:5], want[:5]))


def _gunzip(data):
    with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
        return fh.read()


CORPUS_SEEDS = (b"the cat sat on the mat\nthe dog sat on the rug\n",
                b"one two three four five six seven eight nine ten eleven twelve " * 3,
                b"caf\xc3\xa9 na\xc3\xafve \xe2\x82\xac\r\nline two\r\n\r\n\tindented\ttabs  \n",
                b"\xff\xfe bad utf8 \xe9t\xe9\nend")


# ---------------------------------------------------------------------------------------------- XC files
def _xc_describe(a, b):
    for name in ("X", "Y"):
        x, y = getattr(a, name), getattr(b, name)
        if x.shape != y.shape or (x != y).nnz:
            return "%s differs between block sizes: %r vs %r" % (name, x.shape, y.shape)
    if a.header != b.header:
        return "header differs: %r vs %r" % (a.header, b.header)
    return None


def _xc_fast_vs_slow(data, header):
    """The vectorised block parser agrees with the line parser wherever it accepts a block."""
    from embkit.xc.parse import IdSpec, parse_block_fast, parse_block_slow
    body = data.split(b"\n", 1)[1] if header and b"\n" in data else data
    if not body.endswith(b"\n"):
        body += b"\n"
    fast = parse_block_fast(body, IdSpec())
    if fast is None:
        return
    try:
        slow = parse_block_slow(body, 1, IdSpec(), "<block>")
    except ValueError as exc:
        raise Mismatch("the fast parser accepted a block the line parser rejects: %s" % exc) from None
    why = _arrays_differ(("label_counts", "labels", "feature_counts", "features", "values"),
                         [fast.label_counts, fast.labels, fast.feature_counts, fast.features, fast.values],
                         [slow.label_counts, slow.labels, slow.feature_counts, slow.features, slow.values])
    if why:
        raise Mismatch("fast and line parsers differ: " + why)


def _read_xc(path, data, **kwargs):
    from embkit.xc.data import read_xc
    reference = references.xc(data, kwargs.get("header", "auto"), kwargs.get("base", 0))
    result = agrees(lambda: differential(lambda: read_xc(path, **kwargs),
                                         lambda: read_xc(path, block_bytes=7, **kwargs), _xc_describe), reference)
    _xc_fast_vs_slow(data, result.header is not None)
    X, Y, shape = reference
    for name, matrix, want in (("X", result.X, X), ("Y", result.Y, Y)):
        coo = matrix.tocoo()
        got = {(int(r), int(c)): np.float32(v) for r, c, v in zip(coo.row, coo.col, coo.data)}
        if got != want:
            raise Mismatch("%s differs from the reference parse: %r vs %r" % (name, sorted(got)[:5], sorted(want)[:5]))
    if (result.X.shape[0], result.X.shape[1], result.Y.shape[1]) != shape:
        raise Mismatch("shapes %s and %s differ from the reference parse's %s" % (result.X.shape, result.Y.shape, shape))


def _read_xc_matrix(path, data):
    from embkit.xc.data import read_sparse_matrix
    reference = references.xc(data, "matrix")
    got = agrees(lambda: read_sparse_matrix(path), reference)
    X, _, shape = reference
    coo = got.tocoo()
    if {(int(r), int(c)): np.float32(v) for r, c, v in zip(coo.row, coo.col, coo.data)} != X \
            or got.shape != shape[:2]:
        raise Mismatch("the matrix differs from the reference parse")


def agrees(read, reference):
    """``read()``, which must fail exactly when the reference parse is None (a clean error on a valid file
    is as wrong as a load of an invalid one)."""
    try:
        result = read()
    except CLEAN_ERRORS as exc:
        if reference is not None:
            raise Mismatch("refused a file the reference parse reads: %s" % exc) from None
        raise
    if reference is None:
        raise Mismatch("loaded a file the reference parse refuses")
    return result


XC_SEEDS = (b"3 5 4\n0,1 0:1.0 3:0.5\n 2:1\n3 4:2.5e-1\n",
            b"#num_feature=5 num_label=4\n1 0:1 1:2\n2, 3 4:0.25\n\n",
            b"0,1 0:1.0 3:0.5\r\n2 1:1\r\n",
            b"2 3 2\n1\t0:-1.5 2:1e3\n0,1 1:7\n")
XC_MATRIX_SEEDS = (b"3 5\n0:1.0 3:0.5\n\n4:2.5e-1 1:1\n", b"2 3\r\n2:1\r\n0:0.125 1:8\r\n")
SVM_SEEDS = (b"1,2 1:0.5 5:1\n3 2:1\n", b"1 1:1\n\n2,3 3:0.125 4:8\n")
XC_TOKENS = (b" 0:1", b",0", b":0.5", b"1:", b" ", b"\n", b"#num_feature=3 num_label=2\n", b"2 2 2\n")


# ---------------------------------------------------------------------------------------------- ratings
_UINT = re.compile(rb"[0-9]{1,16}\Z")
_DECIMAL = re.compile(rb"[0-9]{1,16}(\.[0-9]{1,16})?\Z")
_MAX_ID = 2 ** 31 - 1


def _reference_lines(data):
    """Numbered lines; a CR counts as a line end only before LF (or at the end of the file)."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if data.endswith(b"\r"):
        data += b"\n"
    return enumerate(data.replace(b"\r\n", b"\n").split(b"\n"), 1)


def _reference_movielens(data, sep, csv_header):
    """``(user, item, rating, timestamp)`` lists of a MovieLens file, or None when a line is malformed."""
    rows = []
    for number, line in _reference_lines(data):
        if not line:
            continue
        if csv_header and number == 1 and not line[:1].isdigit():
            if line.count(b",") != 3:
                return None
            continue
        fields = line.split(sep)
        if len(fields) != 4 or not (_UINT.match(fields[0]) and _UINT.match(fields[1])
                                    and _DECIMAL.match(fields[2]) and _UINT.match(fields[3])):
            return None
        if int(fields[0]) > _MAX_ID or int(fields[1]) > _MAX_ID:
            return None
        rows.append((int(fields[0]), int(fields[1]), float(fields[2]), int(fields[3])))
    return rows


def _reference_netflix(data):
    import datetime
    rows, movie = [], None
    for _, line in _reference_lines(data):
        if not line:
            continue
        if line.endswith(b":"):
            if not _UINT.match(line[:-1]) or int(line[:-1]) > _MAX_ID:
                return None
            movie = int(line[:-1])
            continue
        fields = line.split(b",")
        if movie is None or len(fields) != 3 or not (_UINT.match(fields[0]) and _UINT.match(fields[1])):
            return None
        date = re.fullmatch(rb"([0-9]{1,16})-([0-9]{1,16})-([0-9]{1,16})", fields[2])
        if int(fields[0]) > _MAX_ID or date is None:
            return None
        try:
            day = datetime.date(*(int(g) for g in date.groups()))
        except (ValueError, OverflowError):
            return None
        rows.append((int(fields[0]), movie, float(int(fields[1])),
                     (day - datetime.date(1970, 1, 1)).days * 86400))
    return rows


def _compare_ratings(got, want):
    if want is None:
        raise Mismatch("a malformed file was read as %d ratings" % len(got))
    cols = list(zip(*want)) if want else [(), (), (), ()]
    arrays = (got.user, got.item, got.rating, got.timestamp)
    for name, col, arr in zip(("user", "item", "rating", "timestamp"), cols, arrays):
        ref = np.asarray(col, dtype=np.float64)
        if len(ref) != len(arr) or not np.allclose(arr.astype(np.float64), ref, rtol=1e-6, atol=0):
            raise Mismatch("%s differs from a plain parse: %r vs %r" % (name, arr[:5], ref[:5]))


def _ratings_describe(a, b):
    return _arrays_differ(("user", "item", "rating", "timestamp"), (a.user, a.item, a.rating, a.timestamp),
                          (b.user, b.item, b.rating, b.timestamp))


def _read_ratings(path, data, reference):
    from embkit.items.ratings import load_ratings
    got = differential(lambda: load_ratings(path, min_rating=None, titles=False),
                       lambda: load_ratings(path, min_rating=None, titles=False, block_bytes=16),
                       _ratings_describe)
    _compare_ratings(got, reference(data))


TSV_SEEDS = (b"196\t242\t3\t881250949\n186\t302\t3\t891717742\n22\t377\t1\t878887116\n",
             b"1\t2\t5\t0\r\n\r\n3\t4\t4\t99")
DAT_SEEDS = (b"1::1193::5::978300760\n1::661::3::978302109\n", b"10::20::3.5::1\n")
CSV_SEEDS = (b"userId,movieId,rating,timestamp\n1,1,4.0,964982703\n1,3,4.5,964981247\n",
             b"1,2,0.5,1\n2,3,5,2\n")
NETFLIX_SEEDS = (b"1:\n1488844,3,2005-09-06\n822109,5,2005-05-13\n2:\n2059652,4,2005-09-05\n",
                 b"17770:\r\n1,1,1999-12-31\r\n")


# ---------------------------------------------------------------------------------------------- small readers
def _read_titles(path, data):
    from embkit.items.titles import load_titles
    titles = load_titles(path)
    if not all(isinstance(k, int) and k >= 0 and isinstance(v, str) for k, v in titles.items()):
        raise Mismatch("titles hold a key that is not a non-negative int or a title that is not text")


def _read_triples(path, data):
    from embkit.items.cooccurrence import PairCounts
    counts = PairCounts.from_triples(path)
    if counts.matrix.nnz and counts.matrix.data.min() < 0:
        raise Mismatch("negative counts")


def _read_similarity(path, data):
    from embkit.evaluation.readers import read_similarity
    result = read_similarity(path)
    if not np.isfinite(result.scores).all():
        raise Mismatch("non-finite scores")


def _read_analogies(path, data):
    from embkit.evaluation.readers import read_analogies
    read_analogies(path)


def _read_msr(path, data):
    from embkit.evaluation.readers import read_msr_analogies
    read_msr_analogies(path)


def _read_pairs(path, data):
    from embkit.evaluation.pairs import read_pairs
    result = read_pairs(path, key_to_index={"a": 0, "b": 1, "c": 2}, n_contexts=3, n_targets=3)
    if len(result.pairs) and (result.pairs.min() < 0 or result.pairs.max() >= 3):
        raise Mismatch("pair ids out of range: %r" % result.pairs)


def _read_vectors(path, data):
    from embkit.text.vectors import load_vectors
    reference = references.word2vec(data)
    kv = agrees(lambda: load_vectors(path), reference)
    words, vectors = reference
    if kv.index_to_key != words:
        raise Mismatch("words differ from the reference parse: %r vs %r" % (kv.index_to_key[:5], words[:5]))
    if kv.vectors.shape != vectors.shape or not np.array_equal(kv.vectors.view(np.uint32), vectors.view(np.uint32)):
        raise Mismatch("vectors differ from the reference parse: %r vs %r" % (kv.vectors[:2], vectors[:2]))


def _w2v_seeds(binary):
    import tempfile
    from gensim.models import KeyedVectors
    kv = KeyedVectors(3)
    kv.add_vectors(["the", "cat", "caf\xe9"], np.array([[0.1, 0.2, 0.3], [1, 2, 3], [0, 0, 0]], dtype=np.float32))
    with tempfile.TemporaryDirectory() as d:
        kv.save_word2vec_format(os.path.join(d, "v"), binary=binary)
        with open(os.path.join(d, "v"), "rb") as fh:
            return [fh.read()]


# ---------------------------------------------------------------------------------------------- archives
def _archive_seeds():
    """Archives of tiny trained models of each kind (Word2Vec sgns and hs, ItemEmbedding, ExtremeClassifier)."""
    import tempfile
    import scipy.sparse as sp
    from embkit import ExtremeClassifier, ItemEmbedding, Word2Vec
    sentences = [["a", "b", "c", "d"], ["b", "c", "a"], ["d", "a"]] * 5
    rng = np.random.default_rng(0)
    X = sp.random(12, 6, density=0.5, format="csr", random_state=0, dtype=np.float32)
    Y = sp.csr_matrix((np.ones(12), (np.arange(12), rng.integers(0, 4, 12))), shape=(12, 4))
    models = [Word2Vec(sentences, vector_size=4, min_count=1, epochs=1, workers=1, negative=2),
              Word2Vec(sentences, vector_size=4, min_count=1, epochs=1, workers=1, hs=1, negative=0, sg=1),
              ItemEmbedding(vector_size=4, epochs=1, workers=1, negative=2, progress=False).fit(
                  sp.csr_matrix(rng.integers(0, 3, (5, 5)).astype(float))),
              ExtremeClassifier(vector_size=4, epochs=1, workers=1, negative=2, progress=False).fit(X, Y)]
    out = []
    with tempfile.TemporaryDirectory() as d:
        for k, model in enumerate(models):
            path = os.path.join(d, "m%d.embkit" % k)
            model.save(path)
            with open(path, "rb") as fh:
                out.append(fh.read())
    return out


def _exercise(model):
    """Use a loaded model the way a user would, through the nogil kernels."""
    import scipy.sparse as sp
    from embkit import ExtremeClassifier, ItemEmbedding, Word2Vec
    if isinstance(model, Word2Vec):
        model.train([["a", "b", "c", "d", "a"]] * 3, total_examples=3, epochs=1)
        model.wv.most_similar(model.wv.index_to_key[0], topn=2)
    elif isinstance(model, ItemEmbedding):
        model.recommend(model.items[0], N=2)
    elif isinstance(model, ExtremeClassifier):
        n_features = model.feature_vectors.shape[0]
        model.predict(sp.csr_matrix(np.ones((2, n_features), dtype=np.float32)), k=2)


def _read_archive(path, data):
    from embkit.core import persist
    reference = references.archive(data)
    model = persist.load(path)
    why = "the archive loaded but zipfile and numpy cannot read it" if reference is None else \
        references.same_tables(model, reference)
    if why:
        raise Mismatch(why)
    _use(model, path)


def _use(model, path):
    """Use a loaded model; an error of embkit's own checks is clean, anything else a Mismatch."""
    try:
        _exercise(model)
    except (ValueError, IndexError) as exc:
        frame = traceback.extract_tb(exc.__traceback__)[-1].filename
        if os.sep + "embkit" + os.sep not in frame:    # raised by numpy or gensim: an accident, not a check
            raise Mismatch("the archive loaded, but the model fails: %s: %s" % (type(exc).__name__, exc)) from None
        raise ValueError("%s loaded; using it: %s" % (path, exc)) from None   # a check of embkit's
    except Exception as exc:  # noqa: BLE001
        raise Mismatch("the archive loaded, but the model fails: %s: %s" % (type(exc).__name__, exc)) from None


_ARCHIVE = Target("archive", "model.embkit", _read_archive, _archive_seeds, archive=True)


# ---------------------------------------------------------------------------------------------- checkpoints
def _training_data():
    """The data each model kind's checkpoint seeds were trained on: what ``resume`` is given again."""
    import scipy.sparse as sp
    rng = np.random.default_rng(0)
    X = sp.random(12, 6, density=0.5, format="csr", random_state=0, dtype=np.float32)
    Y = sp.csr_matrix((np.ones(12), (np.arange(12), rng.integers(0, 4, 12))), shape=(12, 4))
    return {"Word2Vec": ([["a", "b", "c", "d"], ["b", "c", "a"], ["d", "a"]] * 5,),
            "ItemEmbedding": (sp.csr_matrix(rng.integers(0, 3, (5, 5)).astype(float)),), "ExtremeClassifier": (X, Y)}


def _checkpoint_seeds():
    """A checkpoint of a tiny run of each kind (Word2Vec; ItemEmbedding with the adaptive lsh sampler, whose
    state is saved; ExtremeClassifier's one-vs-all, whose optimizer moments are saved)."""
    import tempfile
    from embkit import ExtremeClassifier, ItemEmbedding, Word2Vec
    from embkit.core.checkpoint import list_checkpoints
    data = _training_data()
    runs = [(Word2Vec, dict(min_count=1, negative=2, checkpoint_every="1 words")),
            (ItemEmbedding, dict(negative=2, sampler="lsh", progress=False, checkpoint_every="1 pairs")),
            (ExtremeClassifier, dict(progress=False, checkpoint_every="1 examples"))]
    out = []
    for cls, kwargs in runs:
        with tempfile.TemporaryDirectory() as d:
            model = cls(vector_size=4, epochs=2, workers=1, checkpoint_dir=d, **kwargs)
            if cls is Word2Vec:
                model.build_vocab(data["Word2Vec"][0])
                model.train()
            else:
                model.fit(*data[cls.__name__])
            with open(list_checkpoints(d)[-1], "rb") as fh:
                out.append(fh.read())
    return out


def _read_checkpoint(path, data):
    import embkit
    from embkit.core import persist
    reference = references.archive(data)
    directory = os.path.dirname(path)
    for name in os.listdir(directory):          # what an earlier input's resumed run wrote
        if name != os.path.basename(path):
            os.unlink(os.path.join(directory, name))
    config, _, _ = persist.load_archive(path, arrays=False)
    kind = persist.model_class(config.get("model"), path)
    model, _ = kind._open_checkpoint(directory, {})
    why = "the checkpoint opened but zipfile and numpy cannot read it" if reference is None else \
        references.same_tables(model, reference)
    if why:
        raise Mismatch(why)
    resumed = getattr(embkit, kind.__name__).resume(directory, *_training_data()[kind.__name__])
    _use(resumed, path)


TARGETS = {t.name: t for t in [
    Target("corpus", "corpus.txt", _read_corpus, lambda: CORPUS_SEEDS),
    Target("corpus_gz", "corpus.txt.gz", lambda p, d: _read_corpus(p, d, _gunzip),
           lambda: [gzip.compress(s, mtime=0) for s in CORPUS_SEEDS]),
    Target("xc", "train.txt", _read_xc, lambda: XC_SEEDS, XC_TOKENS),
    Target("svmlight", "train.svm", lambda p, d: _read_xc(p, d, header=False, base=1), lambda: SVM_SEEDS,
           XC_TOKENS),
    Target("xc_matrix", "trn_X_Xf.txt", _read_xc_matrix, lambda: XC_MATRIX_SEEDS, XC_TOKENS),
    Target("movielens_tsv", "u.data", lambda p, d: _read_ratings(p, d, lambda x: _reference_movielens(
        x, b"\t", False)), lambda: TSV_SEEDS),
    Target("movielens_dat", "ratings.dat", lambda p, d: _read_ratings(p, d, lambda x: _reference_movielens(
        x, b"::", False)), lambda: DAT_SEEDS),
    Target("movielens_csv", "ratings.csv", lambda p, d: _read_ratings(p, d, lambda x: _reference_movielens(
        x, b",", True)), lambda: CSV_SEEDS),
    Target("netflix", "combined_data_1.txt", lambda p, d: _read_ratings(p, d, _reference_netflix),
           lambda: NETFLIX_SEEDS),
    Target("titles_item", "u.item", _read_titles,
           lambda: [b"1|Toy Story (1995)|01-Jan-1995||http://x|0|1\n2|GoldenEye (1995)|01-Jan-1995|\n"]),
    Target("titles_dat", "movies.dat", _read_titles,
           lambda: [b"1::Toy Story (1995)::Animation|Children's\n2::Jumanji (1995)::Adventure\n"]),
    Target("titles_csv", "movies.csv", _read_titles,
           lambda: [b'movieId,title,genres\n1,Toy Story (1995),Animation\n2,"President, The (1995)",Comedy\n']),
    Target("titles_netflix", "movie_titles.txt", _read_titles,
           lambda: [b"1,2003,Dinosaur Planet\r\n2,2004,Isle of Man TT\r\n3,NULL,A title, with a comma\r\n"]),
    Target("triples", "pairs.txt", _read_triples, lambda: [b"0 1 3\n1 2 5\n# comment\n2,0,1\n", b"a b 2\nb c 1\n"]),
    Target("similarity", "ws353.txt", _read_similarity,
           lambda: [b"tiger cat 7.35\nbook paper 7.46\n# comment\ncomputer\tkeyboard\t7.62\n"]),
    Target("analogy", "questions-words.txt", _read_analogies,
           lambda: [b": capital\nAthens Greece Baghdad Iraq\nAthens Greece Bangkok Thailand\n: gram1\n"
                    b"quick quickly slow slowly\n"]),
    Target("msr_analogy", "msr.csv", _read_msr,
           lambda: [b",type,word1,word2,word3,target\n0,JJ_JJR,good,better,rough,rougher\n1,NN,car,cars,dog,dogs\n"]),
    Target("pairs", "heldout.txt", _read_pairs, lambda: [b"0 1\n1 2\n# c\n2 0\n", b"a b\nb c\nc zz\n"]),
    Target("word2vec_text", "vectors.txt", _read_vectors, lambda: _w2v_seeds(False)),
    Target("word2vec_binary", "vectors.bin", _read_vectors, lambda: _w2v_seeds(True)),
    _ARCHIVE,
    Target("checkpoint", os.path.join("run", "checkpoint-000001.embkit"), _read_checkpoint, _checkpoint_seeds,
           archive=True),
]}
