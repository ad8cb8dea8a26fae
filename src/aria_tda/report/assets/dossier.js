/* ARIA evidence dossier: item selection, A/B playback, channel selector, keyboard.
 * Everything is in this file; media are data: URIs. No network access. */
(function () {
  'use strict';
  var body = document.body;
  var items = Array.prototype.slice.call(document.querySelectorAll('#item-list li.item'));
  var query = document.getElementById('player-query');
  var select = document.getElementById('channel');
  var state = { index: items.length ? 0 : -1, channel: body.getAttribute('data-channel') || '', ab: null };
  var live = document.getElementById('announce');
  var keysBox = document.getElementById('shortcuts');
  function say(text) { if (live) { live.textContent = ''; live.textContent = text; } }
  function itemName(i) { var li = items[i]; return li ? ('item ' + (i + 1) + ' of ' + items.length + ', ' + (li.getAttribute('data-item') || '')) : ''; }
  function keysOn() { return !keysBox || keysBox.checked; }
  if (keysBox) {
    try { if (window.localStorage && localStorage.getItem('aria-dossier-keys') === 'off') keysBox.checked = false; } catch (e) { /* storage may be off */ }
    keysBox.addEventListener('change', function () {
      try { if (window.localStorage) localStorage.setItem('aria-dossier-keys', keysBox.checked ? 'on' : 'off'); } catch (e) { /* storage may be off */ }
      body.setAttribute('data-keys', keysBox.checked ? 'on' : 'off');
      say('single-key shortcuts ' + (keysBox.checked ? 'on' : 'off'));
    });
    body.setAttribute('data-keys', keysBox.checked ? 'on' : 'off');
  }
  var played = [];

  function player(i) { return document.getElementById('player-' + i); }
  function allPlayers() { return Array.prototype.slice.call(document.querySelectorAll('audio')); }
  function log(what) { played.push(what); body.setAttribute('data-played', played.join(',')); }
  function pauseAll(except) { allPlayers().forEach(function (a) { if (a !== except && !a.paused) a.pause(); }); }
  function play(a, tag) {
    if (!a) return;
    pauseAll(a);
    log(tag);
    var p = a.play();
    if (p && p.catch) p.catch(function () { /* the user can press play themselves */ });
  }
  // Every player: one at a time, and a record of what was started (for the A/B check).
  allPlayers().forEach(function (a) {
    a.addEventListener('play', function () { pauseAll(a); });
  });

  function select_(i, focus) {
    if (!items.length) return;
    state.index = Math.max(0, Math.min(items.length - 1, i));
    items.forEach(function (li, j) { li.classList.toggle('selected', j === state.index); li.setAttribute('aria-current', j === state.index ? 'true' : 'false'); });
    body.setAttribute('data-selected', String(state.index));
    say(itemName(state.index) + '; evidence: ' + state.channel);
    if (focus) { items[state.index].focus({ preventScroll: true }); items[state.index].scrollIntoView({ block: 'nearest' }); }
    showEvidence();
  }
  function showEvidence() {
    var ch = state.channel;
    Array.prototype.forEach.call(document.querySelectorAll('#evidence .aspect'), function (el) {
      el.hidden = !(el.getAttribute('data-channel') === ch && Number(el.getAttribute('data-index')) === state.index);
    });
    Array.prototype.forEach.call(document.querySelectorAll('#evidence .pairs'), function (el) {
      el.hidden = el.getAttribute('data-channel') !== ch;
    });
    Array.prototype.forEach.call(document.querySelectorAll('[data-channel]'), function (el) {
      if (el.tagName === 'LI' || el.tagName === 'TR') el.classList.toggle('current', el.getAttribute('data-channel') === ch);
    });
    body.setAttribute('data-channel', ch);
  }
  function setChannel(ch, quiet) { state.channel = ch; if (select) select.value = ch; showEvidence(); if (!quiet) say('evidence: ' + ch + ' for ' + itemName(state.index)); }

  // A/B: the query from the start of its window, then the item from the start of its window.
  function start(a) {
    var w = (a.getAttribute('data-window') || '0,0').split(',').map(Number);
    try { a.currentTime = Math.max(0, (w[0] || 0) - 0.5); } catch (e) { /* not seekable yet */ }
  }
  function ab(i) {
    var item = player(i);
    if (!query || !item) return;
    if (state.ab) { query.removeEventListener('ended', state.ab); state.ab = null; }
    var next = function () { query.removeEventListener('ended', next); state.ab = null; start(item); play(item, 'item-' + i); };
    state.ab = next;
    query.addEventListener('ended', next);
    start(query);
    play(query, 'query');
  }
  // Toggle: switch between the query and the item at the same point of the attributed window.
  function toggle(i) {
    var item = player(i);
    if (!query || !item) return;
    var from = !query.paused ? query : item, to = from === query ? item : query;
    var wf = (from.getAttribute('data-window') || '0,0').split(',').map(Number);
    var wt = (to.getAttribute('data-window') || '0,0').split(',').map(Number);
    var rel = Math.max(0, from.currentTime - wf[0]);
    try { to.currentTime = Math.min(Math.max(0, wt[0] + rel), Math.max(0, (to.duration || 0) - 0.05)); } catch (e) { /* not seekable yet */ }
    play(to, to === query ? 'query' : 'item-' + i);
  }
  function playPause() {
    var a = allPlayers().filter(function (x) { return !x.paused; })[0];
    if (a) { a.pause(); return; }
    play(player(state.index) || query, player(state.index) ? 'item-' + state.index : 'query');
  }

  Array.prototype.forEach.call(document.querySelectorAll('button.ab'), function (b) {
    b.addEventListener('click', function (ev) { ev.stopPropagation(); var i = Number(b.getAttribute('data-index')); select_(i); ab(i); });
  });
  Array.prototype.forEach.call(document.querySelectorAll('button.toggle'), function (b) {
    b.addEventListener('click', function (ev) { ev.stopPropagation(); var i = Number(b.getAttribute('data-index')); select_(i); toggle(i); });
  });
  items.forEach(function (li, j) {
    li.addEventListener('click', function () { select_(j); });
    li.addEventListener('keydown', function (ev) {
      if ((ev.key === 'Enter' || ev.key === ' ') && ev.target === li) { select_(j); ev.preventDefault(); }
    });
  });
  // Pictures open full size (a button around each; Escape or a second click closes it).
  Array.prototype.forEach.call(document.querySelectorAll('button.zoom'), function (b) {
    b.addEventListener('click', function (ev) {
      ev.stopPropagation();
      var open = b.classList.toggle('full');
      b.setAttribute('aria-expanded', open ? 'true' : 'false');
      say(open ? 'picture shown full size; Escape closes it' : 'picture closed');
    });
  });
  if (select) select.addEventListener('change', function () { setChannel(select.value); });

  var channels = select ? Array.prototype.map.call(select.options, function (o) { return o.value; }) : [];
  document.addEventListener('keydown', function (ev) {
    if (ev.key === 'Escape') {
      Array.prototype.forEach.call(document.querySelectorAll('button.zoom.full'), function (b) { b.classList.remove('full'); b.setAttribute('aria-expanded', 'false'); });
      return;
    }
    if (ev.ctrlKey || ev.metaKey || ev.altKey || !keysOn()) return;
    var t = ev.target && ev.target.tagName;
    if (t === 'INPUT' || t === 'SELECT' || t === 'TEXTAREA') return;
    var k = ev.key;
    if (k === 'j' || k === 'ArrowDown') { select_(state.index + 1, true); ev.preventDefault(); }
    else if (k === 'k' || k === 'ArrowUp') { select_(state.index - 1, true); ev.preventDefault(); }
    else if (k === 'a') { ab(state.index); ev.preventDefault(); }
    else if (k === 't') { toggle(state.index); ev.preventDefault(); }
    else if (k === ' ' && t !== 'AUDIO' && t !== 'BUTTON') { playPause(); ev.preventDefault(); }
    else if (/^[1-9]$/.test(k) && Number(k) <= channels.length) { setChannel(channels[Number(k) - 1]); ev.preventDefault(); }
  });

  setChannel(state.channel || channels[0] || '', true);
  if (items.length) {
    state.index = Math.max(0, state.index);
    items.forEach(function (li, j) { li.classList.toggle('selected', j === state.index); li.setAttribute('aria-current', j === state.index ? 'true' : 'false'); });
    body.setAttribute('data-selected', String(state.index));
  }
  showEvidence();
})();
