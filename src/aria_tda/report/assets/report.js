/* ARIA report: the per-query evidence view. No network access: everything is in this file.
 * Data: <script id="aria-data" type="application/json"> (header) and one
 * <script id="aria-block-N" type="text/plain"> per (setting, variant) block, holding
 * base64(gzip(byte-shuffled little-endian arrays)) - see aria_tda.media.query_evidence. */
(function () {
  'use strict';
  var SVGNS = 'http://www.w3.org/2000/svg';
  var COLORS = ['#0072B2', '#D55E00', '#009E73', '#CC79A7', '#E69F00', '#56B4E9', '#000000', '#F0E442'];
  var SIG = 1.96;
  var MAX_LIST = 400;

  function byId(id) { return document.getElementById(id); }
  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    if (attrs) { for (var k in attrs) { if (Object.prototype.hasOwnProperty.call(attrs, k)) e.setAttribute(k, attrs[k]); } }
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function svg(tag, attrs, text) {
    var e = document.createElementNS(SVGNS, tag);
    if (attrs) { for (var k in attrs) { if (Object.prototype.hasOwnProperty.call(attrs, k)) e.setAttribute(k, String(attrs[k])); } }
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
  function fin(x) { return typeof x === 'number' && isFinite(x); }
  function fSigned(x, nd) { if (!fin(x)) return '\u2014'; var s = x.toFixed(nd === undefined ? 2 : nd); return (x >= 0 && s.charAt(0) !== '-' ? '+' : '') + s; }
  function fGen(x) { if (!fin(x)) return '\u2014'; var a = Math.abs(x); if (a !== 0 && (a < 1e-3 || a >= 1e5)) return x.toExponential(3); return Number(x.toPrecision(4)).toString(); }
  function fPct(x) { return fin(x) ? (100 * x).toFixed(1) + '%' : '\u2014'; }
  // Standard normal CDF (Abramowitz & Stegun 7.1.26 on erf; |error| < 1.5e-7).
  function phi(z) {
    var x = Math.abs(z) / Math.SQRT2, t = 1 / (1 + 0.3275911 * x);
    var y = 1 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-x * x);
    return z >= 0 ? 0.5 * (1 + y) : 0.5 * (1 - y);
  }

  var dataNode = byId('aria-data');
  var root = byId('query-view');
  if (!dataNode || !root) return;
  var D;
  try { D = JSON.parse(dataNode.textContent); } catch (e) { root.appendChild(el('p', { 'class': 'error' }, 'Could not read the embedded data: ' + e)); return; }
  var E = D.evidence;
  if (!E || !E.blocks || !E.blocks.length) return;
  var M = D.media || null, W = D.words || { templates: {}, units: {} };

  var status = byId('qv-status');
  var queries = E.queries.ids;
  var qmeta = E.queries.meta || {};
  var tracks = E.tracks.ids;
  var tlabel = (E.tracks.meta && E.tracks.meta.label) || null;
  var channels = E.channels;
  var T = queries.length, C = channels.length;

  function queryLabel(i) {
    var lab = qmeta.label ? qmeta.label[i] : '';
    return 'query ' + queries[i] + (lab ? ' \u2014 ' + lab : '');
  }
  var haystack = new Array(T);
  for (var i = 0; i < T; i++) {
    var parts = ['query ' + queries[i], String(queries[i])];
    for (var key in qmeta) { if (Object.prototype.hasOwnProperty.call(qmeta, key)) parts.push(qmeta[key][i]); }
    haystack[i] = parts.join(' ').toLowerCase();
  }

  // ---- numbers in words (the templates of aria_tda.report.words) --------------------------
  function fill(tpl, vals) { var out = tpl || ''; Object.keys(vals).forEach(function (k) { out = out.split('{' + k + '}').join(String(vals[k])); }); return out; }
  function fPercent(p) {
    if (!fin(p)) return '\u2014';
    var v = 100 * Math.min(Math.max(p, 0), 1);
    if (v >= 1 && v <= 99) return v.toFixed(0) + ' %';
    if (v >= 99.95) return v < 100 ? '99.9 %' : '100 %';
    return v.toFixed(1) + ' %';
  }
  function pairWords(channel, sim, contrib, k, mean) {
    var t = W.templates, s = fin(sim) ? sim.toFixed(2) : '\u2014';
    if (t.pair_short && fin(mean) && fin(contrib) && k !== null && k !== undefined) return fill(t.pair_short, { sim: s, mean: mean.toFixed(2), contrib: fSigned(contrib, 1), k: String(k) });
    var text = fin(mean) ? fill(t.pair_mean, { channel: channel, sim: s, mean: mean.toFixed(2) }) : fill(t.pair_plain, { channel: channel, sim: s });
    if (fin(contrib)) text += '; ' + fill(k !== null && k !== undefined ? t.contribution : t.contribution_nok, { contrib: fSigned(contrib, 1), k: k === null || k === undefined ? '' : String(k) });
    return text;
  }

  // ---- the listening room (clips and pictures kept beside the report) ----------------------
  var abState = null;
  function mediaOf(q) { return M && M.queries ? M.queries[String(queries[q])] || null : null; }
  function audioEl(src, label, role, clip) {
    var w = clip && clip.window ? clip.window : [0, 0];
    var a = el('audio', { controls: '', preload: role === 'query' ? 'metadata' : 'none', src: src, 'aria-label': label, 'data-role': role, 'data-window': w[0] + ',' + w[1] });
    a.addEventListener('error', mediaMissing);
    a.addEventListener('play', function () { Array.prototype.forEach.call(root.querySelectorAll('audio'), function (o) { if (o !== a && !o.paused) o.pause(); }); });
    return a;
  }
  var mediaGone = false;
  function mediaMissing() {
    // a clip or picture the page names is not where it should be: the media folder did not
    // travel with the page (or was removed); said once, at the top of the listening room
    if (mediaGone) return;
    mediaGone = true;
    root.setAttribute('data-media-missing', 'true');
    var box = byId('qv-media');
    var folder = M && M.folder ? M.folder : 'report_media';
    var p = el('p', { 'class': 'missing-media', role: 'alert', id: 'qv-media-missing' }, 'The clips and pictures are missing: this page loads them from the folder ' + folder + '/ beside it, which is not there (or not readable). Keep that folder next to the page, or rebuild the report.');
    if (box) box.insertBefore(p, box.firstChild);
  }
  function imgEl(src, alt) {
    var im = el('img', { src: src, alt: alt, loading: 'lazy', 'class': 'qv-pic' });
    im.addEventListener('error', mediaMissing);
    return im;
  }
  function clipOf(m, id) {
    var c = m.clips || {};
    return (c[state.setting] && c[state.setting][id]) || (c[''] && c[''][id]) || (M.tracks ? M.tracks[id] : null) || null;
  }
  function rollOf(m, id) {
    var r = m.rolls || {};
    return (r[state.setting] && r[state.setting][id]) || (r[''] && r[''][id]) || null;
  }
  function rangeText(c) {  // words.describe_clip_range: the dossier says the same
    var w = c.window || [0, 0];
    return fill(W.templates.clip_range, { source: c.source || '', w0: Number(w[0]).toFixed(1), w1: Number(w[1]).toFixed(1), duration: Number(c.duration || 0).toFixed(1) });
  }
  function abPlay(item) {
    var qa = byId('qv-query-audio');
    if (!qa || !item) return;
    if (abState) { qa.removeEventListener('ended', abState); abState = null; }
    var next = function () { qa.removeEventListener('ended', next); abState = null; item.currentTime = 0; root.setAttribute('data-played', (root.getAttribute('data-played') || '') + 'item,'); var p = item.play(); if (p && p.catch) p.catch(function () {}); };
    abState = next;
    qa.addEventListener('ended', next);
    qa.currentTime = 0;
    root.setAttribute('data-played', 'query,');
    var p = qa.play(); if (p && p.catch) p.catch(function () {});
  }
  function renderMedia() {
    var box = byId('qv-media');
    if (!box) return;
    clear(box);
    var m = mediaOf(state.q);
    if (!m) {
      var lim = M && M.limits ? M.limits : null;
      var rule = M && M.pick && M.pick._rule ? M.pick._rule : 'the first queries';
      box.appendChild(el('p', { 'class': 'note' }, (M ? 'The report keeps clips and pictures for ' + (lim ? lim.queries : '?') + ' queries (' + rule + '; top ' + (lim ? lim.top : '?') + ' items of each setting); this query is not one of them.' : 'This report was written without clips and pictures.') + ' Write its dossier with: aria-tda evidence RESULTS_DIR --query ' + queries[state.q] + ' --out dossier.html'));
      return;
    }
    var qc = m.query;
    if (m.why) box.appendChild(el('p', { 'class': 'note' }, 'Media kept for this query: one of the ' + m.why + ' (' + (M.pick && M.pick._rule ? M.pick._rule : '') + ').'));
    if (qc.audio) {
      var a = audioEl(qc.audio, 'query ' + queries[state.q], 'query', qc); a.id = 'qv-query-audio';
      box.appendChild(el('div', { 'class': 'qv-player' }, 'Query ')).appendChild(a);
      box.appendChild(el('p', { 'class': 'note' }, rangeText(qc) + '.'));
      if (qc.picture) box.appendChild(imgEl(qc.picture, 'spectrogram, chroma, beats and chords of the query'));
    } else {
      box.appendChild(el('p', { 'class': 'missing-media' }, 'The query is not playable: ' + (qc.missing || 'no clip') + '.'));
    }
    (m.problems || []).forEach(function (p) { box.appendChild(el('p', { 'class': 'note' }, p)); });
  }
  function listenCell(code) {
    var td = el('td', { 'class': 'txt listen' });
    var m = mediaOf(state.q);
    if (!m || code < 0) return td;
    var id = tracks[code];
    if (m.items.indexOf(id) < 0) return td;
    var c = clipOf(m, id);
    if (!c) { td.appendChild(el('span', { 'class': 'note' }, 'no clip kept for this setting (aria-tda evidence --setting makes one)')); return td; }
    if (!c.audio) { td.appendChild(el('span', { 'class': 'missing-media' }, 'not playable: ' + (c.missing || 'no clip'))); return td; }
    var a = audioEl(c.audio, 'item ' + id, 'item', c);
    td.appendChild(a);
    td.appendChild(el('span', { 'class': 'note clip-range' }, rangeText(c)));
    var qa = byId('qv-query-audio');
    if (qa) {
      var b = el('button', { type: 'button', 'class': 'qv-ab', title: 'play the query, then this item' }, 'A/B: query \u2192 item');
      b.addEventListener('click', function () { abPlay(a); });
      td.appendChild(b);
    }
    var roll = rollOf(m, id);
    if (roll) td.appendChild(imgEl(roll, 'piano roll of the query beside ' + id));
    else if (c.picture) td.appendChild(imgEl(c.picture, 'spectrogram, chroma, beats and chords of ' + id));
    return td;
  }

  // ---- decoding ----------------------------------------------------------------------
  var cache = {};
  var littleEndian = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
  function decode(block) {
    if (cache[block.id]) return cache[block.id];
    var p = (async function () {
      if (typeof DecompressionStream === 'undefined') throw new Error('this browser lacks DecompressionStream (use a current Chrome, Edge, Firefox or Safari)');
      var node = byId('aria-block-' + block.id);
      var bin = atob(node.textContent.trim());
      var bytes = new Uint8Array(bin.length);
      for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
      var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
      var raw = new Uint8Array(await new Response(stream).arrayBuffer());
      var out = {};
      Object.keys(block.layout).forEach(function (name) {
        var spec = block.layout[name], n = spec.length, off = spec.offset;
        var buf = new ArrayBuffer(4 * n), u8 = new Uint8Array(buf);
        for (var b = 0; b < 4; b++) {
          var src = off + b * n, dst = littleEndian ? b : 3 - b;
          for (var j = 0; j < n; j++) u8[4 * j + dst] = raw[src + j];
        }
        out[name] = { data: spec.type === 'i32' ? new Int32Array(buf) : new Float32Array(buf), shape: spec.shape };
      });
      out.quant = {};
      if (out.z) {
        for (var c = 0; c < C; c++) {
          var vals = [];
          for (var q = 0; q < T; q++) { var v = out.z.data[q * C + c]; if (isFinite(v)) vals.push(v); }
          vals.sort(function (a, b) { return a - b; });
          out.quant[c] = vals;
        }
      }
      return out;
    })();
    cache[block.id] = p;
    return p;
  }
  function quantile(sorted, f) {
    if (!sorted.length) return NaN;
    var pos = (sorted.length - 1) * f, lo = Math.floor(pos), hi = Math.ceil(pos);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
  }
  function rankOf(sorted, v) { // fraction of values strictly below v
    var lo = 0, hi = sorted.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (sorted[mid] < v) lo = mid + 1; else hi = mid; }
    return sorted.length ? lo / sorted.length : NaN;
  }

  // ---- controls ----------------------------------------------------------------------
  var selSetting = byId('qv-setting'), selVariant = byId('qv-variant'), search = byId('qv-search'), list = byId('qv-list');
  var settings = [];
  E.blocks.forEach(function (b) { if (settings.indexOf(b.setting) < 0) settings.push(b.setting); });
  settings.forEach(function (s) {
    var b = E.blocks.filter(function (x) { return x.setting === s; })[0];
    selSetting.appendChild(el('option', { value: s }, s + (b.verdict ? ' \u2014 ' + b.verdict : '')));
  });
  var state = { setting: settings[0], variant: null, q: 0, token: 0 };

  function blocksOf(setting) { return E.blocks.filter(function (b) { return b.setting === setting; }); }
  function fillVariants() {
    clear(selVariant);
    var bs = blocksOf(state.setting);
    bs.forEach(function (b) { selVariant.appendChild(el('option', { value: b.variant }, b.variant === 'residual' ? 'rank-1 residual' : b.variant)); });
    var keep = bs.some(function (b) { return b.variant === state.variant; });
    state.variant = keep ? state.variant : bs[0].variant;
    selVariant.value = state.variant;
  }
  function fillList() {
    var terms = search.value.toLowerCase().split(/\s+/).filter(Boolean);
    clear(list);
    var n = 0, shown = 0;
    for (var i = 0; i < T; i++) {
      var h = haystack[i], ok = true;
      for (var t = 0; t < terms.length; t++) { if (h.indexOf(terms[t]) < 0) { ok = false; break; } }
      if (!ok) continue;
      n++;
      if (shown < MAX_LIST) { var o = el('option', { value: String(i) }, queryLabel(i)); if (i === state.q) o.selected = true; list.appendChild(o); shown++; }
    }
    byId('qv-count').textContent = n === T ? T + ' queries' : n + ' of ' + T + ' queries match' + (n > shown ? ' (first ' + shown + ' listed)' : '');
  }

  selSetting.addEventListener('change', function () { state.setting = selSetting.value; fillVariants(); render(); });
  selVariant.addEventListener('change', function () { state.variant = selVariant.value; render(); });
  search.addEventListener('input', fillList);
  search.addEventListener('keydown', function (ev) {
    if (ev.key === 'Enter' && list.options.length) { state.q = Number(list.options[0].value); list.selectedIndex = 0; render(); }
  });
  list.addEventListener('change', function () { if (list.value !== '') { state.q = Number(list.value); render(); } });
  byId('qv-prev').addEventListener('click', function () { if (state.q > 0) { state.q--; syncList(); render(); } });
  byId('qv-next').addEventListener('click', function () { if (state.q < T - 1) { state.q++; syncList(); render(); } });
  function syncList() { for (var i = 0; i < list.options.length; i++) list.options[i].selected = Number(list.options[i].value) === state.q; }

  // ---- rendering ---------------------------------------------------------------------
  function trackCell(code, A, r) {
    var td = el('td', { 'class': 'txt' });
    if (code < 0) { td.textContent = '\u2014'; return td; }
    var id = tracks[code], lab = tlabel ? tlabel[code] : '';
    td.setAttribute('data-track', id);
    if (lab && lab !== id) { td.appendChild(el('span', null, lab)); td.appendChild(el('span', { 'class': 'sub' }, ' ' + id)); }
    else td.textContent = id;
    // how like the query this track is per channel, against the pool (the study's
    // item_alignment; words.TEMPLATES: the dossier says the same numbers in full sentences)
    if (A && A.like_info && r !== undefined) {
      var n = A.like_info.shape[1], parts = [];
      for (var c = 0; c < C; c++) {
        var at = (state.q * n + r) * C + c, inf = A.like_info.data[at];
        if (inf < 0) continue;
        parts.push(channels[c] + ' ' + (inf ? Math.round(A.like_pct.data[at]) + ' %' : W.templates.likeness_flat_short));
      }
      if (parts.length) td.appendChild(el('span', { 'class': 'sub like' }, fill(W.templates.likeness_row, { list: parts.join(', ') })));
    }
    return td;
  }
  function renderBanner(block) {
    var box = byId('qv-banner');
    clear(box);
    box.hidden = true;
    box.className = 'banner';
    if (block.verdict === 'collapsed') {
      box.hidden = false;
      box.setAttribute('role', 'alert');
      box.appendChild(el('strong', null, '\u26A0 ' + block.setting + ' is collapsed: this evidence reflects a fixed group, not this query.'));
      box.appendChild(el('span', null, 'Its top-K group is (nearly) the same for every query, so the tracks, z-scores and pairs below describe that fixed group rather than what this query drew on.' + (block.reason ? ' Verdict: ' + block.reason + '.' : '') + (block.variant === 'residual' ? ' (The verdict concerns the original score matrix; this is its rank-1 residual.)' : '')));
    } else if (block.verdict === 'suspect') {
      box.hidden = false;
      box.className = 'banner suspect';
      box.removeAttribute('role');
      box.appendChild(el('strong', null, block.setting + ' is suspect: read this evidence with care.'));
      if (block.reason) box.appendChild(el('span', null, 'Verdict: ' + block.reason + '.'));
    }
  }
  function renderMeta() {
    var box = byId('qv-query');
    clear(box);
    var q = state.q;
    box.appendChild(el('b', null, 'Query ' + queries[q]));
    Object.keys(qmeta).forEach(function (k) { if (k !== 'query' && qmeta[k][q] !== '') { box.appendChild(document.createTextNode(' \u00b7 ' + k + ': ')); box.appendChild(el('span', null, qmeta[k][q])); } });
  }
  // The distinctive reading leads: this query's aspect beyond what the method shows for every
  // query, or none (aria_tda.homogeneity.distinctive); the paper's z follows below.
  function renderAspect(A, block) {
    var box = byId('qv-aspect');
    if (!box) return;
    clear(box);
    var info = block.aspect, t = W.templates;
    if (!info || !A.aspect_named) { box.appendChild(el('p', { 'class': 'note' }, t.aspect_missing || 'No distinctive reading in these results')); box.removeAttribute('data-named'); return; }
    var q = state.q, code = A.aspect_named.data[q], best = -1, bestV = -Infinity;
    var deltas = [];
    for (var c = 0; c < C; c++) { var d = A.aspect_delta.data[q * C + c]; deltas.push(d); if (fin(d) && d > bestV) { bestV = d; best = c; } }
    var vals = { method: block.setting, anchor: info.anchor_words, threshold: fSigned(info.threshold, 2), alpha: fPercent(info.alpha) };
    var named = code >= 0 ? channels[code] : (code === -1 ? 'none' : null);
    var text;
    if (named === null) text = 'This query was not read (constant scores, or no features of its own)';
    else if (named !== 'none') { vals.channel = named; vals.delta = fSigned(deltas[code], 2); text = fill(t.aspect_named, vals); }
    else { vals.channel = best >= 0 ? channels[best] : '\u2014'; vals.delta = best >= 0 ? fSigned(bestV, 2) : '\u2014'; text = fill(t.aspect_none, vals); }
    box.setAttribute('data-named', named === null ? '' : named);
    box.appendChild(el('h3', null, 'Which aspect: ' + (named === null ? 'not read' : named === 'none' ? 'no distinctive aspect' : named)));
    box.appendChild(el('p', { 'class': 'lead' }, text + '.'));
    var ma = info.method_aspect;
    box.appendChild(el('p', { 'class': 'note' }, (ma && ma !== 'none' ? fill(t.aspect_method, { method: block.setting, channel: ma, baseline: fSigned(info.baseline[ma], 2) }) : fill(t.aspect_method_none, { method: block.setting })) + '. The paper\u2019s z below says how alike the top-K items are to each other.'));
    var tbl = el('table', { 'class': 'data compact', id: 'qv-aspect-table' });
    var hr = el('tr'); ['Channel', '\u0394 (distinctive)', 'method follows (median z)'].forEach(function (h) { hr.appendChild(el('th', null, h)); });
    var th = el('thead'); th.appendChild(hr); tbl.appendChild(th);
    var tb = el('tbody');
    for (c = 0; c < C; c++) {
      var tr = el('tr', c === code ? { 'class': 'named', 'data-channel': channels[c] } : { 'data-channel': channels[c] });
      tr.appendChild(el('td', { 'class': 'txt' }, channels[c]));
      tr.appendChild(el('td', { 'class': 'num' }, fSigned(deltas[c], 2)));
      tr.appendChild(el('td', { 'class': 'num' }, fSigned(info.baseline[channels[c]], 2)));
      tb.appendChild(tr);
    }
    tbl.appendChild(tb);
    var wrap = el('div', { 'class': 'tablewrap' }); wrap.appendChild(tbl); box.appendChild(wrap);
  }
  function renderZ(A) {
    var box = byId('qv-zchart'), tb = byId('qv-ztable');
    clear(box); clear(tb.tBodies[0]);
    if (!A.z) { box.appendChild(el('p', { 'class': 'note' }, 'No per-query z-scores in these results.')); return; }
    var q = state.q, zs = [], xmax = 4;
    for (var c = 0; c < C; c++) {
      var z = A.z.data[q * C + c]; zs.push(z);
      if (fin(z)) xmax = Math.max(xmax, Math.abs(z));
      var qs = A.quant[c]; if (qs && qs.length) xmax = Math.max(xmax, Math.abs(quantile(qs, 0.05)), Math.abs(quantile(qs, 0.95)));
    }
    xmax = Math.min(Math.ceil(xmax + 0.5), 60);
    var W = 580, left = 78, right = 58, rowH = 36, top = 12, H = top + rowH * C + 44;
    var sx = function (v) { return left + (Math.max(-xmax, Math.min(xmax, v)) + xmax) / (2 * xmax) * (W - left - right); };
    var s = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': 'z_c(q) of query ' + queries[q] + ' per channel against the standard normal null' });
    s.appendChild(svg('title', null, 'z-scores of this query per channel; grey curve: null N(0,1); box: all queries of this setting'));
    // reference lines
    [[0, '#777', 'none'], [SIG, '#999', '4 3'], [-SIG, '#ccc', '2 3']].forEach(function (r) {
      s.appendChild(svg('line', { x1: sx(r[0]), x2: sx(r[0]), y1: top - 4, y2: top + rowH * C, stroke: r[1], 'stroke-dasharray': r[2], 'stroke-width': 1 }));
    });
    for (c = 0; c < C; c++) {
      var y0 = top + c * rowH, mid = y0 + rowH / 2, color = COLORS[c % COLORS.length];
      // standard normal density, scaled to the row
      var pts = [];
      for (var k = 0; k <= 120; k++) { var xv = -xmax + 2 * xmax * k / 120; pts.push(sx(xv).toFixed(1) + ',' + (y0 + rowH - 3 - (rowH - 8) * Math.exp(-xv * xv / 2)).toFixed(1)); }
      s.appendChild(svg('polygon', { points: sx(-xmax) + ',' + (y0 + rowH - 3) + ' ' + pts.join(' ') + ' ' + sx(xmax) + ',' + (y0 + rowH - 3), fill: '#d8d8d8', 'fill-opacity': 0.55, stroke: 'none' }));
      s.appendChild(svg('line', { x1: left, x2: W - right, y1: y0 + rowH - 3, y2: y0 + rowH - 3, stroke: '#e2e2e2' }));
      var qs2 = A.quant[c];
      if (qs2 && qs2.length) {
        var p5 = sx(quantile(qs2, 0.05)), p25 = sx(quantile(qs2, 0.25)), p50 = sx(quantile(qs2, 0.5)), p75 = sx(quantile(qs2, 0.75)), p95 = sx(quantile(qs2, 0.95));
        s.appendChild(svg('line', { x1: p5, x2: p95, y1: mid, y2: mid, stroke: color, 'stroke-opacity': 0.55, 'stroke-width': 1.5 }));
        s.appendChild(svg('rect', { x: p25, y: mid - 5, width: Math.max(1, p75 - p25), height: 10, fill: color, 'fill-opacity': 0.18, stroke: color, 'stroke-opacity': 0.7 }));
        s.appendChild(svg('line', { x1: p50, x2: p50, y1: mid - 5, y2: mid + 5, stroke: color, 'stroke-width': 1.5 }));
      }
      s.appendChild(svg('text', { x: left - 8, y: mid + 4, 'text-anchor': 'end' }, channels[c]));
      if (fin(zs[c])) {
        var cx = sx(zs[c]);
        s.appendChild(svg('circle', { cx: cx, cy: mid, r: 6, fill: color, stroke: '#111', 'stroke-width': 1.2 }));
        if (Math.abs(zs[c]) > xmax) s.appendChild(svg('text', { x: cx + (zs[c] > 0 ? -10 : 10), y: mid - 8, 'text-anchor': 'middle' }, zs[c] > 0 ? '\u25B6' : '\u25C0'));
        s.appendChild(svg('text', { x: W - right + 8, y: mid + 4, 'font-weight': 'bold' }, fSigned(zs[c])));
      } else {
        s.appendChild(svg('text', { x: W - right + 8, y: mid + 4 }, 'n/a'));
      }
    }
    var axisY = top + rowH * C + 4;
    s.appendChild(svg('line', { x1: left, x2: W - right, y1: axisY, y2: axisY, stroke: '#333' }));
    var step = xmax <= 6 ? 1 : xmax <= 12 ? 2 : xmax <= 30 ? 5 : 10;
    for (var t = -Math.floor(xmax / step) * step; t <= xmax; t += step) {
      s.appendChild(svg('line', { x1: sx(t), x2: sx(t), y1: axisY, y2: axisY + 4, stroke: '#333' }));
      s.appendChild(svg('text', { x: sx(t), y: axisY + 15, 'text-anchor': 'middle' }, t > 0 ? '+' + t : String(t)));
    }
    s.appendChild(svg('text', { x: sx(SIG) + 3, y: top + 2, fill: '#777' }, '1.96'));
    s.appendChild(svg('text', { x: (left + W - right) / 2, y: H - 4, 'text-anchor': 'middle' }, 'z-score of this query (SD units of the random-group null)'));
    box.appendChild(s);
    for (c = 0; c < C; c++) {
      var tr = el('tr'), z2 = zs[c];
      var th = el('td', { 'class': 'txt' }); th.appendChild(el('span', { 'class': 'swatch', style: 'background:' + COLORS[c % COLORS.length] })); th.appendChild(document.createTextNode(channels[c]));
      tr.appendChild(th);
      tr.appendChild(el('td', { 'class': 'num', 'data-channel': channels[c] }, fSigned(z2)));
      tr.appendChild(el('td', { 'class': 'num' }, fin(z2) ? fPct(phi(z2)) : '\u2014'));
      tr.appendChild(el('td', { 'class': 'num' }, fin(z2) && A.quant[c] && A.quant[c].length ? fPct(rankOf(A.quant[c], z2)) : '\u2014'));
      tr.appendChild(el('td', { 'class': 'txt' }, !fin(z2) ? '' : z2 > SIG ? 'significant (z > 1.96)' : z2 > 0 ? 'positive' : 'not above chance'));
      tb.tBodies[0].appendChild(tr);
    }
  }
  function renderTopk(A) {
    var tb = byId('qv-topk'), body = tb.tBodies[0];
    clear(body);
    if (!A.topk_idx) { body.appendChild(el('tr', null)).appendChild(el('td', { colspan: 4 }, 'No top-K table in these results.')); return; }
    var n = A.topk_idx.shape[1], q = state.q;
    for (var r = 0; r < n; r++) {
      var code = A.topk_idx.data[q * n + r];
      if (code < 0) continue;
      var tr = el('tr', { 'data-rank': String(r + 1), 'data-track': tracks[code], tabindex: '0' });
      tr.appendChild(el('td', { 'class': 'num' }, String(r + 1)));
      tr.appendChild(trackCell(code, A, r));
      tr.appendChild(el('td', { 'class': 'num' }, fGen(A.topk_score.data[q * n + r])));
      var lc = tr.appendChild(listenCell(code));
      if (lc.childNodes.length) tr.classList.add('qv-item');
      tr.addEventListener('click', function (ev) { var i = navRows().indexOf(ev.currentTarget); if (i >= 0) selectItem(i, false); });
      tr.addEventListener('keydown', function (ev) {  // Tab reaches every row; Enter selects it
        if (ev.key !== 'Enter' || ev.target !== ev.currentTarget) return;
        var i = navRows().indexOf(ev.currentTarget); if (i >= 0) { selectItem(i, false); ev.preventDefault(); }
      });
      body.appendChild(tr);
    }
    if (!body.rows.length) body.appendChild(el('tr')).appendChild(el('td', { colspan: 4 }, 'No attributed tracks for this query.'));
  }
  function renderPairs(A, block) {
    var box = byId('qv-pairs');
    clear(box);
    if (!A.pair_a) { box.appendChild(el('p', { 'class': 'note' }, 'No contributing-pair table in these results.')); return; }
    var P = A.pair_a.shape[2], q = state.q;
    for (var c = 0; c < C; c++) {
      var h = el('h3'); h.appendChild(el('span', { 'class': 'swatch', style: 'background:' + COLORS[c % COLORS.length] })); h.appendChild(document.createTextNode(channels[c]));
      var table = el('table', { 'class': 'data compact', 'data-channel': channels[c] });
      var hr = el('tr');
      var kTxt = E.pairs_k !== null && E.pairs_k !== undefined ? ' (SD of a random group-of-' + E.pairs_k + ' mean)' : '';
      [['Track A', ''], ['Track B', ''], ['Similarity (0\u20131)', W.units.similarity || ''], ['Standardised' + kTxt, W.units.contribution || ''], ['In words', '']].forEach(function (x) { hr.appendChild(el('th', x[1] ? { title: x[1] } : null, x[0])); });
      table.appendChild(el('thead')).appendChild(hr);
      var body = table.appendChild(el('tbody'));
      for (var p = 0; p < P; p++) {
        var o = (q * C + c) * P + p, a = A.pair_a.data[o];
        if (a < 0) continue;
        var tr = el('tr');
        tr.appendChild(trackCell(a));
        tr.appendChild(trackCell(A.pair_b.data[o]));
        var sim = A.pair_sim.data[o], con = A.pair_contrib.data[o];
        tr.appendChild(el('td', { 'class': 'num' }, fin(sim) ? sim.toFixed(2) : '\u2014'));
        tr.appendChild(el('td', { 'class': 'num' }, fSigned(con, 3)));
        tr.appendChild(el('td', { 'class': 'txt words' }, pairWords(channels[c], sim, con, E.pairs_k, (block.random_mean || {})[channels[c]])));
        body.appendChild(tr);
      }
      if (!body.rows.length) continue;
      box.appendChild(h);
      box.appendChild(table);
    }
    if (!box.childNodes.length) box.appendChild(el('p', { 'class': 'note' }, 'No contributing pairs for this query.'));
  }

  async function render() {
    var token = ++state.token;
    var block = E.blocks.filter(function (b) { return b.setting === state.setting && b.variant === state.variant; })[0];
    if (!block) return;
    status.textContent = 'decoding ' + block.setting + ' (' + block.variant + ') \u2026';
    status.className = 'status';
    var A;
    try { A = await decode(block); } catch (e) { status.textContent = 'Could not decode the per-query data: ' + e.message; status.className = 'status error'; return; }
    if (token !== state.token) return;
    renderBanner(block);
    renderMeta();
    renderAspect(A, block);
    renderZ(A);
    renderMedia();
    renderTopk(A);
    selectItem(0, false);
    renderPairs(A, block);
    root.setAttribute('data-setting', block.setting);
    root.setAttribute('data-variant', block.variant);
    root.setAttribute('data-query', String(queries[state.q]));
    status.textContent = '';
  }

  // ---- keyboard: the dossier's keys, for this query's items --------------------------------
  // j / k: next / previous item (the rows with a clip, else every row); a: A/B (the query,
  // then the selected item); t: switch between the query and the item at the same point of
  // the attributed window; space: play / pause; n / p: next / previous query. Only while the
  // per-query view is on screen (or holds the focus), never while typing in a field.
  var sel = { index: -1 };
  function navRows() {
    var body = byId('qv-topk').tBodies[0];
    var rows = Array.prototype.slice.call(body.querySelectorAll('tr.qv-item'));
    return rows.length ? rows : Array.prototype.slice.call(body.querySelectorAll('tr[data-rank]'));
  }
  function selectItem(i, focus) {
    var rows = navRows();
    Array.prototype.forEach.call(byId('qv-topk').tBodies[0].rows, function (tr) { tr.classList.remove('qv-selected'); tr.removeAttribute('aria-current'); });
    if (!rows.length) { sel.index = -1; root.removeAttribute('data-selected'); root.removeAttribute('data-selected-track'); return; }
    sel.index = Math.max(0, Math.min(rows.length - 1, i));
    var tr = rows[sel.index];
    tr.classList.add('qv-selected');
    tr.setAttribute('aria-current', 'true');
    root.setAttribute('data-selected', String(sel.index));
    root.setAttribute('data-selected-track', tr.getAttribute('data-track') || '');
    say('item ' + (sel.index + 1) + ' of ' + rows.length + ': ' + (tr.getAttribute('data-track') || '') + ' selected');
    if (focus) { tr.focus({ preventScroll: true }); tr.scrollIntoView({ block: 'nearest' }); }
  }
  function selectedAudio() { var tr = navRows()[sel.index]; return tr ? tr.querySelector('audio') : null; }
  function say(text) { status.textContent = text; status.className = 'status'; }
  function startAt(a, t) { try { a.currentTime = Math.max(0, t); } catch (e) { /* not seekable yet */ } }
  function windowOf(a) { return (a.getAttribute('data-window') || '0,0').split(',').map(Number); }
  function playIt(a, tag) {
    root.setAttribute('data-played', (root.getAttribute('data-played') || '') + tag + ',');
    var p = a.play(); if (p && p.catch) p.catch(function () { /* the user can press play */ });
  }
  function toggle(item) {
    var qa = byId('qv-query-audio');
    if (!qa || !item) return;
    var from = !qa.paused ? qa : item, to = from === qa ? item : qa;
    var wf = windowOf(from), wt = windowOf(to);
    var rel = Math.max(0, from.currentTime - wf[0]);
    startAt(to, Math.min(wt[0] + rel, Math.max(0, (to.duration || Infinity) - 0.05)));
    playIt(to, to === qa ? 'query' : 'item');
  }
  function playPause() {
    var playing = Array.prototype.filter.call(root.querySelectorAll('audio'), function (a) { return !a.paused; });
    if (playing.length) { playing.forEach(function (a) { a.pause(); }); return; }
    var a = selectedAudio() || byId('qv-query-audio');
    if (a) playIt(a, a.id === 'qv-query-audio' ? 'query' : 'item');
  }
  function typing(t) {
    if (!t || !t.tagName) return false;
    return t.tagName === 'INPUT' || t.tagName === 'SELECT' || t.tagName === 'TEXTAREA' || t.isContentEditable;
  }
  function onScreen() {
    if (root.contains(document.activeElement)) return true;
    var r = root.getBoundingClientRect();
    return r.bottom > 0 && r.top < (window.innerHeight || document.documentElement.clientHeight);
  }
  function stepQuery(d) {
    var q = state.q + d;
    if (q < 0 || q >= T) return;
    state.q = q; syncList(); render();
  }
  var keysBox = byId('qv-shortcuts');  // single-key shortcuts can be turned off (remembered)
  if (keysBox) {
    try { if (window.localStorage && localStorage.getItem('aria-report-keys') === 'off') keysBox.checked = false; } catch (e) { /* storage may be off */ }
    keysBox.addEventListener('change', function () {
      try { if (window.localStorage) localStorage.setItem('aria-report-keys', keysBox.checked ? 'on' : 'off'); } catch (e) { /* storage may be off */ }
      say('single-key shortcuts ' + (keysBox.checked ? 'on' : 'off'));
    });
  }
  document.addEventListener('keydown', function (ev) {
    if (ev.ctrlKey || ev.metaKey || ev.altKey || ev.defaultPrevented) return;
    if (keysBox && !keysBox.checked) return;
    var t = ev.target;
    if (typing(t) || !onScreen()) return;
    var k = ev.key, tag = t && t.tagName;
    if (k === 'j') selectItem(sel.index + 1, true);
    else if (k === 'k') selectItem(sel.index - 1, true);
    else if (k === 'a' || k === 't') {
      var item = selectedAudio();
      if (!byId('qv-query-audio')) say('The query has no clip to play.');
      else if (!item) say('The selected item has no clip to play.');
      else if (k === 'a') abPlay(item);
      else toggle(item);
    } else if (k === ' ' && tag !== 'AUDIO' && tag !== 'BUTTON') playPause();
    else if (k === 'n') stepQuery(1);
    else if (k === 'p') stepQuery(-1);
    else return;
    ev.preventDefault();
  });

  fillVariants();
  fillList();
  render();
})();
