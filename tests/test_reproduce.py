"""``python -m eval.repro.reproduce``: a missing dataset names where to get it, an interrupted run keeps what
finished, the tables choose T* and summarise seeds as documented."""
import json
import os
import signal
import subprocess
import time

import numpy as np
import pytest

from _eval import REPO_ROOT, eval_command, run_eval

METRICS = ("likelihood", "mpr", "prec50", "prec15", "prec5")
BOLTZMANN = ("UBS", "PBS")


def test_a_missing_dataset_names_its_path_and_source(tmp_path):
    done = run_eval("repro.reproduce", "table2", "--quick", "--out", tmp_path / "out",
                    env={"EMBKIT_SHARED_DATA": str(tmp_path)})
    assert done.returncode == 2
    assert str(tmp_path / "movielens" / "ml-100k") in done.stderr
    assert "files.grouplens.org/datasets/movielens/ml-100k.zip" in done.stderr
    assert "EMBKIT_SHARED_DATA" in done.stderr


@pytest.fixture(scope="module")
def interrupted(shared_data, tmp_path_factory):
    """``table1 --quick`` interrupted (SIGINT) after its second training run: the states of its JSON seen while
    it ran, the JSON it left and its exit status."""
    out = tmp_path_factory.mktemp("interrupted")
    path = out / "table1-quick.json"
    proc = subprocess.Popen(eval_command("repro.reproduce", "table1", "--quick", "--workers", "1", "--out", out),
                            cwd=REPO_ROOT, env=dict(os.environ, EMBKIT_SHARED_DATA=shared_data),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen, deadline = [], time.monotonic() + 300
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):           # not written yet
                data = None
            runs = len(data["results"].get("runs", [])) if data else 0
            if data and (not seen or runs != seen[-1][0]):
                seen.append((runs, data))
            if runs >= 2:
                break
            time.sleep(0.05)
        running = proc.poll() is None
        proc.send_signal(signal.SIGINT)
        status = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    return dict(seen=seen, running=running, left=json.loads(path.read_text()), status=status)


def test_the_record_is_on_disk_after_every_addition(interrupted, tmp_path, shared_data):
    assert interrupted["running"], "table1 --quick ended before its second run was recorded"
    counts = [runs for runs, _ in interrupted["seen"]]
    assert counts[-1] == 2 and 1 in counts              # each run on disk as it finished, before the end
    assert all(data["complete"] is False for _, data in interrupted["seen"])
    # a run that finishes says so (a plan of one small training run, no peers)
    plan = dict(words=5_000, vocab=100, seeds=1, T=[1], sets=[
        dict(name="gcide", epochs=1, mle_seeds=0, boltzmann="mh", sweep="all", methods=["US"], peers=False)])
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    run_eval("repro.reproduce", "table2", "--plan", tmp_path / "plan.json", "--workers", "1", "--out", tmp_path,
             env={"EMBKIT_SHARED_DATA": shared_data})
    data = json.loads((tmp_path / "table2.json").read_text())
    assert data["complete"] is True and [r["method"] for r in data["results"]["gcide"]["runs"]] == ["US"]


def test_an_interrupted_reproduction_keeps_its_json(interrupted):
    left = interrupted["left"]
    assert interrupted["status"] != 0
    assert left["complete"] is False and left["command"].startswith("python -m eval.repro.reproduce table1")
    assert "setup" in left["results"] and len(left["results"]["runs"]) >= 2 and left["wall_seconds"] > 0


def _words_run(method, seed, value):
    """A run of table1 with ``value`` for every similarity and analogy score."""
    similarity = {"pearson": value, "spearman": value, "found": 1, "pairs": 1}
    return dict({name: similarity for name in ("ws353", "simlex999", "rw", "men", "mturk287")},
                **{"%s@%d" % (kind, k): value for kind in ("semantic", "syntactic") for k in (1, 5, 15)},
                method=method, seed=seed, seconds=1.0, examples_per_s=1.0, semantic_questions=1,
                syntactic_questions=1)


