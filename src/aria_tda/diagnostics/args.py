"""The options of :func:`~aria_tda.diagnostics.diagnose`, declared once: :class:`DiagnoseArgs`.

In the style of kronfluence's arguments (and :class:`aria_tda.attribution.TrakArgs`): a frozen
dataclass whose fields carry their checks and help, checked once when it is built — with the
messages :func:`~aria_tda.diagnostics.diagnose` gave for its keywords — and handed as one object
to whichever pass runs (exact, exact-tiled, approximate, GPU, Dask). ``diagnose(S, args)`` and
``diagnose(S, n_energy=6, ...)`` are the same call; the command line builds one from its flags.

A Dask ``client`` is not among them: it is a live connection to a cluster, not a setting —
it cannot be compared, copied to another process or written into a manifest, and the same
settings give the same numbers with or without it — so :func:`~aria_tda.diagnostics.diagnose`
takes it beside the options (``client=``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from aria_tda._checks import check_int_list
from aria_tda._options import Options, option
from aria_tda.diagnostics.result import MODES, ApproxOptions
from aria_tda.errors import ParameterError, expected
from aria_tda.scores.source import expected_text

__all__ = ["COMPUTE_DTYPES", "DiagnoseArgs", "check_topk", "resolve_diagnose_args"]

#: Precisions of the block products (``None``: that of the input).
COMPUTE_DTYPES = (None, "float32", "float64")


def check_topk(name: str, topk: Any) -> tuple[int, ...]:
    """The validated ``topk`` of :func:`~aria_tda.diagnostics.diagnose` (``()`` when off).

    Parameters
    ----------
    name : str
        What the message calls it (``"topk"``).
    topk : int, sequence of int or None
        The ``K`` of the top-K concentration; ``None`` or ``()``: not measured.
    """
    if topk is None:
        return ()
    if isinstance(topk, int | np.integer) and not isinstance(topk, bool):
        topk = (topk,)
    try:
        items = list(topk)
    except TypeError:
        raise ParameterError(expected_text(name, "a sequence of positive K", topk)) from None
    if not items:
        return ()
    return tuple(check_int_list(name, items, min_value=1))


def _check_flag(name: str, value: Any) -> bool:
    """``True`` or ``False`` (NumPy's too)."""
    if not isinstance(value, bool | np.bool_):
        raise ParameterError(expected(name, "True or False", value))
    return bool(value)


def _check_memory(name: str, value: Any) -> Any:
    """A memory budget :func:`~aria_tda.diagnostics.tiled.parse_memory` reads (kept as given)."""
    if value is not None:
        from aria_tda.diagnostics.tiled import parse_memory

        parse_memory(value)
    return value


def _check_spill_dir(name: str, value: Any) -> Any:
    """A folder path (whether it can be one is checked when the tiles are spilled)."""
    if value is not None and not (isinstance(value, str | os.PathLike) and str(value)):
        raise ParameterError(expected_text(name, "a folder", repr(value)))
    return value


def _check_approx(name: str, value: Any) -> Any:
    if value is not None and not isinstance(value, ApproxOptions):
        raise ParameterError(expected(name, "an ApproxOptions (or None for its defaults)",
                                      type(value).__name__))
    return value


@dataclass(frozen=True)
class DiagnoseArgs(Options):
    r"""Options of :func:`~aria_tda.diagnostics.diagnose` (checked on construction).

    Attributes
    ----------
    chunk_rows : int, optional
        Rows per streamed block (default: about 64 MB, or a sixteenth of a smaller matrix,
        and at least ``T/2`` rows). Results do not depend on it beyond rounding.
    n_energy : int
        How many energy ratios :math:`r_1..r_n` to report (default 10).
    with_u1 : bool
        Also compute :math:`u_1 = S v_1 / \sigma_1` (a second pass).
    key : str, optional
        Array to read from an ``.npz``/torch dict/zarr group/safetensors file.
    compute_dtype : {None, "float32", "float64"}
        Precision of the block products (default: float32 for float32/float16 input,
        float64 for float64 input); accumulation is always float64.
    device : str or torch.device, optional
        Torch device for the kernel (e.g. ``"cuda"``); default NumPy on the CPU.
    n_threads : int, optional
        Limit BLAS threads during the pass (default: the BLAS library's setting).
    progress : bool, optional
        Draw progress (default: by the environment, :mod:`aria_tda._progress`).
    transpose : bool
        ``scores`` is stored queries x training segments: diagnose its transpose.
    mode : {"auto", "exact", "exact-tiled", "approx"}
        How the Gram is handled (:func:`~aria_tda.diagnostics.choose_mode`).
    memory : str or int, optional
        Memory budget (``"8GB"``; default: half the physical memory, or of what an
        address-space limit leaves).
    spill_dir : path, optional
        Where ``"exact-tiled"`` spills its tiles (default ``$ARIA_CACHE_DIR/tiles``).
    seed : int
        Seed of the approximate mode's random start and column sample, and of the tiled
        eigensolver's start.
    approx : ApproxOptions, optional
        Settings of ``"approx"`` (default ``ApproxOptions()``).
    topk : tuple of int
        The ``K`` of the top-K concentration measured in the same pass (given as an int, a
        sequence, or ``None``/``()`` for none: stored as a tuple, ``()`` when off).

    Examples
    --------
    >>> from aria_tda.diagnostics import DiagnoseArgs
    >>> args = DiagnoseArgs(n_energy=6, topk=5)
    >>> args.topk, args.replace(mode="approx").mode
    ((5,), 'approx')
    """

    chunk_rows: int | None = option(None, kind="int", min_value=1,
                                    help="rows per streamed block (default: about 64 MB)")
    n_energy: int = option(10, min_value=1, help="how many energy ratios r_1..r_n to report")
    with_u1: bool = option(False, kind="flag", check=_check_flag,
                           help="also compute u1 = S v1 / sigma1 (a second pass)")
    key: str | None = option(None, help="array of an .npz/torch dict/zarr group/safetensors file")
    compute_dtype: str | None = option(None, choices=COMPUTE_DTYPES,
                                       help="precision of the block products")
    device: Any = option(None, help="torch device of the kernel, e.g. cuda (default: NumPy)")
    n_threads: int | None = option(None, kind="int", min_value=1,
                                   help="BLAS threads during the pass")
    progress: bool | None = option(None, help="draw progress (default: by the environment)")
    transpose: bool = option(False, kind="flag", check=_check_flag,
                             help="the matrix is stored queries x training segments")
    mode: str = option("auto", choices=MODES,
                       help="auto, exact, exact-tiled (Gram spilled to disk) or approx")
    memory: Any = option(None, check=_check_memory, help="memory budget, e.g. 8GB")
    spill_dir: Any = option(None, check=_check_spill_dir,
                            help="where exact-tiled spills its tiles")
    seed: int = option(0, min_value=0, help="seed of the approximate and tiled eigensolvers")
    approx: ApproxOptions | None = option(None, check=_check_approx,
                                          help="settings of the approximate mode")
    topk: tuple[int, ...] = option((1, 10), kind="topk", check=check_topk,
                                   help="the K of the top-K concentration (none: off)")


def resolve_diagnose_args(args: Any, options: Mapping[str, Any]) -> DiagnoseArgs:
    """The :class:`DiagnoseArgs` of a call: ``args``, or one built from the keywords.

    Parameters
    ----------
    args : DiagnoseArgs or None
        What the caller passed as ``args``.
    options : mapping
        The option keywords the caller passed (names of :class:`DiagnoseArgs` fields).

    Raises
    ------
    ParameterError
        Both ``args`` and keywords given (naming them); ``args`` not a :class:`DiagnoseArgs`;
        a keyword that is no option; an option out of range.
    """
    if args is not None and options:
        names = ", ".join(sorted(options))
        raise ParameterError(
            f"args: expected a DiagnoseArgs or option keywords, not both; got args= and "
            f"{names} (put them in the DiagnoseArgs: args.replace({names.split(', ')[0]}=...))")
    if args is None:
        return DiagnoseArgs.from_mapping(options, what="diagnose") if options else DiagnoseArgs()
    if not isinstance(args, DiagnoseArgs):
        raise ParameterError(expected("args", "a DiagnoseArgs (or None for its defaults)",
                                      type(args).__name__))
    return args
