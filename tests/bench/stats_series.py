#!/usr/bin/env python3
"""Rates per interval from tests/bench/stats-series' lines: one row per poll after the first
that carried the daemon's counters (seconds since that one, gauges as they were, counters as
a rate over the interval). usage: stats_series.py FILE"""
import re
import sys

GAUGES = ("jobs_known", "delayed", "ready", "inflight", "locked_ahead")
COUNTERS = ("claims", "claimed_jobs", "txn.puts")


def field(text, key):
    m = re.search(r"(?:^|\s)" + re.escape(key) + r"\s+(\d+)", text)
    return int(m.group(1)) if m else None


def main(path):
    first = prev = None
    for line in open(path):
        stamp, _, text = line.partition(" ")
        if "jobs_known" not in text:
            continue
        row = {"t": int(stamp)}
        row.update({k: field(text, k) for k in GAUGES + COUNTERS})
        if prev:
            dt = (row["t"] - prev["t"]) / 1000
            cells = [f"{(row['t'] - first['t']) / 1000:7.2f}s"]
            cells += [f"{k}={row[k]}" for k in GAUGES]
            for k in COUNTERS:
                if row[k] is not None and prev[k] is not None:
                    cells.append(f"{k}/s={(row[k] - prev[k]) / dt:.0f}")
            print(" ".join(cells))
        else:
            first = row
        prev = row


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
