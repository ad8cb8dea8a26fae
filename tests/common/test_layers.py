"""The import layers of ARIA: arrows point one way, and this test says so.

Layer order, lowest first (docs/CONTRACTS.md draws it). A module may import from its own layer
or lower ones; an import of a higher layer is an error. Imports under ``if TYPE_CHECKING:`` do
not count (they never run). A *shim* — a module kept only so that an old public import path
keeps working, containing nothing but a docstring, imports and ``__all__`` — may re-export a
module from any layer.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

#: (layer number, module prefixes). The longest matching prefix decides a module's layer.
LAYERS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (
        0,
        (
            "aria_tda._version",
            "aria_tda.errors",
            "aria_tda._optional",
            "aria_tda._progress",
            "aria_tda._io",
            "aria_tda._checks",
            "aria_tda.manifest",
            "aria_tda._stages",
            "aria_tda.results",
            "aria_tda._options",
            "aria_tda._dask",
        ),
    ),
    (1, ("aria_tda.scores", "aria_tda.features")),
    (2, ("aria_tda.similarity", "aria_tda._simkernels", "aria_tda.diagnostics")),
    (
        3,
        (
            "aria_tda.homogeneity",
            "aria_tda.alignment",
            "aria_tda.confound",
            "aria_tda.verdict",
            "aria_tda.paired",
        ),
    ),
    (4, ("aria_tda.report",)),
    (5, ("aria_tda.study_config", "aria_tda.study")),
    (6, ("aria_tda.attribution", "aria_tda.encoders", "aria_tda.embed")),
    (8, ("aria_tda.cli", "aria_tda.__main__", "aria_tda")),
    (9, ("aria_tda_experiments",)),
)
#: Modules kept only so that an old public import path keeps working (pure re-exports).
SHIMS: frozenset[str] = frozenset()
LAYER_NAMES = {
    0: "foundation",
    1: "storage & extraction",
    2: "kernels",
    3: "analyses",
    4: "presentation",
    5: "orchestration",
    6: "attribution & encoders",
    8: "interface",
    9: "experiments (a package of its own; the library never imports it)",
}


def layer_of(module: str) -> int:
    """The layer of a dotted module name (longest matching prefix)."""
    best, best_len = None, -1
    for layer, prefixes in LAYERS:
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best_len:
                best, best_len = layer, len(p)
    if best is None:
        raise AssertionError(f"{module}: not in any layer; add it to LAYERS")
    return best


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def imported_modules(source: str, module: str, *, is_package: bool) -> list[tuple[int, str]]:
    """(line, absolute module) for every aria import that runs (TYPE_CHECKING blocks skipped)."""
    tree = ast.parse(source)
    package = module if is_package else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.If) and _is_type_checking(node):
                visit(node.orelse)
                continue
            if isinstance(node, ast.Import):
                found.extend((node.lineno, a.name) for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if node.module is None or node.level:
                    # `from . import x` / `from .pkg import x`: x may be a submodule
                    for a in node.names:
                        sub = f"{target}.{a.name}"
                        found.append((node.lineno, sub if _exists(sub) else target))
                else:
                    found.append((node.lineno, target))
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    visit([child])
                else:
                    for inner in ast.walk(child):
                        if isinstance(inner, ast.stmt):
                            visit([inner])

    visit(tree.body)
    return [
        (line, m)
        for line, m in found
        if m in ("aria_tda", "aria_tda_experiments")
        or m.startswith(("aria_tda.", "aria_tda_experiments."))
    ]


def _exists(module: str) -> bool:
    p = SRC.joinpath(*module.split("."))
    return p.with_suffix(".py").exists() or (p / "__init__.py").exists()


def is_shim(source: str) -> bool:
    """Only a docstring, imports, ``__all__`` (and ``from __future__``)."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            continue
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [
            "__all__"
        ]:
            continue
        return False
    return True


