"""The JSON of the read side's cached answers and of the window rows it reads, through orjson: a cold board of
1,000 IPs spent more than half its time in the standard library's ``json``, parsing every IP's stored row and
encoding the board for Redis; orjson does both in C, several times faster (docs/scaling.md).

``dumps`` writes what ``json.dumps(value, ensure_ascii=False, default=str)`` wrote, as UTF-8 bytes: integer keys
as strings, dates, times, Decimals and dataclasses through ``str``. Two values no answer holds are written
differently: NaN and the infinities become null (the standard library wrote the non-JSON NaN and Infinity), and
an integer past 64 bits is refused. ``loads`` reads any JSON, and falls back to the standard library for the
NaN and Infinity it wrote."""

from __future__ import annotations

import json
from typing import Any

import orjson

_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def dumps(value: Any) -> bytes:
    """``value`` as JSON (UTF-8)."""
    return orjson.dumps(value, default=str, option=_OPTIONS)


def loads(text: str | bytes) -> Any:
    """The value of a JSON text (``dumps``'s or the standard library's)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)  # NaN, Infinity: the standard library's own extensions
