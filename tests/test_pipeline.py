"""The drivers' worker threads (``embkit._kernels.drive.Pipeline``) and the epoch loop that keeps several
chunks on them (``embkit.core.training.ChunkSteps``): results in chunk order, checkpoints and Ctrl-C stops at
whole chunks, and no thread left running after a run ends, fails or is stopped."""
import os
import signal
import threading
import time

import numpy as np
import pytest

from embkit import Word2Vec
from embkit._kernels.drive import slice_count
from embkit._kernels.windows import WindowTrainer
from embkit.core import registry
from embkit.core.checkpoint import list_checkpoints
from embkit.core.hot_rows import WORD_HOT_FROM_HOLDERS, WORD_HOT_ROW_BYTES
from embkit.core.interrupts import TrainingInterrupted
from embkit.core.training import ChunkSteps, open_pipeline


def _trainer(n_words=50, dim=8, seed=1, tables=None):
    rng = np.random.default_rng(seed)
    W_in = ((rng.random((n_words, dim)) - 0.5) / dim).astype(np.float32)
    W_out = np.zeros((n_words, dim), np.float32)
    if tables is not None:
        tables.extend([W_in, W_out])
    loss, sampler = registry.build_objective("sgns", "unigram", np.arange(n_words, 0, -1), n_words, 5)
    return WindowTrainer(W_in, W_out, None, loss, sampler, 3, True, True, 5, True, 0.05, 0.0001, 1e6, seed)


def _chunk(n_tokens, seed):
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, 50, n_tokens).astype(np.int32)
    return tokens, np.arange(10, n_tokens + 1, 10, dtype=np.int32)


def test_slices_per_chunk():
    assert slice_count(1) == 1 and slice_count(4) == 16
    with pytest.raises(ValueError):
        slice_count(0)


def test_chunks_in_flight_come_back_in_order_with_their_units():
    trainer = _trainer()
    sizes = [4000, 100, 2500, 700, 3000]
    before = threading.active_count()
    pipe = trainer.pipeline(3)
    assert threading.active_count() == before + 3
    for i, n in enumerate(sizes):
        pipe.submit(pipe.prepare(_chunk(n, i), 0.0, i, 3))
    assert pipe.in_flight == len(sizes)
    results = [pipe.wait() for _ in sizes]
    pipe.close()
    assert [units for _, _, units, _ in results] == sizes
    assert all(np.isfinite(loss) and examples > 0 and 0 < kept <= units for loss, examples, units, kept in results)
    assert threading.active_count() == before
    with pytest.raises(RuntimeError, match="closed"):
        pipe.submit(pipe.prepare(_chunk(10, 0), 0.0, 0, 1))


def test_one_thread_trains_the_chunks_in_order_as_one_call_each():
    tables_a, tables_b = [], []
    pipelined, single = _trainer(tables=tables_a), _trainer(tables=tables_b)
    pipe = pipelined.pipeline(1)
    for i in range(4):
        pipe.submit(pipe.prepare(_chunk(1000, i), 1000.0 * i, i, 1))
    got = [pipe.wait()[:3] for _ in range(4)]
    pipe.close()
    want = [single.train_chunk(*_chunk(1000, i), 1000.0 * i, i, 1) for i in range(4)]
    assert got == want
    for a, b in zip(tables_a, tables_b):
        np.testing.assert_array_equal(a, b)


def test_abort_drops_untaken_slices_and_joins_the_threads():
    trainer = _trainer()
    before = threading.active_count()
    pipe = trainer.pipeline(2)
    for i in range(pipe.capacity):
        pipe.submit(pipe.prepare(_chunk(20000, i), 0.0, i, 2))
    with pytest.raises(RuntimeError, match="wait"):
        pipe.submit(pipe.prepare(_chunk(10, 0), 0.0, 0, 2))
    pipe.abort()
    assert pipe.in_flight == 0 and threading.active_count() == before


