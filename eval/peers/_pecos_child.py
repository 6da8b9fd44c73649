"""Child process of :func:`eval.peers.xc.run_pecos`: PECOS XR-Linear on matrices read from a ``.npz`` file.

Usage: ``python -m eval.peers._pecos_child IN.npz OUT.npz PARAMS_JSON``, run with the interpreter that has
``libpecos`` (its release pins numpy < 2 and scipy < 1.14, so it may live in its own environment).  This module
imports only numpy, scipy and pecos.  ``IN.npz`` holds the CSR parts of ``X`` (train features), ``Y`` (train
labels) and ``T`` (test features); ``PARAMS_JSON`` holds ``threads``, ``k`` and ``normalize`` (scale every row
to unit L2 norm first, as PECOS's own data sets are).  Training is XR-Linear's pipeline with its defaults:
PIFA label embeddings, hierarchical k-means of the labels, then the linear rankers of every level; it is timed
as a whole.  Prediction of the whole test set (top ``k``, the default beam) is timed.  ``OUT.npz`` gets the
top labels (``-1`` where fewer) and scores; stdout's last line is the JSON of the seconds and the version.
"""
import json
import sys
import time

import numpy as np
import scipy.sparse as sp


def _csr(arrays, name, dtype=np.float32):
    return sp.csr_matrix((arrays[name + "_data"].astype(dtype), arrays[name + "_indices"], arrays[name + "_indptr"]),
                         shape=tuple(arrays[name + "_shape"]))


def _unit_rows(X):
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    X = sp.csr_matrix(sp.diags(1.0 / norms) @ X, dtype=np.float32)
    X.sort_indices()
    return X


def main(in_path, out_path, params):
    from importlib.metadata import version
    from pecos.xmc import Indexer, LabelEmbeddingFactory
    from pecos.xmc.xlinear.model import XLinearModel
    params = json.loads(params)
    threads, k = int(params["threads"]), int(params["k"])
    arrays = np.load(in_path)
    X, Y, T = _csr(arrays, "X"), _csr(arrays, "Y"), _csr(arrays, "T")
    if params.get("normalize"):
        X, T = _unit_rows(X), _unit_rows(T)
    t0 = time.perf_counter()
    label_features = LabelEmbeddingFactory.create(Y, X, method="pifa", threads=threads)
    chain = Indexer.gen(label_features, threads=threads)
    model = XLinearModel.train(X, Y, C=chain, threads=threads)
    train_seconds = time.perf_counter() - t0
    t0 = time.perf_counter()
    P = sp.csr_matrix(model.predict(T, only_topk=k, threads=threads))
    predict_seconds = time.perf_counter() - t0
    top = np.full((T.shape[0], k), -1, dtype=np.int64)
    scores = np.zeros((T.shape[0], k), dtype=np.float32)
    for r in range(T.shape[0]):
        lo, hi = P.indptr[r], P.indptr[r + 1]
        best = np.argsort(-P.data[lo:hi], kind="stable")[:k]
        top[r, :len(best)] = P.indices[lo:hi][best]
        scores[r, :len(best)] = P.data[lo:hi][best]
    np.savez(out_path, top=top, scores=scores)
    print(json.dumps({"train": train_seconds, "predict": predict_seconds, "version": version("libpecos")}))


if __name__ == "__main__":
    main(*sys.argv[1:4])
