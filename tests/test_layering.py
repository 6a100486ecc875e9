"""The package's layers (``quantfish.runtime.layers.LAYERS``): each imports only itself and the layers below it,
and no two modules import each other, directly or round a longer cycle.

Read from the source with ``ast``, so an import inside a function counts as much as one at the top: a cycle
hidden by a lazy import is still a cycle. The developer scripts in ``tools/`` are outside the package and may
import anything of it; nothing in the package imports them.
"""
import ast
from pathlib import Path

from quantfish.runtime.layers import LAYERS

PACKAGE = Path(__file__).resolve().parent.parent / "quantfish"
FACES = {"quantfish", "quantfish.__main__", "quantfish._version"}     # the package's own front files


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, root: Path = PACKAGE.parent):
    """(line, absolute module name) of every import in ``path`` (a file below ``root``); relative imports
    resolved."""
    package = path.relative_to(root).with_suffix("").parts[:-1]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else ()
            name = ".".join((*base, *(node.module.split(".") if node.module else ())))
            yield node.lineno, name
            for alias in node.names:           # ``from quantfish.x import y``: y may be a module
                yield node.lineno, f"{name}.{alias.name}"


def _modules() -> dict:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _layer(module: str):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in LAYERS else None


def test_every_package_is_a_layer():
    packages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    assert packages <= set(LAYERS) | {"nets"}, f"packages outside LAYERS: {packages - set(LAYERS)}"
    assert {"runtime", "core", "nnue", "search", "uci", "cli"} <= packages


def test_imports_run_downward_only():
    bad = []
    for module, path in _modules().items():
        if module in FACES:
            continue
        own = LAYERS.index(_layer(module))
        for line, target in _imports(path):
            if target.split(".")[0] == "tools":
                bad.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports the developer script {target}")
            layer = _layer(target) if target.startswith("quantfish.") else None
            if layer is not None and LAYERS.index(layer) > own:
                bad.append(f"{path.relative_to(PACKAGE.parent)}:{line} ({LAYERS[own]}) imports {target} ({layer})")
    assert not bad, "upward imports:\n" + "\n".join(bad)


def test_no_import_cycles():
    modules = _modules()
    graph = {m: sorted({t for _, t in _imports(p) if t in modules and t != m}) for m, p in modules.items()}
    # A package's __init__ importing its own modules is how packages present themselves, not a cycle of design.
    for m in graph:
        graph[m] = [t for t in graph[m] if not t.startswith(m + ".")]
    colour, stack, cycles = {}, [], []

    def visit(m):
        colour[m] = 1
        stack.append(m)
        for t in graph[m]:
            if colour.get(t) == 1:
                cycles.append(stack[stack.index(t):] + [t])
            elif t not in colour:
                visit(t)
        stack.pop()
        colour[m] = 2

    for m in graph:
        if m not in colour:
            visit(m)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_parser_sees_lazy_and_relative_imports(tmp_path):
    """What the two tests above rely on: an import inside a function, and a relative one, are both found."""
    path = tmp_path / "quantfish" / "core" / "probe.py"
    path.parent.mkdir(parents=True)
    path.write_text("def f():\n    from quantfish.search import driver\n    from ..nnue import layers\n")
    found = {t for _, t in _imports(path, tmp_path)}
    assert {"quantfish.search.driver", "quantfish.nnue.layers"} <= found
    assert _layer("quantfish.search.driver") == "search" and LAYERS.index("search") > LAYERS.index("core")
