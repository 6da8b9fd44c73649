"""Shard planning: a run's shards dealt into one group per worker."""

__all__ = ["group_shards"]


def group_shards(shards, n_groups):
    """Shards in ``n_groups`` lists of about equal total size (largest first onto the lightest group)."""
    groups = [[] for _ in range(max(1, min(n_groups, len(shards))))]
    load = [0] * len(groups)
    for shard in sorted(shards, key=lambda s: -s.size):
        g = load.index(min(load))
        groups[g].append(shard)
        load[g] += shard.size
    for group in groups:    # keep the corpus's order inside a group
        group.sort(key=shards.index)
    return groups
