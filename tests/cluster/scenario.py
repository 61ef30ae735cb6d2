"""One run of the rig: a cluster up, producers putting for a while, faults on a schedule,
everything healed, the backlog drained, the ledger judged.

A schedule is a list of (second, fault, args): fault is a Cluster method name ("cut",
"cut_leader", "freeze_deferd", "freeze_zk", "kill_deferd", "slow", "skew")."""

import json
import os
import random
import time

import ledger as ledgermod
import rig

# The short run of tests/run: every kind of fault once, hosts 5 s ahead and 5 s behind.
SHORT = {
    "seconds": 70,
    "skews": [5.0, -5.0, 0.0],
    "schedule": [
        (8, "cut", (2, 6)),               # h3 cut off, shorter than the session timeout
        (18, "freeze_deferd", (0, 12)),   # h1's deferd frozen for 3 session timeouts
        (34, "kill_deferd", (1, 3)),      # h2's deferd kill -9, back 3 s later
        (40, "skew", (2, 8.0)),           # h3's clock steps 8 s ahead
        (44, "cut_leader", (6,)),         # the leader's host cut off: an election
        (54, "freeze_zk", (1, 6)),        # h2's ZooKeeper member frozen
        (58, "slow", (0, 300, 6)),        # h1's link to ZooKeeper 300 ms slower
        (62, "skew", (2, -3.0)),          # h3's clock steps back, 3 s behind
    ],
}


# No fault at all: hosts 5 s ahead and 5 s behind, for the lateness goal (soak --calm).
CALM = {"seconds": 60, "skews": [5.0, -5.0, 0.0], "schedule": []}


def random_scenario(rnd, seconds=120, session_s=4):
    """Faults at random, one at a time with a pause between, any host, any kind."""
    kinds = ["cut", "cut_leader", "freeze_deferd", "freeze_zk", "kill_deferd", "slow", "skew"]
    sched, t = [], 5.0
    while t < seconds - 25:
        kind, host = rnd.choice(kinds), rnd.randrange(3)
        length = rnd.choice([rnd.uniform(1, session_s * 0.8), rnd.uniform(session_s * 1.5,
                                                                         session_s * 4)])
        if kind == "cut_leader":
            args = (round(length, 1),)
        elif kind == "slow":
            args = (host, rnd.choice([100, 500, 1500]), round(length, 1))
        elif kind == "skew":
            args, length = (host, round(rnd.uniform(-8, 8), 1)), 0
        elif kind == "kill_deferd":
            args = (host, round(rnd.uniform(0.5, 5), 1))
        else:
            args = (host, round(length, 1))
        sched.append((round(t, 1), kind, args))
        t += length + rnd.uniform(3, 10)
    skews = [round(rnd.uniform(-5, 5), 1) for _ in range(3)]
    return {"seconds": seconds, "skews": skews, "schedule": sched}


def skew_violations(records, settle_ms=2500):
    """Skews reported (STATS, every 250 ms) outside their stated error, once the host's
    clock had been steady for SETTLE_MS (libfaketime rereads its file every second)."""
    bad = []
    for r in records:
        if r.get("ev") != "skew" or r["t"] - r["since"] < settle_ms:
            continue
        if abs(r["skew"] - r["truth"]) > r["error"] + 0.1:
            bad.append("%s at %.0f: skew %.1f +- %.1f ms, truth %.0f" % (
                r["host"], r["t"], r["skew"], r["error"], r["truth"]))
    return bad


def inspect_unacked(cl, records, most=20):
    """deferctl show of the first jobs acknowledged to a producer and never acked."""
    acked = {r["token"] for r in records if r.get("ev") == "ack" and r["ok"]}
    ids = [r["id"] for r in records if r.get("ev") == "put_ok" and r["token"] not in acked]
    return {i: cl.show(i) for i in ids[:most]}


def run(workdir, deferd_bin, scenario, seed, log=print, rate=8):
    os.makedirs(workdir, exist_ok=True)
    cl = rig.Cluster(workdir, deferd_bin, seed=seed, log=log)
    try:
        cl.start(scenario["skews"])
        begin = time.time()
        cl.produce(rate, scenario["seconds"])
        for at, kind, args in scenario["schedule"]:
            wait = begin + at - time.time()
            if wait > 0:
                time.sleep(wait)
            getattr(cl, kind)(*args)
        time.sleep(max(0, begin + scenario["seconds"] - time.time()))
        drained = cl.wait_acked(60)
        records = cl.ledger.snapshot()
        shown = {} if drained else inspect_unacked(cl, records)
    finally:
        cl.stop()
    cl.ledger.dump(os.path.join(workdir, "ledger.jsonl"))
    gone = {i for i, text in shown.items() if "no job" in text}
    violations, figures = ledgermod.check(records, gone_ids=gone)
    violations["skew"] = skew_violations(records)
    figures["drained"] = drained
    if shown:
        figures["unacked_shown"] = shown
    with open(os.path.join(workdir, "verdict.json"), "w") as f:
        json.dump({"seed": seed, "scenario": scenario, "violations": violations,
                   "figures": figures}, f, indent=1)
    return violations, figures


def report(violations, figures, log=print):
    for kind, items in violations.items():
        log("  %-10s %d%s" % (kind, len(items), "" if not items else ": " + "; ".join(items[:5])))
    log("  figures: " + json.dumps(figures))
    ok = ledgermod.passed(violations)
    log("  verdict: " + ("PASS" if ok else "FAIL"))
    return ok


def rnd_for(seed):
    return random.Random(seed)
