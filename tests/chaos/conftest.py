"""Fixtures of the chaos suite: the Procfile's process types as real processes, and ways to hurt them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from ..helpers import cmdline, descendants, parent_of, threads

ROOT = Path(__file__).parent.parent.parent


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
