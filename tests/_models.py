"""The models the contract tests run on: how to build, train and query each kind on a small data set.

A new model is covered by adding one :class:`ModelCase` subclass here and to :data:`CASES`; a model with
several training algorithms (ExtremeClassifier's solvers) has a case for each.
"""
import numpy as np
import scipy.sparse as sp

from embkit import ExtremeClassifier, ItemEmbedding, Word2Vec


class ModelCase:
    """How the contract builds, trains and queries one model kind (subclasses)."""

    cls = None
    #: the constructor parameter that bounds the units of one kernel call
    chunk_param = None

    def make(self, **params):
        """A small model (``workers=1``, few epochs, no progress bar) with ``params`` on top."""
        raise NotImplementedError

    def fit(self, model):
        """Train ``model`` on this case's small data set; returns the model."""
        raise NotImplementedError

    def outputs(self, model):
        """What a user reads from a trained model (to compare two of them)."""
        return model.W_in, model.W_out

    def resume(self, directory, **params):
        """``cls.resume`` on this case's data; returns the trained model."""
        raise NotImplementedError

    def train_on(self, model):
        """Train a fitted ``model`` further, as a user would after loading or copying it."""
        return self.fit(model)

    #: a chunk size that cuts this case's data into several chunks per epoch
    small_chunks = {}
    #: parameters under which every epoch asked for runs (no rule of the model's own stops it early)
    every_epoch = {}

    @property
    def name(self):
        """The case's test id."""
        return self.cls.__name__


class Word2VecCase(ModelCase):
    cls = Word2Vec
    chunk_param = "chunk_tokens"

    def __init__(self):
        rng = np.random.default_rng(0)
        words = ["w%d" % i for i in range(40)]
        self.sentences = [[words[j] for j in rng.integers(0, 40, 12)] for _ in range(200)]

    def make(self, **params):
        kw = dict(vector_size=16, window=3, min_count=1, epochs=2, workers=1, seed=3, sg=1, progress=False)
        kw.update(params)
        return Word2Vec(**kw)

    small_chunks = {"chunk_tokens": 300}

    def fit(self, model):
        model.build_vocab(self.sentences)
        model.train()
        return model

    def resume(self, directory, **params):
        return Word2Vec.resume(directory, corpus_iterable=self.sentences, **params)

    def train_on(self, model):
        model.train(self.sentences, total_examples=len(self.sentences), epochs=1)
        return model

    def outputs(self, model):
        return model.wv.vectors, model.syn1neg, model.wv.most_similar("w1", topn=3)


class ItemEmbeddingCase(ModelCase):
    cls = ItemEmbedding
    chunk_param = "chunk_pairs"

    def __init__(self):
        self.pairs = sp.random(30, 30, density=0.3, format="csr", random_state=1) * 10

    def make(self, **params):
        kw = dict(vector_size=8, epochs=2, workers=1, seed=3, progress=False)
        kw.update(params)
        return ItemEmbedding(**kw)

    small_chunks = {"chunk_pairs": 200}

    def fit(self, model):
        return model.fit(self.pairs)

    def resume(self, directory, **params):
        return ItemEmbedding.resume(directory, self.pairs, **params)

    def outputs(self, model):
        return model.context_vectors, model.target_vectors, model.recommend(2, N=5)


class ExtremeClassifierCase(ModelCase):
    """The classifier with ``solver`` (None: the default, one_vs_all)."""

    cls = ExtremeClassifier
    chunk_param = "chunk_examples"

    def __init__(self, solver=None):
        self.solver = solver
        rng = np.random.default_rng(2)
        self.X = sp.random(120, 50, density=0.1, format="csr", random_state=2, dtype=np.float32)
        self.Y = sp.csr_matrix((np.ones(240), (np.repeat(np.arange(120), 2), rng.integers(0, 20, 240))),
                               shape=(120, 20))

    def make(self, **params):
        kw = dict(vector_size=8, negative=5, epochs=2, workers=1, seed=3, progress=False)
        if self.solver is not None:
            kw["solver"] = self.solver
        kw.update(params)
        return ExtremeClassifier(**kw)

    @property
    def name(self):
        return "ExtremeClassifier-%s" % (self.solver or "default")

    small_chunks = {"chunk_examples": 16}
    every_epoch = {"heads": ()}     # a blend that leaves the model out stops it after its first epoch

    def fit(self, model):
        return model.fit(self.X, self.Y)

    def resume(self, directory, **params):
        return ExtremeClassifier.resume(directory, self.X, self.Y, **params)

    def outputs(self, model):
        return model.feature_vectors, model.label_vectors, model.predict(self.X, k=3)[0]


CASES = [Word2VecCase(), ItemEmbeddingCase(), ExtremeClassifierCase(), ExtremeClassifierCase(solver="sampled")]
