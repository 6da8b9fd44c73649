"""Prediction input as XC users have it, on the real Bibtex files: lists of dicts or of (feature, value) pairs, a
CSR of fewer or more columns, feature ids beyond the model, k beyond the labels, and ``embkit xc predict`` from
a file in either XC layout."""
import io
import os
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from embkit import ExtremeClassifier, cli
from embkit.xc.data import read_features, read_xc, write_xc
from embkit.xc.prediction_input import feature_rows


@pytest.fixture(scope="module")
def bibtex(shared_data):
    folder = os.path.join(shared_data, "extreme-classification", "bibtex")
    train = read_xc(os.path.join(folder, "bibtex_train.xc.txt.gz"))
    test = read_xc(os.path.join(folder, "bibtex_test.xc.txt.gz"))
    return train, test, os.path.join(folder, "bibtex_test.xc.txt.gz")


@pytest.fixture(scope="module")
def model(bibtex):
    train, _, _ = bibtex
    return ExtremeClassifier(epochs=2, workers=2, heads=("centroids", "neighbours"), progress=False).fit(train)


def _rows(X, rows):
    return [(X.indices[X.indptr[r]:X.indptr[r + 1]].tolist(), X.data[X.indptr[r]:X.indptr[r + 1]].tolist())
            for r in rows]


def test_lists_of_dicts_and_of_pairs_predict_as_the_matrix(model, bibtex):
    _, test, _ = bibtex
    rows = range(0, test.n_points, 7)
    want_ids, want_scores = model.predict(test.X[list(rows)], k=5)
    as_dicts = [dict(zip(ids, values)) for ids, values in _rows(test.X, rows)]
    as_pairs = [list(zip(ids, values)) for ids, values in _rows(test.X, rows)]
    for given in (as_dicts, as_pairs, [tuple(p) for p in as_pairs]):
        ids, scores = model.predict(given, k=5)
        np.testing.assert_array_equal(ids, want_ids)
        np.testing.assert_allclose(scores, want_scores, rtol=1e-5)


def test_fewer_columns_are_missing_features(model, bibtex):
    _, test, _ = bibtex
    narrow = test.X[:, :1500]
    zeroed = sp.csr_matrix(test.X, copy=True)
    zeroed.data[zeroed.indices >= 1500] = 0
    zeroed.eliminate_zeros()
    assert narrow.nnz < test.X.nnz
    np.testing.assert_array_equal(model.predict(narrow, k=5)[0], model.predict(zeroed, k=5)[0])


def test_more_columns_warn_and_unknown_ids_name_the_row(model, bibtex):
    _, test, _ = bibtex
    F = test.n_features
    wider = sp.hstack([test.X, sp.csr_matrix((test.n_points, 4), dtype=np.float32)], format="csr")
    with pytest.warns(UserWarning, match="columns beyond are empty"):
        ids, _ = model.predict(wider, k=5)
    np.testing.assert_array_equal(ids, model.predict(test.X, k=5)[0])
    extra = sp.csr_matrix((np.ones(2, np.float32), ([17, 40], [F + 3, F + 1])), shape=(test.n_points, F + 4))
    with_unknown = sp.csr_matrix(wider + extra)
    with pytest.raises(ValueError, match="row 17 has feature id %d, beyond the model's %d features" % (F + 3, F)):
        model.predict(with_unknown)
    with pytest.raises(ValueError, match="row 1 has feature id %d" % F):
        model.predict([{0: 1.0}, {F: 1.0}])
    with pytest.warns(UserWarning, match="2 entries of feature ids beyond"):
        ids, _ = model.predict(with_unknown, k=5, unknown_features="ignore")
    np.testing.assert_array_equal(ids, model.predict(test.X, k=5)[0])
    with pytest.raises(ValueError, match="unknown_features"):
        model.predict(test.X, unknown_features="drop")


