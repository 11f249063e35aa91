"""The read side: leaderboard and IP detail, served from Redis caches that fall back to the database."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo

import redis
from redis.lock import Lock

from lib.core import fast_json, keys
from lib.core.clock import Clock, get_clock, naive_utc
from lib.core.settings import Settings
from lib.market import values, window_rows
from lib.market.daily import day_series, mark_resegmented
from lib.market.insufficient import left_out_why
from lib.market.rankings import ASCENDING, LEADERBOARD_KINDS
from lib.market.retention import (
    WindowBeyondRetention,
    check_segment_window,
    check_window,
    detail_horizon,
    pruned_before,
    segments_summarized_from,
)
from lib.market.series import outflow_sparklines
from lib.market.statistics import HOUR, day_of, hour_bucket
from lib.market.values import IpRow, JsonObject, RowMeasures, SegmentMeasures, SegmentRow, WindowMeasures
from lib.market.windows import HEAT_NEEDS, NEEDS, kind_measures, segment_measures, window_measures
from lib.segments.character_store import UnknownIp
from lib.segments.stored import KINDS, segment_labels
from models import IpAlert, IpMetadata, IpStatsHourly

logger = logging.getLogger(__name__)

#: The windows the dashboard offers (1, 7 and 30 days; LEADERBOARD_PRECOMPUTE's default).
COMMON_WINDOWS = window_rows.STANDARD_WINDOWS
#: Longest a reader waits for another process computing the same window before computing it itself (a holder
#: that died leaves its lock for ``COMPUTE_LOCK_TTL``).
COMPUTE_WAIT = 120.0
COMPUTE_LOCK_TTL = 600.0
#: How often a reader waiting on another process's computation looks for its result.
COMPUTE_POLL = 0.1
#: After Redis failed a read, how long the read side reads the database alone before it tries Redis again.
CACHE_PAUSE = 5.0


def display_width(text: str) -> int:
    """Terminal columns of ``text``: CJK characters take two."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def display_ljust(text: str, width: int) -> str:
    """Pad to ``width`` terminal columns (so Japanese names line up)."""
    return text + " " * max(0, width - display_width(text))


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


def invalidate_caches(client: redis.Redis, ip_id: int) -> None:
    """Drop this IP's detail caches (after its stats changed). Leaderboards are not dropped: one window's board
    covers every IP, and at a result every few seconds it would almost never be served warm; they are kept until
    CACHE_TTL and recomputed ahead of it by ``refresh_leaderboards`` (docs/concepts/market-data.md)."""
    try:
        client.eval(_INVALIDATE, 1, _ip_index(ip_id))
    except redis.RedisError as e:  # caches expire by themselves within CACHE_TTL
        logger.warning("could not invalidate caches for IP %s: %s", ip_id, e)


def _cached(client: redis.Redis | None, key: str, ttl: float, compute: Callable[[], JsonObject], index: str,
            failed: Callable[[redis.RedisError], None]) -> JsonObject:
    """``key``'s cached value, else ``compute()`` cached for ``ttl`` and listed in the set ``index``; a Redis
    error is handed to ``failed`` and the value read from the database."""
    if client is not None:
        try:
            hit = client.get(key)
            if hit is not None:
                cached: JsonObject = fast_json.loads(hit)
                return cached
        except redis.RedisError as e:
            failed(e)
            client = None
    value = compute()
    if client is not None:
        _fill(client, key, value, ttl, index)
    return value


def _fill(client: redis.Redis, key: str, value: JsonObject, ttl: float, index: str) -> None:
    """Cache ``value`` under ``key`` for ``ttl`` seconds, listed in the set ``index`` (a failure is logged; under a
    millisecond, not at all)."""
    if ttl < 0.001:
        return
    try:
        pipe = client.pipeline(transaction=True)  # key and index share a slot (keys.py), so also on a cluster
        pipe.set(key, fast_json.dumps(value), px=int(ttl * 1000))
        pipe.sadd(index, key)
        pipe.pexpire(index, int(ttl * 1000))  # outlives every member: each was set with ttl, none later
        pipe.execute()
    except redis.RedisError as e:
        logger.warning("could not fill cache %s: %s", key, e)


