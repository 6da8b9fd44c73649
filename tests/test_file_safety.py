"""Saving survives SIGKILL at any moment, a full disk and permission errors (real processes, real file systems).

The saving process is a child (``save_child.py``) that is killed at fixed points of a save (after the
temporary file is created, in the middle of writing a member, before the fsync, before and after the
rename) and at random times; a full disk is a small tmpfs (mounted in a private mount namespace, when
``unshare`` is allowed) and RLIMIT_FSIZE; permission errors are a read-only directory, a read-only file and
a read-only file system.  As root, permission bits do not stop writes, so the child then runs without
the capabilities that bypass them (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH).
"""
import ctypes
import errno
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import time

import pytest

from embkit.core import atomic

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import save_child  # noqa: E402

CHILD = os.path.join(HERE, "save_child.py")
REPO = os.path.dirname(HERE)
PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH = 24, 1, 2


def _env():
    return dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))


def run_child(*args, preexec_fn=None, prefix=()):
    return subprocess.run(list(prefix) + [sys.executable, CHILD] + [str(a) for a in args], env=_env(),
                          capture_output=True, text=True, timeout=120, preexec_fn=preexec_fn)


def _drop_dac_capabilities():
    """In the child, before exec: lose the capabilities with which root ignores permission bits."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def _unprivileged():
    """``preexec_fn`` that makes permission bits apply to the child (None when they already do)."""
    return _drop_dac_capabilities if os.geteuid() == 0 else None


# ----------------------------------------------------------------------------- SIGKILL

@pytest.mark.parametrize("point", save_child.KILL_POINTS)
def test_kill_at_each_point_of_a_save(tmp_path, point):
    target = str(tmp_path / "model.embkit")
    save_child.save(target, 1)
    killed = run_child(target, "killpoint", point)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert save_child.check_version(target) == (2 if point == "after_rename" else 1)
    left = save_child.temp_files(str(tmp_path))
    assert len(left) == (0 if point == "after_rename" else 1)
    nxt = run_child(target, "once")
    assert nxt.returncode == 0, nxt.stderr
    assert json.loads(nxt.stdout) == []          # the next save to the target removed the stale file
    assert save_child.check_version(target) == 3


def test_kill_while_saving_a_real_model(tmp_path):
    from embkit import Word2Vec
    target = str(tmp_path / "w2v.embkit")
    assert run_child(target, "word2vec", "none").returncode == 0
    before = Word2Vec.load(target).wv.vectors.copy()
    killed = run_child(target, "word2vec", "mid_member")
    assert killed.returncode == -signal.SIGKILL
    assert (Word2Vec.load(target).wv.vectors == before).all()
    assert run_child(target, "word2vec", "none").returncode == 0
    assert save_child.temp_files(str(tmp_path)) == []


def test_kill_at_random_times(tmp_path):
    """A child saving versions 1 and 2 in a loop, killed at random moments: the file is always one whole
    version, and one more save leaves no temporary file."""
    target = str(tmp_path / "model.embkit")
    rng = random.Random(0)
    for _ in range(4):
        proc = subprocess.Popen([sys.executable, CHILD, target, "loop"], env=_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        assert proc.stdout.readline().startswith("saved")    # a first version is complete
        time.sleep(rng.uniform(0.0, 0.2))
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
        assert save_child.check_version(target) in (1, 2)
    assert json.loads(run_child(target, "once").stdout) == []


def test_kill_during_training_with_checkpoints(tmp_path):
    """Killed at a random moment of a checkpointed run: every checkpoint left is whole, and resuming
    finishes the run and leaves no temporary file."""
    from embkit.core import checkpoint, persist
    corpus, ckpt, target = str(tmp_path / "corpus.txt"), str(tmp_path / "ckpt"), str(tmp_path / "model.embkit")
    save_child.write_corpus(corpus)
    proc = subprocess.Popen([sys.executable, CHILD, target, "train", corpus, ckpt], env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while len(checkpoint.list_checkpoints(ckpt)) < 2 and proc.poll() is None and time.time() < deadline:
        time.sleep(0.01)
    time.sleep(random.Random(1).uniform(0.0, 0.3))
    proc.kill()
    proc.communicate(timeout=60)
    for path in checkpoint.list_checkpoints(ckpt):
        persist.load_archive(path)                       # none half-written
    resumed = run_child(target, "resume", ckpt)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout.strip().splitlines()[-1]) == []
    assert persist.load(target).W_in.shape == (500, 32)


def test_a_save_in_progress_keeps_its_temporary_file(tmp_path):
    target = str(tmp_path / "model.embkit")
    with atomic.atomic_path(target) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(b"partial")
        assert atomic.remove_stale_temps(str(tmp_path), "model.embkit") == []     # locked: alive
        assert os.path.exists(tmp)
    stale = tmp_path / (".tmp-%s-model.embkit" % ("ab" * 6))
    stale.write_bytes(b"left by a killed process")
    other = tmp_path / (".tmp-%s-other.embkit" % ("cd" * 6))
    other.write_bytes(b"another target's")
    assert atomic.remove_stale_temps(str(tmp_path), "model.embkit") == [str(stale)]
    assert other.exists()                       # only the target's own temporary files


# ----------------------------------------------------------------------------- disk full

def _check_failed_save(report, codes):
    assert report["error"] is not None, report
    assert report["errno"] in codes, report
    assert "model.embkit" in report["message"] and "previous file is unchanged" in report["message"]
    assert report["version"] == 1 and report["unchanged"] and report["temps"] == []


def test_file_size_limit(tmp_path):
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
    result = run_child(tmp_path / "model.embkit", "fail", preexec_fn=limit)
    assert result.returncode == 0, result.stderr
    _check_failed_save(json.loads(result.stdout), (errno.EFBIG,))


def _in_private_mount(script, directory):
    """Run shell ``script`` (with $D the directory) in a private mount namespace; skip if not allowed."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare is not available")
    probe = subprocess.run(["unshare", "-m", "sh", "-c", 'mount -t tmpfs -o size=64k tmpfs "$0"', str(directory)],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip("cannot mount a tmpfs in a private mount namespace: %s" % probe.stderr.strip())
    return subprocess.run(["unshare", "-m", "sh", "-c", script, str(directory), sys.executable, CHILD],
                          env=_env(), capture_output=True, text=True, timeout=120)


def test_disk_full(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    result = _in_private_mount('mount -t tmpfs -o size=2m tmpfs "$0" && "$1" "$2" "$0/model.embkit" fail', mnt)
    assert result.returncode == 0, result.stderr
    _check_failed_save(json.loads(result.stdout), (errno.ENOSPC,))


def test_read_only_file_system(tmp_path):
    mnt = tmp_path / "ro"
    mnt.mkdir()
    script = ('mount -t tmpfs -o size=4m tmpfs "$0" && "$1" "$2" "$0/model.embkit" once small >/dev/null && '
              'mount -o remount,ro "$0" && "$1" "$2" "$0/model.embkit" fail keep')
    result = _in_private_mount(script, mnt)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["errno"] == errno.EROFS, report
    assert "model.embkit" in report["message"] and "previous file is unchanged" in report["message"]
    assert report["version"] == 1 and report["unchanged"] and report["temps"] == []


# ----------------------------------------------------------------------------- permissions

def _permission_child(target, mode_dir, mode_file):
    save_child.save(target, 1, save_child.SMALL_ROWS)
    os.chmod(target, mode_file)
    os.chmod(os.path.dirname(target), mode_dir)
    code = ("import sys; sys.path.insert(0, %r); import save_child\n"
            "try:\n    save_child.save(%r, 2)\nexcept OSError as exc:\n    print(type(exc).__name__, exc)\n"
            % (HERE, target))
    try:
        return subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True, timeout=120,
                              preexec_fn=_unprivileged())
    finally:
        os.chmod(os.path.dirname(target), 0o755)


def _skip_if_privileged(result):
    if "PermissionError" not in result.stdout and os.geteuid() == 0:
        pytest.skip("permission bits are not enforced here even without CAP_DAC_OVERRIDE")


@pytest.mark.parametrize("mode_dir, mode_file, says", [(0o555, 0o644, "previous file is unchanged"),
                                                      (0o777, 0o444, "not writable")],
                         ids=["read-only-directory", "read-only-file"])
def test_permission_denied(tmp_path, mode_dir, mode_file, says):
    target = str(tmp_path / "dir" / "model.embkit")
    os.mkdir(os.path.dirname(target))
    result = _permission_child(target, mode_dir, mode_file)
    _skip_if_privileged(result)
    assert result.stdout.startswith("PermissionError"), result.stdout + result.stderr
    assert target in result.stdout and says in result.stdout
    assert save_child.check_version(target) == 1
    assert save_child.temp_files(os.path.dirname(target)) == []
