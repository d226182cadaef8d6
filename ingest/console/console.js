// tickdb console: Tables, Latest, Query and Chart panels over the server's HTTP API
// (GET /api/tables, /latest, /query, /bars, the /tail event stream, and /sql when
// serve has --sql). No build step, no dependency but the vendored uPlot.
(() => {
  'use strict';

  const $ = (id) => document.getElementById(id);
  const TOKEN_KEY = 'tickdb.token';
  let token = sessionStorage.getItem(TOKEN_KEY) || '';
  let tables = [];
  let afterToken = []; // what to run again once a token is given

  // Counters for the opt-in performance test (cmd/tickdb, TICKDB_CONSOLE_PERF):
  // when the Tables panel was first filled and the chart last drawn
  // (performance.now(), ms), and the live chart's frames, rows and the
  // time its frame callbacks took (total and worst, ms; uPlot's draw runs
  // in a microtask after the callback and is not in it).
  const perf = window.tickdbPerf = { tablesShown: 0, chartStart: 0, chartDrawn: 0, draws: 0, liveFrames: 0, liveRows: 0, liveMs: 0, liveMaxMs: 0 };

  class AuthError extends Error {}

  function status(msg, isError) {
    const el = $('status');
    el.textContent = msg || '';
    el.className = isError ? 'error' : 'muted';
  }

  function askToken(retry) {
    if (retry && !afterToken.includes(retry)) afterToken.push(retry);
    $('token-form').hidden = false;
    status('this server needs a token', true);
    $('token').focus();
  }

  $('token-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    token = $('token').value.trim();
    sessionStorage.setItem(TOKEN_KEY, token);
    $('token-form').hidden = true;
    status('');
    const again = afterToken;
    afterToken = [];
    again.forEach((fn) => fn());
  });

  // api fetches a guarded path with the token; a 401 asks for the token
  // and runs retry once it is given.
  async function api(path, retry) {
    const headers = token ? { Authorization: 'Bearer ' + token } : {};
    const resp = await fetch(path, { headers });
    if (resp.status === 401) {
      askToken(retry);
      throw new AuthError('unauthorized');
    }
    if (!resp.ok) {
      let msg = 'HTTP ' + resp.status;
      let body = null;
      try {
        body = await resp.json();
        if (body.message) msg = body.message;
        else if (body.error) msg = body.error; // GET /sql's errors
      } catch (_) { /* not JSON */ }
      const err = new Error(msg);
      err.body = body;
      throw err;
    }
    return resp;
  }

  const ndjson = (text) => text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));

  function fail(where, err) {
    if (err instanceof AuthError) return;
    status(where + ': ' + err.message, true);
  }

  // Times: ns since the epoch (numbers lose the last digits past 2^53,
  // which only the display rounds away) and RFC 3339.
  const fmtTime = (ns) => (ns === undefined || ns === null) ? '' : new Date(Math.floor(ns / 1e6)).toISOString();
  const fmtNum = (n) => (n === undefined || n === null) ? '' : Number(n).toLocaleString('en-US');
  function fmtBytes(n) {
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
    return (i ? n.toFixed(1) : n) + ' ' + u[i];
  }

  function cell(tr, text, num) {
    const td = document.createElement('td');
    td.textContent = text;
    if (num) td.className = 'num';
    tr.appendChild(td);
    return td;
  }

  // ---- Tables ----

  async function refreshTables() {
    let body;
    try {
      body = await (await api('/api/tables', refreshTables)).json();
    } catch (err) {
      fail('tables', err);
      return;
    }
    tables = body.tables;
    setSQL(body.sql === true);
    const tb = $('tables').tBodies[0];
    tb.replaceChildren();
    for (const t of tables) {
      const tr = document.createElement('tr');
      tr.dataset.table = t.name;
      cell(tr, t.name);
      cell(tr, t.schema.map((c) => c.name + ' ' + c.type).join(', '));
      cell(tr, fmtNum(t.rows - t.first), true).className = 'num rows';
      cell(tr, fmtTime(t.first_ts));
      cell(tr, fmtTime(t.last_ts));
      cell(tr, fmtNum(t.symbol_count), true);
      cell(tr, fmtBytes(t.bytes), true).title = 'allocated on disk; logical size ' + fmtBytes(t.logical_bytes) + ' (sparse files)';
      cell(tr, t.writer + (t.writer_pid ? ' (pid ' + t.writer_pid + ')' : ''));
      cell(tr, fmtNum(t.out_of_order), true);
      cell(tr, fmtNum(t.late), true);
      if (t.error) cell(tr, t.error).className = 'error';
      tb.appendChild(tr);
    }
    $('tables-updated').textContent = 'updated ' + new Date().toLocaleTimeString();
    if (!perf.tablesShown) perf.tablesShown = performance.now();
    for (const id of ['l-table', 'q-table', 'c-table']) fillTables($(id));
    fillSyms('q-table', 'q-syms');
    fillSyms('c-table', 'c-syms');
    downloadLinks();
  }

  function fillTables(sel) {
    const keep = sel.value;
    const names = tables.map((t) => t.name);
    if ([...sel.options].map((o) => o.value).join('\n') === names.join('\n')) return;
    sel.replaceChildren(...names.map((n) => new Option(n, n)));
    if (names.includes(keep)) sel.value = keep;
  }

  function fillSyms(tableSel, listID) {
    const t = tables.find((x) => x.name === $(tableSel).value);
    const list = $(listID);
    const syms = t ? t.symbols : [];
    if ([...list.options].map((o) => o.value).join('\n') === syms.join('\n')) return;
    list.replaceChildren(...syms.map((s) => new Option(s, s)));
  }
  $('q-table').addEventListener('change', () => fillSyms('q-table', 'q-syms'));
  $('c-table').addEventListener('change', () => fillSyms('c-table', 'c-syms'));

  // ---- Latest ----

  // latest holds the shown table's rows by symbol: each symbol's row (the
  // JSON object) and its <tr>; the live stream's rows wait in pending (the
  // newest per symbol) until the next animation frame applies them.
  const latest = { table: '', cols: [], key: 'sym', rows: new Map(), es: null, pending: new Map(), frame: 0 };

  function stopLatest() {
    if (latest.es) latest.es.close();
    latest.es = null;
    latest.pending = new Map();
    if (latest.frame) cancelAnimationFrame(latest.frame);
    latest.frame = 0;
  }

  function latestCells(tr, row) {
    const tds = tr.cells;
    latest.cols.forEach((c, i) => {
      const v = row[c] === undefined || row[c] === null ? '' : String(row[c]);
      if (tds[i].textContent !== v) tds[i].textContent = v;
    });
  }

  function latestRow(row) {
    const tr = document.createElement('tr');
    tr.dataset.sym = row[latest.key];
    for (const c of latest.cols) cell(tr, '', typeof row[c] === 'number');
    latestCells(tr, row);
    return tr;
  }

  // showLatest lists each symbol's last row (GET /latest), then follows the
  // table from the row count read before it: a row published meanwhile
  // comes again from the stream and is applied again, which changes nothing.
  async function showLatest() {
    stopLatest();
    const table = $('l-table').value;
    if (!table) return;
    await refreshTables();
    const t = tables.find((x) => x.name === table);
    const next = t ? t.rows : 0;
    let rows;
    try {
      rows = ndjson(await (await api('/latest?' + new URLSearchParams({ table, format: 'json' }), showLatest)).text());
    } catch (err) {
      fail('latest', err);
      return;
    }
    latest.table = table;
    latest.cols = t ? t.schema.map((c) => c.name) : (rows.length ? Object.keys(rows[0]) : []);
    const symCol = t && t.schema.find((c) => c.type === 'sym'); // the table's symbol: its first sym column
    latest.key = symCol ? symCol.name : 'sym';
    latest.rows = new Map();
    const hr = document.createElement('tr');
    for (const c of latest.cols) {
      const th = document.createElement('th');
      th.textContent = c;
      hr.appendChild(th);
    }
    const tb = $('latest').tBodies[0];
    $('latest').tHead.replaceChildren(hr);
    tb.replaceChildren(...rows.map((row) => {
      const tr = latestRow(row);
      latest.rows.set(row[latest.key], { row, tr });
      return tr;
    }));
    $('l-info').textContent = rows.length + ' symbols';
    status('');
    if (!symCol) return; // no symbols: GET /latest said so
    const p = new URLSearchParams({ table, from: String(next) });
    if (token) p.set('token', token);
    const es = new EventSource('/tail?' + p);
    latest.es = es;
    es.onopen = () => { $('l-info').textContent = latest.rows.size + ' symbols, live'; };
    es.onmessage = (ev) => {
      const row = JSON.parse(ev.data);
      const sym = row[latest.key];
      const prev = latest.pending.get(sym);
      if (!prev || row.ts >= prev.ts) latest.pending.set(sym, row);
      if (!latest.frame) latest.frame = requestAnimationFrame(applyLatest);
    };
    es.onerror = () => {
      $('l-info').textContent = latest.rows.size + ' symbols, ' + (es.readyState === EventSource.CLOSED ? 'live stream closed' : 'reconnecting');
    };
  }

  // applyLatest applies the newest pending row of each symbol: a row
  // older than the shown one (ts, RFC 3339 with nine digits, compares as
  // text) is a late row and not the last price.
  function applyLatest() {
    latest.frame = 0;
    const pending = latest.pending;
    latest.pending = new Map();
    const tb = $('latest').tBodies[0];
    for (const [sym, row] of pending) {
      const cur = latest.rows.get(sym);
      if (cur) {
        if (row.ts < cur.row.ts) continue;
        cur.row = row;
        latestCells(cur.tr, row);
        continue;
      }
      // A new symbol: in name order, as GET /latest lists them.
      const tr = latestRow(row);
      latest.rows.set(sym, { row, tr });
      const after = [...tb.rows].find((r) => r.dataset.sym > sym);
      tb.insertBefore(tr, after || null);
      $('l-info').textContent = latest.rows.size + ' symbols, live';
    }
  }

  $('latest-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    showLatest();
  });
  $('l-table').addEventListener('change', showLatest);

  // ---- Query ----

  // A page starts at from (a row's ts) after skip rows with that ts, so
  // that paging is exact when many rows share a ts.
  let pages = [];
  let page = 0;

  function queryParams(extra) {
    const p = new URLSearchParams({ table: $('q-table').value });
    for (const k of ['sym', 'from', 'to']) {
      const v = $('q-' + k).value.trim();
      if (v) p.set(k, v);
    }
    for (const [k, v] of Object.entries(extra || {})) p.set(k, v);
    return p;
  }

  async function runPage() {
    const limit = Math.max(1, parseInt($('q-limit').value, 10) || 100);
    const { from, skip } = pages[page];
    const p = queryParams({ limit: String(limit + skip + 1), format: 'json' });
    if (from !== null) p.set('from', from);
    let rows;
    try {
      rows = ndjson(await (await api('/query?' + p, runPage)).text());
    } catch (err) {
      fail('query', err);
      $('q-info').textContent = '';
      return;
    }
    rows = rows.slice(skip);
    const more = rows.length > limit;
    rows = rows.slice(0, limit);
    renderRows(rows);
    $('q-info').textContent = rows.length ? 'page ' + (page + 1) + ': ' + rows.length + ' rows' : 'no rows';
    $('q-prev').disabled = page === 0;
    $('q-next').disabled = !more;
    if (more && pages.length === page + 1) {
      const last = rows[rows.length - 1].ts;
      let same = rows.filter((r) => r.ts === last).length;
      if (from === last) same += skip; // the whole page shares one ts
      pages.push({ from: last, skip: same });
    }
    status('');
  }

  function renderRows(rows) {
    const t = $('q-result');
    const cols = rows.length ? Object.keys(rows[0]) : [];
    const hr = document.createElement('tr');
    for (const c of cols) {
      const th = document.createElement('th');
      th.textContent = c;
      hr.appendChild(th);
    }
    t.tHead.replaceChildren(hr);
    t.tBodies[0].replaceChildren(...rows.map((r) => {
      const tr = document.createElement('tr');
      for (const c of cols) cell(tr, r[c] === null ? '' : String(r[c]), typeof r[c] === 'number');
      return tr;
    }));
  }

  $('query-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    pages = [{ from: null, skip: 0 }];
    page = 0;
    downloadLinks();
    runPage();
  });
  $('q-next').addEventListener('click', () => { page++; runPage(); });
  $('q-prev').addEventListener('click', () => { page = Math.max(0, page - 1); runPage(); });

  // Downloads go through fetch, so that they carry the token too; each
  // link's href is the download's URL (the form's query, its limit).
  const EXT = { csv: '.csv', json: '.ndjson', parquet: '.parquet' };
  function downloadURL(format) {
    const p = queryParams({ format });
    const limit = $('q-limit').value.trim();
    if (limit) p.set('limit', limit);
    return '/query?' + p;
  }
  function downloadLinks() {
    for (const f of Object.keys(EXT)) $('q-' + f).href = downloadURL(f);
  }
  $('query-form').addEventListener('input', downloadLinks);
  $('query-form').addEventListener('change', downloadLinks);

  async function download(url, name) {
    try {
      const blob = await (await api(url)).blob();
      const a = document.createElement('a');
      a.href = URL.createObjectURL(blob);
      a.download = name;
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(a.href), 10000);
    } catch (err) {
      fail('download', err);
    }
  }
  for (const f of Object.keys(EXT)) {
    $('q-' + f).addEventListener('click', (ev) => { ev.preventDefault(); download(downloadURL(f), $('q-table').value + EXT[f]); });
  }

  // ---- Query: SQL mode ----

  // With serve --sql, GET /api/tables says "sql": true and the panel also
  // takes SQL (GET /sql, passed to tickdb-sql), shown in the same results
  // table; the radio buttons switch between it and the form.
  const SQL_LIMIT = 10000;
  let sqlOn = false;

  function setSQL(on) {
    if (on === sqlOn) {
      if (on && !$('q-sql').value && tables.length) prefillSQL();
      return;
    }
    sqlOn = on;
    $('q-modes').hidden = !on;
    if (on && !$('q-sql').value) prefillSQL();
    setMode(on ? 'sql' : 'form');
  }

  function prefillSQL() {
    if (tables.length) $('q-sql').value = 'SELECT * FROM "' + tables[0].name + '" ORDER BY ts DESC LIMIT 100';
  }

  function setMode(mode) {
    for (const r of document.getElementsByName('q-mode')) r.checked = r.value === mode;
    $('query-form').hidden = mode === 'sql';
    $('sql-form').hidden = mode !== 'sql';
  }
  for (const r of document.getElementsByName('q-mode')) r.addEventListener('change', () => setMode(r.value));

  const sqlURL = (format, limit) => '/sql?' + new URLSearchParams({ q: $('q-sql').value, format, limit: String(limit) });

  async function runSQL() {
    const info = $('sql-info');
    info.className = 'muted';
    info.textContent = 'running';
    let rows;
    try {
      rows = ndjson(await (await api(sqlURL('json', SQL_LIMIT), runSQL)).text());
    } catch (err) {
      info.textContent = '';
      if (err instanceof AuthError) return;
      const pos = err.body && err.body.position;
      info.className = 'error';
      info.textContent = err.message + (pos ? ' (at character ' + pos + ')' : '');
      if (pos) {
        const ta = $('q-sql');
        ta.focus();
        ta.setSelectionRange(pos - 1, pos);
      }
      return;
    }
    renderRows(rows);
    info.textContent = rows.length ? rows.length + ' rows' + (rows.length === SQL_LIMIT ? ' (the limit: there may be more)' : '') : 'no rows';
    status('');
  }

  $('sql-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    runSQL();
  });
  $('q-sql').addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) {
      ev.preventDefault();
      runSQL();
    }
  });
  $('sql-csv').addEventListener('click', (ev) => { ev.preventDefault(); download(sqlURL('csv', SQL_LIMIT), 'query.csv'); });

  // ---- Chart ----

  const UNIT_NS = { ms: 1000000n, s: 1000000000n, m: 60000000000n, h: 3600000000000n, d: 86400000000000n };
  const intervalNs = (s) => {
    const m = /^(\d+)(ms|s|m|h|d)$/.exec(s);
    return BigInt(m[1]) * UNIT_NS[m[2]];
  };

  // chart holds the shown series: x (bucket start, s), open, high, low,
  // close, volume; and the live stream feeding it.
  // The live chart keeps at most max bars (what was loaded, at least
  // MAX_LIVE_BARS): a new bucket past that drops the oldest, so that a
  // frame's work stays bounded however long the page follows the table.
  const MAX_LIVE_BARS = 500;
  const chart = { plot: null, data: [[], [], [], [], [], []], max: MAX_LIVE_BARS, iv: 0n, field: 'price', volume: 'size', es: null, pending: [], frame: 0 };

  // candles draws the volume bars and the candles in the x range shown as
  // three filled paths (a bar, a wick and a body are rectangles; the
  // volume opaque, under the candles): three fills a draw. uPlot's own
  // bars series (a translucent fill and a stroke per bar) cost the
  // browser some 50 ms of raster a frame in headless Chromium, which
  // dropped frames with the live chart (docs/BENCHMARKS.md).
  function candles(u) {
    const [xs, o, h, l, c, vol] = u.data;
    if (xs.length === 0) return;
    const ctx = u.ctx;
    const ivSec = Number(chart.iv) / 1e9;
    const w = Math.max(1, Math.min(40, (u.valToPos(xs[0] + ivSec, 'x', true) - u.valToPos(xs[0], 'x', true)) * 0.7));
    const idxs = u.series[0].idxs;
    const i0 = idxs && idxs.length === 2 ? Math.max(0, idxs[0] - 1) : 0;
    const i1 = idxs && idxs.length === 2 ? Math.min(xs.length - 1, idxs[1] + 1) : xs.length - 1;
    const up = new Path2D(), down = new Path2D(), vols = new Path2D();
    const y0 = u.valToPos(0, 'vol', true);
    for (let i = i0; i <= i1; i++) {
      if (o[i] === null || Number.isNaN(o[i])) continue;
      const x = Math.round(u.valToPos(xs[i] + ivSec / 2, 'x', true));
      if (vol[i] > 0) {
        const yv = u.valToPos(vol[i], 'vol', true);
        vols.rect(Math.round(x - w / 2), Math.min(yv, y0), Math.round(w), Math.max(1, Math.abs(y0 - yv)));
      }
      const yo = u.valToPos(o[i], 'y', true), yc = u.valToPos(c[i], 'y', true);
      const yh = u.valToPos(h[i], 'y', true), yl = u.valToPos(l[i], 'y', true);
      const p = c[i] >= o[i] ? up : down;
      p.rect(x, Math.min(yh, yl), 1, Math.max(1, Math.abs(yl - yh)));
      p.rect(Math.round(x - w / 2), Math.min(yo, yc), Math.round(w), Math.max(1, Math.abs(yc - yo)));
    }
    ctx.save();
    ctx.beginPath();
    ctx.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height);
    ctx.clip();
    ctx.fillStyle = '#c9ced6'; // rgba(100,116,139,0.35) over white
    ctx.fill(vols);
    ctx.fillStyle = '#16a34a';
    ctx.fill(up);
    ctx.fillStyle = '#dc2626';
    ctx.fill(down);
    ctx.restore();
  }

  function makePlot() {
    const el = $('chart');
    el.replaceChildren();
    const hidden = (label) => ({ label, scale: 'y', paths: () => null, points: { show: false } });
    const opts = {
      width: Math.max(300, el.clientWidth),
      height: 360,
      // x: room for the last candle, drawn across its bucket.
      scales: { x: { time: true, range: (u, min, max) => [min, max + Number(chart.iv) / 1e9] }, vol: { range: (u, min, max) => [0, Math.max(1, max) * 4] } },
      series: [
        {},
        hidden('open'), hidden('high'), hidden('low'), hidden('close'),
        { label: 'volume', scale: 'vol', paths: () => null, points: { show: false } }, // drawn by candles
      ],
      axes: [{}, { scale: 'y' }],
      hooks: { draw: [candles, () => { perf.draws++; if (!perf.chartDrawn) perf.chartDrawn = performance.now(); }] },
      legend: { show: true },
    };
    chart.plot = new uPlot(opts, chart.data, el);
  }

  function showLast() {
    const d = chart.data;
    const n = d[0].length;
    $('chart-last').textContent = n === 0 ? 'none' :
      new Date(d[0][n - 1] * 1000).toISOString() + ' O ' + d[1][n - 1] + ' H ' + d[2][n - 1] + ' L ' + d[3][n - 1] + ' C ' + d[4][n - 1] + ' V ' + d[5][n - 1];
  }

  function stopLive() {
    if (chart.es) chart.es.close();
    chart.es = null;
    chart.pending = [];
    if (chart.frame) cancelAnimationFrame(chart.frame);
    chart.frame = 0;
  }

  async function showChart() {
    stopLive();
    perf.chartStart = performance.now();
    perf.chartDrawn = 0;
    const table = $('c-table').value, sym = $('c-sym').value.trim(), ivs = $('c-interval').value;
    if (!table || !sym) return;
    chart.iv = intervalNs(ivs);
    chart.field = $('c-field').value.trim() || 'price';
    chart.volume = $('c-volume').value.trim() || 'size';
    await refreshTables(); // the last ts (where the bars start) and a row count
    const t = tables.find((x) => x.name === table);
    const p = new URLSearchParams({ table, sym, interval: ivs, ts: 'ns', field: chart.field, volume: chart.volume });
    let from = $('c-from').value.trim();
    if (!from && t && t.last_ts) from = String(BigInt(Math.floor(t.last_ts / 1e9)) * 1000000000n - 500n * chart.iv); // about the last 500 bars
    if (from) p.set('from', from);
    let next = t ? t.rows : 0; // the live stream starts here
    let bars;
    try {
      const resp = await api('/bars?' + p, showChart);
      // The seq the bars end before: the live stream continues them
      // exactly (a row published while they load is in one, not both).
      const end = resp.headers.get('Tickdb-Next-Seq');
      if (end !== null && /^\d+$/.test(end)) next = end;
      bars = ndjson(await resp.text());
    } catch (err) {
      fail('chart', err);
      return;
    }
    chart.max = Math.max(MAX_LIVE_BARS, bars.length);
    chart.data = [bars.map((b) => b.ts / 1e9), bars.map((b) => b.open), bars.map((b) => b.high), bars.map((b) => b.low), bars.map((b) => b.close), bars.map((b) => b.volume)];
    makePlot();
    showLast();
    $('c-info').textContent = bars.length + ' bars';
    status('');
    if ($('c-live').checked) startLive(table, sym, next);
  }

  // startLive follows the table from seq next, the seq the bars end
  // before (GET /bars's Tickdb-Next-Seq header).
  function startLive(table, sym, next) {
    const p = new URLSearchParams({ table, sym, ts: 'ns', from: String(next) });
    if (token) p.set('token', token); // EventSource cannot send headers
    const es = new EventSource('/tail?' + p);
    chart.es = es;
    es.onopen = () => { $('c-info').textContent = chart.data[0].length + ' bars, live'; };
    es.onmessage = (ev) => {
      chart.pending.push(ev.data);
      if (!chart.frame) chart.frame = requestAnimationFrame(applyLive);
    };
    es.onerror = () => {
      if (es.readyState === EventSource.CLOSED) $('c-info').textContent = chart.data[0].length + ' bars, live stream closed';
      else $('c-info').textContent = chart.data[0].length + ' bars, reconnecting';
    };
  }

  // applyLive folds the rows that arrived since the last frame (the raw
  // event data strings the message handler queued) into the candles and
  // draws once, if a candle changed.
  function applyLive() {
    const t0 = performance.now();
    chart.frame = 0;
    const rows = chart.pending;
    chart.pending = [];
    perf.liveFrames++;
    perf.liveRows += rows.length;
    const d = chart.data;
    let changed = false;
    for (const data of rows) {
      // The exact ns ts from the text (JSON numbers lose digits).
      const m = /^\{"ts":(-?\d+)/.exec(data);
      if (!m) continue;
      const ts = BigInt(m[1]);
      let off = ts % chart.iv;
      if (off < 0n) off += chart.iv;
      const x = Number((ts - off) / 1000000n) / 1000;
      const row = JSON.parse(data);
      const v = row[chart.field], vol = row[chart.volume] || 0;
      if (typeof v !== 'number') continue;
      const n = d[0].length;
      if (n > 0 && d[0][n - 1] === x) {
        const i = n - 1;
        if (d[1][i] === null) { d[1][i] = v; d[2][i] = v; d[3][i] = v; }
        d[2][i] = Math.max(d[2][i], v);
        d[3][i] = Math.min(d[3][i], v);
        d[4][i] = v;
        d[5][i] += vol;
        changed = true;
      } else if (n === 0 || x > d[0][n - 1]) {
        d[0].push(x); d[1].push(v); d[2].push(v); d[3].push(v); d[4].push(v); d[5].push(vol);
        if (n + 1 > chart.max) for (const a of d) a.shift();
        changed = true;
      }
    }
    if (changed) {
      if (chart.plot) chart.plot.setData(d);
      showLast();
    }
    const dt = performance.now() - t0;
    perf.liveMs += dt;
    perf.liveMaxMs = Math.max(perf.liveMaxMs, dt);
  }

  $('chart-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    showChart();
  });
  window.addEventListener('resize', () => {
    if (chart.plot) chart.plot.setSize({ width: Math.max(300, $('chart').clientWidth), height: 360 });
  });

  refreshTables();
  setInterval(refreshTables, 3000);
})();
