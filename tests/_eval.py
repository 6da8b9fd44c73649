"""The scripts of eval/ as the tests use them: child processes (``python -m eval...``), never imports."""
import os
import subprocess
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def eval_command(module, *args):
    """The command line of ``python -m eval.MODULE ARGS`` (``module`` as ``"bench.word2vec"``)."""
    return [sys.executable, "-m", "eval." + module] + [str(a) for a in args]


def run_eval(module, *args, env=None, timeout=600):
    """Run ``python -m eval.MODULE ARGS`` from the repository root; ``env`` adds to this environment.

    Returns the finished :class:`subprocess.CompletedProcess` (text stdout and stderr).
    """
    return subprocess.run(eval_command(module, *args), cwd=REPO_ROOT, env=dict(os.environ, **(env or {})),
                          capture_output=True, text=True, timeout=timeout)


def table_rows(text):
    """The rows of the markdown tables in ``text``, each a list of its stripped cells (separators left out)."""
    rows = []
    for line in text.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def run_xc_peers(train, test, folder, *args):
    """``eval.peers.xc`` on ``train`` and ``test`` (written to ``folder``) with ``args``.

    Returns
    -------
    dict
        ``{loss: {column: cell}}`` of the table it prints (``"P@1"``: a percentage as text, ...).
    """
    from embkit.xc.data import write_xc

    paths = [os.path.join(folder, name) for name in ("train.txt", "test.txt")]
    for path, data in zip(paths, (train, test)):
        write_xc(path, data)
    done = run_eval("peers.xc", "--train", paths[0], "--test", paths[1], *args)
    assert done.returncode == 0, done.stderr
    header, *rows = table_rows(done.stdout)
    return {row[1]: dict(zip(header, row)) for row in rows}
