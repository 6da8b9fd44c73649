"""SIGKILL at random moments of saving and of checkpointed training; tabulates what is left on disk.

Two experiments, each with real processes (``tests/save_child.py``) killed by this one:

``saves``
    A process saving an 8 MB archive over and over (versions 1, 2, 1, ...) is killed after a random
    delay.  Counted: kills that landed mid-write (a temporary file is left), whether the target still
    loads as one whole version, and whether the next save leaves any temporary file.
``training``
    ``Word2Vec`` (5,000 words, dim 100: 4 MB checkpoints) training 3 epochs of a 1M-token corpus with a
    checkpoint every 50k words is killed at a random moment of the run after its first checkpoint
    (training, or writing a checkpoint: then a temporary file is left).  Counted: checkpoints left, whether
    each loads, whether ``Word2Vec.resume`` finishes the run, and the temporary files left after it.

Usage::

    python -m eval.robustness.kill_runs --saves 200 --training 30
"""
import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from eval.paths import REPO_ROOT
from tests import save_child

#: the child process, started from the repository root
CHILD = [sys.executable, "-m", "tests.save_child"]


def kill_saves(n, rng, folder):
    target = os.path.join(folder, "model.embkit")
    out = dict(kills=0, mid_write=0, whole_version=0, version_1=0, version_2=0, temps_after_next_save=0)
    for _ in range(n):
        proc = subprocess.Popen(CHILD + [target, "loop"], cwd=REPO_ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True)
        proc.stdout.readline()                      # a first version is complete
        time.sleep(rng.uniform(0.0, 0.25))
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        out["kills"] += 1
        out["mid_write"] += bool(save_child.temp_files(folder))
        try:
            version = save_child.check_version(target)
            out["whole_version"] += 1
            out["version_%d" % version] += 1
        except ValueError:
            pass
    nxt = subprocess.run(CHILD + [target, "once"], cwd=REPO_ROOT, capture_output=True, text=True)
    out["temps_after_next_save"] = len(json.loads(nxt.stdout))
    return out


def kill_training(n, rng, folder, vector_size=100, every="50k words"):
    from embkit.core import checkpoint, persist
    corpus = os.path.join(folder, "corpus.txt")
    save_child.write_corpus(corpus, n_tokens=1000000, n_words=5000)

    def start(k):
        ckpt, target = os.path.join(folder, "ckpt-%s" % k), os.path.join(folder, "model-%s.embkit" % k)
        proc = subprocess.Popen(CHILD + [target, "train", corpus, ckpt, str(vector_size), every],
                                cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while not checkpoint.list_checkpoints(ckpt) and proc.poll() is None:
            time.sleep(0.005)
        return proc, ckpt, target, time.perf_counter()

    proc, ckpt, _, began = start("calibration")       # how long a run goes on after its first checkpoint
    proc.wait()
    span = time.perf_counter() - began
    shutil.rmtree(ckpt, ignore_errors=True)
    out = dict(run_seconds_after_first_checkpoint=round(span, 1), kills=0, finished_before_kill=0,
               checkpoints_left=0, checkpoints_loading=0, killed_mid_checkpoint=0, resumed=0, temps_after_resume=0,
               first_error=None)
    for k in range(n):
        proc, ckpt, target, _ = start(k)
        time.sleep(rng.uniform(0.0, 0.9 * span))
        if proc.poll() is not None:
            out["finished_before_kill"] += 1
            shutil.rmtree(ckpt, ignore_errors=True)
            continue
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        out["kills"] += 1
        out["killed_mid_checkpoint"] += bool(save_child.temp_files(ckpt))
        for path in checkpoint.list_checkpoints(ckpt):
            out["checkpoints_left"] += 1
            try:
                persist.load_archive(path)
                out["checkpoints_loading"] += 1
            except ValueError as exc:
                out["first_error"] = out["first_error"] or str(exc)
        resumed = subprocess.run(CHILD + [target, "resume", ckpt], cwd=REPO_ROOT, capture_output=True,
                                 text=True)
        if resumed.returncode == 0:
            out["resumed"] += 1
            out["temps_after_resume"] += len(json.loads(resumed.stdout.strip().splitlines()[-1]))
        else:
            out["first_error"] = out["first_error"] or resumed.stderr[-300:]
        shutil.rmtree(ckpt, ignore_errors=True)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--saves", type=int, default=200, help="kills of the save loop")
    p.add_argument("--training", type=int, default=30, help="kills of checkpointed training")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", help="write the counts here")
    args = p.parse_args()
    rng = random.Random(args.seed)
    folder = tempfile.mkdtemp(prefix="embkit-kill-")
    try:
        result = {"saves": kill_saves(args.saves, rng, folder) if args.saves else None,
                  "training": kill_training(args.training, rng, folder) if args.training else None}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps(result, indent=1))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1)


if __name__ == "__main__":
    main()
