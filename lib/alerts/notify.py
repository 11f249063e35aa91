"""Alert notifications that reach people once (docs/operating/alerts.md): webhook delivery behind three layers of dedup.

1. a lock per alert id while it is being handled (the lock middleware);
2. a state hash per (IP, rule): the same state within NOTIFY_DEDUP_WINDOW is
   not sent again, a changed one is (checked and set atomically);
3. an event id (IP, rule, old hash, new hash, minute) marked processed, so
   a redelivered message never sends twice.

Each channel is delivered by its own message, so a failing channel is
retried (timeout, 5xx) without holding up the others; a 4xx is not
retried. With Redis unavailable for the checks, delivery goes ahead:
rather a duplicate than a lost alert.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
import logging
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import redis

from lib.core import keys
from lib.core.clock import Clock, get_clock
from lib.core.db import on_conflict_update
from lib.core.redaction import redact_url
from lib.core.settings import Settings
from models import AlertDelivery, IpAlert, IpMetadata

logger = logging.getLogger(__name__)

SENT, FAILED, DEDUPLICATED = "sent", "failed", "deduplicated"

# Compare-and-set of the state hash: returns the old hash, or "=" when the state is unchanged.
_CHECK_STATE = """
local old = redis.call('GET', KEYS[1])
if old == ARGV[1] then
  return '='
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return old or ''
"""


class PermanentDeliveryError(Exception):
    """The channel refused the alert (4xx): retrying cannot help."""


class TransientDeliveryError(Exception):
    """Timeout, connection error or 5xx: worth another try."""


@dataclass(frozen=True)
class Channel:
    url: str      # where to POST (without the format prefix)
    format: str   # generic | slack | dingtalk

    @classmethod
    def parse(cls, configured: str) -> Channel:
        scheme = urlsplit(configured).scheme
        if "+" in scheme:
            fmt, real = scheme.split("+", 1)
            return cls(configured.replace(scheme, real, 1), fmt)
        return cls(configured, "generic")

    @property
    def name(self) -> str:
        return redact_url(self.url)[:191]


def state_hash(alert: IpAlert) -> str:
    return hashlib.md5(f"{alert.rule}|{alert.hour_bucket.isoformat()}|{alert.value:.4f}".encode()).hexdigest()


def alert_document(alert: IpAlert, ip: IpMetadata | None, settings: Settings) -> dict[str, Any]:
    link = f"{settings.dashboard_url.rstrip('/')}/ip/{alert.ip_id}"
    name = ip.display_name if ip else f"IP {alert.ip_id}"
    text = f"[animetop] {name}: {alert.rule.replace('_', ' ')} — {alert.message}\n{link}"
    return {
        "text": text,
        "alert": {"id": alert.id, "ip_id": alert.ip_id, "ip_name": name, "keyword": ip.keyword if ip else None,
                  "rule": alert.rule, "hour": alert.hour_bucket.isoformat() + "Z", "value": alert.value,
                  "threshold": alert.threshold, "message": alert.message, "details": json.loads(alert.details or "{}"),
                  "link": link},
    }


def body_for(channel: Channel, document: dict[str, Any]) -> dict[str, Any]:
    """The request body a channel understands."""
    if channel.format == "slack":
        return {"text": document["text"]}
    if channel.format == "dingtalk":
        return {"msgtype": "text", "text": {"content": document["text"]}}
    return document


def post(channel: Channel, body: dict[str, Any], timeout: float) -> int:
    url, headers = channel.url, {"Content-Type": "application/json"}
    parts = urlsplit(url)
    if "@" in parts.netloc:  # https://user:pass@host/…: HTTP Basic auth. Left in the URL, urllib would look the
        # whole "user:pass@host" up as a host name, handing the password to the DNS resolver.
        user, _, password = parts.netloc.rpartition("@")[0].partition(":")
        headers["Authorization"] = "Basic " + base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode()
        url = parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()
    request = urllib.request.Request(url, data=json.dumps(body, ensure_ascii=False).encode(), method="POST",
                                     headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status: int = response.status
            return status
    except urllib.error.HTTPError as e:
        detail = e.read()[:300].decode(errors="replace")
        if 400 <= e.code < 500:
            raise PermanentDeliveryError(f"HTTP {e.code}: {detail}") from None
        raise TransientDeliveryError(f"HTTP {e.code}: {detail}") from None
    except (urllib.error.URLError, OSError, TimeoutError) as e:
        raise TransientDeliveryError(str(e)) from None


class Notifier:
    def __init__(self, settings: Settings, client: redis.Redis | None, clock: Clock | None = None) -> None:
        self.settings = settings
        self.client = client
        self.clock = clock or get_clock()
        self.channels = [Channel.parse(u) for u in settings.notify_webhook_urls]
        self._check_state = client.register_script(_CHECK_STATE) if client is not None else None

    def admit(self, alert: IpAlert) -> bool:
        """Layers 2 and 3: whether this alert's state should go out now. Redis down → yes."""
        new = state_hash(alert)
        if self._check_state is None:
            logger.warning("alert %s: no Redis for the dedup checks; delivering anyway", alert.id)
            return True
        try:
            old = self._check_state(keys=[keys.notify_state(alert.ip_id, alert.rule)],
                        args=[new, int(self.settings.notify_dedup_window * 1000)])
            old = old.decode() if isinstance(old, bytes) else old
            if old == "=":
                logger.info("alert %s: same state for IP %s/%s within the window: not sent again", alert.id,
                            alert.ip_id, alert.rule)
                return False
            minute = int(self.clock.now() // 60)
            event = hashlib.md5(f"{alert.ip_id}|{alert.rule}|{old}|{new}|{minute}".encode()).hexdigest()
            assert self.client is not None  # _check_state exists only with a client
            if not self.client.set(keys.notify_event(event), 1, nx=True,
                                   px=int(self.settings.notify_dedup_window * 1000)):
                logger.info("alert %s: event %s already processed", alert.id, event)
                return False
            return True
        except redis.RedisError as e:
            logger.warning("alert %s: Redis unavailable for the dedup checks (%s); delivering anyway "
                           "(rather a duplicate than a lost alert)", alert.id, e)
            return True

    def record(self, alert_id: int, channel: Channel, status: str, detail: str = "", attempts: int = 0) -> None:
        on_conflict_update(
            AlertDelivery.insert(alert_id=alert_id, channel=channel.name, status=status, detail=detail[:500],
                                 attempts=attempts, updated_at=self.clock.utcnow()),
            [AlertDelivery.alert_id, AlertDelivery.channel],
            preserve=[AlertDelivery.status, AlertDelivery.detail, AlertDelivery.attempts, AlertDelivery.updated_at],
        ).execute()

    def already_sent(self, alert_id: int, channel: Channel) -> bool:
        return AlertDelivery.select().where((AlertDelivery.alert_id == alert_id)
                                            & (AlertDelivery.channel == channel.name)
                                            & (AlertDelivery.status == SENT)).exists()

    def deliver(self, alert_id: int, channel_index: int, attempt: int) -> str:
        """Send one alert to one channel; raises TransientDeliveryError to be retried."""
        channel = self.channels[channel_index]
        if self.already_sent(alert_id, channel):
            return SENT
        alert = IpAlert.get_by_id(alert_id)
        ip = IpMetadata.get_or_none(IpMetadata.id == alert.ip_id)
        body = body_for(channel, alert_document(alert, ip, self.settings))
        try:
            status = post(channel, body, self.settings.notify_timeout)
        except PermanentDeliveryError as e:
            logger.error("alert %s → %s refused, not retried: %s", alert_id, channel.name, e)
            self.record(alert_id, channel, FAILED, str(e), attempt)
            return FAILED
        except TransientDeliveryError as e:
            final = attempt > self.settings.notify_retries
            self.record(alert_id, channel, FAILED if final else "retrying", str(e), attempt)
            logger.warning("alert %s → %s failed (attempt %d): %s%s", alert_id, channel.name, attempt, e,
                           "; giving up" if final else "; will retry")
            if final:
                return FAILED
            raise
        self.record(alert_id, channel, SENT, f"HTTP {status}", attempt)
        logger.info("alert %s sent to %s", alert_id, channel.name)
        return SENT


def pending_alerts(ip_id: int, since: datetime.datetime) -> list[int]:
    """Alerts of an IP raised since ``since`` that no channel has heard of yet (sent again after a crash;
    the dedup layers keep that from reaching anyone twice)."""
    handled = AlertDelivery.select(AlertDelivery.alert_id)
    return [a.id for a in IpAlert.select(IpAlert.id).where((IpAlert.ip_id == ip_id) & (IpAlert.created_at >= since)
                                                           & IpAlert.id.not_in(handled))]


def handle_alert(notifier: Notifier, alert_id: int, send_delivery: Callable[[int, int], object]) -> int:
    """What ``notify_alert`` does: the dedup layers, then one delivery message per channel. Returns how
    many deliveries were sent out."""
    alert = IpAlert.get_or_none(IpAlert.id == alert_id)
    if alert is None:
        from lib.core.errors import BadMessage

        raise BadMessage(f"no alert {alert_id}")
    if not notifier.admit(alert):
        for channel in notifier.channels:
            notifier.record(alert_id, channel, DEDUPLICATED)
        return 0
    for index in range(len(notifier.channels)):
        send_delivery(alert_id, index)
    return len(notifier.channels)


def deliver_once(settings: Settings, alert_id: int, channel: int, attempt: int) -> str:
    """What ``deliver_alert`` does: one try; a transient failure becomes a Dramatiq Retry after the delay."""
    import dramatiq

    try:
        return Notifier(settings, None).deliver(alert_id, channel, attempt)
    except TransientDeliveryError:
        raise dramatiq.Retry(delay=int(settings.notify_retry_delay * 1000)) from None
