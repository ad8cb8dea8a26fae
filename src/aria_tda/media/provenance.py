"""Where a dossier's numbers come from, and how far the method behind them has been checked.

:func:`gather_provenance` reads, for one setting of a results folder: the study (name,
modality, feature store, queries file), the setting (method, stage, normalisation, score
file and its content digest), the score file's manifest when it has one (the method's
arguments, the attribution target and loss, the projection seed, and — written by
:func:`aria_tda.attribution.run_methods` — the model's class and size and the digests of the
checkpoints and of the training and query data), ARIA's version and the paper to cite; and
what validation the folder holds for the setting's method: its linear datamodeling score
(``lds`` table, with its standard error) and the sentences report sections add
(:func:`validation_lines`). :func:`provenance_html` writes it as the dossier's *Provenance
and validation* section, in words: what is missing is said, never left blank.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aria_tda.report.html.cells import esc

__all__ = ["VERDICT_MEANING", "gather_provenance", "provenance_html", "validation_lines"]

#: What each verdict does and does not say (printed in every dossier).
VERDICT_MEANING: dict[str, tuple[str, str]] = {
    "ok": ("the top-K attributed items change with the query: what this query is given is "
           "its own, not a fixed set every query gets",
           "that the items are the right ones, nor that the method is accurate: only "
           "counterfactual retraining (LDS) or a benchmark with known ground truth says that"),
    "suspect": ("part of every query's top-K is the same items whatever the query (hubs), or "
                "its reliability could not be measured",
                "that this query's items are wrong: read the hubs named and the rank-1 "
                "residual before reading them as its own"),
    "collapsed": ("queries that are not alike get largely the same top-K group, so the items "
                  "describe that fixed group, not what this query drew on",
                  "which training items this query drew on: these items are not evidence of "
                  "its influence"),
}

#: Manifest parameters that describe the run, not the method (left out of the settings line).
_RUN_KEYS = frozenset({"run", "provenance", "progress", "num_threads", "device"})


def _abs(data: Any, p: Any) -> Path | None:
    """A path ``results.json`` records (relative to the results folder), made absolute."""
    if not p:
        return None
    path = Path(str(p))
    return Path(os.path.normpath(path if path.is_absolute()
                                 else Path(data.path).absolute() / path))


def _setting_meta(data: Any, setting: str) -> Mapping[str, Any]:
    for s in data.meta.get("settings") or []:
        if isinstance(s, Mapping) and str(s.get("name")) == setting:
            return s
    return {}


def _manifest(path: Path | None) -> tuple[dict[str, Any] | None, str | None]:
    if path is None:
        return None, "the results do not record the score file"
    from aria_tda.errors import one_line
    from aria_tda.manifest import read_manifest

    try:
        m = read_manifest(path)
    except Exception as exc:  # a damaged manifest is said, not raised
        return None, f"its manifest could not be read ({one_line(exc)})"
    if m is None:
        return None, ("the score file carries no manifest: the method's settings, model and "
                      "data were not recorded by the tool that wrote it")
    return m, None


def _digest(path: Path | None) -> str | None:
    if path is None or not path.exists():
        return None
    from aria_tda._fingerprint import content_digest

    try:
        return str(content_digest(path))
    except OSError:
        return None


def validation_lines(data: Any, setting: str, method: str | None) -> list[str]:
    """Plain sentences about how ``method`` fared on ground truth in this results folder.

    Its linear datamodeling score from the ``lds`` table (counterfactual retraining), and
    the lines report sections add for it (a section's ``validation``); ``[]`` when the folder
    holds none.

    Parameters
    ----------
    data : ResultsData
        The results folder.
    setting : str
        The setting.
    method : str or None
        Its method.
    """
    out: list[str] = []
    lds = data.table("lds")
    if method and lds is not None and len(lds) and "method" in lds.columns:
        hit = lds[lds["method"].astype(str) == str(method)]
        if len(hit):
            r = hit.iloc[0]
            v = float(r["lds"])
            se = float(r["lds_se"]) if "lds_se" in r and math.isfinite(float(r["lds_se"])) \
                else math.nan
            rank = int((lds["lds"].astype(float) > v).sum()) + 1
            ci = f" (± {1.96 * se:.2f}, 95 %)" if math.isfinite(se) else ""
            out.append(
                f"Counterfactual retraining: {method}'s linear datamodeling score is {v:.2f}"
                f"{ci} over {int(r['n_queries'])} queries and {int(r['n_subsets'])} retrained "
                f"subsets, rank {rank} of {len(lds)} methods here (1 = scores predict the "
                "retrained models' outputs perfectly, 0 = not at all).")
    from aria_tda.media._sections import section_validation

    out.extend(section_validation(data, setting))
    return out


def gather_provenance(data: Any, setting: str) -> dict[str, Any]:
    """What produced the numbers of ``setting`` (module docstring), JSON-able.

    Parameters
    ----------
    data : ResultsData
        The results folder.
    setting : str
        The setting.

    Returns
    -------
    dict
        ``aria_version``, ``created``, ``citation``, ``study`` (name, modality,
        feature_store, queries), ``setting`` (name, method, stage, normalize), ``scores``
        (path, digest), ``manifest_note`` (why a part is unknown, or ``None``),
        ``parameters``, ``target``, ``loss``, ``seed``, ``model``, ``checkpoints``,
        ``train_data``, ``query_data`` and ``validation`` (sentences).
    """
    from aria_tda._version import CITATION, __version__

    meta = data.meta
    study = meta.get("study") or {}
    sm = _setting_meta(data, setting)
    info = data.setting_info(setting)
    scores = _abs(data, sm.get("scores"))
    manifest, note = _manifest(scores) if sm.get("scores") else (
        None, "this setting was computed from embeddings, not read from a score file"
        if sm.get("train_embeddings") else "the results do not record the score file")
    params = dict((manifest or {}).get("parameters") or {})
    prov = params.get("provenance") or {}
    return {
        "aria_version": str(meta.get("aria_version") or "unknown"),
        "aria_now": __version__,
        "created": str(meta.get("created") or "unknown"),
        "citation": CITATION,
        "study": {**{k: study.get(k) for k in ("name", "modality")},
                  **{k: None if _abs(data, study.get(k)) is None else str(_abs(data, study.get(k)))
                     for k in ("feature_store", "queries", "query_features")}},
        "setting": {"name": setting, "method": info.get("method"), "stage": info.get("stage"),
                    "normalize": sm.get("normalize_used") or sm.get("normalize")},
        "scores": {"path": None if scores is None else str(scores), "digest": _digest(scores)},
        "manifest_note": note,
        "parameters": {k: v for k, v in params.items() if k not in _RUN_KEYS},
        "target": params.get("target"),
        "loss": params.get("loss"),
        "seed": (manifest or {}).get("seed"),
        "written_by": (manifest or {}).get("aria_version"),
        "model": prov.get("model"),
        "checkpoints": list(prov.get("checkpoints") or []),
        "train_data": prov.get("train_data"),
        "query_data": prov.get("query_data"),
        "validation": validation_lines(data, setting, info.get("method")),
    }


_TARGET_WORDS = {
    "last_token": "the last generated token of each query only (the attribution explains "
                  "that token, not the whole piece)",
    "sequence": "every token of each query (the attribution explains the whole continuation)",
}


def _kv(rows: list[tuple[str, str]]) -> str:
    return '<dl class="kv prov">' + "".join(
        f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in rows) + "</dl>"


def provenance_html(p: Mapping[str, Any], verdict: str | None) -> str:
    """The dossier's *Provenance and validation* section.

    Parameters
    ----------
    p : mapping
        :func:`gather_provenance`.
    verdict : str or None
        The setting's verdict (its meaning is spelt out).
    """
    st, sc = p["setting"], p["scores"]
    unknown = "not recorded"
    params = ", ".join(f"{k} = {v}" for k, v in sorted(p["parameters"].items())
                       if not isinstance(v, (dict, list)))
    target = p.get("target")
    rows = [
        ("Method", f"{st['method'] or unknown} (stage {st['stage'] or '-'}), setting "
                   f"{st['name']}; scores normalised: {st['normalize'] or unknown}"),
        ("Method settings", params or unknown),
        ("Attribution target", _TARGET_WORDS.get(str(target), str(target)) if target
         else unknown),
        ("Loss", str(p.get("loss") or unknown)),
        ("Score file", f"{sc['path'] or unknown}"
                       + (f" (content digest {sc['digest']})" if sc.get("digest") else "")),
    ]
    model = p.get("model")
    if model:
        n = model.get("n_parameters")
        rows.append(("Model", f"{model.get('class')}"
                              + (f", {int(n):,} parameters" if n is not None else "")))
    else:
        rows.append(("Model", unknown))
    ck = p.get("checkpoints") or []
    rows.append(("Checkpoints read", ", ".join(ck) if ck else unknown))
    for key, name in (("train_data", "Training data"), ("query_data", "Query data")):
        d = p.get(key)
        rows.append((name, f"digest {d['digest']}, shape {d['shape']}" if d else unknown))
    s = p["study"]
    rows.append(("Study", f"{s.get('name') or unknown} ({s.get('modality') or '?'}); feature "
                          f"store {s.get('feature_store') or unknown}"
                          + (f"; query features {s['query_features']}"
                             if s.get("query_features") else "; no query features")))
    rows.append(("Analysed by", f"ARIA {p['aria_version']} on {p['created']}"
                 + (f" (this page: ARIA {p['aria_now']})" if p["aria_now"] != p["aria_version"]
                    else "")))
    rows.append(("Method cited", p["citation"]))
    note = (f'<p class="note">{esc(p["manifest_note"].capitalize())}.</p>'
            if p.get("manifest_note") else "")
    val = p.get("validation") or []
    val_html = ("<ul class=\"validation\">" + "".join(f"<li>{esc(v)}</li>" for v in val)
                + "</ul>") if val else (
        '<p class="note">This results folder holds no ground-truth validation of the method '
        "(no counterfactual retraining or ground-truth benchmark): nothing here says how accurate "
        "its attributions are.</p>")
    says, does_not = VERDICT_MEANING.get(str(verdict), ("", ""))
    meaning = (f'<p class="meaning"><strong>What the verdict \u201c{esc(verdict)}\u201d says:'
               f"</strong> {esc(says)}. <strong>What it does not say:</strong> {esc(does_not)}."
               "</p>") if says else ""
    return ('<section id="provenance"><h2>Provenance and validation</h2>'
            + _kv(rows) + note + "<h3>Validation of the method</h3>" + val_html + meaning
            + "</section>")
