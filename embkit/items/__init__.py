"""Item embeddings for next-item prediction: ``ItemEmbedding``, MovieLens/Netflix rating readers, user
timelines, item titles, co-occurrence pairs and their splits, and the named rating datasets."""
__all__ = ["ItemEmbedding"]


def __getattr__(name):
    if name == "ItemEmbedding":
        from embkit.items.item_embedding import ItemEmbedding
        return ItemEmbedding
    raise AttributeError("module 'embkit.items' has no attribute %r" % name)
