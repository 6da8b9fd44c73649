"""Checkpoints and resume, on every model: a run stopped by Ctrl-C or lost after a checkpoint and resumed
ends bit-identical to the uninterrupted run (``workers=1``); what cannot be resumed is refused clearly."""
import os
import signal
import struct
import subprocess
import sys
import textwrap
import zipfile

import numpy as np
import pytest

from _models import CASES, ExtremeClassifierCase
from embkit.core import checkpoint, persist
from embkit.core.checkpoint import CheckpointError, list_checkpoints
from embkit.core.interrupts import TrainingInterrupted, stop_on_sigint

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(params=CASES, ids=lambda case: case.name)
def case(request):
    return request.param


class _CtrlC:
    """Presses Ctrl-C (a real SIGINT to this process) after the ``at``-th chunk of a run."""

    def __init__(self, at):
        self.at, self.batches = at, 0

    def on_batch_end(self, model):
        self.batches += 1
        if self.batches == self.at:
            os.kill(os.getpid(), signal.SIGINT)


class _Crash:
    """Fails after the ``at``-th chunk, as a killed process would stop (no checkpoint on the way out)."""

    def __init__(self, at):
        self.at, self.batches = at, 0

    def on_batch_end(self, model):
        self.batches += 1
        if self.batches == self.at:
            raise SystemError("simulated crash")


def _reference(case, **params):
    return case.fit(case.make(epochs=3, **case.small_chunks, **params))


def test_ctrl_c_then_resume_is_bit_identical(case, tmp_path):
    reference = _reference(case)
    model = case.make(epochs=3, callbacks=[_CtrlC(at=5)], checkpoint_dir=tmp_path, **case.small_chunks)
    with pytest.raises(TrainingInterrupted, match="interrupted in epoch 1 of 3.*checkpoint .* written") as info:
        case.fit(model)
    assert info.value.checkpoint == list_checkpoints(tmp_path)[0]
    assert len(model.loss_history) == 0               # no epoch finished
    resumed = case.resume(tmp_path)
    assert type(resumed) is case.cls
    np.testing.assert_array_equal(resumed.W_in, reference.W_in)
    np.testing.assert_array_equal(resumed.W_out, reference.W_out)
    assert resumed.loss_history == reference.loss_history
    assert resumed.last_report.epochs == 3


def test_ctrl_c_as_the_last_chunk_ends_completes_the_run(case, tmp_path):
    counter = _CtrlC(at=0)
    reference = _reference(case, callbacks=[counter])          # counts the run's chunks
    model = case.make(epochs=3, callbacks=[_CtrlC(at=counter.batches)], checkpoint_dir=tmp_path,
                      **case.small_chunks)
    case.fit(model)                                             # no TrainingInterrupted: nothing was left
    np.testing.assert_array_equal(model.W_in, reference.W_in)
    assert model.last_report.epochs == 3
    _, config, _, _ = checkpoint.read_latest(tmp_path)
    assert config["checkpoint"]["position"]["finished"]


