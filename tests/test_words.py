"""The C word splitter and counter (``embkit._kernels.words``) and the threaded file path built on it
(``embkit.text.blocks``): the same tokens, counts, first-seen order, pruning and chunks as the Python path
of an iterable corpus, for any number of threads."""
import threading
from collections import Counter

import numpy as np
import pytest

from embkit._kernels.words import ChunkBuilder, WordTable, remap_chunk, tokenize, whitespace
from embkit.text.corpus import IterableCorpus, TextCorpus
from embkit.text import blocks as blocks_module, scan as scan_module
from embkit.text.blocks import PartedTable
from embkit.text.scan import scan_corpus
from embkit.text.vocab import Vocab, encode_chunks

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings, strategies as st  # noqa: E402

#: characters the generated texts are made of: words, every kind of white space, line breaks, non-ASCII, and
#: characters that are not white space next to those that are (control characters, "!" just past the space)
ALPHABET = "ab\u00e9\u4e2d\U0001f600 \t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u1680\u2000\u200a\u200b\u2028\u2029\u202f\u205f" \
           "\u3000\u180e\ufeff\x01\x08\x0e\x1b\x7f!\u0080\u00a1\u2010"


def test_white_space_is_that_of_str_split():
    expected = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000 and chr(c).isspace())
    assert whitespace() == expected


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.text(alphabet=ALPHABET, max_size=200))
def test_tokenize_splits_as_str_split(text):
    block = tokenize(text)
    tokens = text.split()
    words, counts = block.words_and_counts()
    assert words == list(Counter(tokens))                     # first-seen order
    assert counts.tolist() == list(Counter(tokens).values())
    assert block.n_tokens == len(tokens)
    assert block.newlines == text.count("\n")


#: words that share their first 8 or 16 bytes and differ in a short tail (or only in their length), of 1 to 20 bytes
TAILS = ["abcdefgh", "abcdefghi", "abcdefghj", "abcdefghij", "abcdefgha", "abcdefghabcdefgh", "abcdefghabcdefghi",
         "abcdefghabcdefghj", "a", "ab", "abc", "abcdefg", "\u00e9\u00e9\u00e9\u00e9", "\u00e9\u00e9\u00e9\u00e9a",
         "\u4e2d\u4e2d\u4e2d", "\u4e2d\u4e2d\u4e2da", "x\U0001f600y"]


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(TAILS + [" ", "\n", "  "]), max_size=40), st.sampled_from(["", " ", "\n"]))
def test_words_read_from_text_and_from_strings_are_the_same_words(pieces, end):
    # a block's words are hashed and compared reading past their ends where the text goes on (and one that
    # ends the text without it); the words given as strings are read only to their ends: both are one word
    text = " ".join(pieces) + end
    block = tokenize(text)
    tokens = text.split()
    words, counts = block.words_and_counts()
    assert words == list(Counter(tokens)) and counts.tolist() == list(Counter(tokens).values())
    vocabulary = WordTable(TAILS)
    vocabulary.look_up(block)
    builder = ChunkBuilder(1000, 1000)
    builder.add(block, True)
    last = builder.finish()
    assert (last[0].tolist() if last is not None else []) == [TAILS.index(t) for t in tokens]
    table = WordTable()
    table.add(block)
    assert table.ids_in(vocabulary).tolist() == [TAILS.index(w) for w in words]
    assert vocabulary.ids_in(table).tolist() == [words.index(w) if w in words else -1 for w in TAILS]


def test_two_words_of_one_hash_stay_two_words():
    # each pair has one 64-bit hash and length (found by a search): only their bytes tell them apart; the
    # first pair differs in its first 8 bytes and its tail, the second in its first 16 bytes alone
    for first, second in (("collide!ABDAABA", "ivscebusGcZuwCi"), ("collide!AAAAAAAAz", "rzchtyzdxbIzIXJhz")):
        _two_words_of_one_hash(first, second)


