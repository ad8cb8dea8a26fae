r"""Numba kernels behind :mod:`aria_tda.similarity` and :mod:`aria_tda.homogeneity`.

Not public API — :mod:`aria_tda.similarity` wraps these with validation and documentation.

Bit-parallel LCS (Allison & Dix 1986; Crochemore et al. 2001; Hyyrö 2004)
--------------------------------------------------------------------------
For a sequence ``a`` of length ``m`` over an alphabet of size ``A``, precompute the match
masks ``M[c]`` (bit ``p`` set iff ``a[p] == c``), ``ceil(m / 64)`` words per symbol. With
``V`` initialised to all ones, each symbol ``c`` of ``b`` updates

.. math::  U = V \,\&\, M[c], \qquad V \leftarrow (V + U) \,|\, (V \,\&\, \lnot M[c])

(the usual ``(V + U) | (V - U)`` with ``V - U = V & ~M[c]`` because ``U ⊆ V``, so only the
addition needs a carry across words). After all of ``b``, ``LCS(a, b)`` is the number of
zero bits among the low ``m`` bits of ``V``. Cost ``O(ceil(m/64) · |b|)`` word operations.

The group kernel :func:`lcs_group_colsums` keeps ``b`` fixed (one column ``j`` of the group)
and updates the ``V`` words of all ``i < j`` together, so the inner loop runs over contiguous
arrays and is SIMD-vectorised; rows whose own length exceeds 64 are recomputed with the
multi-word scalar path.
"""

from __future__ import annotations

import numba as nb
import numpy as np

__all__ = [
    "anchored_z_accumulate",
    "build_masks",
    "lcs_group_colsums",
    "lcs_len_pair",
    "lcs_len_pairs",
    "topk_insert",
    "topk_stream_update",
    "vec_group_colsums",
]

_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)
_S1 = np.uint64(1)
_S2 = np.uint64(2)
_S4 = np.uint64(4)
_S56 = np.uint64(56)
_S63 = np.uint64(63)

# Reassociation lets the pair loops vectorise; NaN/inf semantics are kept (no nnan/ninf).
_FM = {"reassoc", "contract", "nsz"}

#: Streamed top-K (:func:`topk_stream_update`): columns per tile of the row sweep (one
#: vectorised "any score above its column's threshold?" test per tile); candidates held per
#: column before they are offered to its heap; a drain of at least ``_TOPK_WARM`` candidates
#: first reads the column's heap through in order, so that the sift moves find it in cache.
_TOPK_TILE = 16
_TOPK_BUCKET = 128
_TOPK_WARM = 8


@nb.njit(cache=True, nogil=True, inline="always")
def _popcount(x: np.uint64) -> np.uint64:
    x = x - ((x >> _S1) & _M1)
    x = (x & _M2) + ((x >> _S2) & _M2)
    x = (x + (x >> _S4)) & _M4
    return (x * _H01) >> _S56


@nb.njit(cache=True, nogil=True, inline="always")
def _low_mask(m: int) -> np.uint64:
    """Mask of the low ``m`` bits (``m <= 0`` -> 0, ``m >= 64`` -> all)."""
    if m >= 64:
        return _ALL
    if m <= 0:
        return _ZERO
    return (_ONE << np.uint64(m)) - _ONE


@nb.njit(cache=True, nogil=True, error_model="numpy")
def build_masks(flat, offsets, alphabet):  # pragma: no cover - numba
    """Match masks of every sequence.

    Returns ``masks`` (n_words_total, alphabet) uint64 — the words of sequence ``s`` are rows
    ``woff[s] .. woff[s+1]-1`` (``max(1, ceil(len / 64))`` words; contiguous per sequence) —
    and ``woff`` (n + 1,).
    """
    n = offsets.size - 1
    woff = np.zeros(n + 1, dtype=np.int64)
    for s in range(n):
        ln = offsets[s + 1] - offsets[s]
        nw = (ln + 63) // 64
        if nw < 1:
            nw = 1
        woff[s + 1] = woff[s] + nw
    masks = np.zeros((woff[n], alphabet), dtype=np.uint64)
    for s in range(n):
        o = offsets[s]
        ln = offsets[s + 1] - o
        for p in range(ln):
            masks[woff[s] + (p >> 6), flat[o + p]] |= _ONE << np.uint64(p & 63)
    return masks, woff