def test_periodic_checkpoints_survive_a_crash(case, tmp_path):
    reference = _reference(case)
    every = "%d units" % (reference.last_report.words // 3 // 4 + 1)     # about 4 checkpoints an epoch
    model = case.make(epochs=3, callbacks=[_Crash(at=13)], checkpoint_dir=tmp_path, checkpoint_every=every,
                      **case.small_chunks)
    with pytest.raises(SystemError, match="simulated crash"):
        case.fit(model)
    assert len(list_checkpoints(tmp_path)) == checkpoint.KEEP        # older ones are removed
    resumed = case.resume(tmp_path)
    np.testing.assert_array_equal(resumed.W_in, reference.W_in)
    np.testing.assert_array_equal(resumed.W_out, reference.W_out)


def test_a_finished_run_is_not_trained_again(case, tmp_path):
    done = case.fit(case.make(epochs=2, checkpoint_dir=tmp_path))
    again = case.resume(tmp_path)
    np.testing.assert_array_equal(again.W_in, done.W_in)
    assert again.loss_history == done.loss_history


def test_a_checkpoint_loads_as_a_model(case, tmp_path):
    model = case.fit(case.make(epochs=2, checkpoint_dir=tmp_path))
    loaded = persist.load(list_checkpoints(tmp_path)[0])
    assert type(loaded) is case.cls
    np.testing.assert_array_equal(loaded.W_in, model.W_in)


def test_resume_refuses_other_parameters(case, tmp_path):
    case.fit(case.make(epochs=2, checkpoint_dir=tmp_path))
    with pytest.raises(CheckpointError, match=r"other parameters: vector_size=\d+ here"):
        case.resume(tmp_path, vector_size=case.make().vector_size + 1)
    case.resume(tmp_path, workers=2)          # threads may change


def test_resume_refuses_other_data(tmp_path):
    case = ExtremeClassifierCase()
    model = case.make(epochs=3, callbacks=[_CtrlC(at=3)], checkpoint_dir=tmp_path, **case.small_chunks)
    with pytest.raises(TrainingInterrupted):
        case.fit(model)
    from embkit import ExtremeClassifier
    X = case.X.copy()
    X.data[0] += 1.0
    with pytest.raises(CheckpointError, match="training data differs"):
        ExtremeClassifier.resume(tmp_path, X, case.Y)


def test_resume_without_a_checkpoint_or_of_another_kind(case, tmp_path):
    with pytest.raises(CheckpointError, match="does not exist"):
        case.resume(tmp_path / "missing")
    with pytest.raises(CheckpointError, match="holds no checkpoint"):
        case.resume(tmp_path)
    other = next(c for c in CASES if c.cls is not case.cls)
    other.fit(other.make(epochs=1, checkpoint_dir=tmp_path))
    with pytest.raises(CheckpointError, match="checkpoint of a %s, not of a %s"
                       % (other.cls.__name__, case.cls.__name__)):
        case.resume(tmp_path)


def test_a_damaged_checkpoint_falls_back_to_the_previous(case, tmp_path, caplog):
    reference = _reference(case)
    model = case.make(epochs=3, callbacks=[_Crash(at=13)], checkpoint_dir=tmp_path, checkpoint_every="1 units",
                      **case.small_chunks)
    with pytest.raises(SystemError):
        case.fit(model)
    newest, previous = list_checkpoints(tmp_path)
    with zipfile.ZipFile(newest) as zf:           # the middle of W_in's bytes (a byte a reader checks)
        member = zf.getinfo("W_in.npy")
    with open(newest, "r+b") as fh:               # flip its bits in the newest file
        fh.seek(member.header_offset + 26)
        name_length, extra_length = struct.unpack("<HH", fh.read(4))
        fh.seek(member.header_offset + 30 + name_length + extra_length + member.compress_size // 2)
        byte = fh.read(1)
        fh.seek(-1, os.SEEK_CUR)
        fh.write(bytes([byte[0] ^ 0xFF]))
    with caplog.at_level("WARNING", logger="embkit.core.checkpoint"):
        resumed = case.resume(tmp_path)
    assert os.path.basename(newest) in caplog.text and "damaged" in caplog.text
    np.testing.assert_array_equal(resumed.W_in, reference.W_in)


def test_a_checkpoint_from_another_version_is_refused(tmp_path):
    case = CASES[1]
    case.fit(case.make(epochs=1, checkpoint_dir=tmp_path))
    path = list_checkpoints(tmp_path)[0]
    config, words, arrays = persist.load_archive(path)
    config["checkpoint"]["version"] = 99
    persist.save_archive(path, {k: v for k, v in config.items() if not k.startswith("format")}, words, arrays)
    with pytest.raises(CheckpointError, match="another embkit checkpoint version"):
        case.resume(tmp_path)


@pytest.mark.parametrize("sampler", ["lsh", "kernel"])
def test_adaptive_sampler_state_resumes_exactly(sampler, tmp_path):
    case = ExtremeClassifierCase()
    params = dict(sampler=sampler, loss="sampled_softmax", heads=())     # every epoch runs (no blend to stop it)
    reference = _reference(case, **params)
    model = case.make(epochs=3, callbacks=[_CtrlC(at=11)], checkpoint_dir=tmp_path, **case.small_chunks, **params)
    with pytest.raises(TrainingInterrupted):
        case.fit(model)
    resumed = case.resume(tmp_path)
    np.testing.assert_array_equal(resumed.W_out, reference.W_out)


def test_validation_state_resumes(tmp_path):
    import scipy.sparse as sp
    from embkit import ItemEmbedding
    train = sp.random(30, 30, density=0.3, format="csr", random_state=1) * 10
    val = sp.random(30, 30, density=0.1, format="csr", random_state=2) * 3
    params = dict(vector_size=8, epochs=4, workers=1, seed=3, progress=False, chunk_pairs=200)
    reference = ItemEmbedding(**params).fit(train, validation=val, metric="prec5")
    model = ItemEmbedding(callbacks=[_CtrlC(at=12)], checkpoint_dir=tmp_path, **params)
    with pytest.raises(TrainingInterrupted):
        model.fit(train, validation=val, metric="prec5")
    resumed = ItemEmbedding.resume(tmp_path, train, validation=val)
    assert resumed.history == reference.history and resumed.best_epoch == reference.best_epoch
    np.testing.assert_array_equal(resumed.W_in, reference.W_in)


def test_without_a_checkpoint_dir_ctrl_c_says_how_to_get_one():
    case = CASES[0]
    model = case.make(epochs=2, callbacks=[_CtrlC(at=2)], **case.small_chunks)
    with pytest.raises(TrainingInterrupted, match="no checkpoint written: set checkpoint_dir= to be able"):
        case.fit(model)
    assert np.all(np.isfinite(model.W_in))


def test_second_ctrl_c_stops_at_once():
    with stop_on_sigint() as stop:
        os.kill(os.getpid(), signal.SIGINT)
        assert stop.requested
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):          # the handler runs at the next bytecode boundaries
                pass
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_checkpoint_every_is_checked():
    case = CASES[1]
    for bad in (0, -5, "often", "5 parsecs"):
        with pytest.raises(ValueError, match="checkpoint_every"):
            case.make(checkpoint_every=bad)


def test_killed_process_resumes(tmp_path):
    """SIGKILL while a child trains with checkpoints every few chunks; the run resumes from what is on disk."""
    corpus = tmp_path / "corpus.txt"
    rng = np.random.default_rng(5)
    words = ["w%d" % i for i in range(300)]
    corpus.write_text("\n".join(" ".join(rng.choice(words, 20)) for _ in range(20000)))
    script = textwrap.dedent("""
        import sys
        from embkit import Word2Vec
        class Tell:
            n = 0
            def on_batch_end(self, model):
                self.n += 1
                if self.n == 12:
                    print("ready", flush=True)
        Word2Vec(corpus_file=sys.argv[1], vector_size=16, min_count=1, epochs=50, workers=1, chunk_tokens=5000,
                 checkpoint_dir=sys.argv[2], checkpoint_every="20000 words", callbacks=[Tell()])
    """)
    child = subprocess.Popen([sys.executable, "-c", script, str(corpus), str(tmp_path / "ckpt")],
                             stdout=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=REPO))
    assert child.stdout.readline().strip() == b"ready"
    child.kill()
    child.wait()
    from embkit import Word2Vec
    assert list_checkpoints(tmp_path / "ckpt")
    resumed = Word2Vec.resume(tmp_path / "ckpt", epochs=50)
    assert resumed.last_report.epochs == 50 and np.all(np.isfinite(resumed.wv.vectors))
    leftovers = [f for f in os.listdir(tmp_path / "ckpt") if f.startswith(".tmp-")]
    assert len(leftovers) <= 1        # at most the file the kill interrupted, never read as a checkpoint
