#!/usr/bin/env python3
"""Drives Debian's chromium, headless, through the dashboard as an operator would, over
the DevTools protocol on a pipe (--remote-debugging-pipe: no port, no websocket, standard
library only). Run by it_web_actions, which prepares the daemon and checks in ZooKeeper
what the clicks did; this script reports what the browser saw, as one JSON object.

    browser.py CHROMIUM BASE_URL TOKEN JOB_ID QUEUE SHOTS_DIR PROFILE_DIR FIGURES_QUEUE NUMBERS

FIGURES_QUEUE: the queue whose overview figures (lateness, rates) are reported; NUMBERS
("1.5,0.35,..."): numbers that app.js's formatters write as durations and rates.
"""
import base64
import json
import os
import subprocess
import sys
import time


class Browser:
    def __init__(self, binary, profile):
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def fds():  # chromium reads commands on fd 3, writes answers on fd 4
            # from_chrome_w may itself be 3: move both out of the way first
            r, w = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--no-first-run", "--user-data-dir=" + profile, "--remote-debugging-pipe",
             "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(profile, "chromium.log"), "ab"),
            preexec_fn=fds, close_fds=False)  # os.pipe()'s fds are not inherited; 3, 4 are
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.session = None
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target, "flatten": True})["sessionId"]
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": 1400, "height": 900, "deviceScaleFactor": 1, "mobile": False})

    def _read(self, deadline):
        while b"\0" not in self.buf:
            if time.monotonic() > deadline:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self.from_chrome, 65536)
            if not chunk:
                raise EOFError("chromium closed its pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, timeout=30):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if self.session:
            msg["sessionId"] = self.session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError("%s: %s" % (method, reply["error"]))
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, name, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            for i, ev in enumerate(self.events):
                if ev.get("method") == name:
                    del self.events[: i + 1]
                    return ev
            self.events.append(self._read(deadline))

    def eval(self, expr):
        res = self.call("Runtime.evaluate",
                        {"expression": expr, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in res:
            raise RuntimeError("%s: %s" % (expr, res["exceptionDetails"]))
        return res["result"].get("value")

    def goto(self, url):
        self.events.clear()
        self.call("Page.navigate", {"url": url})
        self.wait_event("Page.loadEventFired")

    def submit(self, js):
        """Runs JS that submits a form or clicks its button, and waits for the next page."""
        self.events.clear()
        self.eval(js)
        self.wait_event("Page.loadEventFired")

    def shot(self, path):
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


POST = ("fetch(%s, {method: 'POST', headers: {'Content-Type': "
        "'application/x-www-form-urlencoded'}, body: %s}).then(r => r.status)")


def paused(b, queue):
    """The queue's paused field in /api/v1/overview, as the browser fetches it."""
    return b.eval("fetch('/api/v1/overview').then(r => r.json()).then(j => "
                  "j.queues.find(q => q.queue === %s).paused)" % json.dumps(queue))


def wait_paused(b, queue, want, seconds=15):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if paused(b, queue) == want:
            return True
        time.sleep(0.1)
    return False


def wait_for(b, expr, seconds=15):
    """Evaluates EXPR until it is true; whether it became so before the deadline."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if b.eval(expr):
            return True
        time.sleep(0.1)
    return False


# How far the page reaches past the window's right edge, in px (<= 0: no horizontal
# scrolling): the document, <main> (which scrolls on its own), and every table's right edge.
OVERFLOW = """(() => {
  const de = document.documentElement, m = document.querySelector('main');
  const reach = [de.scrollWidth - de.clientWidth, m.scrollWidth - m.clientWidth];
  for (const t of document.querySelectorAll('table'))
    reach.push(Math.ceil(t.getBoundingClientRect().right) - de.clientWidth);
  return Math.max(...reach);
})()"""

# OVERFLOW again once every figure of the overview is as wide as a busy daemon's get (and one
# queue's name long), measured in the same turn, before app.js's next refresh puts the real
# ones back: the fit has room to spare, it does not hold for today's small numbers only.
WIDE = """(() => {
  const wide = {text: '1234567', age: '23 h 59 min', duration: '59 min 59 s',
                rate: '12345/s', paused: 'paused'};
  for (const cell of document.querySelectorAll('#queues td[data-kind]'))
    cell.textContent = wide[cell.dataset.kind];
  document.querySelector('#queues tbody th a').textContent = 'customer-notifications-eu';
  return %s;
})()""" % OVERFLOW

# The overview's figures of QUEUE as people read them, field -> text: in the page as served
# (fetched and parsed, no script run) and in the live page, which app.js refreshed from the
# API.
FIGURES = """(async () => {
  const fields = ['lateness_p50_ms', 'lateness_p99_ms', 'put_per_s', 'delivered_per_s',
                  'acked_per_s', 'depth_oldest_overdue_ms'];
  const html = await (await fetch('/ui/', {cache: 'no-store'})).text();
  const served = new DOMParser().parseFromString(html, 'text/html');
  const of = (doc) => {
    const row = Array.from(doc.querySelectorAll('tr[data-queue]'))
      .find(tr => tr.dataset.queue === %s);
    const o = {};
    for (const f of fields) o[f] = row.querySelector('[data-field=' + f + ']').textContent;
    return o;
  };
  return {served: of(served), live: of(document),
          served_updated: served.getElementById('updated').textContent};
})()"""

# app.js's texts of the numbers in NUMBERS ("1.5,0.35,..."), each as a duration and as a
# rate, joined by "|": the test compares them with web_format.c's of the same numbers.
FORMATS = """(() => {
  const v = %s.split(',').map(Number);
  return {durations: v.map(deferdFormat.duration).join('|'),
          rates: v.map(deferdFormat.rate).join('|')};
})()"""


def overview(b, base, figures_queue, numbers, shots, r):
    """The overview at 1400 px: refreshed by app.js, nothing beyond the window, figures in
    people's units, the "updated" time in UTC, the notes free of internal names."""
    b.goto(base + "/ui/")
    r["overview_refreshed"] = wait_for(b, "Number(document.body.dataset.refreshed || 0) >= 1")
    r["overview_overflow_px"] = b.eval(OVERFLOW)
    figs = b.eval(FIGURES % json.dumps(figures_queue))
    formats = b.eval(FORMATS % json.dumps(numbers))
    r["js_durations"] = formats["durations"]
    r["js_rates"] = formats["rates"]
    for field, text in figs["served"].items():  # flat: the test reads "key": value pairs
        r["served_" + field] = text
    for field, text in figs["live"].items():
        r["live_" + field] = text
    r["served_updated"] = figs["served_updated"]
    r["live_updated"] = b.eval("document.getElementById('updated').textContent")
    r["notes"] = b.eval("Array.from(document.querySelectorAll('p.note'))"
                        ".map(p => p.textContent).join(' | ')")
    b.shot(os.path.join(shots, "overview-1400.png"))
    r["overview_wide_overflow_px"] = b.eval(WIDE)  # last: it overwrites the figures
    b.goto(base + "/ui/schedules")
    r["schedules_refreshed"] = wait_for(b, "Number(document.body.dataset.refreshed || 0) >= 1")
    r["schedules_rows"] = b.eval("document.querySelectorAll('#schedules tbody tr').length")
    r["schedules_overflow_px"] = b.eval(OVERFLOW)
    r["schedules_updated"] = b.eval("document.getElementById('updated').textContent")
    b.shot(os.path.join(shots, "schedules-1400.png"))


def main():
    binary, base, token, job, queue, shots, profile, figures_queue, numbers = sys.argv[1:10]
    r = {}
    b = Browser(binary, profile)
    try:
        q = json.dumps(queue)
        overview(b, base, figures_queue, numbers, shots, r)
        b.goto("%s/ui/queues/%s" % (base, queue))
        row = "tr[data-id=%s]" % json.dumps(job)
        r["queue_lists_job"] = b.eval("!!document.querySelector(%s)" % json.dumps(row))
        r["pause_offered_before_login"] = b.eval("!!document.getElementById('pause')")
        r["charts"] = b.eval("Array.from(document.querySelectorAll('#timeline svg'))"
                             ".map(s => s.dataset.total).join(' ')")
        b.shot(os.path.join(shots, "queue.png"))
        # find the job by its id, with the page's own form
        b.submit("document.querySelector('form.find input[name=id]').value = %s;"
                 "document.querySelector('form.find').submit()" % json.dumps(job))
        r["job_page_id"] = b.eval("document.querySelector('[data-field=id]').textContent")
        r["payload_text"] = b.eval("document.getElementById('payload').textContent")
        r["payload_elements"] = b.eval("document.getElementById('payload').children.length")
        r["pwned"] = b.eval("window.__pwned === undefined ? null : window.__pwned")
        r["title"] = b.eval("document.title")
        b.shot(os.path.join(shots, "job.png"))
        # an action without a token, then sign in, then forged forms with the cookie
        r["no_token_status"] = b.eval(POST % ("'/ui/queues/' + %s + '/pause'" % q, "'csrf=x'"))
        b.goto(base + "/ui/login")
        b.shot(os.path.join(shots, "login.png"))
        b.submit("document.querySelector('input[name=token]').value = %s;"
                 "document.querySelector('form.login').submit()" % json.dumps(token))
        r["after_login_path"] = b.eval("location.pathname")
        r["wrong_csrf_status"] = b.eval(POST % ("'/ui/queues/' + %s + '/pause'" % q,
                                                "'csrf=00000000000000000000000000000000'"))
        r["no_csrf_status"] = b.eval(POST % ("'/ui/queues/' + %s + '/pause'" % q, "''"))
        r["paused_after_forgeries"] = paused(b, queue)
        # pause and resume with the page's buttons
        b.goto("%s/ui/queues/%s" % (base, queue))
        b.submit("document.getElementById('pause').click()")
        r["paused_after_pause"] = wait_paused(b, queue, 1)
        b.goto("%s/ui/queues/%s" % (base, queue))
        r["badge_after_pause"] = b.eval("!!document.querySelector('h1 .paused')")
        b.submit("document.getElementById('resume').click()")
        r["resumed"] = wait_paused(b, queue, 0)
        # kick the first dead letter back
        b.goto("%s/ui/queues/%s/dead" % (base, queue))
        r["dead_rows_before"] = b.eval("document.querySelectorAll('#dead tbody tr').length")
        r["kicked_id"] = b.eval("document.querySelector('#dead tbody tr').dataset.id")
        b.shot(os.path.join(shots, "dead.png"))
        b.submit("document.querySelector('#dead tbody tr button.kick').click()")
        r["dead_rows_after"] = b.eval("document.querySelectorAll('#dead tbody tr').length")
        r["after_kick_path"] = b.eval("location.pathname")
    except Exception as e:  # reported, and the test fails on the missing fields
        r["error"] = "%s: %s" % (type(e).__name__, e)
    finally:
        b.close()
    print(json.dumps(r))


if __name__ == "__main__":
    main()
