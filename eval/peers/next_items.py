"""The peers of the leave-one-out benchmark (``eval.bench.recommend``), each fitted and scored on one split.

Every peer is a function ``fit(data, params, seed, workers)`` returning a score function of the held-out
users (:func:`embkit.evaluation.evaluate_next_items` ranks its rows).  ``data`` is a :class:`Split`: the
timelines to fit on and the held-out set to score (the benchmark fits on the training timelines and scores
the validation items to pick the hyper-parameters, then fits on the timelines without the test items and
scores the test items).

* ``popularity``: every user gets the items by their number of training events.
* ``cooccurrence``: item -> next-item counts within a forward ``window`` (optionally both directions),
  scored for a history as the recency-weighted sum of its items' count rows (``recency`` as embkit's).
* ``gensim_sgns``: gensim's skip-gram with negative sampling on the training timelines as sentences
  (item2vec); a history is scored by the recency-weighted sum of its items' input vectors against every
  item's output vectors (``score="output"``) or their input vectors by cosine (``score="cosine"``).
* ``implicit_als`` and ``implicit_bpr``: implicit's ALS and BPR on the binary user x item matrix of the
  timelines; a user's scores are its factors against the item factors.
* ``lightfm_warp``: LightFM's WARP loss on the same matrix, when LightFM is installed.

BLAS is held to ``workers`` threads in every fit (threadpoolctl), and to one inside implicit's ALS, which runs
``workers`` threads of its own (as implicit asks).
"""
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from embkit.items.cooccurrence import forward_pair_counts
from embkit.items.histories import history_matrix

__all__ = ["Split", "PEERS", "GRIDS", "fit_peer"]


@dataclass
class Split:
    """The timelines a peer is fitted on and the users it is scored for (item rows of the timelines' index)."""

    train: object           # Timelines (all users, the held-out items removed)
    held_out: object        # the HeldOut set being scored
    user_rows: np.ndarray   # position of each held-out user in the timelines

    @property
    def n_items(self):
        return self.train.n_items


def _blas(workers):
    from threadpoolctl import threadpool_limits
    return threadpool_limits(workers, "blas")


def _user_items(timelines):
    """Binary users x items CSR matrix of timelines."""
    users = np.repeat(np.arange(timelines.n_users), timelines.lengths)
    m = sp.csr_matrix((np.ones(len(users), dtype=np.float32), (users, timelines.items)),
                      shape=(timelines.n_users, timelines.n_items))
    m.data[:] = 1.0
    return m


def _history_scores(data, recency, item_scores):
    """Score function: recency-weighted sum of the rows ``item_scores(rows)`` of each history's items."""
    weights, _ = history_matrix(data.held_out.histories(), data.n_items, recency)

    def scores(start, stop):
        return item_scores(weights[start:stop])
    return scores


def popularity(data, params, seed, workers):
    counts = np.log1p(data.train.item_counts).astype(np.float32)
    return lambda start, stop: np.tile(counts, (stop - start, 1))


def cooccurrence(data, params, seed, workers):
    counts = forward_pair_counts(data.train.items, data.train.lengths, data.n_items, params["window"])
    counts = counts.astype(np.float32)
    if params.get("both_directions"):
        counts = counts + counts.T
    counts = sp.csr_matrix(counts)
    return _history_scores(data, params["recency"], lambda weights: (weights @ counts).toarray())


#: the last gensim model fitted: ``(key, model)`` (the query parameters ``score`` and ``recency`` need no refit)
_GENSIM = [None, None]


def gensim_sgns(data, params, seed, workers):
    from gensim.models import Word2Vec
    train = data.train
    fit_params = {k: v for k, v in params.items() if k not in ("score", "recency")}
    key = (id(train), sorted(fit_params.items()), seed, workers)
    if _GENSIM[0] != key:
        sentences = [[str(i) for i in train[u].tolist()] for u in range(len(train)) if len(train[u])]
        _GENSIM[:] = [key, Word2Vec(sentences, vector_size=params["vector_size"], window=params["window"],
                                    min_count=1, sg=1, negative=params.get("negative", 5), epochs=params["epochs"],
                                    sample=params.get("sample", 0), workers=workers, seed=seed)]
    model = _GENSIM[1]
    rows = np.array([int(k) for k in model.wv.index_to_key])
    inputs = np.zeros((data.n_items, model.vector_size), dtype=np.float32)
    outputs = np.zeros_like(inputs)
    inputs[rows], outputs[rows] = model.wv.vectors, model.syn1neg
    if params.get("score", "output") == "cosine":
        norms = np.linalg.norm(inputs, axis=1, keepdims=True)
        inputs = outputs = inputs / np.where(norms > 0, norms, 1.0)
    return _history_scores(data, params["recency"], lambda weights: (weights @ inputs) @ outputs.T)


