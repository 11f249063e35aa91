"""The stored forecasts, kept current as days close (docs/concepts/forecasts.md, "Kept current").

The daily rollup marks each IP whose daily rows it wrote (``IpDailyChanged``, in its own transaction); a refresh
takes the marked IPs a batch at a time, reads their histories and their segments' (``series``), refits each series
whose history changed since its stored forecast (``History.fingerprint``) and replaces that series' rows, then drops
the marks it read. Before a flow's forecast is replaced, the days it covered that have closed are held against it
(``breakouts``). So its cost follows the IPs whose days changed, not the IPs there are, and a history that did
not change is not refit.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

import peewee

from lib.core.clock import naive_utc
from lib.core.db import ParameterList, insert_rows, write_transaction
from lib.forecast import breakouts, fit
from lib.forecast.series import daily_rows, enough, histories, segment_histories
from lib.forecast.values import DayForecast, Forecast, History, Segment
from lib.market.statistics import day_of, tuples
from models import IpDailyChanged, IpForecast, SegmentForecast

logger = logging.getLogger(__name__)

#: IPs read, fitted and written at a time.
BATCH = 200

#: A stored series: its IP, its segment (None: the IP's own) and its measure.
SeriesKey = tuple[int, Segment | None, str]


@dataclass(frozen=True, slots=True)
class Refreshed:
    """What a refresh did: IPs it took, series it refit, series left as they were (their history unchanged), and
    the alerts its breakouts raised (``lib.forecast.breakouts``)."""

    ips: int = 0
    refit: int = 0
    unchanged: int = 0
    alerts: tuple[int, ...] = ()


def refresh(now: float, max_batches: int | None = None) -> Refreshed:
    """Refit the forecasts of the marked IPs (module docstring), ``BATCH`` IPs at a time until none is left (or
    ``max_batches``)."""
    today = day_of(naive_utc(now))
    ips = refit = unchanged = batches = 0
    alerts: list[int] = []
    while max_batches is None or batches < max_batches:
        marks = list(tuples(IpDailyChanged.select(IpDailyChanged.ip_id, IpDailyChanged.version)
                            .order_by(IpDailyChanged.ip_id).limit(BATCH)))
        if not marks:
            break
        batches += 1
        ip_ids = [ip_id for ip_id, _ in marks]
        stored, made_before = _stored(ip_ids)
        rows = daily_rows(ip_ids, today)
        series = [h for by_measure in histories(ip_ids, today, rows).values() for h in by_measure.values()]
        series += [h for by_measure in segment_histories(ip_ids, today, rows).values() for h in by_measure.values()]
        wanted: list[History] = []
        dropped: list[SeriesKey] = []
        for history in series:
            key = (history.ip_id, history.segment, history.measure)
            if enough(history) is not None:
                if key in stored:
                    dropped.append(key)
            elif stored.get(key) == history.fingerprint():
                unchanged += 1
            else:
                wanted.append(history)
        # a segment whose listings left every day of the history has no history left: its forecast goes
        present = {(h.ip_id, h.segment, h.measure) for h in series}
        dropped += [key for key in stored if key[1] is not None and key not in present]
        made = fit.forecast(wanted, now)
        found = [c for h in wanted if (h.ip_id, h.segment, h.measure) in made_before
                 for c in breakouts.checks(h, made_before[h.ip_id, h.segment, h.measure])]
        with write_transaction():
            alerts += breakouts.record(found, now)
            for key in dropped + [(f.ip_id, f.segment, f.measure) for f in made]:
                _delete(key)
            insert_rows(IpForecast, [_row(f, d) for f in made if f.segment is None for d in f.days])
            insert_rows(SegmentForecast, [_row(f, d) for f in made if f.segment is not None for d in f.days])
            for ip_id, version in marks:  # a mark the rollup renewed meanwhile stays for the next refresh
                IpDailyChanged.delete().where((IpDailyChanged.ip_id == ip_id)
                                              & (IpDailyChanged.version == version)).execute()
        ips += len(marks)
        refit += len(made)
    if ips:
        logger.info("forecasts: %d IP(s) whose days changed, %d series refit, %d unchanged", ips, refit, unchanged)
    return Refreshed(ips, refit, unchanged, tuple(alerts))


def _row(f: Forecast, d: DayForecast) -> dict[str, object]:
    segment = {} if f.segment is None else {"kind": f.segment.kind, "key": f.segment.key}
    return {"ip_id": f.ip_id, **segment, "measure": f.measure, "day": d.day, "origin": f.origin,
            "history_days": f.history_days, "model": f.model, "fingerprint": f.fingerprint, "fitted_at": f.fitted_at,
            "mean": d.mean, "lo80": d.lo80, "hi80": d.hi80, "lo95": d.lo95, "hi95": d.hi95,
            "ordinary_lo95": d.ordinary_lo95, "ordinary_hi95": d.ordinary_hi95}


def _delete(key: SeriesKey) -> None:
    ip_id, segment, measure = key
    if segment is None:
        IpForecast.delete().where((IpForecast.ip_id == ip_id) & (IpForecast.measure == measure)).execute()
    else:
        SegmentForecast.delete().where((SegmentForecast.ip_id == ip_id) & (SegmentForecast.kind == segment.kind)
                                       & (SegmentForecast.key == segment.key)
                                       & (SegmentForecast.measure == measure)).execute()


def _stored(ip_ids: Sequence[int]) -> tuple[dict[SeriesKey, str], dict[SeriesKey, list[DayForecast]]]:
    """In one read of each table of stored forecasts: the history each series was fitted on (its fingerprint), and
    the days ahead of the checked flows (``breakouts.CHECKED``)."""
    fingerprints: dict[SeriesKey, str] = {}
    flows: dict[SeriesKey, list[DayForecast]] = {}
    for start in range(0, len(ip_ids), BATCH):
        chunk = ParameterList(list(ip_ids[start:start + BATCH]))
        for ip_id, measure, fingerprint, *days in tuples(
                IpForecast.select(IpForecast.ip_id, IpForecast.measure, IpForecast.fingerprint,
                                  *_day_columns(IpForecast)).where(IpForecast.ip_id.in_(chunk))):
            fingerprints[(ip_id, None, measure)] = fingerprint
            if measure in breakouts.CHECKED:
                flows.setdefault((ip_id, None, measure), []).append(DayForecast(*days))
        for ip_id, kind, key, measure, fingerprint, *days in tuples(
                SegmentForecast.select(SegmentForecast.ip_id, SegmentForecast.kind, SegmentForecast.key,
                                       SegmentForecast.measure, SegmentForecast.fingerprint,
                                       *_day_columns(SegmentForecast)).where(SegmentForecast.ip_id.in_(chunk))):
            segment = Segment(kind, key)
            fingerprints[(ip_id, segment, measure)] = fingerprint
            if measure in breakouts.CHECKED:
                flows.setdefault((ip_id, segment, measure), []).append(DayForecast(*days))
    return fingerprints, flows


def _day_columns(table: type[IpForecast] | type[SegmentForecast]) -> tuple[peewee.Field, ...]:
    """A stored day's columns, in ``DayForecast``'s order."""
    return (table.day, table.mean, table.lo80, table.hi80, table.lo95, table.hi95, table.ordinary_lo95,
            table.ordinary_hi95)
