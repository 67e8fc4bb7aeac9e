// ebb's dashboard: reads the public JSON API once a second and draws what
// is hot. Plain JavaScript, no framework and nothing fetched from anywhere
// but this server, so it works on machines without a network. Everything
// it shows comes from documented routes (docs/openapi.yaml): it doubles as
// an example client.
'use strict';

(() => {
  const POLL_MS = 1000;           // the live parts
  const HISTORY_POLL_MS = 10000;  // the server snapshots every 10 s by default
  const HISTORY_RETRY_MS = 2000;  // sooner while there is nothing to draw yet
  const HISTORY_SPAN_S = 3600;    // the chart shows the last hour
  const MAX_K = 100;

  const $ = (id) => document.getElementById(id);
  const page = new URLSearchParams(location.search);

  // A token in the address (?access_token=, for servers run with
  // --auth-reads) is kept for this tab only and taken out of the address
  // bar, so it is not bookmarked or shared by accident.
  let token = page.get('access_token') || sessionStorage.getItem('ebb-token') || '';
  if (page.has('access_token')) {
    sessionStorage.setItem('ebb-token', token);
    page.delete('access_token');
    history.replaceState(null, '', `${location.pathname}${page.size ? `?${page}` : ''}`);
  }

  const state = {
    namespaces: [],
    ns: page.get('namespace'),  // the chosen namespace's name
    view: page.has('half_life') ? { kind: 'half_life', name: page.get('half_life') }
      : page.has('window') ? { kind: 'window', name: page.get('window') } : null,
    // A link naming both: the half-life if the namespace keeps it, else the window.
    altView: page.has('half_life') && page.has('window') ? { kind: 'window', name: page.get('window') } : null,
    k: clampK(page.get('k')),
    item: page.get('item'),
    paused: false,
    updates: 0,
    seen: new Map(),         // namespace -> {events, at}: for events/s
    rates: new Map(),        // namespace -> events/s over the last poll
    historyKey: '',          // what the chart shows, and when it was read
    historyAt: 0,
    clock: { ns: null, offset: 0 },  // a namespace's "now" (its as_of) - this device's clock
    warned: '',              // a deep link that did not resolve, said once
  };

  // ---- the API --------------------------------------------------------

  class ApiError extends Error {
    constructor(status, code, message) {
      super(message);
      this.status = status;
      this.code = code;
    }
  }

  async function api(path, params) {
    const url = params ? `${path}?${new URLSearchParams(params)}` : path;
    const headers = { Accept: 'application/json' };
    if (token) headers.Authorization = `Bearer ${token}`;
    let res;
    try {
      res = await fetch(url, { headers, cache: 'no-store' });
    } catch (e) {
      throw new ApiError(0, 'unreachable', 'the server does not answer');
    }
    let body = null;
    try {
      body = await res.json();
    } catch (e) {
      body = null;
    }
    if (!res.ok) {
      const err = body && body.error;
      throw new ApiError(res.status, err ? err.code : `http_${res.status}`, err ? err.message : res.statusText);
    }
    return body;
  }

  function viewParams(view) {
    return view.kind === 'window' ? { window: view.name } : { half_life: view.name };
  }

  // ---- formatting -----------------------------------------------------

  const numberFormats = [0, 1, 2, 3].map((d) => new Intl.NumberFormat('en-US', { maximumFractionDigits: d }));
  // From ten billion on, "12.35B" / "3,000T": the columns keep their width.
  const compactFormat = new Intl.NumberFormat('en-US', { notation: 'compact', maximumSignificantDigits: 4 });

  function fmt(x) {
    if (x === null || x === undefined || !Number.isFinite(x)) return '\u2014';
    const a = Math.abs(x);
    if (a >= 1e10) return compactFormat.format(x);
    return numberFormats[a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3].format(x);
  }

  function fmtBytes(n) {
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) {
      n /= 1024;
      i += 1;
    }
    return `${fmt(n)} ${units[i]}`;
  }

  // A time of day; with its date when that is not today's (an event-clock
  // namespace replaying old data lives in its own past).
  function fmtClock(t) {
    const d = new Date(t * 1000);
    const time = d.toLocaleTimeString('en-GB', { hour12: false });
    if (Math.abs(t * 1000 - Date.now()) < 12 * 3600 * 1000) return time;
    return `${d.toISOString().slice(0, 10)} ${time}`;
  }

  function fmtAge(seconds) {
    if (seconds < 60) return `${Math.max(0, Math.round(seconds))} s`;
    if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
    return `${fmt(seconds / 3600)} h`;
  }

  function viewLabel(view) {
    if (view.kind === 'half_life') return `half-life ${view.name}`;
    return view.name === 'all' ? 'all time' : `last ${view.name}`;
  }

  // A positive whole k, at most MAX_K ("1e9" is 1e9, so 100; "abc", "-1": none).
  function clampK(raw) {
    const k = raw === null || raw === '' ? NaN : Number(raw);
    return Number.isFinite(k) && k >= 1 ? Math.min(Math.floor(k), MAX_K) : null;
  }

  // ---- what is chosen -------------------------------------------------

  function viewsOf(ns) {
    const views = (ns.windows || []).map((name) => ({ kind: 'window', name }));
    return views.concat((ns.half_lives || []).map((name) => ({ kind: 'half_life', name })));
  }

  // "5m", "300s", "1.5h" -> seconds ("all" -> Infinity); NaN if not a duration.
  function seconds(name) {
    if (name === 'all') return Infinity;
    const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d|w)$/.exec(name);
    if (!m) return NaN;
    return Number(m[1]) * { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400, w: 604800 }[m[2]];
  }

  // The same view, however its length is written (a link's half_life=300s
  // is the namespace's "5m").
  function sameView(a, b) {
    return !!(a && b && a.kind === b.kind && (a.name === b.name || seconds(a.name) === seconds(b.name)));
  }

  function current() {
    return state.namespaces.find((n) => n.name === state.ns) || null;
  }

  // The page opens on the busiest namespace and its first view; a link's
  // namespace and view win when they exist (else the page says so once).
  function resolveChoice() {
    if (state.namespaces.length === 0) return;  // a linked namespace may come
    if (!current()) {
      if (state.ns !== null && state.warned !== `ns:${state.ns}`) {
        state.warned = `ns:${state.ns}`;
        banner(`There is no namespace '${state.ns}': showing the busiest one instead.`);
      }
      const busiest = state.namespaces.reduce((a, b) => (b.stats.events > a.stats.events ? b : a));
      state.ns = busiest.name;
      state.item = null;
      state.view = null;  // the linked view was the missing namespace's: no second warning
      state.altView = null;
    }
    const views = viewsOf(current());
    const match = views.find((v) => sameView(v, state.view)) || views.find((v) => sameView(v, state.altView));
    state.altView = null;
    if (match) {
      state.view = match;  // the namespace's own spelling
    } else {
      if (state.view && state.warned !== `view:${state.ns}:${state.view.name}`) {
        state.warned = `view:${state.ns}:${state.view.name}`;
        banner(`Namespace '${state.ns}' keeps no view '${state.view.name}': showing its first view.`);
      }
      state.view = views[0] || null;
    }
    if (state.k === null) state.k = Math.min(current().k || 20, 20);
    syncAddress();
  }

  function syncAddress() {
    const q = new URLSearchParams();
    if (state.ns !== null) q.set('namespace', state.ns);
    if (state.view) q.set(state.view.kind, state.view.name);
    if (state.k !== null) q.set('k', String(state.k));
    if (state.item) q.set('item', state.item);
    const next = `${location.pathname}?${q}`;
    if (next !== `${location.pathname}${location.search}`) history.replaceState(null, '', next);
  }

  // A choice made on the page (namespace, view, k, item): applied and
  // shown at once, without waiting for the next poll.
  function choose(change) {
    if ('item' in change && change.item !== state.item) state.historyKey = '';  // redrawn now
    Object.assign(state, change);
    if (!state.item) clearHistory();  // not the old item's chart until the list loads
    banner('');
    resolveChoice();
    renderNamespaces();
    renderViews();
    refreshNow(true);
  }

  // ---- status and messages -------------------------------------------

  function setStatus(kind, text) {
    const el = $('status');
    el.dataset.state = kind;
    el.textContent = text;
  }

  function banner(text) {
    const el = $('banner');
    el.textContent = text;
    el.hidden = !text;
  }

  // ---- namespaces -----------------------------------------------------

  function measureRates(now) {
    for (const ns of state.namespaces) {
      const before = state.seen.get(ns.name);
      if (before && now > before.at) {
        state.rates.set(ns.name, Math.max(0, (ns.stats.events - before.events) / (now - before.at)));
      }
      state.seen.set(ns.name, { events: ns.stats.events, at: now });
    }
  }

  function renderNamespaces() {
    const list = $('namespaces');
    const names = state.namespaces.map((n) => n.name);
    // Rows are rebuilt only when the set of namespaces changes; otherwise
    // updated in place, so focus and scroll stay where they were.
    if (list.dataset.names !== JSON.stringify(names)) {
      list.dataset.names = JSON.stringify(names);
      const focused = list.contains(document.activeElement) ? document.activeElement.dataset.name : undefined;
      queueMicrotask(() => {  // focus stays on the namespace it was on, if it is still there
        const again = focused === undefined ? null : list.querySelector(`button[data-name="${CSS.escape(focused)}"]`);
        if (again) again.focus();
      });
      list.replaceChildren(...state.namespaces.map((ns) => {
        const li = document.createElement('li');
        const button = document.createElement('button');
        button.type = 'button';
        button.className = 'namespace';
        button.dataset.name = ns.name;
        button.innerHTML = '<span class="ns-name"></span><span class="ns-stats"></span>';
        button.querySelector('.ns-name').textContent = ns.name;
        button.addEventListener('click', () => choose({ ns: ns.name, view: null, item: null, k: null }));
        li.append(button);
        return li;
      }));
    }
    for (const ns of state.namespaces) {
      const button = list.querySelector(`button[data-name="${CSS.escape(ns.name)}"]`);
      if (!button) continue;
      const rate = state.rates.get(ns.name);
      const parts = [`${fmt(ns.stats.events)} ${ns.stats.events === 1 ? 'event' : 'events'}`];
      if (rate !== undefined) parts.push(`${fmt(rate)}/s`);
      parts.push(fmtBytes(ns.stats.memory_bytes));
      if (ns.counting === 'exact') parts.push('exact');
      button.querySelector('.ns-stats').textContent = parts.join(' \u00b7 ');
      button.setAttribute('aria-current', ns.name === state.ns ? 'true' : 'false');
    }
    $('namespace-count').textContent = state.namespaces.length ? `(${state.namespaces.length})` : '';
    $('namespaces-empty').hidden = state.namespaces.length > 0;
  }

  // ---- views ----------------------------------------------------------

  function renderViews() {
    const ns = current();
    const box = $('views');
    const views = ns ? viewsOf(ns) : [];
    const key = JSON.stringify([ns && ns.name, views]);
    if (box.dataset.key !== key) {
      box.dataset.key = key;
      box.replaceChildren(...views.map((view) => {
        const tab = document.createElement('button');
        tab.type = 'button';
        tab.setAttribute('role', 'tab');
        tab.setAttribute('aria-controls', 'top-list');
        tab.dataset.kind = view.kind;
        tab.dataset.name = view.name;
        tab.textContent = viewLabel(view);
        tab.addEventListener('click', () => choose({ view }));
        tab.addEventListener('keydown', (e) => {
          if (e.key === 'ArrowRight' || e.key === 'ArrowLeft') {
            e.preventDefault();
            stepView(e.key === 'ArrowRight' ? 1 : -1, true);
          } else if (e.key === 'Home' || e.key === 'End') {
            e.preventDefault();
            const all = viewsOf(current());
            const to = e.key === 'Home' ? all[0] : all[all.length - 1];
            stepView(all.indexOf(to) - all.findIndex((v) => sameView(v, state.view)), true);
          }
        });
        return tab;
      }));
    }
    for (const tab of box.children) {
      const selected = sameView({ kind: tab.dataset.kind, name: tab.dataset.name }, state.view);
      tab.setAttribute('aria-selected', selected ? 'true' : 'false');
      tab.tabIndex = selected ? 0 : -1;
    }
    $('view-title').textContent = ns ? ns.name : 'Top items';
    const k = String(state.k || 20);
    const select = $('k');
    if (![...select.options].some((o) => o.value === k)) {
      const option = new Option(k, k);  // a linked k that is not one of the choices
      const after = [...select.options].find((o) => Number(o.value) > Number(k));
      select.add(option, after || null);
    }
    select.value = k;
  }

  function stepView(step, focus) {
    const ns = current();
    if (!ns) return;
    const views = viewsOf(ns);
    const at = views.findIndex((v) => sameView(v, state.view));
    const next = views[(at + step + views.length) % views.length];
    if (!next) return;
    choose({ view: next });
    if (focus) {
      const tab = $('views').querySelector(`[data-kind="${next.kind}"][data-name="${CSS.escape(next.name)}"]`);
      if (tab) tab.focus();
    }
  }

  // ---- the top list ---------------------------------------------------

  // k rows always exist (empty ones hold their place), so the list keeps
  // its height while items come and go: nothing below it jumps.
  function topRows(k) {
    const list = $('top-list');
    if (list.children.length !== k) {
      list.replaceChildren(...Array.from({ length: k }, (_, i) => {
        const li = document.createElement('li');
        li.className = 'row empty-row';
        li.setAttribute('aria-hidden', 'true');
        li.innerHTML = '<span class="rank"></span><button type="button" class="item-id" tabindex="-1"></button>'
          + '<span class="meter" aria-hidden="true"><span class="range"></span><span class="fill"></span></span>'
          + '<span class="count"></span><span class="bounds"></span>';
        li.querySelector('.rank').textContent = String(i + 1);
        li.querySelector('.item-id').addEventListener('click', () => {
          if (li.dataset.item !== undefined) choose({ item: li.dataset.item });
        });
        return li;
      }));
    }
    return list.children;
  }

  function renderTop(answer) {
    const items = answer.items || [];
    const rows = topRows(state.k);
    const scale = Math.max(1e-12, ...items.map((it) => it.upper_bound));
    for (let i = 0; i < rows.length; i += 1) {
      const row = rows[i];
      const it = items[i];
      const id = row.querySelector('.item-id');
      if (!it) {
        row.className = 'row empty-row';
        row.setAttribute('aria-hidden', 'true');  // a placeholder, not a row to announce
        delete row.dataset.item;
        id.textContent = '';
        id.removeAttribute('title');
        id.disabled = true;
        id.tabIndex = -1;
        id.removeAttribute('aria-label');
        row.querySelector('.count').textContent = '';
        row.querySelector('.bounds').textContent = '';
        row.querySelector('.fill').style.width = '0';
        row.querySelector('.range').hidden = true;
        continue;
      }
      row.className = it.item_id === state.item ? 'row chosen' : 'row';
      row.removeAttribute('aria-hidden');
      row.dataset.item = it.item_id;
      id.disabled = false;
      id.textContent = it.item_id;
      id.title = it.item_id;
      id.tabIndex = 0;
      const exact = it.lower_bound === it.upper_bound;
      const bounds = exact ? 'exact' : `[${fmt(it.lower_bound)}, ${fmt(it.upper_bound)}]`;
      id.setAttribute('aria-label', `${it.rank}. ${it.item_id}: ${fmt(it.estimated_count)}, ${exact ? 'exact' : `between ${bounds}`}; show its history`);
      row.querySelector('.count').textContent = fmt(it.estimated_count);
      row.querySelector('.bounds').textContent = bounds;
      row.querySelector('.fill').style.width = `${(100 * it.estimated_count) / scale}%`;
      const lo = (100 * it.lower_bound) / scale;
      const hi = (100 * it.upper_bound) / scale;
      const range = row.querySelector('.range');
      range.hidden = exact;  // an exact count has no interval to draw
      range.style.cssText = `left:${lo}%;width:${Math.max(0, hi - lo)}%`;
    }
    $('top-empty').hidden = items.length > 0;
  }

  function summarise(answer) {
    const parts = [viewLabel(state.view)];
    if (state.view.kind === 'half_life') parts.push('decayed counts');
    parts.push(`total ${fmt(answer.total)}`);
    const acc = answer.accuracy || {};
    if (acc.type === 'exact') {
      parts.push('exact counts');
    } else if (acc.type === 'count_min_sketch') {
      parts.push(`error \u2264 ${fmt(acc.max_error)} at ${fmt(100 * acc.confidence)}% confidence`);
      if (acc.unlisted_upper_bound !== undefined) parts.push(`any unlisted item \u2264 ${fmt(acc.unlisted_upper_bound)}`);
    }
    if (answer.as_of) parts.push(`as of ${fmtClock(answer.as_of)}`);
    return parts.join(' \u00b7 ');
  }

  // The namespace's time now, from its last answer's as_of: history is asked
  // for in the server's clock (a phone whose clock is off would ask for the
  // wrong hour), or in event time for an event-clock namespace.
  function namespaceClock(ns) {
    return Date.now() / 1000 + (state.clock.ns === ns.name ? state.clock.offset : 0);
  }

  async function loadTop(ns, view) {
    const k = state.k;
    try {
      const answer = await api('/top-k', { namespace: ns.name, k: String(k), ...viewParams(view) });
      if (Number.isFinite(answer.as_of)) state.clock = { ns: ns.name, offset: answer.as_of - Date.now() / 1000 };
      if (!stillChosen(ns, view, k)) return;
      renderTop(answer);
      $('view-summary').textContent = summarise(answer);
    } catch (e) {
      if (e.status === 401 || e.status === 0) throw e;
      if (!stillChosen(ns, view, k)) return;
      renderTop({ items: [] });
      $('view-summary').textContent = `Cannot read this view: ${e.message}`;
    }
  }

  function stillChosen(ns, view, k) {
    return state.ns === ns.name && sameView(state.view, view) && (k === undefined || state.k === k);
  }

  // ---- history --------------------------------------------------------

  const SVG = 'http://www.w3.org/2000/svg';

  function svg(tag, attrs) {
    const el = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
    return el;
  }

  function clearHistory() {
    const chart = $('history-chart');
    state.historyKey = '';
    $('history-title').textContent = 'History';
    $('history-hint').textContent = 'Choose an item in the top list to see its count over time.';
    chart.replaceChildren();
    chart.dataset.points = '0';
    chart.setAttribute('aria-label', 'No item chosen');
  }

  async function loadHistory(ns, view, force) {
    const chart = $('history-chart');
    if (!state.item) {
      clearHistory();
      return;
    }
    const key = JSON.stringify([ns.name, view, state.item]);
    const now = Date.now();
    if (!force && key === state.historyKey && now - state.historyAt < HISTORY_POLL_MS) return;
    state.historyKey = key;
    state.historyAt = now;
    $('history-title').textContent = `History of ${state.item}`;
    const to = namespaceClock(ns);
    try {
      const answer = await api('/history', {
        namespace: ns.name, item_id: state.item, from: String(to - HISTORY_SPAN_S), to: String(to), ...viewParams(view),
      });
      if (state.historyKey !== key) return;
      const points = answer.points || [];
      drawHistory(points, to - HISTORY_SPAN_S, to, answer.truncated === true);
      if (points.length === 0) state.historyAt = now - HISTORY_POLL_MS + HISTORY_RETRY_MS;
    } catch (e) {
      if (e.status === 401 || e.status === 0) throw e;
      if (state.historyKey !== key) return;
      state.historyAt = now - HISTORY_POLL_MS + HISTORY_RETRY_MS;
      chart.replaceChildren();
      chart.dataset.points = '0';
      $('history-hint').textContent = `No history: ${e.message}`;
    }
  }

  function drawHistory(points, from, to, truncated) {
    const chart = $('history-chart');
    chart.dataset.points = String(points.length);
    if (points.length === 0) {
      chart.replaceChildren();
      chart.setAttribute('aria-label', 'No snapshots yet');
      $('history-hint').textContent = `No snapshot of ${state.item} in ${viewLabel(state.view)} during the last hour yet: `
        + 'the server records every view\'s top K every --history-interval (10 s by default).';
      return;
    }
    // Drawn at the chart's own size (text keeps its shape); the time axis
    // starts at the first snapshot when there is less than an hour of them.
    const W = Math.max(240, Math.round(chart.clientWidth || 600));
    const H = Math.max(120, Math.round(chart.clientHeight || 200));
    const pad = { l: 56, r: 12, t: 10, b: 24 };
    if (points.length > 1 && points[0].t > from) from = Math.max(from, points[0].t - 0.05 * (to - points[0].t));
    else if (points.length === 1) from = Math.max(from, points[0].t - 60);
    // A snapshot where the item was not listed has no estimate: only the
    // most it can have been (the list's lowest count) and what it surely had.
    const est = (p) => (Number.isFinite(p.estimated_count) ? p.estimated_count : null);
    const lo = (p) => (Number.isFinite(p.lower_bound) ? p.lower_bound : 0);
    const hi = (p) => (Number.isFinite(p.upper_bound) ? p.upper_bound : est(p) ?? lo(p));
    const top = Math.max(...points.map(hi)) || 1;
    const x = (t) => pad.l + ((t - from) / (to - from)) * (W - pad.l - pad.r);
    const y = (v) => H - pad.b - (v / top) * (H - pad.t - pad.b);
    const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, width: W, height: H, class: 'history-svg' });
    for (const frac of [0, 0.5, 1]) {
      const v = top * frac;
      root.append(svg('line', { x1: pad.l, x2: W - pad.r, y1: y(v), y2: y(v), class: 'gridline' }));
      const label = svg('text', { x: pad.l - 6, y: y(v) + 4, class: 'axis', 'text-anchor': 'end' });
      label.textContent = fmt(v);
      root.append(label);
    }
    for (const [t, anchor] of [[from, 'start'], [to, 'end']]) {
      const label = svg('text', { x: x(t), y: H - 6, class: 'axis', 'text-anchor': anchor });
      label.textContent = fmtClock(t);
      root.append(label);
    }
    // The band between the bounds, then the estimate over it.
    const upper = points.map((p) => `${x(p.t)},${y(hi(p))}`);
    const lower = points.slice().reverse().map((p) => `${x(p.t)},${y(lo(p))}`);
    root.append(svg('polygon', { points: upper.concat(lower).join(' '), class: 'band' }));
    // The estimate as a line, broken where there was none.
    let run = [];
    const flush = () => {
      if (run.length > 1) root.append(svg('polyline', { points: run.join(' '), class: 'line' }));
      run = [];
    };
    for (const p of points) {
      if (est(p) === null) flush();
      else run.push(`${x(p.t)},${y(est(p))}`);
    }
    flush();
    for (const p of points) {
      const listed = est(p) !== null && p.rank !== null;
      root.append(svg('circle', { cx: x(p.t), cy: y(est(p) ?? hi(p)), r: 2.5, class: listed ? 'dot' : 'dot unlisted' }));
    }
    chart.replaceChildren(root);
    const last = points[points.length - 1];
    const summary = `${points.length} snapshots; latest ${fmt(last.estimated_count)}`
      + `${last.rank === null ? ' (not listed)' : ` (rank ${last.rank})`} at ${fmtClock(last.t)}`;
    chart.setAttribute('aria-label', summary);
    $('history-hint').textContent = `${summary}${truncated ? ' (the server sent the first points only)' : ''}. `
      + 'The band is [lower, upper]; hollow points: not in the list then (drawn at the most it can have had).';
  }

  // ---- hot keys -------------------------------------------------------

  async function loadHot(ns) {
    const list = $('hot-keys');
    if (ns.hot_key_threshold === null || ns.hot_key_threshold === undefined) {
      list.replaceChildren();
      $('hot-summary').textContent = 'Detection is off for this namespace: set its hot_key_threshold (events/s) to turn it on.';
      return;
    }
    try {
      const answer = await api('/hot-keys', { namespace: ns.name });
      if (state.ns !== ns.name) return;
      $('hot-summary').textContent = `${answer.items.length} at or above ${fmt(answer.threshold)} events/s (half-life ${answer.half_life})`
        + (answer.complete === false ? '; more may be hot than are listed' : '');
      const now = answer.as_of;
      renderRows(list, answer.items, (it) => [
        ['name', it.item_id], ['value', `${fmt(it.rate)}/s`], ['note', `hot for ${fmtAge(now - it.since)}`]]);
    } catch (e) {
      if (e.status === 401 || e.status === 0) throw e;
      if (state.ns !== ns.name) return;
      list.replaceChildren();
      $('hot-summary').textContent = e.message;
    }
  }

  // ---- trending -------------------------------------------------------

  async function loadTrending(ns) {
    const list = $('trending');
    const halfLives = (ns.half_lives || []).length;
    if (halfLives < 2) {  // nothing to ask the server every second
      list.replaceChildren();
      $('trending-summary').textContent = `Trending compares a short and a long half-life; this namespace keeps ${halfLives}: `
        + 'create one with two, e.g. "half_lives": ["5m", "1h"].';
      return;
    }
    try {
      const answer = await api('/trending', { namespace: ns.name, k: '10' });
      if (state.ns !== ns.name) return;
      $('trending-summary').textContent = answer.items.length
        ? `rising fastest: the ${answer.short} rate against the ${answer.long} rate (score: standard deviations above the usual)`
        : `nothing rising yet (${answer.short} against ${answer.long}, at least ${fmt(answer.min_count)} counted)`;
      renderRows(list, answer.items, (it) => [
        ['name', it.item_id], ['value', `score ${fmt(it.score)}`],
        ['note', `${fmt(it.short_rate)}/s now, ${fmt(it.long_rate)}/s usually`]]);
    } catch (e) {
      if (e.status === 401 || e.status === 0) throw e;
      if (state.ns !== ns.name) return;
      list.replaceChildren();
      $('trending-summary').textContent = e.message;
    }
  }

  // Small lists (hot keys, trending): rows keyed by item, updated in place.
  function renderRows(list, items, cells) {
    const rows = items.map((it) => {
      let li = list.querySelector(`li[data-item="${CSS.escape(it.item_id)}"]`);
      if (!li) {
        li = document.createElement('li');
        li.dataset.item = it.item_id;
        li.dataset.born = String(Date.now());
        li.className = 'fresh';
        for (const [cls] of cells(it)) {
          const span = document.createElement('span');
          span.className = cls;
          li.append(span);
        }
      } else if (Date.now() - Number(li.dataset.born) > 2000) {
        li.className = '';  // the arrival's highlight has run its course
      }
      for (const [cls, text] of cells(it)) li.querySelector(`.${cls}`).textContent = text;
      return li;
    });
    list.replaceChildren(...rows);
  }

  // ---- the loop -------------------------------------------------------

  let timer = null;
  let running = false;
  let again = false;  // a round asked for while one ran
  let once = false;   // that round runs even while paused (a choice was made)

  // A round now (after the running one, if any). `evenIfPaused`: a choice
  // made while paused still shows what was chosen, once.
  function refreshNow(evenIfPaused) {
    once = once || !!evenIfPaused;
    if (running) {
      again = true;
      return;
    }
    clearTimeout(timer);
    tick();
  }

  async function tick() {
    running = true;
    const forced = once;
    once = false;
    try {
      if ((!state.paused || forced) && !document.hidden) {
        await refresh();
        state.updates += 1;
        document.body.dataset.updates = String(state.updates);
        if (!state.paused) setStatus('live', 'live');
        $('updated').textContent = `updated ${fmtClock(Date.now() / 1000)}`;
        $('auth').hidden = true;
      }
    } catch (e) {
      if (e.status === 401) {
        $('auth').hidden = false;
        setStatus('error', `needs a token: ${e.message}`);
      } else {
        setStatus('error', `offline: ${e.message}; retrying`);
      }
    } finally {
      running = false;
      if (again) {
        again = false;
        tick();
      } else {
        timer = setTimeout(tick, POLL_MS);
      }
    }
  }

  async function refresh() {
    const listing = await api('/namespaces');
    state.namespaces = listing.namespaces;
    measureRates(Date.now() / 1000);
    resolveChoice();
    renderNamespaces();
    renderViews();
    const ns = current();
    if (!ns || !state.view) {
      // Nothing to show (no namespace left, or one without views): every
      // panel says so rather than keep what an earlier one showed.
      renderTop({ items: [] });
      $('view-summary').textContent = ns ? 'This namespace keeps no view.' : '\u00a0';
      for (const id of ['hot-keys', 'trending']) $(id).replaceChildren();
      $('hot-summary').textContent = '\u00a0';
      $('trending-summary').textContent = '\u00a0';
      state.item = null;
      clearHistory();
      return;
    }
    const view = state.view;
    // History after the list: its as_of says what "now" is for this namespace.
    await Promise.all([loadTop(ns, view).then(() => loadHistory(ns, view, false)), loadHot(ns), loadTrending(ns)]);
  }

  // ---- wiring ---------------------------------------------------------

  $('pause').addEventListener('click', () => togglePause());

  function togglePause() {
    state.paused = !state.paused;
    $('pause').setAttribute('aria-pressed', String(state.paused));
    $('pause').textContent = state.paused ? 'Resume' : 'Pause';
    if (state.paused) setStatus('paused', 'paused');
    else refreshNow(false);
  }

  $('k').addEventListener('change', (e) => choose({ k: clampK(e.target.value) }));

  $('auth').addEventListener('submit', (e) => {
    e.preventDefault();
    token = $('auth-token').value.trim();
    sessionStorage.setItem('ebb-token', token);
    $('auth-token').value = '';
    refreshNow(true);
  });

  document.addEventListener('keydown', (e) => {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const target = e.target;
    if (target instanceof HTMLInputElement || target instanceof HTMLSelectElement) return;
    if (e.key === 'p') togglePause();
    else if (e.key === ']') stepView(1, false);
    else if (e.key === '[') stepView(-1, false);
  });

  document.addEventListener('visibilitychange', () => {
    if (!document.hidden) refreshNow(false);
  });

  topRows(state.k || 20);
  tick();
})();
