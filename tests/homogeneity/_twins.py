"""Reference twins of the analyses layer: aria_tda.homogeneity (top-K groups, K-sweep pair sums,
null, homogeneity with evidence pairs) and aria_tda.alignment (alpha_max / alpha_reg)."""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np

from aria_tda.alignment import alignment, alignment_reference
from aria_tda.features.registry import FeatureSpec
from aria_tda.homogeneity import homogeneity, null_distribution, top_k_groups
from aria_tda.homogeneity.anchor import anchored_z, anchored_z_reference
from aria_tda.homogeneity.core import homogeneity_reference
from aria_tda.homogeneity.distinctive import (
    read_queries,
    read_queries_reference,
    read_sets,
    read_sets_reference,
)
from aria_tda.homogeneity.groups import (
    constant_queries,
    constant_queries_reference,
    top_k_groups_reference,
)
from aria_tda.homogeneity.item_alignment import item_alignment, item_alignment_reference
from aria_tda.homogeneity.null import null_distribution_reference
from aria_tda.homogeneity.profiles import distinctive_groups, distinctive_groups_reference
from aria_tda.homogeneity.sweep import group_sums, group_sums_reference
from aria_tda.similarity import prepare_feature
from twinlib import Inputs, Twin


def _features(rng: np.random.Generator, n: int) -> dict[str, list[Any]]:
    def vec(name: str, channel: str, x: np.ndarray) -> Any:
        spec = FeatureSpec(name, channel, "audio", "vector", x.shape[1], "std_euclidean",
                           "audio", "test")
        return prepare_feature(spec, x)

    seq = FeatureSpec("chords", "harmony", "audio", "sequence", None, "chord_lcs", "audio",
                      "test")
    chords = [rng.integers(0, 12, rng.integers(0, 20)) for _ in range(n)]
    return {
        "rhythm": [vec("onset", "rhythm", rng.standard_normal((n, 3)))],
        "harmony": [vec("chroma", "harmony", rng.standard_normal((n, 4))),
                    prepare_feature(seq, chords)],
    }


# ---------------------------------------------------------------------------- top-K groups


def _scores(rng: np.random.Generator) -> Inputs:
    s = rng.integers(0, 6, (70, 9)).astype(np.float64)  # many ties: the tie rule matters
    pool = rng.random(70) < 0.8
    return (s, 12), {"pool": pool, "return_scores": True}


def _permute_queries(rng: np.random.Generator, args: tuple[Any, ...], kwargs: dict[str, Any]):
    s, k = args
    perm = rng.permutation(s.shape[1])
    return (s[:, perm], k), kwargs, lambda res: (res[0][perm], res[1][perm])


def _constant_columns(rng: np.random.Generator) -> Inputs:
    s = rng.standard_normal((50, 8)).astype(np.float32)
    s[:, 2] = 1.5
    s[:, 5] = np.float32(2.0) + np.float32(2e-7) * rng.integers(0, 2, 50)  # rounding noise
    s[:20, 6] = rng.standard_normal(20)  # constant over the pool (rows 20..) only
    s[20:, 6] = -1.0
    return (s,), {"pool": np.arange(20, 50)}


def _permute_columns(rng: np.random.Generator, args: tuple[Any, ...], kwargs: dict[str, Any]):
    perm = rng.permutation(args[0].shape[1])
    return (args[0][:, perm],), kwargs, lambda res: res[perm]


# ---------------------------------------------------------------------- K-sweep pair sums


def _groups(rng: np.random.Generator) -> Inputs:
    feats = [f for fs in _features(rng, 50).values() for f in fs]
    groups = np.stack([rng.permutation(50)[:12] for _ in range(6)])
    return (feats, groups, np.array([2, 5, 12])), {"n_jobs": 2}


def _permute_groups(rng: np.random.Generator, args: tuple[Any, ...], kwargs: dict[str, Any]):
    feats, groups, ks = args
    perm = rng.permutation(groups.shape[0])
    return (feats, groups[perm], ks), kwargs, lambda res: res[perm]


# ------------------------------------------------------------------------------------ null


def _null_inputs(rng: np.random.Generator) -> Inputs:
    return (_features(rng, 45),), {"ks": [3, 8], "B": 7, "seed": int(rng.integers(100))}


def _matched_null_inputs(rng: np.random.Generator) -> Inputs:
    """A segment-matched null: tracks of 1-4 segments, ranked (ties in mean rank happen)."""
    args, kwargs = _null_inputs(rng)
    pool = rng.random(45) < 0.9
    return args, {**kwargs, "pool": pool, "segment_counts": rng.integers(1, 5, 45),
                  "normalize": "rank"}


# ----------------------------------------------------------------------------- homogeneity


