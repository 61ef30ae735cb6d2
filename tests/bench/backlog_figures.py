#!/usr/bin/python3
"""Turns the JSON lines of one `tests/bench/run --phases` run of tests/bench/backlog into its
figure sets, one JSON line each (standard library only).

  backlog_figures.py SET FILE NAMES META
    SET    backlog (the preload run: kinds backlog, s1, zkrestart) or sparse (kind sparse)
    FILE   run's stdout (JSON lines tagged "phase")
    NAMES  the phases' names, comma-separated, phase 1 first (phase 0 is "start")
    META   a JSON object copied into every line first (layout, packing, n, zk_heap, ...)

Every line has "kind"; a figure that could not be taken is null, and a set whose phases are
missing gets an "error" instead of its figures. Exit status 1 when any set has an error.
"""
import json
import sys


def load(path, names):
    by = {}
    with open(path) as f:
        for line in f:
            if not line.startswith("{"):
                continue
            try:
                d = json.loads(line)
            except ValueError:
                continue
            k = d.get("phase")
            name = "start" if k == 0 else names[k - 1] if isinstance(k, int) and 0 < k <= len(names) else f"phase{k}"
            by[(name, d.get("kind"))] = d
    return by


def num(d, k):
    v = (d or {}).get(k)
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def diff(a, b):
    return None if a is None or b is None else a - b


def per(v, n, scale=1):
    return None if v is None or not n else round(v * scale / n, 2)


def backlog(by, meta):
    n = meta["n"]
    fw, fp, bp = by.get(("warmup", "deferd")), by.get(("preload", "deferd")), by.get(("preload", "bench"))
    f0, f1 = by.get(("files0", "zkfiles")), by.get(("files1", "zkfiles"))
    bs, fs = by.get(("s1", "bench")), by.get(("s1", "deferd"))
    zr, fr, fz = by.get(("zkrestart", "zkrestart")), by.get(("zkrestart", "deferd")), by.get(("files2", "zkfiles"))
    bd = by.get(("deliver", "bench"))
    sy = by.get(("sync", "sync"))
    out = []
    if not (fw and fp and bp):
        why = "the preload did not run" if not bp else "no figures before or after the preload"
        out.append(dict(meta, kind="backlog", error=why))
    else:
        zk_rss, zk_rss0 = num(fp, "zk_rss_kb"), num(fw, "zk_rss_kb")
        zn, zn0 = num(fp, "zk_znode_count"), num(fw, "zk_znode_count")
        ds, ds0 = num(fp, "zk_approximate_data_size"), num(fw, "zk_approximate_data_size")
        dr, dr0 = num(fp, "deferd_rss_kb"), num(fw, "deferd_rss_kb")
        snap = num(fz, "snapshot_bytes")
        d = dict(meta, kind="backlog",
                 preload_rc=bp.get("rc"), preload_rate=num(bp, "preload_rate"),
                 preload_fail=num(bp, "preload_fail"),
                 preload_s=per(n, num(bp, "preload_rate")),
                 zk_rss_kb=zk_rss, zk_rss_peak_kb=num(fp, "zk_rss_peak_kb"),
                 zk_rss_bytes_per_job=per(zk_rss, n, 1024), zk_rss_kb_before=zk_rss0,
                 zk_rss_marginal_bytes_per_job=per(diff(zk_rss, zk_rss0), n, 1024),
                 znodes=zn, znodes_before=zn0, znodes_per_job=per(diff(zn, zn0), n),
                 zk_data_bytes=ds, zk_data_bytes_per_job=per(diff(ds, ds0), n),
                 snapshot_bytes=snap, snapshot_bytes_per_job=per(snap, n),
                 snapshot_file=(fz or {}).get("snapshot_file"),
                 preload_txnlog_bytes_per_job=per(diff(num(f1, "txnlog_bytes"), num(f0, "txnlog_bytes")), n),
                 deferd_rss_kb_before=dr0, deferd_rss_kb=dr,
                 deferd_rss_peak_kb=num(fs or fp, "deferd_rss_peak_kb"),
                 deferd_bytes_per_job=per(diff(dr, dr0), n, 1024),
                 listing_max_bytes=num(fs or fp, "listing_max_bytes"),
                 zk_cpu_s=num(fp, "zk_cpu_s"), deferd_cpu_s=num(fp, "deferd_cpu_s"))
        if meta.get("packing") == "on" and d["znodes_per_job"] is not None and d["znodes_per_job"] > 0.5:
            d["warning"] = (f"packing was switched on, but ZooKeeper holds {d['znodes_per_job']} znodes "
                            "per job: the jobs were not packed")
        out.append(d)
    if not bs:
        out.append(dict(meta, kind="s1", error="the S1 workload did not run"))
    else:
        out.append(dict(meta, kind="s1", rc=bs.get("rc"), jobs=bs.get("n"), **{k: bs.get(k) for k in (
            "delivered", "duplicates", "missing", "lateness_ms_p50", "lateness_ms_p99",
            "lateness_ms_max", "e2e_rate", "put_rate", "ack_fail")},
            deferd_rss_kb=num(fs, "deferd_rss_kb"), listing_max_bytes=num(fs, "listing_max_bytes"),
            dirty_kb_before=num(sy, "dirty_kb"), sync_ms=num(sy, "ms")))
    if not zr:
        out.append(dict(meta, kind="zkrestart", error="ZooKeeper was not restarted"))
    else:
        cmd = num(zr, "cmd_ms")
        fd = num(bd, "first_delivery_ms") if bd and num(bd, "delivered") else None
        out.append(dict(meta, kind="zkrestart", ok=zr.get("ok"),
                        stop_ms=diff(num(zr, "stopped_ms"), cmd),
                        ruok_ms=diff(num(zr, "ruok_ms"), cmd), srvr_ms=diff(num(zr, "srvr_ms"), cmd),
                        serve_ms=diff(num(zr, "read_ms"), cmd),
                        serve_after_start_ms=diff(num(zr, "read_ms"), num(zr, "launch_ms")),
                        read_children=num(zr, "read_children"),
                        deferd_ms=diff(num(zr, "deferd_ms"), cmd), deferd_how=zr.get("deferd_how"),
                        deliver_put_ms=diff(num(bd, "t0_ms"), cmd), deliver_ms=diff(fd, cmd),
                        deliver_rc=(bd or {}).get("rc"),
                        deliver_delivered=num(bd, "delivered"), deliver_missing=num(bd, "missing"),
                        deliver_lateness_ms_p99=num(bd, "lateness_ms_p99"),
                        zk_rss_kb_after_restart=num(fr, "zk_rss_kb"),
                        snapshot_bytes=num(fz, "snapshot_bytes"),
                        znodes_after_restart=num(fr, "zk_znode_count")))
    return out