def test_a_signal_handler_that_raises_interrupts_a_wait():
    trainer = _trainer()
    pipe = trainer.pipeline(1)
    for i in range(6):
        pipe.submit(pipe.prepare(_chunk(200000, i), 0.0, i, 1))

    def handler(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, handler)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.02)
        with pytest.raises(KeyboardInterrupt):
            for _ in range(6):
                pipe.wait()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        pipe.abort()


class _Chunk:
    def __init__(self, n, seed):
        self.kernel_args = _chunk(n, seed)
        self.raw_units = n

    def __len__(self):
        return self.raw_units


def test_settling_takes_in_the_chunks_in_flight_and_submits_nothing_more():
    trainer = _trainer()
    pipe = open_pipeline(trainer, 2)
    chunks = [_Chunk(3000, i) for i in range(8)]
    steps = ChunkSteps(pipe, trainer, chunks, 0, 0.0, 24000, lambda i: i, lambda loss, fraction: None, depth=3)
    iterator = iter(steps)
    next(iterator)()
    assert steps.in_flight == 2              # two more went ahead
    steps.settle()
    done = 1
    while steps.in_flight:
        next(iterator)()
        done += 1
    assert done == 3 and pipe.in_flight == 0
    rest = [step() for step in iterator]     # then it goes on
    assert len(rest) == 5
    pipe.close()


def test_a_small_chunk_trains_alone():
    trainer = _trainer()
    pipe = open_pipeline(trainer, 4)
    chunks = [_Chunk(3000, 0), _Chunk(30, 1), _Chunk(3000, 2)]
    steps = ChunkSteps(pipe, trainer, chunks, 0, 0.0, 6030, lambda i: i, lambda loss, fraction: None,
                       min_chunk_per_thread=100, depth=3)
    iterator = iter(steps)
    next(iterator)()
    assert steps.in_flight == 0               # the small one waits until nothing else trains
    next(iterator)()
    assert steps.in_flight == 0               # and nothing trains beside it
    next(iterator)()
    pipe.close()


