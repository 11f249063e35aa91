"""The read side: leaderboard and IP detail, served from Redis caches that fall back to the database."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import redis

from lib.core import keys
from lib.core.clock import Clock, get_clock
from lib.core.settings import Settings
from lib.market.retention import check_window, pruned_before
from lib.market.statistics import hour_bucket
from lib.market.windows import window_measures
from models import IpAlert, IpMetadata, IpStatsHourly

logger = logging.getLogger(__name__)

#: What a leaderboard ranks by: README "Market measures" (time_to_sell is the median, fastest first).
LEADERBOARD_KINDS = ("heat", "momentum", "outflow", "inflow", "liquidity", "sell_through", "median_price",
                     "time_to_sell")
#: Ranked smallest first.
ASCENDING = {"time_to_sell"}
#: Rows kept in a cached leaderboard; ``--limit`` cuts from these.
CACHED_ROWS = 500


def display_ljust(text: str, width: int) -> str:
    """Pad to ``width`` terminal columns; CJK characters take two (so Japanese names line up)."""
    import unicodedata

    used = sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)
    return text + " " * max(0, width - used)


#: Deletes the caches listed in each index set (KEYS), then the sets, in one atomic step. A group's caches
#: share its index's hash tag (lib/core/keys.py), so a call per group stays in one Redis Cluster slot.
_INVALIDATE = """
for _, index in ipairs(KEYS) do
  for _, key in ipairs(redis.call('SMEMBERS', index)) do
    redis.call('DEL', key)
  end
  redis.call('DEL', index)
end
"""


def _ip_index(ip_id: int) -> str:
    return keys.cache_index(keys.ip_cache_group(ip_id))


LEADERBOARD_INDEX = keys.cache_index(keys.LEADERBOARD_GROUP)


def invalidate_caches(client: redis.Redis, ip_id: int) -> None:
    """Drop every leaderboard and this IP's detail caches (after its stats changed)."""
    try:
        for index in (LEADERBOARD_INDEX, _ip_index(ip_id)):  # a group per call: one slot each on a cluster
            client.eval(_INVALIDATE, 1, index)
    except redis.RedisError as e:  # caches expire by themselves within CACHE_TTL
        logger.warning("could not invalidate caches for IP %s: %s", ip_id, e)


def _cached(client: redis.Redis | None, key: str, ttl: float, compute: Callable[[], Any], index: str) -> Any:
    """``key``'s cached value, else ``compute()`` cached for ``ttl`` and listed in the set ``index``."""
    if client is not None:
        try:
            hit = client.get(key)
            if hit is not None:
                return json.loads(hit)
        except redis.RedisError as e:
            logger.warning("cache unavailable (%s); reading the database", e)
            client = None
    value = compute()
    if client is not None:
        try:
            pipe = client.pipeline(transaction=True)  # key and index share a slot (keys.py), so also on a cluster
            pipe.set(key, json.dumps(value, ensure_ascii=False, default=str), px=int(ttl * 1000))
            pipe.sadd(index, key)
            pipe.pexpire(index, int(ttl * 1000))  # outlives every member: each was set with ttl, none later
            pipe.execute()
        except redis.RedisError as e:
            logger.warning("could not fill cache %s: %s", key, e)
    return value


def leaderboard_row(ip_id: int, ip: IpMetadata, m: dict[str, Any]) -> dict[str, Any]:
    """One IP's leaderboard row: each measure's value (None: insufficient) and the counts behind them."""
    tts = m["time_to_sell_hours"]["median"]
    return {"ip_id": ip_id, "keyword": ip.keyword, "name": ip.display_name,
            "heat": m["heat"]["value"], "heat_n": m["heat"]["n"], "momentum": m["momentum"]["value"],
            "inflow": m["inflow"]["value"], "outflow": m["outflow"]["value"], "tracked_hours": m["outflow"]["n"],
            "liquidity": m["liquidity"]["value"],
            "sell_through": m["sell_through"]["value"], "sell_through_n": m["sell_through"]["n"],
            "median_price": m["median_price"]["value"], "median_price_n": m["median_price"]["n"],
            "time_to_sell": tts["value"], "time_to_sell_n": tts["n"],
            "supply": m["supply"]["value"], "coverage": m["coverage"]["value"]}


