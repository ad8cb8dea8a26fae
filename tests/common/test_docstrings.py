"""Docs that cannot drift: every public function documents all its parameters (numpydoc).

In the spirit of scikit-learn's docstring-parameter test. Public = defined in a public module
(no path component starting with ``_``), listed in the module's ``__all__`` (or, without one,
named without a leading underscore), plus the public methods a public class defines itself.
Properties and functions with no parameters (besides ``self``/``cls``) are exempt.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections.abc import Iterator
from typing import Any

import pytest

import aria_tda

_SECTION = re.compile(r"^(\s*)Parameters\s*\n\1-{3,}\s*$", re.M)
_HEADER = re.compile(r"^\s*[A-Z][A-Za-z ]+\s*\n\s*-{3,}\s*$", re.M)


def documented_parameters(doc: str | None) -> set[str] | None:
    """Parameter names listed in a numpydoc ``Parameters`` section (None: no section)."""
    if not doc:
        return None
    doc = inspect.cleandoc(doc)
    m = _SECTION.search(doc)
    if m is None:
        return None
    body = doc[m.end() :]
    nxt = _HEADER.search(body)
    if nxt is not None:
        body = body[: nxt.start()]
    names: set[str] = set()
    indent = None
    for line in body.splitlines():
        if not line.strip():
            continue
        width = len(line) - len(line.lstrip())
        if indent is None:
            indent = width
        if width != indent:
            continue
        head = line.strip().split(" : ")[0].strip()
        for part in head.split(","):
            part = part.strip().lstrip("*")
            if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", part):
                names.add(part)
    return names


def _public_modules() -> Iterator[str]:
    import aria_tda_experiments

    for pkg in (aria_tda, aria_tda_experiments):
        yield pkg.__name__
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
            if any(p.startswith("_") for p in info.name.split(".")):
                continue
            yield info.name


def _public_callables() -> Iterator[tuple[str, Any]]:
    seen: set[int] = set()
    for modname in _public_modules():
        mod = importlib.import_module(modname)
        names = getattr(mod, "__all__", None)
        if names is None:
            names = [
                n
                for n, v in vars(mod).items()
                if not n.startswith("_") and getattr(v, "__module__", None) == modname
            ]
        for name in names:
            obj = getattr(mod, name, None)
            if (
                obj is None
                or id(obj) in seen
                or not str(getattr(obj, "__module__", "")).startswith("aria_tda")
            ):
                continue
            seen.add(id(obj))
            if inspect.isfunction(obj):
                yield f"{obj.__module__}.{obj.__qualname__}", obj
            elif inspect.isclass(obj):
                for mname, member in vars(obj).items():
                    if mname.startswith("_"):
                        continue
                    func = (
                        member.__func__
                        if isinstance(member, classmethod | staticmethod)
                        else member
                    )
                    if inspect.isfunction(func) and id(func) not in seen:
                        seen.add(id(func))
                        yield f"{obj.__module__}.{obj.__qualname__}.{mname}", func


def _required(func: Any) -> list[str]:
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):  # pragma: no cover
        return []
    return [p for p in sig.parameters if p not in {"self", "cls"}]


def test_every_public_function_documents_its_parameters():
    missing = []
    for qualname, func in _public_callables():
        params = _required(func)
        if not params:
            continue
        documented = documented_parameters(func.__doc__)
        if documented is None:
            missing.append(f"{qualname}: no 'Parameters' section (needs {', '.join(params)})")
            continue
        lacking = [p for p in params if p not in documented]
        if lacking:
            missing.append(f"{qualname}: undocumented {', '.join(lacking)}")
    assert not missing, f"{len(missing)} public functions lack parameter docs:\n" + "\n".join(
        sorted(missing)
    )


@pytest.mark.parametrize(
    ("doc", "names"),
    [
        (
            "Do.\n\nParameters\n----------\na, b : int\n    x.\n*args : Any\n    y.\n\nReturns\n"
            "-------\nint\n",
            {"a", "b", "args"},
        ),
        ("Do.", None),
        (
            "Do.\n\n    Parameters\n    ----------\n    scores : array\n        z : not a name\n",
            {"scores"},
        ),
    ],
)
def test_parser(doc, names):
    assert documented_parameters(doc) == names
