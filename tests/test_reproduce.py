"""eval/reproduce.py: a missing dataset names where to get it, an interrupted run keeps what finished."""
import json
import os
import sys

import pytest

EVAL = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "eval")
sys.path.insert(0, EVAL)

import repro_common  # noqa: E402
import reproduce  # noqa: E402


def test_a_missing_dataset_names_its_path_and_source(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("EMBKIT_SHARED_DATA", str(tmp_path))
    assert reproduce.main(["table2", "--quick", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "movielens" / "ml-100k") in err
    assert "files.grouplens.org/datasets/movielens/ml-100k.zip" in err
    assert "EMBKIT_SHARED_DATA" in err


def test_the_record_is_on_disk_after_every_addition(tmp_path):
    path = tmp_path / "r.json"
    rec = repro_common.Record(str(path), "x", True, ["x", "--quick"])
    rec.add("first", {"p1": 0.5})
    data = json.loads(path.read_text())
    assert data["results"] == {"first": {"p1": 0.5}} and data["complete"] is False
    rec.finish()
    assert json.loads(path.read_text())["complete"] is True


def test_an_interrupted_reproduction_keeps_its_json(tmp_path, monkeypatch):
    class Interrupted:
        @staticmethod
        def run(args, rec):
            rec.add("done", 1)
            raise KeyboardInterrupt

    monkeypatch.setitem(sys.modules, "repro_fake", Interrupted)
    monkeypatch.setitem(reproduce.REPRODUCTIONS, "fake", "repro_fake")
    args = reproduce.build_parser().parse_args(["table1", "--out", str(tmp_path)])
    with pytest.raises(KeyboardInterrupt):
        reproduce.run_one("fake", args, ["fake"])
    data = json.loads((tmp_path / "fake.json").read_text())
    assert data["results"] == {"done": 1} and data["complete"] is False


def test_mean_spread():
    assert repro_common.mean_spread([1.0, 3.0]) == (2.0, pytest.approx(2 ** 0.5))
    assert repro_common.mean_spread([4.0]) == (4.0, 0.0)
