r"""Tokenised corpora from miditok tokenisers: token windows, their segment map and their MIDI.

A music language model trained on miditok tokens (REMI and family) is attributed over
*windows* of its token streams; ARIA needs, beside those windows, which track each window
belongs to and which stretch of music it holds. :func:`tokenize_corpus` reads MIDI files,
tokenises them and cuts every token stream into windows of ``length`` tokens every
``stride`` tokens; :func:`write_corpus` writes what the rest of ARIA reads.

Conventions
-----------
- **Tokeniser**: any miditok 3.x tokeniser; by default
  ``REMI(TokenizerConfig(use_programs=True))`` (one stream per file, every instrument in it).
  A tokeniser with one stream per track (``use_programs=False``) gives one stream per MIDI
  track, each cut on its own (column ``stream``). A trained tokeniser (BPE, Unigram,
  WordPiece) is cut in its own (merged) ids; times come from the base tokens each id stands for.
- **Windows**: int64 ``(N, L)``, full windows only (a stream's last tokens that do not fill a
  window are not used; a file with no full window is recorded in ``skipped``).
- **Track ids**: the file's path relative to ``root`` (default: the folder all files share),
  without its suffix, with ``/`` separators — what ``aria-tda features symbolic ROOT`` names
  the same file, so the feature store and the segment map match.
- **Times** of a window: ``start`` is the time of its first token, ``end`` the time of the
  first token after it (the end of the piece's last note for a stream's final tokens), read
  from the tokens' events on the tokeniser's grid (``tokenizer.preprocess_score``). Beats are
  quarter notes from the file's start; seconds follow the file's tempo map (120 quarter notes
  per minute before its first tempo event).
- **Bad files**: a file symusic or miditok cannot read is recorded in ``skipped`` (track id,
  path, reason) and left out, like ARIA's feature extraction records a file in its errors
  table; a corpus in which no file gives a window is a :class:`~aria_tda.errors.DataError`
  naming the first file and its reason.

Files written by :func:`write_corpus` (paths in the CSVs relative to the CSV's folder):

============== ==================================================================================
``windows.npy``  int64 ``(N, L)``: the training (or query) windows, in row order
``segments.csv`` one row per window: ``row``, ``segment_id`` (``"<track_id>#<k:04d>"``),
                 ``track_id``, ``stream``, ``token_start``, ``token_end``, ``start_beats``,
                 ``end_beats``, ``start_seconds``, ``end_seconds`` — the study's ``segments``
``tracks.csv``   ``path``, ``track_id``, ``n_tokens``, ``n_windows``: an input list for
                 ``aria-tda features symbolic tracks.csv``
``skipped.csv``  ``track_id``, ``path``, ``reason`` of each file left out
============== ==================================================================================

:func:`write_excerpts` writes each window's stretch of its MIDI file as a MIDI file of its own
(with a ``tracks.csv`` whose track ids are the segment ids), for features per window.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from aria_tda._checks import check_int
from aria_tda._io import atomic_path
from aria_tda._optional import require
from aria_tda.errors import DataError, ParameterError, expected

__all__ = [
    "SEGMENT_COLUMNS",
    "TokenCorpus",
    "default_tokenizer",
    "tick_seconds",
    "tokenize_corpus",
    "track_ids_of",
    "write_corpus",
    "write_excerpts",
]

#: Columns of the segment table, in order.
SEGMENT_COLUMNS = ("row", "segment_id", "track_id", "stream", "token_start", "token_end",
                   "start_beats", "end_beats", "start_seconds", "end_seconds")

#: MIDI's tempo before a file's first tempo event: 120 quarter notes per minute.
DEFAULT_MSPQ = 500_000


def _miditok() -> Any:
    return require("miditok", "integrations", purpose="tokenised MIDI corpora")


def _symusic() -> Any:
    return require("symusic", "integrations", purpose="tokenised MIDI corpora")


@dataclass(frozen=True)
class TokenCorpus:
    """Token windows of a MIDI corpus with the map of each window to its track and time.

    Attributes
    ----------
    windows : np.ndarray [shape=(N, L)], int64
        The windows, in row order.
    segments : pandas.DataFrame
        One row per window, columns :data:`SEGMENT_COLUMNS`.
    tracks : pandas.DataFrame
        One row per file that gave windows: ``track_id``, ``path`` (absolute), ``n_tokens``,
        ``n_windows``.
    skipped : pandas.DataFrame
        ``track_id``, ``path``, ``reason`` of each file left out.
    """

    windows: np.ndarray
    segments: Any
    tracks: Any
    skipped: Any

    @property
    def segment_ids(self) -> np.ndarray:
        """The windows' segment ids, in row order (``row_ids`` of the score matrices)."""
        return self.segments["segment_id"].to_numpy(dtype=str)


