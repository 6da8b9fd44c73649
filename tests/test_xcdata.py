"""Reading and writing sparse multi-label files (embkit.xc.data), on the real Bibtex/Delicious files too."""
import gzip
import os
import random

import numpy as np
import pytest
import scipy.sparse as sp

from embkit.xc import parse as _xcparse
from embkit.xc.data import XCData, read_svmlight, read_xc, read_xc_header, write_xc
from embkit.xc.datasets import (XC_DATASETS, StatisticsMismatch, find_xc_files, load_xc_dataset,
                               xc_dataset_info)

REAL = {  # set -> (train points, test points, features, labels, unlabelled train, unlabelled test)
    "bibtex": (4880, 2515, 1836, 159, 0, 0),
    "delicious": (12920, 3185, 500, 983, 12, 2),
}


def write(tmp_path, text, name="data.txt"):
    path = tmp_path / name
    opener = gzip.open if name.endswith(".gz") else open
    with opener(path, "wb") as fh:
        fh.write(text.encode("utf-8") if isinstance(text, str) else text)
    return str(path)


def entries(mat):
    """Set of (row, column, value) of a sparse matrix."""
    coo = mat.tocoo()
    return set(zip(coo.row.tolist(), coo.col.tolist(), coo.data.tolist()))


def naive_parse(path):
    """Line-by-line reference reader for canonical XC files (written independently of embkit).

    Returns the header, the number of data lines and the (row, id, value) triples of labels and
    features as three lists each.
    """
    labels, features = ([], [], []), ([], [], [])
    with gzip.open(path, "rt") as fh:
        header = tuple(map(int, fh.readline().split()))
        rows = 0
        for r, line in enumerate(fh):
            rows += 1
            head, _, rest = line.rstrip("\n").partition(" ")
            for lab in filter(None, head.split(",")):
                for out, x in zip(labels, (r, int(lab), 1.0)):
                    out.append(x)
            for tok in rest.split():
                f, v = tok.split(":")
                for out, x in zip(features, (r, int(f), float(v))):
                    out.append(x)
    return header, rows, labels, features


def same_entries(mat, triples):
    """True if sparse `mat` stores exactly the (rows, cols, values) `triples` (values as float32)."""
    ref = sp.csr_matrix((np.array(triples[2], dtype=np.float32), (triples[0], triples[1])), shape=mat.shape)
    return len(triples[0]) == mat.nnz and (ref != mat).nnz == 0


# ---------------------------------------------------------------------------------------------------
# real data

@pytest.mark.parametrize("name", sorted(REAL))
def test_real_sets_shapes_and_content(shared_data, name):
    n_train, n_test, n_feat, n_lab, empty_train, empty_test = REAL[name]
    folder = os.path.join(shared_data, "extreme-classification", name)
    for split, n, empty in (("train", n_train, empty_train), ("test", n_test, empty_test)):
        path = os.path.join(folder, "%s_%s.xc.txt.gz" % (name, split))
        data = read_xc(path)
        assert data.X.shape == (n, n_feat) and data.Y.shape == (n, n_lab)
        assert data.X.dtype == np.float32 and data.n_unlabelled == empty
        assert data.header == (n, n_feat, n_lab) and data.source == path
        header, rows, labels, features = naive_parse(path)
        assert header == (n, n_feat, n_lab) and rows == n
        assert same_entries(data.Y, labels)
        assert same_entries(data.X, features)


def test_real_set_small_blocks_agree(shared_data):
    path = os.path.join(shared_data, "extreme-classification", "delicious", "delicious_test.xc.txt.gz")
    whole = read_xc(path)
    pieces = read_xc(path, block_bytes=4096)
    assert (whole.X != pieces.X).nnz == 0 and (whole.Y != pieces.Y).nnz == 0


# ---------------------------------------------------------------------------------------------------
# round trips and variants

