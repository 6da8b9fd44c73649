"""One validation of parameters wherever they come from: every invalid value of ``bad_params.CASES`` is a
ValueError naming the parameter, from the constructor, from a model archive's config.json and from a
checkpoint's (naming the file too), never an OverflowError, MemoryError or AttributeError later on."""
import logging

import pytest

from bad_params import CASES, outcome


@pytest.fixture(autouse=True)
def _quiet(caplog):
    caplog.set_level(logging.ERROR)


def _id(case):
    return "%s-%s-%r" % case


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_constructor_names_the_parameter(case):
    result, message = outcome(*case, None, "constructor")
    assert result == "named", message


@pytest.mark.parametrize("source", ["archive", "checkpoint"])
@pytest.mark.parametrize("case", [c for c in CASES if c[1] in ("window", "negative", "loss", "cbow_mean", "vector_size",
                                                                "seed", "tau", "alpha")],
                         ids=_id)
def test_a_file_names_the_file_and_the_parameter(case, source, tmp_path):
    result, message = outcome(*case, str(tmp_path), source)
    assert result in ("named", "skip"), message


def test_the_named_values_of_the_issue():
    from embkit import Word2Vec
    for param, value in (("window", 2 ** 63), ("negative", 2 ** 40), ("vector_size", 10 ** 12), ("loss", 0),
                         ("cbow_mean", float("-inf"))):
        with pytest.raises(ValueError, match=param):
            Word2Vec(**{param: value})
