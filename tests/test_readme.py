"""The README's Python examples run as written (with small data in place of the downloads they mention)."""
import importlib.util
import os
import re

import pytest

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")


def _blocks():
    with open(README, encoding="utf-8") as fh:
        return re.findall(r"```python\n(.*?)```", fh.read(), flags=re.S)


def test_readme_has_the_examples():
    assert len(_blocks()) >= 4


def test_readme_python_examples_run(shared_data, tmp_path, monkeypatch):
    from embkit.text.corpora import resolve_corpus

    monkeypatch.chdir(tmp_path)
    movielens = os.path.join(shared_data, "movielens", "ml-100k")
    xc_sets = os.path.join(shared_data, "extreme-classification")
    if not (os.path.isdir(movielens) and os.path.isdir(xc_sets)):
        pytest.skip("MovieLens ml-100k or the XC sets are not in the shared data folder")
    substitutions = [
        ('resolve_corpus("text8")', repr(resolve_corpus(None))),       # the bundled sample instead of a download
        ('corpus_file="big.txt.gz", sg=1, epochs=5', "corpus_file=%r, sg=1, epochs=1" % resolve_corpus(None)),
        ("epochs=5, workers=2, progress=True", "epochs=1, workers=2, progress=False"),
        ('"path/to/ml-100k"', repr(movielens)),
        ('"path/to/xc-sets"', repr(xc_sets)),
        ("epochs=10)", "epochs=2, progress=False)"),
        ("tau=0.1, epochs=20)", "tau=0.1, epochs=2, progress=False)"),
        # the cluster example: a local cluster of two worker processes, the bundled corpus in place of S3
        ('corpus_file="corpus.txt.gz", workers=8)', "corpus_file=%r, workers=1, epochs=1)" % resolve_corpus(None)),
        ('Client("tcp://scheduler:8786")', 'Client(n_workers=2, threads_per_worker=1, dashboard_address=":0")'),
        ('corpus_file="s3://bucket/corpus/*.txt.gz", client=client, workers=8)',
         "corpus_file=%r, client=client, workers=1, epochs=1); client.close()" % resolve_corpus(None)),
    ]
    namespace = {}
    for block in _blocks():
        code = block
        for old, new in substitutions:
            code = code.replace(old, new)
        if "dask.distributed" in code and importlib.util.find_spec("distributed") is None:
            continue                                # the cluster example needs the [cluster] extra
        exec(compile(code, README, "exec"), namespace)     # noqa: S102 - the README's own examples
    assert os.path.exists("text8.embkit") and os.path.exists("text8.txt")
    assert os.listdir("ckpt")         # the checkpoint example ran
    assert namespace["result"].n_pairs == 2