@nb.njit(cache=True, nogil=True, error_model="numpy")
def _lcs_holder(masks, woff, flat, offsets, h, o, work):  # pragma: no cover - numba
    """LCS length with ``h`` as the mask holder (any length) and ``o`` scanned."""
    lh = offsets[h + 1] - offsets[h]
    oo = offsets[o]
    lo = offsets[o + 1] - oo
    base = woff[h]
    nw = woff[h + 1] - base
    if nw == 1:
        v = _ALL
        for p in range(lo):
            m = masks[base, flat[oo + p]]
            v = (v + (v & m)) | (v & ~m)
        return lh - np.int64(_popcount(v & _low_mask(lh)))
    for w in range(nw):
        work[w] = _ALL
    for p in range(lo):
        c = flat[oo + p]
        carry = _ZERO
        for w in range(nw):
            m = masks[base + w, c]
            v = work[w]
            s = v + (v & m)
            c1 = s < v
            s2 = s + carry
            c2 = s2 < s
            work[w] = s2 | (v & ~m)
            carry = _ONE if (c1 or c2) else _ZERO
    ones = 0
    for w in range(nw):
        ones += np.int64(_popcount(work[w] & _low_mask(lh - 64 * w)))
    return lh - ones


@nb.njit(cache=True, nogil=True, error_model="numpy")
def lcs_len_pair(masks, woff, flat, offsets, i, j, work):  # pragma: no cover - numba
    """LCS length of sequences ``i`` and ``j`` (bit-parallel; ``work`` holds >= max words)."""
    li = offsets[i + 1] - offsets[i]
    lj = offsets[j + 1] - offsets[j]
    if li == 0 or lj == 0:
        return 0
    wi = woff[i + 1] - woff[i]
    wj = woff[j + 1] - woff[j]
    # cost = words(holder) * len(scanned); equal cost -> hold the longer, scan the shorter
    if wi * lj < wj * li or (wi * lj == wj * li and li >= lj):
        return _lcs_holder(masks, woff, flat, offsets, i, j, work)
    return _lcs_holder(masks, woff, flat, offsets, j, i, work)


@nb.njit(cache=True, nogil=True, error_model="numpy")
def lcs_len_pairs(masks, woff, flat, offsets, ii, jj, out):  # pragma: no cover - numba
    """``out[t] = LCS(ii[t], jj[t])`` for index arrays ``ii``, ``jj``."""
    wmax = 1
    for s in range(woff.size - 1):
        wmax = max(wmax, woff[s + 1] - woff[s])
    work = np.empty(wmax, dtype=np.uint64)
    for t in range(ii.size):
        out[t] = lcs_len_pair(masks, woff, flat, offsets, ii[t], jj[t], work)


