"""One test per reader bug the fuzzing found (tests/fuzz_targets.py, eval.robustness.fuzz_readers): each input
below once crashed, hung, or was read into a silently wrong result."""
import gzip
import struct

import numpy as np
import pytest

from embkit.evaluation.pairs import read_pairs
from embkit.evaluation.readers import read_analogies, read_msr_analogies, read_similarity
from embkit.items.cooccurrence import PairCounts
from embkit.items.ratings import load_ratings
from embkit.items.triples import read_triples
from embkit.text import corpus as corpus_module
from embkit.text.corpus import TextCorpus
from embkit.text.vectors import load_vectors
from embkit.xc.data import read_xc


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


# ----------------------------------------------------------------------------- corpora

@pytest.mark.parametrize("data", [b"not gzip at all", gzip.compress(b"the cat sat\n" * 50)[:-12],
                                  gzip.compress(b"the cat sat\n")[:12] + b"\xff" * 20],
                         ids=["not-gzip", "cut-short", "bad-deflate"])
def test_damaged_gzip_corpus_names_the_file(tmp_path, data):
    path = write(tmp_path, "corpus.txt.gz", data)          # was a bare zlib.error / EOFError / BadGzipFile
    with pytest.raises((ValueError, OSError), match="corpus.txt.gz"):
        list(TextCorpus(path))


def test_a_token_without_end_is_an_error_not_a_quadratic_read(tmp_path, monkeypatch):
    monkeypatch.setattr(corpus_module, "MAX_TOKEN_CHARS", 1000)
    monkeypatch.setattr(corpus_module, "BLOCK_CHARS", 64)
    path = write(tmp_path, "binary.txt", b"ok line\n" + b"x" * 5000)
    with pytest.raises(ValueError, match=r"binary.txt, line 2: a token of more than 1000 characters"):
        list(TextCorpus(path))


def test_long_line_cut_at_any_blank(tmp_path, monkeypatch):
    """Pieces of a very long line end at the last blank of any kind (here ideographic spaces only)."""
    monkeypatch.setattr(corpus_module, "BLOCK_CHARS", 16)
    words = ["w%d" % i for i in range(200)]
    path = write(tmp_path, "cjk.txt", "\u3000".join(words).encode("utf-8"))
    assert [t for s in TextCorpus(path, max_sentence_length=7) for t in s] == words


# ----------------------------------------------------------------------------- XC and ratings

def test_xc_line_longer_than_many_blocks(tmp_path):
    features = " ".join("%d:1" % i for i in range(3000))
    path = write(tmp_path, "train.txt", ("2 3000 2\n0 %s\n1 0:2\n" % features).encode())
    data = read_xc(path, block_bytes=64)
    assert data.X.shape == (2, 3000) and data.X[0].nnz == 3000 and data.X[1, 0] == 2


@pytest.mark.parametrize("token", [b"x" * 3000000, b"1" * 3000000 + b":1", b"1:" + b"1" * 3000000 + b"x",
                                   b"1:1." + b"1" * 3000000 + b"x"],
                         ids=["letters", "feature-id-digits", "value-digits", "decimals"])
def test_a_huge_xc_token_is_a_short_error_in_linear_time(tmp_path, token):
    import time
    path = write(tmp_path, "train.txt", b"1 5 2\n0 " + token + b"\n")
    start = time.process_time()
    with pytest.raises(ValueError, match=r"train.txt, line 2: ") as info:     # was 11 s of CPU, a 6M-char
        read_xc(path)                                                          # message, or no file name
    assert time.process_time() - start < 3 and len(str(info.value)) < 400


@pytest.mark.parametrize("header, reader", [(b"3 " + b"9" * 5000 + b" 2\n", read_xc),
                                            (b"3 " + b"9" * 5000 + b"\n", "matrix")], ids=["xc", "matrix"])
def test_a_header_size_of_thousands_of_digits_names_the_line(tmp_path, header, reader):
    from embkit.xc.data import read_sparse_matrix
    path = write(tmp_path, "train.txt", header + b"0 1:1\n")       # was Python's int limit, no file named
    with pytest.raises(ValueError, match=r"train.txt, line 1: the header declares a size of more than 19 digits"):
        (read_sparse_matrix if reader == "matrix" else reader)(path)


