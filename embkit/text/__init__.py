"""Word embeddings from text: ``Word2Vec``, corpus readers, the vocabulary, the chunk cache, named corpora
and the word2vec vector formats."""
__all__ = ["Word2Vec"]


def __getattr__(name):
    if name == "Word2Vec":
        from embkit.text.word2vec import Word2Vec
        return Word2Vec
    raise AttributeError("module 'embkit.text' has no attribute %r" % name)
