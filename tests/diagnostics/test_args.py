"""``diagnose(S, DiagnoseArgs(...))`` is ``diagnose(S, ...)``: one options object, checked once,
handed to every backend; and the first pass of every local mode feeds an observer."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import aria_tda
from aria_tda.diagnostics import ApproxOptions, DiagnoseArgs, diagnose
from aria_tda.diagnostics.modes import observe_first_pass
from aria_tda.errors import ParameterError
from aria_tda.scores import open_scores, save_scores


def _scores(rng: np.random.Generator, m: int = 300, t: int = 14) -> np.ndarray:
    return (rng.standard_normal((m, 3)) @ rng.standard_normal((3, t))
            + 0.3 * rng.standard_normal((m, t)) + 1.0)


def _same(a, b) -> None:
    ra, rb = a.to_dict(), b.to_dict()
    assert ra.keys() == rb.keys()
    for key, va in ra.items():
        assert va == rb[key] or (va != va and rb[key] != rb[key]), key


def test_exported_at_the_top():
    assert aria_tda.DiagnoseArgs is DiagnoseArgs
    assert "DiagnoseArgs" in aria_tda.__all__


@pytest.mark.parametrize("options", [
    {},
    {"n_energy": 4, "with_u1": True, "chunk_rows": 37},
    {"mode": "exact-tiled", "memory": "2MB", "topk": (1, 5)},
    {"mode": "approx", "seed": 3, "approx": ApproxOptions(max_passes=4), "topk": None},
])
def test_args_object_equals_keywords(rng, tmp_path, options):
    s = _scores(rng)
    if options.get("mode") == "exact-tiled":
        options = {**options, "spill_dir": tmp_path}
    _same(diagnose(s, DiagnoseArgs(**options)), diagnose(s, **options))


def test_both_args_and_keywords_is_refused(rng):
    with pytest.raises(ParameterError, match=r"args: .*not both.*n_energy"):
        diagnose(_scores(rng), DiagnoseArgs(), n_energy=3)


def test_args_must_be_diagnose_args(rng):
    with pytest.raises(ParameterError, match="args: expected a DiagnoseArgs"):
        diagnose(_scores(rng), {"n_energy": 3})


@pytest.mark.parametrize(("options", "message"), [
    ({"n_energy": 0}, r"n_energy: expected an integer >= 1, got 0"),
    ({"mode": "fast"}, r"mode: expected one of 'auto', 'exact', 'exact-tiled', 'approx'"),
    ({"topk": (0,)}, r"topk\[0\]: expected an integer >= 1, got 0"),
    ({"chunk_rows": 0}, r"chunk_rows: expected an integer >= 1, got 0"),
    ({"compute_dtype": "float16"}, r"compute_dtype: expected one of None, 'float32'"),
    ({"transpose": 1}, r"transpose: expected True or False, got 1"),
    ({"memory": "lots"}, r"memory: expected a size such as 8GB"),
    ({"n_threads": 0}, r"n_threads: expected an integer >= 1, got 0"),
    ({"approx": {"max_passes": 3}}, r"approx: expected an ApproxOptions"),
    ({"spill_dir": ""}, r"spill_dir: expected a folder"),
    ({"colour": "red"}, r"unknown option\(s\) 'colour'"),
])
def test_checked_when_built_with_the_messages_of_the_keywords(rng, options, message):
    with pytest.raises(ParameterError, match=message):
        DiagnoseArgs.from_mapping(options, what="diagnose")
    with pytest.raises(ParameterError, match=message):
        diagnose(_scores(rng, 40, 4), **options)


def test_fields_are_frozen_and_normalised():
    a = DiagnoseArgs(topk=5)
    assert a.topk == (5,) and DiagnoseArgs(topk=None).topk == ()
    assert a.replace(topk=[1, 10]).topk == (1, 10)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.n_energy = 3  # type: ignore[misc]
    assert a.to_dict()["topk"] == [5]


@pytest.mark.parametrize("mode", ["exact", "exact-tiled", "approx"])
def test_observed_first_pass_sees_every_block(rng, tmp_path, mode):
    """``diagnose(observe_first_pass(src, [obs]))`` feeds ``obs`` every row block of the first
    full pass, in order, in every local mode (a fused pass of the study relies on it)."""
    s = _scores(rng, 257, 9).astype(np.float32)
    src = open_scores(save_scores(s, tmp_path / "s.npy"))

    class Observer:
        def __init__(self) -> None:
            self.rows: list[tuple[int, int]] = []
            self.total = np.zeros(s.shape[1])

        def update(self, block: np.ndarray, row0: int) -> None:
            self.rows.append((row0, block.shape[0]))
            self.total += block.sum(axis=0, dtype=np.float64)

    obs = Observer()
    watched = observe_first_pass(src, [obs])
    extra = {"memory": "4MB", "spill_dir": tmp_path / "tiles"} if mode == "exact-tiled" else {}
    d = diagnose(watched, mode=mode, chunk_rows=50, **extra)
    assert watched.complete and d.mode == mode
    starts = [r for r, _ in obs.rows]
    assert starts == sorted(starts) and starts[0] == 0
    assert sum(n for _, n in obs.rows) == s.shape[0]
    np.testing.assert_allclose(obs.total, s.sum(axis=0, dtype=np.float64), rtol=1e-12)
