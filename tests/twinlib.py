"""Reference twins: the registry entry every (fast kernel, exact reference) pair provides.

Each area of the package lists its pairs in ``tests/<area>/_twins.py`` as ``TWINS: list[Twin]``;
``tests/common/test_reference_twins.py`` collects them all and runs, for every pair, the same
checks (scikit-learn's "common tests" for metrics):

* the reference has the fast function's own signature and is not exported in ``__all__``;
* fast == reference on seeded random input (to ``rtol``/``atol``);
* chunk-size invariance: the fast result does not depend on the chunk size (``chunk``);
* permutation invariance: permuting the input as the pair declares (``permute``) leaves the
  result unchanged, or changes it exactly as declared.

Naming scheme: the reference of ``aria_tda.x.foo`` is ``aria_tda.x.foo_reference`` (same module,
same parameters, not in ``__all__``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

Inputs = tuple[tuple[Any, ...], dict[str, Any]]


@dataclass(frozen=True)
class Twin:
    """One (fast, reference) pair and how to exercise it.

    make(rng) -> (args, kwargs): seeded input for both functions.
    chunk: (keyword of the fast function that sets a chunk/block size, values to try) or None.
    permute(rng, args, kwargs) -> (args, kwargs, expect): permuted input and a function mapping
        the unpermuted result to the expected result (identity for invariant kernels); or None.
    """

    name: str
    fast: Callable[..., Any]
    reference: Callable[..., Any]
    make: Callable[[np.random.Generator], Inputs]
    chunk: tuple[str, tuple[int, ...]] | None = None
    permute: (
        Callable[
            [np.random.Generator, tuple[Any, ...], dict[str, Any]],
            tuple[tuple[Any, ...], dict[str, Any], Callable[[Any], Any]],
        ]
        | None
    ) = None
    rtol: float = 1e-10
    atol: float = 1e-12
    #: keywords the comparison skips on result objects (e.g. timing fields); rarely needed
    ignore: tuple[str, ...] = ()


def as_comparable(value: Any, ignore: tuple[str, ...] = ()) -> Any:
    """Turn a result (dataclass, mapping, tuple, array, scalar) into nested plain values."""
    import dataclasses

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: as_comparable(getattr(value, f.name), ignore)
            for f in dataclasses.fields(value)
            if f.name not in ignore
        }
    if isinstance(value, dict):
        return {k: as_comparable(v, ignore) for k, v in value.items() if k not in ignore}
    if isinstance(value, list | tuple):
        return [as_comparable(v, ignore) for v in value]
    if hasattr(value, "to_numpy") and not isinstance(value, np.ndarray):
        return np.asarray(value.to_numpy())
    if hasattr(value, "detach"):  # torch tensor
        return value.detach().cpu().numpy()
    return value


def assert_same(a: Any, b: Any, *, rtol: float, atol: float, where: str = "result") -> None:
    """Recursive equality to tolerance; NaNs equal NaNs; strings/ints exactly."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), f"{where}: keys {sorted(a)} != {sorted(b)}"
        for k in a:
            assert_same(a[k], b[k], rtol=rtol, atol=atol, where=f"{where}.{k}")
        return
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), f"{where}: lengths differ"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, rtol=rtol, atol=atol, where=f"{where}[{i}]")
        return
    if a is None or b is None:
        assert a is None and b is None, f"{where}: {a!r} != {b!r}"
        return
    if isinstance(a, str | bytes):
        assert a == b, f"{where}: {a!r} != {b!r}"
        return
    x, y = np.asarray(a), np.asarray(b)
    assert x.shape == y.shape, f"{where}: shape {x.shape} != {y.shape}"
    if x.dtype.kind in "fc" or y.dtype.kind in "fc":
        np.testing.assert_allclose(x, y, rtol=rtol, atol=atol, equal_nan=True, err_msg=where)
    else:
        np.testing.assert_array_equal(x, y, err_msg=where)