def _markdown(folder, name, results, quick=True):
    """The tables that ``reproduce NAME --markdown`` prints from a JSON holding ``results``."""
    data = dict(reproduction=name, quick=quick, command="python -m eval.repro.reproduce %s" % name, machine="test",
                complete=True, wall_seconds=1.0, results=results)
    (folder / ("%s%s.json" % (name, "-quick" if quick else ""))).write_text(json.dumps(data))
    done = run_eval("repro.reproduce", name, *(["--quick"] if quick else []), "--markdown", "--out", folder)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_mean_spread(tmp_path):
    """The tables give the mean and standard deviation over seeds (no spread for one seed)."""
    runs = [_words_run("SS", 1, 1.0), _words_run("SS", 2, 3.0), _words_run("US", 1, 4.0)]
    text = _markdown(tmp_path, "table1", {"runs": runs})
    assert "| 2.00 ± 1.41 / 0.44 |" in text             # two seeds: the mean and the standard deviation
    assert "| 4.00 / 0.38 |" in text                    # one seed: no spread


def _run(method, T, seed, val, test=0.5):
    return dict(method=method, T=T, seed=seed, validation=dict.fromkeys(METRICS, val),
                test=dict.fromkeys(METRICS, test), seconds=1.0)


def _mpr_row(text):
    return next(line for line in text.splitlines() if line.startswith("| mpr (%) |"))


def test_table2_picks_T_star_on_the_seeds_that_ran_the_whole_grid(tmp_path):
    runs = [_run("UBS", 1, 1, 0.80, 0.70), _run("UBS", 6, 1, 0.90, 0.60), _run("UBS", 36, 1, 0.85, 0.65),
            # seed 2 ran only T = 1, with a better validation value: not a grid seed, so it cannot move T*
            _run("UBS", 1, 2, 0.99, 0.72), _run("UBS", 6, 2, 0.80, 0.64)]
    result = dict(items=10, pairs=[1, 1, 1], epochs=1, boltzmann="exact", peers=[])
    text = _markdown(tmp_path, "table2", {"ml-100k": dict(result, runs=runs)})
    # T* = 6 (seed 1's validation); the test value at T* over both seeds that ran it
    assert _mpr_row(text) == "| mpr (%) | - | - | - | 62.00 ± 2.83 (T*=6) | - | - |"
    # once every seed ran every T, the validation mean over them decides
    text = _markdown(tmp_path, "table2", {"ml-100k": dict(result, runs=runs + [_run("UBS", 36, 2, 0.70)])})
    assert _mpr_row(text) == "| mpr (%) | - | - | - | 71.00 ± 1.41 (T*=1) | - | - |"


def _seed_one_best_Ts(runs, method):
    """The T of ``method``'s best seed-1 validation value, for each metric (what seed 2 reruns)."""
    mine = [r for r in runs if r["method"] == method and r["seed"] == 1]
    return {max(mine, key=lambda r: r["validation"][metric])["T"] for metric in METRICS}


