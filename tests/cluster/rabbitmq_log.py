"""RabbitMQ's own view of the connections of a virtual host, from its log: which ones it accepted, and which it
closed because their heartbeats stopped ("missed heartbeats from client", logged as an error)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

_GRANTED = re.compile(r"\] (<[\d.]+>) connection \1 .*granted access to vhost '([^']*)'")
_MISSED = re.compile(r"\] (<[\d.]+>) missed heartbeats from client")


class RabbitmqLogUnavailable(RuntimeError):
    """The RabbitMQ log cannot be read here (no ``rabbitmq-diagnostics``, another machine, no permission)."""


def log_path() -> Path:
    """The node's log file, as ``rabbitmq-diagnostics log_location`` names it (the server must be local)."""
    if shutil.which("rabbitmq-diagnostics") is None:
        raise RabbitmqLogUnavailable("rabbitmq-diagnostics is not installed")
    located = subprocess.run(["rabbitmq-diagnostics", "-q", "log_location"], capture_output=True, text=True,
                             timeout=60)
    paths = [Path(line.strip()) for line in located.stdout.splitlines() if line.strip().endswith(".log")]
    if located.returncode != 0 or not paths:
        raise RabbitmqLogUnavailable(f"rabbitmq-diagnostics log_location failed: {located.stderr.strip()[:200]}")
    try:
        paths[0].stat()
        paths[0].open("rb").close()
    except OSError as e:
        raise RabbitmqLogUnavailable(f"cannot read {paths[0]}: {e}") from e
    return paths[0]


class RabbitmqLog:
    """What RabbitMQ logs about one virtual host's connections from now on.

    Parameters:
      vhost: the virtual host.
    """

    def __init__(self, vhost: str) -> None:
        self.vhost = vhost
        self.path = log_path()
        self.start = self.path.stat().st_size

    def _lines(self) -> list[str]:
        with self.path.open("rb") as f:
            f.seek(self.start)
            return f.read().decode("utf-8", "replace").splitlines()

    def connections(self) -> set[str]:
        """RabbitMQ's ids (``<0.1234.0>``) of the connections it accepted on the virtual host since."""
        return {m[1] for line in self._lines() if (m := _GRANTED.search(line)) and m[2] == self.vhost}

    def missed_heartbeats(self) -> list[str]:
        """The log lines of the connections of the virtual host RabbitMQ closed for missed heartbeats since."""
        lines = self._lines()
        ours = {m[1] for line in lines if (m := _GRANTED.search(line)) and m[2] == self.vhost}
        return [line for line in lines if (m := _MISSED.search(line)) and m[1] in ours]