def _two_words_of_one_hash(first, second):
    for text in (first + " " + second, second + "  " + first + "\n" + second + " x"):
        block = tokenize(text)
        words, counts = block.words_and_counts()
        assert words == list(Counter(text.split())) and counts.tolist() == list(Counter(text.split()).values())
        table = WordTable()
        table.add(block)
        assert table.words_list() == words
    alone = WordTable([first])
    block = tokenize(second + " " + first)
    alone.look_up(block)
    builder = ChunkBuilder(10, 10)
    builder.add(block, True)
    assert builder.finish()[0].tolist() == [0]
    assert WordTable([second]).ids_in(alone).tolist() == [-1]


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.text(alphabet="abcdefgh", min_size=1, max_size=30),
                          st.sampled_from(["", "\x01", "\x7f", "!", "\u00e9", "\u0080", "\u4e2d", "\u200b"]),
                          st.integers(0, 30), st.sampled_from([" ", "\n", "\t", "\x1f", "\u00a0", "\u3000", "  \r\n"])),
                max_size=30))
def test_long_words_split_as_str_split_wherever_a_character_sits_in_them(words):
    # words read 8 bytes at a time: a character that ends a word or not at any place in it, and near the end
    text = "".join(w[:k] + odd + w[k:] + blank for w, odd, k, blank in words)
    for piece in (text, text.rstrip()):
        block = tokenize(piece)
        tokens = piece.split()
        got, counts = block.words_and_counts()
        assert got == list(Counter(tokens)) and counts.tolist() == list(Counter(tokens).values())
        assert block.n_tokens == len(tokens) and block.newlines == piece.count("\n")


def test_table_merges_blocks_in_first_seen_order_and_looks_up():
    blocks = ["b a b\nc", "d a\n\ne b", "f"]
    table = WordTable()
    for text in blocks:
        table.add(tokenize(text))
    expected = Counter(" ".join(blocks).split())
    assert table.words_list() == list(expected) and table.counts().tolist() == list(expected.values())
    assert table[2] == "c" and len(table) == 6
    with pytest.raises(IndexError):
        table[6]
    assert table.words_list(np.array([2, 0, 5])) == ["c", "b", "f"] and table.words_list([]) == []
    with pytest.raises(IndexError, match="word id 6 out of range"):
        table.words_list([1, 6])
    vocab = WordTable(["a", "e", "zz"])
    block = tokenize("e x a e")
    vocab.look_up(block)
    builder = ChunkBuilder(100, 100)
    builder.add(block, True)
    tokens, ends, raw = builder.finish()
    assert tokens.tolist() == [1, 0, 1] and ends.tolist() == [3] and raw == 4
    assert vocab.counts().tolist() == [0, 0, 0]               # looking up counts nothing
    with pytest.raises(ValueError, match="given twice"):
        WordTable(["a", "a"])


def _growing_blocks(seed, n_blocks=60):
    """Blocks of text whose words keep arriving (a table of them grows, rehashes and moves its bytes all along)."""
    rng = np.random.default_rng(seed)
    blocks = []
    for b in range(n_blocks):
        known = rng.integers(0, 40 * (b + 1), 300)                   # mostly words of earlier blocks
        new = np.arange(40 * b, 40 * (b + 1))
        words = ["w%d%s" % (i, "\u00e9" * int(i % 3)) for i in np.concatenate([known, new])]
        rng.shuffle(words)
        blocks.append(" ".join(words[:170]) + "\n" + " ".join(words[170:]))
    return blocks


def _added_whole(blocks):
    table, builder, chunks = WordTable(), ChunkBuilder(500, 100), []
    for text in blocks:
        block = tokenize(text)
        table.add(block)
        chunks += builder.add(block, True)
    return table, chunks


def _chunk_lists(chunks):
    return [(t.tolist(), e.tolist(), r) for t, e, r in chunks]