def random_data(seed, n=60, F=40, L=15):
    rng = np.random.default_rng(seed)
    X = sp.random(n, F, density=0.15, format="csr", random_state=rng, dtype=np.float32)
    X.data = np.round(X.data * 10, 3).astype(np.float32) - 2.5  # negative, zero-crossing values
    Y = sp.random(n, L, density=0.12, format="csr", random_state=rng, dtype=np.float32)
    Y.data[:] = 1.0
    X = X.tolil()
    Y = Y.tolil()
    X[3, :] = 0  # a point without features
    Y[4, :] = 0  # one without labels
    X[5, :] = 0
    Y[5, :] = 0  # and one with neither
    return XCData(sp.csr_matrix(X), sp.csr_matrix(Y))


@pytest.mark.parametrize("name", ["rt.txt", "rt.txt.gz", "rt.txt.bz2"])
def test_round_trip(tmp_path, name):
    data = random_data(0)
    path = str(tmp_path / name)
    write_xc(path, data)
    back = read_xc(path)
    assert back.X.shape == data.X.shape and back.Y.shape == data.Y.shape
    assert entries(back.X) == entries(data.X) and entries(back.Y) == entries(data.Y)
    assert back.n_unlabelled == data.n_unlabelled >= 2
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".tmp")]
    tiny_blocks = read_xc(path, block_bytes=5)  # lines longer than a block
    assert entries(tiny_blocks.X) == entries(data.X) and entries(tiny_blocks.Y) == entries(data.Y)
    for workers in (2, 5):      # blocks parsed on threads: the same data
        threaded = read_xc(path, block_bytes=64, workers=workers)
        assert entries(threaded.X) == entries(data.X) and entries(threaded.Y) == entries(data.Y)
        assert np.array_equal(threaded.X.indptr, data.X.indptr) and threaded.n_unlabelled == data.n_unlabelled


def test_round_trip_svmlight_one_based(tmp_path):
    data = random_data(1)
    path = str(tmp_path / "rt.svm")
    write_xc(path, data, header=False, base=1)
    with open(path) as fh:
        assert ":" in fh.readline()  # no header
    back = read_svmlight(path, base=1, n_features=data.n_features, n_labels=data.n_labels)
    assert entries(back.X) == entries(data.X) and entries(back.Y) == entries(data.Y)
    assert back.header is None


def test_last_point_empty_kept_with_header(tmp_path):
    X = sp.csr_matrix(np.array([[1, 0], [0, 0]], dtype=np.float32))
    Y = sp.csr_matrix(np.array([[0, 1], [0, 0]], dtype=np.float32))
    path = str(tmp_path / "e.txt")
    write_xc(path, (X, Y))
    back = read_xc(path)
    assert back.n_points == 2 and back.n_unlabelled == 1


def test_write_is_atomic_and_respects_overwrite(tmp_path):
    path = str(tmp_path / "a.txt")
    write_xc(path, random_data(2))
    with pytest.raises(FileExistsError):
        write_xc(path, random_data(3), overwrite=False)
    with pytest.raises(ValueError, match="rows"):
        write_xc(path, (sp.csr_matrix((2, 3)), sp.csr_matrix((3, 3))))
    assert entries(read_xc(path).X) == entries(random_data(2).X)


def test_svmlight_inferred_sizes_and_lenient_layout(tmp_path):
    text = "1, 3\t2:0.5  4:1e-1\r\n2 1:2\n\n 3:-1.5\n3:7\n\n\n"
    data = read_svmlight(write(tmp_path, text), base=1)
    assert data.X.shape == (5, 4) and data.Y.shape == (5, 3)  # trailing blank lines are not points
    assert entries(data.Y) == {(0, 0, 1.0), (0, 2, 1.0), (1, 1, 1.0)}
    assert entries(data.X) == {(0, 1, 0.5), (0, 3, np.float32(0.1)), (1, 0, 2.0), (3, 2, -1.5), (4, 2, 7.0)}
    assert data.n_unlabelled == 3  # the blank line in the middle is a point without anything


def test_unsorted_ids_are_sorted(tmp_path):
    data = read_xc(write(tmp_path, "2 5 4\n3,1 4:1 0:2\n2 3:1 1:1\n"))
    assert data.X.has_sorted_indices and data.Y.has_sorted_indices
    assert data.X.indices.tolist() == [0, 4, 1, 3] and data.Y.indices.tolist() == [1, 3, 2]


