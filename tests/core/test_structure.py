"""The package's shape (issue 26): no import cycle among ``bacepipe_env.core``'s modules, no
module longer than 800 lines, and a simulator whose state lives in a few named parts.

Imports are read with ``ast``, every one of them: at module level, inside functions and under
``if TYPE_CHECKING`` (a cycle that only type checkers follow is still a cycle of concepts)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "bacepipe_env"
CORE = PACKAGE / "core"
MAX_LINES = 800


def _core_imports(path: Path) -> set[str]:
    """The ``core`` modules ``path`` imports, wherever the import statement stands."""
    core = {p.stem for p in CORE.glob("*.py")}
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:  # from .x import y, or from . import x
                names = [node.module] if node.module else [a.name for a in node.names]
            elif node.module and node.module.startswith("bacepipe_env.core."):
                names = [node.module.removeprefix("bacepipe_env.core.")]
            else:
                continue
        elif isinstance(node, ast.Import):
            names = [
                a.name.removeprefix("bacepipe_env.core.")
                for a in node.names
                if a.name.startswith("bacepipe_env.core.")
            ]
        else:
            continue
        found.update(n.split(".")[0] for n in names)
    return (found & core) - {path.stem}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` as a path that returns to its start, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for dep in sorted(graph[node]):
            if state.get(dep) == 1:
                return [*path[path.index(dep) :], dep]
            if dep not in state:
                found = visit(dep, [*path, dep])
                if found:
                    return found
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start, [start])
            if found:
                return found
    return None


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycle(graph) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_core_has_no_import_cycle() -> None:
    graph = {p.stem: _core_imports(p) for p in CORE.glob("*.py") if p.stem != "__init__"}
    assert graph["admission"] >= {"views"} and "simulator" not in graph["admission"]
    assert "perf" not in graph["memory"]
    cycle = _cycle(graph)
    assert cycle is None, " -> ".join(cycle or [])


def _module(path: Path) -> str:
    """``path``'s dotted name inside the package (``core.world``, ``cli``)."""
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package_imports(path: Path, modules: set[str]) -> set[str]:
    """The package's modules that ``path`` imports (relative or absolute, wherever the
    statement stands); ``from .x import y`` counts ``x.y`` when that is a module, else ``x``."""
    here = _module(path).split(".")
    package = here if path.stem == "__init__" else here[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1] if node.level > 1 else package
                stem = ".".join([*base, *(node.module.split(".") if node.module else [])])
            elif node.module and node.module.startswith("bacepipe_env"):
                stem = node.module.removeprefix("bacepipe_env").lstrip(".")
            else:
                continue
            for alias in node.names:
                full = f"{stem}.{alias.name}".lstrip(".")
                found.add(full if full in modules else stem)
        elif isinstance(node, ast.Import):
            found.update(
                a.name.removeprefix("bacepipe_env.")
                for a in node.names
                if a.name.startswith("bacepipe_env.")
            )
    return (found & modules) - {_module(path)}


def test_the_package_has_no_import_cycle_between_modules() -> None:
    """Packages' ``__init__`` files re-export and are left out; every other module's imports,
    at any depth of the code, form no cycle."""
    paths = [p for p in PACKAGE.rglob("*.py") if p.stem != "__init__"]
    modules = {_module(p) for p in paths}
    graph = {_module(p): _package_imports(p, modules) for p in paths}
    assert graph["cli"] >= {"cli_args", "core.world"}  # the reader sees real imports
    cycle = _cycle(graph)
    assert cycle is None, " -> ".join(cycle or [])


def test_no_module_exceeds_800_lines() -> None:
    lengths = {
        p.relative_to(PACKAGE).as_posix(): len(p.read_text(encoding="utf-8").splitlines())
        for p in PACKAGE.rglob("*.py")
    }
    long = {name: n for name, n in lengths.items() if n > MAX_LINES}
    assert not long, long


def _assigned_attributes(path: Path, cls: str) -> set[str]:
    """The distinct ``self.<name>`` a class assigns (its instances' attribute names)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    (node,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls]
    return {
        sub.attr
        for sub in ast.walk(node)
        if isinstance(sub, ast.Attribute)
        and isinstance(sub.ctx, ast.Store)
        and isinstance(sub.value, ast.Name)
        and sub.value.id == "self"
    }


def test_the_simulator_keeps_its_state_in_a_few_parts() -> None:
    names = _assigned_attributes(CORE / "state.py", "SimulationState") | _assigned_attributes(
        CORE / "simulator.py", "Simulator"
    )
    assert len(names) <= 35, sorted(names)
    # every memo in one place, the faults' and the attempts' bookkeeping in their own
    assert {"_caches", "_fault_state", "_book"} <= names
    memos = {"_placement_answers", "_shape_keys", "_iteration_times", "_columns", "_need"}
    memos |= {"_price_array", "_rows_type", "_memo_size", "_memo_on", "_full_gpus", "_view"}
    assert not names & memos