@pytest.mark.parametrize("line", [b"1,1,1999,12-3", b"1-1,1999,12-31", b"1,1-1999,12,31"])
def test_netflix_separators_in_the_wrong_places(tmp_path, line):
    path = write(tmp_path, "combined_data_1.txt", b"7:\n" + line + b"\n")     # was read as a rating
    with pytest.raises(ValueError, match=r"combined_data_1.txt, line 2"):
        load_ratings(path, min_rating=None, titles=False)


def test_netflix_date_beyond_any_calendar(tmp_path):
    path = write(tmp_path, "combined_data_1.txt", b"7:\n1,3,2005-099999999999-06\n")   # was OverflowError
    with pytest.raises(ValueError, match=r"line 2: date .* is not a valid date"):
        load_ratings(path, min_rating=None, titles=False)


def test_tab_in_a_double_colon_file(tmp_path):
    path = write(tmp_path, "ratings.dat", b"1::2\t3::4\n")          # was read as user 1, item 2, rating 3
    with pytest.raises(ValueError, match=r"ratings.dat, line 1: expected 4 fields"):
        load_ratings(path, min_rating=None, titles=False)


def test_byte_order_mark_does_not_eat_the_first_rating(tmp_path):
    path = write(tmp_path, "ratings.csv", b"\xef\xbb\xbf1,2,3.5,100\n4,5,1,200\n")   # line 1 was taken as a header
    ratings = load_ratings(path, min_rating=None, titles=False)
    assert ratings.user.tolist() == [1, 4] and ratings.rating.tolist() == [3.5, 1.0]
    path = write(tmp_path, "u.data", b"\xef\xbb\xbf1\t2\t3\t100\n")
    assert load_ratings(path, min_rating=None, titles=False).item.tolist() == [2]


@pytest.mark.parametrize("name, data, line", [
    ("u.data", b"1\t2\t3\t4\n196\t24\r2\t3\t881250949\n", 2),     # was read as item 242
    ("u.data", b"196\t242\t3\t8812\r50949\n", 1),                 # was the timestamp 881250949
    ("ratings.dat", b"1::2::\x0c3::4\n", 1),
    ("ratings.csv", b"userId,movieId,rating,timestamp\r\n1,2\r,3.5,9\r\n", 2),
    ("combined_data_1.txt", b"7:\r\n1,3,2005-09-0\r6\r\n", 2),
])
def test_a_control_character_inside_a_rating_line_is_an_error(tmp_path, name, data, line):
    path = write(tmp_path, name, data)
    with pytest.raises(ValueError, match=r"%s, line %d: " % (name, line)):
        load_ratings(path, min_rating=None, titles=False)


def test_crlf_rating_files_still_load(tmp_path):
    path = write(tmp_path, "u.data", b"196\t242\t3\t881250949\r\n186\t302\t3\t891717742")
    assert load_ratings(path, min_rating=None, titles=False).item.tolist() == [242, 302]


# ----------------------------------------------------------------------------- evaluation files

@pytest.mark.parametrize("reader, name, data", [
    (read_similarity, "ws.txt", b"tiger cat 7.35\nbo\xffok paper 7.46\n"),
    (read_analogies, "q.txt", b": capital\nA\x80 b c d\n"),
    (read_msr_analogies, "msr.csv", b",type,word1,word2,word3,target\n0,JJ,good,b\xe9tter,rough,rougher\n"),
    (lambda p: read_pairs(p, key_to_index={"a": 0}), "pairs.txt", b"a a\n\xe3 a\n"),
], ids=["similarity", "analogy", "msr", "pairs"])
def test_invalid_utf8_names_file_and_line(tmp_path, reader, name, data):
    path = write(tmp_path, name, data)                # was a UnicodeDecodeError without file or line
    with pytest.raises(ValueError, match=r"%s, line 2: not valid UTF-8" % name):
        reader(path)


