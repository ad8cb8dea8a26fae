"""Reference twin of :func:`aria_tda.diagnostics.diagnose`.

The streaming diagnostics against :func:`aria_tda.diagnostics.diagnose_reference`
(``np.corrcoef`` + ``np.linalg.svd``), with chunk-size invariance (``chunk_rows``) and
permutation invariance: permuting the rows of ``S`` leaves every diagnostic unchanged;
permuting its columns (queries) permutes ``v1`` the same way and nothing else. The top-K
concentration computed in the same pass is compared too, except ``top1_row`` (a row index, which
a row permutation renames; the concentration's own twin below checks it).
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

    inv = np.argsort(r)  # old row i is new row inv[i]

    def expect(d: Any) -> Any:
        if isinstance(d, dict):
            return {**d, "v1": np.asarray(d["v1"])[c]}
        conc = getattr(d, "concentration", None)
        if conc is not None:  # the same top-K sets, under the rows' new numbers
            conc = dataclasses.replace(conc, top1_row=int(inv[conc.top1_row]))
            return dataclasses.replace(d, v1=d.v1[c], concentration=conc)
        return dataclasses.replace(d, v1=d.v1[c])

    return (s[r][:, c],), dict(kwargs), expect


def _make_tiny(rng: np.random.Generator) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Tiny float32 scores, columns 1e12 apart: float32 squares would underflow unscaled."""
    (s,), kwargs = _make(rng)
    return ((s * np.logspace(-6, 6, s.shape[1]) * 1e-21).astype(np.float32),), kwargs


TWINS = [
    Twin(
        name="diagnostics.diagnose[tiny float32]",
        fast=diagnose,
        reference=diagnose_reference,
        make=_make_tiny,
        chunk=("chunk_rows", (1, 7, 1000)),
        permute=_permute,
        rtol=1e-5,
        atol=1e-7,
        ignore=("sigma1", "frobenius", "u1"),
    ),
    Twin(
        name="diagnostics.diagnose",
        fast=diagnose,
        reference=diagnose_reference,
        make=_make,
        chunk=("chunk_rows", (1, 7, 1000)),
        permute=_permute,
        rtol=1e-8,
        atol=1e-10,
        ignore=("top1_row",),
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
        ignore=("mode", "sources", "details", "top1_row"),
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


# -- the top-K concentration ---------------------------------------------------------------
from aria_tda.diagnostics.concentration import (  # noqa: E402
    topk_concentration,
    topk_concentration_reference,
)


def _make_conc(rng: np.random.Generator) -> tuple[tuple[Any, ...], dict[str, Any]]:
    # rounded scores: many exact ties, broken by the lower row index
    s = np.round(2.0 * rng.standard_normal((120, 15)), 1)
    s[rng.choice(120, 3, replace=False)] += 4.0  # a few dominant rows
    return (s,), {"ks": (1, 5, 20)}


def _make_conc_tracks(rng: np.random.Generator) -> tuple[tuple[Any, ...], dict[str, Any]]:
    # dyadic scores (multiples of 1/8): every track sum is exact in any order, so the streamed
    # means equal the reference's bit for bit and their many ties are real ties
    s = np.round(16.0 * rng.standard_normal((120, 15))) / 8.0
    return (s,), {"ks": (1, 5, 20), "groups": rng.integers(0, 40, s.shape[0])}


def _permute_conc_columns(rng: np.random.Generator, args: Any, kwargs: Any) -> Any:
    s = args[0]
    return (s[:, rng.permutation(s.shape[1])],), dict(kwargs), lambda r: r


TWINS += [
    Twin(
        name="diagnostics.concentration.topk_concentration",
        fast=topk_concentration,
        reference=topk_concentration_reference,
        make=_make_conc,
        chunk=("chunk_rows", (1, 7, 1000)),
        permute=_permute_conc_columns,
        rtol=1e-12,
        atol=1e-14,
    ),
    Twin(
        name="diagnostics.concentration.topk_concentration[track]",
        fast=topk_concentration,
        reference=topk_concentration_reference,
        make=_make_conc_tracks,
        chunk=("chunk_rows", (1, 7, 1000)),
        permute=_permute_conc_columns,
        rtol=1e-12,
        atol=1e-14,
    ),
]


from aria_tda.diagnostics.dependence import (  # noqa: E402
    query_dependence,
    query_dependence_reference,
)


def _make_dependence(rng: np.random.Generator) -> tuple[tuple[Any, ...], dict[str, Any]]:
    # class structure, a planted hub, and a pool: hubs named by track ids
    cls = rng.integers(0, 4, 30)
    s = rng.standard_normal((160, 4))[:, cls] + rng.standard_normal((160, 30))
    s[5] += 4.0
    return (s, 5), {"ks": (1, 5, 20), "rows": np.flatnonzero(rng.random(160) < 0.8),
                    "ids": np.array([f"t{i}" for i in range(160)])}


TWINS += [
    Twin(
        name="diagnostics.dependence.query_dependence",
        fast=query_dependence,
        reference=query_dependence_reference,
        make=_make_dependence,
        rtol=1e-10,
        atol=1e-12,
    ),
]