@pytest.mark.parametrize("parts", [2, 3, 7])
def test_parts_added_in_any_interleaving_give_the_words_counts_and_order_of_one_table(parts):
    blocks = _growing_blocks(1)
    expected, expected_chunks = _added_whole(blocks)
    tokenized = [tokenize(text) for text in blocks]
    for block in tokenized:
        block.open_parts(parts)
    tables = [WordTable() for _ in range(parts)]
    rng = np.random.default_rng(parts)
    taken = [0] * parts                     # each table takes the blocks in order, the tables in any order
    while min(taken) < len(blocks):
        part = int(rng.choice([p for p in range(parts) if taken[p] < len(blocks)]))
        tables[part].add_part(tokenized[taken[part]], part, parts, taken[part])
        taken[part] += 1
    assert min(len(t) for t in tables) > 0
    table = PartedTable(parts)
    table.tables = tables
    words, counts, ids = table.in_first_seen_order()
    assert words.words_list(np.arange(len(words))) == expected.words_list()
    assert [words[i] for i in (0, 5, len(words) - 1)] == expected.words_list([0, 5, len(words) - 1])
    assert counts.tolist() == expected.counts().tolist()
    remap = np.full(int(ids.max()) + 1, -1, dtype=np.int32)
    remap[ids] = np.arange(len(ids), dtype=np.int32)        # an id in the chunks -> its id in one table
    builder, chunks = ChunkBuilder(500, 100), []
    for block in tokenized:
        chunks += [(remap[t], e, r) for t, e, r in builder.add(block, True)]
    assert _chunk_lists(chunks) == _chunk_lists(expected_chunks)


def test_a_part_is_added_only_to_a_table_filled_by_parts_of_blocks_listed_for_as_many_parts():
    block = tokenize("a b c a")
    with pytest.raises(ValueError, match="not listed by 2 parts"):
        WordTable().add_part(block, 0, 2, 0)
    block.open_parts(2)
    with pytest.raises(ValueError, match="not listed by 3 parts"):
        WordTable().add_part(block, 0, 3, 0)
    with pytest.raises(ValueError, match="part 2 of 2"):
        WordTable().add_part(block, 2, 2, 0)
    with pytest.raises(ValueError, match="takes no words in another way"):
        WordTable(["a"]).add_part(block, 0, 2, 0)
    with pytest.raises(ValueError, match="were not all added by add_part"):
        WordTable(["a"]).first_seen()
    whole = tokenize("a b c a")
    whole.open_parts(1)
    table = WordTable()
    table.add_part(whole, 0, 1, 5)
    assert table.words_list() == ["a", "b", "c"] and table.first_seen().tolist() == [5 << 32, 5 << 32 | 1, 5 << 32 | 2]
    table.add(tokenize("d"))                # a word added another way has no place
    with pytest.raises(ValueError, match="were not all added by add_part"):
        table.first_seen()
    with pytest.raises(ValueError, match="takes no words in another way"):
        table.add_part(whole, 0, 1, 6)
    table.prune(2)                          # renumbered: where the words were first seen is gone
    assert table.words_list() == ["a"]
    with pytest.raises(ValueError, match="were not all added by add_part"):
        table.first_seen()


class _FailingTable:
    """A word table whose add_part fails at its ``after``-th call (out of memory, as a real table may)."""

    def __init__(self, after):
        self.table, self.calls, self.after = WordTable(), 0, after

    def add_part(self, *args):
        self.calls += 1
        if self.calls == self.after:
            raise MemoryError("out of memory while counting words")
        return self.table.add_part(*args)


def test_a_part_that_fails_stops_the_scan_with_its_error_and_leaves_no_thread(tmp_path, monkeypatch):
    path = tmp_path / "growing.txt"
    path.write_text("\n".join(_growing_blocks(3, 100)) + "\n", encoding="utf-8")
    real = blocks_module.PartedTable

    class Failing(real):
        def __init__(self, parts):
            super().__init__(parts)
            self.tables[1] = _FailingTable(5)

    monkeypatch.setattr(scan_module, "PartedTable", Failing)
    monkeypatch.setattr(scan_module, "PARTED_WORKERS", 2)
    monkeypatch.setattr(scan_module, "SCAN_BLOCK_CHARS", 2048)
    before = threading.active_count()
    with pytest.raises((MemoryError, RuntimeError)) as caught:
        scan_corpus(TextCorpus(path), min_count=1, workers=3, chunk_tokens=700)
    error = caught.value if isinstance(caught.value, MemoryError) else caught.value.__cause__
    assert isinstance(error, MemoryError) and "counting words" in str(error)
    assert threading.active_count() == before


