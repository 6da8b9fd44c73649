"""``--checkpoint-dir``, Ctrl-C and ``--resume`` on the command line (real child processes and signals)."""
import os
import signal
import subprocess
import sys
import time

import numpy as np

from embkit import ExtremeClassifier, Word2Vec
from embkit.cli import main

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _corpus(tmp_path, lines=40000):
    rng = np.random.default_rng(7)
    words = ["w%d" % i for i in range(500)]
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(" ".join(rng.choice(words, 15)) for _ in range(lines)))
    return str(path)


def _train_args(corpus, ckpt, epochs=40):
    return ["train", "--corpus", corpus, "--vector-size", "16", "--min-count", "1", "--epochs", str(epochs),
            "--workers", "1", "--no-eval", "--checkpoint-dir", str(ckpt), "--checkpoint-every", "100k words"]


def test_ctrl_c_writes_a_checkpoint_and_resume_finishes(tmp_path):
    corpus, ckpt, out = _corpus(tmp_path), tmp_path / "ckpt", tmp_path / "model.embkit"
    env = dict(os.environ, PYTHONPATH=REPO)
    child = subprocess.Popen([sys.executable, "-m", "embkit", *_train_args(corpus, ckpt), "-o", str(out)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.time() + 60
    while not any(name.startswith("checkpoint-") for name in os.listdir(ckpt) if os.path.isdir(ckpt)) \
            if os.path.isdir(ckpt) else True:
        assert time.time() < deadline and child.poll() is None, child.communicate()
        time.sleep(0.05)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    lines = [line for line in err.splitlines() if line.startswith("embkit:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "training interrupted in epoch" in lines[0]
    assert "continue with: embkit train --resume %s" % ckpt in lines[0]
    assert not out.exists()
    # resume with a changed option that may change (threads) and one that may not
    assert main(["train", "--resume", str(ckpt), "--epochs", "3"]) == 2
    assert main(["train", "--resume", str(ckpt), "--workers", "2", "-q"]) == 0
    model = Word2Vec.load(str(out))       # the interrupted command's --output
    assert model.epochs == 40 and np.all(np.isfinite(model.wv.vectors))


def test_resume_needs_a_checkpointed_run(tmp_path, capsys):
    assert main(["train", "--resume", str(tmp_path)]) == 2
    assert "holds no checkpointed embkit run" in capsys.readouterr().err


def test_a_used_checkpoint_dir_is_refused_for_a_new_run(tmp_path, capsys):
    corpus, ckpt = _corpus(tmp_path, lines=300), tmp_path / "ckpt"
    assert main(_train_args(corpus, ckpt, epochs=1) + ["-q"]) == 0
    assert main(_train_args(corpus, ckpt, epochs=1) + ["-q"]) == 2
    assert "already holds checkpoints" in capsys.readouterr().err
    assert main(["items", "--resume", str(ckpt)]) == 2          # another command's run
    assert "resume it with embkit train --resume" in capsys.readouterr().err


def test_xc_resume_on_the_command_line(tmp_path, shared_data):
    root = os.path.join(shared_data, "extreme-classification")
    ckpt, out = tmp_path / "ckpt", tmp_path / "clf.embkit"
    args = ["xc", "--data", "bibtex", "--root", root, "--epochs", "2", "--workers", "1", "-q", "--vector-size", "16",
            "--checkpoint-dir", str(ckpt), "-o", str(out)]
    assert main(args) == 0
    first = ExtremeClassifier.load(str(out))
    assert main(["xc", "--resume", str(ckpt), "-o", str(tmp_path / "again.embkit"), "-q"]) == 0    # finished run
    again = ExtremeClassifier.load(str(tmp_path / "again.embkit"))
    np.testing.assert_array_equal(first.W_in, again.W_in)