def test_pair_ids_beyond_int64(tmp_path):
    path = write(tmp_path, "pairs.txt", b"0 1\n99999999999999999999 1\n")     # was OverflowError
    with pytest.raises(ValueError, match=r"pairs.txt, line 2: id .* is too large"):
        read_pairs(path)


# ----------------------------------------------------------------------------- triples

def test_sparse_integer_ids_are_names_not_two_billion_rows(tmp_path):
    path = write(tmp_path, "pairs.txt", b"2147483648 1 3\n1 2 5\n")   # made 2**31 item names (hang)
    counts = PairCounts.from_triples(path)
    assert counts.n_items == 3 and "2147483648" in counts.names
    with pytest.raises(ValueError, match="ids='name'"):
        read_triples(write(tmp_path, "sparse.txt", b"2000000000 1 3\n"), ids="index")


def test_triple_count_beyond_int64(tmp_path):
    path = write(tmp_path, "pairs.txt", b"a b 2\nb c " + b"9" * 40 + b"\n")        # was OverflowError
    with pytest.raises(ValueError, match=r"pairs.txt, line 2: count .* is larger than"):
        read_triples(path)


# ----------------------------------------------------------------------------- word2vec files

@pytest.mark.parametrize("header", [b"3 99999999993", b"2147483648 3", b"9" * 40 + b" 3", b"-1 3", b"3"])
@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
def test_vectors_header_larger_than_the_file(tmp_path, header, binary):
    body = (b"the " + struct.pack("<3f", 0.1, 0.2, 0.3)) if binary else b"the 0.1 0.2 0.3\n"
    path = write(tmp_path, "vectors.bin" if binary else "vectors.txt", header + b"\n" + body)
    with pytest.raises(ValueError, match=r"vectors\.(bin|txt), line 1"):    # gensim allocated it first
        load_vectors(path, binary=binary)


@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
def test_non_finite_vectors_are_refused(tmp_path, binary):
    if binary:
        data = b"2 2\nthe " + struct.pack("<2f", 0.5, np.inf) + b"cat " + struct.pack("<2f", 1, 2)
    else:
        data = b"2 2\nthe 0.5 1e39\ncat 1 2\n"                # beyond float32
    path = write(tmp_path, "v.bin" if binary else "v.txt", data)
    with pytest.raises(ValueError, match=r"the vector of 'the' .* NaN or infinity"):
        load_vectors(path, binary=binary)


def test_damaged_keyedvectors_pickle(tmp_path):
    path = write(tmp_path, "kv.model", b"\x80 3\nthe 0.1 0.2")      # was a bare "unsupported pickle protocol"
    with pytest.raises(ValueError, match="kv.model"):
        load_vectors(path, allow_pickle=True)


@pytest.mark.parametrize("row, problem", [
    (b"bar 7", "the row has 1 values, the header declares the dimension 3"),     # was broadcast to [7, 7, 7]
    (b"bar 7 8 9 10", "the row has 4 values"),
    (b"bar 7 nan 9", "the value 'nan' is not a decimal number"),
    (b"bar 7 1_0 9", "the value '1_0' is not a decimal number"),
    (b" bar 7 8 9", "starts with a blank"),
    (b"b\x0bar 7 8 9", "control character"),
])
def test_text_rows_hold_the_declared_dimension(tmp_path, row, problem):
    path = write(tmp_path, "vectors.txt", b"2 3\nfoo 1 2 3\n" + row + b"\n")
    with pytest.raises(ValueError, match=r"vectors.txt, line 3: .*%s" % problem):
        load_vectors(path)


