"""Reference twin of :func:`aria.diagnostics.diagnose`.

The streaming diagnostics against :func:`aria.diagnostics.diagnose_reference`
(``np.corrcoef`` + ``np.linalg.svd``), with chunk-size invariance (``chunk_rows``) and
permutation invariance: permuting the rows of ``S`` leaves every diagnostic unchanged;
permuting its columns (queries) permutes ``v1`` the same way and nothing else.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from aria.diagnostics import diagnose, diagnose_reference
from twinlib import Twin


def _make(rng: np.random.Generator) -> tuple[tuple[Any, ...], dict[str, Any]]:
    m, t = 90, 11
    s = rng.standard_normal((m, 3)) @ rng.standard_normal((3, t)) + 0.3 * rng.standard_normal(
        (m, t)
    )
    return (s + 2.0,), {"n_energy": 6}


def _permute(rng: np.random.Generator, args: Any, kwargs: Any) -> Any:
    s = args[0]
    r, c = rng.permutation(s.shape[0]), rng.permutation(s.shape[1])

    def expect(d: Any) -> Any:
        if isinstance(d, dict):
            return {**d, "v1": np.asarray(d["v1"])[c]}
        return dataclasses.replace(d, v1=d.v1[c])

    return (s[r][:, c],), dict(kwargs), expect


TWINS = [
    Twin(
        name="diagnostics.diagnose",
        fast=diagnose,
        reference=diagnose_reference,
        make=_make,
        chunk=("chunk_rows", (1, 7, 1000)),
        permute=_permute,
        rtol=1e-8,
        atol=1e-10,
    )
]
