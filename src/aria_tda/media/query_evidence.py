r"""Per-query evidence, packed compactly for the HTML page.

What is packed
--------------
For every (setting, variant) *block* and every query :math:`q` (rows in the order of
``queries``):

- ``topk_idx`` int32 [shape=(T, N)] — track codes (indices into ``tracks``) of the top-N
  attributed tracks, best first; ``-1`` where a query has fewer;
- ``topk_score`` float32 [shape=(T, N)] — their :math:`S^{\mathrm{track}}` scores;
- ``z`` float32 [shape=(T, C)] — :math:`z_c(q)` at the evidence K, NaN where absent;
- ``pair_a``, ``pair_b`` int32 [shape=(T, C, P)] and ``pair_sim``, ``pair_contrib`` float32
  [shape=(T, C, P)] — the P pairs of :math:`A_K(q)` contributing most to each channel.

Encoding
--------
A block's arrays are concatenated little-endian, byte-shuffled per array (all bytes 0 of the
array, then all bytes 1, ...: exponent and high bytes group together and compress far better),
gzip-compressed and base64-encoded. The page decodes a block only when it is first shown
(``DecompressionStream('gzip')``, built into current browsers), so a report with many settings
opens fast. At the paper's scale (T = 7,148 queries) N = 25 and P = 5 give roughly 1 MB per block.
"""

from __future__ import annotations

import base64
import gzip
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from aria_tda.report.load import ResultsData

__all__ = [
    "EvidenceBlock",
    "EvidencePayload",
    "build_evidence",
    "pack_arrays",
    "random_pair_means",
    "unpack_arrays",
]


@dataclass
class EvidenceBlock:
    """One (setting, variant) block: JSON header fields and the packed binary."""

    setting: str
    variant: str
    header: dict[str, Any]
    data: str  # base64 of gzip of the shuffled arrays


@dataclass
class EvidencePayload:
    """Everything the per-query view needs (JSON-able header + packed blocks)."""

    header: dict[str, Any]
    blocks: list[EvidenceBlock] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not self.blocks


def pack_arrays(arrays: dict[str, np.ndarray]) -> tuple[str, dict[str, dict[str, Any]]]:
    """Pack 4-byte arrays into one base64(gzip(shuffled bytes)) string and a layout.

    Parameters
    ----------
    arrays : dict[str, numpy.ndarray]
        Arrays of any shape, packed in this order. Integer arrays are stored as little-endian
        int32, all others as little-endian float32 (NaN kept), each byte-shuffled (see the
        module docstring).

    Returns
    -------
    data : str
        Base64 (ASCII) of the gzip-compressed concatenation of the shuffled arrays.
    layout : dict
        name -> ``{"type": "i32"|"f32", "offset": byte offset, "length": n elements,
        "shape": [...]}``.
    """
    parts = []
    layout: dict[str, dict[str, Any]] = {}
    off = 0
    for name, a in arrays.items():
        if a.dtype.kind in "iu":
            arr, typ = np.ascontiguousarray(a, dtype="<i4"), "i32"
        else:
            arr, typ = np.ascontiguousarray(a, dtype="<f4"), "f32"
        shuffled = arr.reshape(-1).view(np.uint8).reshape(-1, 4).T.tobytes()
        layout[name] = {
            "type": typ,
            "offset": off,
            "length": int(arr.size),
            "shape": list(arr.shape),
        }
        parts.append(shuffled)
        off += len(shuffled)
    raw = b"".join(parts)
    return base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode("ascii"), layout


def unpack_arrays(data: str, layout: dict[str, dict[str, Any]]) -> dict[str, np.ndarray]:
    """Inverse of :func:`pack_arrays` (the reference for the page's JavaScript decoder).

    Parameters
    ----------
    data : str
        The packed string returned by :func:`pack_arrays`.
    layout : dict
        Its layout: name -> ``{"type", "offset", "length", "shape"}``.

    Returns
    -------
    dict[str, numpy.ndarray]
        Arrays by name, in ``layout`` order: int32 for ``"i32"``, float32 for
        ``"f32"``, with their original shapes; bit-exact with the packed input.
    """
    raw = gzip.decompress(base64.b64decode(data))
    out = {}
    for name, spec in layout.items():
        n = spec["length"]
        chunk = np.frombuffer(raw, dtype=np.uint8, count=4 * n, offset=spec["offset"])
        unshuffled = chunk.reshape(4, n).T.copy().reshape(-1)
        out[name] = unshuffled.view("<i4" if spec["type"] == "i32" else "<f4").reshape(
            spec["shape"]
        )
    return out


