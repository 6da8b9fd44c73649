"""Rating loaders (MovieLens, Netflix Prize), the vectorised block parser, titles, timelines and the
MovieLens download registry.

Real MovieLens files are read from the shared data folder (``shared_data`` fixture, skipped when absent)
and checked against independent plain-Python counts; everything else is written to ``tmp_path``.
"""
import bz2
import csv
import datetime
import gzip
import hashlib
import os
import shutil
import zipfile
from collections import Counter, defaultdict

import numpy as np
import pytest

from embkit.items import delimited_numbers
from embkit.core import downloads
from embkit.items import datasets as rating_datasets
from embkit.items.ratings import load_ratings, find_rating_files
from embkit.items.timelines import Timelines, load_timelines
from embkit.items.titles import load_titles


@pytest.fixture(scope="module")
def movielens(shared_data):
    return os.path.join(shared_data, "movielens")


def _u_data_rows(path):
    """(user, item, rating, timestamp) of u.data, parsed line by line."""
    rows = []
    with open(path) as fh:
        for line in fh:
            user, item, rating, stamp = line.split("\t")
            rows.append((int(user), int(item), float(rating), int(stamp)))
    return rows


def _columns(ratings):
    return list(zip(ratings.user.tolist(), ratings.item.tolist(), ratings.rating.tolist(),
                    ratings.timestamp.tolist()))


# ------------------------------------------------------------------------------------------ real MovieLens
def test_ml100k_matches_a_plain_python_parse(movielens):
    path = os.path.join(movielens, "ml-100k", "u.data")
    rows = _u_data_rows(path)
    everything = load_ratings(path, min_rating=None, titles=False)
    assert everything.n_read == len(everything) == len(rows) == 100000
    assert _columns(everything) == rows
    assert everything.user.dtype == np.int32 and everything.timestamp.dtype == np.int64

    kept = load_ratings(os.path.join(movielens, "ml-100k"))  # the folder; default threshold 4 stars
    expected = [r for r in rows if r[2] >= 4]
    assert len(kept) == len(expected) == 55375
    assert _columns(kept) == expected
    assert kept.min_rating == 4.0 and kept.layout == "tsv" and kept.n_read == 100000
    assert kept.n_users == len({r[0] for r in expected}) and kept.n_items == len({r[1] for r in expected})
    assert kept.titles[543] == "Misérables, Les (1995)"  # u.item is Latin-1


def test_ml_latest_small_csv_with_half_stars(movielens):
    path = os.path.join(movielens, "ml-latest-small", "ratings.csv")
    with open(path, newline="") as fh:
        rows = [(int(u), int(i), float(r), int(t)) for u, i, r, t in list(csv.reader(fh))[1:]]
    everything = load_ratings(path, min_rating=None)
    assert _columns(everything) == rows and len(rows) == 100836
    kept = load_ratings(os.path.dirname(path), min_rating=3.5)
    assert len(kept) == sum(r[2] >= 3.5 for r in rows)
    assert kept.titles[73] == "Misérables, Les (1995)" and len(kept.titles) == 9742


def test_other_ml100k_files_are_sniffed(movielens):
    r = load_ratings(os.path.join(movielens, "ml-100k", "u1.base"), min_rating=None, titles=False)
    assert r.layout == "tsv" and len(r) == 80000


def test_titles_of_every_layout(movielens, shared_data):
    assert len(load_titles(os.path.join(movielens, "ml-1m", "movies.dat"))) == 3883
    netflix = load_titles(os.path.join(shared_data, "netflix", "movie_titles.txt"))  # Latin-1, CRLF
    assert len(netflix) == 17770
    assert netflix[1] == "Dinosaur Planet (2003)"
    assert netflix[6483] == "Smokey Joe's Café (2001)"
    assert netflix[4388] == "Ancient Civilizations: Rome and Pompeii"  # year NULL


def test_bad_title_line_is_named(tmp_path):
    path = tmp_path / "u.item"
    path.write_bytes(b"1|Toy Story (1995)|x\nabc|Broken|y\n")
    with pytest.raises(ValueError, match=r"u\.item, line 2: item id 'abc'"):
        load_titles(path)


# ------------------------------------------------------------------------------------------ layouts
TSV = "1\t10\t5\t100\n1\t11\t3\t90\n2\t10\t4\t50\n"


