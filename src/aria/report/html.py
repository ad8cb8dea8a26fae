r"""One self-contained HTML page: inline CSS, inline JavaScript, plots as inline SVG.

The page makes no network request of any kind: a Content-Security-Policy of ``default-src
'none'`` (inline styles and scripts allowed) guarantees it in every browser. Every string that
comes from the results folder is HTML-escaped (server side with :func:`html.escape`, client
side through ``textContent`` only); JSON embedded in ``<script>`` escapes ``<``, ``>`` and ``&``.

Static tables are rendered here (they print and work without JavaScript); the per-query
evidence view is filled by ``assets/report.js`` from the packed blocks of
:mod:`aria.report.evidence`.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from typing import Any

import pandas as pd

from aria.report import _fmt
from aria.report.evidence import EvidencePayload
from aria.report.load import ResultsData
from aria.report.tables import ReportTable

__all__ = ["render_html"]

CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

Cell = tuple[str, dict[str, str]]  # (inner HTML, attributes)


def _e(x: Any) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def _asset(name: str) -> str:
    return resources.files("aria.report").joinpath("assets", name).read_text(encoding="utf-8")


def _json_for_script(obj: Any) -> str:
    text = json.dumps(obj, separators=(",", ":"), allow_nan=False, default=_json_default)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _json_default(o: Any) -> Any:
    try:
        import numpy as np

        if isinstance(o, np.integer):
            return int(o)
        if isinstance(o, np.floating):
            v = float(o)
            return v if math.isfinite(v) else None
        if isinstance(o, np.ndarray):
            return o.tolist()
    except ImportError:  # pragma: no cover
        pass
    return str(o)


def _clean_json(obj: Any) -> Any:
    """Replace non-finite floats by None (JSON has no NaN)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Mapping):
        return {str(k): _clean_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean_json(v) for v in obj]
    return obj


# ---------------------------------------------------------------- small builders


def _attrs(a: Mapping[str, str]) -> str:
    return "".join(f' {k}="{_e(v)}"' for k, v in a.items())


def _num(text: str, **attrs: str) -> Cell:
    cls = attrs.pop("cls", "")
    return text, {"class": ("num " + cls).strip(), **attrs}


def _txt(text: str, **attrs: str) -> Cell:
    cls = attrs.pop("cls", "")
    return text, {"class": ("txt " + cls).strip(), **attrs}


