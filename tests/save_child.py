"""A process that saves embkit archives, to be killed or starved by the file-safety tests.

Run as ``python save_child.py TARGET MODE [ARG]`` with the repository on ``PYTHONPATH`` (or as
``python -m tests.save_child TARGET MODE [ARG]`` from the repository root).  Version ``v`` of
the archive is a ``rows x 64`` float32 table filled with ``v`` (``check_version`` reads it back), written
through :func:`embkit.core.persist.save_archive`, the writer of every model and checkpoint.

Modes
-----
``loop``
    Save versions 1, 2, 1, 2, ... forever, printing ``saved <v>`` after each (killed at random times).
``killpoint NAME``
    Save version 2 over version 1 and SIGKILL itself at the point ``NAME`` of :data:`KILL_POINTS`.
``once [small]``
    Save version 3 (the "next run" after a kill) and print the temporary files left in the directory.
``fail [keep]``
    Save a small version 1 (``keep``: it is there already), then try a large version 2 that the environment
    (a full tmpfs, RLIMIT_FSIZE, a read-only file system) makes fail; print a JSON report of the error and
    of what is left.
``word2vec``
    Save a small trained Word2Vec model (``killpoint``-style ARG: a kill point, or ``none``).
``train CORPUS DIR [VECTOR_SIZE EVERY]``
    Train Word2Vec on CORPUS for 3 epochs with a checkpoint every EVERY (default 20k words) in DIR, then
    save to TARGET.
``resume DIR``
    Resume the run checkpointed in DIR, save the model to TARGET, print the temporary files left.
"""
import json
import os
import signal
import sys
import zipfile

import numpy as np

#: Where ``killpoint`` mode kills the process while saving.
KILL_POINTS = ("after_temp_created", "mid_member", "before_fsync", "before_rename", "after_rename")
SMALL_ROWS, LARGE_ROWS = 256, 32768          # 64 KB and 8 MB tables


def archive(version, rows):
    return ({"model": "test", "params": {}}, [], {"W_in": np.full((rows, 64), version, dtype=np.float32)})


def save(path, version, rows=LARGE_ROWS):
    from embkit.core import persist
    config, words, arrays = archive(version, rows)
    persist.save_archive(path, config, words, arrays)


def check_version(path):
    """The version a saved archive holds (ValueError if it is not one uniform version)."""
    from embkit.core import persist
    _, _, arrays = persist.load_archive(path)
    table = arrays["W_in"]
    if table.size == 0 or not (table == table.flat[0]).all():
        raise ValueError("%s mixes versions" % path)
    return int(table.flat[0])


def temp_files(directory):
    return sorted(n for n in os.listdir(directory) if n.startswith(".tmp-"))


def write_corpus(path, n_tokens=300000, n_words=500, seed=0):
    """A corpus for ``train`` mode: ``n_tokens`` Zipf-distributed words of ``n_words``, 20 a line."""
    rng = np.random.default_rng(seed)
    words = np.array(["w%d" % i for i in range(n_words)])
    tokens = words[rng.zipf(1.3, n_tokens) % n_words]
    with open(path, "w") as fh:
        for start in range(0, n_tokens, 20):
            fh.write(" ".join(tokens[start:start + 20]) + "\n")


def _die():
    os.kill(os.getpid(), signal.SIGKILL)


def arm(point):
    """Patch the save path so that the process kills itself at ``point``."""
    from embkit.core import atomic
    if point == "after_temp_created":
        real = atomic._create_temp
        atomic._create_temp = lambda *a: (real(*a), _die())[0]
    elif point == "mid_member":
        real_write = zipfile._ZipWriteFile.write
        calls = [0]

        def write(self, data):           # writes: config.json, vocab.json, then each .npy header and data
            calls[0] += 1
            if calls[0] == 4:
                _die()                   # the first table's header is written, its values are not
            return real_write(self, data)
        zipfile._ZipWriteFile.write = write
    elif point == "before_fsync":
        atomic.os.fsync = lambda fd: _die()
    elif point == "before_rename":
        atomic.os.replace = lambda a, b: _die()
    elif point == "after_rename":
        real_replace = os.replace
        atomic.os.replace = lambda a, b: (real_replace(a, b), _die())
    elif point != "none":
        raise ValueError("unknown kill point %r" % point)


def fail_report(path, write_small=True):
    """Save small (unless it exists), then large; report the error of the large save and what is left."""
    if write_small:
        save(path, 1, SMALL_ROWS)
    before = open(path, "rb").read()
    report = {"error": None}
    try:
        save(path, 2, LARGE_ROWS)
    except OSError as exc:
        report.update(error=type(exc).__name__, errno=exc.errno, message=str(exc))
    report.update(version=check_version(path), unchanged=open(path, "rb").read() == before,
                  temps=temp_files(os.path.dirname(os.path.abspath(path))))
    return report


def main(argv):
    path, mode = argv[1], argv[2]
    if mode == "loop":
        version = 1
        while True:
            save(path, version)
            print("saved %d" % version, flush=True)
            version = 3 - version
    elif mode == "killpoint":
        arm(argv[3])
        save(path, 2)
        print("survived", flush=True)
    elif mode == "once":
        save(path, 3 if len(argv) < 4 else 1, LARGE_ROWS if len(argv) < 4 else SMALL_ROWS)
        print(json.dumps(temp_files(os.path.dirname(os.path.abspath(path)))))
    elif mode == "fail":
        print(json.dumps(fail_report(path, write_small=len(argv) < 4 or argv[3] != "keep")))
    elif mode == "word2vec":
        from embkit import Word2Vec
        model = Word2Vec([["a", "b", "c", "d", "e"]] * 50, vector_size=32, min_count=1, epochs=1, workers=1,
                         negative=2)
        arm(argv[3])
        model.save(path)
        print("survived", flush=True)
    elif mode == "train":
        from embkit import Word2Vec
        size, every = (int(argv[5]), argv[6]) if len(argv) > 6 else (32, "20k words")
        model = Word2Vec(corpus_file=argv[3], vector_size=size, min_count=1, epochs=3, workers=1, negative=2,
                         checkpoint_dir=argv[4], checkpoint_every=every)
        model.save(path)
        print("done", flush=True)
    elif mode == "resume":
        from embkit import Word2Vec
        model = Word2Vec.resume(argv[3])
        model.save(path)
        print(json.dumps(temp_files(argv[3]) + temp_files(os.path.dirname(os.path.abspath(path)))))
    else:
        raise SystemExit("unknown mode %r" % mode)


if __name__ == "__main__":
    main(sys.argv)
