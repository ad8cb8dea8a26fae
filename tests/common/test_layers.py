"""The import layers of ARIA: arrows point one way, no module is part of a circle, no module is
too long — and this test says so.

Layers. Layer order, lowest first (docs/CONTRACTS.md draws it). A module may import from its own
layer or lower ones; an import of a higher layer is an error. The library (``src/aria_tda``)
never imports the experiments package ``aria_tda_experiments`` (layer 9). Imports under
``if TYPE_CHECKING:`` do not count (they never run); every other import does, wherever it is
written — at module level, inside a function or method, in a ``try`` block. A *shim* — a module
kept only so that an old public import path keeps working, containing nothing but a docstring,
imports and ``__all__`` — may re-export a module from any layer (there are none: no shims).

No circles. The modules of ``src/aria_tda`` and ``experiments/src`` form a graph with an edge
``a -> b`` for every import of ``b`` that runs in ``a`` (function-level imports included, so a
circle cannot be hidden by moving one of its imports into a function), and the graph must have
no cycle of any length, between packages or inside one. The pattern to think about is a package
``__init__`` that re-exports its submodules: it imports them, so a submodule that imports a name
from its own package (``from aria_tda.homogeneity import DEFAULT_KS`` inside
``aria_tda.homogeneity.core``) closes a circle. The rule: **a submodule never imports its own
(or an ancestor) package's ``__init__``**; it imports the submodule that defines the name. So
that edge is counted like any other, and ``test_no_module_imports_its_own_package`` states the
rule by itself, so that it holds even where the ``__init__`` re-exports nothing (yet); only a
``__main__`` module (run by ``python -m``, imported by nothing) may import its package. Importing
``a.b.c`` also runs ``a/b/__init__``; that implicit edge is not counted (with it every package
that re-exports its submodules would be a circle), which is why an ``__init__`` may import its
own submodules. Dynamic imports (``importlib.import_module``) are not seen; the root package's
lazy ``__getattr__`` uses them on purpose, and names no module of its own package statically.

Length. No module under ``src/aria_tda`` or ``experiments/src`` is longer than ``MAX_LINES``.
"""

from __future__ import annotations

import ast
from collections import deque
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
EXP_SRC = ROOT / "experiments" / "src"
#: Source roots: the library and the experiments package.
ROOTS = (SRC, EXP_SRC)
#: The longest a module may be (lines).
MAX_LINES = 700

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
            "aria_tda._paths",
            "aria_tda._lock",
            "aria_tda._memory",
            "aria_tda._inert_pickle",
            "aria_tda._fingerprint",
            "aria_tda._checks",
            "aria_tda.manifest",
            "aria_tda._steps",
            "aria_tda._result_tables",
            "aria_tda.results",
            "aria_tda._outputs",
            "aria_tda._output_folders",
            "aria_tda._options",
            "aria_tda._dask",
            "aria_tda._lazy",
            "aria_tda._display",
        ),
    ),
    (1, ("aria_tda.scores", "aria_tda.features", "aria_tda.embed.store",
         "aria_tda.embed.retrieval")),
    # the verdict reads the diagnostics (and a Diagnostics gives its verdict)
    (2, ("aria_tda.similarity", "aria_tda._simkernels", "aria_tda.diagnostics",
         "aria_tda.verdict")),
    (
        3,
        (
            "aria_tda.homogeneity",
            "aria_tda.alignment",
            "aria_tda.confound",
            "aria_tda.paired",
        ),
    ),
    (4, ("aria_tda.report",
         # the listening room's pictures and drawn evidence (issue 27)
         "aria_tda.media.draw", "aria_tda.media.aspects", "aria_tda.media.kernels",
         "aria_tda.media.svg", "aria_tda.media._evidence", "aria_tda.media._harmony",
         # where the music lies and clips of it to hear (issue 27)
         "aria_tda.media", "aria_tda.media.sources", "aria_tda.media.clips",
         "aria_tda.media.cache",
         # the room's clips, packing and dossier, moved from the report (issue 39)
         "aria_tda.media.pack", "aria_tda.media.clip_views", "aria_tda.media.dossier",
         "aria_tda.media.dossier_html", "aria_tda.media.query_evidence",
         "aria_tda.media.provenance", "aria_tda.media._sections")),
    (5, ("aria_tda.study",)),
    (6, ("aria_tda.attribution", "aria_tda.embed")),
    # ARIA inside the peers' loops (quanda, dattri, Hugging Face, miditok)
    (7, ("aria_tda.integrations",)),
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
    7: "integrations",
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
    """The dotted name of a source file under one of :data:`ROOTS`."""
    root = next(r for r in ROOTS if path.is_relative_to(r))
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def _ours(module: str) -> bool:
    return module.split(".")[0] in ("aria_tda", "aria_tda_experiments")