def default_tokenizer() -> Any:
    """``miditok.REMI(TokenizerConfig(use_programs=True))``: one token stream per file."""
    miditok = _miditok()
    return miditok.REMI(miditok.TokenizerConfig(use_programs=True))


def track_ids_of(paths: Sequence[Path], root: str | os.PathLike[str] | None = None) -> list[str]:
    """Track ids of ``paths``: relative to ``root`` (default their common folder), no suffix.

    Parameters
    ----------
    paths : sequence of Path
        Absolute file paths.
    root : path, optional
        The folder ids are relative to (``aria-tda features symbolic ROOT``'s rule).

    Returns
    -------
    list of str
        One id per path, ``/``-separated.
    """
    base = Path(root).resolve() if root is not None else \
        Path(os.path.commonpath([str(p.parent) for p in paths]))
    ids = []
    for p in paths:
        try:
            rel = p.relative_to(base)
        except ValueError:
            raise ParameterError(expected("root", f"a folder holding {str(p)!r}", str(base))) \
                from None
        ids.append(rel.with_suffix("").as_posix())
    seen: dict[str, Path] = {}
    for tid, p in zip(ids, paths, strict=True):
        if tid in seen:
            what = "files with distinct track ids (path without suffix)"
            raise ParameterError(expected("paths", what, f"{seen[tid]} and {p} both {tid!r}"))
        seen[tid] = p
    return ids


def tick_seconds(ticks: Any, tempos: Sequence[tuple[int, int]], tpq: int) -> np.ndarray:
    r"""Seconds from the start of a file at ``ticks``, following its tempo map.

    .. math:: t(\tau) = t(\tau_k) + (\tau - \tau_k)\,\frac{\mathrm{mspq}_k}{10^6\,\mathrm{tpq}}
              \quad\text{for } \tau_k \le \tau < \tau_{k+1}

    Parameters
    ----------
    ticks : array-like [shape=(n,)], int
        Times in ticks.
    tempos : sequence of (tick, mspq)
        Tempo events (microseconds per quarter note from ``tick`` on), sorted by tick;
        :data:`DEFAULT_MSPQ` before the first.
    tpq : int
        Ticks per quarter note.

    Returns
    -------
    np.ndarray [shape=(n,)], float64
    """
    t = np.asarray(ticks, dtype=np.float64)
    marks = [(0, DEFAULT_MSPQ)] + [(int(a), int(b)) for a, b in tempos]
    starts = np.array([m[0] for m in marks], dtype=np.float64)
    rate = np.array([m[1] for m in marks], dtype=np.float64) / (1e6 * tpq)  # seconds per tick
    cum = np.concatenate([[0.0], np.cumsum(np.diff(starts) * rate[:-1])])
    k = np.searchsorted(starts, t, side="right") - 1
    return np.asarray(cum[k] + (t - starts[k]) * rate[k])


def _base_lengths(tokenizer: Any, ids: Sequence[int], cache: dict[int, int]) -> np.ndarray:
    """How many base tokens each (possibly merged) id stands for."""
    if not getattr(tokenizer, "is_trained", False):
        return np.ones(len(ids), dtype=np.int64)
    miditok = _miditok()
    for i in set(ids) - set(cache):
        seq = miditok.TokSequence(ids=[int(i)], are_ids_encoded=True)
        tokenizer.decode_token_ids(seq)
        cache[int(i)] = len(seq.ids)
    return np.array([cache[int(i)] for i in ids], dtype=np.int64)


def _streams(tokenizer: Any, score: Any) -> list[Any]:
    seqs = tokenizer.encode(score)
    return list(seqs) if isinstance(seqs, list) else [seqs]


def _read(path: Path, tokenizer: Any) -> tuple[list[Any], Any, int]:
    """Token streams of one file, its preprocessed score and that score's end tick."""
    score = _symusic().Score(str(path))
    pre = tokenizer.preprocess_score(score.copy())
    return _streams(tokenizer, score), pre, int(pre.end())


def _cut(n: int, length: int, stride: int) -> np.ndarray:
    return np.arange(0, n - length + 1, stride, dtype=np.int64) if n >= length \
        else np.zeros(0, dtype=np.int64)


