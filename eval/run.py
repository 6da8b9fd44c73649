"""List the benchmarks and reproductions in eval/, or run one.

Usage::

    python eval/run.py                      # name, folder and docstring summary of each
    python eval/run.py NAME [ARGS...]       # python -m eval.FOLDER.NAME ARGS...
    python eval/run.py FOLDER.NAME [ARGS...]   # a name that is in two folders
"""
import ast
import os
import sys

#: The repository root; the folders below ``eval/`` whose modules are listed.
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOLDERS = ("bench", "repro", "robustness", "peers", "studies")


def scripts():
    """``(name, folder, docstring summary)`` of every public module of :data:`FOLDERS` that runs as a script."""
    found = []
    for folder in FOLDERS:
        path = os.path.join(ROOT, "eval", folder)
        for file in sorted(os.listdir(path)):
            name, ext = os.path.splitext(file)
            if ext != ".py" or name.startswith("_"):
                continue
            with open(os.path.join(path, file), encoding="utf-8") as fh:
                source = fh.read()
            if 'if __name__ == "__main__":' in source:
                doc = ast.get_docstring(ast.parse(source)) or ""
                found.append((name, folder, " ".join(doc.split("\n\n")[0].split())))
    return found


def main(argv):
    found = scripts()
    if not argv or argv[0] in ("-h", "--help"):
        width = max(len(name) for name, _, _ in found)
        for name, folder, line in found:
            print("%-*s  %-10s  %s" % (width, name, folder, line))
        print("\npython eval/run.py NAME [ARGS...] runs python -m eval.FOLDER.NAME ARGS... "
              "(FOLDER.NAME for a name in two folders; NAME --help gives its options)")
        return 0
    matches = [(name, folder) for name, folder, _ in found if argv[0] in (name, folder + "." + name)]
    if len(matches) != 1:
        where = ", ".join("%s.%s" % (folder, name) for name, folder in matches)
        sys.exit("%s: %s" % (argv[0], "in several folders, name one: " + where if matches
                             else "no such benchmark or reproduction (python eval/run.py lists them)"))
    name, folder = matches[0]
    # the child finds the eval package from any working directory (relative paths in ARGS keep their meaning)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])))
    os.execve(sys.executable, [sys.executable, "-m", "eval.%s.%s" % (folder, name)] + argv[1:], env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
