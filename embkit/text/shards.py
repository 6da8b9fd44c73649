"""Sharded text corpora for cluster training: file lists and globs on any fsspec filesystem, the vocabulary
counted on the workers as they encode the shards, and the shards a replica trains.

A corpus for ``Word2Vec(corpus_file=..., client=...)`` is a path, a glob (``s3://bucket/corpus/*.txt.gz``),
a directory (its files) or a list of them, on any filesystem fsspec knows (local, ``s3://``, ``gs://``,
``hdfs://``, ``memory://``, ...; compression inferred from the name).  Every compressed file is one shard;
a plain-text file larger than :data:`SPLIT_BYTES` is read as several shards, byte ranges of about that size
each cut just after an ASCII blank (so no token is split; a line cut in two is two sentences, as gensim's
``corpus_file`` mode does).  A corpus of one big compressed file trains on one worker: split it into at
least as many files as there are workers, or decompress it.  Files are listed on the client; only the
workers read them, each its own shards.

Vocabulary: the shards are dealt into one group per worker, as the run's replicas will be
(:func:`embkit.cluster.plan.group_shards`), and each group is scanned by one task on the worker its replica
will train on: its shards read one after another into one table of words, and each shard encoded as it is
read, in the table's ids, into chunks kept on that worker (:class:`KeptScans`); the replica opened there
later rewrites them in the vocabulary's ids instead of reading its shards again (a replica placed elsewhere,
after a worker was lost, reads them).  The groups' counts are merged pairwise on the workers, every word
placed where it is first seen in the corpus (put in that order on the worker holding the last merge, which
sends the words as packed bytes: the client does not hash them again), and the client chooses the
vocabulary from the merged counts (``min_count``, ``max_final_vocab``, ``trim_rule``) and sends it once to
every worker.  With ``max_vocab_size`` the words are pruned as they are counted (whenever a table holds more
distinct words, the rarest go, word2vec.c's rule, so a rare word's count can come out lower): then runs of
consecutive shards are counted, one a worker, merged pairwise in corpus order with the same pruning, and
nothing is kept.
"""
import glob as _glob
import io
import logging
import os
import re
import threading
import uuid
from collections import Counter

import numpy as np

from embkit._kernels.words import ChunkBuilder, WordTable
from embkit.core.checkpoint import fingerprint
from embkit.core.heap import kept_buffers
from embkit.cluster import ShardReadError, check_client, worker_name
from embkit.cluster.plan import group_shards
from embkit.text.blocks import tokenized_blocks
from embkit.text.chunk_cache import ChunkCache
from embkit.text.corpus import MAX_SENTENCE_LENGTH, ReadStats, TextCorpus
from embkit.text.scan import SCAN_BLOCK_CHARS, remapped
from embkit.text.vocab import EmptyVocabularyError, EncodedChunk, Vocab, keep_word

logger = logging.getLogger(__name__)