def tokenize_corpus(
    paths: Sequence[str | os.PathLike[str]],
    tokenizer: Any = None,
    *,
    length: int,
    stride: int | None = None,
    root: str | os.PathLike[str] | None = None,
) -> TokenCorpus:
    """Tokenise MIDI files and cut their token streams into windows (module docstring).

    Parameters
    ----------
    paths : sequence of path
        MIDI files (``.mid``/``.midi``), in the order their windows are wanted.
    tokenizer : miditok.MusicTokenizer, optional
        Default :func:`default_tokenizer`.
    length : int, >= 2
        Tokens per window ``L``.
    stride : int, >= 1, optional
        Tokens between the starts of consecutive windows (default ``length``: no overlap).
    root : path, optional
        The folder track ids are relative to (default: the files' common folder).

    Returns
    -------
    TokenCorpus
        ``windows`` ``(N, L)`` int64 and the segment, track and skipped tables.
    """
    import pandas as pd

    length = check_int("length", length, min_value=2)
    stride = length if stride is None else check_int("stride", stride, min_value=1)
    if isinstance(paths, (str, os.PathLike)) or not isinstance(paths, Sequence) or not paths:
        raise ParameterError(expected("paths", "a non-empty list of MIDI file paths", paths))
    files = [Path(p).resolve() for p in paths]
    ids = track_ids_of(files, root)
    tok = default_tokenizer() if tokenizer is None else tokenizer
    if not hasattr(tok, "encode") or not hasattr(tok, "preprocess_score"):
        raise ParameterError(expected("tokenizer", "a miditok tokenizer", type(tok).__name__))

    windows: list[np.ndarray] = []
    rows: list[dict[str, Any]] = []
    tracks: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    cache: dict[int, int] = {}
    for tid, path in zip(ids, files, strict=True):
        try:
            streams, pre, end_tick = _read(path, tok)
        except Exception as exc:  # a corrupt / unreadable file is recorded, never fatal
            reason = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
            skipped.append({"track_id": tid, "path": str(path), "reason": reason})
            continue
        tpq = int(pre.ticks_per_quarter)
        tempos = [(int(t.time), int(t.mspq)) for t in pre.tempos]
        n_tokens = 0
        k0 = len(rows)
        for s, seq in enumerate(streams):
            ids_s = np.asarray(seq.ids, dtype=np.int64)
            n_tokens += ids_s.size
            starts = _cut(ids_s.size, length, stride)
            if starts.size == 0:
                continue
            event_ticks = np.array([int(e.time) for e in seq.events] + [end_tick], dtype=np.int64)
            offset = np.concatenate([[0], np.cumsum(_base_lengths(tok, seq.ids, cache))])
            first = event_ticks[np.minimum(offset[starts], event_ticks.size - 1)]
            after = event_ticks[np.minimum(offset[starts + length], event_ticks.size - 1)]
            sec0 = tick_seconds(first, tempos, tpq)
            sec1 = tick_seconds(after, tempos, tpq)
            for j, a in enumerate(starts):
                windows.append(ids_s[a : a + length])
                rows.append({
                    "row": len(rows), "segment_id": f"{tid}#{len(rows) - k0:04d}",
                    "track_id": tid, "stream": s, "token_start": int(a),
                    "token_end": int(a + length), "start_beats": first[j] / tpq,
                    "end_beats": after[j] / tpq, "start_seconds": float(sec0[j]),
                    "end_seconds": float(sec1[j]),
                })
        if len(rows) == k0:
            reason = f"no full window: {n_tokens} tokens, length {length}"
            skipped.append({"track_id": tid, "path": str(path), "reason": reason})
            continue
        tracks.append({"track_id": tid, "path": str(path), "n_tokens": n_tokens,
                       "n_windows": len(rows) - k0})
    if not windows:
        first_bad = skipped[0]
        raise DataError(f"paths: all {len(files)} MIDI files gave no window; the first, "
                        f"{first_bad['path']!r}: {first_bad['reason']}")
    return TokenCorpus(
        windows=np.stack(windows).astype(np.int64),
        segments=pd.DataFrame(rows, columns=list(SEGMENT_COLUMNS)),
        tracks=pd.DataFrame(tracks, columns=["track_id", "path", "n_tokens", "n_windows"]),
        skipped=pd.DataFrame(skipped, columns=["track_id", "path", "reason"]),
    )


def _relative(path: str, folder: Path) -> str:
    try:
        return Path(os.path.relpath(path, folder)).as_posix()
    except ValueError:  # another drive (Windows): keep it absolute
        return path