@pytest.mark.parametrize("rows, message", [
    ([{-1: 1.0}], "row 0: feature id -1"), ([{0: 1.0}, [(2.5, 1.0)]], "row 1: feature id 2.5"),
    ([[(0, 1.0)], [(1, float("nan"))]], "row 1: feature 1 has value nan"), ([[(0, 1.0, 2.0)]], "row 0: entry"),
    ([{0: 1.0}, "3:1"], "row 1 is str"), ([{0: "x"}], "row 0: feature 0 has value 'x'"),
])
def test_malformed_rows_name_the_row(model, rows, message):
    with pytest.raises(ValueError, match=message):
        model.predict(rows)


def test_k_beyond_the_labels_is_clipped(model, bibtex):
    _, test, _ = bibtex
    ids, scores = model.predict(test.X[:5], k=10 ** 6)
    assert ids.shape == scores.shape == (5, test.n_labels)
    assert all(sorted(row) == list(range(test.n_labels)) for row in ids.tolist())


def test_feature_rows_widens_and_sums_repeats():
    X = feature_rows([[(2, 1.0), (2, 0.5)], {}], 4)
    assert X.shape == (2, 4) and X.toarray()[0].tolist() == [0, 0, 1.5, 0]


def _matrix_file(path, X):
    with open(path, "w") as fh:
        fh.write("%d %d\n" % X.shape)
        for r in range(X.shape[0]):
            lo, hi = X.indptr[r], X.indptr[r + 1]
            fh.write(" ".join("%d:%g" % (c, v) for c, v in zip(X.indices[lo:hi], X.data[lo:hi])) + "\n")


def _read_top(path):
    with open(path) as fh:
        return [[(int(p.split(":")[0]), float(p.split(":")[1])) for p in line.split()] for line in fh]


def test_cli_predict_from_either_layout(tmp_path, model, bibtex):
    _, test, test_path = bibtex
    saved = str(tmp_path / "model.ekm")
    model.save(saved)
    newer = str(tmp_path / "tst_X_Xf.txt")
    _matrix_file(newer, test.X)
    want_ids, want_scores = model.predict(test.X, k=3)
    for source in (test_path, newer):
        target = str(tmp_path / ("top-%s.txt" % os.path.basename(source)))
        assert cli.main(["xc", "predict", "--model", saved, "--input", source, "--k", "3", "-o", target],
                        out=io.StringIO()) == 0
        top = _read_top(target)
        assert len(top) == test.n_points
        assert [[i for i, _ in row] for row in top] == want_ids.tolist()
        np.testing.assert_allclose([[s for _, s in row] for row in top], want_scores, rtol=1e-4)
    assert read_features(newer)[1] == 2 and read_features(test_path)[1] == 2


def test_cli_predict_names_the_line_of_an_unknown_feature(tmp_path, model, bibtex, capsys):
    _, test, _ = bibtex
    saved = str(tmp_path / "model.ekm")
    model.save(saved)
    F = test.n_features
    X = sp.csr_matrix(test.X[:6])
    X = sp.csr_matrix(sp.hstack([X, sp.csr_matrix((np.ones(1), ([4], [1])), shape=(6, 3))]))
    Y = test.Y[:6]
    path = str(tmp_path / "wide.txt")
    write_xc(path, type(test)(X, Y))
    target = str(tmp_path / "top.txt")
    argv = ["xc", "predict", "--model", saved, "--input", path, "-o", target]
    assert cli.main(argv, out=io.StringIO()) == 1
    assert "wide.txt, line 6: feature id %d is beyond the model's %d features" % (F + 1, F) in capsys.readouterr().err
    assert not os.path.exists(target)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert cli.main(argv + ["--allow-unknown-features"], out=io.StringIO()) == 0
    assert "1 entries of feature ids beyond" in capsys.readouterr().err
    assert len(_read_top(target)) == 6
    assert cli.main(argv + ["--allow-unknown-features"], out=io.StringIO()) == 2      # the output exists