class ReadSide:
    def __init__(self, settings: Settings, client: redis.Redis | None, clock: Clock | None = None) -> None:
        self.settings = settings
        self.client = client
        self.clock = clock or get_clock()
        self.tz = ZoneInfo(settings.display_tz)

    def check_window(self, hours: int) -> None:
        """Refuse a window longer than the storage keeps (``WindowBeyondRetention``, a ValueError)."""
        check_window(hours, self.settings, self.clock.now(), pruned_before())

    def window_start(self, hours: int) -> datetime:
        """The first hour (naive UTC) of the last ``hours`` hours, the current one included."""
        return hour_bucket(self.clock.now()) - timedelta(hours=hours - 1)

    def leaderboard(self, by: str, hours: int, limit: int = 20) -> list[dict]:
        """IPs ranked by inflow, outflow or liquidity (outflow/inflow) over the last ``hours`` hours."""
        if by not in LEADERBOARD_KINDS:
            raise ValueError(f"unknown leaderboard {by!r}; expected one of {', '.join(LEADERBOARD_KINDS)}")
        if hours < 1:
            raise ValueError("hours must be at least 1")
        self.check_window(hours)
        rows = _cached(self.client, keys.leaderboard(by, hours), self.settings.cache_ttl,
                       lambda: self._leaderboard_from_db(by, hours), LEADERBOARD_INDEX)
        return rows[:limit]

    def _leaderboard_from_db(self, by: str, hours: int) -> list[dict]:
        measures = window_measures(None, hours, self.clock.now())
        names = {ip.id: ip for ip in IpMetadata.select().where(IpMetadata.id.in_(list(measures)))} if measures else {}
        rows = [leaderboard_row(ip_id, names[ip_id], m) for ip_id, m in measures.items() if ip_id in names]
        rows = [r for r in rows if r[by] is not None]  # an insufficient measure ranks nowhere, not as 0
        sign = 1 if by in ASCENDING else -1
        rows.sort(key=lambda r: (sign * r[by], -(r["outflow"] or 0), r["ip_id"]))
        for rank, row in enumerate(rows[:CACHED_ROWS], start=1):
            row["rank"] = rank
        return rows[:CACHED_ROWS]

    def ip_detail(self, ip_id: int, hours: int = 24) -> dict:
        """The window's measures, hourly series and latest alerts of one IP."""
        self.check_window(hours)

        def compute() -> dict:
            ip = IpMetadata.get_or_none(IpMetadata.id == ip_id)
            if ip is None:
                raise LookupError(f"no IP with id {ip_id}")
            series = [{
                "hour": self._display(r.hour_bucket), "inflow": r.inflow, "outflow": r.outflow,
                "liquidity": float(r.liquidity_index) if r.liquidity_index is not None else None,
                "avg_price": float(r.avg_price) if r.avg_price is not None else None,
                "min_price": float(r.min_price) if r.min_price is not None else None,
                "max_price": float(r.max_price) if r.max_price is not None else None,
                "median_price": float(r.median_price) if r.median_price is not None else None,
                "p25_price": float(r.p25_price) if r.p25_price is not None else None,
                "p75_price": float(r.p75_price) if r.p75_price is not None else None,
                "samples": r.sample_count,
            } for r in IpStatsHourly.select().where((IpStatsHourly.ip_id == ip_id)
                                                    & (IpStatsHourly.hour_bucket >= self.window_start(hours)))
                                             .order_by(IpStatsHourly.hour_bucket)]
            alerts = [{"rule": a.rule, "hour": self._display(a.hour_bucket), "message": a.message,
                       "value": a.value, "threshold": a.threshold}
                      for a in IpAlert.select().where(IpAlert.ip_id == ip_id)
                                               .order_by(IpAlert.hour_bucket.desc()).limit(20)]
            return {"ip_id": ip.id, "keyword": ip.keyword, "name": ip.display_name, "active": ip.active,
                    "weight": ip.weight, "hours": hours, "timezone": self.settings.display_tz,
                    "measures": window_measures([ip_id], hours, self.clock.now()).get(ip_id)
                    or window_measures([ip_id], hours, self.clock.now(), empty=True)[ip_id],
                    "series": series, "alerts": alerts}
        return _cached(self.client, keys.ip_cache(ip_id, f"detail:{hours}"), self.settings.cache_ttl, compute,
                       _ip_index(ip_id))

    def _display(self, naive_utc_dt) -> str:
        from datetime import timezone

        return naive_utc_dt.replace(tzinfo=timezone.utc).astimezone(self.tz).isoformat()