def test_headers(tmp_path):
    leml = read_xc(write(tmp_path, "#num_feature=5 num_label=4\n1 2:1\n"))
    assert leml.X.shape == (1, 5) and leml.Y.shape == (1, 4) and leml.header == (None, 5, 4)
    plain = read_xc(write(tmp_path, "0 1:1\n", "b.txt"))
    assert plain.header is None and plain.X.shape == (1, 2)
    assert read_xc_header(write(tmp_path, "4 7 3\n1 2:1\n", "h.txt")) == (4, 7, 3)
    assert read_xc_header(write(tmp_path, "1 2:1\n", "i.txt")) is None
    trailing = read_xc(write(tmp_path, "\ufeff2 3 2\n1 2:1\n\n \n\n", "t.txt"))  # BOM, blank lines
    assert trailing.n_points == 2 and trailing.n_unlabelled == 1
    empty = read_xc(write(tmp_path, "0 7 3\n", "c.txt"))
    assert empty.X.shape == (0, 7) and empty.Y.shape == (0, 3)
    assert read_xc(write(tmp_path, "1 3 2\n1 2:1\n", "d.txt"), n_features=3, n_labels=2).n_points == 1


def test_stats():
    data = random_data(4)
    s = data.stats()
    assert s["points"] == 60 and s["label_nnz"] == data.Y.nnz
    assert s["avg_labels_per_point"] == pytest.approx(data.Y.nnz / 60)
    assert data.label_frequencies().sum() == data.Y.nnz
    assert "points=60" in repr(data)


# ---------------------------------------------------------------------------------------------------
# bad input: every error names the file and the line

BAD = [  # (content, kwargs, line, message fragment)
    ("3 4 2\n0 1:1\n1 2:1\n", {}, 3, "end of file after 2 points"),
    ("1 4 2\n0 1:1\n1 2:1\n", {}, 3, "more points than the 1 declared"),
    ("2 4 2\n0 1:1\n1 4:1\n", {}, 3, "feature id 4 is out of range"),
    ("2 4 2\n0 1:1\n2 3:1\n", {}, 3, "label id 2 is out of range"),
    ("1 4 2\n-1 1:1\n", {}, 2, "negative label id -1"),
    ("1 4 2\n0 -1:1\n", {}, 2, "negative feature id -1"),
    ("1 1:1\n1 0:1\n", {"base": 1}, 2, "feature id 0 is below the id base 1"),
    ("1 4 2\n0 1:abc\n", {}, 2, "non-numeric value 'abc'"),
    ("1 4 2\n0 1:nan\n", {}, 2, "non-numeric value 'nan'"),
    ("1 4 2\n0 1:1e99\n", {}, 2, "out of the float32 range"),
    ("1 4 2\nx 1:1\n", {}, 2, "label id 'x' is not a non-negative integer"),
    ("1 4 2\n0 1.5:1\n", {}, 2, "feature id '1.5' is not"),
    ("1 4 2\n0 1\n", {}, 2, "malformed feature '1'"),
    ("1 4 2\n0 1:2:3\n", {}, 2, "malformed feature '1:2:3'"),
    ("1 4 2\n0 :1\n", {}, 2, "empty feature id"),
    ("1 4 2\n0 1:\n", {}, 2, "non-numeric value ''"),
    ("1 4 2\n0,,1 1:1\n", {}, 2, "empty label id"),
    ("1 4 2\n0, 1:1\n", {}, 2, "empty label id"),
    ("1 4 2\n0 1:1,1\n", {}, 2, "non-numeric value '1,1'"),
    ("1 4 2\n0 1 2:1\n", {}, 2, "malformed feature '1'"),
    ("1 4 2\n0,0 1:1\n", {}, 2, "label 0 appears twice"),
    ("1 4 2\n0 1:1 1:2\n", {}, 2, "feature 1 appears twice"),
    ("1 4 2\n0 1:1\r2:1\n", {}, 2, "stray carriage return"),
    ("1 4 2\n0 1:1\x0b2:1\n", {}, 2, "malformed feature"),
    ("0 99999999999:1\n", {}, 1, "too large"),
    ("", {}, 1, "empty file"),
    ("x y z\n0 1:1\n", {"header": True}, 1, "expected a header"),
]


