"""embkit: fast word2vec-style embeddings with pluggable losses and samplers on Hogwild Cython kernels.

``Word2Vec``, ``ItemEmbedding``, ``ExtremeClassifier`` and ``load_vectors`` are imported on first use, so
``embkit.evaluation`` and the other pure Python modules import without the compiled kernels.

Layout: ``embkit.core`` (the trainer base, registry, epoch loop, persistence), one package per domain
(``embkit.text``, ``embkit.items``, ``embkit.xc``), the model-agnostic ``embkit.evaluation``, the command
line ``embkit.cli`` and the kernels ``embkit._kernels``.
"""
__all__ = ["Word2Vec", "ItemEmbedding", "ExtremeClassifier", "load_vectors", "LineSentence", "PathLineSentences"]
__version__ = "0.1.0"


def __getattr__(name):
    if name == "Word2Vec":
        from embkit.text.word2vec import Word2Vec
        return Word2Vec
    if name == "ItemEmbedding":
        from embkit.items.item_embedding import ItemEmbedding
        return ItemEmbedding
    if name == "ExtremeClassifier":
        from embkit.xc.classifier import ExtremeClassifier
        return ExtremeClassifier
    if name in ("LineSentence", "PathLineSentences"):
        from embkit.text import line_sentences
        return getattr(line_sentences, name)
    if name == "load_vectors":
        from embkit.text.vectors import load_vectors
        return load_vectors
    raise AttributeError("module 'embkit' has no attribute %r" % name)
