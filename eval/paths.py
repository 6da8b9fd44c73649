"""Where the benchmarks find things: the repository root and the shared data folder."""
import os

#: The repository root (the folder that holds ``eval/``): the working directory of child processes.
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def shared_data(*parts):
    """A path in the shared data folder.

    The folder is ``$EMBKIT_SHARED_DATA`` (a relative path is taken from the repository root), else
    ``../shared/data`` next to the repository, as the test suite finds it.
    """
    root = os.environ.get("EMBKIT_SHARED_DATA") or os.path.join("..", "shared", "data")
    return os.path.normpath(os.path.join(REPO_ROOT, root, *parts))
