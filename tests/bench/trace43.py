#!/usr/bin/env python3
"""Issue 43's breakdown: reads tests/bench/run --phases output (deferd run with
DEFERD_TXN_TRACE=1) and prints, for phase K (default: the last bench phase), the differences
of the trace.* STATS fields between the deferd line before it and the one after it.

usage: trace43.py RUN_OUTPUT [PHASE]  -> one JSON line on stdout, a table on stderr

trace.NAME (locks, settles, puts; store/txnbatch.c): multis, waited, wait_us, wait_max_us,
answered, rtt_us, rtt_max_us, ops_sent, full_sends, inflight_area_us, full_us, busy_us,
max_inflight. trace.jobs (engine/consumers.c): held, due_wait_ms, pushed, hold_push_us,
acked, push_ack_us, settled, ack_settle_us, released, hold_release_us, hold_release_max_us.
Maxima are over the daemon's life (they do not difference)."""
import json, re, sys

BATCH = ["multis", "waited", "wait_us", "wait_max_us", "answered", "rtt_us", "rtt_max_us",
         "ops_sent", "full_sends", "area_us", "full_us", "busy_us", "max_inflight"]
JOBS = ["held", "due_wait_ms", "pushed", "hold_push_us", "acked", "push_ack_us", "settled",
        "ack_settle_us", "released", "hold_release_us", "hold_release_max_us"]


def fields(stats):
    out = {}
    for name, val in re.findall(r"trace\.(\w+)=([\d,]+)", stats or ""):
        keys = JOBS if name == "jobs" else BATCH
        out[name] = dict(zip(keys, map(int, val.split(","))))
    return out


def main():
    lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
    benches = [l for l in lines if l.get("kind") == "bench"]
    phase = int(sys.argv[2]) if len(sys.argv) > 2 else benches[-1]["phase"]
    bench = next(l for l in benches if l["phase"] == phase)
    before = next(l for l in lines if l.get("kind") == "deferd" and l["phase"] == phase - 1)
    after = next(l for l in lines if l.get("kind") == "deferd" and l["phase"] == phase)
    b, a = fields(before.get("stats")), fields(after.get("stats"))
    if not a:
        sys.exit("trace43: no trace.* fields in STATS (was deferd run with DEFERD_TXN_TRACE=1?)")
    d = {k: {f: a[k][f] - b.get(k, {}).get(f, 0) for f in a[k]} for k in a}
    res = {"phase": phase, "e2e_rate": bench.get("e2e_rate"), "n": bench.get("n"),
           "lateness_ms_p50": bench.get("lateness_ms_p50"),
           "lateness_ms_p99": bench.get("lateness_ms_p99"), "drain_ms": bench.get("drain_ms"),
           "put_rate": bench.get("put_rate"), "stored_late": bench.get("stored_late"),
           "lateness_stored_ms_p50": bench.get("lateness_stored_ms_p50"),
           "lateness_stored_ms_p99": bench.get("lateness_stored_ms_p99"),
           "zk_cpu_s": round(after.get("zk_cpu_s", 0) - before.get("zk_cpu_s", 0), 2),
           "deferd_cpu_s": round(after.get("deferd_cpu_s", 0) - before.get("deferd_cpu_s", 0), 2)}
    for k in ("locks", "settles", "puts"):
        x = d.get(k)
        if not x or not x["multis"]:
            continue
        busy = x["busy_us"] or 1
        res[k] = {"multis": x["multis"], "items_per_multi": round(x["waited"] / x["multis"], 1),
                  "ops_per_multi": round(x["ops_sent"] / x["multis"], 1),
                  "full_sends": x["full_sends"],
                  "wait_ms_avg": round(x["wait_us"] / max(x["waited"], 1) / 1000, 2),
                  "rtt_ms_avg": round(x["rtt_us"] / max(x["answered"], 1) / 1000, 2),
                  "rtt_ms_max_life": round(a[k]["rtt_max_us"] / 1000, 1),
                  "inflight_avg_busy": round(x["area_us"] / busy, 2),
                  "full_pct_of_busy": round(100 * x["full_us"] / busy, 1),
                  "busy_s": round(x["busy_us"] / 1e6, 2), "max_inflight": a[k]["max_inflight"]}
    j = d.get("jobs")
    if j:
        res["jobs"] = {"held": j["held"],
                       "due_to_hold_ms_avg": round(j["due_wait_ms"] / max(j["held"], 1), 1),
                       "hold_to_push_ms_avg": round(j["hold_push_us"] / max(j["pushed"], 1) / 1000, 2),
                       "push_to_ack_ms_avg": round(j["push_ack_us"] / max(j["acked"], 1) / 1000, 2),
                       "ack_to_settled_ms_avg": round(j["ack_settle_us"] / max(j["settled"], 1) / 1000, 2),
                       "slot_held_ms_avg": round(j["hold_release_us"] / max(j["released"], 1) / 1000, 2),
                       "slot_held_ms_max_life": round(a["jobs"]["hold_release_max_us"] / 1000, 1)}
    print(json.dumps(res))
    for k, v in res.items():
        print(f"{k:>10}: {v}", file=sys.stderr)


main()