def test_layouts_compression_and_folders(tmp_path):
    expected = [(1, 10, 5.0, 100), (1, 11, 3.0, 90), (2, 10, 4.0, 50)]
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "u.data").write_text(TSV)
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "ratings.dat").write_text(TSV.replace("\t", "::"))
    (tmp_path / "c").mkdir()
    with gzip.open(tmp_path / "c" / "ratings.csv.gz", "wt") as fh:
        fh.write("userId,movieId,rating,timestamp\n" + TSV.replace("\t", ","))
    (tmp_path / "d.bz2").write_bytes(bz2.compress(TSV.replace("\t", ",").encode()))  # csv without header, sniffed
    for path, layout in (("a", "tsv"), ("b", "dat"), ("c", "csv"), ("d.bz2", "csv")):
        r = load_ratings(tmp_path / path, min_rating=None)
        assert r.layout == layout and _columns(r) == expected, path
    assert find_rating_files(tmp_path / "a")[0] == [str(tmp_path / "a" / "u.data")]
    with pytest.raises(FileNotFoundError, match="no rating file in folder"):
        load_ratings(tmp_path)
    with pytest.raises(FileNotFoundError, match="resolve_ratings"):
        load_ratings(tmp_path / "missing.csv")


def test_crlf_and_blank_lines_and_no_final_newline(tmp_path):
    path = tmp_path / "r.csv"
    path.write_bytes(b"userId,movieId,rating,timestamp\r\n1,2,4.5,7\r\n\r\n3,4,0.5,8")
    assert _columns(load_ratings(path, min_rating=None)) == [(1, 2, 4.5, 7), (3, 4, 0.5, 8)]


NETFLIX = ("1:\n6,5,2005-09-06\n7,3,2004-02-29\n"
           "2:\n6,5,1999-12-31\n8,5,2005-09-06\n")


def _day(text):
    return int((datetime.datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=datetime.timezone.utc)
                - datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)).total_seconds())


def test_netflix_combined_file_list_and_training_set(tmp_path):
    one = tmp_path / "combined_data_1.txt"
    one.write_text(NETFLIX)
    everything = load_ratings(one, min_rating=None)
    assert everything.layout == "netflix"
    assert _columns(everything) == [(6, 1, 5.0, _day("2005-09-06")), (7, 1, 3.0, _day("2004-02-29")),
                                    (6, 2, 5.0, _day("1999-12-31")), (8, 2, 5.0, _day("2005-09-06"))]
    assert len(load_ratings(one)) == 3  # default threshold 5 stars
    two = tmp_path / "combined_data_2.txt"
    two.write_bytes(b"3:\r\n9,5,2001-01-01\r\n")  # CRLF
    both = load_ratings([one, two], min_rating=None)
    assert len(both) == 5 and both.item[-1] == 3 and both.timestamp[-1] == _day("2001-01-01")
    assert len(load_ratings(tmp_path, min_rating=None)) == 5  # the folder of combined_data_*.txt

    training = tmp_path / "nf" / "training_set"
    training.mkdir(parents=True)
    (training / "mv_0000001.txt").write_text("1:\n6,5,2005-09-06\n")
    (training / "mv_0000002.txt").write_text("2:\n7,4,2005-09-07\n")
    (tmp_path / "nf" / "movie_titles.txt").write_bytes(b"1,2003,Dinosaur Planet\r\n2,NULL,Caf\xe9\r\n")
    r = load_ratings(tmp_path / "nf", min_rating=4)
    assert _columns(r) == [(6, 1, 5.0, _day("2005-09-06")), (7, 2, 4.0, _day("2005-09-07"))]
    assert r.titles == {1: "Dinosaur Planet (2003)", 2: "Café"}


def test_small_blocks_give_the_same_ratings(tmp_path, movielens):
    path = os.path.join(movielens, "ml-100k", "u.data")
    whole = load_ratings(path, min_rating=None)
    pieces = load_ratings(path, min_rating=None, block_bytes=20000)
    assert _columns(pieces) == _columns(whole)
    netflix = tmp_path / "combined_data_1.txt"
    netflix.write_text(NETFLIX * 50)
    assert _columns(load_ratings(netflix, min_rating=None, block_bytes=7)) == \
        _columns(load_ratings(netflix, min_rating=None))


