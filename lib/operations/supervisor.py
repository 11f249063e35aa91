"""Runs one process type (worker, crawler, scheduler) and keeps it running.

Procfile runners such as honcho signal a process's whole group, and a
terminal's Ctrl-C reaches the foreground group: a bare ``dramatiq`` line gets
SIGTERM from the runner and again from its own parent, and its workers take
the second one as "kill now", dropping in-flight work. So the Dramatiq or
periodiq command runs here in a session of its own, gets exactly one SIGTERM
however many arrive, and is restarted if it dies (a SIGKILLed Dramatiq
worker child makes the whole ``dramatiq`` command exit).

That session dies with the runner: the command runs under ``lib.operations.leash``, which the kernel
signals when the runner dies (``PR_SET_PDEATHSIG``), even by SIGKILL, and which then SIGKILLs the session's
process group (Dramatiq's processes and Chromium). Without it, honcho's SIGKILL 5 s after Ctrl-C left the
``dramatiq`` command and its children running, re-parented to PID 1.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from types import FrameType

from lib.core.settings import Settings
from lib.operations.leash import LEASH_SIGNAL

logger = logging.getLogger("animetop.supervisor")

PROCESS_TYPES = ("worker", "crawler", "scheduler")

PR_SET_PDEATHSIG = 1


def command_for(process_type: str, settings: Settings, actors: str = "actors") -> list[str]:
    """The Dramatiq/periodiq command line of a process type (``actors``: the module declaring them); its first
    word is the console script's name, which ``lib.operations.leash`` runs."""
    from lib.messaging.queues import CRAWLER_QUEUES, WORKER_QUEUES

    shutdown_ms = str(int(settings.worker_shutdown_timeout * 1000))
    if process_type == "worker":
        return ["dramatiq", actors, "--queues", *WORKER_QUEUES,
                "--processes", str(settings.worker_processes), "--threads", str(settings.worker_threads),
                "--worker-shutdown-timeout", shutdown_ms]
    if process_type == "crawler":
        return ["dramatiq", actors, "--queues", *CRAWLER_QUEUES,
                "--processes", str(settings.crawler_processes), "--threads", str(settings.crawler_threads),
                "--worker-shutdown-timeout", shutdown_ms]
    if process_type == "scheduler":
        return ["periodiq", actors]
    raise ValueError(f"unknown process type {process_type!r}; expected one of {', '.join(PROCESS_TYPES)}")


def leashed(command: list[str]) -> list[str]:
    """``command`` run by ``lib.operations.leash``, whose process group dies with this process."""
    return [sys.executable, "-m", "lib.operations.leash", *command]


def die_with(parent: int, signum: int = int(LEASH_SIGNAL)) -> Callable[[], None]:
    """A child's set-up before exec: the kernel sends it ``signum`` when ``parent`` dies, however it dies.
    Everything it needs is looked up here, in the parent: a forked child of a threaded process must not
    import or load libraries."""
    prctl = ctypes.CDLL("libc.so.6", use_errno=True).prctl

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signum)
        if os.getppid() != parent:  # the parent died before the request was in place
            os._exit(1)
    return preexec


class Supervisor:
    """Starts ``command``, forwards one SIGTERM on stop, restarts it when it dies."""

    def __init__(self, command: list[str], *, grace: float, restart: bool = True) -> None:
        self.command = command
        self.grace = grace
        self.restart = restart
        self.stopping = False
        self.child: subprocess.Popen[bytes] | None = None

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.stopping:
            logger.info("already stopping (got %s again); waiting for in-flight work", signal.Signals(signum).name)
            return
        self.stopping = True
        logger.info("stopping: %s sends one SIGTERM to %s", signal.Signals(signum).name, self.command[0])
        if self.child and self.child.poll() is None:
            self.child.send_signal(signal.SIGTERM)

    def run(self) -> int:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, self._on_signal)
        backoff = 1.0
        while True:
            started = time.monotonic()
            self.child = subprocess.Popen(leashed(self.command), start_new_session=True,
                                          preexec_fn=die_with(os.getpid()))
            logger.info("started %s (pid %d)", " ".join(self.command), self.child.pid)
            code = self._wait()
            self._kill_leftovers()
            if self.stopping:
                logger.info("%s stopped (exit code %s)", self.command[0], code)
                return 0 if code in (0, -signal.SIGTERM) else code
            if not self.restart:
                return code
            if time.monotonic() - started > 60:
                backoff = 1.0
            # A first restart is the designed recovery (Dramatiq exits when one of its workers was killed, and
            # says so); one that keeps dying within a minute is an error.
            log = logger.info if backoff == 1.0 else logger.error
            log("%s exited unexpectedly (code %s); restarting in %.0fs", self.command[0], code, backoff)
            deadline = time.monotonic() + backoff
            while time.monotonic() < deadline and not self.stopping:
                time.sleep(0.1)
            if self.stopping:
                return 0
            backoff = min(backoff * 2, 30.0)

    def _kill_leftovers(self) -> None:
        """Whatever the command left in its process group (a Chromium whose worker was killed) goes too."""
        if self.child is None:
            return
        try:
            os.killpg(self.child.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def _wait(self) -> int:
        assert self.child is not None
        stop_deadline = None
        while True:
            try:
                return self.child.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                pass
            if self.stopping:
                stop_deadline = stop_deadline or time.monotonic() + self.grace
                if time.monotonic() > stop_deadline:
                    logger.error("%s did not stop within %.0fs: killing it", self.command[0], self.grace)
                    try:
                        os.killpg(self.child.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    return self.child.wait()


def run_process_type(process_type: str, settings: Settings, actors: str = "actors") -> int:
    from lib.operations.metrics import PORT_ENV, serve_metrics, use_metrics_dir

    if process_type == "crawler":
        from lib.crawling.driver import DriverError, check_sandbox

        try:
            check_sandbox(settings.chromium_no_sandbox)
        except DriverError as e:
            print(f"animetop run crawler: {e}", file=sys.stderr)
            return 2
    command = command_for(process_type, settings, actors)
    ports = {"worker": settings.metrics_port, "crawler": settings.metrics_port + 1}
    if process_type in ports:
        os.environ[PORT_ENV] = str(ports[process_type])
        use_metrics_dir(settings, process_type, ports[process_type])
        # /metrics is served by a fork of the Dramatiq command, started once its worker processes are up
        command += ["--fork-function", f"{serve_metrics.__module__}:{serve_metrics.__name__}"]
    # Dramatiq's own shutdown timeout, plus time for the process to exit.
    return Supervisor(command, grace=settings.worker_shutdown_timeout + 15).run()