@contextmanager
def _kept(lock: Lock, every: float) -> Iterator[None]:
    """``lock``'s TTL re-armed every ``every`` seconds while the block runs. A computation may outlast the TTL
    (the 90-day board of 10,000 IPs, not precomputed, took 707 s against 600): without this its lock lapsed and
    the next viewer started the same computation beside it. A holder that dies stops re-arming, and its lock
    lapses within the TTL as before."""
    stop = threading.Event()

    def keep() -> None:
        while not stop.wait(every):
            try:
                lock.reacquire()
            except redis.RedisError as e:  # lost (Redis restarted or wiped): another may compute too, no harm
                logger.warning("%s: could not keep the lock of a computation (%s)", lock.name, e)
                return

    keeper = threading.Thread(target=keep, name="compute-lock-keeper", daemon=True)
    keeper.start()
    try:
        yield
    finally:
        stop.set()
        keeper.join(timeout=5)


def leaderboard_row(ip_id: int, ip: IpMetadata, m: WindowMeasures) -> IpRow:
    """One IP's leaderboard row: each measure's value (None: insufficient) and the counts behind them."""
    return IpRow(ip_id, ip.keyword, ip.display_name, RowMeasures.of(m))


#: A segments export's columns (``segment_row``): the API's and the command line's.
SEGMENT_COLUMNS = values.SEGMENT_COLUMNS


def segment_row(segment: JsonObject) -> JsonObject:
    """One segment of a (cached) segments answer as a flat row (``SEGMENT_COLUMNS``): the API's CSV export and the
    command line's."""
    return SegmentRow.from_json(segment).csv_row()