__all__ = ["ShardedCorpus", "TextShard", "ShardCorpus", "resolve_files", "split_ranges", "count_shard",
           "count_shards", "merge_counts", "scan_shards", "merge_scans", "in_corpus_order", "packed_in_corpus_order",
           "KeptScans", "KEPT", "cluster_vocab", "sharded_run", "SPLIT_BYTES"]

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
        self.scan_token = None      # the scan whose chunks the workers keep for this corpus's shards

    def __repr__(self):
        return "ShardedCorpus(%d files, %d shards)" % (len(self.files), sum(len(r) for _, _, r in self.ranges))

    def shards(self):
        """A :class:`TextShard` per file, or per byte range of a large plain-text file."""
        return [TextShard(f, size, self.max_sentence_length, start, stop, getattr(self, "scan_token", None))
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
    workers = sorted(check_client(client))
    shards = corpus.shards()
    threads = max(1, int(model.workers))
    if model.max_vocab_size is None:
        # one scan per replica's group, on its worker (another if that one is gone: its replica then reads)
        token = uuid.uuid4().hex
        place = {id(shard): i for i, shard in enumerate(shards)}
        futures = [client.submit(scan_shards, group, [place[id(s)] for s in group], token, model.chunk_tokens,
                                 corpus.max_sentence_length, threads, workers=[workers[g % len(workers)]],
                                 allow_other_workers=True, pure=False)
                   for g, group in enumerate(group_shards(shards, len(workers)))]
        merge_task, args = merge_scans, ()
    else:
        token = None
        # one task per worker, over consecutive shards (fewer tasks and merges; the same words in the same order)
        n_groups = max(1, min(len(shards), len(workers)))
        cuts = np.linspace(0, len(shards), n_groups + 1).round().astype(int)
        futures = [client.submit(count_shards, shards[a:b], model.max_vocab_size, trim_rule,
                                 corpus.max_sentence_length, threads, pure=False)
                   for a, b in zip(cuts[:-1], cuts[1:])]
        merge_task, args = merge_counts, (model.max_vocab_size, trim_rule)
    while len(futures) > 1:
        merged = [client.submit(merge_task, futures[i], futures[i + 1], *args, pure=False)
                  for i in range(0, len(futures) - 1, 2)]
        futures = merged + futures[len(futures) - len(futures) % 2:]
    if token is not None:       # ordered on the worker holding the scan, sent as packed words
        futures[0] = client.submit(packed_in_corpus_order, futures[0], pure=False)
    words, counts, raw, sentences = futures[0].result()
    if raw == 0:
        raise EmptyVocabularyError("the corpus %r is empty: no tokens found in its %d files"
                                   % (corpus.source, len(corpus.files)))
    vocab, _ = Vocab.from_counts(words, counts, raw, model.min_count, model.max_final_vocab, trim_rule,
                                 bool(model.sorted_vocab))
    vocab.sentences = sentences
    corpus.scan_token = token
    return vocab


# ------------------------------------------------------------------------------ scans kept on the workers
class _ScanTable:
    """The words of one scan task's table (a :class:`~embkit._kernels.words.WordTable`: their provisional ids),
    and their ids in a vocabulary."""

    def __init__(self, table):
        self.table = table
        self._remap = (None, None)

    def remap(self, vocab):
        """``int32`` array: each provisional id's id in ``vocab``, -1 for a word outside it."""
        if self._remap[0] is not vocab:
            self._remap = (vocab, self.table.ids_in(WordTable(vocab.index_to_key)))
        return self._remap[1]


class KeptScans:
    """A worker's encoded shards from the scan of the last vocabulary counted on it, until its replica takes
    them (:meth:`TextShard.open`).  A new scan drops an older one's chunks, so a worker holds at most one
    corpus's (a vocabulary built and never trained, or shards whose replica opened elsewhere)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._token = None
        self._shards = {}       # shard name -> (ChunkCache in provisional ids, _ScanTable)

    def keep(self, token, caches, table):
        """Keep ``caches`` (shard name -> ChunkCache) of one scan under ``token``, with its table."""
        dropped = []
        with self._lock:
            if token != self._token:
                dropped, self._shards, self._token = list(self._shards.values()), {}, token
            for name, cache in caches.items():
                if name in self._shards:        # the same shard scanned again (a task run twice)
                    dropped.append(self._shards[name])
                self._shards[name] = (cache, table)
        for cache, _ in dropped:
            cache.close()

    def take(self, token, name):
        """``(provisional ChunkCache, _ScanTable)`` of shard ``name`` scanned under ``token`` (now the
        caller's to close), or None."""
        if token is None:
            return None
        with self._lock:
            if token != self._token:
                return None
            return self._shards.pop(name, None)


#: this process's kept scans (a Dask worker's)
KEPT = KeptScans()


def _scan_shard(shard, table, chunk_tokens, max_sentence_length, workers):
    """One shard read into ``table`` (its new words added in first-seen order) and encoded in the table's ids;
    ``(ChunkCache, raw words, lines)``."""
    corpus = shard.corpus(max_sentence_length)
    builder = ChunkBuilder(chunk_tokens, corpus.max_sentence_length)
    cache = ChunkCache()
    raw = lines = 0
    try:
        for block, complete in tokenized_blocks(corpus, workers, SCAN_BLOCK_CHARS):
            table.add(block)
            raw += block.n_tokens
            lines += block.newlines + (1 if complete else 0)
            for chunk in builder.add(block, complete):
                cache.append(EncodedChunk(*chunk))
        last = builder.finish()
        if last is not None:
            cache.append(EncodedChunk(*last))
    except (OSError, ValueError, EOFError, UnicodeError) as exc:
        cache.close()
        raise _read_error(shard.name, exc) from None
    except BaseException:
        cache.close()
        raise
    cache.complete = True
    return cache, raw, lines


def scan_shards(shards, places, token, chunk_tokens, max_sentence_length=MAX_SENTENCE_LENGTH, workers=1):
    """Task: count the words of ``shards`` one after another into one table, on ``workers`` threads, and keep
    each shard's chunks, encoded in the table's ids, on this worker under ``token`` (:data:`KEPT`).

    Returns ``(table, keys, raw_words, sentences)``: the :class:`~embkit._kernels.words.WordTable` of the
    words and their counts (it travels as its words' bytes, lengths and counts: no str a word), and ``keys``
    (int64), which order the words as they are first seen in the corpus: ``places`` are the shards' places
    in it, and a word's key is the place of the first shard it is in here (high bits) and its id in the table.
    The table is the one the kept chunks' ids refer to: whoever takes the result must not change it.
    """
    table = WordTable()
    caches, sizes = {}, []
    raw = lines = 0
    try:
        with kept_buffers():
            for shard in shards:
                caches[shard.name], r, n = _scan_shard(shard, table, chunk_tokens, max_sentence_length, workers)
                raw += r
                lines += n
                sizes.append(len(table))
    except BaseException:
        for cache in caches.values():
            cache.close()
        raise
    first = np.repeat(np.asarray(places, dtype=np.int64), np.diff([0] + sizes).astype(np.int64))
    keys = (first << 32) | np.arange(len(table), dtype=np.int64)
    KEPT.keep(token, caches, _ScanTable(table))
    return table, keys, raw, lines


def merge_scans(a, b):
    """Task: two scans' ``(table, keys, raw_words, sentences)`` merged into a new table (neither is changed):
    counts added, each word keeping the smaller key (its first place in the corpus)."""
    table = a[0].reordered(np.arange(len(a[0])))      # a copy
    ids = table.absorb(b[0])
    keys = np.concatenate([a[1], np.zeros(len(table) - len(a[0]), dtype=np.int64)])
    new = ids >= len(a[0])
    keys[ids[new]] = b[1][new]
    old = ids[~new]
    keys[old] = np.minimum(keys[old], b[1][~new])
    return table, keys, a[2] + b[2], a[3] + b[3]


def packed_in_corpus_order(scan):
    """Task: :func:`in_corpus_order` of a merged scan with its words as
    :class:`~embkit._kernels.words.PackedWords`, put in that order without hashing them again (the client
    reads the words and counts, and looks none up)."""
    table, keys, raw, sentences = scan
    words = table.packed(np.argsort(keys, kind="stable"))
    return words, words.counts(), raw, sentences


def in_corpus_order(scan):
    """``(words, counts, raw_words, sentences)`` of a merged scan: ``words`` a
    :class:`~embkit._kernels.words.WordTable` of its words in first-seen order."""
    table, keys, raw, sentences = scan
    order = np.argsort(keys, kind="stable")
    if np.array_equal(order, np.arange(len(order))):
        return table, table.counts(), raw, sentences
    table = table.reordered(order)
    return table, table.counts(), raw, sentences


class TextShard:
    """A corpus file, or its bytes ``[start, stop)``, as a replica's shard: encoded with the vocabulary into a
    chunk cache on the worker."""

    def __init__(self, path, size, max_sentence_length=MAX_SENTENCE_LENGTH, start=0, stop=None, scan_token=None):
        self.path = path
        self.scan_token = scan_token        # the vocabulary's scan, whose chunks of this shard a worker may keep
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
        """Encode the shard with the model's vocabulary: its chunks kept on this worker by the vocabulary's scan,
        rewritten, or else the file read again; returns its in-vocabulary tokens (the units of one epoch)."""
        threads = max(1, int(model.workers))
        kept = KEPT.take(getattr(self, "scan_token", None), self.name)
        if kept is not None:
            provisional, table = kept
            try:
                self.cache = remapped(provisional, table.remap(model.vocab), threads)
            finally:
                provisional.close()
            return self.cache.tokens
        self.cache = ChunkCache()
        for chunk in model.vocab.encode(self.corpus(), model.chunk_tokens, threads):
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
