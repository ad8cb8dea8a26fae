"""The demos' media: each query's file and each training item's source, for the listening room.

What :mod:`aria_tda.media.sources` reads (issue 27), written by ``aria-tda demo`` (symbolic),
``aria-tda demo audio`` and ``aria-tda demo planted``.

Conventions
-----------
- **Queries file** (the study's ``queries``): a ``media`` column naming each query's MIDI or
  audio file, a POSIX path relative to the queries file's folder (the convention of every
  listing ARIA reads, :mod:`aria_tda_experiments.audio.listing`); optional ``start``/``end``
  (seconds) when the query is a window of that file.
- **Feature store** metadata: ``source``, the absolute path of each training item's file (as
  ``aria-tda features`` records it for audio), plus ``start``/``end`` in seconds when the item
  is a window of a longer file. Segment-level audio settings take their windows from the
  segment map (``start``/``end`` columns there) instead.
- **Symbolic files** are the model's own event tokens decoded
  (:func:`aria_tda_experiments.tokenizer.decode`) and written by
  :func:`~aria_tda_experiments.tokenizer.write_midi` (one tick = 1 ms), so a window's seconds in a
  token stream (the corpus' ``start_time``/``end_time``) are its seconds in the file, exactly:
  what is heard is what the model was trained on or generated (a single piano-like voice, the
  token velocities; not the score's instruments).
- File names follow the item ids (work ids keep their folders); characters outside
  ``A-Za-z0-9 _ . @ + ~ -`` become ``_``, and a name two ids would share is made unique.

:data:`MEDIA_VERSION` is part of the identity of every stage that writes media, so a working
folder made before the demos wrote them recomputes those stages (cheap ones: features) once.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda_experiments import tokenizer as tk

__all__ = ["MEDIA_VERSION", "media_names", "query_media", "query_midis", "write_token_midis",
           "write_work_midis"]

#: Bump when what the demos write as media changes (stage parameters carry it).
MEDIA_VERSION = 1

_UNSAFE = re.compile(r"[^A-Za-z0-9_.@+~-]+")


def media_names(ids: Iterable[str], suffix: str) -> list[str]:
    """Relative POSIX file names for ``ids`` (folders kept, unsafe characters replaced, unique).

    Parameters
    ----------
    ids : iterable of str
        Item ids (work ids, segment ids, query ids), in order.
    suffix : str
        File suffix with its dot (``".mid"``).

    Returns
    -------
    list of str
        One name per id.
    """
    out: list[str] = []
    taken: set[str] = set()
    for item in ids:
        parts = [_UNSAFE.sub("_", p) for p in str(item).split("/")]
        parts = [p if p.strip(".") else p.replace(".", "_") or "_" for p in parts]
        stem = "/".join(parts)
        name, k = stem + suffix, 1
        while name in taken:
            name, k = f"{stem}-{k}{suffix}", k + 1
        taken.add(name)
        out.append(name)
    return out


def write_token_midis(
    tokens: Sequence[np.ndarray] | np.ndarray,
    ids: Sequence[str],
    out_dir: str | os.PathLike[str],
    *,
    start_velocities: Sequence[int] | np.ndarray | None = None,
) -> list[Path]:
    """Decode each token sequence and write it as ``out_dir/<id>.mid``; return the paths.

    A file already there is kept (it is written from the same tokens: the caller's folder is
    a stage folder, cleared whenever its tokens change).

    Parameters
    ----------
    tokens : sequence of np.ndarray [shape=(L_i,)]
        Event token sequences, one per id.
    ids : sequence of str
        Their ids (file names, :func:`media_names`).
    out_dir : path
        Folder of the files (created).
    start_velocities : sequence of int, optional
        Velocity before each sequence's first SET_VELOCITY (default
        ``tokenizer.DEFAULT_VELOCITY``).

    Returns
    -------
    list of Path
        Absolute paths, in ``ids`` order.
    """
    base = Path(out_dir).absolute()
    vel = ([tk.DEFAULT_VELOCITY] * len(ids) if start_velocities is None
           else [int(v) for v in start_velocities])
    paths = []
    for toks, name, v in zip(tokens, media_names(ids, ".mid"), vel, strict=True):
        path = base / name
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            tk.write_midi(tk.decode(np.asarray(toks), initial_velocity=v), path)
        paths.append(path)
    return paths


def write_work_midis(corpus: Any, work_ids: Iterable[str],
                     out_dir: str | os.PathLike[str]) -> dict[str, Path]:
    """One MIDI per work: its whole token stream decoded; ``{work_id: absolute path}``.

    Parameters
    ----------
    corpus : aria_tda_experiments.corpus.Corpus
        The corpus whose works' token streams are decoded.
    work_ids : iterable of str
        Converted works of ``corpus``.
    out_dir : path
        Folder of the files (created).
    """
    works = list(dict.fromkeys(str(w) for w in work_ids))
    paths = write_token_midis([corpus.work_tokens(w) for w in works], works, out_dir)
    return dict(zip(works, paths, strict=True))


def query_media(paths: Iterable[str | os.PathLike[str]],
                queries_file: str | os.PathLike[str]) -> list[str]:
    """The ``media`` column of a queries file: ``paths`` relative to its folder (POSIX).

    Parameters
    ----------
    paths : iterable of path
        Each query's file (absolute, or relative to the current folder).
    queries_file : path
        The queries file that will name them.
    """
    from aria_tda_experiments.audio.listing import paths_for_listing

    return paths_for_listing(paths, queries_file)


def query_midis(queries: Any) -> list[Path]:
    """Each generated query's MIDI (``queries.path / midi_file``), written again when absent.

    Parameters
    ----------
    queries : aria_tda_experiments.generate.Queries
        Queries loaded from their folder (:func:`~aria_tda_experiments.generate.load_queries`).
    """
    meta = queries.meta
    base = Path(queries.path).absolute()
    out = []
    for j, rel in enumerate(meta["midi_file"].astype(str)):
        path = base / rel
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            tk.write_midi(queries.notes(j), path)
        out.append(path)
    return out
