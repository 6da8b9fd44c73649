"""Sharded text corpora for cluster training: file lists and globs on any fsspec filesystem, the vocabulary
counted per shard on the workers, and the shards a replica reads.

A corpus for ``Word2Vec(corpus_file=..., client=...)`` is a path, a glob (``s3://bucket/corpus/*.txt.gz``),
a directory (its files) or a list of them, on any filesystem fsspec knows (local, ``s3://``, ``gs://``,
``hdfs://``, ``memory://``, ...; compression inferred from the name).  Every compressed file is one shard;
a plain-text file larger than :data:`SPLIT_BYTES` is read as several shards, byte ranges of about that size
each cut just after an ASCII blank (so no token is split; a line cut in two is two sentences, as gensim's
``corpus_file`` mode does).  A corpus of one big compressed file trains on one worker: split it into at
least as many files as there are workers, or decompress it.  Files are listed on the client; only the
workers read them, each its own shards.

Vocabulary: the shards are cut into one run of consecutive shards per worker, and each run is counted by one
task on a worker, its shards one after another into one table (``max_vocab_size`` bounds what it holds:
whenever it counts more distinct words, the rarest are pruned, word2vec.c's rule, so a rare word's count can
come out lower); the runs' counts are merged pairwise on the workers in corpus order, each merge pruned to
``max_vocab_size`` the same way; the client chooses the vocabulary from the merged counts (``min_count``,
``max_final_vocab``, ``trim_rule``) and sends it once to every worker.
"""
import glob as _glob
import io
import logging
import os
import re
from collections import Counter

import numpy as np

from embkit.core.checkpoint import fingerprint
from embkit.core.heap import kept_buffers
from embkit.cluster import ShardReadError, check_client, worker_name
from embkit.text.chunk_cache import ChunkCache
from embkit.text.corpus import MAX_SENTENCE_LENGTH, ReadStats, TextCorpus
from embkit.text.vocab import EmptyVocabularyError, EncodedChunk, Vocab, keep_word

logger = logging.getLogger(__name__)

__all__ = ["ShardedCorpus", "TextShard", "ShardCorpus", "resolve_files", "split_ranges", "count_shard",
           "count_shards", "merge_counts", "cluster_vocab", "sharded_run", "SPLIT_BYTES"]

#: plain-text files larger than this many bytes are read as several shards (byte ranges of about this size)
SPLIT_BYTES = 32 << 20
#: ASCII blanks: a byte range starts just after one (UTF-8 never has these bytes inside a character)
_BLANK_BYTE = re.compile(rb"[ \t\n\r\x0b\x0c]")


def _fsspec():
    try:
        import fsspec
    except ImportError:
        raise ImportError("a corpus for cluster training is listed through fsspec: pip install 'embkit[cluster]'") \
            from None
    return fsspec


def resolve_files(spec):
    """``[(url, size)]`` of the files of ``spec`` (path, glob, directory or a list of them), in order.

    FileNotFoundError when a path does not exist or a glob matches no file.
    """
    _fsspec()
    from fsspec.core import url_to_fs
    specs = [spec] if isinstance(spec, (str, os.PathLike)) else list(spec)
    if not specs:
        raise ValueError("corpus_file is an empty list")
    found = []
    for item in specs:
        item = os.fspath(item)
        fs, path = url_to_fs(item)
        if _glob.has_magic(path):
            paths = sorted(p for p in fs.glob(path) if not fs.isdir(p))
            if not paths:
                raise FileNotFoundError("the corpus glob %r matches no file" % item)
        elif fs.isdir(path):
            paths = sorted(p for p in fs.find(path) if not os.path.basename(p).startswith("."))
            if not paths:
                raise ValueError("corpus directory %r contains no files" % item)
        elif fs.exists(path):
            paths = [path]
        else:
            raise FileNotFoundError("corpus file %r does not exist" % item)
        for p in paths:
            url = p if "://" not in item else fs.unstrip_protocol(p)
            found.append((url, int(fs.size(p) or 0)))
    return found


