"""The package's shape: no import cycles, and every package imports only the layers below it.

The import graph is read from the source (every ``import`` and ``from ... import`` statement, including
those inside functions), so a lazy import cannot hide a cycle or an upward dependency.
"""
import ast
import os

import pytest

PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "embkit")

#: package -> the embkit packages its modules may import (besides its own and the top-level ``embkit``)
ALLOWED = {
    "_kernels": set(),
    "data": set(),
    "core": {"_kernels"},
    "cluster": {"core", "_kernels"},
    "evaluation": {"data"},
    "text": {"core", "cluster", "_kernels", "evaluation", "data"},
    "items": {"core", "cluster", "_kernels", "evaluation", "text", "data"},
    "xc": {"core", "_kernels", "evaluation", "data"},
    "cli": {"core", "cluster", "_kernels", "evaluation", "text", "items", "xc", "data"},
}


def _modules():
    """``{dotted name: path}`` of every Python and Cython module of the package."""
    root = os.path.dirname(PACKAGE)
    found = {}
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith((".py", ".pyx")):
                path = os.path.join(folder, name)
                dotted = os.path.relpath(path, root).rsplit(".", 1)[0].replace(os.sep, ".")
                found[dotted[:-len(".__init__")] if dotted.endswith(".__init__") else dotted] = path
    return found


def _imports(name, path, modules):
    """The package modules that module ``name`` imports."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    is_package = path.endswith("__init__.py")
    if path.endswith(".pyx"):      # Cython: only its Python-level imports are checked, line by line
        text = "\n".join(line for line in text.splitlines()
                         if line.startswith(("import ", "from ")) and " cimport " not in line)
    targets = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".") if is_package else name.split(".")[:-1]
                parts = parts[:len(parts) - (node.level - 1)]
                base = ".".join(parts + ([base] if base else []))
            candidates = [base] + ["%s.%s" % (base, alias.name) for alias in node.names]
        else:
            continue
        for target in candidates:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name and target != "embkit":
                targets.add(target)
    return targets


@pytest.fixture(scope="module")
def graph():
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _package(module):
    """The subpackage of ``embkit`` a module is in (None for the top-level modules)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and os.path.isdir(os.path.join(PACKAGE, parts[1])) else None


def test_no_import_cycles(graph):
    colour = {}
    cycles = []

    def visit(node, stack):
        colour[node] = "grey"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if colour.get(nxt) == "grey":
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in colour:
                visit(nxt, stack)
        stack.pop()
        colour[node] = "black"

    for node in sorted(graph):
        if node not in colour:
            visit(node, [])
    assert not cycles, "import cycles: %s" % "; ".join(" -> ".join(c) for c in cycles)


def test_packages_import_only_the_layers_below(graph):
    packages = {_package(m) for m in graph} - {None}
    assert packages <= set(ALLOWED), "a package without a layer rule: %s" % (packages - set(ALLOWED))
    wrong = []
    for module, targets in graph.items():
        own = _package(module)
        if own is None:
            continue
        for target in targets:
            other = _package(target)
            if other not in (None, own) and other not in ALLOWED[own]:
                wrong.append("%s -> %s" % (module, target))
    assert not wrong, "upward or sideways imports: %s" % ", ".join(sorted(wrong))


def test_the_checker_sees_lazy_imports(graph):
    # the items package reads text corpora inside a function: the graph must still hold that edge
    assert any(t.startswith("embkit.text") for t in graph["embkit.items.cooccurrence"])
