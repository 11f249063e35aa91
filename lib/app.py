"""Start-up of every animetop process: settings, logging, database, broker."""

from __future__ import annotations

import logging
import sys

import dramatiq
from dramatiq import Broker

from lib.core import log_filters
from lib.core.clock import Clock, set_clock
from lib.core.db import bind_database
from lib.core.redaction import redact_text
from lib.core.settings import Settings, SettingsError, settings_or_exit
from lib.messaging.broker import build_broker

LOG_FORMAT = "%(asctime)s %(levelname)s %(process)d %(name)s: %(message)s"


class RedactingFormatter(logging.Formatter):
    """Wraps a handler's formatter: every line it writes, traceback included, has the credentials of the URLs
    in it redacted (``redact_text``), whatever library quoted them."""

    def __init__(self, inner: logging.Formatter | None = None) -> None:
        super().__init__()
        self.inner = inner or logging.Formatter()

    def format(self, record: logging.LogRecord) -> str:
        return redact_text(self.inner.format(record))


def configure_logging(level: str) -> None:
    logging.basicConfig(level=level, format=LOG_FORMAT)
    logging.getLogger().setLevel(level)
    # Also the handlers Dramatiq's and periodiq's command lines installed before this process imported the app.
    for handler in logging.getLogger().handlers:
        if not isinstance(handler.formatter, RedactingFormatter):
            handler.setFormatter(RedactingFormatter(handler.formatter))
    # pyppeteer and websockets narrate every CDP frame, Dramatiq every boot step: quiet unless DEBUG.
    for noisy in ("pyppeteer", "websockets", "pika", "urllib3", "dramatiq"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLevelName(level)))
    # pika logs every connection failure at ERROR, a traceback and half a dozen lines from each layer, and then
    # raises it to its caller, which says it once: Dramatiq's consumer ("connection error … reconnecting"), a
    # command's one line. Its own account only at DEBUG.
    if logging.getLevelName(level) > logging.DEBUG:
        logging.getLogger("pika").setLevel(logging.CRITICAL)
    log_filters.install()


def setup(settings: Settings | None = None) -> Broker:
    """Configure this process and return the broker, installed as Dramatiq's global one."""
    settings = settings or settings_or_exit()
    configure_logging(settings.log_level)
    set_clock(Clock(settings.clock_speed, settings.clock_anchor))
    bind_database(settings.database_url_resolved)
    try:
        broker = build_broker(settings)
    except SettingsError as e:  # found only once connected (BROKER_URL at a Redis Cluster node)
        print(f"animetop: bad setting {e}", file=sys.stderr)
        raise SystemExit(2) from None
    dramatiq.set_broker(broker)
    return broker
