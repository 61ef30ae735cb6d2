#!/usr/bin/python3
"""ZooKeeper figures for tests/bench/run and tests/bench/backlog (standard library only).

  zkprobe.py files DATADIR
      one JSON line about a ZooKeeper data directory (dataDir, or its version-2/):
      txnlog_files, txnlog_bytes (the bytes the transaction logs really hold: their files are
      preallocated with zeros, 64 MiB at a time, so their sizes say nothing), txnlog_alloc_bytes
      (the files' sizes), txns (records), txns_by_type ({"create": N, "multi": N, ...}),
      txnlog_last_zxid; snapshots, snapshot_file and snapshot_bytes (the newest snapshot by
      its zxid, snapshot.<hex zxid>), snapshot_zxid, snapshot_mtime_ms.

  zkprobe.py wait PORT PATH TIMEOUT_S
      polls 127.0.0.1:PORT every 20 ms until ZooKeeper serves again, for at most TIMEOUT_S,
      and prints one JSON line of epoch ms: ruok_ms (first "imok"), srvr_ms (first srvr with
      a Mode: line: the server is serving), read_ms (first getChildren(PATH) answered by a
      session of its own: a real read; an error answer such as NoNode counts, it was served),
      read_children (how many children PATH has, null on an error), read_err (the answer's
      error code: 0, or e.g. -101 = NoNode), ok (true once read_ms).

A transaction log (FileTxnLog) is a 16-byte header (magic "ZKLG", int version, long dbid)
and then records: a long CRC (Adler-32 of the record), an int length, that many bytes
(TxnHeader: long clientId, int cxid, long zxid, long time, int type; then the transaction),
one byte 'B'; a zero length (the preallocated zeros) or the end of the file ends it.
"""
import json
import os
import socket
import struct
import sys
import time
import zlib

TXN_TYPES = {1: "create", 2: "delete", 5: "setData", 7: "setACL", 13: "check", 14: "multi",
             15: "create2", 16: "reconfig", 19: "createContainer", 20: "deleteContainer",
             21: "createTTL", -10: "createSession", -11: "closeSession", -1: "error"}


def scan_log(path):
    """(real bytes, records, {type: count}, last zxid) of one transaction log file"""
    types, n, last_zxid = {}, 0, None
    with open(path, "rb") as f:
        head = f.read(16)
        if len(head) < 16 or head[:4] != b"ZKLG":
            return 0, 0, types, None
        used = 16
        while True:
            rec = f.read(12)
            if len(rec) < 12:
                break
            crc, length = struct.unpack(">qi", rec)
            if length <= 0:
                break
            body = f.read(length + 1)
            if len(body) < length + 1 or body[-1:] != b"B":
                break  # a record still being written: not counted
            if zlib.adler32(body[:length]) != crc & 0xFFFFFFFF:
                break
            if length >= 32:
                zxid, = struct.unpack_from(">q", body, 12)
                t, = struct.unpack_from(">i", body, 28)
                name = TXN_TYPES.get(t, str(t))
                types[name] = types.get(name, 0) + 1
                last_zxid = zxid
            n += 1
            used += 12 + length + 1
    return used, n, types, last_zxid


def files(datadir):
    d = os.path.join(datadir, "version-2")
    if not os.path.isdir(d):
        d = datadir
    out = {"txnlog_files": 0, "txnlog_bytes": 0, "txnlog_alloc_bytes": 0, "txns": 0,
           "txns_by_type": {}, "txnlog_last_zxid": None, "snapshots": 0,
           "snapshot_file": None, "snapshot_bytes": None, "snapshot_zxid": None,
           "snapshot_mtime_ms": None}
    newest = None
    for name in sorted(os.listdir(d)):
        p = os.path.join(d, name)
        kind, _, hexz = name.partition(".")
        try:
            zxid = int(hexz, 16)
        except ValueError:
            continue
        if kind == "log":
            used, n, types, last = scan_log(p)
            out["txnlog_files"] += 1
            out["txnlog_bytes"] += used
            out["txnlog_alloc_bytes"] += os.path.getsize(p)
            out["txns"] += n
            for k, v in types.items():
                out["txns_by_type"][k] = out["txns_by_type"].get(k, 0) + v
            if last is not None and (out["txnlog_last_zxid"] or -1) < last:
                out["txnlog_last_zxid"] = last
        elif kind == "snapshot":
            out["snapshots"] += 1
            if newest is None or zxid > newest[0]:
                newest = (zxid, name, p)
    if newest:
        st = os.stat(newest[2])
        out.update(snapshot_file=newest[1], snapshot_bytes=st.st_size,
                   snapshot_zxid=newest[0], snapshot_mtime_ms=int(st.st_mtime * 1000))
    return out


def now_ms():
    return int(time.time() * 1000)


def four(port, word):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(word.encode())
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    return data.decode(errors="replace")
                data += chunk
    except OSError:
        return ""


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise OSError("connection closed")
        buf += chunk
    return buf


def recv_frame(s):
    n, = struct.unpack(">i", recv_exact(s, 4))
    return recv_exact(s, n)


def send_frame(s, payload):
    s.sendall(struct.pack(">i", len(payload)) + payload)


def get_children(port, path):
    """(error code, children count) from a session of our own; raises OSError when the server
    does not serve (it closes connections while it loads its data)"""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        # ConnectRequest: protocolVersion, lastZxidSeen, timeOut, sessionId, passwd, readOnly
        send_frame(s, struct.pack(">iqiqi16sb", 0, 0, 30000, 0, 16, b"\0" * 16, 0))
        resp = recv_frame(s)
        if len(resp) < 20 or struct.unpack_from(">q", resp, 8)[0] == 0:
            raise OSError("session refused")
        p = path.encode()
        send_frame(s, struct.pack(">ii", 1, 8) + struct.pack(">i", len(p)) + p + b"\0")
        while True:
            r = recv_frame(s)
            xid, _zxid, err = struct.unpack_from(">iqi", r, 0)
            if xid == 1:
                break  # (xid -2 would be a ping, -1 a watch event: skipped)
        count = struct.unpack_from(">i", r, 16)[0] if err == 0 else None
        send_frame(s, struct.pack(">ii", 2, -11))  # closeSession
        try:
            recv_frame(s)
        except OSError:
            pass
        return err, count


def wait(port, path, timeout_s):
    out = {"ruok_ms": None, "srvr_ms": None, "read_ms": None, "read_children": None,
           "read_err": None, "ok": False}
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if out["ruok_ms"] is None and four(port, "ruok") == "imok":
            out["ruok_ms"] = now_ms()
        if out["ruok_ms"] is not None and out["srvr_ms"] is None and \
                "\nMode: " in "\n" + four(port, "srvr"):
            out["srvr_ms"] = now_ms()
        if out["ruok_ms"] is not None:
            try:
                err, count = get_children(port, path)
                # any answer is ZooKeeper serving a request (NoNode too: a layout without PATH)
                out["read_ms"], out["read_err"], out["read_children"], out["ok"] = now_ms(), err, count, True
                if out["srvr_ms"] is None:
                    out["srvr_ms"] = out["read_ms"]
                break
            except (OSError, struct.error):
                pass
        time.sleep(0.02)
    return out


def main(argv):
    if len(argv) == 3 and argv[1] == "files":
        print(json.dumps(files(argv[2]), separators=(",", ":")))
        return 0
    if len(argv) == 5 and argv[1] == "wait":
        r = wait(int(argv[2]), argv[3], float(argv[4]))
        print(json.dumps(r, separators=(",", ":")))
        return 0 if r["ok"] else 1
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
