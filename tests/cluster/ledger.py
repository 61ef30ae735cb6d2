"""The run's ledger and its checker, in the spirit of Jepsen.

The ledger is a Unix datagram socket: workers (whose clocks may be skewed) send each
delivery and each ack's answer the moment it happens, and the ledger stamps it with the
reference clock, this machine's real clock, which ZooKeeper also runs on. Producers and
the fault injector record their own events directly (they run on the reference clock).

The checker judges a finished run:
  lost        an acknowledged put (OK) that no consumer acked by the end
  early       a delivery before its due time by the reference clock, or a due time
              earlier than the put asked for (at=, or the put's start plus delay=)
  duplicate   a second delivery with no fault of the first holder's host (its link cut,
              its deferd or ZooKeeper member frozen or killed, its link slowed) between the
              two, nor a loss of its session that followed a fault
  attempts    a delivery whose attempt is not above the previous delivery's (same job)
  twice       one put stored as two jobs (two job ids delivered for one payload; the rig
              never nacks or reschedules, which would rename a job)
  stale_ack   an ack answered OK for a delivery that another delivery had superseded
              (the old holder's lock was gone: it must get LEASE_LOST), unless the job had
              been acked OK by then: an ack sent as its session broke is answered OK when
              the next session finds the job gone (docs/protocol.md, STATE), counted in
              the figures as ok_after_settled
"""

import json
import os
import socket
import threading
import time


def ref_ms():
    return time.time_ns() / 1e6


