// deferd's dashboard: refreshes the overview's figures (on other pages, the ZooKeeper
// state in the header) from the JSON API every 2 s. Values are set with textContent only,
// never as HTML.
'use strict';
(function () {
  const fixed3 = new Set(['put_per_s', 'delivered_per_s', 'acked_per_s', 'lateness_p50_ms',
    'lateness_p99_ms']);

  // As units_format_span() writes a span: "850ms", "12s", "4m12s", "3h05m", "2d04h".
  function span(ms) {
    const a = Math.abs(ms), s = Math.floor(a / 1000), m = Math.floor(s / 60),
      h = Math.floor(m / 60), d = Math.floor(h / 24), p = (n) => String(n).padStart(2, '0');
    const w = a < 1000 ? a + 'ms' : s < 60 ? s + 's' : m < 60 ? m + 'm' + p(s % 60) + 's'
      : h < 24 ? h + 'h' + p(m % 60) + 'm' : d + 'd' + p(h % 24) + 'h';
    return (ms < 0 ? '-' : '') + w;
  }

  function show(cell, v) {
    const kind = cell.dataset.kind, field = cell.dataset.field;
    if (kind === 'paused') return v ? 'paused' : '';
    if (kind === 'span') return typeof v === 'number' && v > 0 ? span(v) : '-';
    if (v === null || v === undefined) return '-';
    if (fixed3.has(field) && typeof v === 'number') return v.toFixed(3);
    return String(v);
  }

  function setStatus(text) {
    const el = document.getElementById('updated');
    if (el) el.textContent = text;
  }

  function rowOf(name) {
    for (const row of document.querySelectorAll('tr[data-queue]'))
      if (row.dataset.queue === name) return row;
    return null;
  }

  async function refreshOverview() {
    const r = await fetch('/api/v1/overview', { cache: 'no-store' });
    if (!r.ok) throw new Error('HTTP ' + r.status);
    const o = await r.json();
    if (document.querySelectorAll('tr[data-queue]').length !== o.queues.length) {
      location.reload(); // a queue was added by a reload of the daemon
      return;
    }
    for (const q of o.queues) {
      const row = rowOf(q.queue);
      if (!row) { location.reload(); return; }
      for (const cell of row.querySelectorAll('[data-field]'))
        cell.textContent = show(cell, q[cell.dataset.field]);
    }
    showZk(o);
  }

  function showZk(o) {
    const zk = document.getElementById('zk');
    zk.textContent = 'ZooKeeper: ' + o.daemon.zk_state;
    zk.className = 'zk-' + o.daemon.zk_state;
  }

  // Other pages: the header's ZooKeeper state only; their lists are read from ZooKeeper
  // when the page is loaded (reload for a fresh one).
  async function refreshHeader() {
    const r = await fetch('/api/v1/overview', { cache: 'no-store' });
    if (!r.ok) throw new Error('HTTP ' + r.status);
    showZk(await r.json());
  }

  async function refresh() {
    try {
      if (document.getElementById('queues')) await refreshOverview();
      else if (document.getElementById('zk').textContent) await refreshHeader();
      document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || 0) + 1);
      setStatus('updated ' + new Date().toLocaleTimeString());
    } catch (e) {
      setStatus('refresh failed: ' + e.message + ' (figures as of the last success)');
    }
  }

  refresh();
  setInterval(refresh, 2000);
})();