def _table(head: Sequence[Sequence[Cell]], rows: Iterable[tuple[Sequence[Cell], dict[str, str]]], *, cls: str = "data", attrs: Mapping[str, str] | None = None) -> str:
    out = [f'<div class="tablewrap"><table class="{cls}"{_attrs(attrs or {})}><thead>']
    for hr in head:
        out.append("<tr>" + "".join(f"<th{_attrs(a)}>{t}</th>" for t, a in hr) + "</tr>")
    out.append("</thead><tbody>")
    for cells, rattrs in rows:
        out.append(f"<tr{_attrs(rattrs)}>" + "".join(f"<td{_attrs(a)}>{t}</td>" for t, a in cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _th(text: str, **a: str) -> Cell:
    return text, a


def badge(verdict: Any) -> str:
    v = str(verdict).lower() if isinstance(verdict, str) and verdict else "unknown"
    cls = v if v in ("collapsed", "suspect", "ok") else "unknown"
    return f'<span class="badge {cls}">{_e(v)}</span>'


def _zcell(row: Mapping[str, Any], c: str) -> Cell:
    z = row.get(f"{c}_zbar")
    txt = _e(_fmt.signed(z))
    lo, hi = row.get(f"{c}_zbar_lo"), row.get(f"{c}_zbar_hi")
    ci = f'<span class="ci">[{_e(_fmt.signed(lo))}, {_e(_fmt.signed(hi))}]</span>' if _fmt.finite(lo) and _fmt.finite(hi) else ""
    cls = "first pos" if _fmt.finite(z) and float(z) > 0 else "first"  # type: ignore[arg-type]
    return _num(txt + ci, cls=cls, **{"data-col": f"{c}_zbar"})


def _title(c: str) -> str:
    return _e(c[:1].upper() + c[1:])


def _setting_attrs(row: Mapping[str, Any]) -> dict[str, str]:
    a = {"data-setting": str(row["setting"])}
    if row.get("verdict") == "collapsed":
        a["class"] = "collapsed"
    return a


def _best_low_within(df: pd.DataFrame, col: str) -> set[int]:
    """Row positions holding the lowest value of ``col`` within a method group of several settings."""
    out: set[int] = set()
    if col not in df.columns:
        return out
    for _, g in df.reset_index(drop=True).groupby("method", sort=False):
        if len(g) < 2:
            continue
        vals = g[col][g[col].map(_fmt.finite)].astype(float).round(3)
        if len(vals):
            out |= set(vals.index[vals == vals.min()])
    return out


# ---------------------------------------------------------------- tables


def reliability_html(t: ReportTable) -> str:
    head = [[_th(x) for x in ("Setting", "Method", "Stage", "Train segments", "Queries", "κ", "r<sub>1</sub>", "r<sub>2:5</sub>", "p", "v<sub>1</sub> const.", "Verdict", "Why")]]
    rows: list[tuple[Sequence[Cell], dict[str, str]]] = []
    for _, r in t.df.iterrows():
        cells = [_txt(_e(r["setting"])), _txt(_e(r["method"])), _txt(_e(r["stage"])),
                 _num(_e(_fmt.integer(r["n_train"]))), _num(_e(_fmt.integer(r["n_queries"])))]
        cells += [_num(_e(_fmt.fixed(r[c])), **{"data-col": c}) for c in ("kappa", "r1", "r2_5", "p", "v1_constancy")]
        cells += [_txt(badge(r["verdict"]), **{"data-col": "verdict"}), _txt(_e("" if pd.isna(r["verdict_reason"]) else r["verdict_reason"]), cls="sub")]
        rows.append((cells, _setting_attrs(r)))
    return _table(head, rows, attrs={"id": "table-reliability"})


def homogeneity_html(t: ReportTable) -> str:
    df, channels = t.df, t.layout["channels"]
    rel_cols = [c for c in ("r1", "r2_5", "p", "kappa") if df[c].map(_fmt.finite).any()]
    rel_head = {"r1": "r<sub>1</sub>", "r2_5": "r<sub>2:5</sub>", "p": "p", "kappa": "κ"}
    zsym = "z̄<sup>res</sup>" if t.layout.get("variant") == "residual" else "z̄"
    head1 = [_th("", colspan="3")] + ([_th("Reliability (S<sub>seg</sub>)", colspan=str(len(rel_cols)), **{"class": "grp"})] if rel_cols else [])
    head1 += [_th(_title(c), colspan="3", **{"class": "grp"}) for c in channels]
    head2 = [_th("Setting"), _th("Stage"), _th("Verdict")] + [_th(rel_head[c]) for c in rel_cols]
    head2 += [x for _ in channels for x in (_th(f"{zsym} [95% CI]"), _th("Pos ↑"), _th("Sig ↑"))]
    best = {c: _best_low_within(df, c) for c in rel_cols}
    rows: list[tuple[Sequence[Cell], dict[str, str]]] = []
    for i, (_, r) in enumerate(df.iterrows()):
        cells = [_txt(_e(r["setting"])), _txt(_e(r["stage"])), _txt(badge(r["verdict"]))]
        cells += [_num(_e(_fmt.fixed(r[c])), cls="best" if i in best[c] else "", **{"data-col": c}) for c in rel_cols]
        for c in channels:
            cells += [_zcell(r, c), _num(_e(_fmt.pct(r[f"{c}_pos"])), **{"data-col": f"{c}_pos"}),
                      _num(_e(_fmt.pct(r[f"{c}_sig"])), **{"data-col": f"{c}_sig"})]
        rows.append((cells, _setting_attrs(r)))
    return _table([head1, head2], rows, attrs={"id": f"table-{t.name}"})


def alignment_html(t: ReportTable) -> str:
    df, channels = t.df, t.layout["channels"]
    best = {}
    for c in channels:
        for q in ("alpha_max", "alpha_reg"):
            vals = df[f"{c}_{q}"][df[f"{c}_{q}"].map(_fmt.finite)].astype(float).round(3)
            best[f"{c}_{q}"] = vals.max() if len(vals) > 1 else None
    head1 = [_th("", colspan="2")] + [_th(_title(c), colspan="2", **{"class": "grp"}) for c in channels]
    head2 = [_th("Setting"), _th("Verdict")] + [x for _ in channels for x in (_th("α<sup>max</sup> (feature)"), _th("α<sup>reg</sup> (group)"))]
    rows: list[tuple[Sequence[Cell], dict[str, str]]] = []
    for _, r in df.iterrows():
        cells = [_txt(_e(r["setting"])), _txt(badge(r["verdict"]))]
        for c in channels:
            for q, lab in (("alpha_max", "alpha_max_feature"), ("alpha_reg", "alpha_reg_group")):
                v = r[f"{c}_{q}"]
                is_best = best[f"{c}_{q}"] is not None and _fmt.finite(v) and round(float(v), 3) == best[f"{c}_{q}"]
                name = r[f"{c}_{lab}"]
                sub = f'<span class="ci">{_e(name)}</span>' if isinstance(name, str) and name else ""
                cells.append(_num(_e(_fmt.fixed(v)) + sub, cls=("first " if q == "alpha_max" else "") + ("best" if is_best else ""), **{"data-col": f"{c}_{q}"}))
        rows.append((cells, _setting_attrs(r)))
    return _table([head1, head2], rows, attrs={"id": "table-alignment"})


def confound_html(t: ReportTable) -> str:
    out = ['<div class="confound-grid">']
    for n, ((setting, variant, channel, column), g) in enumerate(t.df.groupby(["setting", "variant", "channel", "column"], sort=False)):
        out.append("<div>")
        sd = g["sd_across"].iloc[0]
        var = "" if variant == "original" else f" ({_e(variant)})"
        out.append(f"<h3>{_e(setting)}{var} · {_e(channel)} · by {_e(column)}</h3>")
        out.append(f'<p class="note">SD of the stratum means across strata: <b>{_e(_fmt.fixed(sd))}</b> · {int(g["n"].sum()):,} labelled queries.</p>')
        head = [[_th(_e(str(column).capitalize())), _th("n"), _th("Mean z"), _th("Pos ↑"), _th("Sig ↑")]]
        rows: list[tuple[Sequence[Cell], dict[str, str]]] = []
        for _, r in g.iterrows():
            small = bool(r.get("small", False)) if "small" in g.columns and not pd.isna(r.get("small")) else False
            mz = r["mean_z"]
            cells = [_txt(_e(r["stratum"]) + (' <span class="sub">(small)</span>' if small else "")),
                     _num(_e(_fmt.integer(r["n"]))),
                     _num(_e(_fmt.signed(mz, 3)), cls="pos" if _fmt.finite(mz) and mz > 0 else "", **{"data-col": "mean_z"}),
                     _num(_e(_fmt.pct(r["pos"]))), _num(_e(_fmt.pct(r["sig"])))]
            rows.append((cells, {"data-stratum": str(r["stratum"])}))
        out.append(_table(head, rows, attrs={"id": f"table-confound-{n + 1}", "data-setting": str(setting), "data-channel": str(channel)}))
        out.append("</div>")
    out.append("</div>")
    return "".join(out)


def ranking_html(t: ReportTable) -> str:
    df, channels = t.df, t.layout["channels"]
    head = [[_th("Setting"), _th("Variant"), _th("Verdict")] + [_th(_title(c) + " z̄ (rank)") for c in channels] + [_th("Excluded")]]
    rows: list[tuple[Sequence[Cell], dict[str, str]]] = []
    for _, r in df.iterrows():
        cells = [_txt(_e(r["setting"])), _txt(_e(r["variant"])), _txt(badge(r["verdict"]))]
        for c in channels:
            rk = r[f"{c}_rank"]
            cells.append(_num(_e(_fmt.signed(r[f"{c}_zbar"])) + (f' <span class="sub">({int(rk)})</span>' if _fmt.finite(rk) else ""), **{"data-col": f"{c}_zbar"}))
        cells.append(_txt(("excluded: " + _e(r["reason"])) if r["excluded"] else "—"))
        rows.append((cells, _setting_attrs(r)))
    return _table(head, rows, attrs={"id": "table-ranking"})


def generic_html(t: ReportTable, columns: Sequence[tuple[str, str, Any]]) -> str:
    """A plain table: ``columns`` = (column, header HTML, formatter)."""
    head = [[_th(h) for _, h, _ in columns]]
    rows: list[tuple[Sequence[Cell], dict[str, str]]] = []
    for _, r in t.df.iterrows():
        cells = []
        for col, _, f in columns:
            v = r[col] if col in r.index else None
            cells.append(_txt(_e(v)) if f is None else _num(_e(f(v)), **{"data-col": col}))
        rows.append((cells, {}))
    return _table(head, rows, attrs={"id": f"table-{t.name}"})


def lds_summary_html(t: ReportTable) -> str:
    df, channels = t.df, t.layout["channels"]
    head = [[_th("Setting"), _th("Verdict"), _th("LDS ↑"), _th("r<sub>1</sub>"), _th("r<sub>2:5</sub>"), _th("p"), _th("κ")] + [_th(_title(c) + " z̄") for c in channels]]
    rows: list[tuple[Sequence[Cell], dict[str, str]]] = []
    for _, r in df.iterrows():
        cells = [_txt(_e(r["setting"])), _txt(badge(r["verdict"])), _num(_e(_fmt.fixed(r["lds"])), **{"data-col": "lds"})]
        cells += [_num(_e(_fmt.fixed(r[c])), **{"data-col": c}) for c in ("r1", "r2_5", "p", "kappa")]
        cells += [_num(_e(_fmt.signed(r[f"{c}_zbar"])), **{"data-col": f"{c}_zbar"}) for c in channels]
        rows.append((cells, _setting_attrs(r)))
    return _table(head, rows, attrs={"id": "table-lds_summary"})


def sensitivity_html(t: ReportTable) -> str:
    df, channels, groups = t.df, t.layout["channels"], t.layout["groups"]
    head = []
    if groups != [""]:
        head.append([_th("", colspan="2")] + [_th(_title(g), colspan=str(len(channels)), **{"class": "grp"}) for g in groups])
    head.append([_th("Projection dim"), _th("λ")] + [_th(_title(c)) for _ in groups for c in channels])
    rows: list[tuple[Sequence[Cell], dict[str, str]]] = []
    for _, r in df.iterrows():
        lam = _fmt.lam(r["lam"]) + (" ★" if r.get("selected") else "")
        cells = [_num(_e(int(r["proj_dim"]))), _num(_e(lam))]
        for g in groups:
            for c in channels:
                v = r[f"{g}_{c}" if g else c]
                cells.append(_num(_e(_fmt.signed(v)), cls="pos" if _fmt.finite(v) and v > 0 else "", **{"data-col": f"{g}_{c}" if g else c}))
        rows.append((cells, {}))
    return _table(head, rows, attrs={"id": "table-sensitivity"})


def _table_html(t: ReportTable) -> str:
    if t.name == "reliability":
        return reliability_html(t)
    if t.name.startswith("homogeneity"):
        return homogeneity_html(t)
    if t.name == "alignment":
        return alignment_html(t)
    if t.name == "confound":
        return confound_html(t)
    if t.name == "ranking":
        return ranking_html(t)
    if t.name == "lds_summary":
        return lds_summary_html(t)
    if t.name == "sensitivity":
        return sensitivity_html(t)
    if t.name == "lds":
        cols: list[tuple[str, str, Any]] = [("method", "Method", None), ("lds", "LDS ↑", _fmt.fixed),
                                            ("lds_sd", "SD over queries", _fmt.fixed)]
        if "lds_se" in t.df.columns:
            cols.append(("lds_se", "SE of the mean", _fmt.fixed))
        return generic_html(t, [*cols, ("n_subsets", "Subsets", _fmt.integer), ("n_queries", "Queries", _fmt.integer)])
    if t.name == "agreement":
        cols = [("diagnostic", "Diagnostic", None), ("spearman", "Spearman", _fmt.fixed),
                ("kendall", "Kendall", _fmt.fixed), ("n_methods", "Methods", _fmt.integer), ("methods", "Set", None)]
        if "order" in t.df.columns:
            cols.append(("order", "Methods compared", None))
        return generic_html(t, cols)
    if t.name == "null":
        return generic_html(t, [("K", "K", _fmt.integer), ("channel", "Channel", None), ("feature", "Feature ('*' = channel)", None),
                                ("mu", "μ", _fmt.general), ("sigma", "σ", _fmt.general), ("B", "B", _fmt.integer)])
    return ""


# ---------------------------------------------------------------- page


def _section(sid: str, title: str, body: str, caption: str = "") -> str:
    cap = f'<p class="caption">{_e(caption)}</p>' if caption else ""
    return f'<section id="{_e(sid)}"><h2>{title}</h2>{cap}{body}</section>'


def _kv(items: Iterable[tuple[Any, Any]]) -> str:
    out = ['<dl class="kv">']
    for k, v in items:
        if isinstance(v, (dict, list, tuple)):
            v = json.dumps(_clean_json(v), default=_json_default, ensure_ascii=False)
        out.append(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>")
    out.append("</dl>")
    return "".join(out)


def _summary(data: ResultsData, tables: Mapping[str, ReportTable], k: int | None) -> str:
    rel = tables.get("reliability")
    parts = []
    if rel is not None:
        counts: dict[str, list[str]] = {}
        for s, v in zip(rel.df["setting"], rel.df["verdict"], strict=True):
            counts.setdefault(v if isinstance(v, str) else "unknown", []).append(str(s))
        items = []
        for v in ("collapsed", "suspect", "ok", *[x for x in counts if x not in ("collapsed", "suspect", "ok")]):
            if v in counts:
                items.append(f"<li>{badge(v)} {len(counts[v])}: {_e(', '.join(counts[v]))}</li>")
        parts.append(f"<p>{len(rel.df)} setting(s) analysed; verdicts:</p><ul>{''.join(items)}</ul>")
        if "collapsed" in counts:
            parts.append('<p class="note">Collapsed settings retrieve (nearly) the same group for every query: their '
                         "homogeneity numbers describe that fixed group, not attribution, and they are excluded from rankings.</p>")
    parts.append(
        '<dl class="howto">'
        "<dt>κ, r₁, r₂:₅, p</dt><dd>reliability of the score matrix (lower = more query-dependent; paper Eqs. 1–3).</dd>"
        "<dt>z_c(q)</dt><dd>how much more alike, along channel c, the top-K tracks of query q are than random groups of K "
        "training tracks, in SD units of that random-group null (0 = chance, 1.96 ≈ the top 2.5% of random groups).</dd>"
        "<dt>z̄, Pos, Sig</dt><dd>mean of z_c(q) over queries, fraction of queries with z &gt; 0, fraction with z &gt; 1.96.</dd>"
        "<dt>Residual</dt><dd>the same analysis after removing the rank-1 component σ₁u₁v₁ᵀ of the score matrix.</dd>"
        "</dl>"
    )
    if k is not None:
        parts.append(f'<p class="note">Tables are at group size K = {k} (K-sweep plots show every K: {_e(", ".join(map(str, data.ks)))}).</p>')
    return "".join(parts)


def _run_details(data: ResultsData) -> str:
    meta = data.meta
    out = []
    top: list[tuple[str, Any]] = [(k, meta.get(k)) for k in ("kind", "aria_version", "created") if k in meta]
    top.append(("results folder", str(data.path)))
    out.append(_kv(top))
    study = data.study
    if study:
        out.append("<h3>Study parameters</h3>")
        out.append(_kv(study.items()))
    settings = [s for s in meta.get("settings") or [] if isinstance(s, Mapping)]
    if settings:
        keys = list(dict.fromkeys(k for s in settings for k in s))
        head = [[_th(_e(k)) for k in keys]]
        srows: list[tuple[Sequence[Cell], dict[str, str]]] = [([_txt(_e(json.dumps(_clean_json(s.get(k)), default=_json_default) if isinstance(s.get(k), (dict, list)) else ("" if s.get(k) is None else s.get(k)))) for k in keys], {}) for s in settings]
        out.append("<h3>Settings</h3>" + _table(head, srows, cls="data compact", attrs={"id": "table-settings"}))
    ch = meta.get("channels")
    if isinstance(ch, Mapping) and ch:
        out.append("<h3>Channels and features</h3>" + _kv((c, ", ".join(map(str, f)) if isinstance(f, (list, tuple)) else f) for c, f in ch.items()))
    seeds = {k: v for k, v in study.items() if "seed" in str(k).lower() or k in ("B", "n_bootstrap")}
    if seeds:
        out.append("<h3>Randomness</h3>" + _kv(seeds.items()))
    versions = meta.get("versions")
    if isinstance(versions, Mapping) and versions:
        out.append("<h3>Versions</h3>" + _kv(versions.items()))
    timings = meta.get("timings")
    if isinstance(timings, Mapping) and timings:
        rows: list[tuple[Sequence[Cell], dict[str, str]]] = [([_txt(_e(k)), _num(_e(_fmt.seconds(v)))], {}) for k, v in timings.items()]
        total = sum(float(v) for v in timings.values() if _fmt.finite(v))
        rows.append(([_txt("<b>total</b>"), _num(_e(_fmt.seconds(total)))], {}))
        out.append("<h3>Timings</h3>" + _table([[_th("Stage"), _th("Wall time")]], rows, cls="data compact", attrs={"id": "table-timings"}))
    known = {"kind", "aria_version", "created", "study", "settings", "channels", "versions", "timings", "notes"}
    extra = [(k, v) for k, v in meta.items() if k not in known]
    if extra:
        out.append("<h3>Other metadata</h3>" + _kv(extra))
    return "".join(out)


def _query_view(payload: EvidencePayload | None) -> str:
    if payload is None or payload.empty:
        return ('<p class="note" id="query-view-missing">This results folder has no per-query tables (topk.parquet, '
                "query_z.parquet, pairs.parquet), so there is no per-query evidence to show.</p>")
    h = payload.header
    k_txt = f"K = {h['k']}" if h.get("k") is not None else "—"
    pk_txt = f" (pairs at K = {h['pairs_k']})" if h.get("pairs_k") not in (None, h.get("k")) else ""
    return f"""
<div id="query-view">
 <div class="qv-controls">
  <div><label for="qv-setting">Setting</label><select id="qv-setting"></select></div>
  <div><label for="qv-variant">Scores</label><select id="qv-variant"></select></div>
  <div><label for="qv-search">Find a query (index, label or metadata)</label>
   <input id="qv-search" type="search" placeholder="e.g. 12 or a title" autocomplete="off">
   <select id="qv-list" size="7" aria-label="matching queries"></select>
   <span class="status" id="qv-count"></span></div>
  <div class="qv-nav"><label>Step</label><button type="button" id="qv-prev">◀ previous</button><button type="button" id="qv-next">next ▶</button></div>
 </div>
 <div id="qv-banner" class="banner" hidden></div>
 <div class="status" id="qv-status">loading…</div>
 <div class="qv-meta" id="qv-query"></div>
 <div class="qv-grid">
  <div>
   <h3>z<sub>c</sub>(q) per channel against the null ({_e(k_txt)})</h3>
   <div id="qv-zchart"></div>
   <p class="note">Grey curve: the null reference N(0, 1) that z<sub>c</sub>(q) follows for random groups; dashed line: z = 1.96.
   Box: this setting's queries (25–75%, whiskers 5–95%); dot: this query.</p>
   <div class="tablewrap"><table class="data compact" id="qv-ztable"><thead><tr><th>Channel</th><th>z<sub>c</sub>(q)</th>
   <th title="normal approximation Φ(z)">above random groups</th><th>rank among queries</th><th>reading</th></tr></thead><tbody></tbody></table></div>
   <h3>Track pairs contributing most per channel{_e(pk_txt)}</h3>
   <div id="qv-pairs"></div>
  </div>
  <div>
   <h3>Top attributed training tracks (first {int(h['top_n'])})</h3>
   <div class="tablewrap"><table class="data compact" id="qv-topk"><thead><tr><th>Rank</th><th>Track</th><th>Score</th></tr></thead><tbody></tbody></table></div>
  </div>
 </div>
</div>"""


def render_html(
    data: ResultsData,
    tables: Mapping[str, ReportTable],
    *,
    k: int | None,
    plots: Mapping[str, str] | None,
    plot_note: str | None,
    evidence: EvidencePayload | None,
) -> str:
    """The report page (a complete HTML document)."""
    sections: list[tuple[str, str, str]] = []  # (id, nav title, html)

    def add(sid: str, nav: str, title: str, body: str, caption: str = "") -> None:
        sections.append((sid, nav, _section(sid, title, body, caption)))

    add("summary", "Summary", "Summary", _summary(data, tables, k))
    t = tables.get("reliability")
    if t is not None:
        add("reliability", "Reliability", _e(t.title), _table_html(t), t.caption)
    t = tables.get("homogeneity")
    if t is not None:
        add("homogeneity", "Homogeneity", _e(t.title), _table_html(t), t.caption)
    if plots:
        figs = "".join(
            f'<figure class="plot" data-setting="{_e(s)}" aria-label="K-sweep of {_e(s)}">{svg}</figure>'
            for s, svg in plots.items()
        )
        add("ksweep", "K-sweep", "K-sweep", f'<div class="plots">{figs}</div>',
            "Mean homogeneity z̄_c against the group size K, one panel per setting. Dashed curves (open markers) use "
            "the original score matrix S_seg, solid curves (filled markers) its rank-1 residual; colours and markers "
            "identify channels; bands are bootstrap 95% CIs over queries; the dotted line marks the tables' K.")
    elif plot_note:
        add("ksweep", "K-sweep", "K-sweep", f'<p class="note">{_e(plot_note)}</p>')
    for name, t in tables.items():
        if name.startswith("homogeneity_"):
            add(name, "Residual" if t.layout.get("variant") == "residual" else _e(t.layout.get("variant")), _e(t.title), _table_html(t), t.caption)
    for name, nav in (("alignment", "Alignment"), ("confound", "Confound"), ("ranking", "Ranking"),
                      ("lds_summary", "LDS"), ("lds", "LDS" if "lds_summary" not in tables else ""),
                      ("agreement", "Agreement"), ("sensitivity", "Sensitivity")):
        t = tables.get(name)
        if t is not None:
            add(name, nav, _e(t.title), _table_html(t), t.caption)
    add("query", "Per-query evidence", "Per-query evidence", _query_view(evidence),
        "For one query: its top attributed training tracks, its z-score per channel against the random-group null, "
        "and the pairs of attributed tracks that contribute most to each channel's similarity.")
    details = _run_details(data)
    t = tables.get("null")
    if t is not None:
        details += f"<details><summary>Null distribution ({len(t.df)} rows)</summary>{_table_html(t)}</details>"
    add("run", "Run details", "Parameters, seeds, versions and timings", details)

    notes = [str(n) for n in data.meta.get("notes") or []]
    missing_html = ""
    if data.missing:
        missing_html = ('<div class="missing" id="missing"><b>Missing pieces.</b> This report shows what the results folder holds; '
                        "the following is absent or unusable:<ul>" + "".join(f"<li>{_e(m)}</li>" for m in data.missing) + "</ul></div>")
    notes_html = ('<div class="note"><b>Notes from the run:</b><ul>' + "".join(f"<li>{_e(n)}</li>" for n in notes) + "</ul></div>") if notes else ""

    nav = "".join(f'<a href="#{_e(sid)}">{nav}</a>' for sid, nav, _ in sections if nav)
    study = data.study
    sub = [f"results: {_e(data.path.name)}"]
    if study.get("modality"):
        sub.append(f"modality: {_e(study['modality'])}")
    if data.meta.get("created"):
        sub.append(f"created {_e(data.meta['created'])}")
    sub.append(f"ARIA {_e(data.meta.get('aria_version', ''))}")
    payload_json = {"evidence": None}
    blocks_html = ""
    if evidence is not None and not evidence.empty:
        payload_json["evidence"] = _clean_json(evidence.header)
        blocks_html = "".join(f'<script type="text/plain" id="aria-block-{b.header["id"]}">{b.data}</script>\n' for b in evidence.blocks)
    from aria import __version__

    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_e(CSP)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="color-scheme" content="light">'
        f'<meta name="generator" content="aria {_e(__version__)}">'
        f"<title>{_e(data.title)}</title><style>{_asset('report.css')}</style></head>\n<body>"
        f'<header class="top"><h1>{_e(data.title)}</h1><p class="sub">{" · ".join(sub)}</p></header>'
        f'<nav class="toc" aria-label="sections">{nav}</nav>\n<main>{missing_html}{notes_html}'
        + "\n".join(s for _, _, s in sections)
        + f"</main><footer>Generated by ARIA {_e(__version__)} from {_e(str(data.path))}. "
        "This file is self-contained: it opens offline and makes no network requests.</footer>\n"
        f'<script type="application/json" id="aria-data">{_json_for_script(payload_json)}</script>\n'
        f"{blocks_html}<script>{_asset('report.js')}</script></body></html>\n"
    )
