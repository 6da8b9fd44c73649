"""``eval.bench.recommend`` end to end on a generated rating file in the ml-20m layout: every user walks a chain
of movies, so the next movie is known and a method that learns the chain must beat popularity."""
import json

import numpy as np

from _eval import run_eval, table_rows

from embkit.items.count_blend import COUNT_WEIGHTS

N_MOVIES = 100


def _ratings(folder, n_users=300, length=8, seed=0):
    rng = np.random.default_rng(seed)
    lines = ["userId,movieId,rating,timestamp"]
    for user in range(1, n_users + 1):
        start = int(rng.integers(0, N_MOVIES - length + 1))
        for step in range(length):
            lines.append("%d,%d,%d.0,%d" % (user, 1000 + 3 * (start + step), rng.integers(4, 6),
                                             1_000_000 + 100 * step + user))
    folder.mkdir()
    (folder / "ratings.csv").write_text("\n".join(lines) + "\n")
    return folder


def test_the_benchmark_ranks_the_chain_above_popularity(tmp_path):
    data = _ratings(tmp_path / "chains")
    out = tmp_path / "recommend.json"
    done = run_eval("bench.recommend", "--data", data, "--seeds", "1", "2", "--workers", "1",
                    "--peers", "popularity", "cooccurrence", "--embkit", '{"epochs": 5, "vector_size": 16}',
                    "--json", out)
    assert done.returncode == 0, done.stderr
    header, *rows = table_rows(done.stdout)
    table = {row[0]: dict(zip(header, row)) for row in rows}
    assert set(table) == {"embkit (defaults)", "embkit, refit on train + validation", "popularity",
                          "item-item co-occurrence"}

    def hit(method):
        return float(table[method]["Hit@10 (%)"].split(" ± ")[0])

    assert hit("item-item co-occurrence") > 90 and hit("popularity") < 40
    assert hit("embkit (defaults)") > 2 * hit("popularity")
    assert table["embkit (defaults)"]["seeds"] == "2" and table["popularity"]["seeds"] == "1"
    saved = json.loads(out.read_text())
    assert saved["seeds"] == [1, 2] and saved["command"].startswith("python -m eval.bench.recommend --data")
    embkit = saved["results"][0]["rows"][0]
    assert [run["epochs_run"] for run in embkit["runs"]] == [5, 5]
    assert all(0 < run["seconds"] and 0 <= run["hit"] <= 1 for run in embkit["runs"])
    # the count weight is chosen on validation per seed, and the refit row scores with the same weight
    refit = saved["results"][0]["rows"][1]
    assert all(run["blend_weight"] in COUNT_WEIGHTS for run in embkit["runs"])
    assert [run["blend_weight"] for run in refit["runs"]] == [run["blend_weight"] for run in embkit["runs"]]
