"""Parsers of setting values: raw environment text in, a typed value or a ValueError saying what was expected."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TypeVar
from urllib.parse import urlsplit

from lib.core.redaction import redact_url

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")


_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, None: 1}


def parse_duration(raw: str) -> float:
    """``"90s"``, ``"5m"``, ``"2h"``, ``"1d"``, ``"250ms"`` or plain seconds → seconds."""
    match = _DURATION.match(raw)
    if not match:
        raise ValueError(f"expected a duration like 90s, 5m, 2h or 1d; got {raw!r}")
    seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    if seconds <= 0:
        raise ValueError(f"must be longer than zero; got {raw!r}")
    return seconds


def format_duration(seconds: float) -> str:
    """Seconds as ``parse_duration`` reads them, in the largest unit that holds them whole: 21600 → ``"6h"``."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and float(seconds / size).is_integer():
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def hour_windows(raw: str) -> tuple[int, ...]:
    """``"1d,7d,30d"``: comma-separated durations of whole hours → hours (empty: none)."""
    hours = []
    for part in (p.strip() for p in raw.split(",") if p.strip()):
        seconds = parse_duration(part)
        if seconds % 3600:
            raise ValueError(f"windows are whole hours (like 24h, 7d); got {part!r}")
        hours.append(int(seconds // 3600))
    return tuple(hours)


N = TypeVar("N", int, float)


def number(kind: type[N], *, at_least: float | None = None, above: float | None = None) -> Callable[[str], N]:
    """A parser of whole numbers (``int``) or numbers (``float``) with a lower bound."""
    noun = "a whole number" if kind is int else "a number"

    def parse(raw: str) -> N:
        try:
            value = kind(raw.strip())
        except ValueError:
            raise ValueError(f"expected {noun}; got {raw!r}") from None
        if above is not None and not value > above:
            raise ValueError(f"must be above {above:g}; got {raw!r}")
        if at_least is not None and value < at_least:
            bound = "must not be negative" if at_least == 0 else f"must be at least {at_least:g}"
            raise ValueError(f"{bound}; got {raw!r}")
        return value

    return parse


positive_int = number(int, at_least=1)


non_negative_int = number(int, at_least=0)


positive_float = number(float, above=0)


non_negative_float = number(float, at_least=0)


def share(raw: str) -> float:
    """A share: a number above 0 and at most 1."""
    value = positive_float(raw)
    if value > 1:
        raise ValueError(f"must be at most 1; got {raw!r}")
    return value


def timezone(raw: str) -> str:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        ZoneInfo(raw.strip())
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {raw!r}; expected a name like Asia/Tokyo or UTC") from None
    return raw.strip()


def boolean(raw: str) -> bool:
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"expected true or false; got {raw!r}")


def regex(raw: str) -> str:
    try:
        re.compile(raw)
    except re.error as e:
        raise ValueError(f"not a regular expression: {e}") from None
    return raw


def proxy_list(raw: str) -> tuple[str, ...]:
    proxies = tuple(p.strip() for p in raw.split(",") if p.strip())
    for proxy in proxies:
        if urlsplit(proxy).scheme not in ("http", "https", "socks5"):
            raise ValueError(f"proxy {redact_url(proxy)!r} must start with http://, https:// or socks5://")
    return proxies


def address_name(raw: str) -> str:
    """A name for an address in Redis keys and metrics labels: letters, digits, '.', '_' and '-', at most 64."""
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", raw):
        raise ValueError(f"{raw!r} is not a name of letters, digits, '.', '_' and '-' (at most 64)")
    return raw


WEBHOOK_SCHEMES = ("http", "https", "slack+https", "slack+http", "dingtalk+https", "dingtalk+http")


def webhook_list(raw: str) -> tuple[str, ...]:
    urls = tuple(u.strip() for u in raw.split(",") if u.strip())
    for url in urls:
        if urlsplit(url).scheme not in WEBHOOK_SCHEMES:
            raise ValueError(
                f"webhook {redact_url(url)!r} must start with https://, slack+https:// or dingtalk+https://")
    return urls


def sink(raw: str) -> str:
    value = raw.strip()
    if value == "database" or (value.startswith("actor:") and len(value) > len("actor:")):
        return value
    raise ValueError(f"expected database or actor:NAME; got {raw!r}")


def secret_token(raw: str) -> str:
    """A shared secret people type or paste: long enough not to be guessed."""
    token = raw.strip()
    if len(token) < 16:
        raise ValueError("must be at least 16 characters (try: python3 -c 'import secrets; "
                         "print(secrets.token_urlsafe(24))')")
    return token


def log_level(raw: str) -> str:
    level = raw.strip().upper()
    if level not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
        raise ValueError(f"expected DEBUG, INFO, WARNING, ERROR or CRITICAL; got {raw!r}")
    return level


def url(*schemes: str, no_credentials: str | None = None,
        refused: Mapping[str, str] | None = None) -> Callable[[str], str]:
    """A URL parser. ``no_credentials``: the URL must carry no user or password (it is shown to people, or
    there is a proper setting for them), and this says why. ``refused``: schemes a user may well try that this
    setting cannot take, each with the reason."""
    def parse(raw: str) -> str:
        raw = raw.strip()
        try:
            parts = urlsplit(raw)
        except ValueError as e:
            raise ValueError(f"not a URL: {e}") from None
        if refused and parts.scheme in refused:
            raise ValueError(f"{parts.scheme}:// is refused: {refused[parts.scheme]}")
        if parts.scheme not in schemes:
            allowed = ", ".join(f"{s}://" for s in schemes)
            scheme = parts.scheme
            raise ValueError(f"unknown URL scheme {scheme + '://' if scheme else '(none)'}; expected one of {allowed}")
        if no_credentials and "@" in parts.netloc:
            raise ValueError(f"must not carry credentials ({redact_url(raw)}): {no_credentials}")
        return raw

    return parse


def path(raw: str) -> str:
    if not raw.strip():
        raise ValueError("must not be empty")
    return raw