@pytest.mark.parametrize("content, kwargs, line, fragment", BAD, ids=[b[3] for b in BAD])
def test_bad_input(tmp_path, content, kwargs, line, fragment):
    path = write(tmp_path, content)
    with pytest.raises(ValueError) as info:
        read_xc(path, **kwargs)
    message = str(info.value)
    assert message.startswith("%s, line %d: " % (path, line)), message
    assert fragment in message


def test_bad_line_far_into_the_file(tmp_path):
    lines = ["%d %d:1.5" % (i % 3, i % 7) for i in range(5000)]
    lines[4321] = "1 2:x"
    path = write(tmp_path, "5000 7 3\n" + "\n".join(lines) + "\n", "big.txt.gz")
    for block in (97, 4096, 1 << 22):
        for workers in (1, 3):      # a bad block on a thread is named with the line its place in the file gives
            with pytest.raises(ValueError, match=r"big\.txt\.gz, line 4323: non-numeric value 'x'"):
                read_xc(path, block_bytes=block, workers=workers)


def test_bad_parameters(tmp_path):
    path = write(tmp_path, "1 4 2\n0 1:1\n")
    with pytest.raises(ValueError, match="n_features=5 disagrees with the header"):
        read_xc(path, n_features=5)
    with pytest.raises(ValueError, match="base must be 0 or 1"):
        read_xc(path, base=2)
    with pytest.raises(ValueError, match="header must be"):
        read_xc(path, header="yes")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_xc(str(tmp_path / "missing.txt"))
    for bad in (0, 1.5, True, None):
        with pytest.raises(ValueError, match="workers must be a positive integer"):
            read_xc(path, workers=bad)
    with pytest.raises(ValueError, match="line 2: label id 1 is out of range: the n_features/n_labels"):
        read_svmlight(write(tmp_path, "0 1:1\n1 1:1\n", "s.txt"), base=0, n_labels=1)


# ---------------------------------------------------------------------------------------------------
# the vectorised parser agrees with the line-by-line one

def _random_line(rng):
    parts = []
    if rng.random() < 0.8:
        parts.append(",".join(str(i) for i in rng.sample(range(12), rng.randrange(1, 4))))
    else:
        parts.append("")
    for fid in rng.sample(range(20), rng.randrange(0, 5)):
        value = rng.choice(["1", "1.000000", "0.25", ".5", "3.", "-2", "1e-3", "0.1234567890123456789", "7"])
        parts.append("%d:%s" % (fid, value))
    return " ".join(parts)


def _mutate(line, rng):
    pos = rng.randrange(len(line) + 1)
    junk = rng.choice([",", ":", " ", "\t", "\r", "x", ".", "-", "", "9", ",,", "::", "  "])
    if rng.random() < 0.5 and line:
        return line[:pos] + junk + line[pos + 1:]
    return line[:pos] + junk + line[pos:]


def test_fast_parser_matches_slow_parser():
    rng = random.Random(0)
    spec = _xcparse.IdSpec(n_labels=12, n_features=20)
    n_valid = 0
    for trial in range(1000):
        lines = [_random_line(rng) for _ in range(rng.randrange(1, 6))]
        if trial % 2:
            k = rng.randrange(len(lines))
            lines[k] = _mutate(lines[k], rng)
        block = ("\n".join(lines) + "\n").encode()
        fast = _xcparse.parse_block_fast(block, spec)
        try:
            slow = _xcparse.parse_block_slow(block, 1, spec, "f")
        except ValueError:
            assert fast is None, block
            continue
        n_valid += 1
        assert fast is not None, block  # valid blocks never need the slow parser
        for field in ("n_rows", "label_counts", "labels", "feature_counts", "features", "values"):
            assert np.array_equal(getattr(fast, field), getattr(slow, field)), (block, field)
    assert n_valid > 450


# ---------------------------------------------------------------------------------------------------
# the repository's sets by name (embkit.xc.datasets)

