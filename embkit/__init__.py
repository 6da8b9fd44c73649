"""embkit: fast word2vec-style embeddings with pluggable losses and samplers on Hogwild Cython kernels."""
from embkit.word2vec import Word2Vec
from embkit.persist import load_vectors

__all__ = ["Word2Vec", "load_vectors"]
__version__ = "0.1.0"
