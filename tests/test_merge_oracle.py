"""``eval.bench.merge_oracle`` end to end on a generated corpus: one round of 3 replicas against one process."""
import json

import numpy as np

from _eval import run_eval, table_rows


def test_the_oracle_compares_the_merges_band_by_band(tmp_path):
    rng = np.random.default_rng(0)
    words = ["w%d" % i for i in range(400)]
    p = 1.0 / np.arange(1, len(words) + 1)
    corpus = tmp_path / "zipf.txt"
    corpus.write_text("\n".join(" ".join(rng.choice(words, size=12, p=p / p.sum())) for _ in range(3000)) + "\n")
    out = tmp_path / "oracle.json"
    done = run_eval("bench.merge_oracle", "--corpus", corpus, "--replicas", 3, "--warm", 1, "--epochs", 2, "--words",
                    3000, "--truths", 3, "--json", out, timeout=300)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["replicas"] == 3 and result["warm"] == 1
    for table in ("W_in", "W_out"):
        bands = result["bands"][table]
        assert [b["ranks"][0] for b in bands] == [0, 10, 100, 300][:len(bands)]
        for band in bands:
            assert band["one process"][1] == 1.0       # sizes are relative to one process's step
            sum_drift, sum_size = band["sum"]
            mean_drift, mean_size = band["mean"]
            np.testing.assert_allclose([sum_drift, sum_size], [3 * mean_drift, 3 * mean_size], rtol=1e-4)
            # the agreement-weighted step lies between the mean and the sum, and w S below r S, row by row
            assert mean_size * (1 - 1e-4) <= band["r S"][1] <= sum_size * (1 + 1e-4)
            assert band["w S"][1] <= band["r S"][1] * (1 + 1e-4)
            assert 0 <= band["replicas_per_row"] <= 3
    # the printed tables hold the same bands
    rows = table_rows(done.stdout)
    assert sum(1 for r in rows if r[0][0].isdigit()) == sum(len(result["bands"][t]) for t in ("W_in", "W_out"))
