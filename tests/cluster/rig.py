"""The test cluster: three hosts (network namespaces, netns.py), each running a member of a
three-member ZooKeeper ensemble, a relay that can slow its client traffic (relay.py), a
deferd and a consumer (worker.py), the last two on the host's own clock (Debian's
libfaketime: ahead, behind, stepped during the run). Producers run here, on the reference
clock. Faults are injected by the methods below, each logged in the ledger with its start
and end. Every process is started here and ended here, by its pid."""

import os
import random
import signal
import subprocess
import threading
import time

import deferd

import ledger as ledgermod
import netns

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
ZK_PORT = 2181
RELAY_BASE = 2281
QUEUE = "jobs"


def zk_classpath():
    return subprocess.run([os.path.join(TOP, "packaging", "zk-sandbox"), "classpath"],
                          capture_output=True, text=True, check=True).stdout.strip()


class Host:
    def __init__(self, i, workdir):
        self.i = i
        self.name = "h%d" % (i + 1)
        self.dir = os.path.join(workdir, self.name)
        os.makedirs(os.path.join(self.dir, "zk", "data"), exist_ok=True)
        self.sock = os.path.join(self.dir, "deferd.sock")
        self.clock_file = os.path.join(self.dir, "faketime.rc")
        self.delay_file = os.path.join(self.dir, "relay.delay")
        self.skew_s = 0.0
        self.zk = self.relay = self.deferd = self.worker = None


