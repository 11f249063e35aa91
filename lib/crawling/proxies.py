"""Proxy switching (docs/concepts/crawling.md): after N consecutive timeout/blocked/network failures, move to the next
healthy proxy, at most once per cooldown; with no proxies, back off instead."""

from __future__ import annotations

import logging
import time
import urllib.error
import urllib.request
from collections.abc import Callable

from lib.core.redaction import redact_url
from lib.crawling.page_fetch import ErrorKind

logger = logging.getLogger(__name__)


def health_check(proxy: str, url: str, timeout: float = 10.0) -> bool:
    """Whether ``url`` answers through ``proxy`` (any HTTP status below 500 counts)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({"http": proxy, "https": proxy}))
    try:
        with opener.open(url, timeout=timeout) as response:
            status: int = response.status
            return status < 500
    except urllib.error.HTTPError as e:
        return e.code < 500
    except Exception as e:
        logger.info("proxy %s failed its health check: %s", redact_url(proxy), e)
        return False


class ProxyRotator:
    def __init__(self, proxies: tuple[str, ...], *, switch_after: int, cooldown: float, check_url: str,
                 check: Callable[[str, str], bool] = health_check, clock: Callable[[], float] = time.monotonic) -> None:
        self.proxies = list(proxies)
        self.switch_after = switch_after
        self.cooldown = cooldown
        self.check_url = check_url
        self.check = check
        self.clock = clock
        self.index = 0
        self.failures = 0
        self.last_switch = float("-inf")
        self.outcomes: dict[str, int] = {}

    @property
    def current(self) -> str | None:
        return self.proxies[self.index] if self.proxies else None

    def record(self, kind: ErrorKind | None) -> str | None | bool:
        """Count one page's outcome (None: success). Returns the proxy to switch to, or False to stay."""
        self.outcomes[kind.value if kind else "ok"] = self.outcomes.get(kind.value if kind else "ok", 0) + 1
        if kind is None or not kind.counts_toward_proxy_switch:
            self.failures = 0
            return False
        self.failures += 1
        if self.failures < self.switch_after or not self.proxies:
            return False
        if self.clock() - self.last_switch < self.cooldown:
            return False
        for step in range(1, len(self.proxies)):  # every other proxy, in order
            candidate = (self.index + step) % len(self.proxies)
            if self.check(self.proxies[candidate], self.check_url):
                logger.warning("%d failures in a row: switching proxy %s → %s", self.failures,
                               redact_url(self.current or ""), redact_url(self.proxies[candidate]))
                self.index = candidate
                self.failures = 0
                self.last_switch = self.clock()
                return self.proxies[candidate]
        logger.error("no other healthy proxy among %d: staying on %s", len(self.proxies),
                     redact_url(self.current or ""))
        self.last_switch = self.clock()
        return False

    def backoff(self) -> float:
        """Seconds to wait before the next page when failing with nothing to switch to."""
        if self.failures < self.switch_after:
            return 0.0
        return min(60.0, 2.0 ** (self.failures - self.switch_after + 1))
