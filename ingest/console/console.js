// tickdb console: Tables, Latest, Query and Chart panels over the server's HTTP API
// (GET /api/tables, /latest, /query, /bars, the /tail event stream, and /sql when
// serve has --sql). No build step, no dependency but the vendored uPlot.
//
// The view (table, chart symbols, interval, range, panel) is in the URL's
// fragment, so a link opens the same view, and in localStorage, so the page
// opens where it was left; a link wins. With neither, the page opens on the
// most recently written table (the latest last_ts of GET /api/tables) and
// charts its most active symbol (the most rows of the newest 1,000).
(() => {
  'use strict';

  const $ = (id) => document.getElementById(id);
  const TOKEN_KEY = 'tickdb.token';
  let token = sessionStorage.getItem(TOKEN_KEY) || '';
  let tables = [];
  let opened = false; // the first view was opened (after the first GET /api/tables)
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
  // tsNs is the exact ns of an RFC 3339 time as the server writes it
  // (2024-01-02T14:30:00.123456789Z), as a BigInt.
  function tsNs(s) {
    const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/.exec(s);
    if (!m) throw new Error('not an RFC 3339 time: ' + s);
    return BigInt(Date.parse(m[1] + m[3])) * 1000000n + BigInt((m[2] || '').padEnd(9, '0'));
  }
  // parseTime is a time typed in a form (RFC 3339 or integer ns) as ns.
  function parseTime(s) {
    if (/^-?\d+$/.test(s)) return BigInt(s);
    return tsNs(s);
  }
  // A difference of two prices without the float noise (0.1+0.2).
  const clean = (x) => Number(x.toPrecision(12));
  const signed = (x, digits) => (x > 0 ? '+' : '') + (digits === undefined ? String(clean(x)) : x.toFixed(digits));
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

  // archiveCell shows a table's archive lag (serve --archive): "up to
  // date", the compressed segments not up yet, or the error; "-" without
  // an archive. The title says where and how far.
  function archiveCell(tr, a) {
    if (!a) {
      cell(tr, '-').title = 'no archive (serve --archive s3://bucket/prefix)';
      return;
    }
    let text = 'up to date';
    if (a.pending_segments > 0) text = a.pending_segments + ' seg behind (' + fmtBytes(a.pending_bytes) + ')';
    if (a.error) text = 'failing: ' + text;
    const td = cell(tr, text);
    td.className = a.error ? 'error' : (a.pending_segments > 1 ? 'warn' : '');
    td.title = a.location + ': rows below ' + fmtNum(a.archived_rows) + ' archived' + (a.error ? '; ' + a.failures + ' attempts failed: ' + a.error : '');
  }

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
    // Each table's row is built anew, then copied into the row shown for
    // it, cell by cell where one changed: the rows' nodes stay.
    const tb = $('tables').tBodies[0];
    const shown = new Map([...tb.rows].map((r) => [r.dataset.table, r]));
    const trs = [];
    for (const t of tables) {
      const tr = document.createElement('tr');
      tr.dataset.table = t.name;
      cell(tr, t.name);
      cell(tr, t.schema.map((c) => c.name + ' ' + c.type).join(', ')).className = 'schema';
      cell(tr, fmtNum(t.rows - t.first), true).className = 'num rows';
      cell(tr, fmtTime(t.first_ts));
      cell(tr, fmtTime(t.last_ts));
      cell(tr, fmtNum(t.symbol_count), true);
      cell(tr, fmtBytes(t.bytes), true).title = 'allocated on disk; logical size ' + fmtBytes(t.logical_bytes) + ' (sparse files)';
      cell(tr, t.writer + (t.writer_pid ? ' (pid ' + t.writer_pid + ')' : ''));
      cell(tr, fmtNum(t.out_of_order), true);
      cell(tr, fmtNum(t.late), true);
      archiveCell(tr, t.archive);
      if (t.error) cell(tr, t.error).className = 'error';
      const prev = shown.get(t.name);
      if (prev && prev.cells.length === tr.cells.length) {
        [...tr.cells].forEach((td, i) => {
          const p = prev.cells[i];
          if (p.textContent !== td.textContent) p.textContent = td.textContent;
          if (p.className !== td.className) p.className = td.className;
        });
        trs.push(prev);
      } else {
        trs.push(tr);
      }
    }
    if (trs.length !== tb.rows.length || trs.some((r, i) => tb.rows[i] !== r)) tb.replaceChildren(...trs);
    $('tables-updated').textContent = 'updated ' + new Date().toLocaleTimeString();
    if (!perf.tablesShown) perf.tablesShown = performance.now();
    for (const id of ['l-table', 'q-table', 'c-table']) fillTables($(id));
    fillSyms('q-table', 'q-syms');
    fillSyms('c-table', 'c-syms');
    downloadLinks();
    if (!opened) {
      opened = true;
      openView(linkedView() || storedView() || await defaultView());
    }
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
  // newest per symbol) until the next animation frame applies them. After
  // the table's columns come the change since a time (since, ns) and its
  // %, from each symbol's price then (base: its last row at or before
  // since, GET /latest?at=, or else its first row after, GET /query), and
  // for a table with bid and ask the spread.
  const latest = { table: '', cols: [], key: 'sym', rows: new Map(), es: null, pending: new Map(), frame: 0, pc: {}, since: '', base: new Map() };

  // priceCols says what a table's change is computed on: its price column
  // (price, last, close, px or mid), else the mid of bid and ask, else its
  // first f64 column; and whether it has the spread (bid and ask).
  function priceCols(t) {
    const cols = t ? t.schema : [];
    const has = (n) => cols.some((c) => c.name === n && (c.type === 'f64' || c.type === 'i64'));
    const spread = has('bid') && has('ask');
    const named = ['price', 'last', 'close', 'px', 'mid'].find(has);
    const f64 = cols.find((c) => c.type === 'f64');
    return { price: named || (spread || !f64 ? null : f64.name), mid: !named && spread, spread };
  }

  function priceOf(row, pc) {
    if (pc.price) return typeof row[pc.price] === 'number' ? row[pc.price] : null;
    if (pc.mid && typeof row.bid === 'number' && typeof row.ask === 'number') return (row.bid + row.ask) / 2;
    return null;
  }

  // latestExtra is the headers of the columns after the table's.
  const latestExtra = () => (latest.pc.price || latest.pc.mid ? ['chg', 'chg %'] : []).concat(latest.pc.spread ? ['spread'] : []);

  function latestInfo(state) {
    const n = latest.rows.size + ' symbols' + (state ? ', ' + state : '');
    return latest.since && (latest.pc.price || latest.pc.mid) ? n + '; change since ' + fmtTime(Number(latest.since)) + ' (' + (latest.pc.price || 'mid') + ')' : n;
  }

  function stopLatest() {
    if (latest.es) latest.es.close();
    latest.es = null;
    latest.pending = new Map();
    if (latest.frame) cancelAnimationFrame(latest.frame);
    latest.frame = 0;
  }

  function latestCells(tr, row) {
    const tds = tr.cells;
    const set = (td, v, cls) => {
      if (td.textContent !== v) td.textContent = v;
      if (cls !== undefined && td.className !== cls) td.className = cls;
    };
    latest.cols.forEach((c, i) => set(tds[i], row[c] === undefined || row[c] === null ? '' : String(row[c])));
    let i = latest.cols.length;
    if (latest.pc.price || latest.pc.mid) {
      const v = priceOf(row, latest.pc), b = latest.base.get(row[latest.key]);
      const ok = v !== null && typeof b === 'number';
      const cls = 'num chg' + (ok && v > b ? ' up' : ok && v < b ? ' down' : '');
      set(tds[i++], ok ? signed(v - b) : '', cls);
      set(tds[i++], ok && b !== 0 ? signed((v / b - 1) * 100, 2) + '%' : '', cls);
    }
    if (latest.pc.spread) set(tds[i++], typeof row.bid === 'number' && typeof row.ask === 'number' ? String(clean(row.ask - row.bid)) : '');
  }

  function latestRow(row) {
    const tr = document.createElement('tr');
    tr.dataset.sym = row[latest.key];
    for (const c of latest.cols) cell(tr, '', typeof row[c] === 'number');
    for (const _ of latestExtra()) cell(tr, '', true);
    latestCells(tr, row);
    return tr;
  }

  // latestBase is each symbol's price at since: its last row at or before
  // since, or else its first row after (at most 200 symbols asked one by
  // one, 8 at a time).
  async function latestBase(table, since, syms, pc, key, retry) {
    const base = new Map();
    if (!since || !(pc.price || pc.mid)) return base;
    const asOf = ndjson(await (await api('/latest?' + new URLSearchParams({ table, at: since, format: 'json' }), retry)).text());
    for (const row of asOf) base.set(row[key], priceOf(row, pc));
    const missing = syms.filter((s) => !base.has(s)).slice(0, 200);
    for (let i = 0; i < missing.length; i += 8) {
      await Promise.all(missing.slice(i, i + 8).map(async (sym) => {
        const r = ndjson(await (await api('/query?' + new URLSearchParams({ table, sym, from: since, limit: '1', format: 'json' }), retry)).text());
        if (r.length) base.set(sym, priceOf(r[0], pc));
      }));
    }
    return base;
  }

  // sinceDefault is the start of the UTC day of the table's last row (ns):
  // a symbol without a row before it changes since its first row.
  const sinceDefault = (t) => (t && t.last_ts !== undefined && t.last_ts !== null) ? String(BigInt(Math.floor(t.last_ts / 86400e9)) * 86400000000000n) : '';

  // showLatest lists each symbol's last row (GET /latest), then follows the
  // table from the row count read before it: a row published meanwhile
  // comes again from the stream and is applied again, which changes nothing.
  // latestRun counts showLatest's runs: one that ends after a later one
  // started shows nothing.
  let latestRun = 0;

  async function showLatest() {
    stopLatest();
    const table = $('l-table').value;
    if (!table) return;
    const run = ++latestRun;
    await refreshTables();
    const t = tables.find((x) => x.name === table);
    const next = t ? t.rows : 0;
    const symCol = t && t.schema.find((c) => c.type === 'sym'); // the table's symbol: its first sym column
    const key = symCol ? symCol.name : 'sym';
    const pc = priceCols(t);
    let rows, base;
    let since = $('l-since').value.trim();
    try {
      rows = ndjson(await (await api('/latest?' + new URLSearchParams({ table, format: 'json' }), showLatest)).text());
      if (since) since = String(parseTime(since));
      else since = sinceDefault(t);
      base = await latestBase(table, since, rows.map((r) => r[key]), pc, key, showLatest);
    } catch (err) {
      if (run === latestRun) fail('latest', err);
      return;
    }
    if (run !== latestRun) return;
    stopLatest(); // a run ended meanwhile may have started a stream
    latest.key = key;
    latest.pc = pc;
    latest.base = base;
    latest.since = since;
    latest.table = table;
    latest.cols = t ? t.schema.map((c) => c.name) : (rows.length ? Object.keys(rows[0]) : []);
    latest.rows = new Map();
    const hr = document.createElement('tr');
    for (const c of latest.cols.concat(latestExtra())) {
      const th = document.createElement('th');
      th.textContent = c;
      if (c.startsWith('chg')) th.title = 'since ' + fmtTime(Number(since));
      hr.appendChild(th);
    }
    const tb = $('latest').tBodies[0];
    $('latest').tHead.replaceChildren(hr);
    tb.replaceChildren(...rows.map((row) => {
      const tr = latestRow(row);
      latest.rows.set(row[latest.key], { row, tr });
      return tr;
    }));
    $('l-info').textContent = latestInfo('');
    status('');
    if (!symCol) return; // no symbols: GET /latest said so
    const p = new URLSearchParams({ table, from: String(next) });
    if (token) p.set('token', token);
    const es = new EventSource('/tail?' + p);
    latest.es = es;
    es.onopen = () => { $('l-info').textContent = latestInfo('live'); };
    es.onmessage = (ev) => {
      const row = JSON.parse(ev.data);
      const sym = row[latest.key];
      const prev = latest.pending.get(sym);
      if (!prev || row.ts >= prev.ts) latest.pending.set(sym, row);
      if (!latest.frame) latest.frame = requestAnimationFrame(applyLatest);
    };
    es.onerror = () => {
      $('l-info').textContent = latestInfo(es.readyState === EventSource.CLOSED ? 'live stream closed' : 'reconnecting');
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
      // A new symbol: in name order, as GET /latest lists them. It had
      // no row before: its first is its price at since.
      if (!latest.base.has(sym) && latest.since && tsNs(String(row.ts)) >= BigInt(latest.since)) latest.base.set(sym, priceOf(row, latest.pc));
      const tr = latestRow(row);
      latest.rows.set(sym, { row, tr });
      const after = [...tb.rows].find((r) => r.dataset.sym > sym);
      tb.insertBefore(tr, after || null);
      $('l-info').textContent = latestInfo('live');
    }
  }

  $('latest-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    showLatest();
  });
  $('l-table').addEventListener('change', showLatest);

  // ---- Query ----

  // Oldest first (order asc), a page starts at from (a row's ts) after
  // skip rows with that ts, so that paging is exact when many rows share a
  // ts; newest first (order desc, the default: GET /query?order=desc), a
  // page ends before to (a row's ts + 1 ns) after skip rows of that ts.
  let pages = [];
  let page = 0;
  // gridRun counts the runs that fill the results grid (form pages and
  // SQL): one that ends after a later one started shows nothing.
  let gridRun = 0;
  let pageOrder = 'desc';

  function queryParams(extra) {
    const p = new URLSearchParams({ table: $('q-table').value });
    for (const k of ['sym', 'from', 'to']) {
      const v = $('q-' + k).value.trim();
      if (v) p.set(k, v);
    }
    if ($('q-order').value === 'desc') p.set('order', 'desc');
    for (const [k, v] of Object.entries(extra || {})) p.set(k, v);
    return p;
  }

  async function runPage() {
    const limit = Math.max(1, parseInt($('q-limit').value, 10) || 100);
    const { from, to, skip } = pages[page];
    const p = queryParams({ limit: String(limit + skip + 1), format: 'json', order: pageOrder });
    if (from !== null) p.set('from', from);
    if (to !== null) p.set('to', to);
    const run = ++gridRun;
    let rows;
    let warn = '';
    try {
      const resp = await api('/query?' + p, runPage);
      rows = ndjson(await resp.text());
      if (run !== gridRun) return;
      // An unknown symbol answers no rows and says so, with the nearest
      // names, in a header.
      warn = resp.headers.get('Tickdb-Warning') || '';
    } catch (err) {
      if (run !== gridRun) return;
      fail('query', err);
      $('q-info').textContent = '';
      return;
    }
    rows = rows.slice(skip);
    const more = rows.length > limit;
    rows = rows.slice(0, limit);
    renderRows(rows);
    $('q-info').textContent = rows.length ? 'page ' + (page + 1) + ': ' + rows.length + ' rows' : 'no rows' + (warn ? ': ' + warn : '');
    $('q-prev').disabled = page === 0;
    $('q-next').disabled = !more;
    if (more && pages.length === page + 1) {
      const last = rows[rows.length - 1].ts;
      let same = rows.filter((r) => r.ts === last).length;
      if (pageOrder === 'desc') {
        const end = String(tsNs(last) + 1n);
        if (to === end) same += skip; // the whole page shares one ts
        pages.push({ from: null, to: end, skip: same });
      } else {
        if (from === last) same += skip;
        pages.push({ from: last, to: null, skip: same });
      }
    }
    status(warn);
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

  function runQuery() {
    pages = [{ from: null, to: null, skip: 0 }];
    page = 0;
    pageOrder = $('q-order').value;
    downloadLinks();
    return runPage();
  }
  $('query-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    saveView('query');
    runQuery();
  });
  $('q-order').addEventListener('change', runQuery);
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

  const sqlFor = (name) => 'SELECT * FROM "' + name + '" ORDER BY ts DESC LIMIT 100';
  function prefillSQL() {
    if (tables.length) $('q-sql').value = sqlFor(tables[0].name);
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
    const run = ++gridRun;
    let rows;
    try {
      rows = ndjson(await (await api(sqlURL('json', SQL_LIMIT), runSQL)).text());
      if (run !== gridRun) return;
    } catch (err) {
      if (run !== gridRun) return;
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
  // With several symbols (overlay), data is x and each symbol's close as
  // the % change from its first bar's close in the window (base).
  const chart = { plot: null, data: [[], [], [], [], [], []], max: MAX_LIVE_BARS, iv: 0n, field: 'price', volume: 'size', es: null, pending: [], frame: 0,
    syms: [], overlay: false, base: [], symIdx: new Map(), symKey: 'sym' };
  const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#4b5563', '#ca8a04'];
  const chartSyms = () => [...new Set($('c-sym').value.split(/[\s,]+/).filter((x) => x !== ''))];
  const pct = (v, base) => (v / base - 1) * 100;

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
    const drawn = () => { perf.draws++; if (!perf.chartDrawn) perf.chartDrawn = performance.now(); };
    let opts;
    if (chart.overlay) {
      opts = {
        width: Math.max(300, el.clientWidth),
        height: 360,
        scales: { x: { time: true } },
        series: [{}, ...chart.syms.map((s, k) => ({
          label: s, stroke: COLORS[k % COLORS.length], width: 1.5, spanGaps: true,
          value: (u, v) => (v === null || v === undefined) ? '' : signed(v, 2) + '%',
        }))],
        axes: [{}, { values: (u, vals) => vals.map((v) => v + '%') }],
        hooks: { draw: [drawn] },
        legend: { show: true },
      };
    } else {
      const hidden = (label) => ({ label, scale: 'y', paths: () => null, points: { show: false } });
      opts = {
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
        hooks: { draw: [candles, drawn] },
        legend: { show: true },
      };
    }
    chart.plot = new uPlot(opts, chart.data, el);
  }

  function showLast() {
    const d = chart.data;
    const n = d[0].length;
    if (chart.overlay) {
      // Each symbol's last % change in the window.
      $('chart-last-what').textContent = 'change in the window';
      $('chart-last').textContent = chart.syms.map((s, k) => {
        const v = d[k + 1].findLast((x) => x !== null);
        return s + ' ' + (v === undefined ? 'none' : signed(v, 2) + '%');
      }).join(' ');
      return;
    }
    $('chart-last-what').textContent = 'last candle';
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

  // chartCols picks the chart's field and volume for table t: the ones in
  // the form if t has them, else its price column (priceCols; bid for a
  // table of quotes) and its size (or volume, qty) column.
  function chartCols(t) {
    if (!t) return;
    const num = t.schema.filter((c) => c.type === 'f64' || c.type === 'i64').map((c) => c.name);
    if (!num.length) return;
    if (!num.includes($('c-field').value.trim())) $('c-field').value = priceCols(t).price || (num.includes('bid') ? 'bid' : num[0]);
    if (!num.includes($('c-volume').value.trim())) $('c-volume').value = ['size', 'volume', 'qty', 'bid_size'].find((c) => num.includes(c)) || $('c-field').value;
  }

  // chartRun counts showChart's runs: one that ends after a later one
  // started shows nothing.
  let chartRun = 0;

  async function showChart() {
    stopLive();
    perf.chartStart = performance.now();
    perf.chartDrawn = 0;
    const table = $('c-table').value, syms = chartSyms(), ivs = $('c-interval').value;
    if (!table || !syms.length) return;
    const run = ++chartRun;
    $('c-info').textContent = 'loading';
    const iv = intervalNs(ivs);
    const field = $('c-field').value.trim() || 'price';
    const volume = $('c-volume').value.trim() || 'size';
    await refreshTables(); // the last ts (where the bars start) and a row count
    const t = tables.find((x) => x.name === table);
    const symCol = t && t.schema.find((c) => c.type === 'sym');
    const p = new URLSearchParams({ table, interval: ivs, ts: 'ns', field, volume });
    let from = $('c-from').value.trim();
    const to = $('c-to').value.trim();
    let next = t ? t.rows : 0; // the live stream starts here
    let bars;
    try {
      if (!from && (to || (t && t.last_ts))) { // about the last 500 bars
        const end = to ? parseTime(to) : BigInt(Math.floor(t.last_ts / 1e9)) * 1000000000n;
        from = String(end - 500n * iv);
      }
      if (from) p.set('from', from);
      if (to) p.set('to', to);
      bars = await Promise.all(syms.map(async (sym) => {
        p.set('sym', sym);
        const resp = await api('/bars?' + p, showChart);
        // The seq the bars end before: the live stream continues them
        // exactly (a row published while they load is in one, not both;
        // with several symbols it starts at the least, and a row seen
        // twice sets a close to what it was).
        const end = resp.headers.get('Tickdb-Next-Seq');
        if (end !== null && /^\d+$/.test(end) && BigInt(end) < BigInt(next)) next = end;
        return ndjson(await resp.text());
      }));
    } catch (err) {
      if (run !== chartRun) return;
      $('c-info').textContent = '';
      fail('chart', err);
      return;
    }
    if (run !== chartRun) return;
    stopLive(); // a run ended meanwhile may have started a stream
    chart.iv = iv;
    chart.field = field;
    chart.volume = volume;
    chart.symKey = symCol ? symCol.name : 'sym';
    chart.syms = syms;
    chart.overlay = syms.length > 1;
    if (chart.overlay) {
      const xs = [...new Set(bars.flatMap((b) => b.map((x) => x.ts / 1e9)))].sort((a, b) => a - b);
      const at = new Map(xs.map((x, i) => [x, i]));
      chart.symIdx = new Map(syms.map((s, k) => [s, k]));
      chart.base = bars.map((b) => { const f = b.find((x) => Number.isFinite(x.close)); return f ? f.close : undefined; });
      chart.data = [xs, ...bars.map((b, k) => {
        const ys = new Array(xs.length).fill(null);
        for (const x of b) if (Number.isFinite(x.close)) ys[at.get(x.ts / 1e9)] = pct(x.close, chart.base[k]);
        return ys;
      })];
      chart.max = Math.max(MAX_LIVE_BARS, xs.length);
    } else {
      const b = bars[0];
      chart.max = Math.max(MAX_LIVE_BARS, b.length);
      chart.data = [b.map((x) => x.ts / 1e9), b.map((x) => x.open), b.map((x) => x.high), b.map((x) => x.low), b.map((x) => x.close), b.map((x) => x.volume)];
    }
    makePlot();
    showLast();
    const what = chart.overlay ? syms.length + ' symbols, % change from the first bar, ' + chart.data[0].length + ' bars' : chart.data[0].length + ' bars';
    chart.what = what;
    $('c-info').textContent = what;
    status('');
    if ($('c-live').checked && !to) startLive(table, chart.overlay ? '' : syms[0], next);
  }

  // startLive follows the table from seq next, the seq the bars end
  // before (GET /bars's Tickdb-Next-Seq header): one symbol's rows, or
  // with several (sym '') all of the table's, those of the others skipped.
  function startLive(table, sym, next) {
    const p = new URLSearchParams({ table, ts: 'ns', from: String(next) });
    if (sym) p.set('sym', sym);
    if (token) p.set('token', token); // EventSource cannot send headers
    const es = new EventSource('/tail?' + p);
    chart.es = es;
    es.onopen = () => { $('c-info').textContent = chart.what + ', live'; };
    es.onmessage = (ev) => {
      chart.pending.push(ev.data);
      if (!chart.frame) chart.frame = requestAnimationFrame(applyLive);
    };
    es.onerror = () => {
      if (es.readyState === EventSource.CLOSED) $('c-info').textContent = chart.what + ', live stream closed';
      else $('c-info').textContent = chart.what + ', reconnecting';
    };
  }

  // applyLive folds the rows that arrived since the last frame (the raw
  // event data strings the message handler queued) into the candles (or
  // the overlay's lines) and draws once, if a bar changed.
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
      if (chart.overlay) {
        const k = chart.symIdx.get(row[chart.symKey]);
        if (k === undefined) continue;
        if (chart.base[k] === undefined) chart.base[k] = v;
        let i = n - 1;
        if (n === 0 || x > d[0][n - 1]) {
          for (const a of d) a.push(null);
          d[0][n] = x;
          i = n;
          if (n + 1 > chart.max) { for (const a of d) a.shift(); i--; }
        } else if (d[0][n - 1] !== x) continue; // an older bucket's row
        d[k + 1][i] = pct(v, chart.base[k]);
        changed = true;
        continue;
      }
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
    saveView('chart');
    showChart();
  });
  $('c-table').addEventListener('change', () => chartCols(tables.find((x) => x.name === $('c-table').value)));
  window.addEventListener('resize', () => {
    if (chart.plot) chart.plot.setSize({ width: Math.max(300, $('chart').clientWidth), height: 360 });
  });

  // ---- The view: the URL's fragment, localStorage, or the default ----

  const VIEW_KEY = 'tickdb.view';
  const VIEW_KEYS = ['table', 'sym', 'interval', 'from', 'to', 'panel'];
  const PANELS = { tables: '', latest: 'l-table', query: 'q-table', chart: 'c-table' };

  function viewHash(v) {
    const p = new URLSearchParams();
    for (const k of VIEW_KEYS) if (v[k]) p.set(k, v[k]);
    return '#' + String(p).replace(/%2C/g, ','); // sym=AAPL,MSFT reads better
  }

  // linkedView is the view the URL's fragment names
  // (#table=T&sym=A,B&interval=5m&from=..&to=..&panel=chart), if any.
  function linkedView() {
    const p = new URLSearchParams(location.hash.replace(/^#/, ''));
    const v = {};
    for (const k of VIEW_KEYS) if (p.get(k)) v[k] = p.get(k);
    return v.table ? v : null;
  }

  function storedView() {
    try {
      const v = JSON.parse(localStorage.getItem(VIEW_KEY) || 'null');
      return v && typeof v.table === 'string' && tables.some((t) => t.name === v.table) ? v : null;
    } catch (_) {
      return null;
    }
  }

  // defaultView is the most recently written table (the latest last row)
  // and its most active symbol: the most rows of its newest 1,000 (ties:
  // the first in name order).
  async function defaultView() {
    const live = tables.filter((t) => !t.error && t.last_ts !== undefined && t.last_ts !== null && t.rows > t.first);
    if (!live.length) return null;
    const t = live.reduce((a, b) => (b.last_ts > a.last_ts ? b : a));
    const v = { table: t.name };
    const symCol = t.schema.find((c) => c.type === 'sym');
    if (!symCol) return v;
    try {
      const rows = ndjson(await (await api('/query?' + new URLSearchParams({ table: t.name, order: 'desc', limit: '1000', format: 'json' }))).text());
      const n = new Map();
      for (const r of rows) n.set(r[symCol.name], (n.get(r[symCol.name]) || 0) + 1);
      const best = [...n].filter(([s]) => typeof s === 'string').sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))[0];
      if (best) v.sym = best[0];
    } catch (err) {
      fail('the most active symbol', err);
    }
    return v;
  }

  // saveView keeps the view of the panel just shown in the URL and in
  // localStorage: its table, and the chart's symbols, interval and range
  // when the chart shows that table.
  function saveView(panel) {
    const v = { table: PANELS[panel] ? $(PANELS[panel]).value : $('c-table').value, panel };
    if (v.table === $('c-table').value) {
      v.sym = chartSyms().join(',');
      v.interval = $('c-interval').value;
      v.from = $('c-from').value.trim();
      v.to = $('c-to').value.trim();
    }
    storeView(v);
  }

  function storeView(v) {
    const h = viewHash(v);
    try {
      localStorage.setItem(VIEW_KEY, JSON.stringify(v));
    } catch (_) { /* storage off: the URL still has it */ }
    if (location.hash !== h) history.replaceState(null, '', h);
    $('c-link').href = h;
  }

  // openView shows v in every panel: Latest and Query of its table, the
  // chart of its symbols, and scrolls to its panel.
  async function openView(v) {
    if (v && !tables.some((t) => t.name === v.table)) {
      status('no table ' + v.table + ' (the link or the last view named it)', true);
      v = await defaultView();
    }
    if (!v) return;
    for (const id of ['l-table', 'q-table', 'c-table']) $(id).value = v.table;
    fillSyms('q-table', 'q-syms');
    fillSyms('c-table', 'c-syms');
    chartCols(tables.find((x) => x.name === v.table));
    $('c-sym').value = v.sym || '';
    if (v.interval && /^\d+(ms|s|m|h|d)$/.test(v.interval)) {
      const sel = $('c-interval');
      if (![...sel.options].some((o) => o.value === v.interval)) sel.appendChild(new Option(v.interval, v.interval));
      sel.value = v.interval;
    }
    $('c-from').value = v.from || '';
    $('c-to').value = v.to || '';
    storeView(v);
    const el = v.panel && $(v.panel + '-panel');
    if (el) el.scrollIntoView();
    // The Query panel: the form's first page, or in SQL mode the newest
    // rows of the table by SQL, unless SQL was typed meanwhile.
    let query = runQuery;
    if (sqlOn) {
      query = null;
      if (!$('q-sql').value || (tables.length && $('q-sql').value === sqlFor(tables[0].name))) {
        $('q-sql').value = sqlFor(v.table);
        query = runSQL;
      }
    }
    await Promise.all([showLatest(), query ? query() : null, v.sym ? showChart() : null]);
  }

  window.addEventListener('hashchange', () => {
    const v = linkedView();
    if (v) openView(v);
  });
  $('latest-form').addEventListener('submit', () => saveView('latest'));

  refreshTables();
  setInterval(refreshTables, 3000);
})();
