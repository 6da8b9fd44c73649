"""Item co-occurrence counts (PairCounts), their splits and their use by evaluate_ranking.

Window semantics are checked on hand-made timelines and against a brute-force count; the real ml-100k
counts against an independent plain-Python count of u.data.
"""
import os
from collections import Counter, defaultdict

import numpy as np
import pytest
import scipy.sparse as sp

from embkit.items.cooccurrence import PairCounts, forward_pair_counts, split_pairs
from embkit.evaluation import evaluate_ranking
from embkit.items.timelines import Timelines, load_timelines

from _eval import run_eval, table_rows


def _timelines(sequences, n_items=None):
    """Timelines of lists of dense item ids (raw id = dense id)."""
    n_items = n_items or max(max(s) for s in sequences if s) + 1
    items = np.concatenate([np.asarray(s, dtype=np.int32) for s in sequences])
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in sequences])])
    counts = np.bincount(items, minlength=n_items)
    return Timelines(items, offsets, np.arange(len(sequences)), np.arange(n_items), counts)


def _brute_force(sequences, window, both=False):
    pairs = Counter()
    for seq in sequences:
        for a in range(len(seq)):
            for b in range(a + 1, len(seq) if window is None else min(len(seq), a + window + 1)):
                pairs[seq[a], seq[b]] += 1
                if both:
                    pairs[seq[b], seq[a]] += 1
    return pairs


def _as_counter(counts):
    rows, cols, values = sp.find(counts.matrix)
    return Counter({(int(i), int(j)): int(c) for i, j, c in zip(rows, cols, values)})


# ------------------------------------------------------------------------------------------ windows
def test_window_semantics_by_hand():
    a, b, c, d, e = range(5)
    t = _timelines([[a, b, c, d, e], [c, a], [e]])
    assert _as_counter(PairCounts.from_timelines(t, window=1, directions="forward")) == Counter(
        {(a, b): 1, (b, c): 1, (c, d): 1, (d, e): 1, (c, a): 1})
    assert _as_counter(PairCounts.from_timelines(t, window=1)) == Counter(      # both ways by default
        {(a, b): 1, (b, c): 1, (c, d): 1, (d, e): 1, (c, a): 1, (b, a): 1, (c, b): 1, (d, c): 1, (e, d): 1,
         (a, c): 1})
    two = _as_counter(PairCounts.from_timelines(t, window=2, directions="forward"))
    assert two[a, c] == 1 and two[b, d] == 1 and two[c, e] == 1 and two[a, d] == 0 and sum(two.values()) == 8
    everything = PairCounts.from_timelines(t, window="all", directions="forward")
    assert everything.total == 10 + 1 and everything.window == "all" and everything.directions == "forward"
    assert everything.matrix[a, b] == 1 and everything.matrix[b, a] == 0  # earlier -> later only
    assert everything.matrix[c, a] == 1 and everything.matrix[a, c] == 1
    assert PairCounts.from_timelines(t, window=None, directions="forward").total == everything.total
    both = PairCounts.from_timelines(t, window="all")
    assert both.directions == "both" and both.total == 2 * everything.total
    assert both.matrix[a, c] == 2 and both.matrix[b, a] == 1 and "both ways" in repr(both)


@pytest.mark.parametrize("window", [1, 2, 3, 7, None])
@pytest.mark.parametrize("directions", ["forward", "both"])
def test_windows_match_brute_force(window, directions):
    rng = np.random.default_rng(window or 0)
    sequences = [rng.integers(0, 12, rng.integers(1, 30)).tolist() for _ in range(60)]
    t = _timelines(sequences, 12)
    counts = PairCounts.from_timelines(t, window=window, directions=directions)
    assert _as_counter(counts) == _brute_force(sequences, window, both=directions == "both")
    assert counts.total == t.n_pairs(window) * (2 if directions == "both" else 1)


