"""Every fast numerical kernel against its exact reference twin — one common test module.

The pairs are registered per area in ``tests/<area>/_twins.py`` (``TWINS: list[Twin]``, see
``tests/twinlib.py``). For each pair: same signature, reference not exported, equal results,
chunk-size invariance, permutation invariance; and no ``*_reference`` function in ``src/aria``
goes unregistered.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import sys
from pathlib import Path

import numpy as np
import pytest

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
#: (tests folder, package folder): the library's and the experiments' kernels.
ROOTS = ((TESTS, REPO / "src" / "aria_tda"),
         (REPO / "experiments" / "tests", REPO / "experiments" / "src" / "aria_tda_experiments"))
sys.path.insert(0, str(TESTS))
from twinlib import Twin, as_comparable, assert_same  # noqa: E402

SEEDS = (0, 1, 2)


def _load_twins() -> list[Twin]:
    twins: list[Twin] = []
    for tests, _ in ROOTS:
        for path in sorted(tests.rglob("_twins.py")):
            twins.extend(_load(path, "twins_" + "_".join(
                path.relative_to(REPO).with_suffix("").parts)))
    return twins


def _load(path: Path, name: str) -> list[Twin]:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return list(mod.TWINS)


TWINS = _load_twins()
IDS = [t.name for t in TWINS]


def _run(func, args, kwargs):
    import copy

    return func(*copy.deepcopy(args), **copy.deepcopy(kwargs))


def test_twins_are_registered():
    assert len(TWINS) >= 10, "expected the registry to hold every kernel's twin"
    assert len(set(IDS)) == len(IDS), "twin names must be unique"


@pytest.mark.parametrize("twin", TWINS, ids=IDS)
def test_reference_has_the_fast_signature(twin: Twin):
    fast, ref = inspect.signature(twin.fast), inspect.signature(twin.reference)
    assert list(fast.parameters) == list(ref.parameters), f"{twin.name}: parameter names differ"
    for name, p in fast.parameters.items():
        q = ref.parameters[name]
        assert p.kind == q.kind, f"{twin.name}: {name} kind differs"
        assert repr(p.default) == repr(q.default), f"{twin.name}: {name} default differs"
    assert twin.reference.__name__ == f"{twin.fast.__name__}_reference", (
        f"{twin.name}: the reference of {twin.fast.__name__} is named "
        f"{twin.fast.__name__}_reference, not {twin.reference.__name__}"
    )
    home = importlib.import_module(twin.reference.__module__)
    assert twin.reference.__name__ not in getattr(home, "__all__", ()), (
        f"{twin.name}: references stay out of __all__"
    )


@pytest.mark.parametrize("twin", TWINS, ids=IDS)
@pytest.mark.parametrize("seed", SEEDS)
def test_fast_equals_reference(twin: Twin, seed: int):
    args, kwargs = twin.make(np.random.default_rng(seed))
    got = as_comparable(_run(twin.fast, args, kwargs), twin.ignore)
    want = as_comparable(_run(twin.reference, args, kwargs), twin.ignore)
    assert_same(got, want, rtol=twin.rtol, atol=twin.atol, where=twin.name)


@pytest.mark.parametrize(
    "twin", [t for t in TWINS if t.chunk], ids=[t.name for t in TWINS if t.chunk]
)
def test_chunk_size_invariance(twin: Twin):
    assert twin.chunk is not None
    key, sizes = twin.chunk
    args, kwargs = twin.make(np.random.default_rng(7))
    base = as_comparable(_run(twin.reference, args, kwargs), twin.ignore)
    for size in sizes:
        got = as_comparable(_run(twin.fast, args, {**kwargs, key: size}), twin.ignore)
        assert_same(got, base, rtol=twin.rtol, atol=twin.atol, where=f"{twin.name}[{key}={size}]")


@pytest.mark.parametrize(
    "twin", [t for t in TWINS if t.permute], ids=[t.name for t in TWINS if t.permute]
)
def test_permutation_invariance(twin: Twin):
    assert twin.permute is not None
    rng = np.random.default_rng(11)
    args, kwargs = twin.make(rng)
    base = _run(twin.fast, args, kwargs)
    p_args, p_kwargs, expect = twin.permute(rng, args, kwargs)
    got = as_comparable(_run(twin.fast, p_args, p_kwargs), twin.ignore)
    assert_same(
        got,
        as_comparable(expect(base), twin.ignore),
        rtol=twin.rtol,
        atol=twin.atol,
        where=f"{twin.name}[permuted]",
    )


def _defined_references() -> set[tuple[str, str]]:
    out = set()
    for _, package in ROOTS:
        out |= _references_in(package)
    return out


def _references_in(package: Path) -> set[tuple[str, str]]:
    out = set()
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name.endswith("_reference"):
                out.add((".".join(parts), node.name))
    return out


def test_every_reference_is_registered():
    registered = {(t.reference.__module__, t.reference.__name__) for t in TWINS}
    missing = sorted(_defined_references() - registered)
    assert not missing, "references without a registered twin: " + ", ".join(
        f"{m}.{n}" for m, n in missing
    )
