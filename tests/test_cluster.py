"""Training on a real Dask LocalCluster (2 worker processes): vocabulary, training with every loss and
sampler, a worker lost mid-epoch, bad input, and the command line.  Skipped without the [cluster] extra."""
import contextlib
import gzip
import logging
import os
import re
import signal
import time

import numpy as np
import pytest

pytest.importorskip("distributed")
pytest.importorskip("fsspec")

#: a cluster test that waits on a dead worker fails after this long instead of stalling the suite
pytestmark = pytest.mark.timeout(300)

import dask  # noqa: E402
from distributed import Client, LocalCluster, fire_and_forget  # noqa: E402

from _cases import pairings, refused  # noqa: E402
from embkit import Word2Vec  # noqa: E402
from embkit.cluster import client as client_mod, settings as cluster_mod  # noqa: E402
from embkit.core.checkpoint import CheckpointError, list_checkpoints  # noqa: E402
from embkit.core.interrupts import TrainingInterrupted  # noqa: E402
from embkit.cluster.reconcile import MODES, RowDelta  # noqa: E402
from embkit.cluster import ShardReadError  # noqa: E402
from embkit.cluster.local import QUIET_DASK, local_client  # noqa: E402
from embkit.cluster.replica import Replica, open_replica, units_per_thread  # noqa: E402
from embkit.cluster.rounds import RoundPlan  # noqa: E402
from embkit.text import shards as shards_mod  # noqa: E402
from embkit.text.shards import TextShard, resolve_files  # noqa: E402

SMALL = dict(vector_size=16, min_count=1, window=3, epochs=3, sample=0, workers=1, syncs_per_epoch=4)


@pytest.fixture(scope="module")
def client():
    with local_client(2) as c:      # as the CLI starts one (the tests of other clusters start their own)
        yield c


def test_local_client_starts_workers_and_scheduler_under_quiet_dask():
    # every worker process reads embkit's settings for Dask's timers, the scheduler (in this process) started
    # its tick under them, and the caller's configuration is its own again once the cluster has started
    before = {k: dask.config.get(k, None) for k in QUIET_DASK}
    with local_client(1) as one:
        assert one.run(lambda: {k: dask.config.get(k) for k in QUIET_DASK}) == {w: QUIET_DASK for w in
                                                                               one.nthreads()}
        assert one.run_on_scheduler(lambda dask_scheduler: dask_scheduler.periodic_callbacks["tick"].callback_time) \
            == 1000
        assert {k: dask.config.get(k, None) for k in QUIET_DASK} == before


def write_shards(directory, sentences, n, suffix=".txt"):
    """``sentences`` dealt round-robin into ``n`` files; returns their paths."""
    paths = []
    for k in range(n):
        path = os.path.join(str(directory), "part-%d%s" % (k, suffix))
        opener = gzip.open if suffix.endswith(".gz") else open
        with opener(path, "wt", encoding="utf-8") as fh:
            fh.write("\n".join(" ".join(s) for s in sentences[k::n]) + "\n")
        paths.append(path)
    return paths


@pytest.fixture
def planted_shards(tmp_path, planted):
    groups, sentences = planted
    write_shards(tmp_path, sentences, 4, ".txt.gz")
    return groups, sentences, str(tmp_path / "part-*.txt.gz")