def test_block_parser_matches_python_on_random_numbers():
    rng = np.random.default_rng(3)
    n = 3000
    digits = rng.integers(1, 17, size=(n, 3))
    values = [[int(rng.integers(0, 10 ** int(d))) for d in row] for row in digits]
    decimals = ["%d.%s" % (rng.integers(0, 1000), "5" * int(rng.integers(1, 4))) if k % 2 else str(k)
                for k in range(n)]
    block = "".join("%d,%d,%s,%d\n" % (a, b, dec, c) for (a, b, c), dec in zip(values, decimals)).encode()
    cols = delimited_numbers.parse_block(block, 4, b",", decimal=(2,))
    assert cols[0].tolist() == [v[0] for v in values]
    assert cols[1].tolist() == [v[1] for v in values]
    assert cols[3].tolist() == [v[2] for v in values]
    assert np.allclose(cols[2], [float(d) for d in decimals], rtol=1e-15)


# ------------------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize("name, text, message", [
    ("u.data", "1\t2\t3\t4\n1\t2\t3\n", r"u\.data, line 2: expected 4 fields"),
    ("u.data", "1\t2\t3\t4\n\n1\tx\t3\t4\n", r"u\.data, line 3: item id 'x' is not a non-negative integer"),
    ("u.data", "1\t2\t\t4\n", r"line 1: rating '' is not a number"),
    ("u.data", "1\t2\t3.5.1\t4\n", r"line 1: rating '3\.5\.1'"),
    ("u.data", "1\t2\t3\t-4\n", r"line 1: timestamp '-4'"),
    ("u.data", "1\t3000000000\t3\t4\n", r"line 1: item id 3000000000 is larger than 2147483647"),
    ("ratings.dat", "1::2::3::4\n1::2:3::4\n", r"ratings\.dat, line 2: expected 4 fields"),
    ("ratings.csv", "userId,movieId,rating,timestamp\n1,2,3,4\n1,2,3,4,5\n", r"ratings\.csv, line 3: expected 4"),
    ("ratings.csv", "user;movie;rating\n1,2,3,4\n", r"ratings\.csv, line 1: expected a header of 4 columns"),
    ("combined_data_1.txt", "1:\n1,5,2005-09-06\n2,5,2005-02-30\n", r"line 3: date '2005-02-30' is not a valid"),
    ("combined_data_1.txt", "1,5,2005-09-06\n", r"line 1: rating line before the first 'MovieID:' line"),
    ("combined_data_1.txt", "1:\n1,5,2005-09-06\n12a:\n", r"line 3: movie id '12a'"),
    ("combined_data_1.txt", "1:\n1,5\n", r"line 2: expected 3 fields CustomerID,Rating,YYYY-MM-DD"),
])
def test_malformed_line_names_file_and_line(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        load_ratings(path, min_rating=None)


def test_malformed_line_deep_in_a_later_block(tmp_path):
    lines = ["%d\t%d\t4\t%d" % (k, k + 1, 1000 + k) for k in range(5000)]
    lines[4321] = "4321\t4322\tfour\t5321"
    path = tmp_path / "u.data"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match=r"u\.data, line 4322: rating 'four'"):
        load_ratings(path, block_bytes=4096)


def test_threshold_removing_everything_names_it(tmp_path):
    path = tmp_path / "u.data"
    path.write_text(TSV)
    with pytest.raises(ValueError, match=r"min_rating=6 removes every rating .* highest is 5"):
        load_ratings(path, min_rating=6)
    with pytest.raises(ValueError, match=r"min_rating=5\.5 removes every rating"):
        load_ratings(path, min_rating=None).at_least(5.5)
    assert len(load_ratings(path, min_rating=None).at_least(4)) == 2
    empty = tmp_path / "ratings.csv"
    empty.write_text("userId,movieId,rating,timestamp\n")
    with pytest.raises(ValueError, match="no ratings found"):
        load_ratings(empty)
    with pytest.raises(ValueError, match="layout must be one of"):
        load_ratings(path, layout="xml")


# ------------------------------------------------------------------------------------------ timelines
def test_timelines_order_ties_and_index(tmp_path):
    # user 7: two items at t=5 (file order kept), one earlier; user 3: a single item
    path = tmp_path / "u.data"
    path.write_text("7\t30\t5\t5\n7\t10\t5\t5\n3\t20\t5\t9\n7\t20\t5\t1\n7\t40\t5\t6\n9\t10\t5\t1\n9\t20\t5\t2\n")
    t = Timelines.from_ratings(load_ratings(path, titles=False))
    assert t.users.tolist() == [3, 7, 9]
    assert t.item_ids.tolist() == [20, 10, 30, 40]  # by count (3, 2, 1, 1), ties by raw id
    assert t.item_counts.tolist() == [3, 2, 1, 1]
    assert [t.item_ids[t[u]].tolist() for u in range(3)] == [[20], [20, 30, 10, 40], [10, 20]]
    stats = t.stats()
    assert (stats.users, stats.items, stats.events, stats.single_item_users) == (3, 4, 7, 1)
    assert "1 users with a single item" in str(stats)
    assert t.n_pairs(1) == 4 and t.n_pairs(2) == 6 and t.n_pairs(None) == 7


