"""The contract every embkit model keeps, tested once for all of them (implicit's ``RecommenderBaseTestMixin``
pattern): seeded single-thread runs are bit-identical, save/load round-trips, bad parameters name the
parameter, callbacks fire in gensim's order, progress can be silenced, and the loss is reported per epoch.

A new model is covered by adding one :class:`~_models.ModelCase` (how to build it, fit it, and what it
predicts) to ``tests/_models.py``.
"""
import copy
import pickle

import numpy as np
import pytest

from _models import CASES
from embkit.core import persist
from embkit.core.base import EmbeddingModel
from embkit.core.training import CALLBACK_EVENTS


@pytest.fixture(params=CASES, ids=lambda case: case.name)
def case(request):
    return request.param


def pickle_round_trip(model):
    return pickle.loads(pickle.dumps(model))


def _same(a, b):
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def test_every_model_kind_is_covered():
    kinds = {case.cls for case in CASES}
    assert kinds == {cls for cls in persist.MODEL_KINDS.values() if issubclass(cls, EmbeddingModel)}


def test_seeded_single_thread_runs_are_bit_identical(case):
    a = case.outputs(case.fit(case.make()))
    b = case.outputs(case.fit(case.make()))
    assert _same(a, b)
    c = case.outputs(case.fit(case.make(seed=4)))
    assert not np.array_equal(a[0], c[0])


def test_save_load_round_trip(case, tmp_path):
    model = case.fit(case.make(callbacks=[_Recorder()]))
    path = tmp_path / "model.embkit"
    model.save(path)
    for loader in (case.cls.load, EmbeddingModel.load, persist.load):
        loaded = loader(path)
        assert type(loaded) is case.cls
        assert loaded.get_params() == model.get_params()
        assert repr(loaded) == repr(model)
        assert _same(case.outputs(loaded), case.outputs(model))
        assert loaded.callbacks == () and loaded.progress is False      # runtime settings are not saved


@pytest.mark.parametrize("clone", [pickle_round_trip, copy.deepcopy], ids=["pickle", "deepcopy"])
def test_a_pickled_or_copied_model_trains_on_and_saves_identically(case, clone, tmp_path):
    model = case.fit(case.make())
    other = clone(model)
    assert type(other) is case.cls and other.get_params() == model.get_params()
    assert _same(case.outputs(other), case.outputs(model))
    case.train_on(model)
    case.train_on(other)
    assert _same(case.outputs(other), case.outputs(model))
    model.save(tmp_path / "a.embkit")
    other.save(tmp_path / "b.embkit")
    a, b = persist.load(tmp_path / "a.embkit"), persist.load(tmp_path / "b.embkit")
    assert a.get_params() == b.get_params() and _same(case.outputs(a), case.outputs(b))


def test_loading_another_kind_is_refused(case, tmp_path):
    path = tmp_path / "model.embkit"
    case.fit(case.make()).save(path)
    other = next(c.cls for c in CASES if c.cls is not case.cls)
    with pytest.raises(ValueError, match="holds a %s model, not %s" % (case.cls.__name__, other.__name__)):
        other.load(path)


def test_untrained_model_cannot_be_saved(case, tmp_path):
    with pytest.raises(RuntimeError, match="not trained"):
        case.make().save(tmp_path / "m.embkit")


BAD = [("vector_size", 0), ("epochs", 0), ("workers", 0), ("negative", -1), ("seed", -1), ("alpha", 0.0),
       ("alpha", float("nan")), ("min_alpha", 10.0), ("progress", "yes"), ("loss", "no_such_loss"),
       ("sampler", "no_such_sampler")]


@pytest.mark.parametrize("name, value", BAD, ids=["%s=%r" % b for b in BAD])
def test_bad_parameters_name_the_parameter(case, name, value):
    with pytest.raises(ValueError, match=name.split("_")[0] if name in ("loss", "sampler") else name):
        case.make(**{name: value})


def test_bad_chunk_size_and_callbacks_are_refused(case):
    with pytest.raises(ValueError, match=case.chunk_param):
        case.make(**{case.chunk_param: 0})
    with pytest.raises(ValueError, match="callbacks"):
        case.make(callbacks=[object()])


def test_sampler_for_a_loss_without_negatives_is_refused(case):
    with pytest.raises(ValueError, match="full_softmax loss draws no negatives"):
        case.make(loss="full_softmax", sampler="uniform")


class _Recorder:
    """A gensim-style callback that records what it is called with."""

    def __init__(self, fail_at=None):
        self.events, self.models, self.fail_at = [], set(), fail_at

    def __getattr__(self, name):
        if name not in CALLBACK_EVENTS:
            raise AttributeError(name)

        def event(model):
            self.events.append(name)
            self.models.add(id(model))
            if name == self.fail_at:
                raise KeyError("stop here")
        return event


def test_callbacks_fire_in_order(case):
    recorder = _Recorder()
    model = case.fit(case.make(epochs=2, callbacks=[recorder]))
    assert recorder.models == {id(model)}
    events = recorder.events
    assert events[0] == "on_train_begin" and events[-1] == "on_train_end"
    epochs = [i for i, e in enumerate(events) if e == "on_epoch_begin"]
    assert len(epochs) == 2 and events.count("on_epoch_end") == 2
    for start in epochs:      # each epoch: begin, then batches in begin/end pairs, then end
        end = events.index("on_epoch_end", start)
        batches = events[start + 1:end]
        assert batches and batches == ["on_batch_begin", "on_batch_end"] * (len(batches) // 2)


def test_a_failing_callback_stops_training_with_its_exception(case):
    recorder = _Recorder(fail_at="on_epoch_end")
    model = case.make(epochs=3, callbacks=[recorder])
    with pytest.raises(KeyError, match="stop here"):
        case.fit(model)
    assert recorder.events.count("on_epoch_begin") == 1           # stopped after the first epoch
    assert np.all(np.isfinite(model.W_in)) and np.all(np.isfinite(model.W_out))
    assert len(model.loss_history) == 1


def test_loss_is_reported_per_epoch(case):
    model = case.fit(case.make(epochs=3, **case.every_epoch))
    assert len(model.loss_history) == 3 and len(model.last_report.epoch_loss) == 3
    assert all(np.isfinite(v) and v > 0 for v in model.loss_history)
    assert model.get_latest_training_loss() == model.loss_history[-1]
    assert isinstance(model.get_latest_training_loss(), float)


def test_progress_can_be_silenced(case, capfd):
    case.fit(case.make(progress=False))
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    case.fit(case.make(progress=True))
    assert capfd.readouterr().err != ""          # the bar goes to stderr when asked for


def test_repr_names_the_objective(case):
    model = case.make(loss="sgns", sampler="uniform")
    text = repr(model)
    assert text.startswith(case.cls.__name__ + "<") and "loss=sgns" in text and "sampler=uniform" in text
    assert "sampler=-" in repr(case.make(loss="full_softmax", negative=0))