def split_ranges(path, size, split_bytes=None):
    """Byte ranges ``[(start, stop)]`` of at most ``split_bytes`` (default :data:`SPLIT_BYTES`) covering a
    plain-text file of ``size`` bytes (``[(0, None)]``, the whole file, for a compressed or small one);
    :class:`ShardCorpus` moves each cut to just after a blank."""
    from fsspec.utils import infer_compression
    split_bytes = SPLIT_BYTES if split_bytes is None else split_bytes
    if size <= split_bytes or infer_compression(path) is not None:
        return [(0, None)]
    n = -(-size // split_bytes)
    return [(size * k // n, size * (k + 1) // n) for k in range(n)]


def range_name(path, start, stop):
    """How errors and logs name a shard: the file, and its byte range when it is one."""
    return str(path) if stop is None else "%s [bytes %d-%d)" % (path, start, stop)


class _ByteRange(io.RawIOBase):
    """The bytes ``[start, stop)`` of a binary file, as a stream."""

    def __init__(self, fh, start, stop):
        super().__init__()
        self.fh, self.left = fh, stop - start
        fh.seek(start)

    def readable(self):
        return True

    def readinto(self, buffer):
        data = self.fh.read(min(len(buffer), self.left))
        buffer[:len(data)] = data
        self.left -= len(data)
        return len(data)

    def close(self):
        self.fh.close()
        super().close()


def _after_blank(fh, offset, size):
    """The first position at or after ``offset`` just after an ASCII blank (0 and ``size`` as they are):
    where a byte range cut at ``offset`` really starts."""
    if offset <= 0 or offset >= size:
        return min(max(offset, 0), size)
    fh.seek(offset - 1)
    pos = offset - 1
    while True:
        block = fh.read(1 << 16)
        if not block:
            return size
        blank = _BLANK_BYTE.search(block)
        if blank is not None:
            return pos + blank.start() + 1
        pos += len(block)


class ShardCorpus(TextCorpus):
    """One shard of a sharded corpus, read through fsspec (a :class:`~embkit.text.corpus.TextCorpus`): a
    whole file, or with ``stop`` the tokens starting in its bytes ``[start, stop)`` (each end moved to just
    after a blank, so the ranges of a file read every token once)."""

    def __init__(self, path, max_sentence_length=MAX_SENTENCE_LENGTH, start=0, stop=None, size=None):
        # not TextCorpus.__init__: the file is not local, and the worker's open reports a missing one
        self.source = str(path)
        self.files = [self.source]
        self.max_sentence_length = max_sentence_length
        self.start, self.stop, self.size = start, stop, size
        self.stats = ReadStats()

    def _open(self, path):
        fsspec = _fsspec()
        if self.stop is None:
            return fsspec.open(path, "rt", compression="infer", encoding="utf-8", errors="replace").open()
        fh = fsspec.open(path, "rb").open()
        try:
            size = fh.size if self.size is None else self.size
            start, stop = _after_blank(fh, self.start, size), _after_blank(fh, self.stop, size)
            raw = _ByteRange(fh, start, max(start, stop))
        except BaseException:
            fh.close()
            raise
        return io.TextIOWrapper(io.BufferedReader(raw), encoding="utf-8", errors="replace")


def _read_error(path, exc):
    return ShardReadError("worker %s cannot read the shard %s: %s" % (worker_name(), path, exc))


def count_shard(shard, max_vocab_size=None, trim_rule=None, max_sentence_length=MAX_SENTENCE_LENGTH):
    """Task: ``(words, counts, raw_words, sentences)`` of one shard, a :class:`TextShard` (see
    :meth:`Vocab.count`)."""
    return count_shards([shard], max_vocab_size, trim_rule, max_sentence_length)


class _ShardChain:
    """Shards read one after another as one corpus (``iter_blocks``), a read error naming its shard."""

    def __init__(self, shards, max_sentence_length):
        self.corpora = [(shard.name, shard.corpus(max_sentence_length)) for shard in shards]
        self.max_sentence_length = max_sentence_length
        self.stats = ReadStats()

    def __repr__(self):
        return "shards %s" % ", ".join(name for name, _ in self.corpora)

    def iter_blocks(self, block_chars):
        for name, corpus in self.corpora:
            try:
                yield from corpus.iter_blocks(block_chars)
            except (OSError, ValueError, EOFError, UnicodeError) as exc:
                raise _read_error(name, exc) from None


def count_shards(shards, max_vocab_size=None, trim_rule=None, max_sentence_length=MAX_SENTENCE_LENGTH, workers=1):
    """Task: ``(words, counts, raw_words, sentences)`` of :class:`TextShard` objects counted one after another
    into one table (words in first-seen order, as merging the shards' counts in order gives them; with
    ``max_vocab_size``, pruned as the words are counted across them), split into words on ``workers``
    threads.  Empty shards count nothing."""
    try:
        with kept_buffers():
            return Vocab.count(_ShardChain(shards, max_sentence_length), max_vocab_size, trim_rule, workers=workers)
    except EmptyVocabularyError:        # empty shards: the corpus may still have words
        return [], np.zeros(0, np.int64), 0, 0


def _prune(counter, max_vocab_size, trim_rule):
    """word2vec.c's reduction: drop words seen at most 1, 2, ... times until at most ``max_vocab_size``."""
    min_reduce = 1
    while max_vocab_size is not None and len(counter) > max_vocab_size:
        counter = Counter({w: c for w, c in counter.items()
                           if c > min_reduce or (trim_rule is not None and keep_word(w, c, min_reduce + 1,
                                                                                    trim_rule))})
        min_reduce += 1
    return counter


def merge_counts(a, b, max_vocab_size=None, trim_rule=None):
    """Task: two shards' counts merged (first-seen order of ``a`` then ``b``), pruned to ``max_vocab_size``."""
    counter = Counter(dict(zip(a[0], a[1].tolist())))
    counter.update(dict(zip(b[0], b[1].tolist())))
    counter = _prune(counter, max_vocab_size, trim_rule)
    words = list(counter)
    return words, np.fromiter(counter.values(), np.int64, len(words)), a[2] + b[2], a[3] + b[3]


class ShardedCorpus:
    """The client's view of a sharded corpus: its files and sizes (never their contents)."""

    def __init__(self, spec, max_sentence_length=MAX_SENTENCE_LENGTH):
        self.files_sizes = resolve_files(spec)
        self.files = [f for f, _ in self.files_sizes]
        self.source = spec if isinstance(spec, str) else [os.fspath(s) for s in spec]
        self.max_sentence_length = max_sentence_length
        self.ranges = [(f, size, split_ranges(f, size)) for f, size in self.files_sizes]

    def __repr__(self):
        return "ShardedCorpus(%d files, %d shards)" % (len(self.files), sum(len(r) for _, _, r in self.ranges))

    def shards(self):
        """A :class:`TextShard` per file, or per byte range of a large plain-text file."""
        return [TextShard(f, size, self.max_sentence_length, start, stop)
                for f, size, ranges in self.ranges for start, stop in ranges]

    def digest(self):
        """A digest of the file names and sizes, and of the byte ranges of the files read in several shards
        (what a resumed run checks; the contents stay unread)."""
        listing = "\n".join("%s\t%d" % (f, size) + "".join("\t%d-%d" % r for r in ranges if r[1] is not None)
                            for f, size, ranges in self.ranges)
        return fingerprint(np.frombuffer(listing.encode("utf-8", "surrogatepass"), dtype=np.uint8))


def cluster_vocab(client, corpus, model, trim_rule=None):
    """The vocabulary of ``corpus`` counted on the workers (see the module docstring); returns a
    :class:`Vocab` chosen with the model's ``min_count``, ``max_final_vocab`` and ``sorted_vocab``."""
    check_client(client)
    shards = corpus.shards()
    # one task per worker, over consecutive shards (fewer tasks and merges; the same words in the same order)
    n_groups = max(1, min(len(shards), len(client.scheduler_info().get("workers", ())) or 1))
    cuts = np.linspace(0, len(shards), n_groups + 1).round().astype(int)
    futures = [client.submit(count_shards, shards[a:b], model.max_vocab_size, trim_rule,
                             corpus.max_sentence_length, max(1, int(model.workers)), pure=False)
               for a, b in zip(cuts[:-1], cuts[1:])]
    while len(futures) > 1:
        merged = [client.submit(merge_counts, futures[i], futures[i + 1], model.max_vocab_size, trim_rule,
                                pure=False) for i in range(0, len(futures) - 1, 2)]
        futures = merged + futures[len(futures) - len(futures) % 2:]
    words, counts, raw, sentences = futures[0].result()
    if raw == 0:
        raise EmptyVocabularyError("the corpus %r is empty: no tokens found in its %d files"
                                   % (corpus.source, len(corpus.files)))
    vocab, _ = Vocab.from_counts(words, counts, raw, model.min_count, model.max_final_vocab, trim_rule,
                                 bool(model.sorted_vocab))
    vocab.sentences = sentences
    return vocab


class TextShard:
    """A corpus file, or its bytes ``[start, stop)``, as a replica's shard: encoded with the vocabulary into a
    chunk cache on the worker."""

    def __init__(self, path, size, max_sentence_length=MAX_SENTENCE_LENGTH, start=0, stop=None):
        self.path = path
        self.file_size = size
        self.size = size if stop is None else stop - start
        self.start, self.stop = start, stop
        self.name = range_name(path, start, stop)
        self.max_sentence_length = max_sentence_length
        self.cache = None

    def corpus(self, max_sentence_length=None):
        """The shard's :class:`ShardCorpus`."""
        return ShardCorpus(self.path, max_sentence_length or self.max_sentence_length, self.start, self.stop,
                           self.file_size)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["cache"] = None
        return state

    def open(self, model):
        """Read and encode the file; returns its in-vocabulary tokens (the units of one epoch)."""
        self.cache = ChunkCache()
        for chunk in model.vocab.encode(self.corpus(), model.chunk_tokens, max(1, int(model.workers))):
            self.cache.append(chunk)
        self.cache.complete = True
        return self.cache.tokens

    def chunks(self, model, start, stop):
        """The sentences of the shard whose first token lies in ``[start, stop)``, as chunks."""
        offset = 0
        for i, (n, n_sentences, raw_words) in enumerate(self.cache.entries()):
            lo, hi = max(start - offset, 0), min(stop - offset, n)
            if hi > 0 and lo < n and n_sentences:     # read only the chunks, and tokens, of the range
                ends = self.cache.read_ends(i)
                starts = np.concatenate([[0], ends[:-1]])
                pick = np.flatnonzero((starts >= lo) & (starts < hi))
                if pick.size:
                    first, last = int(starts[pick[0]]), int(ends[pick[-1]])
                    raw = raw_words * last // max(n, 1) - raw_words * first // max(n, 1)
                    yield EncodedChunk(self.cache.read_tokens(i, first, last),
                                       np.ascontiguousarray(ends[pick] - first, dtype=np.int32), raw)
            offset += n
            if offset >= stop:
                return

    def close(self):
        if self.cache is not None:
            self.cache.close()
            self.cache = None


def sharded_run(model, corpus_iterable, corpus_file, epochs, start_alpha, end_alpha, progress):
    """``Word2Vec.train`` with ``client=``: the run on the workers (the keyword arguments of
    :func:`embkit.cluster.client.train_on_cluster`) of the vocabulary's sharded corpus, or of another one
    given as ``corpus_file``."""
    corpus = model.corpus
    if corpus_iterable is not None:
        raise ValueError("a cluster run (client=) reads its corpus on the workers: give corpus_file, not an "
                         "in-memory iterable")
    if corpus_file is not None:
        corpus = ShardedCorpus(corpus_file, model.max_sentence_length)
    if not isinstance(corpus, ShardedCorpus):
        raise RuntimeError("no sharded corpus to train on: build the vocabulary with client= set, or pass "
                           "corpus_file")
    epochs, alpha, min_alpha = model._run_settings(epochs, start_alpha, end_alpha)
    run_args = {"corpus_file": corpus.source, "vocab_corpus": corpus is model.corpus, "epochs": epochs,
                "start_alpha": start_alpha, "end_alpha": end_alpha}
    model._forget_norms()       # the tables change: the normed vectors are made again when asked for
    model.min_alpha_yet_reached = min_alpha
    return {"shards": corpus.shards(), "epochs": epochs, "alpha": alpha, "min_alpha": min_alpha,
            "progress": model.progress if progress is None else progress,
            "desc": "%s %dd on a cluster" % ("skip-gram" if model.sg else "cbow", model.vector_size),
            "run_args": run_args, "fingerprint": model._vocab_digest() + "-" + corpus.digest()}
