"""One read of a stage (``aria_tda.study.stage_read``): the diagnostics, the top-K concentration
and both S_track from the fewest passes over the scores, equal to the separate passes.

The references are the separate library calls the study made before (``diagnose``, then
``aggregate`` for the matrix and for its residual, each with its own passes), and through them
the in-memory twins (``aggregate_reference``, ``diagnose_reference``) they are tested against.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from aria_tda.diagnostics import diagnose
from aria_tda.scores import aggregate, open_scores, save_scores
from aria_tda.scores.aggregation import aggregate_reference
from aria_tda.scores.source import ScoreSource
from aria_tda.study import stage_read
from aria_tda.study.config import SettingSpec
from aria_tda.study.stage_read import read_stage

TOPK = (1, 5, 10)


class _Store:
    """What read_stage asks of a feature store when there is no segment map: the track ids."""

    def __init__(self, ids: list[str]) -> None:
        self.track_ids = np.asarray(ids)

    def __len__(self) -> int:
        return len(self.track_ids)


class _Counting(ScoreSource):
    """Delegates to a source and counts the full passes over its rows."""

    def __init__(self, base: ScoreSource, log: list[str]) -> None:
        super().__init__(base.shape, base.dtype, row_ids=base.row_ids, manifest=base.manifest)
        self.base, self.log = base, log
        self.block_dtype = base.block_dtype
        self.path, self.key, self.transposed = base.path, base.key, base.transposed
        self.zero_copy, self.io_bound = base.zero_copy, base.io_bound

    def _raw_rows(self, start: int, stop: int) -> Any:
        return self.base._raw_rows(start, stop)

    def _read_into(self, start: int, stop: int, out: np.ndarray) -> np.ndarray:
        return self.base._read_into(start, stop, out)

    def _raw_columns(self, start: int, stop: int) -> Any:
        return self.base._raw_columns(start, stop)

    def chunk_rows(self, chunk_rows: int | None = None) -> int:
        return self.base.chunk_rows(chunk_rows)

    def describe(self) -> str:
        return self.base.describe()

    def iter_chunks(self, chunk_rows: int | None = None, *, start: int = 0,
                    stop: int | None = None, **kw: Any) -> Iterator[tuple[int, np.ndarray]]:
        if start == 0 and stop in (None, self.n_rows):
            self.log.append("pass")
        yield from self.base.iter_chunks(chunk_rows, start=start, stop=stop, **kw)


def _matrix(tmp_path: Path, *, heavy: bool = False, seed: int = 0) -> tuple[Path, Path, list]:
    """A float32 segment matrix with unequal, shuffled segments per track and a strong rank-1
    part (a popularity axis), so the residual differs from the matrix."""
    rng = np.random.default_rng(seed)
    n_tracks, t = 40, 9
    counts = rng.integers(1, 6, n_tracks)
    seg_track = rng.permutation(np.repeat(np.arange(n_tracks), counts))
    m = seg_track.size
    pop = rng.normal(size=n_tracks) * 3.0
    s = pop[seg_track, None] + rng.normal(size=(m, t)) + 50.0  # a large common offset
    if heavy:
        s += rng.standard_t(1.5, size=(m, t)) * 5.0
    ids = [f"trk{i:03d}" for i in range(n_tracks)]
    save_scores(s.astype(np.float32), tmp_path / "scores.npy", method="M", stage="fine")
    pd.DataFrame({"segment": np.arange(m), "track_id": np.asarray(ids)[seg_track]}).to_csv(
        tmp_path / "segments.csv", index=False)
    return tmp_path / "scores.npy", tmp_path / "segments.csv", ids


def _setting(scores: Path, segments: Path | None, normalize: str) -> SettingSpec:
    return SettingSpec(name="M/fine", method="M", stage="fine", scores=scores,
                       segments=segments, normalize=normalize)


def _separate(scores: Path, segments: Path | None, normalize: str, out: Path) -> dict[str, Any]:
    """The study's former route: diagnose, then aggregate the matrix and its residual."""
    out.mkdir()
    d = diagnose(scores, topk=TOPK)
    orig = aggregate(scores, segments=segments, normalize=normalize, out=out / "o.npy")
    res = aggregate(scores, segments=segments, normalize=normalize, residual=True,
                    out=out / "r.npy")
    return {"d": d, "original": orig, "residual": res}


@pytest.mark.parametrize("normalize", ["zscore", "rank", "auto"])
def test_one_read_equals_the_separate_passes(tmp_path, normalize):
    scores, segments, ids = _matrix(tmp_path, heavy=normalize == "auto")
    want = _separate(scores, segments, normalize, tmp_path / "ref")
    work = tmp_path / "work"
    work.mkdir()
    got = read_stage(_setting(scores, segments, normalize), _Store(ids), work=work, topk=TOPK,
                     residual=True)
    assert got.diagnostics.to_dict() == want["d"].to_dict()
    for variant in ("original", "residual"):
        a, b = getattr(got, variant), want[variant]
        assert list(a.row_ids) == list(b.row_ids)
        np.testing.assert_allclose(a.to_numpy(), b.to_numpy(), rtol=1e-9, atol=1e-9)
        pa, pb = a.manifest["parameters"], b.manifest["parameters"]
        for k in ("normalize", "normalize_requested", "residual", "segments", "n_segments"):
            assert pa.get(k) == pb.get(k), k
    assert got.normalize == want["original"].manifest["parameters"]["normalize"]
    if normalize == "auto":
        assert got.normalize == "rank"  # the heavy tails: the rule chose rank


