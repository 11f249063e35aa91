"""One structured log line per message: what ran, for which task and IP, how long, and how it ended."""

from __future__ import annotations

import inspect
import logging
import threading
import time
from typing import Any

from dramatiq import Broker, MessageProxy, Middleware

from lib.messaging.middleware.retries import LEFT_TO_NEXT_TICK

logger = logging.getLogger("animetop.events")

#: Message arguments worth a field in the event line.
FIELDS = ("task_id", "ip_id", "kind", "group_id", "alert_id", "task")


def _fields(broker: Broker, message: MessageProxy) -> str:
    """The interesting arguments, whether they were passed by position or by name."""
    arguments: dict[str, Any] = dict(message.kwargs)
    if message.args:
        try:
            fn = broker.get_actor(message.actor_name).fn
            arguments = inspect.signature(fn).bind_partial(*message.args, **message.kwargs).arguments
        except Exception:  # an argument mismatch is reported by ArgumentCheck, not here
            pass
    return " ".join(f"{name}={arguments[name]}" for name in FIELDS if name in arguments)


class EventLog(Middleware):
    """``event=message actor=… queue=… id=… task_id=… ip_id=… outcome=ok|retry|failed|skipped|next_tick
    duration_ms=…`` (``next_tick``: a periodic message that met the state unavailable, left to the next tick)."""

    def __init__(self) -> None:
        self._started: dict[str, float] = {}
        self._mutex = threading.Lock()

    def before_process_message(self, broker: Broker, message: MessageProxy) -> None:
        with self._mutex:
            self._started[message.message_id] = time.perf_counter()

    def _log(self, broker: Broker, message: MessageProxy, outcome: str, exception: BaseException | None = None) -> None:
        with self._mutex:
            started = self._started.pop(message.message_id, None)
        duration = f" duration_ms={(time.perf_counter() - started) * 1000:.0f}" if started else ""
        error = f' error="{type(exception).__name__}: {str(exception)[:200]}"' if exception is not None else ""
        line = (f"event=message actor={message.actor_name} queue={message.queue_name} id={message.message_id} "
                f"{_fields(broker, message)} outcome={outcome}{duration}{error}").replace("  ", " ")
        (logger.warning if outcome == "failed" else logger.info)(line)

    def after_process_message(self, broker: Broker, message: MessageProxy, *, result: Any = None,
                              exception: BaseException | None = None) -> None:
        if exception is None:
            self._log(broker, message, "ok")
        else:
            outcome = ("failed" if message.failed else "next_tick" if message.options.get(LEFT_TO_NEXT_TICK)
                       else "retry")
            self._log(broker, message, outcome, exception)

    def after_skip_message(self, broker: Broker, message: MessageProxy) -> None:
        self._log(broker, message, "skipped")
