"""notify_alert and deliver_alert: alert webhooks, once each (logic in ``lib.alerts.notify``)."""

import dramatiq
from dramatiq.middleware import CurrentMessage

from lib.alerts.notify import DELIVER_ACTOR_OPTIONS, NOTIFY_ACTOR_OPTIONS, Notifier, deliver_once, handle_alert
from lib.core.redis_client import state_redis
from lib.core.settings import get_settings


@dramatiq.actor(**NOTIFY_ACTOR_OPTIONS)
def notify_alert(alert_id: int) -> None:
    handle_alert(Notifier(get_settings(), state_redis()), alert_id, deliver_alert.send)


@dramatiq.actor(**DELIVER_ACTOR_OPTIONS(get_settings()))
def deliver_alert(alert_id: int, channel: int) -> None:
    attempt = CurrentMessage.get_current_message().options.get("retries", 0) + 1
    deliver_once(get_settings(), alert_id, channel, attempt)