def test_table2_reruns_only_the_best_T_with_more_seeds(tmp_path, shared_data):
    pytest.importorskip("implicit")
    plan = dict(words=20_000, vocab=300, seeds=2, T=[1, 36], sets=[
        dict(name="gcide", epochs=1, mle_seeds=1, boltzmann="mh", sweep="best"),
        dict(name="gcide", key="gcide exact check", epochs=1, mle_seeds=0, boltzmann="exact", sweep="all",
             seeds=1, methods=list(BOLTZMANN), peers=False)])
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    env = {"EMBKIT_SHARED_DATA": shared_data}
    args = ("table2", "--plan", tmp_path / "plan.json", "--workers", "1", "--out", tmp_path)
    done = run_eval("repro.reproduce", *args, env=env)
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp_path / "table2.json").read_text())
    main, check = data["results"]["gcide"], data["results"]["gcide exact check"]
    first = [r for r in main["runs"] if r["seed"] == 1]
    assert {(r["method"], r["T"]) for r in first} == {(m, None) for m in ("MLE", "SS", "US", "PS")} | {
        (m, T) for m in BOLTZMANN for T in (1, 36)}
    second = [r for r in main["runs"] if r["seed"] == 2]
    assert {r["method"] for r in second if r["T"] is None} == {"SS", "US", "PS"}
    for method in BOLTZMANN:
        assert {r["T"] for r in second if r["method"] == method} == _seed_one_best_Ts(first, method)
    assert main["summary"]["MLE"]["mpr"]["seeds"] == 1 and main["summary"]["SS"]["mpr"]["seeds"] == 2
    assert [p["method"] for p in main["peers"]] == ["implicit ALS", "implicit BPR"]
    assert {(r["method"], r["T"], r["seed"]) for r in check["runs"]} == {
        (m, T, 1) for m in BOLTZMANN for T in (1, 36)} and check["peers"] == []
    shown = run_eval("repro.reproduce", "table2", "--markdown", "--out", tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "(1 seed)" in shown.stdout and "gcide exact check" in shown.stdout and "| 36 |" in shown.stdout
    # --resume keeps the finished runs and trains only what the file lacks (here: the MLE run, MLE being last)
    assert main["runs"][-1]["method"] == "MLE"
    n_runs, kept = len(main["runs"]), main["runs"][:-1]
    main["runs"] = kept
    (tmp_path / "table2.json").write_text(json.dumps(data))
    done = run_eval("repro.reproduce", *args, "--resume", env=env)
    assert done.returncode == 0, done.stderr
    again = json.loads((tmp_path / "table2.json").read_text())
    runs = again["results"]["gcide"]["runs"]
    assert runs[:-1] == kept and runs[-1]["method"] == "MLE" and len(runs) == n_runs
    assert again["resumed_from"][0]["wall_seconds"] == data["wall_seconds"] <= again["wall_seconds"]


def test_table2_runs_a_larger_movielens_set_only_when_named(tmp_path):
    pytest.importorskip("implicit")
    rng = np.random.default_rng(0)
    folder = tmp_path / "movielens" / "ml-1m"
    folder.mkdir(parents=True)
    lines = []
    for user in range(1, 121):          # 120 users, each liking 25 of 40 items, in the items' cyclic order
        for t, item in enumerate((rng.integers(40) + np.arange(25)) % 40 + 1):
            lines.append("%d::%d::%d::%d" % (user, item, rng.integers(4, 6), 978300000 + 60 * t))
    (folder / "ratings.dat").write_text("\n".join(lines) + "\n")
    env = {"EMBKIT_SHARED_DATA": str(tmp_path)}
    # the full run's sets, recorded before it stops at the first missing one, leave ml-1m out
    done = run_eval("repro.reproduce", "table2", "--out", tmp_path / "default", env=env)
    assert done.returncode == 2
    setup = json.loads((tmp_path / "default" / "table2.json").read_text())["results"]["setup"]
    assert setup["sets"] == ["ml-100k", "ml-latest-small", "gcide", "ml-100k exact check"]
    done = run_eval("repro.reproduce", "table2", "--sets", "ml-2m", "--out", tmp_path / "unknown", env=env)
    assert done.returncode != 0 and "no set ml-2m; its sets: ml-100k, ml-latest-small, gcide" in done.stderr
    out = tmp_path / "out"
    done = run_eval("repro.reproduce", "table2", "--quick", "--sets", "ml-1m", "--seeds", "1", "--workers", "1",
                    "--out", out, env=env)
    assert done.returncode == 0, done.stderr
    data = json.loads((out / "table2-quick-ml-1m.json").read_text())
    assert data["complete"] and list(data["results"]) == ["setup", "ml-1m"]
    runs = data["results"]["ml-1m"]["runs"]
    assert {r["method"] for r in runs} == {"MLE", "SS", "US", "UBS", "PS", "PBS"}
    assert {r["T"] for r in runs if r["method"] == "UBS"} == {1, 6, 36}       # the quick mode's T grid
    assert all(0.9 < r["test"]["mpr"] <= 1.0 for r in runs)     # the cyclic order is learned by every method
    shown = run_eval("repro.reproduce", "table2", "--quick", "--sets", "ml-1m", "--markdown", "--out", out)
    assert "**ml-1m** (40 items" in shown.stdout
