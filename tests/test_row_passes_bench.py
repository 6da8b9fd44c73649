"""The owners' passes benchmark (``eval.bench.row_passes``) on a small table: a run per replicas and threads,
with the code's threaded split, and the refusal of fewer than 3 replicas (no owners' passes there)."""
import json

import pytest

from eval.bench import row_passes


def test_a_run_per_replicas_and_threads_is_saved(tmp_path, capsys):
    out = tmp_path / "passes.json"
    row_passes.main(["--rows", "997", "--dim", "6", "--replicas", "3", "5", "--threads", "1", "2",
                     "--repeats", "2", "--json", str(out)])
    saved = json.load(open(out))
    assert saved["command"].startswith("python -m eval.bench.row_passes --rows 997")
    assert [(r["replicas"], r["threads"]) for r in saved["runs"]] == [(3, 1), (3, 2), (5, 1), (5, 2)]
    assert all(r["split_threaded"] and r["split_ms"] > 0 and r["merge_ms"] > 0 for r in saved["runs"])
    assert "| replicas | threads | split ms |" in capsys.readouterr().out


def test_fewer_than_three_replicas_are_refused():
    with pytest.raises(SystemExit):
        row_passes.main(["--replicas", "2"])
