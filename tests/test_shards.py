"""Shards of a corpus for cluster training read on their own, without a cluster: a large plain-text file
read as byte ranges gives every token once, in order.  Skipped without fsspec (the [cluster] extra)."""
import gzip
import os
import random

import numpy as np
import pytest

pytest.importorskip("fsspec")

from embkit.text import shards as shards_mod  # noqa: E402
from embkit.text.shards import ShardCorpus, ShardedCorpus, TextShard, count_shard, split_ranges  # noqa: E402


def awkward_text(lines=80, one_line=False):
    """Words of 1-12 characters, some of them several UTF-8 bytes a character, between runs of mixed blanks."""
    rng = random.Random(5)
    alphabet = "abcxyz\u00e9\u00df\u4e2d\u6587\U0001f600"
    blanks = [" ", "  ", "\t", " \t ", "\r\n" if not one_line else " "]
    out = []
    for _ in range(lines):
        words = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12))) for _ in range(rng.randint(0, 30))]
        line = ""
        for w in words:
            line += w + rng.choice(blanks)
        out.append(rng.choice(["", " "]) + line)
    return (" " if one_line else "\n").join(out)


def ranged_tokens(path, split_bytes):
    size = os.path.getsize(path)
    ranges = split_ranges(path, size, split_bytes)
    tokens = []
    for start, stop in ranges:
        tokens += [t for sentence in ShardCorpus(path, 10_000, start, stop, size) for t in sentence]
    return ranges, tokens