def _homogeneity_inputs(rng: np.random.Generator) -> Inputs:
    prepared = _features(rng, 60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        null = null_distribution(prepared, ks=[4, 9], B=8, seed=1)
    groups = top_k_groups(rng.standard_normal((60, 7)), 9)
    constant = np.zeros(7, dtype=bool)
    constant[3] = True
    return (groups, prepared, null), {"evidence_k": 9, "n_pairs": 6, "constant": constant}


def _permute_homogeneity(rng: np.random.Generator, args: tuple[Any, ...],
                         kwargs: dict[str, Any]):
    groups, prepared, null = args
    perm = rng.permutation(groups.shape[0])

    def expect(res: Any) -> Any:
        return dataclasses.replace(
            res, g=res.g[..., perm], z_feature=res.z_feature[..., perm],
            g_channel=res.g_channel[..., perm], z=res.z[..., perm],
            pair_rows=res.pair_rows[perm], pair_contribution=res.pair_contribution[perm],
            pair_similarity=res.pair_similarity[perm], constant=res.constant[perm],
        )

    return (groups[perm], prepared, null), {**kwargs, "constant": kwargs["constant"][perm]}, expect


# ------------------------------------------------------------------------------- alignment


def _alignment_inputs(rng: np.random.Generator) -> Inputs:
    n = 40
    x = rng.standard_normal((n, 3))
    groups = {"a": x, "b": rng.standard_normal((n, 1)), "c": rng.standard_normal((n, 5))}
    groups["c"][4] = np.nan
    u1 = x @ np.array([1.0, -0.5, 0.0]) + 0.5 * rng.standard_normal(n)
    return (u1, groups), {}


def _permute_tracks(rng: np.random.Generator, args: tuple[Any, ...], kwargs: dict[str, Any]):
    u1, groups = args
    perm = rng.permutation(u1.size)
    return (u1[perm], {k: v[perm] for k, v in groups.items()}), kwargs, lambda res: res


# -------------------------------------------------------------------- distinctive reading


def _profiles_inputs(rng: np.random.Generator) -> Inputs:
    s = rng.standard_normal((60, 10))
    s[:, 4] = 2.0  # a constant column: no group
    pool = rng.random(60) < 0.85
    sets = [np.array([0, 1, 2]), np.array([3, 4, 5, 6]), np.array([4])]
    exclude = np.zeros(10, dtype=bool)
    exclude[9] = True
    return (s, 7), {"pool": pool, "sets": sets, "n_reference": 5, "seed": 3,
                    "exclude": exclude}


def _anchor_inputs(rng: np.random.Generator) -> Inputs:
    prepared = _features(rng, 50)
    t = 6
    values = {"onset": rng.standard_normal((t, 3)), "chroma": rng.standard_normal((t, 4)),
              "chords": [rng.integers(0, 12, rng.integers(0, 20)) for _ in range(t)]}
    values["chroma"][2] = np.nan  # a query without one of harmony's features
    values["onset"][4] = np.nan  # ... and one without rhythm
    pool = np.ones(50, dtype=bool)
    pool[[7, 8]] = False
    rows = np.flatnonzero(pool)
    evals = [(rng.choice(rows, 8, replace=False), np.array([q])) for q in range(t)]
    evals.append((rng.choice(rows, 8, replace=False), np.array([1, 2, 4])))
    null_groups = np.stack([rng.choice(rows, 8, replace=False) for _ in range(6)])
    return (prepared, values, evals, 8), {"pool": pool, "n_queries": t,
                                           "null_groups": null_groups, "n_sample": 3, "seed": 2}


def _item_inputs(rng: np.random.Generator) -> Inputs:
    (prepared, values, _evals, _k), kw = _anchor_inputs(rng)
    rows = np.flatnonzero(kw["pool"])
    t = kw["n_queries"]
    groups = np.stack([rng.choice(rows, 5, replace=False) for _ in range(t)])
    exclude = np.zeros(t, dtype=bool)
    exclude[-1] = True
    return (prepared, values, groups), {"pool": kw["pool"], "exclude": exclude}


def _read_queries_inputs(rng: np.random.Generator) -> Inputs:
    z = rng.standard_normal((4, 30)) * rng.uniform(0.5, 3, (4, 1))
    z[:, 5] += np.array([6.0, 0, 0, 0])
    z[2, 7] = np.nan
    valid = rng.random(30) < 0.9
    return (z, valid, 2.2), {}


def _read_sets_inputs(rng: np.random.Generator) -> Inputs:
    z_ref = rng.standard_normal((4, 40)) * rng.uniform(0.5, 3, (4, 1))
    z_sets = rng.standard_normal((4, 3))
    z_sets[1, 0] += 8.0
    z_ref[3, 2] = np.nan
    return (z_sets, z_ref, 0.05), {}


TWINS = [
    Twin("homogeneity.top_k_groups", top_k_groups, top_k_groups_reference, _scores,
         chunk=("chunk_rows", (1, 7, 1000)), permute=_permute_queries),
    Twin("homogeneity.constant_queries", constant_queries, constant_queries_reference,
         _constant_columns, chunk=("chunk_rows", (1, 7, 1000)), permute=_permute_columns),
    Twin("homogeneity.group_sums", group_sums, group_sums_reference, _groups,
         permute=_permute_groups),
    Twin("homogeneity.null_distribution", null_distribution, null_distribution_reference,
         _null_inputs),
    Twin("homogeneity.null_distribution[segment-matched]", null_distribution,
         null_distribution_reference, _matched_null_inputs),
    Twin("homogeneity.homogeneity", homogeneity, homogeneity_reference, _homogeneity_inputs,
         permute=_permute_homogeneity, rtol=1e-9, atol=1e-11),
    Twin("alignment.alignment", alignment, alignment_reference, _alignment_inputs, rtol=1e-8,
         atol=1e-12),
    Twin("homogeneity.distinctive_groups", distinctive_groups, distinctive_groups_reference,
         _profiles_inputs, chunk=("chunk_rows", (1, 7, 1000))),
    Twin("homogeneity.anchored_z", anchored_z, anchored_z_reference, _anchor_inputs,
         chunk=("block", (1, 4, 100)), rtol=1e-9, atol=1e-10),
    Twin("homogeneity.item_alignment", item_alignment, item_alignment_reference, _item_inputs,
         chunk=("block", (1, 4, 100)), rtol=1e-9, atol=1e-10),
    Twin("homogeneity.read_queries", read_queries, read_queries_reference,
         _read_queries_inputs),
    Twin("homogeneity.read_sets", read_sets, read_sets_reference, _read_sets_inputs),
]