def test_ml100k_timelines_against_plain_python(movielens):
    rows = [r for r in _u_data_rows(os.path.join(movielens, "ml-100k", "u.data")) if r[2] >= 4]
    by_user = defaultdict(list)
    for position, (user, item, _, stamp) in enumerate(rows):
        by_user[user].append((stamp, position, item))
    t = load_timelines(os.path.join(movielens, "ml-100k"))
    assert t.n_users == len(by_user) and t.n_events == len(rows)
    counts = Counter(r[1] for r in rows)
    assert dict(zip(t.item_ids.tolist(), t.item_counts.tolist())) == counts
    for u, user in enumerate(t.users.tolist()):
        assert t.item_ids[t[u]].tolist() == [item for _, _, item in sorted(by_user[user])]
    assert t.label(0) == "Star Wars (1977)" and t.names[0] == "50"


# ------------------------------------------------------------------------------------------ registry
def test_resolve_paths_names_and_netflix(tmp_path, cache, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ml-100k").mkdir()  # an existing path wins over the registry name
    assert rating_datasets.resolve_ratings("ml-100k") == "ml-100k"
    assert rating_datasets.resolve_ratings(["a", "b"]) == ["a", "b"]
    with pytest.raises(downloads.DownloadError, match="withdrawn.*local path"):
        rating_datasets.resolve_ratings("netflix")
    with pytest.raises(FileNotFoundError, match="ml-100k, ml-10m, ml-1m, ml-20m, ml-latest, ml-latest-small"):
        rating_datasets.resolve_ratings("ml-30m")


def test_offline_error_says_how_to_get_it(cache, monkeypatch):
    with pytest.raises(downloads.DownloadError) as err:
        rating_datasets.resolve_ratings("ml-1m")
    message = str(err.value)
    assert "https://files.grouplens.org/datasets/movielens/ml-1m.zip" in message and "offline" in message
    assert str(cache / "ml-1m.zip") in message and "resolve_ratings" in message
    monkeypatch.setenv("EMBKIT_OFFLINE", "1")
    with pytest.raises(downloads.DownloadError, match="EMBKIT_OFFLINE"):
        load_timelines("ml-20m")
    assert not cache.exists() or not os.listdir(cache)


def test_pinned_cached_file_is_used_and_a_corrupted_one_refused(cache, movielens):
    folder = cache / "ml-100k"
    folder.mkdir(parents=True)
    shutil.copy(os.path.join(movielens, "ml-100k", "u.data"), folder / "u.data")
    assert rating_datasets.resolve_ratings("ml-100k") == str(folder)
    assert len(load_timelines("ml-100k", titles=False)) == 942
    data = bytearray((folder / "u.data").read_bytes())
    data[100] = ord("9") if data[100] != ord("9") else ord("8")  # same size, other digest
    (folder / "u.data").write_bytes(bytes(data))
    with pytest.raises(downloads.ChecksumError, match="SHA-256"):
        rating_datasets.resolve_ratings("ml-100k")


def test_cached_archive_is_extracted_with_titles_and_its_digest_recorded(cache):
    cache.mkdir()
    archive = cache / "ml-20m.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("ml-20m/ratings.csv", "userId,movieId,rating,timestamp\n1,2,4.5,10\n1,3,4.0,11\n2,2,5.0,9\n")
        zf.writestr("ml-20m/movies.csv", 'movieId,title,genres\n2,"Heat, The (1995)",Crime\n3,Up (2009),Drama\n')
    folder = rating_datasets.resolve_ratings("ml-20m")
    assert folder == str(cache / "ml-20m")
    recorded = (cache / "ml-20m.zip.sha256").read_text().split()[0]
    assert recorded == hashlib.sha256(archive.read_bytes()).hexdigest()
    r = load_ratings(folder)
    assert len(r) == 3 and r.titles == {2: "Heat, The (1995)", 3: "Up (2009)"}
    # the recorded digest is enforced when the archive is used again
    shutil.rmtree(folder)
    archive.write_bytes(archive.read_bytes() + b"junk")
    with pytest.raises(downloads.ChecksumError):
        rating_datasets.resolve_ratings("ml-20m")