def test_z_score_agrees_with_the_in_memory_twin(tmp_path):
    scores, segments, ids = _matrix(tmp_path, seed=3)
    work = tmp_path / "work"
    work.mkdir()
    got = read_stage(_setting(scores, segments, "zscore"), _Store(ids), work=work, topk=TOPK,
                     residual=True)
    for variant, residual in (("original", False), ("residual", True)):
        ref = aggregate_reference(scores, segments=segments, normalize="zscore",
                                  residual=residual)
        # float32 Gram products in the diagnostics' pass: v1 to about 1e-7
        np.testing.assert_allclose(getattr(got, variant).to_numpy(), ref.to_numpy(),
                                   rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("residual", "reads"), [(False, 1), (True, 2)])
def test_the_z_score_reads_the_scores_once_and_twice_with_the_residual(
        tmp_path, monkeypatch, residual, reads):
    scores, segments, ids = _matrix(tmp_path)
    log: list[str] = []
    real = stage_read.open_setting_scores
    monkeypatch.setattr(stage_read, "open_setting_scores",
                        lambda setting: _Counting(real(setting), log))
    work = tmp_path / "work"
    work.mkdir()
    got = read_stage(_setting(scores, segments, "zscore"), _Store(ids), work=work, topk=TOPK,
                     residual=residual)
    assert len(log) == reads == got.reads_of_scores
    assert [p["reads"] for p in got.passes] == ["scores"] * reads + ["track sums", "S_track"]
    assert all(p["seconds"] >= 0 and p["peak_rss_mb"] > 0 for p in got.passes)


def test_no_normalisation_writes_the_residual_in_its_own_pass(tmp_path):
    rng = np.random.default_rng(5)
    s = (np.outer(rng.normal(size=80), rng.normal(size=7)) * 4
         + rng.normal(size=(80, 7))).astype(np.float32)
    ids = [f"t{i}" for i in range(80)]
    save_scores(s, tmp_path / "s.npy", row_ids=ids)
    work = tmp_path / "work"
    work.mkdir()
    got = read_stage(_setting(tmp_path / "s.npy", None, "none"), _Store(ids), work=work,
                     topk=TOPK, residual=True)
    from aria_tda.scores import residual

    want = residual(tmp_path / "s.npy")
    np.testing.assert_allclose(got.residual.to_numpy(), want.to_numpy(), rtol=1e-9, atol=1e-9)
    assert list(got.residual.row_ids) == ids
    assert got.reads_of_scores == 2


def test_the_identity_map_and_the_torch_path(tmp_path):
    """One segment per track (no map: matched to the store by position) and the Gram on a torch
    device (the GPU's code path, on the CPU here) give the numpy path's S_track."""
    scores, _, _ = _matrix(tmp_path)
    m = open_scores(scores).n_rows
    ids = [f"row{i}" for i in range(m)]
    want = _separate(scores, None, "zscore", tmp_path / "ref")
    for device in (None, "cpu"):
        work = tmp_path / f"work-{device}"
        work.mkdir()
        got = read_stage(_setting(scores, None, "zscore"), _Store(ids), work=work, topk=TOPK,
                         residual=True, device=device)
        for variant in ("original", "residual"):
            np.testing.assert_allclose(getattr(got, variant).to_numpy(),
                                       want[variant].to_numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.slow
def test_dask_stage_read_equals_one_machine(tmp_path, dask_client):
    scores, segments, ids = _matrix(tmp_path, seed=7)
    res = {}
    for name, client in (("one", None), ("dask", dask_client)):
        work = tmp_path / name
        work.mkdir()
        res[name] = read_stage(_setting(scores, segments, "zscore"), _Store(ids), work=work,
                               topk=TOPK, residual=True, chunk_rows=17, client=client)
    a, b = res["one"], res["dask"]
    for k, v in a.diagnostics.to_dict().items():
        if isinstance(v, float):
            assert b.diagnostics.to_dict()[k] == pytest.approx(v, rel=1e-9, abs=1e-12), k
    assert a.diagnostics.concentration.to_dict() == b.diagnostics.concentration.to_dict()
    for variant in ("original", "residual"):
        np.testing.assert_allclose(getattr(a, variant).to_numpy(),
                                   getattr(b, variant).to_numpy(), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize(("dtype", "tol"), [(np.float64, 1e-12), (np.float32, 1e-5)])
def test_the_alignment_triple_comes_from_the_gram_summed_while_writing(tmp_path, dtype, tol):
    """The S_track Gram is summed with products in the scores' precision (float32 scores:
    float32 products, as the diagnostics' Gram), so its triple equals rank1's to that."""
    from aria_tda.scores import rank1

    scores, segments, ids = _matrix(tmp_path, seed=11)
    save_scores(open_scores(scores).to_numpy().astype(dtype), tmp_path / "s.npy")
    work = tmp_path / "work"
    work.mkdir()
    got = read_stage(_setting(tmp_path / "s.npy", segments, "zscore"), _Store(ids), work=work,
                     topk=TOPK, residual=False)
    want = rank1(got.original)
    r1 = got.original_rank1
    assert r1.sigma1 == pytest.approx(want.sigma1, rel=tol)
    np.testing.assert_allclose(r1.v1, want.v1, atol=tol)
    np.testing.assert_allclose(r1.u1, want.u1, atol=tol)
    assert got.passes[-1]["reads"] == "S_track"