@nb.njit(cache=True, nogil=True, fastmath=_FM, error_model="numpy")
def lcs_group_colsums(  # pragma: no cover - numba
    idx, masks, woff, flat, offsets, colsum, emat, weight, k_e, block
):
    r"""Column sums of the normalised-LCS similarity over a group.

    For the group ``idx`` (k,), ``colsum[j] = sum_{i<j} sim(idx[i], idx[j])`` with
    ``sim = LCS / max(len_i, len_j)`` (1 when both are empty). If ``k_e > 0``,
    ``emat[j, i] += weight * sim`` for ``i < j < k_e`` (lower triangle: row ``j`` is
    contiguous over ``i``). If ``block`` has shape (k, k),
    ``block[i, j] = block[j, i] = sim`` is also written (pass a (0, 0) array to skip).

    Column ``j`` is scanned symbol by symbol while the bit vectors ``V_i`` of all ``i < j``
    (mask holders, ``W`` words each, ``W`` = the group's largest word count) are updated
    together — a loop over contiguous arrays that the compiler vectorises. With ``W > 1``
    the word-to-word carries are kept per ``i``.
    """
    k = idx.size
    alphabet = masks.shape[1]
    wmax = 1
    for i in range(k):
        g = idx[i]
        wmax = max(wmax, woff[g + 1] - woff[g])
    mg = np.zeros((wmax, alphabet, k), dtype=np.uint64)
    low = np.empty((wmax, k), dtype=np.uint64)
    lens = np.empty(k, dtype=np.int64)
    for i in range(k):
        g = idx[i]
        lens[i] = offsets[g + 1] - offsets[g]
        for w in range(woff[g + 1] - woff[g]):
            for c in range(alphabet):
                mg[w, c, i] = masks[woff[g] + w, c]
        for w in range(wmax):
            low[w, i] = _low_mask(lens[i] - 64 * w)
    vv = np.empty((wmax, k), dtype=np.uint64)
    carry = np.empty(k, dtype=np.uint64)
    sims = np.empty(k, dtype=np.float64)
    want_block = block.shape[0] == k
    if k > 0:
        colsum[0] = 0.0
    for j in range(1, k):
        oj = offsets[idx[j]]
        lj = lens[j]
        for w in range(wmax):
            for i in range(j):
                vv[w, i] = _ALL
        if wmax == 1:
            for p in range(lj):
                mrow = mg[0, flat[oj + p]]
                v0 = vv[0]
                for i in range(j):
                    m = mrow[i]
                    v = v0[i]
                    v0[i] = (v + (v & m)) | (v & ~m)
        else:
            for p in range(lj):
                c = flat[oj + p]
                for i in range(j):
                    carry[i] = _ZERO
                for w in range(wmax):
                    mrow = mg[w, c]
                    vw = vv[w]
                    for i in range(j):
                        m = mrow[i]
                        v = vw[i]
                        s = v + (v & m)
                        s2 = s + carry[i]
                        carry[i] = np.uint64(s < v) | np.uint64(s2 < s)
                        vw[i] = s2 | (v & ~m)
        for i in range(j):
            sims[i] = 0.0
        for w in range(wmax):
            vw = vv[w]
            lw = low[w]
            for i in range(j):
                sims[i] += np.float64(_popcount(vw[i] & lw[i]))
        s_tot = 0.0
        for i in range(j):
            li = lens[i]
            mx = li if li > lj else lj
            sim = 1.0 if mx == 0 else (li - sims[i]) / mx
            sims[i] = sim
            s_tot += sim
        colsum[j] = s_tot
        if j < k_e:
            for i in range(j):
                emat[j, i] += weight * sims[i]
        if want_block:
            for i in range(j):
                block[i, j] = sims[i]
                block[j, i] = sims[i]


@nb.njit(cache=True, nogil=True, error_model="numpy")
def anchored_z_accumulate(a, scale, js, gs, os, groups, zsum, zcnt):  # pragma: no cover
    r"""Query-anchored z of (query, group) pairs, added into output columns (Stouffer sums).

    For pair ``i``: query ``js[i]`` (a row of the block ``a`` (C, nq, P)), group ``groups[gs[i]]``
    (``k`` pool positions). Per channel ``c``: ``z = mean_G a[c, j, G] / scale[c, j]``, added to
    ``zsum[c, os[i]]`` and counted in ``zcnt[c, os[i]]`` when finite (``scale`` is NaN where the
    query lacks the channel or its scores are constant). One pass, no temporaries.
    """
    n_c = a.shape[0]
    k = groups.shape[1]
    for i in range(js.size):
        j = js[i]
        g = gs[i]
        e = os[i]
        for c in range(n_c):
            sc = scale[c, j]
            if not sc > 0.0:
                continue
            s = 0.0
            for m in range(k):
                s += a[c, j, groups[g, m]]
            z = s / k / sc
            if np.isfinite(z):
                zsum[c, e] += z
                zcnt[c, e] += 1.0