def test_a_scan_takes_at_most_its_threads_of_the_workers(tmp_path, monkeypatch):
    path = tmp_path / "words.txt"
    path.write_text("".join("w%d the a\n" % (i % 50) for i in range(2000)), encoding="utf-8")
    seen = []
    real = scan_module._scan_file
    monkeypatch.setattr(scan_module, "_scan_file", lambda *args: seen.append(args[3]) or real(*args))
    vocabs = [scan_corpus(TextCorpus(path), min_count=1, workers=w)[0] for w in (1, 16)]
    assert seen == [1, scan_module.SCAN_MAX_WORKERS]
    assert vocabs[0].index_to_key == vocabs[1].index_to_key


@pytest.mark.parametrize("workers", [2, 3, 4])
def test_the_parted_scan_gives_the_vocabulary_and_chunks_of_one_thread(tmp_path, workers, monkeypatch):
    monkeypatch.setattr(scan_module, "PARTED_WORKERS", 2)
    monkeypatch.setattr(scan_module, "SCAN_BLOCK_CHARS", 2048)       # a few hundred blocks
    path = tmp_path / "growing.txt"
    # many words of equal counts: their order in the vocabulary is the order they were first seen in
    path.write_text("\n".join(_growing_blocks(2, 200)) + "\n", encoding="utf-8")
    runs = []
    for n in (1, workers):
        vocab, cache = scan_corpus(TextCorpus(path), min_count=2, workers=n, chunk_tokens=700)
        try:
            runs.append((list(vocab.index_to_key), vocab.counts.tolist(), vocab.distinct_words, cache.digest()))
        finally:
            cache.close()
    assert len(runs[0][0]) > 5000 and runs[1] == runs[0]
    assert len(set(runs[0][1])) < len(runs[0][1]) / 10


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.text(alphabet=ALPHABET, max_size=200), st.lists(st.text(alphabet="ab\u00e9\u4e2d\U0001f600", min_size=1,
                                                                  max_size=3), unique=True, max_size=12))
def test_ids_in_maps_every_word_to_its_id_in_another_table_as_a_dict_would(text, vocabulary):
    table = WordTable()
    table.add(tokenize(text))
    index = {w: i for i, w in enumerate(vocabulary)}
    ids = table.ids_in(WordTable(vocabulary))
    assert ids.dtype == np.int32
    assert ids.tolist() == [index.get(w, -1) for w in table.words_list()]


@settings(max_examples=100, deadline=None, derandomize=True)
@given(st.text(alphabet=ALPHABET, max_size=200), st.text(alphabet=ALPHABET, max_size=200), st.randoms())
def test_a_table_pickles_absorbs_and_reorders_as_the_counts_of_its_words(first, second, rnd):
    import pickle
    a, b = WordTable(), WordTable()
    a.add(tokenize(first))
    b.add(tokenize(second))
    a.prune(2)      # a pruned table's words move in its memory: they must still pickle in id order
    copy = pickle.loads(pickle.dumps(a))
    assert copy.words_list() == a.words_list() and copy.counts().tolist() == a.counts().tolist()
    expected = Counter({w: c for w, c in Counter(first.split()).items() if c >= 2})
    expected.update(second.split())
    ids = copy.absorb(b)                        # b's words and counts added, new ones at the end in b's order
    assert copy.words_list() == list(expected) and copy.counts().tolist() == list(expected.values())
    assert [copy[i] for i in ids] == b.words_list()
    order = list(range(len(copy)))
    rnd.shuffle(order)
    moved = copy.reordered(order)
    assert moved.words_list() == [copy[i] for i in order]
    assert moved.counts().tolist() == copy.counts()[order].tolist()
    with pytest.raises(ValueError, match="permutation"):
        copy.reordered([0] * len(copy) if len(copy) > 1 else [0, 0])     # a repeat, or one id too many


