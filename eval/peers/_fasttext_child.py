"""Child process of ``eval.peers.xc``: train fastText supervised on a file and write the top-k labels of another.

Usage (by ``eval.peers.xc.train_and_predict``, with ``MALLOC_PERTURB_=255`` in the environment)::

    python -m eval.peers._fasttext_child TRAIN TEST OUT PARAMS_JSON

``PARAMS_JSON`` holds fastText's keyword arguments plus ``k``.  Only the standard library and fastText are
imported, so the child starts quickly.
"""
import json
import sys
import time

LABEL = "__label__"
#: Larger input weights mean stale memory got into the model (trained ones stay far below).
MAX_WEIGHT = 1e4


def fasttext_child(train_path, test_path, out_path, params_json):
    """Train on `train_path`, write the top-k labels of each line of `test_path` to `out_path`.

    Prints the wall-clock and CPU seconds of training and of prediction as JSON.
    """
    import fasttext

    params = json.loads(params_json)
    k = params.pop("k")
    t0, c0 = time.perf_counter(), time.process_time()
    model = fasttext.train_supervised(input=train_path, verbose=0, **params)
    train_seconds = (time.perf_counter() - t0, time.process_time() - c0)
    largest = float(abs(model.get_input_matrix()).max())
    if not largest < MAX_WEIGHT:  # also catches NaN
        raise SystemExit("fastText returned corrupted embeddings (largest |weight| %g)" % largest)
    with open(test_path, encoding="ascii") as fh:
        lines = fh.read().splitlines()
    filled = [i for i, line in enumerate(lines) if line.strip()]  # a point without features gets nothing
    t0, c0 = time.perf_counter(), time.process_time()
    predicted, _ = model.predict([lines[i] for i in filled], k=k, threshold=-1.0)
    predict_seconds = (time.perf_counter() - t0, time.process_time() - c0)
    labels = [[] for _ in lines]
    for i, row in zip(filled, predicted):
        labels[i] = row
    with open(out_path, "w", encoding="ascii") as fh:
        for row in labels:
            fh.write(" ".join(lab[len(LABEL):] for lab in row) + "\n")
    print(json.dumps({"train": train_seconds, "predict": predict_seconds}))


if __name__ == "__main__":
    fasttext_child(*sys.argv[1:5])
