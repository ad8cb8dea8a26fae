r"""The three stages of the audio benchmark: vocabularies, sequences, segment sets, training.

A MusicLM-style hierarchy (paper §4.2, appendix "Audio Experimental Details"), one small
:class:`~aria_tda_experiments.model.MusicTransformer` per stage, each trained on its own sequences:

==========  ======  ==============================================  =========================
stage       window  sequence (one vocabulary per stage)             target (predicted part)
==========  ======  ==============================================  =========================
semantic    10 s    BOS, cond, semantic tokens                      semantic tokens
coarse      4 s     BOS, cond, semantic tokens, acoustic levels     acoustic levels 1..3
                    1..3 frame-major (f0l1 f0l2 f0l3 f1l1 ...)
fine        2 s     BOS, cond, acoustic levels 1..3 frame-major,    acoustic levels 4..8
                    acoustic levels 4..8 frame-major
==========  ======  ==============================================  =========================

Vocabulary layout of a stage: id 0 is BOS; then one block per token kind the stage uses, in
the order of its sequence: ``cond`` (``cond_codebooks * cond_codebook`` ids, codebook ``j``
owning ids ``j*cond_codebook ..`` of the block), ``semantic`` (``semantic_k`` ids), and one
block of ``rvq_codebook`` ids per acoustic level ``acoustic1 .. acoustic8`` (so the levels are
distinguishable). A raw token ``v`` of block ``b`` has id ``offset[b] + v``;
:attr:`StageLayout.blocks` lists ``(name, offset, size)``. Every position of a sequence has
one valid block (:meth:`StageLayout.position_ranges`), which generation enforces.

The training loss and the attribution loss/target of a stage are the mean next-token NLL over
its target positions only: :class:`aria_tda.attribution.losses.ContinuationLoss` with
``start = target_start`` (the first target token).

Segments: every training track is cut into non-overlapping windows of the stage's length
from 0 s; a trailing partial window is dropped (at 30 s: the coarse stage drops the last 2 s,
the semantic and fine stages drop nothing), so each stage's segments cover every second of
``[0, floor(D / w) * w)`` exactly once. Rows are in track order (the mapping's order), then
by start time; ``segment_id = "<track_id>@<start_s>"`` (``start_s`` printed with ``%g``).
With 30 s tracks: 3 / 7 / 15 segments per track, so ``M_sem < M_crs < M_fin``.

Models and their training: :mod:`aria_tda_experiments.audio.training`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from aria_tda._checks import check_choice
from aria_tda._io import atomic_path
from aria_tda._options import Options, option
from aria_tda.errors import DataError, FileFormatError, ParameterError, expected
from aria_tda.manifest import make_manifest, read_manifest, write_manifest

__all__ = [
    "BOS",
    "STAGES",
    "StageData",
    "StageLayout",
    "StageSpec",
    "TrackTokensLike",
    "build_stage_data",
    "load_stage_data",
    "save_stage_data",
    "stage_layout",
    "track_arrays",
]

STAGES = ("semantic", "coarse", "fine")
BOS = 0
STAGE_DATA_KIND = "aria_tda_experiments.audio.stage_data"


class TrackTokensLike(Protocol):
    """What the stages read from a tokenized track
    (``aria_tda_experiments.audio.tokenizers.TrackTokens``).

    Attributes
    ----------
    semantic : np.ndarray [shape=(n,)], int
        Semantic token per frame.
    acoustic : np.ndarray [shape=(n, rvq_levels)], int
        Acoustic RVQ codes per frame (level 1 first).
    cond : np.ndarray [shape=(cond_codebooks,)], int
        Track-level conditioning tokens.
    """

    @property
    def semantic(self) -> Any: ...

    @property
    def acoustic(self) -> Any: ...

    @property
    def cond(self) -> Any: ...


@dataclass(frozen=True)
class StageSpec(Options):
    """Token alphabets, frame rate and window lengths the stage layouts are built from."""

    semantic_k: int = option(128, min_value=1, help="semantic vocabulary (k-means clusters)")
    rvq_codebook: int = option(64, min_value=1, help="codes per acoustic RVQ level")
    rvq_levels: int = option(8, min_value=2, help="acoustic RVQ levels")
    coarse_levels: int = option(3, min_value=1, help="levels the coarse stage predicts")
    cond_codebooks: int = option(4, min_value=1, help="conditioning tokens per track")
    cond_codebook: int = option(32, min_value=1, help="codes per conditioning codebook")
    frame_hz: float = option(25.0, min_value=0.0, min_inclusive=False,
                             help="token frames per second (semantic and acoustic)")
    semantic_seconds: float = option(10.0, min_value=0.0, min_inclusive=False,
                                     help="semantic stage window (s)")
    coarse_seconds: float = option(4.0, min_value=0.0, min_inclusive=False,
                                   help="coarse stage window (s)")
    fine_seconds: float = option(2.0, min_value=0.0, min_inclusive=False,
                                 help="fine stage window (s)")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.coarse_levels >= self.rvq_levels:
            what = f"fewer than rvq_levels={self.rvq_levels}"
            raise ParameterError(expected("coarse_levels", what, self.coarse_levels))
        for stage in STAGES:
            self.frames(stage)

    @classmethod
    def from_config(cls, config: Any, **changes: Any) -> StageSpec:
        """A spec from any object with the tokenizer's attribute names (e.g. TokenizerConfig).

        Parameters
        ----------
        config : object
            Read: ``semantic_k``, ``rvq_codebook``, ``rvq_levels``, ``cond_codebooks``,
            ``cond_codebook``, ``frame_hz`` (those it has).
        **changes : Any
            Further fields (e.g. window seconds).
        """
        names = ("semantic_k", "rvq_codebook", "rvq_levels", "cond_codebooks", "cond_codebook",
                 "frame_hz")
        return cls(**{n: getattr(config, n) for n in names if hasattr(config, n)}, **changes)

    def seconds(self, stage: str) -> float:
        """Window length of ``stage`` in seconds.

        Parameters
        ----------
        stage : {"semantic", "coarse", "fine"}
            The stage.
        """
        stage = check_choice("stage", stage, STAGES)
        return float(getattr(self, f"{stage}_seconds"))

    def frames(self, stage: str) -> int:
        """Token frames per window of ``stage`` (``seconds * frame_hz``, must be whole).

        Parameters
        ----------
        stage : {"semantic", "coarse", "fine"}
            The stage.
        """
        exact = self.seconds(stage) * self.frame_hz
        n = round(exact)
        if n < 1 or abs(exact - n) > 1e-6:
            raise ParameterError(expected(f"{stage}_seconds * frame_hz",
                                          "a whole number of frames >= 1", exact))
        return int(n)


@dataclass(frozen=True)
class StageLayout:
    """Vocabulary and sequence layout of one stage (see the module docstring).

    Attributes
    ----------
    stage : str
    spec : StageSpec
    blocks : tuple of (name, offset, size)
        The id blocks after BOS, in sequence order.
    target_start : int
        Index of the first predicted token.
    length : int
        Sequence length ``L``.
    vocab_size : int
    """

    stage: str
    spec: StageSpec
    blocks: tuple[tuple[str, int, int], ...]
    target_start: int
    length: int
    vocab_size: int

    def offset(self, block: str) -> int:
        """First id of ``block``.

        Parameters
        ----------
        block : str
            ``"cond"``, ``"semantic"`` or ``"acoustic<level>"`` (1-based level).
        """
        for name, off, _ in self.blocks:
            if name == block:
                return off
        raise ParameterError(expected("block", f"one of {[b[0] for b in self.blocks]}", block))

    def position_blocks(self) -> list[str]:
        """The block of every position ``0 .. L-1`` (``"bos"`` at 0)."""
        spec, n = self.spec, self.spec.frames(self.stage)
        c, lv = spec.cond_codebooks, spec.coarse_levels
        out = ["bos"] + ["cond"] * c
        if self.stage in ("semantic", "coarse"):
            out += ["semantic"] * n
        if self.stage in ("coarse", "fine"):
            out += [f"acoustic{lvl + 1}" for _ in range(n) for lvl in range(lv)]
        if self.stage == "fine":
            out += [f"acoustic{lvl + 1}" for _ in range(n) for lvl in range(lv, spec.rvq_levels)]
        return out

    def position_ranges(self) -> tuple[np.ndarray, np.ndarray]:
        """Valid ids of every position: ``lo, hi`` ``(L,)`` int64, ids ``lo <= id < hi``.

        The cond positions allow only their own codebook's ids.
        """
        lo = np.zeros(self.length, dtype=np.int64)
        hi = np.ones(self.length, dtype=np.int64)
        size = {name: (off, sz) for name, off, sz in self.blocks}
        k = self.spec.cond_codebook
        for i, b in enumerate(self.position_blocks()):
            if b == "cond":
                lo[i] = size["cond"][0] + (i - 1) * k
                hi[i] = lo[i] + k
            elif b != "bos":
                lo[i], hi[i] = size[b][0], size[b][0] + size[b][1]
        return lo, hi

    def encode(self, tokens: TrackTokensLike, start_frame: int) -> np.ndarray:
        """The stage sequence ``(L,)`` int64 of the window starting at frame ``start_frame``.

        Parameters
        ----------
        tokens : TrackTokensLike
            A tokenized track.
        start_frame : int
            First frame of the window (the window must fit in the track).
        """
        sem, ac, cond = track_arrays(tokens, self.spec)
        n = self.spec.frames(self.stage)
        if start_frame < 0 or start_frame + n > sem.shape[0]:
            raise DataError(expected("start_frame", f"a window of {n} frames inside the "
                                     f"track's {sem.shape[0]}", start_frame))
        sl = slice(start_frame, start_frame + n)
        lv, k = self.spec.coarse_levels, self.spec.rvq_codebook
        level_off = k * np.arange(self.spec.rvq_levels)
        parts = [np.array([BOS]), self.offset("cond") + self.spec.cond_codebook *
                 np.arange(cond.size) + cond]
        if self.stage in ("semantic", "coarse"):
            parts.append(self.offset("semantic") + sem[sl])
        if self.stage in ("coarse", "fine"):
            parts.append((self.offset("acoustic1") + level_off[:lv] + ac[sl, :lv]).ravel())
        if self.stage == "fine":
            parts.append((self.offset("acoustic1") + level_off[lv:] + ac[sl, lv:]).ravel())
        return np.concatenate(parts).astype(np.int64)


def stage_layout(stage: str, spec: StageSpec | None = None) -> StageLayout:
    """The :class:`StageLayout` of ``stage`` under ``spec``.

    Parameters
    ----------
    stage : {"semantic", "coarse", "fine"}
        The stage.
    spec : StageSpec, optional
        Alphabets and windows (default :class:`StageSpec`).
    """
    stage = check_choice("stage", stage, STAGES)
    spec = spec or StageSpec()
    kinds = [("cond", spec.cond_codebooks * spec.cond_codebook)]
    if stage in ("semantic", "coarse"):
        kinds.append(("semantic", spec.semantic_k))
    n_levels = spec.coarse_levels if stage == "coarse" else spec.rvq_levels
    if stage != "semantic":
        kinds += [(f"acoustic{lvl + 1}", spec.rvq_codebook) for lvl in range(n_levels)]
    blocks, off = [], 1
    for name, size in kinds:
        blocks.append((name, off, size))
        off += size
    n, c, lv = spec.frames(stage), spec.cond_codebooks, spec.coarse_levels
    context = {"semantic": 0, "coarse": n, "fine": lv * n}[stage]
    predicted = {"semantic": n, "coarse": lv * n, "fine": (spec.rvq_levels - lv) * n}[stage]
    start = 1 + c + context
    return StageLayout(stage=stage, spec=spec, blocks=tuple(blocks), target_start=start,
                       length=start + predicted, vocab_size=off)


def track_arrays(tokens: Any, spec: StageSpec) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(semantic (n,), acoustic (n, levels), cond (C,))`` int64, shapes and ranges checked.

    Parameters
    ----------
    tokens : TrackTokens
        A track's tokens (``semantic``, ``acoustic`` and ``cond`` arrays).
    spec : StageSpec
        The vocabulary sizes and shapes.

    Returns
    -------
    tuple of numpy.ndarray

    Raises
    ------
    ParameterError
        An object without the three arrays.
    DataError
        A wrong shape or an id out of its vocabulary.
    """
    try:
        sem = np.asarray(tokens.semantic, dtype=np.int64)
        ac = np.asarray(tokens.acoustic, dtype=np.int64)
        cond = np.asarray(tokens.cond, dtype=np.int64)
    except AttributeError:
        what = "an object with semantic, acoustic and cond arrays"
        raise ParameterError(expected("tokens", what, type(tokens).__name__)) from None
    checks = [("semantic", sem, (sem.shape[0],) if sem.ndim == 1 else None, spec.semantic_k),
              ("acoustic", ac, (sem.shape[0], spec.rvq_levels), spec.rvq_codebook),
              ("cond", cond, (spec.cond_codebooks,), spec.cond_codebook)]
    for name, arr, shape, k in checks:
        if arr.shape != shape:
            raise DataError(expected(f"tokens.{name}", f"shape {shape}", arr.shape))
        if arr.size and (arr.min() < 0 or arr.max() >= k):
            raise DataError(expected(f"tokens.{name}", f"ids in [0, {k})",
                                     f"[{arr.min()}, {arr.max()}]"))
    return sem, ac, cond