def fake_set(folder, train_name, test_name, n_train, n_test, n_feat, n_lab, header=True):
    os.makedirs(folder, exist_ok=True)
    for name, n in ((train_name, n_train), (test_name, n_test)):
        text = ("%d %d %d\n" % (n, n_feat, n_lab) if header else "") + "0 1:1\n" * n
        opener = gzip.open if name.endswith(".gz") else open
        with opener(os.path.join(folder, name), "wt") as fh:
            fh.write(text)


def test_dataset_names():
    assert xc_dataset_info("eurlex-4k").name == "EURLex-4K"
    assert xc_dataset_info("EURLEX").name == "EURLex-4K"
    assert xc_dataset_info("amazon_670k").n_labels == 670091
    assert xc_dataset_info("wiki10-31k").propensity == (0.5, 0.4)
    assert set(XC_DATASETS) >= {"Bibtex", "Delicious", "EURLex-4K", "AmazonCat-13K", "Wiki10-31K",
                                "Delicious-200K", "Amazon-670K"}
    with pytest.raises(ValueError, match="unknown XC data set 'wiki'; known sets: .*Bibtex.*Amazon-670K"):
        xc_dataset_info("wiki")


def test_load_shared_layout(shared_data):
    train, test = load_xc_dataset("BibTeX", os.path.join(shared_data, "extreme-classification"))
    assert train.X.shape == (4880, 1836) and test.Y.shape == (2515, 159)


@pytest.mark.parametrize("folder, train_name, test_name", [
    ("Bibtex", "train.txt", "test.txt"),
    ("bibtex", "Bibtex_train.txt", "Bibtex_test.txt"),
    (".", "bibtex_train.xc.txt.gz", "bibtex_test.xc.txt.gz"),
    ("BIBTEX/Bibtex", "bibtex-trn.txt", "bibtex-tst.txt"),
])
def test_find_files_by_common_names(tmp_path, folder, train_name, test_name):
    fake_set(str(tmp_path / folder), train_name, test_name, 4880, 2515, 1836, 159)
    train_path, test_path = find_xc_files("bibtex", tmp_path)
    assert os.path.basename(train_path) == train_name and os.path.basename(test_path) == test_name
    train, test = load_xc_dataset("bibtex", tmp_path)
    assert train.n_points == 4880 and test.n_labels == 159


def test_find_files_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no train and test files of EURLex-4K found"):
        find_xc_files("eurlex", tmp_path)
    fake_set(str(tmp_path), "train.txt", "test.txt", 1, 1, 2, 2)
    fake_set(str(tmp_path), "trn.txt", "tst.txt", 1, 1, 2, 2)
    with pytest.raises(ValueError, match="several train files for EURLex-4K"):
        find_xc_files("eurlex", tmp_path)
    fake_set(str(tmp_path), "eurlex_train.txt", "eurlex_test.txt", 1, 1, 2, 2)
    assert find_xc_files("eurlex-4k", tmp_path)[0].endswith("eurlex_train.txt")  # the named file wins


def test_statistics_mismatch(tmp_path):
    fake_set(str(tmp_path / "Delicious"), "train.txt", "test.txt", 12920, 3000, 500, 983)
    with pytest.raises(StatisticsMismatch) as info:
        load_xc_dataset("delicious", tmp_path)
    assert str(info.value).startswith(str(tmp_path / "Delicious" / "test.txt") + ": 3000 points, but the test split")
    assert "has 3185" in str(info.value)
    train, test = load_xc_dataset("delicious", tmp_path, allow_mismatch=True)
    assert test.n_points == 3000
    fake_set(str(tmp_path / "Delicious"), "train.txt", "test.txt", 12920, 3185, 501, 983)
    with pytest.raises(StatisticsMismatch, match="train.txt: 501 features"):
        load_xc_dataset("delicious", tmp_path)


def test_headerless_files_get_the_published_sizes(tmp_path):
    fake_set(str(tmp_path), "bibtex_train.svm", "bibtex_test.svm", 4880, 2515, None, None, header=False)
    train, test = load_xc_dataset("bibtex", tmp_path)
    assert train.X.shape == (4880, 1836) and test.Y.shape == (2515, 159) and train.header is None