@nb.njit(cache=True, nogil=True, fastmath=_FM, error_model="numpy")
def cross_sims(gram, nq, nx, zq, zx, tol, out):  # pragma: no cover - numba
    r"""Standardised-Euclidean similarities of rows ``zq`` (a, d) to rows ``zx`` (b, d) from
    their Gram block ``gram`` (a, b) and squared norms ``nq``, ``nx``, into ``out`` (a, b):
    ``d2 = nq_i + nx_j - 2 G_ij``, recomputed exactly where ``d2 <= tol (nq_i + nx_j)``
    (cancellation), ``sim = 1 / (1 + sqrt(max(d2, 0)))`` — fused, one pass.
    """
    d = zq.shape[1]
    for a in range(gram.shape[0]):
        for b in range(gram.shape[1]):
            n2 = nq[a] + nx[b]
            d2 = n2 - 2.0 * gram[a, b]
            if d2 <= tol * n2:
                e = 0.0
                for t in range(d):
                    diff = zq[a, t] - zx[b, t]
                    e += diff * diff
                d2 = e
            out[a, b] = 1.0 / (1.0 + np.sqrt(max(d2, 0.0)))


@nb.njit(cache=True, nogil=True, fastmath=_FM, error_model="numpy")
def vec_groups_colsums(gram, zg, colsum, tol):  # pragma: no cover - numba
    r""":func:`vec_group_colsums` (column sums only) for a batch of groups at once.

    ``gram`` (G, k, k) and ``zg`` (G, k, d) per group, ``colsum`` (G, k) filled: the same
    arithmetic, group by group, in one call (small groups are dominated by per-call cost).
    """
    n_g = zg.shape[0]
    k = zg.shape[1]
    d = zg.shape[2]
    sims = np.empty(k, dtype=np.float64)
    for g in range(n_g):
        if k > 0:
            colsum[g, 0] = 0.0
        for j in range(1, k):
            gjj = gram[g, j, j]
            nbad = 0
            for i in range(j):
                n2 = gram[g, i, i] + gjj
                d2 = n2 - 2.0 * gram[g, j, i]
                nbad += d2 < tol * n2
                sims[i] = 1.0 / (1.0 + np.sqrt(max(d2, 0.0)))
            if nbad > 0:
                for i in range(j):
                    n2 = gram[g, i, i] + gjj
                    d2 = n2 - 2.0 * gram[g, j, i]
                    if d2 < tol * n2:
                        e = 0.0
                        for t in range(d):
                            diff = zg[g, i, t] - zg[g, j, t]
                            e += diff * diff
                        sims[i] = 1.0 / (1.0 + np.sqrt(e))
            acc = 0.0
            for i in range(j):
                acc += sims[i]
            colsum[g, j] = acc


@nb.njit(cache=True, nogil=True, fastmath=_FM, error_model="numpy")
def vec_group_colsums(gram, zg, colsum, emat, weight, k_e, block, tol):  # pragma: no cover
    r"""Column sums of the standardised-Euclidean similarity over a group.

    ``gram`` (k, k) = ``zg @ zg.T`` (symmetric, from BLAS syrk); ``zg`` (k, d) the group's
    standardised rows. ``d2 = G_ii + G_jj - 2 G_ij``; where ``d2 < tol * (G_ii + G_jj)``
    (cancellation; near-duplicate tracks) the distance is recomputed exactly from ``zg``.
    ``sim = 1 / (1 + sqrt(max(d2, 0)))``. Outputs as in :func:`lcs_group_colsums`.
    """
    k = zg.shape[0]
    d = zg.shape[1]
    sims = np.empty(k, dtype=np.float64)
    want_block = block.shape[0] == k
    if k > 0:
        colsum[0] = 0.0
    for j in range(1, k):
        gjj = gram[j, j]
        nbad = 0
        for i in range(j):
            n2 = gram[i, i] + gjj
            d2 = n2 - 2.0 * gram[j, i]
            nbad += d2 < tol * n2
            sims[i] = 1.0 / (1.0 + np.sqrt(max(d2, 0.0)))
        if nbad > 0:
            for i in range(j):
                n2 = gram[i, i] + gjj
                d2 = n2 - 2.0 * gram[j, i]
                if d2 < tol * n2:
                    e = 0.0
                    for t in range(d):
                        diff = zg[i, t] - zg[j, t]
                        e += diff * diff
                    sims[i] = 1.0 / (1.0 + np.sqrt(e))
        s = 0.0
        for i in range(j):
            s += sims[i]
        colsum[j] = s
        if j < k_e:
            for i in range(j):
                emat[j, i] += weight * sims[i]
        if want_block:
            for i in range(j):
                block[i, j] = sims[i]
                block[j, i] = sims[i]


