"""Invalid parameter values, and the three ways a model meets one: its constructor, a model archive whose
``config.json`` holds it, and a checkpoint whose ``config.json`` holds it.  Every one must be a ValueError
naming the parameter (and, from a file, the file).  Used by ``tests/test_param_checks.py`` and by
``eval.robustness.bad_params``."""
import json
import os

import numpy as np

INF, NAN = float("inf"), float("nan")

#: (model class name, parameter, invalid value)
CASES = [
    ("Word2Vec", "window", 2 ** 63), ("Word2Vec", "window", 2 ** 31), ("Word2Vec", "window", 0),
    ("Word2Vec", "window", 2.5), ("Word2Vec", "negative", 2 ** 40), ("Word2Vec", "negative", 2 ** 31 - 1),
    ("Word2Vec", "negative", -1), ("Word2Vec", "vector_size", 10 ** 12), ("Word2Vec", "vector_size", 0),
    ("Word2Vec", "vector_size", "100"), ("Word2Vec", "loss", 0), ("Word2Vec", "loss", "nope"),
    ("Word2Vec", "cbow_mean", -INF), ("Word2Vec", "cbow_mean", 2), ("Word2Vec", "sg", NAN), ("Word2Vec", "hs", "x"),
    ("Word2Vec", "alpha", NAN), ("Word2Vec", "alpha", -0.1), ("Word2Vec", "alpha", 10 ** 400),
    ("Word2Vec", "min_alpha", 1.0), ("Word2Vec", "min_alpha", -1), ("Word2Vec", "sample", -1),
    ("Word2Vec", "sample", INF), ("Word2Vec", "ns_exponent", NAN), ("Word2Vec", "epochs", 0),
    ("Word2Vec", "epochs", 2 ** 31), ("Word2Vec", "workers", 0), ("Word2Vec", "workers", 10 ** 6),
    ("Word2Vec", "seed", -1), ("Word2Vec", "seed", 2 ** 64), ("Word2Vec", "min_count", -1),
    ("Word2Vec", "min_count", 2 ** 63), ("Word2Vec", "max_vocab_size", 0), ("Word2Vec", "max_final_vocab", -5),
    ("Word2Vec", "batch_words", 0), ("Word2Vec", "max_sentence_length", 2 ** 31), ("Word2Vec", "chunk_tokens", 0),
    ("Word2Vec", "hot_rows", -1), ("Word2Vec", "hot_rows", 2 ** 31), ("Word2Vec", "shrink_windows", "no"),
    ("Word2Vec", "compute_loss", NAN), ("Word2Vec", "null_word", 2), ("Word2Vec", "sorted_vocab", -1),
    ("Word2Vec", "sampler", 3), ("Word2Vec", "sampler", "nope"), ("Word2Vec", "loss_params", 3),
    ("Word2Vec", "loss_params", {"bogus": 1}), ("Word2Vec", "sampler_params", "x"),
    ("Word2Vec", "sampler_params", {"bogus": 1}), ("Word2Vec", "batch_size", 0), ("Word2Vec", "comment", 5),
    ("Word2Vec", "syncs_per_epoch", 0), ("Word2Vec", "exchange_share", 2), ("Word2Vec", "reconcile", "x"),
    ("Word2Vec", "staleness", 2),
    ("Word2Vec", "checkpoint_every", NAN), ("Word2Vec", "hashfxn", 3), ("Word2Vec", "callbacks", 3),
    ("ItemEmbedding", "vector_size", 2 ** 31), ("ItemEmbedding", "negative", 2 ** 40), ("ItemEmbedding", "loss", 0),
    ("ItemEmbedding", "chunk_pairs", 0), ("ItemEmbedding", "alpha", INF), ("ItemEmbedding", "seed", 1.5),
    ("ExtremeClassifier", "tau", NAN), ("ExtremeClassifier", "ensemble", 0), ("ExtremeClassifier", "solver", 0),
    ("ExtremeClassifier", "loss", 0), ("ExtremeClassifier", "negative", -1), ("ExtremeClassifier", "normalize", NAN),
    ("ExtremeClassifier", "label_bias", "x"), ("ExtremeClassifier", "vector_size", 10 ** 12),
    ("ExtremeClassifier", "hot_rows", -1),
]

SOURCES = ("constructor", "archive", "checkpoint")


def model_class(name):
    import embkit
    return getattr(embkit, name)


def _tiny_model(name, checkpoint_dir=None):
    import scipy.sparse as sp
    cls = model_class(name)
    kwargs = dict(vector_size=4, epochs=1, workers=1, negative=2, progress=False, checkpoint_dir=checkpoint_dir)
    if name == "Word2Vec":
        return cls([["a", "b", "c"], ["b", "c", "a"]] * 3, min_count=1, **kwargs)
    if name == "ItemEmbedding":
        return cls(**kwargs).fit(sp.csr_matrix(np.ones((4, 4))))
    X = sp.csr_matrix(np.eye(4, dtype=np.float32))
    return cls(**kwargs).fit(X, sp.csr_matrix(np.eye(4)))


def _edit_config(path, name, value):
    """Rewrite the archive ``path`` with ``params[name] = value`` in its config.json."""
    import io
    import zipfile
    with open(path, "rb") as fh:
        data = fh.read()
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            body = src.read(info.filename)
            if info.filename == "config.json":
                config = json.loads(body)
                config["params"][name] = value
                body = json.dumps(config).encode()
            dst.writestr(info.filename, body)
    with open(path, "wb") as fh:
        fh.write(out.getvalue())


def saved_with(name, param, value, directory, source):
    """A file holding a ``name`` model whose saved ``param`` is ``value``: ``(what to load, path named)``, or
    None when the parameter is not saved with a model (runtime parameters) or not JSON."""
    cls = model_class(name)
    if param in cls.RUNTIME_PARAMS or param not in cls._param_names():
        return None
    try:
        json.dumps(value)
    except TypeError:
        return None
    if source == "archive":
        path = os.path.join(directory, "model.embkit")
        _tiny_model(name).save(path)
        _edit_config(path, param, value)
        return path, path
    folder = os.path.join(directory, "checkpoints")
    _tiny_model(name, checkpoint_dir=folder)
    from embkit.core.checkpoint import list_checkpoints
    for path in list_checkpoints(folder):
        _edit_config(path, param, value)
    return folder, list_checkpoints(folder)[0]


def outcome(name, param, value, directory, source):
    """``("named", message)``, ``("skip", why)`` or ``(a bad outcome, message)`` for one case and source."""
    cls = model_class(name)
    try:
        if source == "constructor":
            named = None
            cls(**{param: value, "progress": False})
        else:
            made = saved_with(name, param, value, directory, source)
            if made is None:
                return "skip", "not saved with a model"
            target, named = made
            if source == "archive":
                cls.load(target)
            else:
                cls._open_checkpoint(target, {})      # what every model's resume() starts with
    except ValueError as exc:
        message = str(exc)
        ok = param in message and (named is None or named in message)
        return ("named" if ok else "unnamed"), message
    except Exception as exc:  # noqa: BLE001 - what escapes is the finding
        return "crash", "%s: %s" % (type(exc).__name__, exc)
    return "accepted", "no error"