def _write_csv(df: Any, path: Path) -> None:
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False)


def write_corpus(corpus: TokenCorpus, out: str | os.PathLike[str]) -> dict[str, Path]:
    """Write ``windows.npy``, ``segments.csv``, ``tracks.csv`` and ``skipped.csv`` into ``out``.

    Parameters
    ----------
    corpus : TokenCorpus
        From :func:`tokenize_corpus`.
    out : path
        The folder: new, empty, or one ARIA wrote as a token corpus (its files are replaced
        together, by renames). A folder holding files ARIA did not write there, a file or a
        symbolic link is refused before anything is written.

    Returns
    -------
    dict
        ``"windows"``, ``"segments"``, ``"tracks"``, ``"skipped"`` → path written.
    """
    from aria_tda._output_folders import check_folder_output, owned_folder
    from aria_tda._outputs import TOKEN_CORPUS_FOLDER

    if not isinstance(corpus, TokenCorpus):
        raise ParameterError(expected("corpus", "a TokenCorpus", type(corpus).__name__))
    check_folder_output("out", out, TOKEN_CORPUS_FOLDER, flag="out")
    folder = Path(out)
    names = {k: f"{k}.{'npy' if k == 'windows' else 'csv'}"
             for k in ("windows", "segments", "tracks", "skipped")}
    with owned_folder(folder, TOKEN_CORPUS_FOLDER, name="out", flag="out") as tmp:
        with open(tmp / names["windows"], "wb") as fh:
            np.save(fh, corpus.windows)
        _write_csv(corpus.segments, tmp / names["segments"])
        # paths relative to the final folder (the temporary is its sibling)
        tracks = corpus.tracks.assign(path=[_relative(p, folder) for p in corpus.tracks["path"]])
        _write_csv(tracks[["path", "track_id", "n_tokens", "n_windows"]], tmp / names["tracks"])
        _write_csv(corpus.skipped, tmp / names["skipped"])
    return {k: folder / n for k, n in names.items()}


def write_excerpts(corpus: TokenCorpus, out: str | os.PathLike[str]) -> Path:
    """Write each window's stretch of its MIDI file as a MIDI file, and their input list.

    The excerpt of a window is its file clipped to ``[start_beats, end_beats)`` (notes that
    start there, cut at the end) and shifted to start at 0, in the file's own ticks.

    Parameters
    ----------
    corpus : TokenCorpus
        From :func:`tokenize_corpus`.
    out : path
        The folder (new, empty, or ARIA's earlier excerpts; anything else is refused, as for
        :func:`write_corpus`): ``<segment_id>.mid`` (``#`` written as ``-``) and
        ``tracks.csv`` (``path``, ``track_id`` = the segment id), the input of
        ``aria-tda features symbolic OUT/tracks.csv``.

    Returns
    -------
    Path
        The ``tracks.csv`` written.
    """
    import pandas as pd

    if not isinstance(corpus, TokenCorpus):
        raise ParameterError(expected("corpus", "a TokenCorpus", type(corpus).__name__))
    from aria_tda._output_folders import check_folder_output, owned_folder
    from aria_tda._outputs import EXCERPTS_FOLDER

    symusic = _symusic()
    check_folder_output("out", out, EXCERPTS_FOLDER, flag="out")
    folder = Path(out)
    where = dict(zip(corpus.tracks["track_id"], corpus.tracks["path"], strict=True))
    listing = []
    scores: dict[str, Any] = {}
    with owned_folder(folder, EXCERPTS_FOLDER, name="out", flag="out") as tmp:
        for seg in corpus.segments.itertuples(index=False):
            if seg.track_id not in scores:
                scores[seg.track_id] = symusic.Score(where[seg.track_id])
            score = scores[seg.track_id]
            tpq = int(score.ticks_per_quarter)
            start = round(seg.start_beats * tpq)
            end = max(round(seg.end_beats * tpq), start + 1)
            excerpt = score.clip(start, end, clip_end=True).shift_time(-start)
            name = Path(f"{seg.segment_id.replace('#', '-')}.mid")
            (tmp / name).parent.mkdir(parents=True, exist_ok=True)
            excerpt.dump_midi(str(tmp / name))
            listing.append({"path": name.as_posix(), "track_id": seg.segment_id})
        _write_csv(pd.DataFrame(listing, columns=["path", "track_id"]), tmp / "tracks.csv")
    return folder / "tracks.csv"
