"""Runs a console script (``dramatiq``, ``periodiq``) as a process group that dies with the runner.

``python -m lib.operations.leash dramatiq actors --queues crawl …`` runs the ``dramatiq`` command in this
process, which leads a process group of its own: Dramatiq's worker and fork processes and the Chromium its
crawler starts all stay in it. The process runner (``lib.operations.supervisor``) starts it with
``PR_SET_PDEATHSIG`` set to ``LEASH_SIGNAL``, so the kernel signals this process when the runner dies,
however it dies. A SIGKILL cannot be caught, and honcho (after its fixed 5 s), systemd and a person with
``kill -9`` all send one to the runner; before this, the ``dramatiq`` command and its children outlived it,
re-parented to PID 1, and kept taking messages.

On ``LEASH_SIGNAL`` the whole group is SIGKILLed at once. The messages its workers held are not acknowledged,
so the broker delivers them again (RabbitMQ when the connection drops, the Redis broker when the next
consumer's maintenance finds the dead consumer's heartbeat stale), and idempotency and the result ledger make
a partly done message harmless. Work is never both lost and still running.

``PR_SET_PDEATHSIG`` is not inherited across ``fork``, which is why one leader kills the group rather than
each process watching its parent. Until the handler is installed, ``LEASH_SIGNAL``'s default action
(terminate) is already right: nothing else is in the group yet.
"""

from __future__ import annotations

import os
import signal
import sys
from importlib.metadata import entry_points

#: The signal the runner's death sends to the leader. Neither Dramatiq nor periodiq uses it.
LEASH_SIGNAL = signal.SIGUSR2


def _kill_group(signum: int, frame: object) -> None:
    os.write(2, b"animetop: the process runner died; killing its process group "
                b"(messages in flight are delivered again)\n")
    os.killpg(os.getpgrp(), signal.SIGKILL)


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m lib.operations.leash CONSOLE_SCRIPT [ARG …]", file=sys.stderr)
        return 2
    name, *args = argv
    signal.signal(LEASH_SIGNAL, _kill_group)
    if name == "dramatiq":
        from lib.core.log_filters import install_in_dramatiq_main

        install_in_dramatiq_main()
    (script,) = entry_points(group="console_scripts", name=name)
    sys.argv = [name, *args]
    result = script.load()()
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