def test_text_shard_rounds_cover_every_sentence_once(tmp_path, planted):
    _, sentences = planted
    path = write_shards(tmp_path, sentences, 1)[0]
    model = Word2Vec(chunk_tokens=1000, **SMALL).build_vocab(sentences)
    shard = TextShard(path, os.path.getsize(path))
    units = shard.open(model)
    assert units == sum(len(s) for s in sentences)
    assert len(shard.cache) > 3
    read = []
    read_tokens = shard.cache.read_tokens
    shard.cache.read_tokens = lambda i, a, b: read.append(b - a) or read_tokens(i, a, b)
    rounds = 7
    pieces = [c for r in range(rounds) for c in shard.chunks(model, units * r // rounds, units * (r + 1) // rounds)]
    tokens = np.concatenate([c.tokens for c in pieces])
    expected = np.concatenate([[model.vocab.key_to_index[w] for w in s] for s in sentences])
    assert np.array_equal(tokens, expected)
    assert sum(len(c.ends) for c in pieces) == len(sentences)
    assert sum(read) == units       # a round reads its own tokens from the spill file, no others
    shard.close()


def test_a_replica_trains_a_round_of_many_shards_as_chunks_its_threads_share(tmp_path, planted):
    # in-process: a round holds a slice of each of the replica's shards; the slices are joined (up to the
    # model's chunk_tokens) so that a chunk is large enough to be shared among the worker's threads, and
    # the joined chunks hold every sentence of the round once, in the shards' order
    _, sentences = planted
    paths = write_shards(tmp_path, sentences, 6)
    params = dict(SMALL, workers=2, batch_words=100)
    model = Word2Vec(chunk_tokens=2000, **params).build_vocab(sentences)
    run = {"epochs": 1, "alpha": 0.05, "min_alpha": 0.0001, "mode": "momentum", "replicas": 1}
    replica = open_replica((model.replica_spec(), (model.W_in, model.W_out), None),
                           [TextShard(p, os.path.getsize(p)) for p in paths], run)
    try:
        rounds = 3
        plan = RoundPlan.uniform(rounds, 1)
        for r in range(rounds):
            slices = [c for shard, units in zip(replica.shards, replica.units)
                      for c in shard.chunks(replica.model, units * r // rounds, units * (r + 1) // rounds)]
            joined = list(replica.round_chunks(plan.span(0, r)))
            assert len(slices) >= 6 and len(joined) < len(slices)
            longest = max(len(c) for c in slices)
            assert all(2000 - longest < len(c) <= 2000 for c in joined[:-1])     # filled up to chunk_tokens
            assert np.array_equal(np.concatenate([c.tokens for c in joined]),
                                  np.concatenate([c.tokens for c in slices]))
            ends = [np.split(c.tokens, c.ends[:-1]) for c in slices + joined]
            assert [s.tolist() for e in ends[:len(slices)] for s in e] == \
                [s.tolist() for e in ends[len(slices):] for s in e]
            assert sum(c.raw_units for c in joined) == sum(c.raw_units for c in slices)
        result = replica.train_round(plan.span(0, 0))
        assert result["units"] == sum(len(c) for c in replica.round_chunks(plan.span(0, 0)))
    finally:
        replica.close()


class _ThreadsAsked:
    """A replica's pipeline that notes the threads each chunk is given (and trains it as the pipeline does)."""

    def __init__(self, pipe):
        self.pipe, self.threads = pipe, []

    def prepare(self, args, before, seed, threads):
        self.threads.append(threads)
        return self.pipe.prepare(args, before, seed, threads)

    def __getattr__(self, name):
        return getattr(self.pipe, name)


def test_every_thread_of_a_replica_trains_a_share_of_a_round_shorter_than_its_batch_words(tmp_path, planted):
    # the frequent rows' parts and the last rounds are shorter than batch_words a thread: a replica's threads
    # still share them (one thread training them alone left the others idle), down to a floor of the
    # round's units over the threads
    assert units_per_thread(10000, 12500, 2) == 6250 and units_per_thread(10000, 75000, 8) == 9375
    assert units_per_thread(10000, 10 ** 6, 8) == 10000 and units_per_thread(None, 10, 4) is None
    assert units_per_thread(10000, 3, 8) == 1
    _, sentences = planted
    paths = write_shards(tmp_path, sentences, 2)
    model = Word2Vec(**dict(SMALL, workers=2, batch_words=10 ** 6)).build_vocab(sentences)
    run = {"epochs": 1, "alpha": 0.05, "min_alpha": 0.0001, "mode": "momentum", "replicas": 1}
    replica = open_replica((model.replica_spec(), (model.W_in, model.W_out), None),
                           [TextShard(p, os.path.getsize(p)) for p in paths], run)
    try:
        replica.pipe = asked = _ThreadsAsked(replica.pipe)
        span = RoundPlan.uniform(4, 1).span(0, 1)
        result = replica.train(span)
        assert result["units"] == sum(stop - start for start, stop in map(span.units, replica.units)) > 0
        assert asked.threads == [2]        # the round's slices of both shards, joined into one chunk
    finally:
        replica.pipe = asked.pipe
        replica.close()


def test_replica_refreshes_an_adaptive_sampler_after_a_reconciliation(tmp_path, planted):
    # in-process (the actor's task and methods called directly, one replica): an LSH sampler rebuilds its
    # tables from the reconciled W_out after a round
    _, sentences = planted
    paths = write_shards(tmp_path, sentences, 2)
    model = Word2Vec(sampler="lsh", **SMALL).build_vocab(sentences)
    run = {"epochs": 1, "alpha": 0.05, "min_alpha": 0.0001, "mode": "momentum", "replicas": 1}
    replica = open_replica((model.replica_spec(), (model.W_in, model.W_out), None),
                           [TextShard(p, 1) for p in paths], run)
    try:
        assert replica.units_per_epoch() == sum(len(s) for s in sentences)
        tables = np.array(replica.sampler.tables, copy=True)
        replica.train_round(RoundPlan.uniform(2, 1).span(0, 0))
        assert not np.array_equal(tables, np.asarray(replica.sampler.tables))
    finally:
        replica.close()


def test_a_replica_sending_a_share_keeps_the_rest_until_the_last_round(tmp_path, planted):
    # in-process: with exchange_share 0.3 a round sends some of the rows it changed and keeps the rest
    # ahead of its reconciled tables; the run's last round sends everything left, so the reconciled tables
    # end where the replica's are
    from embkit.cluster.reconcile import changed_rows
    _, sentences = planted
    paths = write_shards(tmp_path, sentences, 2)
    model = Word2Vec(**SMALL).build_vocab(sentences)
    run = {"epochs": 1, "alpha": 0.05, "min_alpha": 0.0001, "share": 0.3, "mode": "momentum", "replicas": 1}
    replica = open_replica((model.replica_spec(), (model.W_in, model.W_out), None),
                           [TextShard(p, 1) for p in paths], run)
    try:
        start = replica.base_out.copy()
        first = [RowDelta.from_wire(w) for w in replica.train_round(RoundPlan.uniform(2, 1).span(0, 0))["merged"][-1]]
        changed = changed_rows(replica.model.W_out, start)
        kept = changed_rows(replica.model.W_out, replica.base_out)
        assert 0 < len(first[1]) < len(changed) and len(kept)
        np.testing.assert_array_equal(replica.base_out[first[1].ids],
                                      start[first[1].ids] + first[1].values.astype(np.float32))
        last = [RowDelta.from_wire(w) for w in replica.train_round(RoundPlan.uniform(2, 1).span(0, 1))["merged"][-1]]
        for table, base in zip((replica.model.W_in, replica.model.W_out), (replica.base_in, replica.base_out)):
            np.testing.assert_array_equal(table, base)
        assert set(kept.ids) <= set(last[1].ids)        # what it kept went in the end
    finally:
        replica.close()


@pytest.mark.parametrize("staleness", [0, 1])
def test_a_replica_searches_only_the_input_rows_it_touched_and_finds_every_changed_row(
        tmp_path, planted, monkeypatch, staleness):
    # in-process, one replica: a round compares only the W_in rows of its chunks' words (a reconciliation
    # adopted a round late leaves no other row apart from the reconciled table): the rows and steps found
    # are those of a search of the whole table, every round
    from embkit.cluster import replica as replica_mod
    from embkit.cluster.reconcile import changed_rows
    _, sentences = planted
    sentences = list(sentences)
    step = len(sentences) // 40
    for i in range(40):     # words of one round each, spread over the rounds
        sentences.insert(i * (step + 1), ["rare%d" % i, "rare%d" % i, sentences[i][0]])
    paths = write_shards(tmp_path, sentences, 2)
    model = Word2Vec(**dict(SMALL, min_count=1)).build_vocab(sentences)
    run = {"epochs": 1, "alpha": 0.05, "min_alpha": 0.0001, "mode": "momentum", "replicas": 1}
    replica = open_replica((model.replica_spec(), (model.W_in, model.W_out), None),
                           [TextShard(p, 1) for p in paths], run)
    masked = []

    def checked(table, base, share=1.0, scratch=None, threads=1, rows=None, stamp=False):
        found = changed_rows(table, base, share, scratch, threads, rows, stamp)
        if rows is not None:
            whole = changed_rows(table, base, share)
            np.testing.assert_array_equal(found.ids, whole.ids)
            np.testing.assert_array_equal(found.values, whole.values)
            masked.append((int(rows.sum()), len(rows)))
        return found

    monkeypatch.setattr(replica_mod, "changed_rows", checked)
    try:
        rounds = 5
        for r in range(rounds):
            replica.train_round(RoundPlan.uniform(rounds, 1).span(0, r), relay=False, staleness=staleness)
        np.testing.assert_array_equal(replica.model.W_in, replica.base_in)
    finally:
        replica.close()
    assert len(masked) == rounds
    assert all(marked < rows for marked, rows in masked)    # other rounds' rare words were not read


# ----------------------------------------------------------------------------- on the cluster


def test_vocabulary_counted_on_the_workers_equals_the_local_one(client, planted_shards):
    _, sentences, pattern = planted_shards
    local = Word2Vec(**SMALL).build_vocab(sentences)
    remote = Word2Vec(client=client, **SMALL).build_vocab(corpus_file=pattern)
    # the same words with the same counts, most frequent first (ties in the order the shards were merged)
    assert dict(zip(remote.vocab.index_to_key, remote.vocab.counts.tolist())) == \
        dict(zip(local.vocab.index_to_key, local.vocab.counts.tolist()))
    assert np.all(np.diff(remote.vocab.counts) <= 0)
    assert remote.corpus_count == len(sentences)


def test_the_workers_scan_gives_the_local_vocabulary_in_order_and_their_replicas_take_the_chunks(
        client, planted, tmp_path):
    # shards of different sizes, so the replicas' groups are not runs of consecutive shards: the words still
    # come out in the order the corpus first shows them (the ties of equal counts in particular)
    _, sentences = planted
    cuts = [0, 250, 550, 650, 750, 1000]       # groups [1, 2, 3] and [0, 4]: the first without the first shard
    assert len(sentences) == 1000
    paths = []
    for k, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])):
        paths.append(str(tmp_path / ("part-%d.txt" % k)))
        with open(paths[-1], "w", encoding="utf-8") as fh:
            fh.write("\n".join(" ".join(s) for s in sentences[a:b]) + "\n")
    params = dict(SMALL, min_count=1, sorted_vocab=0)     # the words in the order first seen
    local = Word2Vec(**params).build_vocab(sentences)
    remote = Word2Vec(client=client, **params).build_vocab(corpus_file=paths)
    groups = shards_mod.group_shards(remote.corpus.shards(), 2)
    assert any(np.diff([paths.index(s.path) for s in g]).max(initial=1) > 1 for g in groups)
    assert remote.vocab.index_to_key == local.vocab.index_to_key
    assert remote.vocab.counts.tolist() == local.vocab.counts.tolist()
    assert remote.corpus_count == len(sentences)
    kept = lambda: sorted(shards_mod.KEPT._shards)      # noqa: E731
    assert sum(len(names) for names in client.run(kept).values()) == len(paths)   # each shard's chunks kept
    remote.train()
    assert remote.last_report.words == SMALL["epochs"] * remote.vocab.total_words
    assert all(not names for names in client.run(kept).values())   # every replica took its shards' chunks


def test_vocabulary_prunes_to_max_vocab_size_per_shard(client, tmp_path):
    # word2vec's bounded counting: each shard (and each merge) holds at most max_vocab_size words
    common = ["a", "b"] * 50
    sentences = [common + ["rare%d_%d" % (k, i) for i in range(30)] for k in range(4)]
    write_shards(tmp_path, sentences, 4)
    model = Word2Vec(client=client, max_vocab_size=10, **dict(SMALL, min_count=1)).build_vocab(
        corpus_file=str(tmp_path / "part-*.txt"))
    assert model.vocab.index_to_key == ["a", "b"]
    assert model.vocab.counts.tolist() == [200, 200]


def test_one_large_plain_file_trains_on_every_worker(client, planted, purity, tmp_path, monkeypatch):
    # read as byte ranges: counted in parallel to the local vocabulary, and trained by two replicas
    groups, sentences = planted
    path = write_shards(tmp_path, sentences, 1)[0]
    monkeypatch.setattr(shards_mod, "SPLIT_BYTES", os.path.getsize(path) // 5 + 1)
    local = Word2Vec(**SMALL).build_vocab(sentences)
    model = Word2Vec(corpus_file=path, client=client, sg=1, seed=2, **SMALL)
    assert len(model.corpus.shards()) == 5
    assert dict(zip(model.vocab.index_to_key, model.vocab.counts.tolist())) == \
        dict(zip(local.vocab.index_to_key, local.vocab.counts.tolist()))
    assert model.last_cluster_stats.replicas == 2
    assert model.last_report.words == SMALL["epochs"] * model.vocab.total_words
    assert purity(model.wv, groups)[0] >= 0.8


def test_cluster_training_learns_and_gives_a_normal_model(client, planted_shards, purity, tmp_path):
    groups, _, pattern = planted_shards
    model = Word2Vec(corpus_file=pattern, client=client, sg=1, seed=2, **dict(SMALL, syncs_per_epoch=None))
    stats = model.last_cluster_stats
    assert stats.replicas == 2 and stats.rounds == SMALL["epochs"]     # a small corpus: one round an epoch
    # two replicas swap their deltas; the client fetches the tables once, at the end
    assert stats.bytes_up > 0 and stats.bytes_down == 0 and stats.fetches == 1
    assert model.last_report.words == SMALL["epochs"] * model.vocab.total_words
    assert purity(model.wv, groups)[0] >= 0.8
    # well below the untrained loss (6 log 2 with 5 negatives); it need not fall every epoch: with one round
    # an epoch on a 50-word corpus every row saturates within a round, and two replicas' steps add up
    assert model.loss_history[-1] < 0.75 * 6 * np.log(2)
    path = str(tmp_path / "model.embkit")
    model.save(path)
    loaded = Word2Vec.load(path)
    assert loaded.client is None
    np.testing.assert_array_equal(loaded.wv.vectors, model.wv.vectors)


def test_with_staleness_one_a_replica_adopts_each_round_one_round_late_and_ends_epochs_reconciled(
        client, planted_shards, purity):
    # staleness 1: a round's call returns with the round before it adopted (the round itself is exchanged
    # while the next trains), an epoch's last round is adopted at once; staleness 0 adopts every round
    groups, _, pattern = planted_shards
    runs = {s: Word2Vec(corpus_file=pattern, client=client, sg=1, seed=2, staleness=s, **SMALL) for s in (0, 1)}
    rounds = SMALL["syncs_per_epoch"]
    assert runs[0].last_cluster_stats.lag == [0] * rounds * SMALL["epochs"]
    assert runs[1].last_cluster_stats.lag == ([1] * (rounds - 1) + [0]) * SMALL["epochs"]
    for model in runs.values():
        assert purity(model.wv, groups)[0] >= 0.8
        assert model.last_report.words == SMALL["epochs"] * model.vocab.total_words
    assert not np.array_equal(runs[0].W_out, runs[1].W_out)


def test_shrinking_rounds_with_staleness_one_adopt_a_round_late_within_each_epoch(client, planted_shards, purity,
                                                                              monkeypatch):
    # the default rounds of two replicas (a floor small enough here for several an epoch, fewer in the first
    # epoch than in the last): with staleness 1 every round but an epoch's last is adopted a round late
    groups, _, pattern = planted_shards
    monkeypatch.setattr(cluster_mod, "ROUND_UNITS", 300)
    model = Word2Vec(corpus_file=pattern, client=client, sg=1, seed=2, staleness=1,
                     **dict(SMALL, syncs_per_epoch=None))
    lag = model.last_cluster_stats.lag
    ends = [i for i, late in enumerate(lag) if late == 0]
    assert len(ends) == SMALL["epochs"] and ends[-1] == len(lag) - 1 and set(lag) == {0, 1}
    sizes = np.diff([-1] + ends)
    assert sizes[0] < sizes[-1]         # the rounds shrink towards the end of the run
    assert purity(model.wv, groups)[0] >= 0.8
    assert model.last_report.words == SMALL["epochs"] * model.vocab.total_words


@pytest.mark.parametrize("syncs", [4, None])
def test_the_tables_fetched_at_the_end_are_those_relayed_every_round(client, planted_shards, tmp_path, syncs):
    # without checkpoints the client fetches the reconciled tables from a replica when it needs them; with
    # them every round's merged rows come to the client: the same tables, bit for bit (staleness 0: a run
    # with checkpoints reconciles every round before the next)
    _, _, pattern = planted_shards
    fetched = Word2Vec(corpus_file=pattern, client=client, seed=3, staleness=0,
                       **dict(SMALL, syncs_per_epoch=syncs))
    relayed = Word2Vec(corpus_file=pattern, client=client, seed=3, checkpoint_dir=str(tmp_path),
                       **dict(SMALL, syncs_per_epoch=syncs))
    assert fetched.last_cluster_stats.fetches == 1 and relayed.last_cluster_stats.fetches == 0
    assert relayed.last_cluster_stats.bytes_down > 0
    np.testing.assert_array_equal(fetched.W_in, relayed.W_in)
    np.testing.assert_array_equal(fetched.W_out, relayed.W_out)


def test_replicas_draw_a_fresh_models_tables_and_are_sent_changed_ones(client, planted_shards, monkeypatch):
    # a fresh model's tables are drawn on the workers (the client sends their digest, not them) and the run
    # ends as one whose tables were sent, bit for bit; tables changed after they were drawn fail the digest
    # on the workers and are sent instead
    from embkit.cluster.tables import TableRecipe
    _, _, pattern = planted_shards
    opened = []
    share = client_mod._Run.share

    def spied(job, data, targets):
        opened.append(isinstance(data[1], TableRecipe))
        return share(job, data, targets)

    monkeypatch.setattr(client_mod._Run, "share", spied)
    params = dict(client=client, sg=1, seed=2, staleness=0, **SMALL)

    def run(change=None, send=False):
        with monkeypatch.context() as m:
            if send:
                m.setattr(client_mod, "tables_recipe", lambda model: None)
            model = Word2Vec(**params).build_vocab(corpus_file=pattern)
            if change is not None:
                change(model)
            opened.clear()
            model.train(corpus_file=pattern, total_examples=model.corpus_count, epochs=model.epochs)
            return model, list(opened)

    drawn, how = run()
    assert how == [True]
    sent, how = run(send=True)
    assert how == [False]
    np.testing.assert_array_equal(drawn.W_in, sent.W_in)
    np.testing.assert_array_equal(drawn.W_out, sent.W_out)

    def change(model):
        model.W_in[3] += 0.01
    changed, how = run(change)
    assert how == [True, False]         # drawn, refused on the workers, then sent
    reference, _ = run(change, send=True)
    np.testing.assert_array_equal(changed.W_in, reference.W_in)
    assert not np.array_equal(changed.W_in, drawn.W_in)


def test_replicas_with_several_threads_train_on_the_cluster(client, planted_shards, purity):
    # two threads a replica (OpenMP inside the Dask workers): the round's joined chunks are shared among
    # them and the passes over the rows run on them, sending every row or a share; the run learns and
    # trains every word once an epoch
    groups, _, pattern = planted_shards
    for share in (1.0, 0.5):
        model = Word2Vec(corpus_file=pattern, client=client, sg=1, seed=2, exchange_share=share,
                         **dict(SMALL, workers=2, batch_words=50))
        assert model.last_cluster_stats.rounds == 4 * SMALL["epochs"]
        assert model.last_report.words == SMALL["epochs"] * model.vocab.total_words
        assert purity(model.wv, groups)[0] >= 0.8


@pytest.mark.parametrize("loss, sampler", pairings())
def test_every_loss_and_sampler_trains_on_the_cluster(client, planted_shards, purity, loss, sampler):
    groups, _, pattern = planted_shards
    try:
        model = Word2Vec(corpus_file=pattern, client=client, sg=1, loss=loss, sampler=sampler, seed=2,
                         **dict(SMALL, epochs=4))
    except ValueError as exc:
        assert refused(exc)
        pytest.skip(str(exc))
    assert np.all(np.isfinite(model.W_in)) and np.all(np.isfinite(model.W_out))
    assert np.isfinite(model.last_report.epoch_loss[-1])
    if sampler != "topk":       # hard negatives push a topic's own words apart (see test_word2vec.py)
        assert purity(model.wv, groups)[0] >= 0.7


def test_rounds_default_to_a_fixed_size_per_replica():
    assert cluster_mod.rounds_per_epoch(8, [10, 10**9]) == 8
    assert cluster_mod.rounds_per_epoch(None, [10, 1000]) == 1
    assert cluster_mod.rounds_per_epoch(None, [cluster_mod.ROUND_UNITS * 10, cluster_mod.ROUND_UNITS * 31.6]) == 32
    # a lone replica has no peer to drift from: its rounds are long (they only set how often the client
    # receives the tables)
    assert cluster_mod.rounds_per_epoch(None, [cluster_mod.ROUND_UNITS * 32]) == \
        max(1, round(cluster_mod.ROUND_UNITS * 32 / cluster_mod.LONE_ROUND_UNITS))
    assert cluster_mod.rounds_per_epoch(None, [cluster_mod.LONE_ROUND_UNITS * 7]) == 7
    assert cluster_mod.rounds_per_epoch(5, [cluster_mod.LONE_ROUND_UNITS * 7]) == 5
    # ... and longer still for large tables, whose rows it sends the client every round
    rows = 4 * cluster_mod.LONE_ROUND_UNITS // cluster_mod.LONE_UNITS_PER_ROW
    assert cluster_mod.rounds_per_epoch(None, [cluster_mod.LONE_ROUND_UNITS * 8], rows) == 2
    assert cluster_mod.rounds_per_epoch(None, [cluster_mod.LONE_ROUND_UNITS * 8, 1], rows) == \
        round(cluster_mod.LONE_ROUND_UNITS * 8 / cluster_mod.ROUND_UNITS)


def test_the_frequent_rows_are_the_leading_rows_a_replicas_round_holds_often(monkeypatch):
    plan = RoundPlan.uniform(4, 2)
    counts = np.array([400, 300, 100, 60, 40, 3, 2, 1])
    units = [1100, 1200, 1000]          # the largest replica's round: 300 units, 3 parts of 100
    monkeypatch.setattr(cluster_mod, "HOT_PART_UNITS", 100)
    # expected in a round: count * 300 / 906, at least once for the first five (the sixth, 3: 0.99 times)
    assert cluster_mod.hot_rows(plan, units, counts, True, True, 3, 0) == (5, 5)
    assert cluster_mod.hot_rows(plan, units, counts, True, False, 3, 0) == (5, 0)     # W_out of tree nodes
    assert cluster_mod.hot_rows(plan, units, counts, True, True, 3, 0, frequent_rows=False) is None
    # a table not sorted by count (sorted_vocab=False, items in their matrix's order): none
    assert cluster_mod.hot_rows(plan, units, counts[::-1], True, True, 8, 0) is None
    assert cluster_mod.hot_rows(plan, units, counts[[0, 1, 5, 2, 3, 4, 6, 7]], True, True, 8, 0) is None
    assert cluster_mod.hot_rows(plan, units, counts, True, True, 2, 0) is None        # two replicas: the sum
    assert cluster_mod.hot_rows(plan, units, counts, True, True, 3, 1) is None        # a stale round
    assert cluster_mod.hot_rows(plan, units, counts, False, False, 3, 0) is None
    assert cluster_mod.hot_rows(RoundPlan.uniform(24, 2), units, counts, True, True, 3, 0) is None  # 50 a round
    assert cluster_mod.round_parts(plan.span(1, 2), max(units)) == 3
    monkeypatch.setattr(cluster_mod, "HOT_PART_UNITS", None)
    assert cluster_mod.hot_rows(plan, units, counts, True, True, 3, 0) is None


def test_a_model_tells_the_client_where_its_classes_rows_are(planted):
    import scipy.sparse as sp
    from embkit import ItemEmbedding
    _, sentences = planted
    model = Word2Vec(sentences, vector_size=8, min_count=1, epochs=1, workers=1)
    counts, inputs, outputs = model.class_rows()
    np.testing.assert_array_equal(counts, model.vocab.counts)
    assert inputs is True and outputs is True
    assert Word2Vec(sentences, vector_size=8, min_count=1, epochs=1, workers=1, hs=1, negative=0).class_rows()[2] \
        is False        # the tree's nodes
    pairs = sp.random(30, 30, density=0.3, format="csr", random_state=0) * 10
    items = ItemEmbedding(vector_size=8, epochs=1, progress=False).fit(pairs)
    counts, inputs, outputs = items.class_rows()
    np.testing.assert_array_equal(counts, items.counts)
    assert inputs is True and outputs is True


@pytest.mark.parametrize("run_share, found", [(1.0, [4]), (0.5, [2, 4])])
def test_a_part_reads_every_input_row_when_the_run_keeps_rows_back(run_share, found):
    # the frequent rows found after a part: the touched W_in rows alone when every changed row goes out at each
    # reconciliation; with exchange_share below 1 a row kept back from an earlier reconciliation differs from
    # its base untouched (row 2 here), and must be found too (every W_out row is read either way)
    replica = Replica.__new__(Replica)
    replica.run, replica.threads, replica.marked, replica.bits = {"share": run_share}, 1, True, 16
    replica.touched = np.zeros(8, dtype=np.uint8)
    replica.touched[4] = 1
    tables = [np.zeros((8, 4), dtype=np.float32) for _ in range(2)]
    bases = [t.copy() for t in tables]
    tables[0][[2, 4]] += 0.5
    tables[1][[1, 6]] -= 0.25
    views = tuple((t[:6], b[:6]) for t, b in zip(tables, bases))      # the first 6 rows: the frequent ones
    sent = replica._changed(views, ({}, {}))
    assert sent[0].ids.tolist() == found and sent[1].ids.tolist() == [1]
    np.testing.assert_array_equal(sent[0].values.astype(np.float32), np.full((len(found), 4), 0.5))


def test_the_parts_of_a_round_join_up_to_it():
    span = RoundPlan([[0, 3, 7, 10], [0, 10]], 10).span(0, 1)
    for units in (0, 1, 9, 1000, 12345):
        for parts in (1, 2, 3, 7):
            pieces = [span.part(k, parts) for k in range(parts)]
            assert pieces[0].units(units)[0] == span.units(units)[0]
            assert pieces[-1].units(units)[1] == span.units(units)[1]
            assert all(a.units(units)[1] == b.units(units)[0] for a, b in zip(pieces, pieces[1:]))
            assert {p.ordinal for p in pieces} == {span.ordinal}
    last = RoundPlan.uniform(2, 1).span(0, 1)
    assert [last.part(k, 3).closes_epoch for k in range(3)] == [False, False, True]


def test_every_reconcile_mode_trains(client, planted_shards, purity):
    groups, _, pattern = planted_shards
    for mode in MODES:
        model = Word2Vec(corpus_file=pattern, client=client, sg=1, seed=2, reconcile=mode, **SMALL)
        assert purity(model.wv, groups)[0] >= 0.8, mode


# ----------------------------------------------------------------------------- faults and bad input


class KillAWorker:
    """Kills one worker process in the middle of the first epoch (after its second reconciliation); with
    ``wait_gone``, waits until the scheduler has seen it go, so that the next round's call finds it gone
    (else the call may be on its way when it dies)."""

    def __init__(self, client, wait_gone=False):
        self.client, self.rounds, self.killed, self.wait_gone = client, 0, None, wait_gone

    def on_batch_end(self, model):
        self.rounds += 1
        if self.rounds == 2:
            self.killed = sorted(self.client.nthreads())[0]
            fire_and_forget(self.client.submit(os._exit, 1, workers=[self.killed], allow_other_workers=False,
                                               pure=False))
            deadline = time.monotonic() + 30
            while self.wait_gone and self.killed in self.client.nthreads() and time.monotonic() < deadline:
                time.sleep(0.05)


def test_sending_half_of_each_rounds_step_learns_with_fewer_bytes(client, planted_shards, purity, tmp_path):
    groups, _, pattern = planted_shards
    runs = {share: Word2Vec(corpus_file=pattern, client=client, sg=1, seed=2, exchange_share=share, **SMALL)
            for share in (1.0, 0.5)}
    assert runs[0.5].last_cluster_stats.bytes_up < 0.8 * runs[1.0].last_cluster_stats.bytes_up
    assert purity(runs[0.5].wv, groups)[0] >= 0.8
    assert runs[0.5].last_report.words == runs[1.0].last_report.words
    # a checkpointed run keeps its share: resumed without it, it goes on with it (and refuses another)
    with pytest.raises(SystemError):
        Word2Vec(corpus_file=pattern, client=client, sg=1, seed=2, exchange_share=0.5, checkpoint_dir=str(tmp_path),
                 checkpoint_every="1 words", callbacks=[_After(5, _crash)], **SMALL)
    with pytest.raises(CheckpointError, match="exchange_share"):
        Word2Vec.resume(str(tmp_path), client=client, exchange_share=1.0)
    resumed = Word2Vec.resume(str(tmp_path), client=client)
    assert resumed.exchange_share == 0.5
    assert resumed.last_report.words == runs[0.5].last_report.words


@pytest.mark.parametrize("workers", [2, 3])
def test_eight_bits_a_value_learn_with_half_the_bytes_up_and_replicas_that_agree(client, planted_shards, purity,
                                                                              tmp_path, workers, monkeypatch):
    # each replica rounds its rows to 8 bits a value before it merges them, and an owner its merged rows
    # before it adopts them: the client's relayed rows (every round's, with checkpoints) give the tables a
    # replica holds at the end, bit for bit; two replicas send each other their whole rounds, three their
    # parts and merged rows (the frequent rows' too) at 8 bits
    groups, _, pattern = planted_shards
    monkeypatch.setattr(cluster_mod, "HOT_PART_UNITS", 200)
    with (local_client(3) if workers == 3 else contextlib.nullcontext(client)) as c:
        params = dict(corpus_file=pattern, client=c, sg=1, seed=2, **SMALL)
        runs = {bits: Word2Vec(exchange_bits=bits, **params) for bits in (16, 8)}
        up = {bits: m.last_cluster_stats.bytes_up for bits, m in runs.items()}
        down = {bits: m.last_cluster_stats.bytes_down for bits, m in runs.items()}
        assert 0.45 * up[16] < up[8] < 0.6 * up[16]
        assert (0.45 * down[16] < down[8] < 0.6 * down[16]) if workers == 3 else down[8] == down[16] == 0
        assert purity(runs[8].wv, groups)[0] >= 0.8 and runs[8].last_report.words == runs[16].last_report.words
        assert not np.array_equal(runs[8].W_out, runs[16].W_out)
        assert (runs[8].last_cluster_stats.hot_syncs > 0) == (workers == 3)
        if workers == 2:    # a round late too, its rows adopted under the next round's training
            assert purity(Word2Vec(exchange_bits=8, **dict(params, staleness=1)).wv, groups)[0] >= 0.8
        relayed = Word2Vec(exchange_bits=8, checkpoint_dir=str(tmp_path), **params)
        assert relayed.last_cluster_stats.fetches == 0
        np.testing.assert_array_equal(relayed.W_in, runs[8].W_in)
        np.testing.assert_array_equal(relayed.W_out, runs[8].W_out)
        # a checkpointed run keeps its bits, and a resumed run refuses others
        with pytest.raises(CheckpointError, match="exchange_bits"):
            Word2Vec.resume(str(tmp_path), client=c, exchange_bits=16)
        assert Word2Vec.resume(str(tmp_path), client=c).exchange_bits == 8


@pytest.mark.parametrize("wait_gone", [False, True], ids=["dies during a round", "gone before the call"])
def test_a_worker_lost_mid_epoch_does_not_lose_the_run(client, planted_shards, purity, wait_gone):
    groups, _, pattern = planted_shards
    killer = KillAWorker(client, wait_gone)
    model = Word2Vec(corpus_file=pattern, client=client, sg=1, seed=2, callbacks=[killer],
                     **SMALL)
    assert killer.killed is not None
    stats = model.last_cluster_stats
    assert stats.reopened and stats.reopened[0].startswith(killer.killed)
    assert stats.rounds == 4 * SMALL["epochs"]
    assert model.last_report.words == SMALL["epochs"] * model.vocab.total_words
    assert purity(model.wv, groups)[0] >= 0.8
    client.wait_for_workers(2, timeout=60)      # the nanny restarts the worker for the next tests


@pytest.mark.parametrize("staleness", [0, 1])
def test_a_worker_lost_in_a_run_without_relayed_rows_goes_on_from_a_survivors_tables(
        client, planted_shards, purity, monkeypatch, staleness):
    # a run without checkpoints or callbacks sends the client no rows during an epoch: after the loss the
    # client fetches the reconciled tables from the surviving replica and opens both from them (the killer
    # is a callback, so the run is told not to relay); with staleness 1 the survivor's tables may lack the
    # round before the lost one, which is then trained again: the words are counted once all the same
    groups, _, pattern = planted_shards
    monkeypatch.setattr(client_mod, "relays", lambda model, replicas, checkpointer: False)
    killer = KillAWorker(client, wait_gone=True)
    model = Word2Vec(corpus_file=pattern, client=client, sg=1, seed=2, callbacks=[killer], staleness=staleness,
                     **SMALL)
    stats = model.last_cluster_stats
    assert max(stats.lag) == staleness
    assert killer.killed is not None and stats.reopened
    assert stats.bytes_down == 0 and stats.fetches == 2        # after the loss, and at the end
    assert stats.rounds == 4 * SMALL["epochs"]
    assert model.last_report.words == SMALL["epochs"] * model.vocab.total_words
    assert purity(model.wv, groups)[0] >= 0.8
    client.wait_for_workers(2, timeout=60)      # the nanny restarts the worker for the next tests


class _After:
    """Does ``act`` after the ``at``-th round of a run (Ctrl-C: a real SIGINT to this process, the client)."""

    def __init__(self, at, act):
        self.at, self.act, self.rounds = at, act, 0

    def on_batch_end(self, model):
        self.rounds += 1
        if self.rounds == self.at:
            self.act()


def _ctrl_c():
    os.kill(os.getpid(), signal.SIGINT)


def _crash():
    raise SystemError("simulated crash of the client")


@pytest.mark.parametrize("stop", [_ctrl_c, _crash], ids=["ctrl-c", "crash"])
def test_a_cluster_run_resumes_from_its_checkpoint_bit_identical(client, planted_shards, tmp_path, stop):
    # the client writes a checkpoint of the reconciled tables and the merge's momentum after every round
    # ("1 words"); a run stopped in its second epoch and resumed ends as the uninterrupted run, bit for bit
    # (a run with checkpoints reconciles every round before the next: the reference has staleness 0)
    _, _, pattern = planted_shards
    params = dict(corpus_file=pattern, client=client, sg=1, seed=2, staleness=0, **SMALL)
    reference = Word2Vec(**params)
    with pytest.raises((TrainingInterrupted, SystemError)) as info:
        Word2Vec(checkpoint_dir=str(tmp_path), checkpoint_every="1 words", callbacks=[_After(6, stop)], **params)
    if stop is _ctrl_c:
        assert "resume" in str(info.value) and info.value.checkpoint == list_checkpoints(tmp_path)[0]
    resumed = Word2Vec.resume(str(tmp_path), client=client)
    np.testing.assert_array_equal(resumed.W_in, reference.W_in)
    np.testing.assert_array_equal(resumed.W_out, reference.W_out)
    assert resumed.loss_history == reference.loss_history
    assert resumed.last_report.words == reference.last_report.words


def test_a_run_of_shrinking_rounds_resumes_with_the_rounds_of_its_checkpoint(client, planted_shards, tmp_path,
                                                                           monkeypatch):
    # by default two replicas train rounds that shrink towards the end of the run (a floor small enough here
    # for the test's corpus to have several a round); a checkpoint keeps the run's cuts, so a resumed run
    # trains the same rounds where it would plan others (another floor here, as another number of workers
    # would give) and ends as the uninterrupted run, bit for bit
    from embkit.core.persist import load_archive
    _, _, pattern = planted_shards
    monkeypatch.setattr(cluster_mod, "ROUND_UNITS", 300)
    params = dict(corpus_file=pattern, client=client, sg=1, seed=2, staleness=0, **dict(SMALL, syncs_per_epoch=None))
    reference = Word2Vec(**params)
    with pytest.raises(SystemError):
        Word2Vec(checkpoint_dir=str(tmp_path), checkpoint_every="1 words", callbacks=[_After(9, _crash)], **params)
    config, _, _ = load_archive(list_checkpoints(tmp_path)[0], arrays=False)
    plan = RoundPlan.from_record(config["checkpoint"]["run"]["rounds"])
    assert config["checkpoint"]["run"]["cluster"]["syncs_per_epoch"] is None
    assert plan.rounds(0) < plan.rounds(2) and plan.total == reference.last_cluster_stats.rounds
    assert config["checkpoint"]["position"]["epoch"] == 1       # stopped within the second epoch
    monkeypatch.setattr(cluster_mod, "ROUND_UNITS", 500)
    resumed = Word2Vec.resume(str(tmp_path), client=client)
    np.testing.assert_array_equal(resumed.W_in, reference.W_in)
    np.testing.assert_array_equal(resumed.W_out, reference.W_out)
    assert resumed.loss_history == reference.loss_history


def test_three_replicas_keep_the_block_momentum_through_a_checkpoint(planted_shards, tmp_path, purity):
    # 3 replicas merge with block momentum, each keeping the momentum of its own rows: a checkpoint
    # gathers it and a resumed run hands it back, so the resumed run ends as the uninterrupted one, bit for bit
    groups, _, pattern = planted_shards
    with local_client(3) as three:
        params = dict(corpus_file=pattern, client=three, sg=1, seed=2, reconcile="momentum", staleness=0, **SMALL)
        reference = Word2Vec(**params)
        assert reference.last_cluster_stats.replicas == 3
        assert purity(reference.wv, groups)[0] >= 0.8
        stale = Word2Vec(**dict(params, staleness=1))      # 3 replicas reconcile every round all the same
        assert stale.last_cluster_stats.lag == [0] * len(stale.last_cluster_stats.lag)
        np.testing.assert_array_equal(stale.W_out, reference.W_out)
        with pytest.raises(SystemError):
            Word2Vec(checkpoint_dir=str(tmp_path), checkpoint_every="1 words", callbacks=[_After(6, _crash)],
                     **params)
        resumed = Word2Vec.resume(str(tmp_path), client=three)
        np.testing.assert_array_equal(resumed.W_in, reference.W_in)
        np.testing.assert_array_equal(resumed.W_out, reference.W_out)


def test_three_replicas_reconcile_the_frequent_rows_within_their_rounds(planted_shards, tmp_path, purity,
                                                                       monkeypatch):
    # rounds of 3 replicas or more are cut into parts, after each of which the frequent words' rows are
    # reconciled: the client's relayed rows (the parts' first) give the tables the replicas hold, bit for bit,
    # and a resumed run ends as the uninterrupted one
    groups, _, pattern = planted_shards
    monkeypatch.setattr(cluster_mod, "HOT_PART_UNITS", 200)
    with local_client(3) as three:
        params = dict(corpus_file=pattern, client=three, sg=1, seed=2, **SMALL)
        fetched = Word2Vec(**params)
        stats = fetched.last_cluster_stats
        assert stats.replicas == 3 and stats.rounds == 12
        # every round cut into the same parts (its words over 200, at least 2): one reconciliation of the
        # frequent rows after each but the last
        assert stats.hot_syncs >= stats.rounds and stats.hot_syncs % stats.rounds == 0
        assert purity(fetched.wv, groups)[0] >= 0.8
        with pytest.raises(SystemError):
            Word2Vec(checkpoint_dir=str(tmp_path), checkpoint_every="1 words", callbacks=[_After(6, _crash)],
                     **params)
        resumed = Word2Vec.resume(str(tmp_path), client=three)
        relayed = Word2Vec(checkpoint_dir=str(tmp_path / "relayed"), **params)
        assert relayed.last_cluster_stats.fetches == 0 and relayed.last_cluster_stats.hot_syncs == stats.hot_syncs
        for model in (resumed, relayed):
            np.testing.assert_array_equal(model.W_in, fetched.W_in)
            np.testing.assert_array_equal(model.W_out, fetched.W_out)
        # without them the rounds reconcile every row at their ends only; a checkpoint keeps the choice
        whole = Word2Vec(**dict(params, frequent_rows=False))
        assert whole.last_cluster_stats.hot_syncs == 0
        assert not np.array_equal(whole.W_out, fetched.W_out)
        with pytest.raises(CheckpointError, match="the run's settings differ.*frequent_rows"):
            Word2Vec.resume(str(tmp_path), client=three, frequent_rows=False)
        # a worker dying within a round (its parts' reconciliations under way) loses no part of the run
        killer = KillAWorker(three)
        survived = Word2Vec(callbacks=[killer], **params)
        assert killer.killed is not None and survived.last_cluster_stats.reopened
        assert survived.last_report.words == fetched.last_report.words
        assert purity(survived.wv, groups)[0] >= 0.8


def test_a_cluster_checkpoint_refuses_other_round_settings(client, planted_shards, tmp_path):
    _, _, pattern = planted_shards
    with pytest.raises(SystemError):
        Word2Vec(corpus_file=pattern, client=client, checkpoint_dir=str(tmp_path), checkpoint_every="1 words",
                 callbacks=[_After(3, _crash)], **SMALL)
    with pytest.raises(CheckpointError, match="the run's settings differ.*'syncs_per_epoch': 8"):
        Word2Vec.resume(str(tmp_path), client=client, syncs_per_epoch=8)
    with pytest.raises(CheckpointError, match="trained on a Dask cluster: resume it with client="):
        Word2Vec.resume(str(tmp_path))


def test_an_unreadable_shard_names_the_file_and_the_worker(client, planted_shards, tmp_path):
    _, sentences, pattern = planted_shards
    bad = tmp_path / "part-9.txt.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00 this is not gzip data" * 10)
    with pytest.raises(ShardReadError, match=r"part-9\.txt\.gz") as info:
        Word2Vec(corpus_file=pattern, client=client, **SMALL)
    assert "worker tcp://" in str(info.value)


def test_a_glob_matching_nothing_says_so(client, tmp_path):
    with pytest.raises(FileNotFoundError, match="matches no file"):
        Word2Vec(corpus_file=str(tmp_path / "nothing-*.txt"), client=client, **SMALL)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        resolve_files([str(tmp_path / "missing.txt")])


def test_fewer_shards_than_workers_are_named(client, planted, tmp_path, caplog):
    # one compressed file is one shard: one of the two workers trains, and the run says why
    _, sentences = planted
    path = write_shards(tmp_path, sentences, 1, ".txt.gz")[0]
    with caplog.at_level(logging.WARNING, logger="embkit.cluster.client"):
        model = Word2Vec(corpus_file=path, client=client, **SMALL)
    assert model.last_cluster_stats.replicas == 1
    assert "1 shard for 2 workers: only 1 of them trains" in caplog.text


@pytest.mark.timeout(120, method="thread")    # a hang there waits in C, where the signal method cannot end it
def test_workers_that_are_threads_of_one_process_train_as_worker_processes_do(client, planted_shards):
    # LocalCluster(processes=False): the replicas receive the very actor handles the client sent, and a handle
    # binds to the worker that first calls through it; each replica keeps handles of its own (the exchange
    # waited for good before)
    _, sentences, pattern = planted_shards
    processes = Word2Vec(corpus_file=pattern, client=client, seed=3, **SMALL)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as threads:
        inproc = Word2Vec(corpus_file=pattern, client=threads, seed=3, **SMALL)
    assert inproc.last_report.words == processes.last_report.words == SMALL["epochs"] * inproc.vocab.total_words
    assert np.array_equal(inproc.wv.vectors, processes.wv.vectors)


def test_a_client_without_workers_is_a_clear_error(monkeypatch, planted_shards):
    _, _, pattern = planted_shards
    monkeypatch.setattr(cluster_mod, "WORKER_WAIT", 0.5)
    with LocalCluster(n_workers=0, processes=False, dashboard_address=":0") as empty, Client(empty) as c:
        with pytest.raises(ValueError, match="has no workers"):
            Word2Vec(corpus_file=pattern, client=c, **SMALL)


def test_bad_cluster_parameters_are_named(client):
    with pytest.raises(ValueError, match="syncs_per_epoch"):
        Word2Vec(client=client, syncs_per_epoch=0)
    with pytest.raises(ValueError, match="reconcile"):
        Word2Vec(client=client, reconcile="mean")
    with pytest.raises(ValueError, match=r"exchange_share must be a number in \(0, 1\]"):
        Word2Vec(client=client, exchange_share=0)
    for bad in (4, 32, True, 8.5, "8"):
        with pytest.raises(ValueError, match="exchange_bits must be 16 or 8"):
            Word2Vec(client=client, exchange_bits=bad)
    for bad in (2, True, 0.5):
        with pytest.raises(ValueError, match="staleness must be 0 or 1"):
            Word2Vec(client=client, staleness=bad)
    for bad in (1, None, "yes"):
        with pytest.raises(ValueError, match="frequent_rows must be true or false"):
            Word2Vec(client=client, frequent_rows=bad)
    with pytest.raises(TypeError, match="dask.distributed.Client"):
        Word2Vec(client="tcp://localhost:8786")
    with pytest.raises(ValueError, match="corpus_file"):
        Word2Vec([["a", "b"]], client=client)


def test_cli_trains_on_the_scheduler(client, planted_shards, tmp_path, capsys):
    from embkit.cli import main
    _, _, pattern = planted_shards
    out = str(tmp_path / "vectors.txt")
    code = main(["train", "--corpus", pattern, "--scheduler", client.scheduler.address, "--workers", "1",
                 "--epochs", "2", "--min-count", "1", "--vector-size", "16", "-q", "--no-eval", "-o", out,
                 "--output-format", "word2vec", "--exchange-bits", "8"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "training:   2 epochs" in printed
    assert "cluster:    2 replicas, 2 reconciliations" in printed      # a small corpus: one an epoch
    from gensim.models import KeyedVectors
    kv = KeyedVectors.load_word2vec_format(out)
    assert kv.vector_size == 16 and len(kv) == 50


def test_cli_reconciles_the_frequent_rows_of_three_workers_unless_told_not_to(planted_shards, tmp_path, capsys,
                                                                              monkeypatch):
    from embkit.cli import main
    _, _, pattern = planted_shards
    monkeypatch.setattr(cluster_mod, "HOT_PART_UNITS", 500)
    args = ["train", "--corpus", pattern, "--scheduler", "local:3", "--workers", "1", "--epochs", "1",
            "--min-count", "1", "--vector-size", "8", "--syncs-per-epoch", "2", "-q", "--no-eval",
            "-o", str(tmp_path / "vectors.txt"), "--output-format", "word2vec"]
    assert main(args) == 0
    assert re.search(r"cluster:    3 replicas, 2 reconciliations \(and [1-9]\d* of the frequent rows\)",
                     capsys.readouterr().out)
    assert main(args + ["--no-frequent-rows", "--overwrite"]) == 0
    assert "cluster:    3 replicas, 2 reconciliations of" in capsys.readouterr().out


def test_cli_items_trains_on_the_scheduler_with_validation(client, tmp_path, capsys):
    import json
    from test_items import _planted
    from embkit.cli import main
    coo = _planted(0, n_pairs=8000).tocoo()
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("".join("%d %d %d\n" % t for t in zip(coo.row, coo.col, coo.data.astype(int))))
    assert main(["items", "--pairs", str(pairs), "--scheduler", client.scheduler.address, "--workers", "1",
                 "--epochs", "3", "--vector-size", "8", "--syncs-per-epoch", "2", "--exchange-share", "0.5", "-q",
                 "--format", "json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["epochs_run"] == len(summary["validation"]) >= 1
    assert summary["best_epoch"] == max(summary["validation"], key=lambda r: r["mpr_approx"])["epoch"]
    assert summary["test"]["mpr_approx"] > 0.5
    assert summary["cluster"]["replicas"] == 2
    assert summary["cluster"]["reconciliations"] == 2 * summary["epochs_run"]
    assert summary["cluster"]["exchange_share"] == 0.5


def test_cli_resumes_a_cluster_run(client, planted_shards, tmp_path, capsys):
    # a checkpointed cluster run that the client lost resumes from the command line on the (given) scheduler
    from embkit.cli import main
    _, _, pattern = planted_shards
    checkpoints = str(tmp_path / "run")
    args = ["train", "--corpus", pattern, "--scheduler", client.scheduler.address, "--workers", "1", "--epochs",
            "2", "--min-count", "1", "--vector-size", "16", "-q", "--no-eval", "--checkpoint-dir", checkpoints,
            "--checkpoint-every", "1 words"]
    assert main(args + ["-o", str(tmp_path / "first.txt"), "--output-format", "word2vec"]) == 0
    complete = list_checkpoints(checkpoints)[0]
    os.unlink(complete)                 # as if the client had died before the last checkpoint
    assert main(["train", "--resume", checkpoints, "--scheduler", client.scheduler.address, "-q", "--no-eval",
                 "-o", str(tmp_path / "resumed.txt"), "--output-format", "word2vec"]) == 0
    assert "training:   2 epochs" in capsys.readouterr().out
    from gensim.models import KeyedVectors
    first = KeyedVectors.load_word2vec_format(str(tmp_path / "first.txt"))
    resumed = KeyedVectors.load_word2vec_format(str(tmp_path / "resumed.txt"))
    np.testing.assert_array_equal(resumed.vectors, first.vectors)


# ----------------------------------------------------------------------------- ItemEmbedding


@pytest.mark.parametrize("loss, sampler, share, bits", [
    ("sgns", "unigram", 1.0, 16), ("sampled_softmax", "lsh", 1.0, 16), ("nce", "kernel", 1.0, 16),
    ("sgns", "unigram", 0.5, 16), ("sampled_softmax", "unigram", 1.0, 8)])
def test_item_embedding_trains_on_the_cluster(client, loss, sampler, share, bits, monkeypatch):
    # (its replicas draw the fresh tables, whatever rows the loss's output table has)
    from test_items import _group_precision, _planted
    from embkit import ItemEmbedding
    from embkit.cluster.tables import TableRecipe
    opened = []
    share_tables = client_mod._Run.share
    monkeypatch.setattr(client_mod._Run, "share", lambda job, data, targets: opened.append(
        isinstance(data[1], TableRecipe)) or share_tables(job, data, targets))
    train = _planted(0)
    model = ItemEmbedding(vector_size=16, loss=loss, sampler=sampler, epochs=4, workers=1, seed=1, progress=False,
                          client=client, syncs_per_epoch=3, exchange_share=share, exchange_bits=bits).fit(train)
    assert opened == [True]
    stats = model.last_cluster_stats
    assert stats.replicas == 2 and stats.rounds == 12
    assert model.last_report.words == 4 * int(train.sum())
    assert np.all(np.isfinite(model.context_vectors)) and np.all(np.isfinite(model.target_vectors))
    assert _group_precision(model) >= 0.6


def test_item_embedding_validation_on_the_cluster_keeps_the_best_epoch(client, tmp_path):
    # the reconciled tables are scored on the client after each epoch; a crashed run resumes with its history
    from test_items import _planted
    from embkit import ItemEmbedding
    train, test = _planted(0), _planted(1, n_pairs=5000)
    params = dict(vector_size=8, epochs=5, alpha=0.05, workers=1, seed=3, progress=False, client=client,
                  syncs_per_epoch=2, staleness=0)     # the checkpointed run's (see the test above)
    fit = dict(validation=test, metric="mpr_approx", patience=2, keep="best")
    model = ItemEmbedding(**params).fit(train, **fit)
    assert 1 <= len(model.history) <= 5
    assert [row["epoch"] for row in model.history] == list(range(1, len(model.history) + 1))
    assert model.last_cluster_stats.rounds == 2 * len(model.history)
    best = max(model.history, key=lambda r: r["mpr_approx"])
    assert model.best_epoch == best["epoch"]
    assert model.evaluate(test).mpr_approx == pytest.approx(best["mpr_approx"], abs=1e-9)
    with pytest.raises(SystemError):
        ItemEmbedding(checkpoint_dir=str(tmp_path), checkpoint_every="1 pairs", callbacks=[_After(5, _crash)],
                      **params).fit(train, **fit)
    resumed = ItemEmbedding.resume(str(tmp_path), train, validation=test, client=client)
    assert resumed.history == model.history and resumed.best_epoch == model.best_epoch
    np.testing.assert_array_equal(resumed.W_in, model.W_in)
    np.testing.assert_array_equal(resumed.W_out, model.W_out)


def test_an_item_embedding_cluster_run_resumes_bit_identical(client, tmp_path):
    from test_items import _planted
    from embkit import ItemEmbedding
    train = _planted(0)
    params = dict(vector_size=16, epochs=3, workers=1, seed=1, progress=False, client=client, syncs_per_epoch=3,
                  staleness=0)
    reference = ItemEmbedding(**params).fit(train)
    with pytest.raises(SystemError):
        ItemEmbedding(checkpoint_dir=str(tmp_path), checkpoint_every="1 pairs", callbacks=[_After(5, _crash)],
                      **params).fit(train)
    resumed = ItemEmbedding.resume(str(tmp_path), train, client=client)
    np.testing.assert_array_equal(resumed.W_in, reference.W_in)
    np.testing.assert_array_equal(resumed.W_out, reference.W_out)
    assert resumed.loss_history == reference.loss_history