def test_sparse_and_dense_accumulation_agree(monkeypatch):
    from embkit.items import cooccurrence
    rng = np.random.default_rng(5)
    tokens = rng.integers(0, 50, 5000)
    lengths = np.full(50, 100)
    dense = forward_pair_counts(tokens, lengths, 50, window=4)
    monkeypatch.setattr(cooccurrence, "DENSE_CELLS", 0)
    monkeypatch.setattr(cooccurrence, "FLUSH_PAIRS", 777)
    sparse = forward_pair_counts(tokens, lengths, 50, window=4)
    assert (dense != sparse).nnz == 0 and dense.sum() == 4 * 5000 - 50 * 10
    # the sparse sums on threads: segments of uneven lengths cut into runs, counted apart and added up
    uneven = rng.integers(0, 40, 300)
    tokens = rng.integers(0, 50, uneven.sum())
    one = forward_pair_counts(tokens, uneven, 50, window=None)
    for workers in (2, 3, 7):
        threaded = forward_pair_counts(tokens, uneven, 50, window=None, workers=workers)
        assert (threaded != one).nnz == 0 and threaded.dtype == one.dtype
    assert one.sum() == sum(n * (n - 1) // 2 for n in uneven.tolist())
    runs = cooccurrence._segment_runs(np.concatenate([[0], np.cumsum(uneven)]), 6)
    assert runs[0][0] == 0 and runs[-1][1] == len(uneven) and all(a[1] == b[0] for a, b in zip(runs, runs[1:]))
    assert forward_pair_counts(np.zeros(0, np.int64), np.zeros(0, np.int64), 50, workers=3).nnz == 0


@pytest.mark.parametrize("window", [0, -1, 2.5, "3", True])
def test_bad_window(window):
    with pytest.raises(ValueError, match="window must be an integer >= 1"):
        PairCounts.from_timelines(_timelines([[0, 1]]), window=window)


@pytest.mark.parametrize("directions", ["backward", None, "Both"])
def test_bad_directions(directions):
    with pytest.raises(ValueError, match="directions must be one of 'forward', 'both', got %r" % (directions,)):
        PairCounts.from_timelines(_timelines([[0, 1]]), directions=directions)


def test_ml100k_pairs_against_plain_python(shared_data):
    path = os.path.join(shared_data, "movielens", "ml-100k", "u.data")
    by_user = defaultdict(list)
    with open(path) as fh:
        for position, line in enumerate(fh):
            user, item, rating, stamp = (int(x) for x in line.split("\t"))
            if rating >= 4:
                by_user[user].append((stamp, position, item))
    expected = Counter()
    for events in by_user.values():
        items = [item for _, _, item in sorted(events)]
        for a in range(len(items)):
            for b in range(a + 1, min(len(items), a + 4)):
                expected[items[a], items[b]] += 1
    counts = PairCounts.from_timelines(load_timelines(os.path.dirname(path)), directions="forward")  # window 3
    assert counts.window == 3 and counts.total == sum(expected.values()) == 160473
    raw = [int(x) for x in counts.names]
    assert Counter({(raw[i], raw[j]): c for (i, j), c in _as_counter(counts).items()}) == expected
    assert counts.label(counts.index("50")) == "Star Wars (1977)"


# ------------------------------------------------------------------------------------------ other sources
def test_from_matrix_and_its_checks():
    m = sp.csr_matrix(np.array([[0, 2, 0], [1, 0, 3], [0, 0, 0]]))
    counts = PairCounts.from_matrix(m, names=["x", "y", "z"])
    assert counts.total == 6 and counts.nnz == 3 and counts.item_counts.tolist() == [2, 4, 0]
    assert counts.target_counts().tolist() == [1, 2, 3]
    assert PairCounts.from_matrix(np.array([[0, 1.0], [2.0, 0]])).matrix.dtype == np.int64
    with pytest.raises(ValueError, match=r"must be square .* got shape \(2, 3\)"):
        PairCounts.from_matrix(np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"non-negative integer counts; found -1 at row 1, column 0"):
        PairCounts.from_matrix(np.array([[0, 1], [-1, 0]]))
    with pytest.raises(ValueError, match=r"found 0\.5 at row 0, column 1"):
        PairCounts.from_matrix(np.array([[0, 0.5], [1, 0]]))
    with pytest.raises(ValueError, match="names has 2 entries for 3 items"):
        PairCounts.from_matrix(m, names=["x", "y"])
    with pytest.raises(ValueError, match="'x' appears more than once"):
        PairCounts.from_matrix(m, names=["x", "y", "x"])


def test_triples_ints_names_and_round_trip(tmp_path):
    ints = tmp_path / "ints.txt"
    ints.write_text("# context target count\n0 2 3\n2,0,1\n\n0\t2\t2\n")
    counts = PairCounts.from_triples(ints)
    assert counts.names == ["0", "1", "2"] and counts.matrix[0, 2] == 5 and counts.matrix[2, 0] == 1
    words = tmp_path / "words.txt"
    words.write_text("king queen 4\nqueen king 1\nking 7 2\n")  # one non-integer id: all ids are names
    named = PairCounts.from_triples(words)
    assert named.names == ["king", "queen", "7"] and named.matrix[0, 2] == 2
    assert PairCounts.from_triples(ints, ids="name").names == ["0", "2"]
    out = tmp_path / "out.tsv"
    named.to_triples(out)
    again = PairCounts.from_triples(out, names=named.names)
    assert (again.matrix != named.matrix).nnz == 0


@pytest.mark.parametrize("text, kwargs, message", [
    ("0 1 2\n0 1\n", {}, r"bad\.txt, line 2: expected 3 fields"),
    ("0 1 2\n0 1 x\n", {}, r"line 2: count 'x' is not a non-negative integer"),
    ("0 1 2\n1 0 -3\n", {}, r"line 2: count '-3'"),
    ("a b 2\na c 1\n", {"names": ["a", "b"]}, r"line 2: item 'c' is not one of the 2 given names"),
    ("0 1 2\n0 b 1\n", {"ids": "index"}, r"line 2: item 'b' is not a non-negative integer index"),
    ("# nothing\n", {}, r"holds no 'context target count' line"),
])
def test_bad_triple_files(tmp_path, text, kwargs, message):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        PairCounts.from_triples(path, **kwargs)


def test_from_text_drops_out_of_vocabulary_words_first(tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("a b a c\na x b\nb a\n")  # counts: a 4, b 3, c 1, x 1
    counts = PairCounts.from_text(str(corpus), vocab_size=2, window=1)
    assert counts.names == ["a", "b"] and counts.item_counts.tolist() == [4, 3]
    # line 1 -> a b a (c dropped): (a,b) (b,a); line 2 -> a b: (a,b); line 3: (b,a); no pair across lines
    assert _as_counter(counts) == Counter({(0, 1): 2, (1, 0): 2})
    default = PairCounts.from_text([["a", "b", "c", "d", "e"]])
    assert default.window == 3 and default.total == 4 + 3 + 2 and default.n_items == 5
    with pytest.raises(ValueError, match="vocab_size must be >= 1"):
        PairCounts.from_text(str(corpus), vocab_size=0)


# ------------------------------------------------------------------------------------------ splits
@pytest.fixture(scope="module")
def ml100k_counts(shared_data):
    return PairCounts.from_timelines(load_timelines(os.path.join(shared_data, "movielens", "ml-100k")),
                                     directions="forward")


def test_split_totals_and_reproducibility(ml100k_counts):
    train, valid, test = split_pairs(ml100k_counts, (0.7, 0.1, 0.2), seed=0)
    summed = train.matrix + valid.matrix + test.matrix
    assert (summed != ml100k_counts.matrix).nnz == 0  # entry by entry
    assert train.total + valid.total + test.total == ml100k_counts.total
    shares = np.array([train.total, valid.total, test.total]) / ml100k_counts.total
    assert np.allclose(shares, [0.7, 0.1, 0.2], atol=0.01)
    assert train.names is not None and train.n_items == test.n_items == ml100k_counts.n_items
    again = split_pairs(ml100k_counts, (0.7, 0.1, 0.2), seed=0)
    assert all((x.matrix != y.matrix).nnz == 0 for x, y in zip((train, valid, test), again))
    other = split_pairs(ml100k_counts, (0.7, 0.1, 0.2), seed=1)
    assert (other[2].matrix != test.matrix).nnz > 0
    assert len(ml100k_counts.split((0.8, 0.2))) == 2


def test_split_errors():
    counts = PairCounts.from_matrix(np.array([[0, 1], [0, 0]]))
    with pytest.raises(ValueError, match="the validation split is empty: its fraction is 0"):
        split_pairs(PairCounts.from_matrix(np.array([[0, 9], [5, 0]])), (0.8, 0.0, 0.2))
    with pytest.raises(ValueError, match=r"the (train|test) split is empty: fraction 0\.\d+ of 1 pair occurrences"):
        split_pairs(counts, (0.5, 0.5))
    with pytest.raises(ValueError, match="must add up to 1"):
        split_pairs(counts, (0.7, 0.2))
    with pytest.raises(ValueError, match="at least 2 numbers"):
        split_pairs(counts, (1.0,))
    with pytest.raises(ValueError, match="no pair occurrences to split"):
        split_pairs(PairCounts.from_matrix(np.zeros((2, 2))))


def test_pairs_and_training_arrays():
    counts = PairCounts.from_matrix(np.array([[0, 2, 0], [1, 0, 3], [0, 0, 0]]))
    assert counts.pairs().tolist() == [[0, 1], [0, 1], [1, 0], [1, 2], [1, 2], [1, 2]]
    contexts, targets = counts.training_arrays()
    assert contexts.dtype == targets.dtype == np.int32 and contexts.tolist() == [0, 0, 1, 1, 1, 1]
    shuffled = counts.training_arrays(shuffle=True, seed=4)
    assert Counter(zip(*map(np.ndarray.tolist, shuffled))) == Counter({(0, 1): 2, (1, 0): 1, (1, 2): 3})
    assert all((a == b).all() for a, b in zip(shuffled, counts.training_arrays(shuffle=True, seed=4)))


def test_split_feeds_evaluate_ranking(ml100k_counts):
    train, _, test = split_pairs(ml100k_counts, seed=0)
    rng = np.random.default_rng(0)
    W = rng.normal(size=(train.n_items, 8)).astype(np.float32)
    O = rng.normal(size=(train.n_items, 8)).astype(np.float32)
    result = evaluate_ranking(W, O, test.pairs(), exclude=train.matrix, ks=(5,))
    assert result.n_pairs == test.total and 0.4 < result.mpr < 0.6


def test_implicit_peer_tables_line_up_with_the_split(ml100k_counts, shared_data):
    """``eval.peers.recsys`` fits implicit's ALS and BPR on this split's train counts and ranks its test pairs."""
    pytest.importorskip("implicit")
    done = run_eval("peers.recsys", "--ratings", os.path.join(shared_data, "movielens", "ml-100k"), "--factors", "8",
                    "--threads", "1", "--similar", "0")
    assert done.returncode == 0, done.stderr
    train, valid, test = split_pairs(ml100k_counts, seed=0)
    assert "split: train %d, validation %d, test %d pair occurrences" % (train.total, valid.total,
                                                                          test.total) in done.stdout
    header, *rows = table_rows(done.stdout)
    scored = {row[0]: dict(zip(header, row)) for row in rows}
    for name in ("implicit ALS", "implicit BPR"):
        assert 0.5 < float(scored[name]["MPR"]) <= 1.0       # the peer's tables rank every test pair
