"""A module's ``_private`` names stay private: a name other modules need is public where it lives.

Every module of ``src/aria_tda`` and ``experiments/src`` is parsed (nothing is imported) and each
``from <package module> import <name>`` is checked, wherever it is written (module level, inside a
function, under ``if TYPE_CHECKING:``):

- a ``_single_underscore`` *name* imported from another module of ARIA or of the experiments
  package is an error: the name is private to the module that defines it. If another module needs
  it, make it public there (drop the underscore, list it in that module's ``__all__``, document
  it) — the module that owns a concept is its one home;
- a ``_private`` *module* of the top-level package (``aria_tda._io``, ``aria_tda._checks``,
  ``aria_tda_experiments._...``) is package-private: any module of that package may import it
  (``from aria_tda import _simkernels``, ``from aria_tda._io import atomic_path``), but the
  ``_names`` inside it stay private like any other;
- a ``_private`` module of a sub-package (``aria_tda.features._dask_extract``) is private to that
  sub-package: only its own modules may import it. A module several parts of ARIA import is
  shared, and gets a public name that says what it holds.

Dunder names (``__version__``) are not private. :data:`ALLOWED` lists the imports that still break
the rule because their owners could not be changed when the rule came in (issue 41); it may only
shrink: an entry that is no longer used fails too.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Source roots and the top-level packages under them.
ROOTS = (ROOT / "src", ROOT / "experiments" / "src")
PACKAGES = ("aria_tda", "aria_tda_experiments")

#: ``(owner module, imported name)`` -> the modules that import it. Each entry waits for its
#: owner to make the name public (or for the importers to stop needing it).
ALLOWED: dict[tuple[str, str], frozenset[str]] = {
}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module under :data:`ROOTS`."""
    out: dict[str, Path] = {}
    for root in ROOTS:
        for pkg in PACKAGES:
            base = root / pkg
            if not base.is_dir():
                continue
            for path in sorted(base.rglob("*.py")):
                parts = path.relative_to(root).with_suffix("").parts
                if parts[-1] == "__init__":
                    parts = parts[:-1]
                out[".".join(parts)] = path
    return out


def _package_of(module: str, path: Path) -> str:
    """The package a module's relative imports start from."""
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _absolute(node: ast.ImportFrom, module: str, path: Path) -> str:
    if not node.level:
        return node.module or ""
    base = _package_of(module, path).split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _private_module_owner(target: str) -> str | None:
    """The sub-package a ``_private`` module of ``target``'s path is private to (``None``: the
    path holds no private module below the top-level package)."""
    parts = target.split(".")
    for i in range(2, len(parts)):  # parts[1] is a top-level package's own module: allowed
        if _private(parts[i]):
            return ".".join(parts[:i])
    return None


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def violations() -> dict[tuple[str, str], set[str]]:
    """``(owner, name) -> importers`` of every import that breaks the rule."""
    mods = _modules()
    found: dict[tuple[str, str], set[str]] = {}
    for module, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [(a.name, None) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                src = _absolute(node, module, path)
                if src.split(".")[0] not in PACKAGES:
                    continue
                targets = []
                for alias in node.names:
                    sub = f"{src}.{alias.name}"
                    if sub in mods:  # a module imported by name: checked as a module path
                        targets.append((sub, None))
                    else:
                        targets.append((src, alias.name))
            else:
                continue
            for target, name in targets:
                if target.split(".")[0] not in PACKAGES:
                    continue
                owner = _private_module_owner(target)
                if owner is not None and not _inside(module, owner):
                    head, _, last = target.rpartition(".")
                    found.setdefault((head, last), set()).add(module)
                if name is not None and _private(name):
                    found.setdefault((target, name), set()).add(module)
    return found


def test_no_module_imports_another_module_s_private_names():
    bad = {
        key: sorted(users - ALLOWED.get(key, frozenset()))
        for key, users in violations().items()
        if users - ALLOWED.get(key, frozenset())
    }
    lines = [f"{owner}.{name}: imported by {', '.join(users)}"
             for (owner, name), users in sorted(bad.items())]
    assert not bad, (
        "private names imported from another module (make them public in the module that "
        "owns them):\n" + "\n".join(lines)
    )


def test_the_allow_list_only_shrinks():
    found = violations()
    stale = sorted(
        f"{owner}.{name}: {', '.join(sorted(users - found.get((owner, name), set())))}"
        for (owner, name), users in ALLOWED.items()
        if users - found.get((owner, name), set())
    )
    assert not stale, "ALLOWED entries no longer needed (remove them):\n" + "\n".join(stale)


def test_the_checker_sees_what_it_must(tmp_path, monkeypatch):
    pkg = tmp_path / "aria_tda"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "_helpers.py").write_text("def ok():\n    pass\n\n\ndef _hidden():\n    pass\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "_inner.py").write_text("X = 1\n")
    (pkg / "sub" / "user.py").write_text(
        "from aria_tda.sub._inner import X\nfrom . import _inner\n"  # its own package: allowed
    )
    (pkg / "a.py").write_text(
        "from aria_tda import _helpers\n"  # a top-level private module: allowed
        "from aria_tda._helpers import ok, __doc__\n"  # public and dunder names: allowed
        "from aria_tda._helpers import _hidden\n"  # a private name: not allowed
        "def f():\n"
        "    from aria_tda.sub._inner import X\n"  # another sub-package's private module
        "    import aria_tda.sub._inner\n"
        "    from .sub import _inner\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "ROOTS", (tmp_path,))
    got = {k: sorted(v) for k, v in violations().items()}
    assert got == {
        ("aria_tda._helpers", "_hidden"): ["aria_tda.a"],
        ("aria_tda.sub", "_inner"): ["aria_tda.a"],
    }