class Ledger:
    def __init__(self, path):
        self.path = path
        self.records = []
        self.lock = threading.Lock()
        if os.path.exists(path):
            os.unlink(path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        os.chmod(path, 0o777)
        self.thread = threading.Thread(target=self._listen, daemon=True)
        self.thread.start()

    def _listen(self):
        while True:
            try:
                data = self.sock.recv(65536)
            except OSError:
                return
            t = ref_ms()
            try:
                rec = json.loads(data)
            except ValueError:
                continue
            rec["t"] = t
            self.add(rec)

    def add(self, rec):
        rec.setdefault("t", ref_ms())
        with self.lock:
            self.records.append(rec)

    def snapshot(self):
        with self.lock:
            return list(self.records)

    def close(self):
        self.sock.close()

    def dump(self, path):
        with open(path, "w") as f:
            for r in sorted(self.snapshot(), key=lambda r: r["t"]):
                f.write(json.dumps(r) + "\n")


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


# Faults that may cost a holder its jobs: the host's link, its deferd, its ZooKeeper member.
HOLDER_FAULTS = {"cut", "freeze_deferd", "kill_deferd", "freeze_zk", "kill_zk", "cut_leader",
                 "slow"}


def _fault_windows(records, end):
    """host -> [(start, end)] of faults that may cost that host's deferd its session: its own
    faults, and its session losses (seen in STATS) that followed some fault within 15 s
    (a leader's loss, a member frozen: faults of the ensemble that reach every host)."""
    open_, windows = {}, {}
    starts = [r["t"] for r in records if r.get("ev") == "fault_start"]
    for r in records:
        if r.get("ev") == "session_lost" and any(r["t"] - 15000 <= s <= r["t"] for s in starts):
            windows.setdefault(r["host"], []).append((r["t"], r["t"]))
        elif r.get("ev") == "fault_start":
            open_[(r["kind"], r["host"])] = r["t"]
        elif r.get("ev") == "fault_end":
            start = open_.pop((r["kind"], r["host"]), None)
            if start is not None and r["kind"] in HOLDER_FAULTS:
                windows.setdefault(r["host"], []).append((start, r["t"]))
    for (kind, host), start in open_.items():
        if kind in HOLDER_FAULTS:
            windows.setdefault(host, []).append((start, end))
    return windows


def check(records, slack_ms=0, gone_ids=()):
    """The verdict: a dict of violation lists (empty lists: passed) and figures. GONE_IDS:
    jobs found absent from ZooKeeper at the end (deferctl show): an unacked put among them
    whose last ack was sent and never answered (its daemon killed after applying it) is
    counted as ack_unknown, not lost."""
    records = sorted(records, key=lambda r: r["t"])
    end = records[-1]["t"] if records else 0
    puts = {r["token"]: r for r in records if r.get("ev") == "put_ok"}
    failed_puts = {r["token"] for r in records if r.get("ev") == "put_failed"}
    deliveries, acks = {}, {}
    for r in records:
        if r.get("ev") == "deliver":
            deliveries.setdefault(r["token"], []).append(r)
        elif r.get("ev") == "ack":
            acks.setdefault(r["token"], []).append(r)
    windows = _fault_windows(records, end)
    v = {"lost": [], "early": [], "duplicate": [], "attempts": [], "stale_ack": [],
         "unknown": [], "twice": []}
    late, after_settled = {}, 0
    sent = {r["token"] for r in records if r.get("ev") == "ack_sent"}
    unknown_acks = 0
    for token, p in puts.items():
        if not any(a["ok"] for a in acks.get(token, [])):
            if token in sent and not acks.get(token) and p["id"] in gone_ids:
                unknown_acks += 1
                continue
            v["lost"].append(token)
    for token, ds in deliveries.items():
        p = puts.get(token)
        if p is None:
            if token not in failed_puts:  # a put answered with an error may have been stored
                v["unknown"].append(token)
            continue
        want = p["at"] if p.get("at") is not None else p["t0"] + p["delay"]
        for d in ds:
            if d["due"] + slack_ms < want or d["t"] < d["due"]:
                v["early"].append("%s: due %d, asked %d, delivered %.1f on %s" % (
                    token, d["due"], want, d["t"], d["host"]))
        first = ds[0]
        late.setdefault(first["host"], []).append(first["t"] - first["due"])
        ids = sorted({d["id"] for d in ds})
        if len(ids) > 1:
            v["twice"].append("%s: %s" % (token, ", ".join(ids)))
            ds = [d for d in ds if d["id"] == p["id"]] or ds
        for a, b in zip(ds, ds[1:]):
            if b["attempt"] <= a["attempt"]:
                v["attempts"].append("%s: attempt %d on %s after %d on %s" % (
                    token, b["attempt"], b["host"], a["attempt"], a["host"]))
            explained = any(s <= b["t"] and e >= a["t"] for s, e in windows.get(a["host"], []))
            if not explained:
                v["duplicate"].append("%s: %s at %.0f, again on %s at %.0f" % (
                    token, a["host"], a["t"], b["host"], b["t"]))
        last = ds[-1]
        first_ok = min((a["t"] for a in acks.get(token, []) if a["ok"]), default=None)
        for a in acks.get(token, []):
            if a["ok"] and a["t"] > first_ok:
                after_settled += 1
                continue
            if a["ok"] and (a["host"] != last["host"] or a["attempt"] != last["attempt"]):
                v["stale_ack"].append("%s: ack OK from %s attempt %d, last delivery %s "
                                      "attempt %d" % (token, a["host"], a["attempt"],
                                                      last["host"], last["attempt"]))
    figures = {"puts_ok": len(puts),
               "puts_failed": sum(1 for r in records if r.get("ev") == "put_failed"),
               "delivered": len(deliveries),
               "redeliveries": sum(len(ds) - 1 for ds in deliveries.values()),
               "faults": sum(1 for r in records if r.get("ev") == "fault_start"),
               "ok_after_settled": after_settled, "ack_unknown": unknown_acks}
    for host, xs in sorted(late.items()):
        xs.sort()
        figures["lateness_" + host] = {"n": len(xs), "p50": round(xs[len(xs) // 2], 1),
                                       "p99": round(xs[len(xs) * 99 // 100], 1),
                                       "max": round(xs[-1], 1)}
    return v, figures


def passed(violations):
    return not any(violations.values())
