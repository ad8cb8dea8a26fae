r"""The sums one pass over row blocks of a score matrix leaves behind (:class:`BlockStats`).

:func:`aria_tda.scores.stats.block_stats` (the kernel) and
:func:`~aria_tda.scores.stats.stream_stats` (the streaming driver) produce them; partial results
over row ranges merge exactly (:meth:`BlockStats.merge`, used by
:mod:`aria_tda.scores.distributed`); every derived quantity (means, sums of squares, the Gram and
scatter matrices, central moments) is a float64 formula on them.

Shifted sums
------------
Raw second moments lose every digit to cancellation when a column's mean is large compared
with its spread (``p`` near 1). The kernel therefore sums about a fixed shift vector ``c``
(the first block's column means, shared by all partial results), :math:`y = x - c`:

.. math::

    n,\quad s_1 = \sum_i y_i,\quad G_y = \sum_i y_i y_i^\top,\quad
    s_k = \sum_i y_i^{\circ k}\ (k = 2, 3, 4),

from which, exactly,

.. math::

    S^\top S = G_y + s_1 c^\top + c s_1^\top + n c c^\top, \qquad
    \sum_i (x_i - \bar x)(x_i - \bar x)^\top = G_y - s_1 s_1^\top / n .

Per block the product :math:`Y^\top Y` runs in the block's dtype (float32 for float32 input:
the BLAS symmetric product on one buffer) and is added into a float64 accumulator; sums are
float64. ``compute_dtype="float64"`` forces float64 products.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["BlockStats", "column_scale", "representable_shift"]


@dataclass
class BlockStats:
    r"""Sums over a set of rows of ``S``, taken about a shift vector ``c``.

    Attributes
    ----------
    n : int
        Number of rows summed.
    shift : numpy.ndarray [shape=(T,)], float64
        The shift ``c``; partial results can be merged only when they share it.
    s1, s2 : numpy.ndarray [shape=(T,)], float64
        :math:`\sum_i (x_{ij} - c_j)` and :math:`\sum_i (x_{ij} - c_j)^2`.
    gram : numpy.ndarray [shape=(T, T)], float64, or None
        :math:`\sum_i (x_i - c)(x_i - c)^\top` (``None`` when not asked for).
    s3, s4 : numpy.ndarray [shape=(T,)], float64, or None
        Third and fourth power sums (``moments=4``).
    """

    n: int
    shift: np.ndarray
    s1: np.ndarray
    s2: np.ndarray
    gram: np.ndarray | None = None
    s3: np.ndarray | None = None
    s4: np.ndarray | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def zeros(cls, shift: np.ndarray, *, gram: bool = True, moments: int = 2) -> BlockStats:
        """Empty sums for ``T = len(shift)`` columns.

        Parameters
        ----------
        shift : numpy.ndarray [shape=(T,)]
            The shift ``c``.
        gram : bool
            Keep a Gram accumulator.
        moments : {2, 4}
            Power sums to keep.
        """
        t = shift.shape[0]
        z = np.zeros(t)
        return cls(
            n=0,
            shift=representable_shift(shift),
            s1=z.copy(),
            s2=z.copy(),
            gram=np.zeros((t, t)) if gram else None,
            s3=z.copy() if moments >= 4 else None,
            s4=z.copy() if moments >= 4 else None,
        )

    @property
    def n_cols(self) -> int:
        return int(self.shift.shape[0])

    def merge(self, other: BlockStats) -> BlockStats:
        """The sums over both row sets (float64); both must share the shift.

        Parameters
        ----------
        other : BlockStats
            Sums over other rows, about the same shift.
        """
        if not np.array_equal(self.shift, other.shift):
            raise ValueError("cannot merge BlockStats taken about different shifts")

        def add(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
            return None if a is None or b is None else a + b

        return BlockStats(
            n=self.n + other.n,
            shift=self.shift,
            s1=self.s1 + other.s1,
            s2=self.s2 + other.s2,
            gram=add(self.gram, other.gram),
            s3=add(self.s3, other.s3),
            s4=add(self.s4, other.s4),
            meta={"eps": max(self.eps, other.eps)},
        )

    def rescaled(self, factor: np.ndarray) -> BlockStats:
        r"""The sums of the column-scaled matrix :math:`S D`, ``D = diag(factor)`` (float64).

        With powers of two for ``factor`` (as :func:`column_scale` gives) this is exact. The
        kernel sums the scaled matrix, whose entries are near 1 whatever the scale of ``S``, and
        returns its sums to the units of ``S`` with ``rescaled(1 / scale)``.

        Parameters
        ----------
        factor : numpy.ndarray [shape=(T,)]
            Positive factor of each column.
        """
        f = np.asarray(factor, dtype=np.float64)

        def power(a: np.ndarray | None, k: int) -> np.ndarray | None:
            return None if a is None else a * f**k

        gram = None
        if self.gram is not None:
            gram = self.gram * f[:, None]
            gram *= f[None, :]
        return BlockStats(
            n=self.n,
            shift=self.shift * f,
            s1=self.s1 * f,
            s2=self.s2 * f * f,
            gram=gram,
            s3=power(self.s3, 3),
            s4=power(self.s4, 4),
            meta=dict(self.meta),
        )

    @property
    def eps(self) -> float:
        """Machine epsilon of the products that built these sums (float32 or float64)."""
        return float(self.meta.get("eps", np.finfo(np.float64).eps))

    # -- derived quantities (all float64) ----------------------------------------------
    @property
    def mean(self) -> np.ndarray:
        r"""Column means :math:`\mu_j` ``(T,)``."""
        return self.shift + self.s1 / self.n

    @property
    def column_sums(self) -> np.ndarray:
        r"""Column sums :math:`\sum_i x_{ij}` ``(T,)``."""
        return self.s1 + self.n * self.shift

    @property
    def sum_squares(self) -> np.ndarray:
        r"""Column sums of squares :math:`\lVert S_{\cdot j} \rVert_2^2` ``(T,)``."""
        c = self.shift
        return self.s2 + 2.0 * c * self.s1 + self.n * c * c

    @property
    def centered_ss(self) -> np.ndarray:
        r"""Centred sums of squares :math:`\sum_i (x_{ij} - \mu_j)^2` ``(T,)`` (>= 0)."""
        return np.maximum(self.s2 - self.s1 * self.s1 / self.n, 0.0)

    def constant_mask(self, *, ulps: float = 64.0) -> np.ndarray:
        r"""Columns that are constant up to rounding ``(T,)`` bool.

        Rule: centred energy :math:`\le (\text{ulps} \cdot \varepsilon)^2` times the raw
        energy :math:`\lVert S_{\cdot j} \rVert^2`, with :math:`\varepsilon` the machine
        epsilon of the products (all-zero columns are constant).

        Parameters
        ----------
        ulps : float
            Tolerance in units of the product dtype's epsilon.
        """
        return self.centered_ss <= (ulps * self.eps) ** 2 * np.maximum(self.sum_squares, 0.0)

    def raw_gram(self) -> np.ndarray:
        r"""The Gram matrix :math:`S^\top S` ``(T, T)``."""
        if self.gram is None:
            raise ValueError("these BlockStats were computed without the Gram matrix")
        c, s1 = self.shift, self.s1
        g = self.gram.copy()
        _add_outer(g, s1, c)
        _add_outer(g, c, s1)
        _add_outer(g, c, c, self.n)
        return g

    def centered_gram(self) -> np.ndarray:
        r"""The scatter matrix :math:`\sum_i (x_i - \mu)(x_i - \mu)^\top` ``(T, T)``."""
        if self.gram is None:
            raise ValueError("these BlockStats were computed without the Gram matrix")
        g = self.gram.copy()
        _add_outer(g, self.s1, self.s1, -1.0 / self.n)
        return g

    def central_moments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        r"""Population central moments :math:`(m_2, m_3, m_4)` per column (``moments=4``)."""
        if self.s3 is None or self.s4 is None:
            raise ValueError("these BlockStats were computed with moments=2")
        n = self.n
        d = self.s1 / n
        e2, e3, e4 = self.s2 / n, self.s3 / n, self.s4 / n
        m2 = np.maximum(e2 - d * d, 0.0)
        m3 = e3 - 3 * d * e2 + 2 * d**3
        m4 = np.maximum(e4 - 4 * d * e3 + 6 * d * d * e2 - 3 * d**4, 0.0)
        return m2, m3, m4


#: Columns whose largest value lies within 2**±SAFE_EXP are not scaled (scale 1): their
#: products and sums stay far from float32's limits (2**±126) for up to 2**40 rows.
SAFE_EXP = 40


def column_scale(y: np.ndarray, shift: np.ndarray, *, max_exp: int = 120) -> np.ndarray:
    r"""Per-column powers of two that bring a block's centred values near 1 ``(T,)`` float64.

    For column ``j`` with largest :math:`|y_{ij}|` equal to :math:`a_j = m_j 2^{e_j}`
    (:math:`m_j \in [0.5, 1)`), the scale is :math:`2^{-e_j}`, so the scaled block lies in
    :math:`(-1, 1)`; a column already within :math:`2^{\pm 40}` (``SAFE_EXP``) keeps scale 1,
    so ordinary scores cost nothing. A column that is zero in the block takes its scale from
    :math:`|c_j|` (the shift), and failing that from the largest magnitude seen; an all-zero
    block scales by 1. Multiplying by a power of two is exact, so the diagnostics — which do not
    change when a column is scaled (κ, p) or the whole matrix is scaled (r_i, v_1) — are the
    same as without it, while products of tiny (1e-20) or huge (1e20) scores neither underflow
    nor overflow float32. Exponents are kept within ``±max_exp``.

    Parameters
    ----------
    y : numpy.ndarray [shape=(rows, T)]
        Centred values :math:`x - c` of the first block (any float dtype).
    shift : numpy.ndarray [shape=(T,)]
        The shift ``c``.
    max_exp : int
        Bound on the exponent (120 keeps float32 products clear of its range limits).
    """
    with np.errstate(all="ignore"):
        a = np.max(np.abs(y), axis=0).astype(np.float64) if y.shape[0] else np.zeros(y.shape[1])
    a = np.where(a > 0, a, np.abs(np.asarray(shift, dtype=np.float64)))
    top = float(a.max()) if a.size else 0.0
    a = np.where(a > 0, a, top if top > 0 else 1.0)
    a = np.where(np.isfinite(a), a, 1.0)
    _, e = np.frexp(a)
    e = np.where(np.abs(e) <= SAFE_EXP, 0, e)  # already safe: leave the column as it is
    return np.ldexp(1.0, -np.clip(e, -max_exp, max_exp)).astype(np.float64)


def representable_shift(shift: Any) -> np.ndarray:
    """``shift`` rounded to float32 values (kept float64 beyond float32's range).

    The kernel subtracts the shift in the product dtype; a float32-representable shift makes
    that subtraction use exactly the value the float64 formulas assume.

    Parameters
    ----------
    shift : array-like [shape=(T,)]
        The shift asked for.
    """
    c = np.asarray(shift, dtype=np.float64)
    with np.errstate(over="ignore"):
        c32 = c.astype(np.float32).astype(np.float64)
    return np.where(np.isfinite(c32), c32, c)


def _add_outer(
    g: np.ndarray, a: np.ndarray, b: np.ndarray, scale: float = 1.0, rows: int = 512
) -> None:
    """``g += scale * outer(a, b)`` in row blocks (no ``T x T`` temporary)."""
    for i in range(0, g.shape[0], rows):
        g[i : i + rows] += np.multiply.outer(scale * a[i : i + rows], b)
