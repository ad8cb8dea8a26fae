r"""ARIA's reliability diagnostics as a quanda ``Metric`` and as a dattri-style metric function.

Conventions
-----------
ARIA, like dattri, orients a score matrix ``(n_train, n_test)``: rows are training examples,
columns are queries (test examples). quanda passes *explanations* the other way round: each
batch is ``(n_test_batch, n_train)``, one row per test example. Everything here states which
orientation it takes.

- :func:`reliability` — the dattri-style pure function: ``reliability(score, *, topk)`` on a
  ``(n_train, n_test)`` NumPy array or torch tensor returns the mapping that
  ``aria-tda diagnose FILE --json`` prints for the same matrix (κ, r₁, r₂:₅, p, the top-K
  concentration, the verdict).
- ``ReliabilityMetric`` — a subclass of quanda's ``quanda.metrics.base.Metric`` built on first
  use (so importing this module never imports quanda): ``update(explanations)`` takes quanda's
  ``(n_test_batch, n_train)`` batches, ``compute()`` returns the same mapping as
  :func:`reliability` plus quanda's ``"score"`` entry (the verdict's label), ``reset``,
  ``state_dict`` and ``load_state_dict`` as quanda's metrics have them. Its constructor is
  quanda's heuristics' (``TopKCardinalityMetric``): ``ReliabilityMetric(model, train_dataset,
  checkpoints=None, checkpoints_load_func=None, *, topk=(1, 10))``; the diagnostics read the
  scores only, so ``model`` and ``train_dataset`` serve quanda's bookkeeping (and the length
  of ``train_dataset``, when it has one, checks every batch's width).
  :class:`ReliabilityAccumulator` is its state and arithmetic without quanda.
- :func:`topk_cardinality` — quanda's ``TopKCardinalityMetric`` score from ARIA's top-K
  machinery (:mod:`aria_tda.diagnostics.concentration`):
  :math:`|\bigcup_j A_k(j)| / (T k)`, the number of distinct training rows in the queries'
  top-``k`` sets over the ``T k`` places (the concentration's ``distinct_ratio``).
- :func:`quanda_module` — a module of quanda, also when quanda was installed without the peer
  libraries that its package ``__init__`` imports (``pip install --no-deps quanda``; see below).

Memory
------
A quanda metric sees one batch at a time, but κ and the energy ratios need every query column
at once: :class:`ReliabilityAccumulator` keeps each batch (a copy on the CPU, in the batch's
floating dtype; bfloat16 and integers as float32 and float64), so it holds all ``T`` columns,
:math:`M T` values. :meth:`~ReliabilityAccumulator.compute` stacks them into one
``(n_train, T)`` array (briefly twice that memory) and keeps only the stacked array. For
matrices that do not fit in memory, write the scores to disk and run ``aria-tda diagnose`` (or
:func:`aria_tda.diagnose` on the file), which streams them.

quanda without its peers
------------------------
quanda's package ``__init__`` imports every explainer and benchmark it wraps (captum,
kronfluence, traker, dattri, lightning, torchvision …); its metric classes need only torch,
PyYAML and Hugging Face ``datasets``. :func:`quanda_module` first imports the module the usual
way; when that fails for a missing peer library it registers quanda's packages without running
their ``__init__`` files and imports just the module asked for. Afterwards ``import quanda``
in the same process returns that bare package (its submodules import; the names its
``__init__`` re-exports are absent).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from aria_tda._checks import check_int, check_int_list
from aria_tda.errors import DataError, MissingDependencyError, ParameterError, expected

__all__ = [
    "ReliabilityAccumulator",
    "ReliabilityMetric",
    "quanda_module",
    "reliability",
    "topk_cardinality",
]

if TYPE_CHECKING:  # built by the module's __getattr__ on first use (it imports quanda)
    ReliabilityMetric: type

#: Elements per block of the finiteness check (bounds its temporary to 16 MB of booleans).
_CHECK_ELEMENTS = 1 << 24

#: What installs quanda's metric base without its peers (scripts/setup.sh --dev does this).
_QUANDA_INSTALL = "pip install --no-deps quanda==0.5.0 && pip install 'datasets>=4.8.4' pyyaml"


# ----------------------------------------------------------------------------------------
# input checks
# ----------------------------------------------------------------------------------------
def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "dim")


def _check_matrix(name: str, x: Any, orientation: str) -> Any:
    """``x`` as a finite real 2-D NumPy array or torch tensor (tensors are not moved).

    Raises :class:`ParameterError` for other types, other dimensions or a non-real dtype, and
    :class:`DataError` naming the first NaN/inf.
    """
    from aria_tda.scores.stats import locate_nonfinite

    if _is_torch(x):
        shape, kind = tuple(x.shape), str(x.dtype)
        real = not (x.is_complex() or kind == "torch.bool")
    elif isinstance(x, np.ndarray | list | tuple):
        try:
            x = np.asarray(x)
        except ValueError:  # ragged nested lists
            raise ParameterError(expected(name, f"a 2-D matrix {orientation}",
                                          "a ragged sequence")) from None
        shape, real, kind = x.shape, x.dtype.kind in "fiu", str(x.dtype)
    else:
        raise ParameterError(expected(name, f"a NumPy array or torch tensor {orientation}",
                                      type(x).__name__))
    if len(shape) != 2 or 0 in shape:
        raise ParameterError(expected(name, f"a non-empty 2-D matrix {orientation}",
                                      f"shape {shape}"))
    if not real:
        raise ParameterError(expected(name, "real (floating-point or integer) scores", kind))
    step = max(1, _CHECK_ELEMENTS // shape[1])
    for start in range(0, shape[0], step):
        block = x[start:start + step]
        ok = bool(block.isfinite().all()) if _is_torch(x) else bool(np.isfinite(block).all())
        if not ok:
            raise locate_nonfinite(block, start, name=name)
    return x


def _host_rows(x: Any) -> np.ndarray:
    """A CPU NumPy copy of a checked batch (bfloat16 -> float32, integers -> float64)."""
    if _is_torch(x):
        t = x.detach().to("cpu")
        if t.dtype.is_floating_point and str(t.dtype) not in ("torch.float16", "torch.float32",
                                                                "torch.float64"):
            t = t.float()
        a = t.numpy()
    else:
        a = np.asarray(x)
    if a.dtype.kind != "f":
        a = a.astype(np.float64)
    return np.array(a, copy=True, order="C")


def _record(d: Any) -> dict[str, Any]:
    """The mapping ``aria-tda diagnose --json`` prints for :class:`Diagnostics` ``d`` (without
    its ``input``): :meth:`Diagnostics.to_dict` and the ``mode``."""
    rec = d.to_dict()
    rec.setdefault("mode", d.mode)
    return rec


# ----------------------------------------------------------------------------------------
# pure functions
# ----------------------------------------------------------------------------------------
def reliability(score: Any, *, topk: Sequence[int] | None = (1, 10)) -> dict[str, Any]:
    r"""ARIA's reliability diagnostics and verdict of a score matrix, dattri-style.

    The counterpart of dattri's metric functions (``dattri.metric.lds(score, ground_truth)``):
    a pure function of the score tensor. It needs no ground truth — it asks whether the
    scores depend on the query at all (paper §3.2).

    Parameters
    ----------
    score : numpy.ndarray or torch.Tensor [shape=(n_train, n_test)]
        The attribution scores, dattri's orientation (training examples x test examples);
        larger = more influential. Real, finite; a tensor stays on its device (CPU or GPU)
        and is read block by block (:func:`aria_tda.diagnose`).
    topk : sequence of int, optional
        The ``K`` of the top-K concentration (default ``(1, 10)``, as ``aria-tda diagnose``);
        ``None`` or ``()``: not measured (the verdict then reads κ, r₁ and p alone).

    Returns
    -------
    dict
        What ``aria-tda diagnose FILE --json`` prints for the same matrix (without ``input``):
        ``n_train``, ``n_queries``, ``kappa`` (κ, Eq. 1; ``None`` when undefined), ``r1``,
        ``r2_5`` (Eq. 2), ``p`` (Eq. 3), ``energy_ratios``, ``sigma1``, ``frobenius``,
        ``v1_constancy``, ``constant_columns``, ``mode``, ``concentration`` (the top-K
        measures: ``distinct_ratio``, ``mean_overlap``, ``top1_share`` … per ``K``; absent when
        ``topk`` is empty) and ``verdict`` (``label`` in ``{"ok", "suspect", "collapsed"}``,
        ``reason``, ``findings``, ``rule``); plain Python numbers, JSON-ready.

    Raises
    ------
    ParameterError
        ``score`` is not a NumPy array or torch tensor, not 2-D, empty, or not real.
    DataError
        NaN or inf in ``score`` (naming the first), fewer than two rows or columns.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> out = reliability(rng.standard_normal((300, 20)))
    >>> out["verdict"]["label"], out["n_train"], out["n_queries"]
    ('ok', 300, 20)
    """
    from aria_tda.diagnostics import diagnose

    score = _check_matrix("score", score, "(n_train, n_test)")
    return _record(diagnose(score, topk=topk))


def topk_cardinality(scores: Any, *, k: int, transpose: bool = False) -> float:
    r"""quanda's top-K cardinality of a score matrix, from ARIA's top-K concentration.

    .. math:: \frac{|\bigcup_{j=1}^{T} A_k(j)|}{T\,k},

    with :math:`A_k(j)` the ``k`` training rows of largest score for query ``j``: 1 when no
    two queries share a row, :math:`1/T` when every query has the same top-``k`` (Barshan et
    al., 2020; quanda's ``TopKCardinalityMetric(top_k=k)``). It is
    :attr:`Concentration.distinct_ratio <aria_tda.diagnostics.Concentration>` at ``K = k``,
    measured in one streaming pass (:func:`aria_tda.diagnostics.topk_concentration`). Equal
    scores go to the lower row index; quanda's ``torch.topk`` breaks such ties its own way,
    so the two can differ only when equal scores straddle the ``k``-th place.

    Parameters
    ----------
    scores : array-like, torch.Tensor, ScoreSource or path [shape=(n_train, n_test)]
        Training examples x queries (ARIA's and dattri's orientation).
    k : int
        The top-``k`` size, ``1 <= k <= n_train`` (quanda's ``top_k``).
    transpose : bool
        ``scores`` is ``(n_test, n_train)`` — quanda's explanations: use its transpose.

    Returns
    -------
    float in [1/T, 1]

    Raises
    ------
    ParameterError
        ``k`` not an integer in ``[1, n_train]``.
    DataError
        NaN or inf scores.

    Examples
    --------
    >>> import numpy as np
    >>> same = np.repeat(np.arange(10.0)[:, None], 4, axis=1)  # every query ranks alike
    >>> topk_cardinality(same, k=2)
    0.25
    """
    from aria_tda.diagnostics.concentration import topk_concentration
    from aria_tda.scores.readers import as_source

    k = check_int("k", k, min_value=1)
    src = as_source(scores, transpose=transpose)
    if k > src.n_rows:
        raise ParameterError(expected("k", f"an integer in [1, {src.n_rows}] (n_train)", k))
    return float(topk_concentration(src, (k,)).distinct_ratio[0])


# ----------------------------------------------------------------------------------------
# quanda
# ----------------------------------------------------------------------------------------
def _register_bare_packages(root: str) -> None:
    """Put every package of quanda into ``sys.modules`` without running its ``__init__``."""
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(("_", ".")))
        if "__init__.py" not in files:
            continue
        rel = os.path.relpath(dirpath, root)
        name = "quanda" if rel == "." else "quanda." + rel.replace(os.sep, ".")
        if name in sys.modules:
            continue
        spec = importlib.util.spec_from_file_location(
            name, os.path.join(dirpath, "__init__.py"), submodule_search_locations=[dirpath])
        if spec is None:  # pragma: no cover - a file location always gives a spec
            continue
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        parent, _, child = name.rpartition(".")
        if parent in sys.modules:
            setattr(sys.modules[parent], child, module)


def _quanda_root() -> str | None:
    """The folder of the quanda package (``None`` when it is not installed)."""
    loaded = sys.modules.get("quanda")
    if loaded is not None:
        paths = list(getattr(loaded, "__path__", []))
    else:
        spec = importlib.util.find_spec("quanda")
        paths = list(spec.submodule_search_locations or []) if spec is not None else []
    return paths[0] if paths else None


def quanda_module(name: str) -> ModuleType:
    """Import a module of quanda, also when quanda went in without its peer libraries.

    Parameters
    ----------
    name : str
        A dotted module name under ``quanda``, e.g. ``"quanda.metrics.base"``.

    Returns
    -------
    types.ModuleType

    Raises
    ------
    ParameterError
        ``name`` is not a module of quanda (outside it, or no such module).
    MissingDependencyError
        quanda is not installed, or the module itself needs a package that is not (named).

    Notes
    -----
    See "quanda without its peers" in the module docstring: when the plain import fails, the
    packages are registered bare (their ``__init__`` not run) and only ``name`` is imported.
    """
    if not isinstance(name, str) or not (name == "quanda" or name.startswith("quanda.")):
        raise ParameterError(expected("name", "a module of quanda ('quanda.…')", name))
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        root = _quanda_root()
        if root is None:
            raise MissingDependencyError(
                f"quanda is not installed (needed for {name}): {_QUANDA_INSTALL}") from exc
    _register_bare_packages(root)
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        if exc.name is not None and (exc.name == name or exc.name.startswith("quanda.")):
            raise ParameterError(expected("name", "a module of quanda", name)) from exc
        raise MissingDependencyError(
            f"{name} needs {exc.name or exc} (not installed): {_QUANDA_INSTALL}") from exc


class ReliabilityAccumulator:
    """Query rows gathered batch by batch, and ARIA's diagnostics of them (quanda's
    orientation).

    The state and arithmetic of ``ReliabilityMetric`` without quanda: use it in any loop that
    yields attributions one test batch at a time.

    Parameters
    ----------
    topk : sequence of int, optional
        The ``K`` of the top-K concentration (default ``(1, 10)``; ``None``/``()``: off).
    n_train : int, optional
        The number of training examples every batch must have (default: the first batch's).

    Attributes
    ----------
    n_train_ : int or None
        Training examples per batch (``None`` before the first batch).
    n_queries_ : int
        Test examples accumulated.
    diagnostics_ : Diagnostics or None
        The diagnostics of the last :meth:`compute` (``None`` after an update or a reset).

    Notes
    -----
    Holds every column: see "Memory" in the module docstring.
    """

    def __init__(self, *, topk: Sequence[int] | None = (1, 10),
                 n_train: int | None = None) -> None:
        self.topk: tuple[int, ...] = (
            () if topk is None or (not isinstance(topk, int) and len(topk) == 0)
            else tuple(check_int_list("topk", topk, min_value=1)))
        self.n_train = None if n_train is None else check_int("n_train", n_train, min_value=1)
        self._reset_state()

    def _reset_state(self) -> None:
        self._blocks: list[np.ndarray] = []  # (b, n_train) batches, or one (T, n_train) view
        self.n_train_: int | None = self.n_train
        self.n_queries_ = 0
        self.diagnostics_: Any = None

    def update(self, explanations: Any, *args: Any, **kwargs: Any) -> None:
        """Add a batch of test examples.

        Parameters
        ----------
        explanations : torch.Tensor or numpy.ndarray [shape=(n_test_batch, n_train)]
            quanda's orientation: one row per test example. Copied to the CPU.
        *args, **kwargs
            quanda's ``update`` hooks pass test targets and the like; not used — but refused
            when given, so that nothing passed is silently dropped.

        Raises
        ------
        ParameterError
            not a 2-D real array, extra arguments, or a width other than ``n_train``.
        DataError
            NaN or inf (naming the test example and training example).
        """
        if args or kwargs:
            got = [type(a).__name__ for a in args] + sorted(kwargs)
            raise ParameterError(expected("update", "explanations alone (the diagnostics read "
                                          "the scores only)", f"also {got}"))
        x = _check_matrix("explanations", explanations, "(n_test_batch, n_train)")
        if self.n_train_ is not None and x.shape[1] != self.n_train_:
            raise ParameterError(expected(
                "explanations", f"{self.n_train_} columns (n_train, one per training example)",
                f"shape {tuple(x.shape)}"))
        self._blocks.append(_host_rows(x))
        self.n_train_ = int(x.shape[1])
        self.n_queries_ += int(x.shape[0])
        self.diagnostics_ = None

    def diagnostics(self) -> Any:
        """The :class:`~aria_tda.diagnostics.Diagnostics` of the rows accumulated (cached).

        Raises
        ------
        DataError
            fewer than two test examples accumulated.
        """
        if self.diagnostics_ is not None:
            return self.diagnostics_
        if self.n_queries_ < 2:
            raise DataError(expected("explanations", "at least 2 test examples passed to "
                                     "update()", self.n_queries_))
        from aria_tda.diagnostics import diagnose

        s = self._matrix()
        self.diagnostics_ = diagnose(s, topk=self.topk)
        return self.diagnostics_

    def _matrix(self) -> np.ndarray:
        """The accumulated ``(n_train, T)`` C-ordered matrix; the batches are replaced by it."""
        if len(self._blocks) == 1 and self._blocks[0].T.flags.c_contiguous:
            return self._blocks[0].T
        dtype = np.result_type(*(b.dtype for b in self._blocks))
        s = np.empty((self.n_train_ or 0, self.n_queries_), dtype=dtype)
        at = 0
        for b in self._blocks:
            s[:, at:at + b.shape[0]] = b.T
            at += b.shape[0]
        self._blocks = [s.T]
        return s

    def compute(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """ARIA's diagnostics and verdict of every test example passed so far.

        Parameters
        ----------
        *args, **kwargs
            Accepted for quanda's ``Metric`` signature and ignored.

        Returns
        -------
        dict
            ``"score"``: the verdict's label (``"ok"``, ``"suspect"`` or ``"collapsed"``;
            quanda's metrics all return a ``"score"``), then what :func:`reliability` returns
            for the ``(n_train, T)`` matrix — the record of ``aria-tda diagnose --json``.
        """
        rec = _record(self.diagnostics())
        return {"score": rec["verdict"]["label"], **rec}

    def reset(self, *args: Any, **kwargs: Any) -> None:
        """Forget every batch.

        Parameters
        ----------
        *args, **kwargs
            Accepted for quanda's ``Metric`` signature and ignored.
        """
        self._reset_state()

    def state_dict(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The state: ``explanations``, the accumulated ``(T, n_train)`` rows (a torch tensor
        when torch is installed, else a NumPy array), and ``topk``.

        Parameters
        ----------
        *args, **kwargs
            Accepted for quanda's ``Metric`` signature and ignored.
        """
        rows = self._matrix().T if self._blocks else np.zeros((0, self.n_train_ or 0))
        out: Any = rows
        if importlib.util.find_spec("torch") is not None:
            import torch

            out = torch.from_numpy(rows)  # a view: (T, n_train) of the stacked matrix
        return {"explanations": out, "topk": list(self.topk)}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a :meth:`state_dict` (the rows replace the ones accumulated).

        Parameters
        ----------
        state_dict : dict
            ``explanations`` ``(T, n_train)`` and, optionally, ``topk``.
        """
        if not isinstance(state_dict, dict) or "explanations" not in state_dict:
            raise ParameterError(expected("state_dict", "a dict with 'explanations'",
                                          type(state_dict).__name__))
        if "topk" in state_dict:
            topk = state_dict["topk"]
            self.topk = tuple(check_int_list("topk", topk, min_value=1)) if len(topk) else ()
        rows = state_dict["explanations"]
        self._reset_state()
        if int(rows.shape[0]) > 0:
            self.update(rows)


def _metric_init(self: Any, model: Any, train_dataset: Any, checkpoints: Any = None,
                 checkpoints_load_func: Any = None, *,
                 topk: Sequence[int] | None = (1, 10)) -> None:
    """``ReliabilityMetric.__init__``: quanda's ``Metric`` bookkeeping, then the accumulator."""
    import torch

    if not isinstance(model, torch.nn.Module):
        raise ParameterError(expected("model", "a torch.nn.Module", type(model).__name__))
    try:
        n_train: int | None = len(train_dataset)
    except TypeError:  # an iterable dataset has no length: the first batch sets it
        n_train = None
    ReliabilityAccumulator.__init__(self, topk=topk, n_train=n_train or None)
    base = quanda_module("quanda.metrics.base").Metric
    base.__init__(self, model=model, train_dataset=train_dataset, checkpoints=checkpoints,
                  checkpoints_load_func=checkpoints_load_func)


_METRIC_DOC = """ARIA's reliability diagnostics and verdict as a quanda ``Metric``.

Parameters
----------
model : torch.nn.Module
    The model the explanations are of (quanda's bookkeeping; the diagnostics read the scores).
train_dataset : torch.utils.data.Dataset or datasets.Dataset
    Its training set; when it has a length, every batch must have that many columns.
checkpoints, checkpoints_load_func : optional
    As quanda's ``Metric``.
topk : sequence of int, optional
    The ``K`` of the top-K concentration (default ``(1, 10)``).

Notes
-----
``update(explanations)`` takes quanda's ``(n_test_batch, n_train)`` batches; ``compute()``
returns ``{"score": verdict label, **reliability(S)}`` for the ``(n_train, T)`` matrix ``S``
of every batch (:class:`aria_tda.integrations.metrics.ReliabilityAccumulator`, whose memory
holds all ``T`` columns).
"""

_metric_class: type | None = None


def _build_metric_class() -> type:
    global _metric_class
    if _metric_class is None:
        base = quanda_module("quanda.metrics.base").Metric
        _metric_class = type("ReliabilityMetric", (ReliabilityAccumulator, base), {
            "__init__": _metric_init, "__doc__": _METRIC_DOC, "__module__": __name__,
            "__qualname__": "ReliabilityMetric"})
    return _metric_class


def __getattr__(name: str) -> Any:
    """``ReliabilityMetric``: quanda's ``Metric`` subclass, built (importing quanda) on first
    use."""
    if name == "ReliabilityMetric":
        return _build_metric_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
