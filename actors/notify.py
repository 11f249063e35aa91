"""notify_alert and deliver_alert: alert webhooks, once each (logic in ``lib.alerts.notify``)."""

from dramatiq.middleware import CurrentMessage

from lib.alerts.notify import Notifier, deliver_once, handle_alert
from lib.core.redis_client import state_redis
from lib.core.settings import get_settings
from lib.messaging.routes import DELIVER_ALERT, NOTIFY_ALERT


# Layer 1 of the alerts' dedup (docs/operating/alerts.md): one handler per alert at a time.
@NOTIFY_ALERT.declare(lock_key=lambda alert_id: f"alert:{alert_id}", max_retries=5)
def notify_alert(alert_id: int) -> None:
    handle_alert(Notifier(get_settings(), state_redis()), alert_id, deliver_alert.send)


def _within_notify_retries(retries: int, exception: BaseException) -> bool:
    """NOTIFY_RETRIES, read when a delivery fails (not when the actor is declared)."""
    return retries < get_settings().notify_retries


# One channel's delivery: NOTIFY_RETRIES retries, NOTIFY_RETRY_DELAY apart (the delay comes with the Retry).
@DELIVER_ALERT.declare(retry_when=_within_notify_retries,
                       idempotency_key=lambda alert_id, channel: f"{alert_id}:{channel}")
def deliver_alert(alert_id: int, channel: int) -> None:
    message = CurrentMessage.get_current_message()
    attempt = (message.options.get("retries", 0) if message is not None else 0) + 1
    deliver_once(get_settings(), alert_id, channel, attempt)