@dataclass
class StageData:
    """One stage's training sequences and their segment → track map.

    Attributes
    ----------
    name : str
        The stage.
    tokens : np.ndarray [shape=(M, L)], int64
        Row ``i`` = segment ``i`` = score-matrix row ``i``.
    segment_ids, track_ids : np.ndarray [shape=(M,)], str
        ``"<track_id>@<start_s>"`` and the segment's track.
    start_s : np.ndarray [shape=(M,)], float64
        Window start in the track (s).
    layout : StageLayout
    """

    name: str
    tokens: np.ndarray
    segment_ids: np.ndarray
    track_ids: np.ndarray
    start_s: np.ndarray
    layout: StageLayout

    @property
    def target_start(self) -> int:
        return self.layout.target_start

    @property
    def vocab_size(self) -> int:
        return self.layout.vocab_size

    def segment_table(self) -> pd.DataFrame:
        """``row, segment_id, track_id, start_s, end_s`` per segment (the segment → track map)."""
        return pd.DataFrame({
            "row": np.arange(len(self.segment_ids)), "segment_id": self.segment_ids,
            "track_id": self.track_ids, "start_s": self.start_s,
            "end_s": self.start_s + self.layout.spec.seconds(self.name),
        })


def build_stage_data(
    stage: str, track_tokens: Mapping[str, TrackTokensLike], *, spec: StageSpec | None = None
) -> StageData:
    """Cut every track into the stage's windows and encode them (see the module docstring).

    Parameters
    ----------
    stage : {"semantic", "coarse", "fine"}
        The stage.
    track_tokens : mapping
        Track id -> tokenized track (training tracks, in the order rows should follow).
    spec : StageSpec, optional
        Alphabets, frame rate and windows.
    """
    layout = stage_layout(stage, spec)
    n, sec = layout.spec.frames(stage), layout.spec.seconds(stage)
    rows, seg_ids, tracks, starts = [], [], [], []
    for track_id, tok in track_tokens.items():
        n_frames = int(np.asarray(tok.semantic).shape[0])
        for w in range(n_frames // n):
            rows.append(layout.encode(tok, w * n))
            seg_ids.append(f"{track_id}@{w * sec:g}")
            tracks.append(str(track_id))
            starts.append(w * sec)
    if not rows:
        raise DataError(f"{stage}: no track is at least one {sec:g} s window long")
    return StageData(name=layout.stage, tokens=np.stack(rows),
                     segment_ids=np.asarray(seg_ids, dtype=str),
                     track_ids=np.asarray(tracks, dtype=str),
                     start_s=np.asarray(starts, dtype=np.float64), layout=layout)


def save_stage_data(data: StageData, out_dir: str | os.PathLike[str]) -> Path:
    """Write ``tokens.npy``, ``segments.csv`` and a manifest (spec, layout) atomically.

    Parameters
    ----------
    data : StageData
        What to write.
    out_dir : path
        The directory (replaced).
    """
    final = Path(out_dir)
    with atomic_path(final) as tmp:
        tmp.mkdir(parents=True)
        np.save(tmp / "tokens.npy", data.tokens)
        data.segment_table().to_csv(tmp / "segments.csv", index=False)
        write_manifest(tmp, make_manifest(
            STAGE_DATA_KIND, stage=data.name, spec=data.layout.spec.to_dict(),
            shape=list(data.tokens.shape), target_start=data.target_start,
            vocab_size=data.vocab_size))
    return final


def load_stage_data(path: str | os.PathLike[str]) -> StageData:
    """Read a directory written by :func:`save_stage_data`.

    Parameters
    ----------
    path : path
        The directory.
    """
    p = Path(path)
    man = read_manifest(p)
    if man is None or man.get("kind") != STAGE_DATA_KIND:
        raise FileFormatError(f"stage data: {str(p)!r} has no manifest of kind "
                              f"{STAGE_DATA_KIND!r}")
    layout = stage_layout(man["stage"], StageSpec.from_mapping(man["spec"]))
    seg = pd.read_csv(p / "segments.csv", dtype={"segment_id": str, "track_id": str},
                      keep_default_na=False)
    return StageData(name=layout.stage, tokens=np.load(p / "tokens.npy"),
                     segment_ids=seg["segment_id"].to_numpy(dtype=str),
                     track_ids=seg["track_id"].to_numpy(dtype=str),
                     start_s=seg["start_s"].to_numpy(dtype=np.float64), layout=layout)
