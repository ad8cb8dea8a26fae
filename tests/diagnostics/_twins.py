"""Reference twin of :func:`aria_tda.diagnostics.diagnose`.

The streaming diagnostics against :func:`aria_tda.diagnostics.diagnose_reference`
(``np.corrcoef`` + ``np.linalg.svd``), with chunk-size invariance (``chunk_rows``) and
permutation invariance: permuting the rows of ``S`` leaves every diagnostic unchanged;
permuting its columns (queries) permutes ``v1`` the same way and nothing else.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from aria_tda.diagnostics import diagnose, diagnose_reference
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


# -- many queries: the tiled exact path, the block Krylov solver, the sampled κ -------------
from aria_tda.diagnostics.kappa import kappa_estimate, kappa_estimate_reference  # noqa: E402
from aria_tda.diagnostics.krylov import (  # noqa: E402
    block_krylov_eigs,
    block_krylov_eigs_reference,
)


def _make_tiled(rng: np.random.Generator) -> tuple[tuple[Any, ...], dict[str, Any]]:
    args, kwargs = _make(rng)
    return args, {**kwargs, "mode": "exact-tiled", "memory": "64KB"}


def _make_krylov(rng: np.random.Generator) -> tuple[tuple[Any, ...], dict[str, Any]]:
    s = rng.standard_normal((60, 3)) @ rng.standard_normal((3, 24)) + 0.2 * rng.standard_normal(
        (60, 24)
    )
    g = s.T @ s
    return (lambda v: g @ v, 24, 5), {"trace": float(np.trace(g)), "max_products": 10}


def _make_kappa(rng: np.random.Generator) -> tuple[tuple[Any, ...], dict[str, Any]]:
    x = rng.standard_normal((80, 2)) @ rng.standard_normal((2, 15)) + rng.standard_normal((80, 15))
    a = np.abs(np.corrcoef(x, rowvar=False))
    return (a, 40), {"level": 0.9}


def _permute_kappa(rng: np.random.Generator, args: Any, kwargs: Any) -> Any:
    a, n = args
    p = rng.permutation(a.shape[0])
    return (a[np.ix_(p, p)], n), dict(kwargs), lambda r: r


TWINS += [
    Twin(
        name="diagnostics.diagnose[exact-tiled]",
        fast=diagnose,
        reference=diagnose_reference,
        make=_make_tiled,
        chunk=("chunk_rows", (1, 7, 1000)),
        permute=_permute,
        rtol=1e-8,
        atol=1e-10,
        ignore=("mode", "sources", "details"),
    ),
    Twin(
        name="diagnostics.krylov.block_krylov_eigs",
        fast=block_krylov_eigs,
        reference=block_krylov_eigs_reference,
        make=_make_krylov,
        rtol=1e-9,
        atol=1e-9,
        ignore=("vectors", "lower", "upper", "residuals", "certified", "n_products", "dim"),
    ),
    Twin(
        name="diagnostics.kappa.kappa_estimate",
        fast=kappa_estimate,
        reference=kappa_estimate_reference,
        make=_make_kappa,
        permute=_permute_kappa,
        rtol=1e-10,
        atol=1e-12,
    ),
]
