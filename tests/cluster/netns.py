"""Separate hosts on one machine: a network namespace per host, each with one veth link to a
bridge that lives in a namespace of its own. Addresses are 10.77.0.N/24 inside the run's
namespaces only (nothing is added to the machine's own network). Cutting a host takes its
link down on the bridge side: its packets go nowhere, its TCP connections stall, as when a
switch port or a cable fails. Needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN)."""

import os
import subprocess

SUBNET = "10.77.0"


class NetnsUnavailable(Exception):
    """Network namespaces cannot be made here (not root, or no permission in a container)."""


def _ip(*args, check=True):
    r = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError("ip %s: %s" % (" ".join(args), r.stderr.strip()))
    return r


class Network:
    def __init__(self, nhosts, tag=None):
        self.tag = tag or "dfr%d" % os.getpid()
        self.bridge_ns = self.tag + "-br"
        self.hosts = ["%s-h%d" % (self.tag, i + 1) for i in range(nhosts)]
        self.made = []

    def address(self, i):
        """Host i's address (0-based)."""
        return "%s.%d" % (SUBNET, i + 1)

    def up(self):
        if os.geteuid() != 0:
            raise NetnsUnavailable("not root: network namespaces need CAP_SYS_ADMIN")
        r = _ip("netns", "add", self.bridge_ns, check=False)
        if r.returncode != 0:
            raise NetnsUnavailable("ip netns add failed: %s" % r.stderr.strip())
        self.made.append(self.bridge_ns)
        b = self.bridge_ns
        _ip("-n", b, "link", "set", "lo", "up")
        _ip("-n", b, "link", "add", "br0", "type", "bridge")
        _ip("-n", b, "link", "set", "br0", "up")
        for i, h in enumerate(self.hosts):
            _ip("netns", "add", h)
            self.made.append(h)
            _ip("-n", h, "link", "set", "lo", "up")
            _ip("-n", b, "link", "add", "port%d" % i, "type", "veth", "peer", "name", "eth0",
                "netns", h)
            _ip("-n", b, "link", "set", "port%d" % i, "master", "br0", "up")
            _ip("-n", h, "addr", "add", self.address(i) + "/24", "dev", "eth0")
            _ip("-n", h, "link", "set", "eth0", "up")

    def cut(self, i):
        _ip("-n", self.bridge_ns, "link", "set", "port%d" % i, "down")

    def heal(self, i):
        _ip("-n", self.bridge_ns, "link", "set", "port%d" % i, "up")

    def run_in(self, i):
        """The command prefix that runs a program on host i."""
        return ["ip", "netns", "exec", self.hosts[i]]

    def down(self):
        for ns in reversed(self.made):
            _ip("netns", "del", ns, check=False)
        self.made = []