class ReadSide:
    def __init__(self, settings: Settings, client: redis.Redis | None, clock: Clock | None = None) -> None:
        self.settings = settings
        self.client = client
        self.clock = clock or get_clock()
        self.tz = ZoneInfo(settings.display_tz)
        self._cache_down_until = 0.0

    @property
    def cache(self) -> redis.Redis | None:
        """The client the read paths use: none for ``CACHE_PAUSE`` seconds after Redis failed them."""
        return self.client if time.monotonic() >= self._cache_down_until else None

    def _cache_failed(self, error: redis.RedisError) -> None:
        # each command to a Redis that is down costs its client's reconnects and backoff (seconds); a request
        # during an outage should cost the database reads alone
        self._cache_down_until = time.monotonic() + CACHE_PAUSE
        logger.warning("cache unavailable (%s); reading the database for the next %.0f s", error, CACHE_PAUSE)

    def check_window(self, hours: int) -> None:
        """Refuse a window longer than the storage keeps (``WindowBeyondRetention``, a ValueError)."""
        check_window(hours, self.settings, self.clock.now(), pruned_before())

    def check_segment_window(self, hours: int) -> None:
        """Refuse a segments window the storage does not answer (``retention.check_segment_window``)."""
        check_segment_window(hours, self.settings, self.clock.now(), pruned_before(), segments_summarized_from())

    def window_start(self, hours: int) -> datetime:
        """The first hour (naive UTC) of the last ``hours`` hours, the current one included."""
        return hour_bucket(self.clock.now()) - timedelta(hours=hours - 1)

    def leaderboard(self, by: str, hours: int, limit: int | None = 20) -> list[JsonObject]:
        """Every IP whose ``by`` measure is sufficient over the last ``hours`` hours, ranked (largest first;
        ``time_to_sell`` fastest first), each row with its ``rank``; the first ``limit`` (None: all). From the
        window's cached board when warm; else, for a precomputed window, ranked and cut by the database from its
        rows (``lib.market.window_rows``), and the board cached for the next rankings."""
        if by in LEADERBOARD_KINDS and hours >= 1 and self.precomputed(hours) and not self._board_cached(hours):
            self.check_window(hours)
            rows = window_rows.top(by, hours, self.clock.now(), limit, by in ASCENDING)
            if rows is not None:
                if self.cache is not None:
                    self.board(hours)  # every other ranking of the window, and the API's, read it warm
                return [row | {"rank": rank} for rank, row in enumerate(rows, start=1)]
        return self.ranking(by, hours)[1][:limit]

    def precomputed(self, hours: int) -> bool:
        """Whether the window is kept as rows (the standard windows and LEADERBOARD_PRECOMPUTE)."""
        return hours in window_rows.precomputed_windows(self.settings.leaderboard_precompute)

    def _board_cached(self, hours: int) -> bool:
        client = self.cache
        if client is None:
            return False
        try:
            return bool(client.exists(keys.leaderboard(hours)))
        except redis.RedisError as e:
            self._cache_failed(e)
            return False

    def ranking(self, by: str, hours: int) -> tuple[JsonObject, list[JsonObject]]:
        """The window's board (``board``) and every IP ranked by ``by`` from it."""
        if by not in LEADERBOARD_KINDS:
            raise ValueError(f"unknown leaderboard {by!r}; expected one of {', '.join(LEADERBOARD_KINDS)}")
        if hours < 1:
            raise ValueError("hours must be at least 1")
        self.check_window(hours)
        board = self.board(hours)
        rows = [r for r in board["rows"] if r[by] is not None]  # insufficient: ranked nowhere, never as 0
        sign = 1 if by in ASCENDING else -1
        rows.sort(key=lambda r: (sign * r[by], -(r["outflow"] or 0), r["ip_id"]))
        return board, [row | {"rank": rank} for rank, row in enumerate(rows, start=1)]

    def left_out(self, by: str, hours: int) -> tuple[int, str]:
        """How many IPs with data in the window a ranking by ``by`` leaves out (their measure insufficient), and
        what that ranking needs of an IP (docs/concepts/measures.md, "Insufficient")."""
        board, ranked = self.ranking(by, hours)
        return len(board["rows"]) - len(ranked), left_out_why(by, NEEDS, HEAT_NEEDS)

    def board(self, hours: int) -> JsonObject:
        """The window's board: ``rows`` (one per IP with data, every measure a ranking sorts by), each IP's
        outflow ``sparklines`` (by IP id as a string) and ``computed_at`` (Unix seconds). From the cache while
        younger than CACHE_TTL; else computed once for all rankings, by one process at a time: the others wait
        for its result (at most ``COMPUTE_WAIT``)."""
        key = keys.leaderboard(hours)
        return self._once(key, f"leaderboard:{hours}", lambda: self._board_from_db(hours),
                          lambda board: self._store(key, board))

    def _once(self, key: str, lock_name: str, compute: Callable[[], JsonObject],
              store: Callable[[JsonObject], None]) -> JsonObject:
        """``key``'s cached value; else ``compute()``d and ``store``d by one process at a time (the lock
        ``lock_name``), the others waiting for its result at most ``COMPUTE_WAIT`` before computing it themselves.
        Without Redis, computed here."""
        client = self.cache
        if client is None:
            return compute()
        try:
            hit = client.get(key)
            if hit is not None:
                cached: JsonObject = fast_json.loads(hit)
                return cached
            deadline = time.monotonic() + COMPUTE_WAIT
            while time.monotonic() < deadline:
                computed = self._compute_under_lock(key, lock_name, compute, store, only_if_missing=True)
                if computed is not None:
                    return computed
                time.sleep(COMPUTE_POLL)  # another process computes it: its result lands under key
                hit = client.get(key)
                if hit is not None:
                    cached = fast_json.loads(hit)
                    return cached
            logger.warning("%s: still being computed elsewhere after %.0f s; computing it here", lock_name,
                           COMPUTE_WAIT)
        except redis.RedisError as e:
            self._cache_failed(e)
            return compute()
        value = compute()
        store(value)
        return value

    def refresh(self, hours: int) -> bool:
        """Compute the window's board now and cache it (``refresh_leaderboards``), unless another process is
        computing it (False)."""
        self.check_window(hours)
        key = keys.leaderboard(hours)
        return self._compute_under_lock(key, f"leaderboard:{hours}", lambda: self._board_from_db(hours),
                                        lambda board: self._store(key, board), only_if_missing=False) is not None

    def refresh_common(self) -> list[int]:
        """Recompute each window of LEADERBOARD_PRECOMPUTE whose cached board is missing or past half its
        CACHE_TTL, so a viewer finds it warm; returns the windows recomputed. Run every minute
        (``refresh_leaderboards``): with the default CACHE_TTL of 10 minutes a board is recomputed about every 5
        and is never older than 10."""
        done = []
        for hours in self.settings.leaderboard_precompute:
            age = self.board_age(hours)
            if age is not None and self.clock.real_seconds(age) < self.settings.cache_ttl / 2:
                continue
            try:
                if self.refresh(hours):
                    done.append(hours)
            except WindowBeyondRetention as e:  # the other windows are still worth computing
                logger.warning("LEADERBOARD_PRECOMPUTE: %s", e)
        return done

    def update_rows(self) -> dict[int, int]:
        """Bring the precomputed windows' rows current (``lib.market.window_rows.update``): the windows the storage
        still answers; returns the rows recomputed by window."""
        windows = []
        for hours in window_rows.precomputed_windows(self.settings.leaderboard_precompute):
            try:
                self.check_window(hours)
                windows.append(hours)
            except WindowBeyondRetention as e:
                logger.warning("window rows: %s", e)
        return window_rows.update(windows, self.clock.now())

    def board_age(self, hours: int) -> float | None:
        """Seconds of the app's clock since the cached board of this window was computed (None: not cached)."""
        assert self.client is not None
        hit = self.client.get(keys.leaderboard(hours))
        return None if hit is None else self.clock.now() - float(fast_json.loads(hit)["computed_at"])

    def _compute_under_lock(self, key: str, lock_name: str, compute: Callable[[], JsonObject],
                            store: Callable[[JsonObject], None], *,
                            only_if_missing: bool) -> JsonObject | None:
        """Compute and store ``key``'s value holding the lock ``lock_name`` (kept while it computes); None when
        another process holds it."""
        assert self.client is not None
        # not thread-local: its keeper (``_kept``) re-arms it from another thread
        lock = self.client.lock(keys.lock(lock_name), timeout=COMPUTE_LOCK_TTL, blocking=False, thread_local=False)
        if not lock.acquire():
            return None
        try:
            if only_if_missing:  # the holder before us may have just stored it
                hit = self.client.get(key)
                if hit is not None:
                    cached: JsonObject = fast_json.loads(hit)
                    return cached
            with _kept(lock, COMPUTE_LOCK_TTL / 3):
                value = compute()
            store(value)
            return value
        finally:
            try:
                lock.release()
            except redis.RedisError as e:  # Redis went, or the lock was lost: it lapses by itself
                logger.warning("%s: could not release its lock (%s)", lock_name, e)

    def _lifetime(self, computed_at: float) -> float:
        """Seconds a value of a window computed at ``computed_at`` may still be served: until CACHE_TTL after it
        (the bound on its staleness), and never into the next hour, whose window is another (its oldest hour
        leaves it and a new one enters: a board of 23:59 is not the last 24 hours at 00:01)."""
        now = self.clock.now()
        hour_end = (computed_at // HOUR + 1) * HOUR
        # CACHE_TTL and Redis's expiries count real seconds, the window's hours the app's clock (faster in a demo)
        return self.clock.real_seconds(min(hour_end - now, self.settings.cache_ttl * self.clock.speed
                                           - (now - computed_at)))

    def _store(self, key: str, board: JsonObject) -> None:
        assert self.client is not None
        ttl = self._lifetime(board["computed_at"])
        if ttl < 0.001:
            return
        try:
            self.client.set(key, fast_json.dumps(board), px=int(ttl * 1000))
        except redis.RedisError as e:
            logger.warning("could not fill cache %s: %s", key, e)

    def _board_from_db(self, hours: int) -> JsonObject:
        """Every measure of every IP over the window, computed once for all the rankings."""
        computed_at = self.clock.now()
        read = window_rows.board_rows(hours, computed_at) if self.precomputed(hours) else None
        if read is not None:  # one stored row per IP
            rows, lines = read
            return {"hours": hours, "computed_at": computed_at, "rows": rows,
                    "sparklines": {str(ip_id): line for ip_id, line in lines.items()}}
        measures = window_measures(None, hours, computed_at, detail_from=detail_horizon(self.settings, computed_at))
        names = {ip.id: ip for ip in IpMetadata.select().where(IpMetadata.id.in_(list(measures)))} if measures else {}
        rows = [leaderboard_row(ip_id, names[ip_id], m).to_json() for ip_id, m in measures.items() if ip_id in names]
        since = hour_bucket(computed_at) - timedelta(hours=hours - 1)
        lines = outflow_sparklines([r["ip_id"] for r in rows], since, hours)
        # JSON object keys are strings: the same whether computed here or read from the cache
        return {"hours": hours, "computed_at": computed_at, "rows": rows,
                "sparklines": {str(ip_id): line for ip_id, line in lines.items()}}

    def ip_detail(self, ip_id: int, hours: int = 24) -> JsonObject:
        """The window's measures, hourly series and latest alerts of one IP."""
        self.check_window(hours)

        def compute() -> JsonObject:
            ip = IpMetadata.get_or_none(IpMetadata.id == ip_id)
            if ip is None:
                raise UnknownIp(ip_id)
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
                    "last_crawled_at": self._display(ip.last_crawled_at) if ip.last_crawled_at else None,
                    "measures": self.measures(ip_id, hours).to_json(),
                    "series": series, "alerts": alerts}
        return _cached(self.cache, keys.ip_cache(ip_id, f"detail:{hours}"), self._lifetime(self.clock.now()), compute,
                       _ip_index(ip_id), self._cache_failed)

    def measures(self, ip_id: int, hours: int) -> WindowMeasures:
        """The IP's measures over the window (all insufficient without data): from its row when the window is
        precomputed, else computed, reading past the detail horizon the same way before and after a pruning pass
        (``detail_horizon``)."""
        now = self.clock.now()
        detail = detail_horizon(self.settings, now)
        stored = window_rows.ip_measures(ip_id, hours, now) if self.precomputed(hours) else None
        if stored is not None:
            return stored
        return (window_measures([ip_id], hours, now, detail_from=detail).get(ip_id)
                or window_measures([ip_id], hours, now, empty=True, detail_from=detail)[ip_id])

    def segments(self, ip_id: int, hours: int, by: str) -> JsonObject:
        """The IP's segments of kind ``by`` (goods or character, docs/concepts/measures.md "Segments") with
        listings created or sold in the last ``hours`` hours, each with the window's measures restricted to its
        listings, most sold first.
        Windows up to RETENTION_DETAIL (``check_segment_window``)."""
        if by not in KINDS:
            raise ValueError(f"unknown kind of segment {by!r}; expected one of {', '.join(KINDS)}")
        now = self.clock.now()
        self.check_segment_window(hours)

        def compute() -> JsonObject:
            ip = IpMetadata.get_or_none(IpMetadata.id == ip_id)
            if ip is None:
                raise UnknownIp(ip_id)
            measures = segment_measures(ip_id, by, hours, now, detail_from=detail_horizon(self.settings, now))
            return {"ip_id": ip.id, "keyword": ip.keyword, "name": ip.display_name, "hours": hours, "by": by,
                    "segments": [row.to_json() for row in self._segment_rows(measures, by)]}
        return _cached(self.cache, keys.ip_cache(ip_id, f"segments:{by}:{hours}"), self._lifetime(self.clock.now()),
                       compute, _ip_index(ip_id), self._cache_failed)

    def segments_board(self, hours: int, by: str) -> JsonObject:
        """What sells across franchises: each segment of kind ``by`` over every IP's listings
        (docs/concepts/measures.md "Segments"), most sold first; cached for CACHE_TTL like the leaderboard, and kept
        warm for the dashboard's windows by ``refresh_segment_boards``. Windows up to RETENTION_DETAIL."""
        # one computation at a time, as the leaderboard's: cold, it reads every IP's listings of the window (21-49 s
        # for a week at 10,000 IPs), and viewers arriving meanwhile would each start it again
        return self._once(*self._segments_board_parts(hours, by))

    def _segments_board_parts(self, hours: int, by: str) -> tuple[str, str, Callable[[], JsonObject],
                                                                      Callable[[JsonObject], None]]:
        """The board's cache key, its computation's lock, the computation and its store (the window checked)."""
        if by not in KINDS:
            raise ValueError(f"unknown kind of segment {by!r}; expected one of {', '.join(KINDS)}")
        now = self.clock.now()
        self.check_segment_window(hours)
        key = keys.segments_board(by, hours)

        def compute() -> JsonObject:
            measures = kind_measures(by, hours, now, detail_from=detail_horizon(self.settings, now))
            return {"hours": hours, "by": by, "segments": [row.to_json() for row in self._segment_rows(measures, by)]}

        def store(board: JsonObject) -> None:
            assert self.client is not None
            _fill(self.client, key, board, self._lifetime(now), keys.cache_index("segments-board"))
        return key, f"segments-board:{by}:{hours}", compute, store

    def refresh_segment_boards(self) -> list[tuple[str, int]]:
        """Recompute the segments board of each kind over each of the dashboard's windows within RETENTION_DETAIL
        (``COMMON_WINDOWS``: 1 and 7 days by default) whose cache is missing or past half its CACHE_TTL, so the What
        sells page finds it warm, as ``refresh_common`` does for the leaderboards; returns the (kind, hours)
        recomputed. A board another process is computing is left to it. A longer board (30 days) reads the daily
        summaries of every IP's segments besides the events: computed when asked for, not every few minutes."""
        assert self.client is not None
        done = []
        for hours in COMMON_WINDOWS:
            if hours * 3600.0 > self.settings.retention_detail:
                continue
            for by in KINDS:
                try:
                    key, lock_name, compute, store = self._segments_board_parts(hours, by)
                except WindowBeyondRetention:  # pruned past it (RETENTION_WINDOW lowered): refused to viewers too
                    break
                left = self.client.pttl(key)  # milliseconds; negative: missing (or no TTL, never set so)
                if left > self.settings.cache_ttl * 1000 / 2:
                    continue
                if self._compute_under_lock(key, lock_name, compute, store, only_if_missing=False) is not None:
                    done.append((by, hours))
        return done

    def _segment_rows(self, measures: dict[str, SegmentMeasures], by: str) -> list[SegmentRow]:
        """Segments most sold first (then most listed, then by key), each with its label."""
        labels = segment_labels(self.settings, by)
        ordered = sorted(measures, key=lambda key: (-(measures[key].outflow.value or 0),
                                                    -(measures[key].inflow.value or 0), key))
        return [SegmentRow(key, labels.get(key, key), measures[key]) for key in ordered]

    def mark_resegmented(self, ip_id: int) -> None:
        """Some of the IP's segments were derived again (in the caller's transaction): its days whose listings are
        kept (``RETENTION_DETAIL``) are marked for the rollup, which recomputes their segments' daily rows."""
        mark_resegmented([ip_id], day_of(naive_utc(self.clock.now() - self.settings.retention_detail)))

    def segments_changed(self, ip_ids: list[int]) -> None:
        """These IPs' segments were derived again (and their days marked, ``mark_resegmented``): their cached
        answers are dropped."""
        if ip_ids:
            logger.info("the segments of %d IP(s) changed: their kept days marked for the rollup", len(ip_ids))
        if self.client is not None:
            for ip_id in ip_ids:
                invalidate_caches(self.client, ip_id)

    def max_days(self) -> int:
        """The longest per-day series answered: RETENTION_DAILY in whole days."""
        return max(1, int(self.settings.retention_daily // 86400))

    def ip_days(self, ip_id: int, days: int) -> JsonObject:
        """The IP's per-day series over the last ``days`` UTC days, today's partial day included
        (docs/operating/storage.md): flows, tracked hours and the sold-price median, quartiles, mean and range of each
        day, from the daily rows (``lib.market.daily.day_series``). Up to RETENTION_DAILY days, also before the hourly
        rows' horizon; a day without a row (not tracked) is left out."""
        if not 1 <= days <= self.max_days():
            raise WindowBeyondRetention(f"ask for 1 to {self.max_days()} days (RETENTION_DAILY keeps daily rows "
                                        f"{self.max_days()} days)")
        last = day_of(naive_utc(self.clock.now()))
        first = last - timedelta(days=days - 1)

        def compute() -> JsonObject:
            if IpMetadata.get_or_none(IpMetadata.id == ip_id) is None:
                raise UnknownIp(ip_id)
            floor = pruned_before()
            rows = day_series(ip_id, first, last, None if floor is None else naive_utc(floor))

            def price(value: Any) -> float | None:
                return None if value is None else float(value)

            series = [{"day": f"{r['day']:%Y-%m-%d}", "partial": r["day"] == last, "hours": r["hours"],
                       "inflow": r["inflow"], "outflow": r["outflow"], "samples": r["sample_count"],
                       **{name: price(r[name]) for name in ("median_price", "p25_price", "p75_price", "avg_price",
                                                            "min_price", "max_price")}} for r in rows]
            return {"ip_id": ip_id, "days": days, "first_day": f"{first:%Y-%m-%d}", "last_day": f"{last:%Y-%m-%d}",
                    "series": series}
        return _cached(self.cache, keys.ip_cache(ip_id, f"days:{days}:{last:%Y%m%d}"), self.settings.cache_ttl,
                       compute, _ip_index(ip_id), self._cache_failed)

    def _display(self, naive_utc_dt: datetime) -> str:
        return naive_utc_dt.replace(tzinfo=timezone.utc).astimezone(self.tz).isoformat()