def imported_modules(source: str, module: str, *, is_package: bool) -> list[tuple[int, str]]:
    """(line, absolute module) for every aria import that runs (TYPE_CHECKING blocks skipped).

    Imports inside functions, methods, classes and ``try`` blocks count. ``from p import x``
    names the submodule ``p.x`` where one exists, else the package ``p`` itself.
    """
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
                for a in node.names:  # `from p import x`: x may be a submodule of p
                    sub = f"{target}.{a.name}"
                    found.append((node.lineno, sub if _exists(sub) else target))
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    visit([child])
                else:
                    for inner in ast.walk(child):
                        if isinstance(inner, ast.stmt):
                            visit([inner])

    visit(tree.body)
    return [(line, m) for line, m in dict.fromkeys(found) if _ours(m)]


def _exists(module: str) -> bool:
    for root in ROOTS:
        p = root.joinpath(*module.split("."))
        if p.with_suffix(".py").exists() or (p / "__init__.py").exists():
            return True
    return False


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


def own_package_imports(source: str, module: str, *, is_package: bool) -> list[str]:
    """Imports of a module's own package ``__init__`` (or an ancestor's), for a name.

    A ``__main__`` module is exempt: it is the script ``python -m package`` runs, which nothing
    imports, so its import of the package (``from aria_tda.cli import main``) closes no circle.
    """
    if module.rpartition(".")[2] == "__main__":
        return []
    ancestors = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1)}
    return [
        f"{module}:{line} imports its own package {target}"
        for line, target in imported_modules(source, module, is_package=is_package)
        if target in ancestors
    ]


