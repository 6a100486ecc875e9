"""Imports run downward only: ``uci`` -> ``engine`` -> ``nnue`` (design.md), tools subpackages included.

Read from the source with ``ast``, so an import inside a function counts as much as one at the top. Tools may
import their own layer and below. The compiled packages never import a tools subpackage: tools sit outside
the compile-cache hash, so run-time code that used one would not be recompiled when the tool changed.
"""
import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LAYERS = ("nnue", "engine", "uci")          # lowest first: a layer may import only itself and those before it


def _modules(path: Path):
    """(line, absolute module name) of every import in ``path``; relative imports resolved."""
    package = path.relative_to(REPO).with_suffix("").parts[:-1]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else ()
            name = ".".join((*base, *(node.module.split(".") if node.module else ())))
            if node.module is None:              # from . import x: each x may be a module
                for alias in node.names:
                    yield node.lineno, f"{name}.{alias.name}"
            else:
                yield node.lineno, name


def _sources(layer):
    return sorted((REPO / layer).rglob("*.py"))


def test_every_layer_and_its_tools_are_scanned():
    for layer in LAYERS:
        assert _sources(layer), layer
    assert any(p.parent.name == "tools" for p in _sources("nnue"))
    assert any(p.parent.name == "tools" for p in _sources("engine"))


def test_imports_run_downward_only():
    bad = []
    for i, layer in enumerate(LAYERS):
        above = set(LAYERS[i + 1:])
        for path in _sources(layer):
            for line, module in _modules(path):
                if module.split(".")[0] in above:
                    bad.append(f"{path.relative_to(REPO)}:{line} imports {module}")
    assert not bad, "upward imports:\n" + "\n".join(bad)


def test_compiled_packages_do_not_import_tools():
    bad = []
    for layer in ("nnue", "engine"):
        for path in _sources(layer):
            if "tools" in path.relative_to(REPO / layer).parts:
                continue
            for line, module in _modules(path):
                parts = module.split(".")
                if parts[0] in LAYERS and "tools" in parts[1:2]:
                    bad.append(f"{path.relative_to(REPO)}:{line} imports {module}")
    assert not bad, "run-time code importing a tool:\n" + "\n".join(bad)