@nb.njit(cache=True, nogil=True, error_model="numpy")
def topk_insert(emat, k_e, n_top, out_i, out_j, out_v):  # pragma: no cover - numba
    """The ``n_top`` largest ``emat[j, i]`` over ``i < j < k_e`` (lower triangle), best first.

    Ties keep the earlier pair in (j, i) scan order. Unfilled slots get ``-1`` / ``-inf``.
    """
    for t in range(n_top):
        out_i[t] = -1
        out_j[t] = -1
        out_v[t] = -np.inf
    filled = 0
    for j in range(1, k_e):
        for i in range(j):
            v = emat[j, i]
            if filled == n_top and not (v > out_v[n_top - 1]):
                continue
            pos = filled if filled < n_top else n_top - 1
            while pos > 0 and v > out_v[pos - 1]:
                out_v[pos] = out_v[pos - 1]
                out_i[pos] = out_i[pos - 1]
                out_j[pos] = out_j[pos - 1]
                pos -= 1
            out_v[pos] = v
            out_i[pos] = i
            out_j[pos] = j
            if filled < n_top:
                filled += 1


@nb.njit(cache=True, nogil=True, inline="always")
def _worse(va, ia, vb, ib):  # pragma: no cover - numba
    """Entry a ranks below entry b: lower score, or equal score and higher row index."""
    return va < vb or (va == vb and ia > ib)


@nb.njit(cache=True, nogil=True, error_model="numpy")
def _sift_down(hv, hi, t, pos, n):  # pragma: no cover - numba
    """Sift entry ``pos`` of column ``t``'s heap (``n`` entries) down to its place.

    The moves of the swap-based sift-down, with the moving entry held aside until its place
    is found (the same heap results). The worse child is picked by score alone unless the two
    scores are equal.
    """
    v = hv[t, pos]
    g = hi[t, pos]
    while True:
        left = 2 * pos + 1
        if left + 1 < n:
            lv = hv[t, left]
            rv = hv[t, left + 1]
            child = left + np.int64(rv < lv)
            if rv == lv and hi[t, left + 1] > hi[t, left]:
                child = left + 1
            cv = hv[t, child]  # (not min(lv, rv): the child's own zero sign)
        elif left < n:
            child = left
            cv = hv[t, left]
        else:
            break
        if cv < v or (cv == v and hi[t, child] > g):
            hv[t, pos] = cv
            hi[t, pos] = hi[t, child]
            pos = child
        else:
            break
    hv[t, pos] = v
    hi[t, pos] = g


@nb.njit(cache=True, nogil=True, error_model="numpy")
def _heap_offer(hv, hi, count, t, v, g):  # pragma: no cover - numba
    """Offer the (non-NaN) score ``v`` of row ``g`` (later than every row kept) to column ``t``.

    A heap not yet full takes it (sift-up); a full one replaces its root only for a strictly
    greater score, so equal scores keep the lower row.
    """
    kk = hv.shape[1]
    c = count[t]
    if c < kk:
        pos = c
        while pos > 0:
            parent = (pos - 1) // 2
            pv = hv[t, parent]
            pg = hi[t, parent]
            if _worse(v, g, pv, pg):
                hv[t, pos] = pv
                hi[t, pos] = pg
                pos = parent
            else:
                break
        hv[t, pos] = v
        hi[t, pos] = g
        count[t] = c + 1
    elif v > hv[t, 0]:
        hv[t, 0] = v
        hi[t, 0] = g
        _sift_down(hv, hi, t, 0, kk)


