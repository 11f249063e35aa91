"""Dramatiq's Retries, taught two kinds of failure that must not spend retries."""

from __future__ import annotations

import random

from dramatiq.middleware import Retries as _Retries

from lib.core.errors import BadMessage, LockBusy


class Retries(_Retries):
    """Retries with exponential backoff, except:

    * ``BadMessage`` can never succeed, so it is dead-lettered at once;
    * ``LockBusy`` means another worker is on it, so the message waits a
      short, jittered delay without spending a retry, up to ``max_lock_waits``
      times before it is dead-lettered as stuck.
    """

    def __init__(self, *, lock_busy_delay_ms: int, max_lock_waits: int, **kwargs) -> None:
        super().__init__(**kwargs)
        self.lock_busy_delay_ms = lock_busy_delay_ms
        self.max_lock_waits = max_lock_waits

    def after_process_message(self, broker, message, *, result=None, exception=None):
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
            broker.enqueue(message, delay=delay)
            return
        super().after_process_message(broker, message, result=result, exception=exception)