def sparse(by, meta):
    n = meta["n"]
    f0, f1 = by.get(("files0", "zkfiles")), by.get(("files1", "zkfiles"))
    d0, d1, bp = by.get(("files0", "deferd")), by.get(("sparse", "deferd")), by.get(("sparse", "bench"))
    if not (f0 and f1 and bp and d0 and d1):
        return [dict(meta, kind="sparse", error="the sparse puts did not run" if not bp else
                     "no ZooKeeper figures before or after the sparse puts")]
    logb, txns = diff(num(f1, "txnlog_bytes"), num(f0, "txnlog_bytes")), diff(num(f1, "txns"), num(f0, "txns"))
    t0, t1 = f0.get("txns_by_type") or {}, f1.get("txns_by_type") or {}
    zn = diff(num(d1, "zk_znode_count"), num(d0, "zk_znode_count"))
    rate = num(bp, "preload_rate")
    return [dict(meta, kind="sparse", rc=bp.get("rc"), put_rate=rate,
                 put_ms_mean=round(1000 / rate, 3) if rate else None,
                 preload_fail=num(bp, "preload_fail"),
                 txnlog_bytes=logb, txnlog_bytes_per_put=per(logb, n), txns=txns,
                 txns_per_put=per(txns, n),
                 txns_by_type={k: t1.get(k, 0) - t0.get(k, 0) for k in t1 if t1.get(k, 0) != t0.get(k, 0)},
                 znodes_added=zn, znodes_per_job=per(zn, n),
                 zk_data_bytes_per_job=per(diff(num(d1, "zk_approximate_data_size"), num(d0, "zk_approximate_data_size")), n),
                 zk_rss_kb=num(d1, "zk_rss_kb"), deferd_rss_kb=num(d1, "deferd_rss_kb"))]


def main(argv):
    if len(argv) != 5 or argv[1] not in ("backlog", "sparse"):
        sys.stderr.write(__doc__)
        return 2
    names = [x for x in argv[3].split(",")]
    meta = json.loads(argv[4])
    by = load(argv[2], names)
    lines = (backlog if argv[1] == "backlog" else sparse)(by, meta)
    for d in lines:
        print(json.dumps(d, separators=(",", ":")))
    return 1 if any("error" in d for d in lines) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
