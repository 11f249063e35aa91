"""Dramatiq's Retries, taught three kinds of failure that must not spend retries."""

from __future__ import annotations

import logging
import random
import time
from typing import Any, cast

from dramatiq import Broker, Message, MessageProxy
from dramatiq.common import compute_backoff
from dramatiq.middleware import Retries as _Retries

from lib.core.errors import BadMessage, LockBusy
from lib.core.state_errors import is_transient

logger = logging.getLogger(__name__)

#: Message option: when (Unix ms) the message first met the state unavailable, in the outage it is riding out.
OUTAGE_SINCE = "state_outage_since"
#: Message option: how many times it ran again for that outage (its backoff's exponent).
OUTAGE_WAITS = "state_outage_waits"
#: Message option set on a periodic message that met a state outage and was left to its actor's next tick (the
#: event line's ``outcome=next_tick``).
LEFT_TO_NEXT_TICK = "left_to_next_tick"
#: Longest wait between two runs of a message riding out a state outage: the state coming back is noticed within it.
OUTAGE_MAX_BACKOFF_MS = 5_000


def _run_again(broker: Broker, message: MessageProxy, delay: int) -> None:
    # The proxy is enqueued as it is, as Dramatiq's own Retries does: it hands every attribute on to its message.
    broker.enqueue(cast("Message[Any]", message), delay=delay)


class Retries(_Retries):
    """Retries with exponential backoff, except:

    * ``BadMessage`` can never succeed, so it is dead-lettered at once;
    * ``LockBusy`` means another worker is on it, so the message waits a
      short, jittered delay without spending a retry, up to ``max_lock_waits``
      times before it is dead-lettered as stuck;
    * a transient state error (``lib.core.state_errors``: Redis restarting, a
      cluster failing over) is no fault of the message: it runs again with
      backoff (from ``min_backoff``, at most ``OUTAGE_MAX_BACKOFF_MS`` apart)
      without spending a retry, for as long as the outage it met is shorter
      than ``outage_tolerance_ms``; after that it spends its retries as any
      failure does, with an ERROR line. A periodic actor's message is not run
      again at all: its next tick does the work, and one WARNING says so.

    Parameters:
      lock_busy_delay_ms: the delay before a message that met a held lock runs again.
      max_lock_waits: how many times a message may meet a held lock.
      outage_tolerance_ms: how long a message rides out a state outage (STATE_OUTAGE_TOLERANCE).
      **kwargs: Dramatiq's ``Retries`` options (``max_retries``, ``min_backoff``, ``max_backoff``).
    """

    def __init__(self, *, lock_busy_delay_ms: int, max_lock_waits: int, outage_tolerance_ms: int,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lock_busy_delay_ms = lock_busy_delay_ms
        self.max_lock_waits = max_lock_waits
        self.outage_tolerance_ms = outage_tolerance_ms

    def after_process_message(self, broker: Broker, message: MessageProxy, *, result: Any = None,
                              exception: BaseException | None = None) -> None:
        if exception is not None and not is_transient(exception):  # the state answered: any outage it met is over
            message.options.pop(OUTAGE_SINCE, None)
            message.options.pop(OUTAGE_WAITS, None)
        if isinstance(exception, BadMessage):
            # the event line (outcome=failed, error=…) says it; this only for DEBUG
            self.logger.debug("Dead-lettering message %s at once: %s", message.message_id, exception)
            message.fail()
            return
        if isinstance(exception, LockBusy):
            waits = message.options.get("lock_waits", 0) + 1
            if waits > self.max_lock_waits:
                self.logger.warning("Message %s met a held lock %d times: dead-lettering it.",
                                    message.message_id, waits)
                message.fail()
                return
            message.options["lock_waits"] = waits
            delay = int(self.lock_busy_delay_ms * random.uniform(0.5, 1.5))
            self.logger.debug("%s; message %s runs again in %d ms.", exception, message.message_id, delay)
            _run_again(broker, message, delay)
            return
        if exception is not None and is_transient(exception) and self._ride_out_outage(broker, message, exception):
            return
        # through the class, not super(): Dramatiq's hook is unannotated, and untyped_calls_exclude (pyproject.toml)
        # recognises it only by that name
        _Retries.after_process_message(self, broker, message, result=result, exception=exception)

    def _ride_out_outage(self, broker: Broker, message: MessageProxy, exception: BaseException) -> bool:
        """Handle a message that met a transient state error; False when its outage outlasted the tolerance
        (then it is an ordinary failure)."""
        actor = broker.get_actor(message.actor_name)
        if "periodic" in actor.options:
            message.options[LEFT_TO_NEXT_TICK] = True
            logger.warning("%s could not run its tick, the state is unavailable (%s: %s); its next tick does the "
                           "work", message.actor_name, type(exception).__name__, str(exception)[:200])
            return True  # acked, not failed: periodiq sends the next tick
        now = int(time.time() * 1000)
        since = message.options.setdefault(OUTAGE_SINCE, now)
        if now - since > self.outage_tolerance_ms:
            logger.error("message %s (%s) met the state unavailable for %.0f s, longer than STATE_OUTAGE_TOLERANCE "
                         "(%.0f s): it now spends its retries. %s: %s", message.message_id, message.actor_name,
                         (now - since) / 1000, self.outage_tolerance_ms / 1000, type(exception).__name__,
                         str(exception)[:200])
            return False
        waits = message.options.get(OUTAGE_WAITS, 0) + 1
        message.options[OUTAGE_WAITS] = waits
        min_backoff = message.options.get("min_backoff", actor.options.get("min_backoff", self.min_backoff))
        # compute_backoff: jittered, min_backoff doubled per wait, at most the cap
        _, delay = compute_backoff(waits - 1, factor=min(min_backoff, OUTAGE_MAX_BACKOFF_MS),
                                   max_backoff=OUTAGE_MAX_BACKOFF_MS)
        logger.debug("state unavailable; message %s runs again in %d ms (not a retry): %s", message.message_id,
                     delay, exception)
        _run_again(broker, message, delay)
        return True
