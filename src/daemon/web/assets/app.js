// deferd's dashboard: refreshes the overview's figures (on other pages, the ZooKeeper
// state in the header) from the JSON API every 2 s. Values are set with textContent only,
// never as HTML.
'use strict';
(function () {
  // As web_format.c writes them (web_format_duration, web_format_rate), the same integer
  // arithmetic on the same doubles, so that a refreshed figure reads as the served one.
  function duration(ms) {
    const a = Math.abs(ms);
    if (!(a < 1e15)) return '-';
    const us = Math.floor(a * 1000 + 0.5), sign = ms < 0 ? '-' : '';
    const p = (n) => String(n).padStart(2, '0'), q = Math.floor;
    if (us < 50) return '0 ms';
    if (us < 9950) { const t = q((us + 50) / 100); return sign + q(t / 10) + '.' + t % 10 + ' ms'; }
    if (us < 999500) return sign + q((us + 500) / 1000) + ' ms';
    if (us < 59950000) {
      const t = q((us + 50000) / 100000);
      return sign + q(t / 10) + '.' + t % 10 + ' s';
    }
    const s = q((us + 500000) / 1000000), m = q(s / 60), h = q(m / 60);
    if (m < 60) return sign + m + ' min ' + p(s % 60) + ' s';
    if (h < 24) return sign + h + ' h ' + p(m % 60) + ' min';
    return sign + q(h / 24) + ' d ' + p(h % 24) + ' h';
  }

  function rate(perS) {
    if (!(perS >= 0 && perS < 1e15)) return '-';
    const milli = Math.floor(perS * 1000 + 0.5), q = Math.floor;
    if (perS === 0) return '0/s';
    if (milli < 5) return '<0.01/s';
    if (milli < 9995) {
      const c = q((milli + 5) / 10);
      if (c % 100 === 0) return q(c / 100) + '/s';
      if (c % 10 === 0) return q(c / 100) + '.' + q(c / 10) % 10 + '/s';
      return q(c / 100) + '.' + String(c % 100).padStart(2, '0') + '/s';
    }
    if (milli < 99950) {
      const t = q((milli + 50) / 100);
      return t % 10 === 0 ? q(t / 10) + '/s' : q(t / 10) + '.' + t % 10 + '/s';
    }
    return q((milli + 500) / 1000) + '/s';
  }

  // The same rules for whoever needs them on the page: integration.web_actions compares
  // them with web_format.c's on the same numbers.
  window.deferdFormat = Object.freeze({ duration: duration, rate: rate });

  // A cell's text as web_overview.c's cell_text() writes it.
  function show(cell, v) {
    const kind = cell.dataset.kind, number = typeof v === 'number';
    if (kind === 'paused') return v ? 'paused' : '';
    if (kind === 'age') return number && v > 0 ? duration(v) : '-';
    if (kind === 'duration') return number ? duration(v) : '-';
    if (kind === 'rate') return number ? rate(v) : '-';
    if (v === null || v === undefined) return '-';
    return String(v);
  }

  // The daemon's clock (now_ms), in UTC to the second, as the page was served with.
  function utc(ms) {
    return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
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
    return o;
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
    const o = await r.json();
    showZk(o);
    return o;
  }

  async function refresh() {
    try {
      let o = null;
      if (document.getElementById('queues')) o = await refreshOverview();
      else if (document.getElementById('zk').textContent) o = await refreshHeader();
      if (!o) return; // reloading, or a page without the header's state
      document.body.dataset.refreshed = String(Number(document.body.dataset.refreshed || 0) + 1);
      setStatus('updated ' + utc(o.daemon.now_ms));
    } catch (e) {
      setStatus('refresh failed: ' + e.message + ' (figures as of the last success)');
    }
  }

  refresh();
  setInterval(refresh, 2000);
})();