def _meta_columns(
    df: pd.DataFrame, key: str, ids: np.ndarray, skip: tuple[str, ...]
) -> dict[str, list[str]]:
    """Columnar string metadata of ``ids`` from ``df`` (key column ``key``); blanks as ''."""
    df = df.drop_duplicates(subset=[key], keep="last").set_index(key)
    out = {}
    for col in df.columns:
        if col in skip:
            continue
        s = df[col].reindex(ids)
        out[str(col)] = ["" if pd.isna(v) else str(v) for v in s]
    return out


def _codes(values: pd.Series, categories: list[str]) -> np.ndarray:
    """Integer code of each value in ``categories`` (-1 when absent)."""
    return np.asarray(pd.Index(categories).get_indexer(pd.Index(values)), dtype=np.int64)


def _position(
    order_keys: tuple[np.ndarray, ...], group: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Sort rows by ``group`` then ``order_keys`` (last key most significant, as np.lexsort);
    return the sorting permutation and each sorted row's 0-based position within its group."""
    perm = np.lexsort((*order_keys, group))
    g = group[perm]
    if g.size == 0:
        return perm, np.zeros(0, dtype=np.int64)
    starts = np.r_[0, np.flatnonzero(np.diff(g)) + 1]
    lengths = np.diff(np.r_[starts, g.size])
    return perm, np.arange(g.size) - np.repeat(starts, lengths)


def _factorize_parts(parts: list[pd.Series]) -> tuple[list[np.ndarray], list[str]]:
    """Codes of every part's values in one shared list of (string) labels, first appearance first.

    Each part is factorised on its own (fast for Arrow strings and categoricals, no per-row
    Python objects); only the distinct labels are merged.
    """
    labels: dict[str, int] = {}
    out = []
    for p in parts:
        codes, uniques = pd.factorize(p)
        mapping = np.fromiter(
            (labels.setdefault(str(u), len(labels)) for u in uniques),
            dtype=np.int64,
            count=len(uniques),
        )
        mapped = np.full(codes.shape, -1, dtype=np.int64)
        ok = codes >= 0
        mapped[ok] = mapping[codes[ok]]
        out.append(mapped)
    return out, list(labels)


def random_pair_means(data: ResultsData, k: int | None) -> dict[tuple[str, str], dict[str, float]]:
    r"""A random pair's mean similarity per channel, for every (setting, variant), at ``k``.

    The null's per-feature :math:`\mu_d` (``null`` table, ``feature != '*'``) is the expected
    similarity of a random pair of training tracks; its mean over the channel's features is
    the number to compare a pair's (feature-averaged) ``similarity`` with.

    Parameters
    ----------
    data : ResultsData
        The results folder.
    k : int or None
        Group size of the null rows used (``None``: none).

    Returns
    -------
    dict
        ``(setting, variant) -> {channel: mean similarity}``; a null table without
        ``setting``/``variant`` columns applies to every block (key ``("*", "*")``).
    """
    null = data.table("null")
    if null is None or null.empty or k is None or "mu" not in null.columns:
        return {}
    n = null[(null["K"] == k) & (null["feature"].astype(str) != "*")]
    keys = [c for c in ("setting", "variant") if c in n.columns]
    out: dict[tuple[str, str], dict[str, float]] = {}
    if len(keys) < 2:
        means = {str(c): float(g["mu"].mean()) for c, g in n.groupby("channel", sort=False)}
        out.update({(s, v): means for s in data.settings for v in data.variants})
        return out
    for (s, v, c), g in n.groupby(["setting", "variant", "channel"], sort=False):
        out.setdefault((str(s), str(v)), {})[str(c)] = float(g["mu"].mean())
    return out


def _aspect_arrays(data: ResultsData, arrays_all: dict[str, np.ndarray], has: np.ndarray,
                   block_of: Any, queries: np.ndarray, channels: list[str],
                   nb: int) -> dict[tuple[str, str], dict[str, Any]]:
    """The distinctive reading into the dense arrays (``aspect_named``: channel index, -1 for
    none, -2 for no reading; ``aspect_delta``) and each block's header fields."""
    qa, asp = data.table("query_aspects"), data.table("aspects")
    if qa is None or asp is None or qa.empty or asp.empty:
        return {}
    t, c_n = len(queries), len(channels)
    b = block_of(qa)
    c = _codes(qa["channel"], channels)
    q = np.searchsorted(queries, qa["query"].to_numpy())
    ok = (b >= 0) & (c >= 0) & (q < t)
    ok[ok] &= queries[q[ok]] == qa["query"].to_numpy()[ok]
    delta = np.full((nb, t, c_n), np.nan, dtype=np.float32)
    delta[b[ok], q[ok], c[ok]] = qa["delta"].to_numpy(dtype=np.float64)[ok]
    named = np.full((nb, t), -2, dtype=np.int32)
    ans = qa["named"].astype(str).to_numpy()
    code = np.where(ans == "none", -1, _codes(pd.Series(ans), channels))
    named[b[ok], q[ok]] = code[ok]
    arrays_all["aspect_named"] = named
    arrays_all["aspect_delta"] = delta
    has[np.unique(b[ok])] = True
    from aria_tda.report.words import ANCHOR_WORDS

    out = {}
    for (s, v), g in asp.groupby(["setting", "variant"], sort=False):
        first = g.iloc[0]
        out[(str(s), str(v))] = {
            "anchor": str(first["anchor"]),
            "anchor_words": ANCHOR_WORDS.get(str(first["anchor"]), str(first["anchor"])),
            "k": int(first["K"]), "alpha": float(first.get("alpha", np.nan)),
            "threshold": float(first.get("threshold", np.nan)),
            "method_aspect": str(first["method_aspect"]),
            "baseline": {str(r.channel): float(r.baseline) for r in g.itertuples()},
        }
    return out


def _likeness_arrays(data: ResultsData, arrays_all: dict[str, np.ndarray], block_of: Any,
                     queries: np.ndarray, channels: list[str], nb: int, n: int) -> None:
    """How like its query each listed track is (``item_alignment``), aligned with ``topk_idx``:
    ``like_pct`` (percentile among the pool's tracks) and ``like_info`` (1 informative, 0 the
    channel cannot tell tracks apart, -1 not computed), each ``(nb, T, n, C)``."""
    ia, topk = data.table("item_alignment"), data.table("topk")
    if ia is None or ia.empty or topk is None or topk.empty or n <= 0:
        return
    t, c_n = len(queries), len(channels)
    b = block_of(ia)
    c = _codes(ia["channel"], channels)
    q = np.searchsorted(queries, ia["query"].to_numpy())
    pos = ia["rank"].to_numpy(dtype=np.int64) - int(topk["rank"].min())
    ok = (b >= 0) & (c >= 0) & (q < t) & (pos >= 0) & (pos < n)
    ok[ok] &= queries[q[ok]] == ia["query"].to_numpy()[ok]
    pct = np.full((nb, t, n, c_n), np.nan, dtype=np.float32)
    info = np.full((nb, t, n, c_n), -1, dtype=np.int8)
    at = (b[ok], q[ok], pos[ok], c[ok])
    pct[at] = ia["percentile"].to_numpy(dtype=np.float64)[ok]
    info[at] = ia["informative"].to_numpy(dtype=bool)[ok].astype(np.int8)
    arrays_all["like_pct"], arrays_all["like_info"] = pct, info


def build_evidence(
    data: ResultsData,
    *,
    k: int | None,
    top_n: int = 25,
    pairs_per_channel: int = 5,
) -> EvidencePayload:
    """Pack the per-query tables (``topk``, ``query_z``, ``pairs``) of ``data``.

    Parameters
    ----------
    data : ResultsData
        The results folder, as read by :func:`aria_tda.report.load.load_results`; its display
        orders of settings, variants and channels fix the block and channel order.
    k : int or None
        Group size of the z-scores and pairs shown (each falls back to the largest K it was
        written for when ``k`` has none).
    top_n : int
        Attributed tracks kept per query and block, by increasing ``rank``.
    pairs_per_channel : int
        Contributing pairs kept per query, channel and block, highest ``contribution`` first
        (0 leaves the pairs out).

    Notes
    -----
    Everything is vectorised over all blocks at once (integer codes for setting, variant,
    query, channel; one ``lexsort`` per table), so a paper-scale folder (30 blocks × 7,148
    queries, millions of rows) is packed in seconds.
    """
    topk, qz, pairs = data.table("topk"), data.table("query_z"), data.table("pairs")
    channels, settings, variants = list(data.channels), list(data.settings), list(data.variants)
    C, V = len(channels), len(variants)
    nb = len(settings) * V

    def block_of(df: pd.DataFrame) -> np.ndarray:
        s, v = _codes(df["setting"], settings), _codes(df["variant"], variants)
        return np.where((s >= 0) & (v >= 0), s * V + v, -1)

    qk = pk = None
    if qz is not None and len(qz):
        qk = k if k in set(qz["K"]) else int(qz["K"].max())
        qz = qz[qz["K"].to_numpy() == qk]
    else:
        qz = None
    if pairs is not None and len(pairs) and pairs_per_channel > 0:
        pk = k if k in set(pairs["K"]) else int(pairs["K"].max())
        pairs = pairs[pairs["K"].to_numpy() == pk]
    else:
        pairs = None
    if topk is not None and len(topk):
        topk = topk[
            topk["rank"].to_numpy() < topk["rank"].min() + top_n
        ]  # cheap cut first (ranks start at 1)
    else:
        topk = None

    q_all = [t["query"].to_numpy() for t in (topk, qz, pairs) if t is not None]
    qmeta = data.table("queries")
    if qmeta is not None and len(qmeta):
        q_all.append(qmeta["query"].to_numpy())
    queries = np.unique(np.concatenate(q_all)).astype(np.int64) if q_all else np.zeros(0, np.int64)
    T = len(queries)

    # -- top-k: positions by rank within (block, query)
    tk = None
    if topk is not None:
        b = block_of(topk)
        q = np.searchsorted(queries, topk["query"].to_numpy())
        perm, pos = _position((topk["rank"].to_numpy(),), b * max(T, 1) + q)
        keep = (pos < top_n) & (b[perm] >= 0)
        rows = perm[keep]
        tk = {
            "b": b[rows],
            "q": q[rows],
            "pos": pos[keep],
            "track": topk["track_id"].iloc[rows],
            "score": topk["score"].to_numpy()[rows],
        }
    # -- pairs: positions by decreasing contribution within (block, query, channel)
    pr = None
    if pairs is not None:
        b = block_of(pairs)
        q = np.searchsorted(queries, pairs["query"].to_numpy())
        c = _codes(pairs["channel"], channels)
        contrib = pairs["contribution"].to_numpy(dtype=np.float64)
        perm, pos = _position((-contrib,), (b * max(T, 1) + q) * max(C, 1) + c)
        keep = (pos < pairs_per_channel) & (b[perm] >= 0) & (c[perm] >= 0)
        rows = perm[keep]
        pr = {
            "b": b[rows],
            "q": q[rows],
            "c": c[rows],
            "pos": pos[keep],
            "a": pairs["track_a"].iloc[rows],
            "bb": pairs["track_b"].iloc[rows],
            "sim": pairs["similarity"].to_numpy()[rows],
            "con": contrib[rows],
        }

    # -- one code per track over everything shown
    parts = ([tk["track"]] if tk else []) + ([pr["a"], pr["bb"]] if pr else [])
    codes, tracks = _factorize_parts(parts)
    if tk:
        tk["code"] = codes.pop(0)
    if pr:
        pr["code_a"], pr["code_b"] = codes

    header: dict[str, Any] = {
        "channels": channels,
        "k": qk,
        "pairs_k": pk,
        "top_n": int(top_n),
        "pairs_per_channel": int(pairs_per_channel),
        "queries": {"ids": queries.tolist()},
        "tracks": {"ids": tracks},
        "blocks": [],
    }
    if qmeta is not None and len(qmeta):
        header["queries"]["meta"] = _meta_columns(qmeta, "query", queries, skip=())
    tmeta = data.table("tracks")
    if tmeta is not None and len(tmeta) and tracks:
        header["tracks"]["meta"] = _meta_columns(
            tmeta.assign(track_id=tmeta["track_id"].astype(str)),
            "track_id",
            np.asarray(tracks, dtype=object),
            skip=(),
        )

    # -- dense arrays over all blocks, then one packed string per block that has data
    has = np.zeros(nb, dtype=bool)
    arrays_all: dict[str, np.ndarray] = {}
    if tk and len(tk["pos"]):
        n = int(tk["pos"].max()) + 1
        arrays_all["topk_idx"] = np.full((nb, T, n), -1, dtype=np.int32)
        arrays_all["topk_score"] = np.full((nb, T, n), np.nan, dtype=np.float32)
        arrays_all["topk_idx"][tk["b"], tk["q"], tk["pos"]] = tk["code"]
        arrays_all["topk_score"][tk["b"], tk["q"], tk["pos"]] = tk["score"]
        has[np.unique(tk["b"])] = True
    if qz is not None:
        b = block_of(qz)
        c = _codes(qz["channel"], channels)
        ok = (b >= 0) & (c >= 0)
        z = np.full((nb, T, C), np.nan, dtype=np.float32)
        z[b[ok], np.searchsorted(queries, qz["query"].to_numpy()[ok]), c[ok]] = qz["z"].to_numpy()[
            ok
        ]
        arrays_all["z"] = z
        has[np.unique(b[ok])] = True
    if pr and len(pr["pos"]):
        P = int(pairs_per_channel)
        at = (pr["b"], pr["q"], pr["c"], pr["pos"])
        for name, dtype, fill, vals in (
            ("pair_a", np.int32, -1, pr["code_a"]),
            ("pair_b", np.int32, -1, pr["code_b"]),
            ("pair_sim", np.float32, np.nan, pr["sim"]),
            ("pair_contrib", np.float32, np.nan, pr["con"]),
        ):
            arr = np.full((nb, T, C, P), fill, dtype=dtype)
            arr[at] = vals
            arrays_all[name] = arr
        has[np.unique(pr["b"])] = True

    aspect_info = _aspect_arrays(data, arrays_all, has, block_of, queries, channels, nb)
    if "topk_idx" in arrays_all:
        _likeness_arrays(data, arrays_all, block_of, queries, channels, nb,
                         arrays_all["topk_idx"].shape[2])
    random_means = random_pair_means(data, pk)
    payload = EvidencePayload(header)
    for bi in np.flatnonzero(has):
        s, v = settings[bi // V], variants[bi % V]
        block_arrays = {name: a[bi] for name, a in arrays_all.items()}
        if "z" in block_arrays and np.isnan(block_arrays["z"]).all():
            del block_arrays["z"]
        if "topk_idx" in block_arrays and (block_arrays["topk_idx"] < 0).all():
            del block_arrays["topk_idx"], block_arrays["topk_score"]
        if "pair_a" in block_arrays and (block_arrays["pair_a"] < 0).all():
            for name in ("pair_a", "pair_b", "pair_sim", "pair_contrib"):
                del block_arrays[name]
        if "like_info" in block_arrays and (block_arrays["like_info"] < 0).all():
            del block_arrays["like_pct"], block_arrays["like_info"]
        if "aspect_named" in block_arrays and (block_arrays["aspect_named"] == -2).all():
            del block_arrays["aspect_named"], block_arrays["aspect_delta"]
        packed, layout = pack_arrays(block_arrays)
        info = data.setting_info(s)
        bh = {
            "id": len(payload.blocks),
            "setting": s,
            "variant": v,
            "verdict": info["verdict"],
            "reason": info["reason"],
            "layout": layout,
            "random_mean": random_means.get((s, v), {}),
            **({"aspect": aspect_info[(s, v)]} if (s, v) in aspect_info else {}),
        }
        payload.blocks.append(EvidenceBlock(s, v, bh, packed))
        header["blocks"].append(bh)
    return payload
