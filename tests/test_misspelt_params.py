"""A misspelt keyword or loss/sampler parameter is refused at construction with the nearest valid name, and
an unknown loss or sampler parameter lists the valid ones (every model, every registry entry)."""
import inspect

import pytest

from embkit import ExtremeClassifier, ItemEmbedding, Word2Vec
from embkit.core import registry

MODELS = [Word2Vec, ItemEmbedding, ExtremeClassifier]


def _misspelt(name):
    """``name`` with one inner letter dropped (``vector_size`` -> ``vecor_size``)."""
    middle = len(name) // 2
    return name[:middle] + name[middle + 1:]


def _keywords(cls):
    return [n for n, p in inspect.signature(cls.__init__).parameters.items() if n != "self" and len(n) >= 5]


@pytest.mark.parametrize("cls", MODELS, ids=lambda c: c.__name__)
def test_a_misspelt_keyword_gets_the_nearest_name(cls):
    for name in _keywords(cls):
        wrong = _misspelt(name)
        with pytest.raises(TypeError, match=r"^%s\(\) got unexpected keyword arguments: %s \(did you mean %s\?\)$"
                                            % (cls.__name__, wrong, name)):
            cls(**{wrong: 1})


@pytest.mark.parametrize("cls", MODELS, ids=lambda c: c.__name__)
def test_a_keyword_like_nothing_is_named_alone(cls):
    with pytest.raises(TypeError, match=r"unexpected keyword arguments: qqqq$"):
        cls(qqqq=1)


def _entries():
    return [("loss", e) for e in registry.LOSSES.values()] + [("sampler", e) for e in registry.SAMPLERS.values()]


@pytest.mark.parametrize("kind, entry", _entries(), ids=lambda v: v if isinstance(v, str) else v.name)
def test_registry_parameters_are_listed_and_misspellings_named(kind, entry):
    make = registry.make_loss if kind == "loss" else registry.make_sampler
    if not entry.params:
        with pytest.raises(TypeError, match="%s got unknown parameters: bogus; it takes no parameters" % entry.name):
            make(entry.name, None, 10, bogus=1)
        return
    with pytest.raises(TypeError, match="; its parameters: %s$" % ", ".join(entry.params)):
        make(entry.name, None, 10, bogus=1)
    longest = max(entry.params, key=len)
    if len(longest) >= 5:
        with pytest.raises(TypeError, match=r"%s \(did you mean %s\?\)" % (_misspelt(longest), longest)):
            make(entry.name, None, 10, **{_misspelt(longest): 1})


def test_unknown_loss_and_sampler_parameters_are_refused_at_construction():
    with pytest.raises(ValueError, match=r"ns_exponnt \(did you mean ns_exponent\?\); its parameters: ns_exponent"):
        Word2Vec(sampler="unigram", sampler_params={"ns_exponnt": 0.5})
    with pytest.raises(ValueError, match="lsh got unknown parameters: familly .did you mean family.*its parameters: "
                                         "family, K, L"):
        ItemEmbedding(sampler="lsh", sampler_params={"familly": "simhash"})
    with pytest.raises(ValueError, match=r"sampled_softmax got unknown parameters: remove_hits \(did you mean "
                                         r"remove_accidental_hits\?\); its parameters: remove_accidental_hits$"):
        ExtremeClassifier(loss="sampled_softmax", sampler="uniform", loss_params={"remove_hits": False})