@pytest.mark.parametrize("binary", [False, True], ids=["text", "binary"])
def test_a_repeated_word_names_both_rows_or_keeps_the_first(tmp_path, binary, caplog):
    rows = [(b"a", (1, 2)), (b"b", (3, 4)), (b"a", (5, 6))]      # was loaded as keys a, b, None with a zero row
    if binary:
        data = b"3 2\n" + b"".join(w + b" " + struct.pack("<2f", *v) for w, v in rows)
        where = r"vector 3: the word 'a' repeats vector 1"
    else:
        data = b"3 2\n" + b"".join(w + b" %d %d\n" % v for w, v in rows)
        where = r"line 4: the word 'a' repeats line 2"
    path = write(tmp_path, "vectors.bin" if binary else "vectors.txt", data)
    with pytest.raises(ValueError, match=where):
        load_vectors(path)
    kv = load_vectors(path, duplicates="first")
    assert kv.index_to_key == ["a", "b"] and kv.vectors.tolist() == [[1, 2], [3, 4]]
    assert "1 of 3 vectors skipped" in caplog.text


@pytest.mark.parametrize("at", range(0, 60, 3))
def test_a_high_byte_never_turns_text_into_binary(tmp_path, at):
    text = b"3 3\nthe 0.1 0.2 0.3\ncat 1.5 -2.5 3e-2\ndog 4 5 6\n"
    at = 4 + at % (len(text) - 4)
    if text[at:at + 1] == b"\n":
        at += 1
    data = text[:at] + b"\xe9" + text[at + 1:]     # was sniffed as binary, 103 garbage words loaded
    path = write(tmp_path, "vectors.txt", data)
    with pytest.raises(ValueError, match=r"vectors.txt, (line|vector) \d"):
        load_vectors(path)


def test_rows_after_the_declared_count_are_an_error(tmp_path):
    path = write(tmp_path, "vectors.txt", b"1 2\nthe 1 2\ncat 3 4\n")
    with pytest.raises(ValueError, match=r"vectors.txt, line 3: more data after the 1 vectors"):
        load_vectors(path)


# ----------------------------------------------------------------------------- checkpoints

def _lsh_checkpoint(tmp_path):
    import scipy.sparse as sp
    from embkit import ItemEmbedding
    from embkit.core.checkpoint import list_checkpoints
    pairs = sp.csr_matrix(np.random.default_rng(0).integers(0, 3, (5, 5)).astype(float))
    folder = str(tmp_path / "run")
    ItemEmbedding(vector_size=4, epochs=2, workers=1, negative=2, sampler="lsh", progress=False, checkpoint_dir=folder,
                  checkpoint_every="1 pairs").fit(pairs)
    return folder, list_checkpoints(folder), pairs


def test_a_sampler_state_that_does_not_fit_names_the_checkpoint(tmp_path):
    import io
    from embkit import ItemEmbedding
    from embkit.core.checkpoint import CheckpointError
    from fuzz_mutate import rebuild_zip
    folder, paths, pairs = _lsh_checkpoint(tmp_path)

    def edit(name, body):
        if name != "sampler.pos.npy":
            return body
        arr = np.load(io.BytesIO(body))
        buf = io.BytesIO()
        np.save(buf, np.full_like(arr, 10 ** 6))
        return buf.getvalue()
    for path in paths:
        with open(path, "rb") as fh:
            data = rebuild_zip(fh.read(), edit)
        with open(path, "wb") as fh:
            fh.write(data)
    with pytest.raises(CheckpointError, match=r"checkpoint-\d+.embkit: the saved sampler state does not fit"):
        ItemEmbedding.resume(folder, pairs)         # was "LSH state pos holds ids out of range", no file named


def test_a_word2vec_checkpoint_of_another_corpus_names_the_word(tmp_path):
    from embkit import Word2Vec
    from embkit.core.checkpoint import CheckpointError
    folder = str(tmp_path / "run")
    sentences = [["a", "b", "c", "d"], ["b", "c", "a"]] * 5
    model = Word2Vec(vector_size=4, min_count=1, epochs=2, workers=1, checkpoint_dir=folder, checkpoint_every="1 words")
    model.build_vocab(sentences)
    model.train()
    other = [["a", "b", "c", "e"], ["b", "c", "a"]] * 5
    with pytest.raises(CheckpointError, match=r"checkpoint-\d+.embkit: the corpus .* word 3 of its vocabulary is "
                                              r"'e' \(count 5\), the checkpoint's 'd' \(count 5\)"):
        Word2Vec.resume(folder, other)              # was "4 words (..), the checkpoint's 4 (..)", no file named