@pytest.mark.parametrize("one_line", [False, True], ids=["lines", "one line"])
@pytest.mark.parametrize("split_bytes", [1, 3, 64, 1000])
def test_byte_ranges_read_every_token_once_in_order(tmp_path, one_line, split_bytes):
    text = awkward_text(one_line=one_line)
    path = str(tmp_path / "corpus.txt")
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)
    ranges, tokens = ranged_tokens(path, split_bytes)
    assert len(ranges) == -(-os.path.getsize(path) // split_bytes)
    assert tokens == text.split()


def test_byte_ranges_of_a_file_on_another_filesystem(tmp_path):
    # fsspec's in-memory filesystem stands for s3/gcs/hdfs: the ranges are read through fsspec's file objects
    import fsspec
    text = awkward_text()
    url = "memory://embkit-test/corpus.txt"
    with fsspec.open(url, "wb") as fh:
        fh.write(text.encode("utf-8"))
    try:
        corpus = ShardedCorpus(url)
        size = corpus.files_sizes[0][1]
        tokens = []
        for start, stop in split_ranges(url, size, 97):
            tokens += [t for sentence in ShardCorpus(url, 10_000, start, stop, size) for t in sentence]
        assert tokens == text.split()
    finally:
        fsspec.filesystem("memory").rm("/embkit-test", recursive=True)


def test_small_and_compressed_files_are_one_shard(tmp_path):
    text = awkward_text()
    plain, packed = str(tmp_path / "a.txt"), str(tmp_path / "b.txt.gz")
    with open(plain, "w", encoding="utf-8") as fh:
        fh.write(text)
    with gzip.open(packed, "wt", encoding="utf-8") as fh:
        fh.write(text * 50)
    assert split_ranges(plain, os.path.getsize(plain)) == [(0, None)]        # below SPLIT_BYTES
    assert split_ranges(packed, 10 * os.path.getsize(packed), 16) == [(0, None)]
    assert len(split_ranges(plain, os.path.getsize(plain), 100)) > 1


def test_a_sharded_corpus_splits_large_plain_files_and_counts_each_range(tmp_path, monkeypatch):
    text = awkward_text()
    path = tmp_path / "big.txt"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setattr(shards_mod, "SPLIT_BYTES", 500)
    corpus = ShardedCorpus(str(path))
    shards = corpus.shards()
    assert len(shards) == -(-os.path.getsize(path) // 500)
    assert all(isinstance(s, TextShard) and "[bytes " in s.name for s in shards)
    assert sum(s.size for s in shards) == os.path.getsize(path)
    counts = {}
    for shard in shards:
        words, freq, raw, _ = count_shard(shard)
        for w, c in zip(words, freq.tolist()):
            counts[w] = counts.get(w, 0) + c
    expected = {}
    for w in text.split():
        expected[w] = expected.get(w, 0) + 1
    assert counts == expected
    # the ranges take part in the corpus's digest (a resumed run checks it); an unsplit corpus keeps its own
    monkeypatch.setattr(shards_mod, "SPLIT_BYTES", 1000)
    assert ShardedCorpus(str(path)).digest() != corpus.digest()
    monkeypatch.setattr(shards_mod, "SPLIT_BYTES", 1 << 30)
    whole = ShardedCorpus(str(path))
    assert len(whole.shards()) == 1 and whole.shards()[0].name == str(path)


def test_an_unreadable_byte_range_names_the_file_and_the_range(tmp_path, monkeypatch):
    from embkit.cluster import ShardReadError
    path = tmp_path / "gone.txt"
    path.write_text(awkward_text(), encoding="utf-8")
    monkeypatch.setattr(shards_mod, "SPLIT_BYTES", 300)
    shard = ShardedCorpus(str(path)).shards()[1]
    path.unlink()
    with pytest.raises(ShardReadError, match=r"gone\.txt \[bytes \d+-\d+\)"):
        count_shard(shard)


def test_shards_counted_one_after_another_give_the_merged_counts_in_order(tmp_path, monkeypatch):
    from embkit.cluster import ShardReadError
    from embkit.text.shards import count_shards, merge_counts
    path = tmp_path / "big.txt"
    path.write_text(awkward_text() + "\n" + awkward_text()[::-1], encoding="utf-8")
    (tmp_path / "empty.txt").write_text("", encoding="utf-8")
    monkeypatch.setattr(shards_mod, "SPLIT_BYTES", 400)
    shards = ShardedCorpus(str(path)).shards() + ShardedCorpus(str(tmp_path / "empty.txt")).shards()
    assert len(shards) >= 4
    merged = count_shard(shards[0])
    for shard in shards[1:]:
        merged = merge_counts(merged, count_shard(shard))
    words, counts, raw, sentences = count_shards(shards)
    assert words == merged[0] and counts.tolist() == merged[1].tolist()        # first-seen order kept
    threaded = count_shards(shards, workers=3)                                  # split on threads: the same
    assert threaded[0] == words and threaded[1].tolist() == counts.tolist() and threaded[2:] == (raw, sentences)
    assert (raw, sentences) == (merged[2], merged[3])
    assert count_shards(shards[-1:])[2] == 0                                      # an empty shard counts nothing
    shards[2].path = str(tmp_path / "gone.txt")
    with pytest.raises(ShardReadError, match=r"gone\.txt"):
        count_shards(shards)


def test_a_scan_keeps_each_shards_chunks_and_a_shard_opened_from_them_equals_one_read_again(tmp_path, monkeypatch):
    from embkit import Word2Vec
    from embkit.text.shards import KEPT, in_corpus_order, merge_scans, packed_in_corpus_order, scan_shards
    text = awkward_text(400)
    path = tmp_path / "big.txt"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setattr(shards_mod, "SPLIT_BYTES", 3000)
    shards = ShardedCorpus(str(path)).shards()
    assert len(shards) >= 4
    model = Word2Vec(vector_size=8, min_count=2, chunk_tokens=50, workers=1)
    model.build_vocab(corpus_file=str(path))
    # two scans (groups [0, 2, ...] and [1, 3, ...]) merged: the counts of one scan of every shard in order
    whole = scan_shards(shards, list(range(len(shards))), "whole", 50, workers=2)
    halves = [scan_shards(shards[g::2], list(range(g, len(shards), 2)), "halves", 50, workers=2) for g in (0, 1)]
    before = [(h[0].words_list(), h[0].counts().tolist(), h[1].tolist()) for h in halves]
    words, counts, raw, sentences = in_corpus_order(merge_scans(*halves))
    assert words.words_list() == whole[0].words_list() and counts.tolist() == whole[0].counts().tolist()
    assert (raw, sentences) == whole[2:]
    packed, packed_counts, *rest = packed_in_corpus_order(merge_scans(*halves))     # what the client receives
    assert packed.words_list() == words.words_list() and packed_counts.tolist() == counts.tolist()
    assert tuple(rest) == whole[2:]
    # the merge leaves the scans' tables (those of the kept chunks) as they were
    assert before == [(h[0].words_list(), h[0].counts().tolist(), h[1].tolist()) for h in halves]
    # the "whole" scan's chunks were dropped by the newer scan; the "halves" ones are kept, once
    assert KEPT.take("whole", shards[0].name) is None
    for shard in shards:
        kept = TextShard(shard.path, shard.file_size, start=shard.start, stop=shard.stop, scan_token="halves")
        read = TextShard(shard.path, shard.file_size, start=shard.start, stop=shard.stop)
        assert kept.open(model) == read.open(model)
        pieces = [list(kept.chunks(model, 0, kept.cache.tokens)), list(read.chunks(model, 0, read.cache.tokens))]
        tokens = [np.concatenate([c.tokens for c in p] or [np.zeros(0, np.int32)]) for p in pieces]
        lengths = [np.concatenate([np.diff(np.concatenate([[0], c.ends])) for c in p] or [[]]) for p in pieces]
        assert np.array_equal(tokens[0], tokens[1]) and np.array_equal(lengths[0], lengths[1])
        assert KEPT.take("halves", shard.name) is None          # taken: a second open reads the file
        kept.close()
        read.close()


def test_a_scan_that_cannot_read_a_shard_names_it_and_keeps_nothing(tmp_path):
    from embkit.cluster import ShardReadError
    from embkit.text.shards import KEPT, scan_shards
    good = tmp_path / "good.txt"
    good.write_text("a b c\n", encoding="utf-8")
    shards = ShardedCorpus(str(good)).shards() * 2
    shards[1] = TextShard(str(tmp_path / "gone.txt"), 10)
    with pytest.raises(ShardReadError, match=r"gone\.txt"):
        scan_shards(shards, [0, 1], "broken", 100)
    assert KEPT.take("broken", shards[0].name) is None
