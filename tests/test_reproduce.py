"""eval/reproduce.py: a missing dataset names where to get it, an interrupted run keeps what finished."""
import json
import os
import sys

import numpy as np
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


def _run(method, T, seed, val, test=0.5):
    metrics = ("likelihood", "mpr", "prec50", "prec15", "prec5")
    return dict(method=method, T=T, seed=seed, validation=dict.fromkeys(metrics, val),
                test=dict.fromkeys(metrics, test), seconds=1.0)


def test_table2_picks_T_star_on_the_seeds_that_ran_the_whole_grid():
    import repro_items
    runs = [_run("UBS", 1, 1, 0.80, 0.70), _run("UBS", 6, 1, 0.90, 0.60), _run("UBS", 36, 1, 0.85, 0.65),
            # seed 2 ran only T = 1, with a better validation value: not a grid seed, so it cannot move T*
            _run("UBS", 1, 2, 0.99, 0.72), _run("UBS", 6, 2, 0.80, 0.64)]
    assert repro_items.grid_seeds(runs) == [1]
    assert repro_items.choose_T(runs, "mpr") == 6
    assert repro_items.best_Ts(runs, "UBS") == {6} and repro_items.best_Ts(runs, "PBS") == set()
    row = repro_items.summarise(runs)["UBS"]["mpr"]
    assert row["T"] == 6 and row["seeds"] == 2 and row["mean"] == pytest.approx(0.62)
    assert repro_items.sweep(runs, "UBS", "mpr") == [(1, 0.70, 0.0), (6, 0.60, 0.0), (36, 0.65, 0.0)]
    # once every seed ran every T, the validation mean over them decides
    both = runs + [_run("UBS", 36, 2, 0.70)]
    assert repro_items.grid_seeds(both) == [1, 2] and repro_items.choose_T(both, "mpr") == 1


def test_table2_reruns_only_the_best_T_with_more_seeds(tmp_path, monkeypatch, shared_data):
    pytest.importorskip("implicit")
    import repro_items
    monkeypatch.setenv("EMBKIT_SHARED_DATA", shared_data)
    monkeypatch.setitem(repro_items.PLANS, True, dict(words=20_000, vocab=300, seeds=2, T=[1, 36], sets=[
        dict(name="gcide", epochs=1, mle_seeds=1, boltzmann="mh", sweep="best"),
        dict(name="gcide", key="gcide exact check", epochs=1, mle_seeds=0, boltzmann="exact", sweep="all",
             seeds=1, methods=repro_items.BOLTZMANN, peers=False)]))
    args = reproduce.build_parser().parse_args(["table2", "--quick", "--workers", "1"])
    rec = repro_common.Record(str(tmp_path / "t.json"), "table2", True, ["table2", "--quick"])
    repro_items.run(args, rec)
    main, check = rec.get("gcide"), rec.get("gcide exact check")
    first = [r for r in main["runs"] if r["seed"] == 1]
    assert {(r["method"], r["T"]) for r in first} == {(m, None) for m in ("MLE", "SS", "US", "PS")} | {
        (m, T) for m in repro_items.BOLTZMANN for T in (1, 36)}
    second = [r for r in main["runs"] if r["seed"] == 2]
    assert {r["method"] for r in second if r["T"] is None} == {"SS", "US", "PS"}
    for method in repro_items.BOLTZMANN:
        assert {r["T"] for r in second if r["method"] == method} == repro_items.best_Ts(first, method)
    assert main["summary"]["MLE"]["mpr"]["seeds"] == 1 and main["summary"]["SS"]["mpr"]["seeds"] == 2
    assert [p["method"] for p in main["peers"]] == ["implicit ALS", "implicit BPR"]
    assert {(r["method"], r["T"], r["seed"]) for r in check["runs"]} == {
        (m, T, 1) for m in repro_items.BOLTZMANN for T in (1, 36)} and check["peers"] == []
    text = repro_items.markdown(rec.data)
    assert "(1 seed)" in text and "gcide exact check" in text and "| 36 |" in text
    # --resume keeps the finished runs and trains only what the file lacks (here: the MLE run, MLE being last)
    assert main["runs"][-1]["method"] == "MLE"
    data = json.loads((tmp_path / "t.json").read_text())
    kept = data["results"]["gcide"]["runs"][:-1]
    data["results"]["gcide"]["runs"] = kept
    (tmp_path / "t.json").write_text(json.dumps(data))
    again = repro_common.Record(str(tmp_path / "t.json"), "table2", True, ["table2", "--resume"], resume=True)
    repro_items.run(args, again)
    runs = again.get("gcide")["runs"]
    assert runs[:-1] == kept and runs[-1]["method"] == "MLE" and len(runs) == len(main["runs"])
    assert again.data["resumed_from"][0]["wall_seconds"] == data["wall_seconds"] <= again.data["wall_seconds"]


def test_table2_runs_a_larger_movielens_set_only_when_named(tmp_path, monkeypatch):
    pytest.importorskip("implicit")
    import repro_items
    rng = np.random.default_rng(0)
    folder = tmp_path / "movielens" / "ml-1m"
    folder.mkdir(parents=True)
    lines = []
    for user in range(1, 121):          # 120 users, each liking 25 of 40 items, in the items' cyclic order
        for t, item in enumerate((rng.integers(40) + np.arange(25)) % 40 + 1):
            lines.append("%d::%d::%d::%d" % (user, item, rng.integers(4, 6), 978300000 + 60 * t))
    (folder / "ratings.dat").write_text("\n".join(lines) + "\n")
    monkeypatch.setenv("EMBKIT_SHARED_DATA", str(tmp_path))
    assert [p["name"] for p in repro_items.chosen_plans(repro_items.PLANS[False], None)].count("ml-1m") == 0
    with pytest.raises(ValueError, match="no set ml-2m; its sets: ml-100k, ml-latest-small, gcide"):
        repro_items.chosen_plans(repro_items.PLANS[False], ["ml-2m"])
    out = tmp_path / "out"
    assert reproduce.main(["table2", "--quick", "--sets", "ml-1m", "--seeds", "1", "--workers", "1",
                           "--out", str(out)]) == 0
    data = json.loads((out / "table2-quick-ml-1m.json").read_text())
    assert data["complete"] and list(data["results"]) == ["setup", "ml-1m"]
    runs = data["results"]["ml-1m"]["runs"]
    assert {r["method"] for r in runs} == set(repro_items.METHODS)
    assert {r["T"] for r in runs if r["method"] == "UBS"} == set(repro_items.PLANS[True]["T"])
    assert all(0.9 < r["test"]["mpr"] <= 1.0 for r in runs)     # the cyclic order is learned by every method
    assert "**ml-1m** (40 items" in repro_items.markdown(data)
