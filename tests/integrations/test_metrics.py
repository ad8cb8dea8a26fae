"""ARIA inside quanda's and dattri's metric loops (:mod:`aria_tda.integrations.metrics`).

On every score file the peer libraries wrote (``tests/data/peer``): quanda 0.5.0's own
``TopKCardinalityMetric`` and :func:`topk_cardinality` give the same number, and ARIA's quanda
``Metric`` fed the explanations batch by batch gives what ``aria-tda diagnose FILE --json``
prints. quanda goes in without its peers (``scripts/setup.sh --dev``); the quanda tests skip
when it is absent.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from aria_tda.cli import main
from aria_tda.errors import AriaWarning, DataError, MissingDependencyError, ParameterError
from aria_tda.integrations import metrics
from aria_tda.integrations.metrics import (
    ReliabilityAccumulator,
    quanda_module,
    reliability,
    topk_cardinality,
)
from aria_tda.scores.readers import open_scores

torch = pytest.importorskip("torch")

DATA = Path(__file__).resolve().parents[1] / "data" / "peer"
MANIFEST = json.loads((DATA / "manifest.json").read_text(encoding="utf-8"))
#: Every peer file ARIA reads whole (the interrupted bergson run is refused by design).
WHOLE = [e for e in MANIFEST["files"] if e["finite"] and e.get("all_written", True)]
#: Batch size of the quanda loops: uneven, so the last batch is short.
BATCH = 16


def _id(e: dict) -> str:
    return e["path"]


def _matrix(e: dict) -> np.ndarray:
    """The file's ``(n_train, n_test)`` values in the stored dtype, as ARIA reads them."""
    src = open_scores(DATA / e["path"], transpose=e["aria_transpose"])
    try:
        return np.array(src.to_numpy())
    finally:
        src.close()


def _explanation_batches(s: np.ndarray) -> list[Any]:
    """quanda's ``(n_test_batch, n_train)`` tensors of the matrix ``s``."""
    rows = torch.from_numpy(np.ascontiguousarray(s.T))
    return [rows[i:i + BATCH] for i in range(0, rows.shape[0], BATCH)]


@pytest.fixture(scope="module")
def quanda() -> dict[str, Any]:
    """quanda's metric base and ``TopKCardinalityMetric`` (skips when quanda is absent)."""
    try:
        base = quanda_module("quanda.metrics.base")
        topk = quanda_module("quanda.metrics.heuristics.top_k_cardinality")
    except MissingDependencyError as exc:
        pytest.skip(f"quanda not usable here: {exc}")
    return {"Metric": base.Metric, "TopKCardinalityMetric": topk.TopKCardinalityMetric,
            "ReliabilityMetric": metrics.ReliabilityMetric}


def _assert_same(got: Any, want: Any, where: str = "") -> None:
    """Equal records: floats to 1e-6 relative (in-memory vs streamed from the file), the rest
    exactly."""
    if isinstance(want, dict):
        assert isinstance(got, dict) and set(got) == set(want), (where, set(got) ^ set(want))
        for key in want:
            _assert_same(got[key], want[key], f"{where}.{key}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for i, (a, b) in enumerate(zip(got, want, strict=True)):
            _assert_same(a, b, f"{where}[{i}]")
    elif isinstance(want, float) and not isinstance(got, bool):
        assert math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-9), (where, got, want)
    else:
        assert got == want, (where, got, want)


