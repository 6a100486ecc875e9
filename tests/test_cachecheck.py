"""The compile-cache check: editing a tool keeps the package's compiled code, editing the package drops the
tool's."""
from pathlib import Path

from nnue.cachecheck import invalidate_if_changed

REPO = Path(__file__).resolve().parent.parent


def _package(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "tools").mkdir(parents=True)
    (pkg / "core.py").write_text("X = 1\n")
    (pkg / "tools" / "bench.py").write_text("Y = 1\n")
    for d in (pkg, pkg / "tools"):
        invalidate_if_changed(d, depends_on=[pkg] if d.name == "tools" else [])   # first stamp
        (d / "__pycache__" / "f-1.py311.nbi").write_text("")
    return pkg


def _cached(d):
    return sorted(p.name for p in (d / "__pycache__").glob("*.nb[ic]"))


def test_editing_a_tool_keeps_the_package_cache(tmp_path):
    pkg = _package(tmp_path)
    (pkg / "tools" / "bench.py").write_text("Y = 2\n")
    assert invalidate_if_changed(pkg) is False and _cached(pkg)
    assert invalidate_if_changed(pkg / "tools", depends_on=[pkg]) is True and not _cached(pkg / "tools")


def test_editing_the_package_drops_the_tool_cache(tmp_path):
    pkg = _package(tmp_path)
    (pkg / "core.py").write_text("X = 2\n")
    assert invalidate_if_changed(pkg / "tools", depends_on=[pkg]) is True and not _cached(pkg / "tools")
    assert invalidate_if_changed(pkg) is True and not _cached(pkg)


def test_tools_with_compiled_code_check_their_own_cache():
    """A tools subpackage with @njit(cache=True) code runs the check, depending on its own layer."""
    for tools in (REPO / "nnue" / "tools", REPO / "engine" / "tools"):
        if any("cache=True" in p.read_text() for p in tools.glob("*.py")):
            init = (tools / "__init__.py").read_text()
            assert "invalidate_if_changed(" in init and "depends_on=" in init, tools