def test_packed_words_read_as_their_table_and_pickle_as_arrays():
    import pickle
    from embkit._kernels.words import PackedWords
    table = WordTable()
    table.add(tokenize("b \u00e9t\u00e9 b \u4e2d\u6587 a b"))
    packed = table.packed()
    assert len(packed) == len(table) == 4
    assert packed.words_list() == table.words_list() == ["b", "\u00e9t\u00e9", "\u4e2d\u6587", "a"]
    assert packed.counts().tolist() == table.counts().tolist() == [3, 1, 1, 1]
    assert packed[1] == "\u00e9t\u00e9" and packed.words_list(np.array([3, 0])) == ["a", "b"]
    again = pickle.loads(pickle.dumps(packed))
    assert again.words_list() == packed.words_list() and again.counts().tolist() == [3, 1, 1, 1]
    with pytest.raises(IndexError, match="word id 4 out of range"):
        packed.words_list([4])
    with pytest.raises(IndexError):
        packed[-1]
    with pytest.raises(ValueError, match="cut 2 bytes, not the 3 given"):
        PackedWords(b"abc", [1, 1], [1, 1])
    with pytest.raises(ValueError, match="one count a word"):
        PackedWords(b"ab", [1, 1], [1])
    order = np.array([2, 0, 3, 1])
    reordered = table.packed(order)
    assert reordered.words_list() == table.reordered(order).words_list() == ["\u4e2d\u6587", "b", "a", "\u00e9t\u00e9"]
    assert reordered.counts().tolist() == [1, 3, 1, 1]
    with pytest.raises(ValueError, match="permutation of the 4 word ids"):
        table.packed([0, 0, 1, 2])
    vocab, kept = Vocab.from_counts(packed, packed.counts(), 6, min_count=1)
    assert vocab.index_to_key == ["b", "\u00e9t\u00e9", "\u4e2d\u6587", "a"] and kept.tolist() == [0, 1, 2, 3]


def test_a_damaged_packed_table_is_refused():
    from embkit._kernels.words import _unpacked_table
    with pytest.raises(ValueError, match="do not cut"):
        _unpacked_table(b"abc", np.array([1, 1], np.int32), np.array([1, 1]))
    with pytest.raises(ValueError, match="twice"):
        _unpacked_table(b"aa", np.array([1, 1], np.int32), np.array([1, 1]))


def test_prune_keeps_the_survivors_order_and_their_later_counts():
    table = WordTable()
    table.add(tokenize("a b c a d a c"))
    table.prune(2, keep=np.array([False, True, False, False]))   # b is protected, d dropped
    assert table.words_list() == ["a", "b", "c"] and table.counts().tolist() == [3, 1, 2]
    table.add(tokenize("d b e"))                                 # a pruned word comes back at the end
    assert table.words_list() == ["a", "b", "c", "d", "e"] and table.counts().tolist() == [3, 2, 2, 1, 1]
    with pytest.raises(ValueError, match="keep has"):
        table.prune(2, keep=np.zeros(2, bool))


def test_remap_drops_unmapped_tokens_and_emptied_sentences():
    tokens = np.array([0, 1, 2, 1, 3], np.int32)
    ends = np.array([2, 3, 5], np.int32)
    out, out_ends = remap_chunk(tokens, ends, np.array([5, -1, -1, 7], np.int32))
    assert out.tolist() == [5, 7] and out_ends.tolist() == [1, 2]
    with pytest.raises(IndexError):
        remap_chunk(np.array([4], np.int32), np.array([1], np.int32), np.array([0], np.int32))


