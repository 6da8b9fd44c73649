"""From rating files to recommendations by movie id: generated files in the real ml-1m, ml-20m and Netflix Prize
layouts (those sets are not in the shared data), and the real ml-100k when it is there."""
import datetime
import os

import numpy as np
import pytest
import scipy.sparse as sp

from embkit import ItemEmbedding
from embkit.evaluation import evaluate_next_items
from embkit.items.cooccurrence import PairCounts
from embkit.items.leave_one_out import leave_one_out
from embkit.items.timelines import load_timelines

#: Movie ids far from the rows, with one chain: a user who saw movie MOVIES[k] next sees MOVIES[k + 1].
MOVIES = [1193, 661, 914, 3408, 2355, 1197, 1287, 2804, 594, 919]


def _users(n_users=60, length=6, seed=0):
    """(user, movie, stars, day) rows: each user walks the chain from a random start, 4 or 5 stars."""
    rng = np.random.default_rng(seed)
    rows = []
    for user in range(1, n_users + 1):
        start = int(rng.integers(0, len(MOVIES) - length + 1))
        for step in range(length):
            rows.append((user, MOVIES[start + step], int(rng.integers(4, 6)), 10000 + 100 * step + user))
    return rows


def _check_recommends_movie_ids(path, **load):
    timelines = load_timelines(path, **load)
    split = leave_one_out(timelines)
    model = ItemEmbedding(vector_size=16, epochs=20, workers=1, seed=1, progress=False)
    model.fit(PairCounts.from_timelines(split.train, window=2), validation=split.validation)
    assert model.items and all(type(x) is int for x in model.items) and set(model.items) <= set(MOVIES)
    ids, _ = model.recommend([MOVIES[2], MOVIES[3]], N=2)
    assert ids.tolist()[0] == MOVIES[4]                              # the chain's next movie, by id
    assert model.evaluate(split.test).hit[5] > 0.5
    return timelines


def test_ml1m_dat_layout_with_titles(tmp_path):
    folder = tmp_path / "ml-1m"
    folder.mkdir()
    (folder / "ratings.dat").write_text("".join("%d::%d::%d::%d\n" % row for row in _users()))
    (folder / "movies.dat").write_text("".join("%d::Movie %d (1999)::Drama\n" % (m, m) for m in MOVIES),
                                       encoding="latin-1")
    timelines = _check_recommends_movie_ids(folder)
    assert timelines.label(0).startswith("Movie ")


def test_ml20m_csv_layout(tmp_path):
    folder = tmp_path / "ml-20m"
    folder.mkdir()
    (folder / "ratings.csv").write_text("userId,movieId,rating,timestamp\n"
                                        + "".join("%d,%d,%d.0,%d\n" % row for row in _users(seed=1)))
    _check_recommends_movie_ids(folder)


def test_netflix_layout_from_a_users_path(tmp_path):
    by_movie = {}
    for user, movie, stars, day in _users(seed=2):
        date = datetime.date(2005, 1, 1) + datetime.timedelta(days=day - 10000)
        by_movie.setdefault(movie, []).append("%d,%d,%s\n" % (user, stars, date.isoformat()))
    (tmp_path / "combined_data_1.txt").write_text("".join("%d:\n%s" % (m, "".join(lines))
                                                          for m, lines in sorted(by_movie.items())))
    _check_recommends_movie_ids(tmp_path, min_rating=4)


def test_ml100k_beats_popularity_by_leave_one_out(shared_data):
    path = os.path.join(shared_data, "movielens", "ml-100k")
    if not os.path.isdir(path):
        pytest.skip("ml-100k is not in the shared data")
    split = leave_one_out(load_timelines(path))
    counts = PairCounts.from_timelines(split.train)
    model = ItemEmbedding(workers=2, progress=False).fit(counts, validation=split.validation)     # the defaults
    result = model.evaluate(split.test, ks=(10,))
    held = split.test
    popularity = np.tile(np.log1p(split.train.item_counts).astype(np.float32), (len(held), 1))
    seen = sp.csr_matrix((np.ones(len(held.items)), (np.repeat(np.arange(len(held)), np.diff(held.offsets)),
                                                     held.items)), shape=popularity.shape)
    baseline = evaluate_next_items(popularity, held.targets, seen, ks=(10,))
    assert result.hit[10] > baseline.hit[10] and result.ndcg[10] > baseline.ndcg[10]
    assert result.mpr > baseline.mpr
    ids, _ = model.recommend(split.test.history_ids()[0], N=5)
    assert all(type(x) is int for x in ids.tolist()) and set(ids.tolist()) <= set(model.items)
