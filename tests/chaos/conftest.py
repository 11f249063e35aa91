"""Fixtures of the chaos suite: the Procfile's process types as real processes, and ways to hurt them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent.parent


def children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[1]) == pid:
                    out.append(int(entry))
            except (FileNotFoundError, ProcessLookupError, IndexError):
                continue
    return out


def descendants(pid: int) -> list[int]:
    found = []
    for child in children(pid):
        found += [child, *descendants(child)]
    return found


def cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except (FileNotFoundError, ProcessLookupError):
        return b""


def _status_number(pid: int, field: str) -> int:
    """A number from /proc/PID/status (0 if the process is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        pass
    return 0


def threads(pid: int) -> int:
    return _status_number(pid, "Threads")


def rss_kib(pid: int) -> int:
    """Resident memory of one process, in KiB (0 if it is gone)."""
    return _status_number(pid, "VmRSS")


class ProcessType:
    """``animetop run KIND`` in its own process group, as honcho runs a Procfile entry."""

    def __init__(self, kind: str, env: dict[str, str], actors: str | None = None, log: Path | None = None) -> None:
        args = [sys.executable, "-m", "lib.cli", "run", kind] + (["--actors", actors] if actors else [])
        self.kind = kind
        self.log = log
        out = open(log, "ab") if log else subprocess.DEVNULL
        self.proc = subprocess.Popen(args, env={**os.environ, **env}, cwd=ROOT, start_new_session=True,
                                     stdout=out, stderr=subprocess.STDOUT)

    def dramatiq_workers(self) -> list[int]:
        """The children of the ``dramatiq`` main process under the runner: its worker processes and, once they
        are up, the /metrics fork (same command line)."""
        return [p for p in descendants(self.proc.pid)
                if b"dramatiq" in cmdline(p) and b"dramatiq" in cmdline(parent_of(p))]

    def consuming_workers(self) -> list[int]:
        """The worker processes proper: they run consumer and worker threads, the /metrics fork does not."""
        return [p for p in self.dramatiq_workers() if threads(p) > 2]

    def kill_a_worker(self) -> int | None:
        """SIGKILL one Dramatiq worker process, as the OOM killer would; its pid, or None if none is up."""
        workers = self.consuming_workers()
        if not workers:
            return None
        os.kill(workers[0], signal.SIGKILL)
        return workers[0]

    def stop(self, timeout: float = 60) -> int:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            raise


def parent_of(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return 0


@pytest.fixture
def process_types(tmp_path):
    """Start process types with ``start(kind, env, actors=None)``; all are stopped (or killed) at the end."""
    started: list[ProcessType] = []

    def start(kind: str, env: dict[str, str], actors: str | None = None) -> ProcessType:
        p = ProcessType(kind, env, actors, log=tmp_path / f"{kind}-{len(started)}.log")
        started.append(p)
        return p

    yield start
    for p in started:
        if p.proc.poll() is None:
            try:
                p.stop(timeout=30)
            except subprocess.TimeoutExpired:
                pass
