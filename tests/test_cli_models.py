"""``embkit items`` and ``embkit xc``: one command trains, validates and reports; bad input is one line."""
import io
import json
import os

import numpy as np
import pytest

from embkit import cli
from embkit.items.cooccurrence import DEFAULT_WINDOW


def run(argv):
    out = io.StringIO()
    status = cli.main(argv, out=out)
    return status, out.getvalue()


@pytest.fixture
def triples(tmp_path):
    """An 'i j count' file of 30 items in 3 groups whose next items stay in the group."""
    rng = np.random.default_rng(0)
    lines = []
    for i in range(30):
        for j in rng.choice(10, 6, replace=False) + (i // 10) * 10:
            lines.append("%d %d %d" % (i, j, rng.integers(20, 60)))
    path = tmp_path / "pairs.txt"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _xc_file(path, n, seed, n_features=40, n_labels=8):
    rng = np.random.default_rng(seed)
    lines = ["%d %d %d" % (n, n_features, n_labels)]
    for _ in range(n):
        lab = int(rng.integers(n_labels))
        feats = sorted(set((lab * 5 + rng.choice(5, 3, replace=False)).tolist()) | {int(rng.integers(n_features))})
        lines.append("%d %s" % (lab, " ".join("%d:1.0" % f for f in feats)))
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_items_on_a_pair_file(triples, tmp_path):
    model = tmp_path / "items.embkit"
    status, out = run(["items", "--pairs", triples, "--epochs", "3", "--vector-size", "8", "-q",
                       "--loss", "relaxed_softmax", "--sampler", "uniform", "-o", str(model)])
    assert status == 0
    assert "Prec@5" in out and "pairs:" in out and "saved:" in out
    assert os.path.exists(model)


def test_items_json_report(triples):
    status, out = run(["items", "--pairs", triples, "--epochs", "2", "--vector-size", "8", "-q",
                       "--format", "json", "--sampler", "boltzmann", "--T", "3", "--degeneracy", "popularity"])
    assert status == 0
    report = json.loads(out)
    assert report["items"] == 30 and len(report["validation"]) == 2
    assert 0.5 < report["test"]["mpr"] <= 1.0
    assert sum(report["pairs"].values()) > 0


def test_items_on_movielens(shared_data):
    data = os.path.join(shared_data, "movielens", "ml-100k")
    status, out = run(["items", "--data", data, "--epochs", "2", "--vector-size", "8", "-q", "--format", "json"])
    assert status == 0
    report = json.loads(out)
    assert report["items"] == 1447 and report["window"] == DEFAULT_WINDOW and report["protocol"] == "leave-one-out"
    assert report["directions"] == "both"
    assert report["pairs"]["test users"] == report["test"]["n_users"] == 942 and len(report["validation"]) == 2
    assert {"ndcg10", "hit10", "mpr"} <= set(report["validation"][0]) and "10" in report["test"]["hit_at"]
    status, out = run(["items", "--data", data, "--epochs", "1", "--vector-size", "8", "-q", "--protocol", "pairs"])
    assert status == 0 and "Prec@50" in out and "after Star Wars (1977): " in out
    assert "window 3, forward pairs" in out          # the paper's protocol: next-item pairs only


def test_items_leave_one_out_needs_timelines(triples, capsys):
    status, _ = run(["items", "--pairs", triples, "--protocol", "leave-one-out", "-q"])
    assert status == 2 and "needs user timelines" in capsys.readouterr().err
    status, _ = run(["items", "--pairs", triples, "--directions", "both", "-q"])
    assert status == 2 and "--directions needs user timelines" in capsys.readouterr().err


def test_items_bad_input_is_one_line(triples, tmp_path, capsys):
    status, _ = run(["items", "--pairs", str(tmp_path / "missing.txt"), "-q"])
    assert status == 1
    assert capsys.readouterr().err.count("\n") == 1
    bad = tmp_path / "bad.txt"
    bad.write_text("0 1 2\n0 1 three\n")
    status, _ = run(["items", "--pairs", str(bad), "-q"])
    err = capsys.readouterr().err
    assert status == 1 and "line 2" in err and str(bad) in err
    status, _ = run(["items", "--pairs", triples, "--param", "novalue", "-q"])
    assert status == 2 and "KEY=VALUE" in capsys.readouterr().err


def test_xc_on_train_and_test_files(tmp_path):
    train = _xc_file(tmp_path / "train.txt", 400, 0)
    test = _xc_file(tmp_path / "test.txt", 100, 1)
    status, out = run(["xc", "--train", train, "--test", test, "--epochs", "3", "--vector-size", "16", "-q",
                       "--loss", "sampled_softmax", "--sampler", "lsh", "--negative", "3", "--format", "json"])
    assert status == 0
    report = json.loads(out)
    assert report["metrics"]["precision_at"]["1"] > 0.6


def test_xc_default_one_vs_all_and_its_options(tmp_path):
    train = _xc_file(tmp_path / "train.txt", 400, 0)
    test = _xc_file(tmp_path / "test.txt", 100, 1)
    status, out = run(["xc", "--train", train, "--test", test, "--epochs", "20", "--batch-size", "32", "-q",
                       "--format", "json", "-o", str(tmp_path / "m.embkit")])
    assert status == 0
    report = json.loads(out)
    assert "one_vs_all" in report["model"] and report["metrics"]["precision_at"]["1"] > 0.6
    from embkit import ExtremeClassifier
    model = ExtremeClassifier.load(tmp_path / "m.embkit")
    assert (model.ensemble, model.feature_weighting, model.normalize_rows, model.label_bias) == (2, "tfidf", True, True)
    status, out = run(["xc", "--train", train, "--test", test, "--epochs", "2", "--ensemble", "1", "--vector-size",
                       "8", "--feature-weighting", "none", "--no-row-norm", "--no-label-bias", "-q", "--format",
                       "json", "-o", str(tmp_path / "n.embkit")])
    assert status == 0
    model = ExtremeClassifier.load(tmp_path / "n.embkit")
    assert (model.ensemble, model.feature_weighting, model.normalize_rows, model.label_bias) == (1, "none", False, False)
    assert not model.label_biases.any()


def test_xc_solver_option(tmp_path, capsys):
    train = _xc_file(tmp_path / "train.txt", 200, 0)
    test = _xc_file(tmp_path / "test.txt", 50, 1)
    status, out = run(["xc", "--train", train, "--test", test, "--epochs", "2", "--vector-size", "8", "-q",
                       "--solver", "sampled", "--format", "json"])
    assert status == 0
    model = json.loads(out)["model"]
    assert "solver=sampled" in model and "loss=sampled_softmax" in model
    status, _ = run(["xc", "--train", train, "--test", test, "-q", "--solver", "one_vs_all", "--loss", "sgns"])
    assert status == 1 and "--loss sgns is a loss of --solver sampled, not of" in capsys.readouterr().err


def test_xc_named_set(shared_data):
    root = os.path.join(shared_data, "extreme-classification")
    status, out = run(["xc", "--data", "bibtex", "--root", root, "--epochs", "1", "--vector-size", "16", "-q"])
    assert status == 0
    assert "P@k" in out and "4880" in out


def test_xc_usage_errors(tmp_path, capsys):
    train = _xc_file(tmp_path / "train.txt", 50, 0)
    assert run(["xc", "--train", train, "-q"])[0] == 2
    assert "--test" in capsys.readouterr().err
    assert run(["xc", "--data", "bibtex", "--train", train, "--test", train, "-q"])[0] == 2
    bad = tmp_path / "bad.txt"
    bad.write_text("2 40 8\n1 3:1.0\n")
    status, _ = run(["xc", "--train", bad.as_posix(), "--test", bad.as_posix(), "-q"])
    err = capsys.readouterr().err
    assert status == 1 and "bad.txt" in err
