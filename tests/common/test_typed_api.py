"""The top-level API is typed (not ``Any`` to mypy) and every lazy name resolves."""

from __future__ import annotations

import ast
from pathlib import Path

import aria_tda

INIT = Path(aria_tda.__file__)


def _type_checking_names() -> set[str]:
    tree = ast.parse(INIT.read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for imp in node.body:
                if isinstance(imp, ast.ImportFrom):
                    names.update(a.asname or a.name for a in imp.names)
    return names


def test_every_lazy_name_is_a_typed_re_export():
    assert set(aria_tda._LAZY) == _type_checking_names()


def test_every_lazy_name_resolves_to_the_module_it_names():
    for name, module in aria_tda._LAZY.items():
        obj = getattr(aria_tda, name)
        assert obj is not None
        assert name in dir(aria_tda)
        assert getattr(__import__(module, fromlist=[name]), name) is obj
