"""The XC repository's layouts read by name from a user's folder: the newer one (trn_X_Xf.txt, trn_X_Y.txt,
tst_X_Xf.txt, tst_X_Y.txt) and the older one (one file per split), and their bad input."""
import gzip
import os

import numpy as np
import pytest

from embkit.xc.data import read_sparse_matrix, read_xc_pair, write_xc
from embkit.xc.datasets import find_xc_files, load_xc_dataset
from embkit.xc.synthetic import make_xc


def _write_matrix(path, M, opener=open):
    with opener(path, "wt") as fh:
        fh.write("%d %d\n" % M.shape)
        for r in range(M.shape[0]):
            lo, hi = M.indptr[r], M.indptr[r + 1]
            fh.write(" ".join("%d:%g" % (c, v) for c, v in zip(M.indices[lo:hi], M.data[lo:hi])) + "\n")


def _newer(folder, train, test, gz=False):
    os.makedirs(folder, exist_ok=True)
    for prefix, data in (("trn", train), ("tst", test)):
        ext, opener = (".gz", gzip.open) if gz else ("", open)
        _write_matrix(os.path.join(folder, prefix + "_X_Xf.txt" + ext), data.X, opener)
        _write_matrix(os.path.join(folder, prefix + "_X_Y.txt" + ext), data.Y, opener)


@pytest.fixture(scope="module")
def small():
    return make_xc(n_labels=40, n_features=300, n_train=200, n_test=50, values="tfidf", seed=2)


@pytest.mark.parametrize("name, folder, gz", [("EURLex-4K", "EURLex-4K", False), ("Wiki10-31K", "Wiki10", True),
                                              ("AmazonCat-13K", "amazoncat-13k", False),
                                              ("Amazon-670K", "Amazon670K", True)])
def test_newer_layout_is_read_by_name(tmp_path, small, name, folder, gz):
    train, test = small
    _newer(tmp_path / folder, train, test, gz)
    (trx, try_), (tsx, tsy) = find_xc_files(name, tmp_path)
    assert os.path.basename(trx).startswith("trn_X_Xf.txt") and os.path.basename(tsy).startswith("tst_X_Y.txt")
    got_train, got_test = load_xc_dataset(name, tmp_path, allow_mismatch=True)
    for got, want in ((got_train, train), (got_test, test)):
        np.testing.assert_allclose(got.X.toarray(), want.X.toarray(), rtol=1e-5)
        assert (got.Y != want.Y).nnz == 0
    threaded = load_xc_dataset(name, tmp_path, allow_mismatch=True, workers=3)     # blocks parsed on threads
    for got, one in zip(threaded, (got_train, got_test)):
        assert (got.X != one.X).nnz == 0 and (got.Y != one.Y).nnz == 0
    # the published sizes are checked unless allowed otherwise
    with pytest.raises(ValueError, match="allow_mismatch"):
        load_xc_dataset(name, tmp_path)


@pytest.mark.parametrize("name, train_name, test_name", [
    ("EURLex-4K", "eurlex_train.txt", "eurlex_test.txt"), ("AmazonCat-13K", "amazonCat_train.txt", "amazonCat_test.txt"),
    ("Wiki10-31K", "Wiki10/train.txt", "Wiki10/test.txt"), ("Amazon-670K", "amazon_train.txt", "amazon_test.txt"),
])
def test_older_layout_is_read_by_name(tmp_path, small, name, train_name, test_name):
    train, test = small
    for data, rel in ((train, train_name), (test, test_name)):
        os.makedirs(os.path.dirname(tmp_path / rel), exist_ok=True)
        write_xc(tmp_path / rel, data)
    got_train, got_test = load_xc_dataset(name, tmp_path, allow_mismatch=True)
    assert got_train.n_points == 200 and got_test.n_points == 50
    assert (got_test.Y != test.Y).nnz == 0