def _corpus_file(tmp_path, seed, long_line=False):
    rng = np.random.default_rng(seed)
    words = ["w%d" % i for i in range(300)] + ["\u00e9t\u00e9", "\u4e2d\u6587"]
    p = 1.0 / np.arange(1, len(words) + 1)
    lines = []
    for _ in range(400):
        n = int(rng.integers(0, 40))
        lines.append(" ".join(rng.choice(words, n, p=p / p.sum())))
    if long_line:
        lines.insert(7, " ".join(rng.choice(words, 30000, p=p / p.sum())))    # longer than a block
    path = tmp_path / ("corpus%d.txt" % seed)
    path.write_text("\n".join(lines) + ("\r\n" if seed % 2 else ""), encoding="utf-8")
    return path


def _as_iterable(path, max_sentence_length):
    """The same corpus read by the Python path: the file's sentences as a list (the oracle)."""
    return IterableCorpus(list(TextCorpus(path, max_sentence_length)), max_sentence_length)


def _chunks(cache):
    return [(c.tokens.tolist(), np.asarray(c.ends).tolist(), c.raw_units) for c in cache]


@pytest.mark.parametrize("seed, long_line, limit, chunk_tokens", [(1, False, 10000, 1 << 18), (2, True, 7, 500),
                                                                 (3, True, 1000, 64)])
@pytest.mark.parametrize("workers", [1, 3])
def test_file_corpus_scans_as_the_python_path(tmp_path, seed, long_line, limit, chunk_tokens, workers):
    path = _corpus_file(tmp_path, seed, long_line)
    vocab, cache = scan_corpus(TextCorpus(path, limit), min_count=2, chunk_tokens=chunk_tokens, workers=workers)
    ref_vocab, ref_cache = scan_corpus(_as_iterable(path, limit), min_count=2, chunk_tokens=chunk_tokens)
    assert vocab.index_to_key == ref_vocab.index_to_key
    assert vocab.counts.tolist() == ref_vocab.counts.tolist()
    assert (vocab.raw_words, vocab.sentences) == (ref_vocab.raw_words, ref_vocab.sentences)
    assert _chunks(cache) == _chunks(ref_cache)
    encoded = list(vocab.encode(TextCorpus(path, limit), chunk_tokens, workers))
    ref_encoded = list(encode_chunks(_as_iterable(path, limit), vocab.key_to_index, chunk_tokens))
    assert _chunks(encoded) == _chunks(ref_encoded)


@pytest.mark.parametrize("max_vocab_size", [None, 40, 150])
@pytest.mark.parametrize("workers", [1, 2, 4])
def test_bounded_counting_prunes_at_the_same_blocks_for_any_threads(tmp_path, max_vocab_size, workers):
    path = _corpus_file(tmp_path, 4, long_line=True)

    def rule(word, count, min_count):
        return 2 if word.endswith("7") else 0          # RULE_KEEP for some rare words

    for trim_rule in (None, rule):
        got = Vocab.count(TextCorpus(path), max_vocab_size, trim_rule, workers=workers)
        # the oracle: the same blocks of text counted by Counter, as Vocab.count's Python loop does
        counter, min_reduce, raw = Counter(), 1, 0
        for text, _ in TextCorpus(path).iter_blocks():
            counter.update(text.split())
            raw += len(text.split())
            if max_vocab_size is not None and len(counter) > max_vocab_size:
                counter = Counter({w: c for w, c in counter.items()
                                   if c > min_reduce or (trim_rule is not None and rule(w, c, min_reduce + 1) == 2)})
                min_reduce += 1
        assert got[0] == list(counter) and got[1].tolist() == list(counter.values()) and got[2] == raw


def test_a_reading_error_names_the_file_and_leaves_no_thread(tmp_path):
    path = tmp_path / "binary.txt"
    path.write_text("fine words here\n" * 1000 + "x" * (2 << 20), encoding="utf-8")
    before = threading.active_count()
    with pytest.raises(ValueError, match="binary.txt, line 1001: a token of more than"):
        scan_corpus(TextCorpus(path), min_count=1, workers=4)
    assert threading.active_count() == before
