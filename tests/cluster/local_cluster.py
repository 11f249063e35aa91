"""A real Redis Cluster on loopback for the tests: the system's ``redis-server --cluster-enabled yes`` nodes,
joined by ``redis-cli --cluster create``, on free ports, in a temporary directory."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import redis

from ..helpers import free_port


class ClusterUnavailable(RuntimeError):
    """The system has no redis-server or redis-cli able to build a cluster."""


class LocalCluster:
    """``masters`` master nodes with ``replicas`` replicas each, every node with an append-only file synced on
    every write, so a master killed and restarted comes back with every write it acknowledged, and a master killed
    for good is replaced by its replica (which has what was replicated to it: replication is asynchronous).

    Parameters:
      masters: how many master nodes (3: the smallest cluster ``redis-cli --cluster create`` accepts).
      replicas: replicas per master.
      node_timeout_ms: the nodes' ``cluster-node-timeout``: a master back within it never counts as failed; one
        down for longer is failed over to its replica.
    """

    def __init__(self, masters: int = 3, replicas: int = 0, node_timeout_ms: int = 5000) -> None:
        for tool in ("redis-server", "redis-cli"):
            if shutil.which(tool) is None:
                raise ClusterUnavailable(f"{tool} is not installed")
        self.directory = Path(tempfile.mkdtemp(prefix="animetop-cluster-"))
        self.node_timeout_ms = node_timeout_ms
        self.replicas = replicas
        self.ports = [free_port() for _ in range(masters * (1 + replicas))]
        self.bus_ports = [free_port() for _ in range(len(self.ports))]
        self.processes: dict[int, subprocess.Popen] = {}

    @property
    def url(self) -> str:
        return "redis+cluster://" + ",".join(f"127.0.0.1:{port}" for port in self.ports)

    def node(self, port: int) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=port, socket_timeout=5, socket_connect_timeout=2)

    @property
    def running(self) -> list[int]:
        """The ports of the nodes that run (not killed)."""
        return [port for port in self.ports if port in self.processes]

    def masters(self) -> list[int]:
        """The ports of the running nodes that are masters now."""
        return [port for port in self.running if self.node(port).info("replication")["role"] == "master"]

    def start(self) -> LocalCluster:
        try:
            for port, bus in zip(self.ports, self.bus_ports, strict=True):
                self._start_node(port, bus)
            nodes = [f"127.0.0.1:{port}" for port in self.ports]
            created = subprocess.run(["redis-cli", "--cluster", "create", *nodes, "--cluster-replicas",
                                      str(self.replicas), "--cluster-yes"], capture_output=True, text=True,
                                     timeout=60)
            if created.returncode != 0:
                raise ClusterUnavailable(f"redis-cli --cluster create failed: {created.stdout}{created.stderr}")
            self.wait_ok()
        except BaseException:
            self.stop()
            raise
        return self

    def _start_node(self, port: int, bus: int) -> None:
        directory = self.directory / str(port)
        directory.mkdir(exist_ok=True)
        self.processes[port] = subprocess.Popen(
            ["redis-server", "--port", str(port), "--cluster-port", str(bus), "--bind", "127.0.0.1",
             "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
             "--cluster-node-timeout", str(self.node_timeout_ms), "--appendonly", "yes", "--appendfsync", "always",
             "--save", "", "--dir", str(directory), "--logfile", "redis.log", "--protected-mode", "no",
             # a replica syncs at once (the default waits 5 s for more replicas to share one transfer)
             "--repl-diskless-sync-delay", "0"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._wait(lambda: self.node(port).ping(), f"node {port} answering")

    def _wait(self, condition, what: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if condition():
                    return
            except redis.RedisError:
                pass
            time.sleep(0.05)
        raise ClusterUnavailable(f"timed out waiting for {what} (logs under {self.directory})")

    def wait_ok(self, timeout: float = 30.0) -> None:
        """Until every running node sees the cluster up, every slot served by a running master, and every replica
        in sync with its master."""
        def ok() -> bool:
            if not all(self.node(p).cluster("INFO")["cluster_state"] == "ok" for p in self.running):
                return False
            served = {int(master[1]) for _, _, master, *_ in self._slots()}
            if not served <= set(self.running):
                return False
            replication = [self.node(p).info("replication") for p in self.running]
            return all(r["role"] == "master" or r.get("master_link_status") == "up" for r in replication)
        self._wait(ok, "cluster_state:ok on every node, every slot served, every replica in sync", timeout)

    def _slots(self) -> list:
        return self.node(self.running[0]).execute_command("CLUSTER SLOTS")

    def flush(self) -> None:
        for port in self.masters():
            self.node(port).flushall()

    def master_of(self, key: str) -> int:
        """The port of the master that serves ``key``'s slot."""
        slot = self.node(self.running[0]).cluster("KEYSLOT", key)
        for start, end, master, *_ in self._slots():
            if start <= slot <= end:
                return int(master[1])
        raise LookupError(f"no master serves slot {slot}")

    def kill(self, port: int) -> None:
        """SIGKILL one node: what it acknowledged is in its append-only file (and, for a master, what had been
        replicated is on its replica)."""
        process = self.processes.pop(port)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=10)

    def restart(self, port: int, down_for: float = 0.0) -> None:
        """Kill one master and start it again from its files (same node id, same slots)."""
        self.kill(port)
        time.sleep(down_for)  # the outage under test, not a wait
        self.rejoin(port)

    def rejoin(self, port: int) -> None:
        """Start a killed node again from its files: a master back within the node timeout carries on, one that
        was failed over comes back as its replica's replica."""
        self._start_node(port, self.bus_ports[self.ports.index(port)])
        self.wait_ok()

    def stop(self) -> None:
        for process in self.processes.values():
            process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        self.processes.clear()
        if not os.environ.get("ANIMETOP_KEEP_CLUSTER"):
            shutil.rmtree(self.directory, ignore_errors=True)