class Cluster:
    def __init__(self, workdir, deferd_bin, seed=1, session_ms=4000, log=print, nhosts=3):
        self.workdir = workdir
        self.deferd_bin = deferd_bin
        self.seed = seed
        self.session_ms = session_ms
        self.log = log
        self.net = netns.Network(nhosts)
        self.hosts = [Host(i, workdir) for i in range(nhosts)]
        self.ledger = None
        self.procs = []
        self.stopping = threading.Event()
        self.threads = []
        self.produced = 0

    # ---- processes ----

    def _spawn(self, i, argv, logname, env=None):
        out = open(os.path.join(self.hosts[i].dir, logname), "ab")
        p = subprocess.Popen(self.net.run_in(i) + argv, stdin=subprocess.DEVNULL, stdout=out,
                             stderr=subprocess.STDOUT, env=env, start_new_session=True)
        out.close()
        self.procs.append(p)
        return p

    def _faked_env(self, h):
        """The host's wall clock as its clock file says; its monotonic clock left alone, as
        a real host's is when its wall clock steps."""
        env = dict(os.environ)
        env.update({"LD_PRELOAD": FAKETIME_LIB, "FAKETIME_TIMESTAMP_FILE": h.clock_file,
                    "FAKETIME_CACHE_DURATION": "1",
                    "PYTHONPATH": os.path.join(TOP, "src", "python")})
        env.update({"FAKETIME_DONT_FAKE_MONOTONIC": "1", "DONT_FAKE_MONOTONIC": "1"})
        asan = env.get("ASAN_OPTIONS", "")
        env["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "verify_asan_link_order=0"
        return env

    def _start_zk(self, h):
        n = len(self.hosts)
        cfg = os.path.join(h.dir, "zk", "zoo.cfg")
        with open(cfg, "w") as f:
            f.write("tickTime=1000\ninitLimit=10\nsyncLimit=5\ndataDir=%s\nclientPort=%d\n"
                    "clientPortAddress=%s\nmaxClientCnxns=0\nadmin.enableServer=false\n"
                    "4lw.commands.whitelist=*\nminSessionTimeout=2000\n"
                    % (os.path.join(h.dir, "zk", "data"), ZK_PORT, self.net.address(h.i)))
            for k in range(n):
                f.write("server.%d=%s:2888:3888\n" % (k + 1, self.net.address(k)))
        with open(os.path.join(h.dir, "zk", "data", "myid"), "w") as f:
            f.write("%d\n" % (h.i + 1))
        h.zk = self._spawn(h.i, ["java", "-Xmx192m", "-Dzookeeper.admin.enableServer=false",
                                 "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp",
                                 self.classpath, "org.apache.zookeeper.server.quorum.QuorumPeerMain",
                                 cfg], "zk.log")

    def zk_mode(self, i):
        """leader, follower, or '' (down, or cut off from a quorum)."""
        addr = self.net.address(i)
        r = subprocess.run(self.net.run_in(i) + [
            "timeout", "2", "bash", "-c",
            "exec 3<>/dev/tcp/%s/%d && printf srvr >&3 && cat <&3" % (addr, ZK_PORT)],
            capture_output=True, text=True)
        for line in r.stdout.splitlines():
            if line.startswith("Mode: "):
                return line[6:].strip()
        return ""

    def leader(self):
        for i in range(len(self.hosts)):
            if self.zk_mode(i) == "leader":
                return i
        return None

    def _wait_ensemble(self, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            modes = [self.zk_mode(i) for i in range(len(self.hosts))]
            if all(m in ("leader", "follower") for m in modes):
                return
            time.sleep(0.3)
        raise RuntimeError("the ensemble did not form: %s" % modes)

    def _start_relay(self, h):
        routes = ["%d:%s:%d" % (RELAY_BASE + k, self.net.address(k), ZK_PORT)
                  for k in range(len(self.hosts))]
        h.relay = self._spawn(h.i, ["python3", os.path.join(HERE, "relay.py"), h.delay_file]
                              + routes, "relay.log")

    def _write_deferd_config(self, h):
        hosts = ",".join("127.0.0.1:%d" % (RELAY_BASE + k) for k in range(len(self.hosts)))
        with open(os.path.join(h.dir, "deferd.ini"), "w") as f:
            f.write("[daemon]\nsocket = %s\ndrain_grace = 2s\nlog_level = %s\n"
                    "[zookeeper]\nhosts = %s\n"
                    "root = /rig\nsession_timeout = %dms\n[queue %s]\nttr = 10s\n"
                    "max_attempts = 1000\n[metrics]\nlisten = 127.0.0.1:0\n"
                    % (h.sock, os.environ.get("DEFERD_RIG_LOG_LEVEL", "info"), hosts,
                       self.session_ms, QUEUE))

    def _locks_layout(self):
        """DEFERD_RIG_LAYOUT=locks (soak --locks): the root's layout marker set to 2 before
        any daemon starts, so that due jobs are locked one by one, not claimed (a new root
        starts at 3: docs/zookeeper-layout.md, Claims). --upgrade writes 2 on a root that
        has no marker yet (deferctl makes the root)."""
        h = self.hosts[0]
        ctl = os.path.join(os.path.dirname(self.deferd_bin), "deferctl")
        r = subprocess.run(self.net.run_in(0) + [ctl, "-c", os.path.join(h.dir, "deferd.ini"),
                                                  "layout", "--upgrade", "--yes"],
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise RuntimeError("deferctl layout --upgrade failed: %s" % (r.stderr or r.stdout))
        self.log("layout: locks (marker 2)")

    def _start_deferd(self, h):
        h.deferd = self._spawn(h.i, [self.deferd_bin, "-c", os.path.join(h.dir, "deferd.ini")],
                               "deferd.log", self._faked_env(h))

    def _wait_deferd(self, h, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                with deferd.Client(socket_path=h.sock, timeout=2) as c:
                    st = c.stats()
                    if st.get("zk_state") == "CONNECTED" and st.get("clock_state") == "synced":
                        return
            except (OSError, deferd.DeferdError):
                pass
            if h.deferd.poll() is not None:
                raise RuntimeError("deferd on %s exited; see %s/deferd.log" % (h.name, h.dir))
            time.sleep(0.1)
        raise RuntimeError("deferd on %s not connected and synced in %d s" % (h.name, timeout))

    def _start_worker(self, h):
        h.worker = self._spawn(h.i, ["python3", os.path.join(HERE, "worker.py"), h.sock,
                                     self.ledger.path, h.name, QUEUE,
                                     str(self.seed * 10 + h.i)], "worker.log",
                               self._faked_env(h))

    def start(self, skews):
        self.net.up()
        self.classpath = zk_classpath()
        self.ledger = ledgermod.Ledger(os.path.join(self.workdir, "ledger.sock"))
        for h, s in zip(self.hosts, skews):
            self._set_clock(h, s)
            with open(h.delay_file, "w") as f:
                f.write("0\n")
            self._start_zk(h)
        self._wait_ensemble()
        for h in self.hosts:
            self._start_relay(h)
            self._write_deferd_config(h)
        if os.environ.get("DEFERD_RIG_LAYOUT") == "locks":
            self._locks_layout()
        for h in self.hosts:
            self._start_deferd(h)
        for h in self.hosts:
            self._wait_deferd(h)
            self._start_worker(h)
        self._watch(self._poll_stats)
        self.log("cluster up: leader h%d, skews %s" % (self.leader() + 1, skews))

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(timeout=5)
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.kill(p.pid, signal.SIGCONT)
                    os.kill(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()
        self.net.down()
        if self.ledger:
            self.ledger.close()

    def _watch(self, fn, *args):
        t = threading.Thread(target=fn, args=args, daemon=True)
        t.start()
        self.threads.append(t)

    # ---- what the daemons say ----

    def _poll_stats(self):
        lost = {}
        while not self.stopping.wait(0.25):
            for h in self.hosts:
                try:
                    with deferd.Client(socket_path=h.sock, timeout=1) as c:
                        st = c.stats()
                except (OSError, deferd.DeferdError):
                    continue
                n = int(st.get("zk_lost", 0))
                if n > lost.get(h.name, 0):
                    self.ledger.add({"ev": "session_lost", "host": h.name})
                lost[h.name] = n
                if st.get("clock_state") in ("synced", "over_limit"):
                    self.ledger.add({"ev": "skew", "host": h.name,
                                     "skew": float(st["clock_skew_ms"]),
                                     "error": float(st["clock_error_ms"]),
                                     "truth": h.skew_s * 1000, "since": h.skew_since})

    # ---- producers, on the reference clock ----

    def produce(self, rate_per_host, seconds):
        for h in self.hosts:
            self._watch(self._producer, h, rate_per_host, time.time() + seconds)

    def _producer(self, h, rate, until):
        rnd = random.Random(self.seed * 100 + h.i)
        n, client = 0, None
        while time.time() < until and not self.stopping.is_set():
            time.sleep(rnd.expovariate(rate))
            n += 1
            token = "s%d-%s-%d" % (self.seed, h.name, n)
            delay = rnd.uniform(0.2, 3.0)
            at = None if rnd.random() < 0.6 else int(ledgermod.ref_ms() + delay * 1000)
            try:
                if client is None:
                    client = deferd.Client(socket_path=h.sock, timeout=10)
                t0 = ledgermod.ref_ms()
                if at is None:
                    r = client.put(QUEUE, token.encode(), delay=delay)
                else:
                    r = client.put(QUEUE, token.encode(), at=at / 1000)
                self.ledger.add({"ev": "put_ok", "token": token, "t0": t0, "id": r.id,
                                 "host": h.name, "at": at,
                                 "delay": None if at is not None else round(delay * 1000)})
            except (OSError, deferd.DeferdError) as e:
                self.ledger.add({"ev": "put_failed", "token": token, "host": h.name,
                                 "err": getattr(e, "code", type(e).__name__)})
                if client is not None:
                    try:
                        client.close()
                    except OSError:
                        pass
                client = None
                time.sleep(0.1)
        if client is not None:
            client.close()

    # ---- faults ----

    def _fault(self, kind, host, start, end, seconds):
        self.ledger.add({"ev": "fault_start", "kind": kind, "host": host, "for_s": seconds})
        self.log("%.1f fault %s %s for %.1f s" % (time.time() % 1000, kind, host, seconds))
        start()
        if seconds is None:
            return

        def later():
            if not self.stopping.wait(seconds):
                end()
            else:
                end()
            self.ledger.add({"ev": "fault_end", "kind": kind, "host": host})
        self._watch(later)

    def cut(self, i, seconds, kind="cut"):
        self._fault(kind, self.hosts[i].name, lambda: self.net.cut(i),
                    lambda: self.net.heal(i), seconds)

    def cut_leader(self, seconds):
        i = self.leader()
        if i is not None:
            self.cut(i, seconds, kind="cut_leader")

    def _freeze(self, kind, i, proc_of, seconds):
        h = self.hosts[i]
        self._fault(kind, h.name, lambda: os.kill(proc_of(h).pid, signal.SIGSTOP),
                    lambda: os.kill(proc_of(h).pid, signal.SIGCONT), seconds)

    def freeze_deferd(self, i, seconds):
        self._freeze("freeze_deferd", i, lambda h: h.deferd, seconds)

    def freeze_zk(self, i, seconds):
        self._freeze("freeze_zk", i, lambda h: h.zk, seconds)

    def kill_deferd(self, i, seconds):
        """kill -9, restarted SECONDS later (by the same config, on the same clock)."""
        h = self.hosts[i]

        def kill():
            h.deferd.kill()
            h.deferd.wait()
        self._fault("kill_deferd", h.name, kill, lambda: self._start_deferd(h), seconds)

    def slow(self, i, ms, seconds):
        h = self.hosts[i]

        def write(v):
            with open(h.delay_file, "w") as f:
                f.write("%d\n" % v)
        self._fault("slow", h.name, lambda: write(ms), lambda: write(0), seconds)

    def _set_clock(self, h, seconds):
        with open(h.clock_file, "w") as f:
            f.write("%+.3fs\n" % seconds if seconds else "+0\n")
        h.skew_s = seconds
        h.skew_since = ledgermod.ref_ms()

    def skew(self, i, seconds):
        """The host's clock steps to SECONDS off the reference (a jump, not a slew)."""
        h = self.hosts[i]
        self.ledger.add({"ev": "clock", "host": h.name, "skew_s": seconds})
        self.log("%.1f clock of %s now %+.1f s" % (time.time() % 1000, h.name, seconds))
        self._set_clock(h, seconds)

    # ---- the end ----

    def show(self, job_id):
        """deferctl show of a job, from the first host, while the cluster still runs: where a
        job the checker misses is (pending, held and by whom, gone)."""
        ctl = os.path.join(os.path.dirname(self.deferd_bin), "deferctl")
        h = self.hosts[0]
        r = subprocess.run(self.net.run_in(0) + [ctl, "-c", os.path.join(h.dir, "deferd.ini"),
                                                 "show", job_id],
                           capture_output=True, text=True, timeout=30)
        return (r.stdout + r.stderr).strip()

    def wait_acked(self, timeout):
        """Until every acknowledged put was acked by a consumer, or TIMEOUT seconds."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            recs = self.ledger.snapshot()
            puts = {r["token"] for r in recs if r.get("ev") == "put_ok"}
            acked = {r["token"] for r in recs if r.get("ev") == "ack" and r["ok"]}
            if puts <= acked:
                return True
            time.sleep(0.5)
        return False