def test_a_folder_with_one_split_names_the_missing_file(tmp_path, small):
    train, test = small
    os.makedirs(tmp_path / "EURLex-4K")
    write_xc(tmp_path / "EURLex-4K" / "eurlex_train.txt", train)
    with pytest.raises(FileNotFoundError, match=r"found the train file .*eurlex_train.txt .* but no test file"):
        load_xc_dataset("EURLex-4K", tmp_path, allow_mismatch=True)
    # in the set's folder of the newer layout: the missing files by name
    _newer(tmp_path / "Wiki10-31K", train, test)
    os.remove(tmp_path / "Wiki10-31K" / "tst_X_Y.txt")
    with pytest.raises(FileNotFoundError, match=r"newer layout but not tst_X_Y.txt"):
        load_xc_dataset("Wiki10-31K", tmp_path, allow_mismatch=True)
    # a file named after the set in the root folder, its partner missing
    write_xc(tmp_path / "amazonCat_test.txt", test)
    with pytest.raises(FileNotFoundError, match=r"test file .*amazonCat_test.txt.* but no train file"):
        load_xc_dataset("AmazonCat-13K", tmp_path, allow_mismatch=True)


@pytest.mark.parametrize("content, what, message", [
    ("2 5\n1:1 5:1\n0:2\n", "features", r"Xf.txt, line 2: feature id 5 is out of range: the header \(line 1\) gives 5"),
    ("2 3\n0:1\n3:1\n", "labels", r"Y.txt, line 3: label id 3 is out of range"),
    ("3 5\n1:1\n0:2\n", "features", r"Xf.txt, line 3: end of file after 2 points"),
    ("2 5 7\n1:1\n", "features", r"Xf.txt, line 1: expected a header 'rows columns'"),
    ("2 5\n1:x\n0:1\n", "features", r"Xf.txt, line 2: non-numeric value 'x'"),
])
def test_bad_newer_layout_files_name_file_and_line(tmp_path, content, what, message):
    good = {"features": "2 5\n1:1\n0:1\n", "labels": "2 3\n0:1\n1:1\n"}
    good[what] = content
    (tmp_path / "trn_X_Xf.txt").write_text(good["features"])
    (tmp_path / "trn_X_Y.txt").write_text(good["labels"])
    with pytest.raises(ValueError, match=message):
        read_xc_pair(tmp_path / "trn_X_Xf.txt", tmp_path / "trn_X_Y.txt")


def test_pair_files_must_have_the_same_rows(tmp_path):
    (tmp_path / "a_Xf.txt").write_text("2 5\n1:1\n0:1\n")
    (tmp_path / "a_Y.txt").write_text("3 3\n0:1\n1:1\n2:1\n")
    with pytest.raises(ValueError, match=r"a_Xf.txt has 2 rows but .*a_Y.txt has 3"):
        read_xc_pair(tmp_path / "a_Xf.txt", tmp_path / "a_Y.txt")
    with pytest.raises(FileNotFoundError, match="nope"):
        read_sparse_matrix(tmp_path / "nope.txt")


def test_header_counts_bound_the_ids_of_the_older_layout(tmp_path):
    # a label or feature id beyond the header's counts: an error naming the file and the line
    from embkit.xc.data import read_xc
    path = tmp_path / "eurlex_train.txt"
    path.write_text("2 4 3\n0 1:1\n3 2:1\n")
    with pytest.raises(ValueError, match=r"eurlex_train.txt, line 3: label id 3 is out of range"):
        read_xc(path)
    path.write_text("2 4 3\n0 1:1\n2 4:1\n")
    with pytest.raises(ValueError, match=r"eurlex_train.txt, line 3: feature id 4 is out of range"):
        read_xc(path)


def test_shared_sets_still_load_by_name(shared_data):
    train, test = load_xc_dataset("Delicious", os.path.join(shared_data, "extreme-classification"))
    assert (train.n_points, test.n_points, train.n_labels) == (12920, 3185, 983)