def violations(source: str, module: str, *, is_package: bool) -> list[str]:
    """Upward imports of one module's source."""
    if module == "aria_tda":
        return []  # the root package: lazy re-exports of every layer (interface)
    if module in SHIMS:
        assert is_shim(source), f"{module}: listed as a shim but holds code"
        return []
    mine = layer_of(module)
    out = []
    for line, target in imported_modules(source, module, is_package=is_package):
        theirs = layer_of(target)
        if theirs > mine:
            out.append(
                f"{module}:{line} imports {target} "
                f"(layer {theirs} {LAYER_NAMES[theirs]} > layer {mine} {LAYER_NAMES[mine]})"
            )
    return out


def _modules() -> list[Path]:
    return sorted((SRC / "aria_tda").rglob("*.py"))


def test_every_module_has_a_layer():
    for path in _modules():
        layer_of(module_name(path))


def test_imports_point_down():
    errors = []
    for path in _modules():
        errors += violations(
            path.read_text(), module_name(path), is_package=path.name == "__init__.py"
        )
    assert not errors, "upward imports:\n" + "\n".join(errors)


def test_shims_are_pure_re_exports():
    for mod in SHIMS:
        path = SRC.joinpath(*mod.split(".")).with_suffix(".py")
        if path.exists():
            assert is_shim(path.read_text()), f"{mod} must hold only a docstring, imports, __all__"


def test_no_import_cycles_between_modules():
    graph: dict[str, set[str]] = {}
    for path in _modules():
        mod = module_name(path)
        graph[mod] = {
            t
            for _, t in imported_modules(
                path.read_text(), mod, is_package=path.name == "__init__.py"
            )
            if t != mod
            and not mod.startswith(t + ".")  # a module importing its own package is fine
        }
    seen: dict[str, int] = {}
    stack: list[str] = []

    def dfs(m: str) -> list[str] | None:
        seen[m] = 1
        stack.append(m)
        for n in sorted(graph.get(m, ())):
            if n not in graph or n == "aria_tda":
                continue
            if seen.get(n) == 1 and not n.startswith("aria_tda.cli") and not _same_package(m, n):
                return [*stack[stack.index(n) :], n]
            if n not in seen:
                cycle = dfs(n)
                if cycle:
                    return cycle
        stack.pop()
        seen[m] = 2
        return None

    for m in sorted(graph):
        if m not in seen:
            cycle = dfs(m)
            assert cycle is None, "import cycle: " + " -> ".join(cycle)


def _same_package(a: str, b: str) -> bool:
    """A package __init__ that re-exports its submodules, which import siblings: not a cycle
    across modules of different packages (those are what this test is after)."""
    pa, pb = a.rpartition(".")[0], b.rpartition(".")[0]
    return a == pb or b == pa or pa == pb


@pytest.mark.parametrize(
    ("module", "source", "bad"),
    [
        ("aria_tda.scores.stats", "from aria_tda.diagnostics import diagnose\n", True),
        (
            "aria_tda.attribution.task",
            "from aria_tda_experiments.model import sequence_loss\n",
            True,
        ),
        ("aria_tda.homogeneity.core", "from ..study import run_study\n", True),
        (
            "aria_tda.scores.stats",
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
            "    from aria_tda.diagnostics import Diagnostics\n",
            False,
        ),
        (
            "aria_tda.study",
            "def f():\n    from aria_tda.homogeneity import run_homogeneity\n",
            False,
        ),
        ("aria_tda.features.store", "def f():\n    import aria_tda.cli\n", True),
        (
            "aria_tda.features.audio.render",
            '"""shim"""\nfrom aria_tda.features.audio.render import *\n__all__ = []\n',
            False,
        ),
        (
            "aria_tda.similarity",
            '"""not a shim"""\nfrom aria_tda.homogeneity import top_k_groups\n',
            True,
        ),
    ],
)
def test_checker_catches_an_upward_import(module, source, bad):
    assert bool(violations(source, module, is_package=False)) is bad