def _quiet(f: Any, *args: Any, **kw: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", AriaWarning)
        return f(*args, **kw)


# ----------------------------------------------------------------------------------------
# quanda's own TopKCardinalityMetric == topk_cardinality, on every peer file
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("e", WHOLE, ids=_id)
def test_topk_cardinality_is_quandas_number(e, quanda):
    s = _matrix(e)
    model = torch.nn.Linear(2, 1)
    for k in (1, 5, 10):
        theirs = quanda["TopKCardinalityMetric"](model, range(s.shape[0]), top_k=k)
        for batch in _explanation_batches(s):
            theirs.update(batch)
        want = theirs.compute()["score"]
        assert topk_cardinality(s, k=k) == pytest.approx(want, abs=1e-12), k
        # read from the file itself, and from quanda's orientation
        assert topk_cardinality(DATA / e["path"], k=k, transpose=e["aria_transpose"]) == (
            pytest.approx(want, abs=1e-12))
        assert topk_cardinality(s.T, k=k, transpose=True) == pytest.approx(want, abs=1e-12)
        if str(k) in e.get("quanda_topk_cardinality", {}):  # written by quanda at generation
            assert want == pytest.approx(e["quanda_topk_cardinality"][str(k)], abs=1e-12)


def test_topk_cardinality_bounds_and_bad_k(rng):
    same = np.repeat(rng.standard_normal((50, 1)), 8, axis=1)  # every query ranks alike
    assert topk_cardinality(same, k=3) == pytest.approx(1 / 8)
    disjoint = np.kron(np.eye(8), np.ones((3, 1)))  # query j's top-3 are rows 3j..3j+2
    assert topk_cardinality(disjoint, k=3) == 1.0
    for bad in (0, 2.5, True, 25):
        with pytest.raises(ParameterError, match=r"^k: expected"):
            topk_cardinality(disjoint, k=bad)


# ----------------------------------------------------------------------------------------
# ARIA's quanda Metric == aria-tda diagnose --json, on every peer file
# ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("e", WHOLE, ids=_id)
def test_quanda_metric_in_batches_is_the_cli(e, quanda, capsys):
    s = _matrix(e)
    metric = quanda["ReliabilityMetric"](torch.nn.Linear(2, 1), range(s.shape[0]))
    assert isinstance(metric, quanda["Metric"])
    for batch in _explanation_batches(s):
        metric.update(batch)
    got = _quiet(metric.compute)
    argv = ["diagnose", str(DATA / e["path"]), "--json"]
    assert _quiet(main, argv + (["--transpose"] if e["aria_transpose"] else [])) == 0
    want = json.loads(capsys.readouterr().out)
    want.pop("input")
    assert got.pop("score") == want["verdict"]["label"]
    _assert_same(got, want)
    assert got["n_queries"] == e["n_queries"] and got["n_train"] == e["n_train"]
    for f in ("kappa", "r1", "r2_5", "p"):  # the manifest's float64 definitions
        assert got[f] == pytest.approx(e[f], rel=1e-5), f


def test_quanda_metric_state_round_trip_and_reset(quanda, rng):
    cls = quanda["ReliabilityMetric"]
    s = rng.standard_normal((120, 30)).astype(np.float32)
    rows = torch.from_numpy(np.ascontiguousarray(s.T))
    one = cls(torch.nn.Linear(2, 1), range(120), topk=(1, 5))
    one.update(rows[:7])
    one.update(rows[7:])
    first = one.compute()
    assert first == one.compute()  # cached until the next update
    assert first == {"score": first["verdict"]["label"], **reliability(s, topk=(1, 5))}

    state = one.state_dict()
    assert tuple(state["explanations"].shape) == (30, 120) and state["topk"] == [1, 5]
    torch.testing.assert_close(state["explanations"], rows)
    other = cls(torch.nn.Linear(2, 1), range(120))  # topk comes with the state
    other.load_state_dict(state)
    assert other.compute() == first

    one.update(rows[:3])  # an update invalidates the cached diagnostics
    assert one.compute()["n_queries"] == 33
    one.reset()
    assert one.n_queries_ == 0
    with pytest.raises(DataError, match=r"explanations: expected at least 2 test examples"):
        one.compute()


def test_quanda_metric_refuses_bad_input(quanda, rng):
    cls = quanda["ReliabilityMetric"]
    with pytest.raises(ParameterError, match=r"^model: expected a torch.nn.Module"):
        cls("not a model", range(10))
    metric = cls(torch.nn.Linear(2, 1), range(10))
    with pytest.raises(ParameterError, match=r"explanations: expected 10 columns"):
        metric.update(torch.zeros(4, 11))
    with pytest.raises(ParameterError, match=r"explanations: expected a non-empty 2-D"):
        metric.update(torch.zeros(10))
    bad = torch.zeros(3, 10)
    bad[2, 7] = float("inf")
    with pytest.raises(DataError, match=r"explanations: .*inf at row 2, column 7"):
        metric.update(bad)
    with pytest.raises(ParameterError, match=r"update: expected explanations alone"):
        metric.update(torch.zeros(3, 10), targets=torch.zeros(3))
    assert metric.n_queries_ == 0  # nothing refused was kept


def test_accumulator_chunked_equals_whole_without_quanda(rng):
    s = rng.standard_normal((80, 12))
    acc = ReliabilityAccumulator(topk=(1, 4))
    for i in range(0, 12, 5):
        acc.update(s.T[i:i + 5])  # NumPy batches work too
    assert acc.compute() == {"score": acc.compute()["verdict"]["label"],
                             **reliability(s, topk=(1, 4))}


def test_quanda_module_names_bad_input(quanda):
    for bad in ("numpy", "quanda.metrics.no_such_metric", 3):
        with pytest.raises(ParameterError, match=r"^name: expected a module of quanda"):
            quanda_module(bad)


def test_import_does_not_import_quanda_or_torch():
    code = ("import sys, aria_tda.integrations.metrics; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'quanda', 'torch'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    assert out.strip() == "[]"


# ----------------------------------------------------------------------------------------
# the dattri-style function
# ----------------------------------------------------------------------------------------
def test_reliability_torch_equals_numpy(rng):
    s = rng.standard_normal((200, 16)).astype(np.float32)
    s[:, :8] += 3 * rng.standard_normal((200, 1)).astype(np.float32)  # a shared axis
    from_numpy = reliability(s)
    _assert_same(reliability(torch.from_numpy(s)), from_numpy)
    _assert_same(reliability(torch.from_numpy(s).requires_grad_()), from_numpy)
    _assert_same(reliability(s.tolist()), reliability(s.astype(np.float64)))
    assert reliability(s, topk=None).get("concentration") is None


def test_reliability_calls_a_shared_ranking_collapsed(rng):
    """Every query ranks the training rows alike (one shared profile, small noise): the top-K
    does not follow the query."""
    s = np.outer(rng.standard_normal(300), np.ones(40)) + 1e-3 * rng.standard_normal((300, 40))
    out = reliability(s)
    assert out["verdict"]["label"] == "collapsed", out["verdict"]["reason"]
    assert topk_cardinality(s, k=1) == pytest.approx(1 / 40)


@pytest.mark.parametrize(
    ("bad", "error", "match"),
    [
        (np.zeros(5), ParameterError, r"score: expected a non-empty 2-D matrix"),
        (np.zeros((2, 3, 4)), ParameterError, r"score: expected a non-empty 2-D matrix"),
        (np.zeros((0, 4)), ParameterError, r"score: expected a non-empty 2-D matrix"),
        ("scores.pt", ParameterError, r"score: expected a NumPy array or torch tensor"),
        ({"a": 1}, ParameterError, r"score: expected a NumPy array or torch tensor"),
        (None, ParameterError, r"score: expected a NumPy array or torch tensor"),
        (np.ones((4, 3), dtype=complex), ParameterError, r"score: expected real"),
        (np.array([["a", "b"], ["c", "d"]]), ParameterError, r"score: expected real"),
        ([[1.0, 2.0], [3.0]], ParameterError, r"score: expected a 2-D matrix"),
    ],
)
def test_reliability_refuses_bad_input(bad, error, match):
    with pytest.raises(error, match=match):
        reliability(bad)


def test_reliability_names_the_first_nan(rng):
    s = rng.standard_normal((30, 6))
    s[17, 4] = np.nan
    for value in (s, torch.from_numpy(s)):
        with pytest.raises(DataError, match=r"^score: expected finite scores, got nan at row 17, "
                           r"column 4"):
            reliability(value)
    with pytest.raises(ParameterError, match=r"score: expected real"):
        reliability(torch.ones(4, 3, dtype=torch.bool))