def import_graph(sources: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """``{module: {imported module, ...}}`` from ``{module: (source, is_package)}``.

    An import of a module that is not in ``sources`` counts as an import of its longest
    dotted prefix that is; a module's import of itself is dropped.
    """
    graph: dict[str, set[str]] = {}
    for mod, (source, is_package) in sources.items():
        edges = set()
        for _, target in imported_modules(source, mod, is_package=is_package):
            while target and target not in sources:
                target = target.rpartition(".")[0]
            if target and target != mod:
                edges.add(target)
        graph[mod] = edges
    return graph


def strong_components(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan): the circles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[set[str]] = []

    def strongconnect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in graph:
                continue
            if w not in index:
                strongconnect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                components.append(comp)

    for v in sorted(graph):
        if v not in index:
            strongconnect(v)
    return components


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One shortest cycle ``[a, b, ..., a]`` per strongly connected component."""
    components = strong_components(graph)
    cycles = []
    for comp in components:
        start = min(comp)
        parent: dict[str, str] = {}
        queue = deque([start])
        while queue:  # breadth first inside the component, back to start: a shortest cycle
            v = queue.popleft()
            if start in graph[v]:
                path = [v]
                while path[-1] != start:
                    path.append(parent[path[-1]])
                cycles.append([*reversed(path), start])
                break
            for w in sorted(graph[v] & comp):
                if w not in parent and w != start:
                    parent[w] = v
                    queue.append(w)
    return sorted(cycles)


def _modules(*roots: Path) -> list[Path]:
    out: list[Path] = []
    for root in roots or ROOTS:
        for pkg in sorted(p for p in root.iterdir() if (p / "__init__.py").exists()):
            out += sorted(pkg.rglob("*.py"))
    return out


def _sources(*roots: Path) -> dict[str, tuple[str, bool]]:
    return {
        module_name(p): (p.read_text(encoding="utf-8"), p.name == "__init__.py")
        for p in _modules(*roots)
    }


def test_every_module_has_a_layer():
    for path in _modules():
        layer_of(module_name(path))


def test_imports_point_down():
    errors = []
    for mod, (source, is_package) in _sources().items():
        errors += violations(source, mod, is_package=is_package)
    assert not errors, "upward imports:\n" + "\n".join(errors)


def test_the_library_never_imports_the_experiments():
    assert layer_of("aria_tda_experiments.audio.corpus") == max(n for n, _ in LAYERS)
    errors = [
        f"{mod}:{line} imports {target}"
        for mod, (source, is_package) in _sources(SRC).items()
        for line, target in imported_modules(source, mod, is_package=is_package)
        if target.split(".")[0] == "aria_tda_experiments"
    ]
    assert not errors, "the library imports the experiments:\n" + "\n".join(errors)


def test_shims_are_pure_re_exports():
    for mod in SHIMS:
        path = SRC.joinpath(*mod.split(".")).with_suffix(".py")
        if path.exists():
            assert is_shim(path.read_text()), f"{mod} must hold only a docstring, imports, __all__"


def test_no_module_imports_its_own_package():
    errors = []
    for mod, (source, is_package) in _sources().items():
        errors += own_package_imports(source, mod, is_package=is_package)
    assert not errors, "submodules importing their own package __init__:\n" + "\n".join(errors)


def test_no_import_cycles():
    graph = import_graph(_sources())
    cycles = import_cycles(graph)
    lines = [" -> ".join(c) for c in cycles]
    lines += [
        f"circle of {len(comp)} modules: {', '.join(sorted(comp))}"
        for comp in strong_components(graph)
        if len(comp) > 2
    ]
    assert not cycles, "import cycles:\n" + "\n".join(lines)


def test_no_module_is_too_long():
    long = {}
    for path in _modules():
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > MAX_LINES:
            long[str(path.relative_to(ROOT))] = n
    assert not long, f"modules over {MAX_LINES} lines: {long}"


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
            "aria_tda.features.store",
            "class A:\n    def f(self):\n        try:\n            import aria_tda.study\n"
            "        except ImportError:\n            pass\n",
            True,
        ),
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


def _pkg(**modules: str) -> dict[str, tuple[str, bool]]:
    """Fake sources: keyword ``a__b`` is module ``a.b``; a name ending ``__init`` is a package."""
    out = {}
    for key, source in modules.items():
        is_package = key.endswith("__init")
        name = "aria_tda." + key.removesuffix("__init").replace("__", ".")
        out[name] = (source, is_package)
    return out


@pytest.mark.parametrize(
    ("sources", "cycle"),
    [
        pytest.param(  # the shape of features.store <-> features.extract
            _pkg(
                features__store="def f():\n    from aria_tda.features.extract import g\n",
                features__extract="from aria_tda.features.store import Writer\n",
            ),
            ["aria_tda.features.extract", "aria_tda.features.store", "aria_tda.features.extract"],
            id="function-level",
        ),
        pytest.param(  # inside one package, through a relative import
            _pkg(
                homogeneity__groups="def f():\n    from .distributed import top_k_dask\n",
                homogeneity__distributed="from .sweep import x\n",
                homogeneity__sweep="from aria_tda.homogeneity.groups import pool\n",
            ),
            [
                "aria_tda.homogeneity.distributed",
                "aria_tda.homogeneity.sweep",
                "aria_tda.homogeneity.groups",
                "aria_tda.homogeneity.distributed",
            ],
            id="intra-package",
        ),
        pytest.param(  # a submodule importing its own package's __init__ for a name
            _pkg(
                homogeneity__init="from aria_tda.homogeneity.core import run\n",
                homogeneity__core="from aria_tda.homogeneity import DEFAULT_KS\n",
            ),
            ["aria_tda.homogeneity", "aria_tda.homogeneity.core", "aria_tda.homogeneity"],
            id="own-package-init",
        ),
        pytest.param(  # between packages, hidden in a method
            _pkg(
                scores__stats="class A:\n    def f(self):\n        import aria_tda.similarity\n",
                similarity="import aria_tda.scores.stats\n",
            ),
            ["aria_tda.scores.stats", "aria_tda.similarity", "aria_tda.scores.stats"],
            id="between-packages",
        ),
        pytest.param(  # TYPE_CHECKING imports never run: no cycle
            _pkg(
                features__store="from aria_tda.features.extract import g\n",
                features__extract="from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                "    from aria_tda.features.store import Writer\n",
            ),
            None,
            id="type-checking",
        ),
        pytest.param(  # an __init__ importing its submodules, which import siblings: no cycle
            _pkg(
                homogeneity__init="from aria_tda.homogeneity.core import run\n",
                homogeneity__core="from aria_tda.homogeneity.groups import top\n",
                homogeneity__groups="import numpy\n",
            ),
            None,
            id="init-re-exports",
        ),
    ],
)
def test_checker_catches_a_cycle(sources, cycle):
    found = import_cycles(import_graph(sources))
    assert found == ([cycle] if cycle else [])


def test_checker_catches_an_own_package_import():
    assert own_package_imports(
        "def f():\n    from aria_tda.homogeneity import DEFAULT_KS\n",
        "aria_tda.homogeneity.core",
        is_package=False,
    )
    assert own_package_imports("from . import x\n", "aria_tda.homogeneity.core", is_package=False)
    assert not own_package_imports(
        "from aria_tda.homogeneity.sweep import DEFAULT_KS\n",
        "aria_tda.homogeneity.core",
        is_package=False,
    )
