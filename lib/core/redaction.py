"""Credentials out of what people and logs see: URLs and free text with their secrets replaced by ``***``."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

#: Query parameters whose values are secrets: webhook tokens (DingTalk's access_token), API keys, signatures.
_SECRET_QUERY_KEY = re.compile(r"token|secret|passw|pwd|signature|credential|(api|access|private)_?key"
                               r"|^(key|sig|sign|auth|authorization|session|sessionid|sid)$", re.I)


#: A path segment that looks like a token (Slack's and Discord's webhook URLs carry theirs in the path):
#: 16 or more letters, digits, - or _, with both letters and digits.
_TOKEN_SEGMENT = re.compile(r"^(?=[A-Za-z0-9_-]*[0-9])(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9_-]{16,}$")


def redact_url(url: str) -> str:
    """The URL with its secrets replaced by ``***``, for logs, status output and stored channel names:

    * the password (``user:***@host``), or a user name given alone (``***@host``, a common way to pass a token),
      also of a URL cut short after the password began (``user:***``);
    * the values of query parameters named like a secret (``access_token``, ``key``, ``sign``…);
    * for http(s) URLs, path segments that look like tokens (``/services/T0/B0/***`` of a Slack webhook).
    """
    try:
        parts = urlsplit(url)
    except ValueError:  # not even a URL (e.g. a broken IPv6 host): still never show what precedes an @
        return re.sub(r"//[^/?#]*@", "//***@", url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, colon, _password = userinfo.partition(":")
        netloc = f"{user}:***@{host}" if colon else f"***@{host}"
    elif ":" in netloc and not netloc.endswith("]") and not netloc.rpartition(":")[2].isdigit():
        netloc = netloc.partition(":")[0] + ":***"  # "user:passw…" cut short (a truncated message): no host yet
    query = "&".join(_redact_query_item(item) for item in parts.query.split("&")) if parts.query else ""
    path = parts.path
    if parts.scheme.split("+")[-1] in ("http", "https"):
        path = "/".join("***" if _TOKEN_SEGMENT.match(segment) else segment for segment in path.split("/"))
    if (netloc, query, path) == (parts.netloc, parts.query, parts.path):
        return url
    rebuilt = f"{parts.scheme}:" if parts.scheme else ""
    if parts.netloc or url[len(rebuilt):].startswith("//"):
        rebuilt += f"//{netloc}"
    return rebuilt + path + (f"?{query}" if query else "") + (f"#{parts.fragment}" if parts.fragment else "")


_URL_IN_TEXT = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>`]+")


def redact_text(text: str) -> str:
    """Free text (a log line, an error message, a traceback) with every URL in it passed through
    ``redact_url``: what a library quotes in an exception must not carry our credentials to a log."""
    if "://" not in text:
        return text
    return _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), text)


def _redact_query_item(item: str) -> str:
    name, equals, value = item.partition("=")
    return f"{name}=***" if equals and value and _SECRET_QUERY_KEY.search(name) else item
