"""The package's layers, as the folder tree shows them: imports only point down, no cycles.

Each top-level part of ``xpu_profiler`` has a floor; a module may import modules of its own
part or of a lower floor, never of a higher one, and no set of modules imports each other in
a loop (an import inside a function counts the same as one at the top: it is still an arrow).
"""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "xpu_profiler"

#: part → floor (higher floors build on lower ones); parts of one floor do not import each other
FLOORS = {
    "core": 0,
    "testing": 0,
    "knowledge": 1,
    "summary": 1,
    "readers": 2,
    "aggregate": 3,
    "findings": 4,
    "exporters": 4,
    "terminal": 4,
    "analysis": 5,
    "notebook": 5,
    "diff": 6,
    "live": 7,
    "cli": 8,
    "__init__": 9,
    "__main__": 9,
}
#: imports allowed across parts of one floor (none today)
SAME_FLOOR_OK: set[tuple[str, str]] = set()


def _modules() -> dict[str, Path]:
    mods = {}
    for p in PKG.rglob("*.py"):
        parts = list(p.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        mods[".".join(parts)] = p
    return mods


def imports(mods: dict[str, Path]) -> dict[str, set[str]]:
    """module → the package modules it imports (anywhere in its body)."""
    out: dict[str, set[str]] = {}
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        here = mod.split(".") if is_pkg else mod.split(".")[:-1]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = here[: len(here) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                for alias in node.names:
                    full = f"{target}.{alias.name}"
                    found.add(full if full in mods else target)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
        out[mod] = {m for m in found if m in mods and m != mod}
    return out


#: sub-packages that stand on a floor of their own, below their part's: the in-engine collector
#: (``live.vllm``: it runs inside vLLM's processes and imports only core and knowledge)
SUB_PARTS = {"live.vllm": 2}


def part_of(mod: str) -> str:
    parts = mod.split(".")
    for sub in SUB_PARTS:
        if ".".join(parts[1:3]) == sub:
            return sub
    return parts[1] if len(parts) > 1 else "__init__"


def _floor(part: str) -> int:
    return SUB_PARTS.get(part, FLOORS.get(part, -1))


def test_every_part_has_a_floor() -> None:
    parts = {part_of(m) for m in _modules()}
    assert parts <= set(FLOORS) | set(SUB_PARTS), f"parts without a floor: {sorted(parts - set(FLOORS))}"


def test_imports_point_down() -> None:
    graph = imports(_modules())
    upward = []
    for mod, targets in graph.items():
        a = part_of(mod)
        for t in targets:
            b = part_of(t)
            if a == b or (a, b) in SAME_FLOOR_OK or (a.startswith(f"{b}.") is False and b.startswith(f"{a}.")):
                continue  # (a part may import its own sub-part that stands lower)
            if _floor(b) >= _floor(a):
                upward.append(f"{mod} -> {t} ({a}: floor {_floor(a)}, {b}: floor {_floor(b)})")
    assert not upward, "imports that do not point down:\n" + "\n".join(sorted(upward))


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            node, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                elif nxt in on:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def test_no_import_cycles() -> None:
    graph = imports(_modules())
    cycles = _cycles(graph)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_the_checks_can_fail() -> None:
    """The cycle and floor rules catch what they are meant to (on made-up graphs)."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
    assert FLOORS["exporters"] > FLOORS["core"] and FLOORS["cli"] > FLOORS["live"]


def test_module_sizes() -> None:
    """One concern per module: none over 400 lines (the test-data generators too), the
    median well under."""
    sizes = sorted(
        (len(p.read_text(encoding="utf-8").splitlines()), str(p.relative_to(PKG))) for p in PKG.rglob("*.py")
    )
    big = [f"{name} ({n} lines)" for n, name in sizes if n > 400]
    assert not big, "modules over 400 lines: " + ", ".join(big)
    assert sizes[len(sizes) // 2][0] <= 130


#: functions allowed over ``MAX_FUNCTION_LINES``, each with its reason (none today)
LONG_FUNCTIONS: dict[str, str] = {}
MAX_FUNCTION_LINES = 80


def long_functions(root: Path = PKG) -> list[str]:
    """``module:function (N lines)`` of every function (or method) over the limit."""
    out = []
    for p in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = (node.end_lineno or node.lineno) - node.lineno + 1
                name = f"{p.relative_to(root.parent).as_posix()}:{node.name}"
                if n > MAX_FUNCTION_LINES and name not in LONG_FUNCTIONS:
                    out.append(f"{name} ({n} lines)")
    return out


def test_function_lengths() -> None:
    """A function says one thing: none over 80 lines outside the allow-list."""
    assert long_functions() == []


def test_the_length_rule_can_fail(tmp_path) -> None:
    pkg = tmp_path / "xpu_profiler"
    pkg.mkdir()
    (pkg / "m.py").write_text("def f():\n" + "    x = 1\n" * 81)
    assert long_functions(pkg) == ["xpu_profiler/m.py:f (82 lines)"]


def test_aggregate_holds_packages_not_a_flat_list() -> None:
    """Modules whose names shared a prefix live in a sub-package of it (steps, layers,
    graphs, ranks): at most 20 modules directly in aggregate/."""
    direct = [p.name for p in (PKG / "aggregate").glob("*.py")]
    assert len(direct) <= 20, sorted(direct)
    assert {p.name for p in (PKG / "aggregate").iterdir() if (p / "__init__.py").exists()} >= {
        "steps",
        "layers",
        "graphs",
        "ranks",
    }


#: the analysis: what may not write into ``Profile.run`` (it holds what the inputs said)
ANALYSIS = ("aggregate", "findings", "exporters", "terminal", "diff")


def test_the_analysis_never_writes_the_run() -> None:
    """``run`` holds what the inputs said; what the analysis derives is ``Profile.derived``. No
    assignment to ``….run[...]``, no ``….run.setdefault/update/pop/...`` and no ``profile.warn``
    in the analysis."""
    writes = []
    for part in ANALYSIS:
        for p in sorted((PKG / part).rglob("*.py")):
            for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
                if isinstance(node, (ast.Assign, ast.AugAssign)):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for t in targets:
                        if (
                            isinstance(t, ast.Subscript)
                            and isinstance(t.value, ast.Attribute)
                            and t.value.attr == "run"
                        ):
                            writes.append(f"{p.relative_to(PKG)}:{node.lineno}")
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                    f = node.func
                    if isinstance(f.value, ast.Attribute) and f.value.attr == "run" and f.attr in _MUTATORS:
                        writes.append(f"{p.relative_to(PKG)}:{node.lineno}")
                    if f.attr == "warn" and isinstance(f.value, ast.Name) and f.value.id in ("profile", "prof"):
                        writes.append(f"{p.relative_to(PKG)}:{node.lineno}")
    assert writes == []


_MUTATORS = {"setdefault", "update", "pop", "popitem", "clear", "__setitem__"}


def test_each_registry_holds_what_its_rows_name() -> None:
    """One registry per plug point; a row names a module that has what the plug point needs."""
    from xpu_profiler import exporters, readers
    from xpu_profiler.findings.rules import RULES
    from xpu_profiler.knowledge import devices
    from xpu_profiler.readers import formats  # noqa: F401  (readers.formats below)

    for name, mod in exporters.registry().items():
        assert mod.NAME == name and mod.SUFFIXES and callable(mod.write), name
    mods = readers.registry()
    assert len(mods) == len(readers.formats.READERS)
    for mod in mods:
        assert callable(mod.sniff) and callable(mod.read), mod.NAME
    kinds = [b.kind for b in devices.backends()]
    assert len(set(kinds)) == len(kinds) and set(devices.DEVICES) == {"auto", *kinds}
    for b in devices.backends():
        assert all(row.spec.source for row in b.specs), b.kind  # every figure says where it comes from
    ids = [r.id for r in RULES]
    assert len(set(ids)) == len(ids)


def test_no_package_name_hides_one_of_its_modules() -> None:
    """``pkg.name`` is one thing: a package never binds a name of one of its own modules to
    something else (``readers.load`` the function would hide ``readers/load.py``)."""
    import importlib
    import pkgutil
    import sys

    import xpu_profiler

    for info in pkgutil.walk_packages(xpu_profiler.__path__, "xpu_profiler."):
        importlib.import_module(info.name)
    hidden = []
    for name, mod in sorted(sys.modules.items()):
        if not name.startswith("xpu_profiler") or not hasattr(mod, "__path__"):
            continue
        for sub in pkgutil.iter_modules(mod.__path__):
            attr = getattr(mod, sub.name, None)
            if attr is not None and attr is not sys.modules.get(f"{name}.{sub.name}"):
                hidden.append(f"{name}.{sub.name} is a {type(attr).__name__}")
    assert hidden == []