def _sentences(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    words = ["w%d" % i for i in range(200)]
    return [[words[j] for j in rng.integers(0, 200, 20)] for _ in range(n)]


def _model(**params):
    kw = dict(vector_size=16, window=3, min_count=1, sg=1, epochs=12, workers=1, seed=3, chunk_tokens=600,
              batch_words=100)
    kw.update(params)
    return Word2Vec(**kw)


def test_ctrl_c_with_chunks_in_flight_stops_at_a_whole_chunk(tmp_path):
    sentences = _sentences()
    reference = _model()
    reference.build_vocab(sentences)
    reference.train()
    model = _model(checkpoint_dir=tmp_path, checkpoint_every="20000 units")
    model.build_vocab(sentences)

    def press_ctrl_c():         # once the run has written a checkpoint, i.e. is well under way
        while not list_checkpoints(tmp_path):
            time.sleep(0.001)
        os.kill(os.getpid(), signal.SIGINT)

    presser = threading.Thread(target=press_ctrl_c)
    presser.start()
    with pytest.raises(TrainingInterrupted):
        model.train()
    presser.join()
    resumed = Word2Vec.resume(tmp_path, corpus_iterable=sentences)
    np.testing.assert_array_equal(resumed.W_in, reference.W_in)
    np.testing.assert_array_equal(resumed.W_out, reference.W_out)


def test_a_failing_callback_leaves_no_worker_thread():
    class Fails:
        def on_epoch_end(self, model):
            raise ValueError("callback failed")

    before = threading.active_count()
    model = _model(workers=3, epochs=3, callbacks=[Fails()])
    with pytest.raises(ValueError, match="callback failed"):
        model.build_vocab(_sentences())
        model.train()
    assert threading.active_count() == before


def test_several_threads_train_every_word_of_every_epoch():
    model = _model(workers=4, epochs=3)
    model.build_vocab(_sentences())
    model.train()
    report = model.last_report
    assert report.words == 3 * model.vocab.total_words and report.epochs == 3
    assert all(np.isfinite(report.epoch_loss))


@pytest.mark.parametrize("ids, every, scale, limit, inputs, limit_in, banks", [
    (np.arange(10), 7, 1.0, 0, False, None, 1),                     # the first classes: no slot table read
    (np.array([7, 3, 12, 0, 41, 5]), 7, 1.0, 0, False, None, 1),    # any classes, through the slot table
    (np.arange(10), 50, 1.0, 1, False, None, 1),                    # written back at every step
    (np.arange(10), 1000, 1.0, 3, True, None, 1),       # ... every third, and the input rows copied too
    (np.array([9, 2, 30, 4]), 5, 1.0, 2, True, None, 1),
    (np.arange(10), 1000, 1.0, 3, True, 1, 1),          # the input rows' copies on their own limit
    (np.array([9, 2, 30, 4]), 1, 1.0, 0, True, 0, 3),   # three sets of copies, all written back every example
])
def test_hot_rows_with_one_thread_follow_the_table_up_to_rounding(ids, every, scale, limit, inputs, limit_in,
                                                                  banks):
    tables_plain, tables_hot = [], []
    plain, hot = _trainer(tables=tables_plain), _trainer(tables=tables_hot)
    hot.hot_rows(ids.astype(np.int32), every=every, scale=scale, limit=limit, inputs=inputs, limit_in=limit_in,
                 banks=banks)
    for i in range(3):       # windows of random words: a word is often twice in one window
        assert plain.train_chunk(*_chunk(2000, i), 2000.0 * i, i, 1)[2] == \
            hot.train_chunk(*_chunk(2000, i), 2000.0 * i, i, 1)[2]
    for a, b in zip(tables_plain, tables_hot):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    assert not np.array_equal(tables_plain[1][ids], np.zeros((len(ids), 8), np.float32))


@pytest.mark.parametrize("inputs, banks", [(False, 1), (True, 1), (True, 3)])
def test_hot_rows_write_back_a_share_of_a_threads_change(inputs, banks):
    # one thread, one flush at the end of the slice: a hot row's steps go to its copy (to every set's with
    # banks), of whose change a scale of 1e-6 writes back next to nothing
    moved = {}
    for scale in (None, 1.0, 1e-6):
        tables = []
        trainer = _trainer(tables=tables)
        if scale is not None:
            trainer.hot_rows(np.arange(10, dtype=np.int32), every=10 ** 6, scale=scale, inputs=inputs, banks=banks)
        start = [t.copy() for t in tables]
        trainer.train_chunk(*_chunk(2000, 0), 0.0, 0, 1)
        moved[scale] = [np.abs(t - s)[:10].sum() for s, t in zip(start, tables)]
    if banks == 1:
        np.testing.assert_allclose(moved[1.0], moved[None], rtol=1e-3)
    else:       # each set steps from the rows as they were: the sum of their changes, not the same
        assert not np.allclose(moved[1.0], moved[None], rtol=1e-3)
    assert moved[1e-6][1] < 0.2 * moved[None][1]                    # the output rows
    if inputs:
        assert moved[1e-6][0] < 0.2 * moved[None][0]                # and the input rows
    else:
        assert moved[1e-6][0] > 0.5 * moved[None][0]


def test_the_input_rows_copies_write_back_their_own_share():
    moved = {}
    for scale_in in (None, 1e-6):
        tables = []
        trainer = _trainer(tables=tables)
        if scale_in is not None:
            trainer.hot_rows(np.arange(10, dtype=np.int32), every=10 ** 6, inputs=True, scale_in=scale_in)
        start = [t.copy() for t in tables]
        trainer.train_chunk(*_chunk(2000, 0), 0.0, 0, 1)
        moved[scale_in] = [np.abs(t - s)[:10].sum() for s, t in zip(start, tables)]
    assert moved[1e-6][0] < 0.2 * moved[None][0]                    # the input rows barely move
    np.testing.assert_allclose(moved[1e-6][1], moved[None][1], rtol=0.2)   # the output rows as without copies


def test_hot_rows_are_checked_and_a_tree_loss_ignores_them():
    trainer = _trainer()
    for ids in ([3, 3], [-1], [50]):
        with pytest.raises(ValueError, match="distinct class ids"):
            trainer.hot_rows(np.array(ids, np.int32))
    with pytest.raises(ValueError, match="every must be"):
        trainer.hot_rows([1], every=0)
    with pytest.raises(ValueError, match="limit and limit_in >= 0"):
        trainer.hot_rows([1], limit=-1)
    with pytest.raises(ValueError, match="limit and limit_in >= 0"):
        trainer.hot_rows([1], limit_in=-1)
    for banks in (0, 10 ** 6):
        with pytest.raises(ValueError, match="banks in"):
            trainer.hot_rows([1], banks=banks)
    with pytest.raises(ValueError, match="scale and scale_in in"):
        trainer.hot_rows([1], scale_in=0.0)
    model = _model(workers=2, epochs=1, hs=1, negative=0, hot_rows=16)
    model.build_vocab(_sentences())
    model.train()
    assert np.isfinite(model.last_report.epoch_loss[0])
    with pytest.raises(ValueError, match="hot_rows"):
        _model(hot_rows=-3)


@pytest.mark.parametrize("workers", [2, 3, 4])
def test_several_threads_keep_the_hot_rows_a_model_gives_them(workers, monkeypatch):
    from embkit.core import hot_rows as module
    monkeypatch.setattr(module, "running_threads", lambda n: n)         # a machine of as many cores
    model = _model(workers=workers, epochs=1, vector_size=300)
    rng = np.random.default_rng(0)
    model.build_vocab([["w%d" % j for j in rng.integers(0, 2000, 20)] for _ in range(1000)])

    def hot_rows(setting, workers=workers):
        model.hot_rows, model.workers = setting, workers
        return model.replica_trainer(0.025, 0.0001, 1e6)[2].hot_row_count

    assert len(model.vocab) > WORD_HOT_ROW_BYTES // (2 * 300 * 4)
    fitting = WORD_HOT_ROW_BYTES // (2 * 300 * 4)                   # as many as fit the bytes a thread
    assert hot_rows(None) == (fitting if workers >= WORD_HOT_FROM_HOLDERS else 0)   # few threads share
    assert hot_rows(5) == 5 and hot_rows(0) == 0
    assert hot_rows(None, workers=1) == 0 and hot_rows(5, workers=1) == 0   # one thread shares nothing
    model.sg = 0                                                            # CBOW shares its tables unless asked
    assert hot_rows(None) == 0 and hot_rows(5) == 5


def test_many_threads_copy_the_input_rows_too_unless_told(monkeypatch):
    from embkit.core import hot_rows
    monkeypatch.setattr(hot_rows, "running_threads", lambda n: n)       # a machine of as many cores
    counts = np.arange(1000, 0, -1)
    many = hot_rows.WORD_HOT_INPUTS_FROM_HOLDERS
    assert hot_rows.word_hot_rows(None, counts, 100, many)["inputs"]
    assert not hot_rows.word_hot_rows(None, counts, 100, many - 1)["inputs"]
    assert not hot_rows.word_hot_rows(512, counts, 100, many, skip_gram=False)["inputs"]   # CBOW: not measured
    monkeypatch.setattr(hot_rows, "WORD_HOT_INPUTS", False)
    assert not hot_rows.word_hot_rows(None, counts, 100, many)["inputs"]
    monkeypatch.setattr(hot_rows, "WORD_HOT_INPUTS", True)
    assert hot_rows.word_hot_rows(None, counts, 100, 4)["inputs"]
    monkeypatch.setattr(hot_rows, "WORD_HOT_INPUTS", None)
    model = _model(workers=many, epochs=1)                  # the trainer takes the copies of both tables
    model.build_vocab(_sentences())
    model.train()
    assert np.isfinite(model.last_report.epoch_loss[0])


def test_the_default_copies_count_the_threads_that_run_at_once(monkeypatch):
    # threads beyond the cores take turns on them, where no other core takes their rows: four threads on
    # two cores share the tables as two do; the bounds still count every thread that holds copies
    from embkit.core import hot_rows
    counts = np.arange(1000, 0, -1)
    if hasattr(os, "sched_getaffinity"):
        assert hot_rows.running_threads(10 ** 6) == len(os.sched_getaffinity(0))
    assert hot_rows.running_threads(1) == 1
    monkeypatch.setattr(hot_rows, "running_threads", lambda n: min(n, 2))
    assert hot_rows.word_hot_rows(None, counts, 100, 4)["ids"] is None
    assert not hot_rows.word_hot_rows(None, counts, 100, 16)["inputs"]
    asked = hot_rows.word_hot_rows(64, counts, 100, 16)             # asked for: copies, bounded by all 16
    assert len(asked["ids"]) == 64 and asked["limit"] == hot_rows.HOT_PENDING_STEPS // 16
    monkeypatch.setattr(hot_rows, "running_threads", lambda n: min(n, 8))
    many = hot_rows.word_hot_rows(None, counts, 100, 16)
    assert many["ids"] is not None and many["inputs"] and many["limit"] == hot_rows.HOT_PENDING_STEPS // 16


def test_one_thread_holds_its_copies_as_several_would_with_banks(monkeypatch):
    # the study of many threads' copies on one core: copies on one thread, their own limits, reproducible
    from embkit.core import hot_rows
    monkeypatch.setattr(hot_rows, "WORD_HOT_BANKS", 4)
    monkeypatch.setattr(hot_rows, "WORD_HOT_INPUTS", True)
    args = hot_rows.word_hot_rows(None, np.arange(1000, 0, -1), 100, 1)
    assert len(args["ids"]) == hot_rows.WORD_HOT_ROW_BYTES // (2 * 100 * 4) and args["banks"] == 4
    assert args["limit"] == hot_rows.HOT_PENDING_STEPS // 4
    assert args["limit_in"] == hot_rows.HOT_PENDING_INPUT_STEPS // 4
    vectors = []
    for _ in range(2):
        model = _model(epochs=2)
        model.build_vocab(_sentences())
        model.train()
        vectors.append(model.W_in.copy())
    np.testing.assert_array_equal(vectors[0], vectors[1])
    monkeypatch.setattr(hot_rows, "WORD_HOT_BANKS", 1)
    shared = _model(epochs=2)
    shared.build_vocab(_sentences())
    shared.train()
    assert not np.allclose(shared.W_in, vectors[0], atol=1e-4)


def test_hot_rows_train_several_threads_as_well():
    losses = {}
    for hot in (0, None, 32):
        model = _model(workers=4, epochs=4, hot_rows=hot)
        model.build_vocab(_sentences())
        model.train()
        losses[hot] = model.last_report.epoch_loss[-1]
    assert abs(losses[32] - losses[0]) < 0.05 * losses[0]
    assert abs(losses[None] - losses[0]) < 0.05 * losses[0]


def test_reports_count_units_and_read_the_names_of_earlier_checkpoints():
    from embkit.core.training import TrainingReport

    old = TrainingReport.from_dict({"epochs": 1, "words": 5, "raw_words": 7, "effective_words": 4, "examples": 3})
    assert (old.units, old.raw_units, old.trained_units) == (5, 7, 4)
    assert (old.words, old.raw_words, old.effective_words) == (5, 7, 4)          # gensim's names
    assert TrainingReport.from_dict(old.to_dict()) == old
    model = _model(epochs=1)
    model.build_vocab(_sentences())
    model.train()
    assert model.last_report.unit == model.unit == "word"
