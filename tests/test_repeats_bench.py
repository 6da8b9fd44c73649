"""The interleaved repetitions (``eval.bench.repeats``): runs classed by the cores' placement, and the summary
against the fewest threads' runs of any placement."""
import io
import json

import pytest

from eval.bench import placement, repeats


def test_the_summary_gives_each_placement_against_the_fewest_threads():
    times = {("", 1, "any"): [(0.20, 2.0), (0.22, 2.2), (0.18, 1.8)],
             ("", 2, "near"): [(0.10, 1.0), (0.12, 1.1)],
             ("", 2, "far"): [(0.16, 2.5)]}
    lines = repeats.summary(times)
    assert lines[2] == "| as is | 1 | any | 3 | 0.200 | 1.00x | 2.000 | 1.00x |"
    assert lines[3] == "| as is | 2 | near | 2 | 0.110 | 1.82x | 1.050 | 1.90x |"
    assert lines[4] == "| as is | 2 | far | 1 | 0.160 | 1.25x | 2.500 | 0.80x |"
    assert len(lines) == 5


def test_probed_runs_carry_their_probes_and_placement(tmp_path):
    if placement.round_trip_ns(100) is None:
        pytest.skip("no C compiler builds the probe")
    corpus = tmp_path / "words.txt"
    corpus.write_text("".join("w%d w%d the a\n" % (i % 50, i % 7) for i in range(3000)), encoding="utf-8")
    out = io.StringIO()
    times = repeats.run(str(corpus), [1, 2], 1, 1, out=out, probe=True)
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [r["threads"] for r in rows] == [1, 2]
    assert rows[0]["placement"] == "any" and rows[1]["placement"] in ("near", "far", "mixed")
    assert all(r["probe_before_ns"] > 0 and r["probe_after_ns"] > 0 for r in rows)
    assert sorted(times) == sorted([("", 1, "any"), ("", 2, rows[1]["placement"])])
    assert len(repeats.summary(times)) == 4
