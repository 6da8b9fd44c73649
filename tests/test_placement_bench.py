"""The placement benchmark (``eval.bench.placement``): the cache-line probe measures, runs are classed by the
probes around them, and a small corpus goes through every job to the summary."""
import json

import pytest

from eval.bench import placement


def test_a_run_is_classed_by_the_probes_on_both_sides():
    assert placement.placement(60.0, 90.0, 150, 250) == "near"
    assert placement.placement(300.0, 410.0, 150, 250) == "far"
    assert placement.placement(60.0, 410.0, 150, 250) == "mixed"       # moved during the run
    assert placement.placement(200.0, 200.0, 150, 250) == "mixed"      # between the two
    assert placement.placement(None, 90.0, 150, 250) == "mixed"


def test_the_summary_groups_runs_by_variant_and_placement():
    rows = [{"variant": "1 thread", "threads": 1, "placement": p, "words_per_s": w}
            for p, w in (("near", 1.0e6), ("far", 1.2e6), ("mixed", 1.1e6))]
    rows += [{"variant": "as is", "threads": 2, "placement": p, "words_per_s": w}
             for p, w in (("near", 2.0e6), ("near", 2.2e6), ("far", 0.8e6))]
    lines = placement.summary(rows)
    assert lines[2] == "| 1 thread | 1 | any | 3 | 1.10M | 1.00-1.20M | 1.00x |"
    assert lines[3] == "| as is | 2 | near | 2 | 2.10M | 2.00-2.20M | 1.91x |"
    assert lines[4] == "| as is | 2 | far | 1 | 0.80M | 0.80-0.80M | 0.73x |"
    assert len(lines) == 5


def test_the_probe_times_a_round_trip():
    if placement.round_trip_ns(100) is None:
        pytest.skip("no C compiler builds the probe")
    assert 0 < placement.round_trip_ns(2000, limit_s=0.2) < 1e9


def test_every_job_trains_and_is_summarised(tmp_path, capsys):
    if placement.round_trip_ns(100) is None:
        pytest.skip("no C compiler builds the probe")
    corpus = tmp_path / "words.txt"
    corpus.write_text("".join("w%d w%d the a\n" % (i % 50, i % 7) for i in range(3000)), encoding="utf-8")
    out = tmp_path / "runs.jsonl"
    placement.main(["--corpus", str(corpus), "--repeats", "1", "--variant", "none:hot_rows=0",
                    "--jsonl", str(out)])
    rows = [json.loads(line) for line in open(out)]
    assert [(r["variant"], r["threads"]) for r in rows] == [("1 thread", 1), ("as is", 2), ("none", 2)]
    assert all(r["words_per_s"] > 0 and r["placement"] in ("near", "far", "mixed") for r in rows)
    printed = capsys.readouterr().out
    assert "| variant | threads | placement |" in printed and "| none | 2 |" in printed


def test_a_training_process_that_fails_is_an_error_not_a_wait(tmp_path):
    with pytest.raises(RuntimeError, match="training process failed"):
        placement.train_in_process(str(tmp_path / "no-such-corpus.txt"), 1, 1)
