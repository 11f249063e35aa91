"""notify_alert and deliver_alert: alert webhooks, once each (logic in ``lib.notify``)."""

import dramatiq
from dramatiq.middleware import CurrentMessage

from lib.errors import BadMessage
from lib.notify import DEDUPLICATED, NOTIFY_ACTOR_OPTIONS, DELIVER_ACTOR_OPTIONS, Notifier, TransientDeliveryError
from lib.redis_state import state_redis
from lib.settings import get_settings
from models import IpAlert


@dramatiq.actor(**NOTIFY_ACTOR_OPTIONS)
def notify_alert(alert_id: int) -> None:
    notifier = Notifier(get_settings(), state_redis())
    alert = IpAlert.get_or_none(IpAlert.id == alert_id)
    if alert is None:
        raise BadMessage(f"no alert {alert_id}")
    if not notifier.admit(alert):
        for channel in notifier.channels:
            notifier.record(alert_id, channel, DEDUPLICATED)
        return
    for index in range(len(notifier.channels)):
        deliver_alert.send(alert_id, index)


@dramatiq.actor(**DELIVER_ACTOR_OPTIONS(get_settings()))
def deliver_alert(alert_id: int, channel: int) -> None:
    settings = get_settings()
    attempt = CurrentMessage.get_current_message().options.get("retries", 0) + 1
    try:
        Notifier(settings, None).deliver(alert_id, channel, attempt)
    except TransientDeliveryError:
        raise dramatiq.Retry(delay=int(settings.notify_retry_delay * 1000)) from None