def _factor_scores(data, user_factors, item_factors):
    users = np.asarray(user_factors)[data.user_rows]
    items = np.asarray(item_factors)
    return lambda start, stop: users[start:stop] @ items.T


def implicit_als(data, params, seed, workers):
    from implicit.cpu.als import AlternatingLeastSquares
    with _blas(1):              # implicit runs its own threads; a BLAS pool inside them slows it down
        model = AlternatingLeastSquares(factors=params["factors"], regularization=params["regularization"],
                                        alpha=params["alpha"], iterations=params.get("iterations", 15),
                                        num_threads=workers, random_state=seed)
        model.fit(_user_items(data.train), show_progress=False)
    return _factor_scores(data, model.user_factors, model.item_factors)


def implicit_bpr(data, params, seed, workers):
    from implicit.cpu.bpr import BayesianPersonalizedRanking
    model = BayesianPersonalizedRanking(factors=params["factors"], learning_rate=params["learning_rate"],
                                        regularization=params.get("regularization", 0.01),
                                        iterations=params["iterations"], num_threads=workers, random_state=seed)
    model.fit(_user_items(data.train), show_progress=False)
    return _factor_scores(data, model.user_factors, model.item_factors)


def lightfm_warp(data, params, seed, workers):
    from lightfm import LightFM
    model = LightFM(no_components=params["factors"], loss="warp", learning_rate=params["learning_rate"],
                    random_state=seed)
    model.fit(_user_items(data.train).tocoo(), epochs=params["epochs"], num_threads=workers)
    users = model.user_embeddings[data.user_rows]
    items, bias = model.item_embeddings, model.item_biases
    return lambda start, stop: users[start:stop] @ items.T + bias


#: name -> (fit, label, the module it needs)
PEERS = {
    "popularity": (popularity, "popularity", None),
    "cooccurrence": (cooccurrence, "item-item co-occurrence", None),
    "gensim_sgns": (gensim_sgns, "gensim SGNS (item2vec)", "gensim"),
    "implicit_als": (implicit_als, "implicit ALS", "implicit"),
    "implicit_bpr": (implicit_bpr, "implicit BPR", "implicit"),
    "lightfm_warp": (lightfm_warp, "LightFM WARP", "lightfm"),
}

#: Hyper-parameters tried on the validation split (every combination); the best by NDCG@10 runs the test.
GRIDS = {
    "popularity": {},
    "cooccurrence": {"window": [1, 2, 3, 5, 10], "both_directions": [False, True],
                     "recency": [1.0, 0.9, 0.7, 0.5, 0.3, 0.2, 0.1]},
    "gensim_sgns": {"vector_size": [100], "window": [3, 10], "epochs": [5, 20], "score": ["output", "cosine"],
                    "recency": [0.9, 0.7, 0.5, 0.3]},
    "implicit_als": {"factors": [100], "regularization": [0.01, 0.1, 1.0], "alpha": [1.0, 10.0, 40.0]},
    "implicit_bpr": {"factors": [100], "learning_rate": [0.01, 0.05, 0.1], "iterations": [100, 300]},
    "lightfm_warp": {"factors": [100], "learning_rate": [0.01, 0.05], "epochs": [10, 30]},
}


def fit_peer(name, data, params, seed, workers):
    """Fit peer ``name``; returns ``(score function, fit seconds)``."""
    fit = PEERS[name][0]
    with _blas(workers):
        start = time.perf_counter()
        scores = fit(data, params, seed, workers)
        seconds = time.perf_counter() - start
    return scores, seconds