@nb.njit(cache=True, nogil=True, error_model="numpy")
def _drain(hv, hi, count, t, bv, bg, n, sink):  # pragma: no cover - numba
    """Offer column ``t``'s ``n`` held candidates in row order; return its new threshold.

    ``sink`` (1,) receives the warm-up read's sum, so that the read is not optimised away.
    """
    kk = hv.shape[1]
    if n >= _TOPK_WARM:
        warm = np.int64(0)
        for j in range(count[t]):
            warm += hi[t, j] + np.int64(hv[t, j] > 0.0)
        sink[0] += warm
    for j in range(n):
        _heap_offer(hv, hi, count, t, bv[t, j], bg[t, j])
    return hv[t, 0] if count[t] >= kk else np.nan


@nb.njit(cache=True, nogil=True, error_model="numpy")
def topk_stream_update(block, row0, pool_mask, hv, hi, count, nan_count):  # pragma: no cover
    r"""Merge a row chunk of ``S_track`` into per-column running top-K min-heaps.

    ``block`` (rows, T) holds rows ``row0 .. row0+rows-1``; ``hv``/``hi`` (T, K) are heaps
    whose root is the *worst* kept entry (lowest score; among equal scores the highest row
    index); ``count`` (T,) entries filled. Rows arrive in increasing index order, so a new
    row displaces the root only when its score is strictly greater: ties keep the lower row
    index. Rows with ``pool_mask[row] == False`` are skipped; NaN scores are counted per
    column in ``nan_count`` and skipped.

    The rows are swept in order over their contiguous columns against a contiguous
    per-column threshold — the root's score once the heap is full, NaN while it fills — so
    the common case, a score ``<=`` its threshold, is one compare (vectorised per tile of
    columns). A score above it (or any score while the heap fills) is held in the column's
    buffer, offered to the heap in row order when the buffer is full and at the end; the
    threshold is then refreshed. A held score that no longer beats the risen root is dropped
    there, so every heap goes through exactly the moves of a column-by-column sweep that
    offers it each row in turn: the same heaps, bit for bit.
    """
    nrows = block.shape[0]
    n_t = block.shape[1]
    kk = hv.shape[1]
    cap = max(1, min(_TOPK_BUCKET, nrows))  # a block holds at most nrows candidates per column
    thr = np.empty(n_t)
    for t in range(n_t):
        if kk == 0:
            thr[t] = np.inf  # nothing is kept; only NaNs are counted
        else:
            thr[t] = hv[t, 0] if count[t] >= kk else np.nan
    held = np.zeros(n_t, dtype=np.int64)
    bv = np.empty((n_t, cap))
    bg = np.empty((n_t, cap), dtype=np.int64)
    sink = np.zeros(1, dtype=np.int64)
    width = _TOPK_TILE
    for r in range(nrows):
        g = row0 + r
        if not pool_mask[g]:
            continue
        for t0 in range(0, n_t, width):
            t1 = min(n_t, t0 + width)
            hit = False
            for t in range(t0, t1):
                hit |= not (np.float64(block[r, t]) <= thr[t])
            if not hit:
                continue
            for t in range(t0, t1):
                v = np.float64(block[r, t])
                if v <= thr[t]:
                    continue
                if v != v:
                    nan_count[t] += 1
                    continue
                n = held[t]
                bv[t, n] = v
                bg[t, n] = g
                n += 1
                if n == cap:
                    thr[t] = _drain(hv, hi, count, t, bv, bg, n, sink)
                    n = 0
                held[t] = n
    for t in range(n_t):
        if held[t] > 0:
            _drain(hv, hi, count, t, bv, bg, held[t], sink)
