"""Decompression bombs in model archives: refused before they are inflated, and at what memory.

Each bomb is a valid small Word2Vec archive with one member replaced by a deflated member of ``--gib`` GiB
of zeros (about 1 MB of deflate per GiB):

``W_in``
    ``W_in.npy`` declaring a table of that size (the vocabulary has 4 words).
``vocab``
    ``vocab.json`` of that size (``["a", "a", ...``).
``sampler``
    An extra array ``sampler.nodes.npy`` of that size in a checkpoint.

Each is loaded in a fresh process (``embkit.core.persist.load``); the table gives the error, the peak RSS
of the process (``VmHWM``) and its RSS before the load (after importing embkit and numpy).  The ``W_in``
bomb is loaded a second time with the ratio bound lifted, to show that its declared shape alone refuses it
before it is inflated.

Usage::

    python -m eval.robustness.archive_bomb --gib 2
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import zipfile

import numpy as np

_CHILD = """
import sys
from embkit.core import persist, safe_zip
import embkit.text.word2vec  # noqa: F401 - the model class, imported before the baseline
safe_zip.MAX_RATIO = int(sys.argv[2])
def rss(field):
    with open("/proc/self/status") as fh:
        return next(int(l.split()[1]) // 1024 for l in fh if l.startswith(field))
before = rss("VmRSS:")
try:
    persist.load(sys.argv[1])
    outcome = "LOADED"
except ValueError as exc:
    outcome = str(exc)
print(before, rss("VmHWM:"), outcome.replace(sys.argv[1], "<archive>"))
"""


def _small_archive(path, checkpoint=False):
    from embkit import Word2Vec
    sentences = [["a", "b", "c", "d"]] * 5
    if checkpoint:
        folder = path + ".d"
        Word2Vec(sentences, vector_size=100, min_count=1, epochs=1, workers=1, checkpoint_dir=folder)
        from embkit.core.checkpoint import list_checkpoints
        os.replace(list_checkpoints(folder)[0], path)
        return
    Word2Vec(sentences, vector_size=100, min_count=1, epochs=1, workers=1).save(path)


def _zeros(fh, nbytes, head=b""):
    fh.write(head)
    block = bytes(1 << 24)
    left = nbytes - len(head)
    while left > 0:
        fh.write(block[:min(left, len(block))])
        left -= len(block)


def _with_bomb(src, dst, member, nbytes, extra_array=False):
    """``src`` rewritten to ``dst`` with ``member`` (a ``.npy`` or JSON name) a deflated run of zeros."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED, allowZip64=True) as zout:
        for info in zin.infolist():
            body = zin.read(info.filename)
            if info.filename == "config.json" and extra_array:
                config = json.loads(body)
                config["arrays"] = sorted(config["arrays"] + [member[:-len(".npy")]])
                body = json.dumps(config).encode()
            if info.filename != member:
                zout.writestr(info.filename, body)
        info = zipfile.ZipInfo(member)
        info.compress_type = zipfile.ZIP_DEFLATED
        with zout.open(info, "w", force_zip64=True) as out:
            if member.endswith(".npy"):
                rows = nbytes // (4 * 100)
                header = {"descr": "<f4", "fortran_order": False, "shape": (rows, 100)}
                head = _npy_header(header)
                _zeros(out, len(head) + rows * 400, head)
            else:
                out.write(b"[" + b'"a",' * (nbytes // 4) + b'"a"]')


def _npy_header(header):
    import io
    buf = io.BytesIO()
    np.lib.format.write_array_header_2_0(buf, header)
    return buf.getvalue()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gib", type=float, default=2.0, help="inflated size of each bomb, GiB")
    args = p.parse_args(argv)
    nbytes = int(args.gib * (1 << 30))
    print("| bomb | archive MB | inflated GiB | RSS before load MB | peak RSS MB | outcome |")
    print("|---|--:|--:|--:|--:|---|")
    with tempfile.TemporaryDirectory() as d:
        from embkit.core.safe_zip import MAX_RATIO
        for name, member, checkpoint, extra, ratio in (
                ("W_in", "W_in.npy", False, False, MAX_RATIO), ("W_in, no ratio bound", "W_in.npy", False, False, 10 ** 9),
                ("vocab", "vocab.json", False, False, MAX_RATIO),
                ("sampler", "sampler.nodes.npy", True, True, MAX_RATIO)):
            small, bomb = os.path.join(d, member + "-small.embkit"), os.path.join(d, member + ".embkit")
            if not os.path.exists(bomb):
                _small_archive(small, checkpoint)
                _with_bomb(small, bomb, member, nbytes, extra)
            out = subprocess.run([sys.executable, "-c", _CHILD, bomb, str(ratio)], capture_output=True, text=True,
                                 env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
            before, peak, outcome = (out.stdout.strip().split(" ", 2) + ["", "", out.stderr[-300:]])[:3]
            print("| %s | %.1f | %.2f | %s | %s | %s |" % (name, os.path.getsize(bomb) / 1e6, args.gib, before, peak,
                                                      outcome[:160].replace("|", "/")), flush=True)


if __name__ == "__main__":
    main()
