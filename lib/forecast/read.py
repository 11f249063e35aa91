"""The stored forecasts as they are shown (docs/concepts/forecasts.md): ``animetop forecast show [--by]``,
``/api/v1/ips/{id}/forecast`` and ``/api/v1/ips/{id}/segments/forecast``."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from peewee import fn

from lib.core.clock import naive_utc
from lib.forecast.series import enough, histories, segment_histories
from lib.forecast.values import HORIZON, INFLOW, MEASURES, OUTFLOW, DayForecast, Forecast, History, Segment
from lib.market.statistics import day_of, tuples
from lib.segments.character_store import UnknownIp
from models import IpForecast, IpMetadata, SegmentForecast

#: A forecast's CSV columns: a row per measure and day ahead.
CSV_COLUMNS = ("measure", "day", "mean", "lo80", "hi80", "lo95", "hi95", "origin", "history_days", "model")
#: The segments' forecasts' CSV columns: a row per segment, measure and day ahead.
SEGMENT_CSV_COLUMNS = ("key", "label", *CSV_COLUMNS)
NOT_FITTED = "not fitted yet: the next refresh after the daily rollup fits it"


def stored(ip_id: int, now: float) -> list[Forecast]:
    """The IP's forecast of each measure as stored, or why there is none (its history as of ``now``)."""
    rows: dict[str, list[IpForecast]] = {}
    for row in IpForecast.select().where(IpForecast.ip_id == ip_id).order_by(IpForecast.day):
        rows.setdefault(row.measure, []).append(row)
    by_measure = histories([ip_id], day_of(naive_utc(now)))[ip_id] if set(rows) != set(MEASURES) else {}
    out = []
    for measure in MEASURES:
        found = rows.get(measure)
        if found:
            first = found[0]
            out.append(Forecast(ip_id, measure, first.origin, first.history_days, first.model,
                                first.fitted_at, tuple(DayForecast(r.day, r.mean, r.lo80, r.hi80, r.lo95, r.hi95)
                                                       for r in found)))
        else:
            out.append(_missing(by_measure[measure]))
    return out


def _missing(history: History) -> Forecast:
    """No stored forecast of this history: why."""
    return Forecast(history.ip_id, history.measure, history.origin, len(history.days), None, None,
                    why=enough(history) or NOT_FITTED, segment=history.segment)


def segments_stored(ip_id: int, kind: str, now: float) -> dict[Segment, list[Forecast]]:
    """The forecast of each measure of each of the IP's segments of ``kind`` that has a daily row in its history,
    as stored, or why there is none (their histories as of ``now``)."""
    rows: dict[tuple[Segment, str], list[SegmentForecast]] = {}
    for row in (SegmentForecast.select().where((SegmentForecast.ip_id == ip_id) & (SegmentForecast.kind == kind))
                .order_by(SegmentForecast.key, SegmentForecast.measure, SegmentForecast.day)):
        rows.setdefault((Segment(kind, row.key), row.measure), []).append(row)
    out: dict[Segment, list[Forecast]] = {}
    for (_, segment), by_measure in segment_histories([ip_id], day_of(naive_utc(now)), kind=kind).items():
        forecasts = []
        for measure in MEASURES:
            found = rows.get((segment, measure))
            if found:
                first = found[0]
                forecasts.append(Forecast(ip_id, measure, first.origin, first.history_days, first.model,
                                          first.fitted_at, tuple(DayForecast(r.day, r.mean, r.lo80, r.hi80, r.lo95,
                                                                             r.hi95) for r in found),
                                          segment=segment))
            else:
                forecasts.append(_missing(by_measure[measure]))
        out[segment] = forecasts
    return out


def segment_forecasts(ip_id: int, kind: str, now: float,
                      labels: Mapping[str, str]) -> dict[str, Any]:  # JSON, as the API and the command line give it
    """The forecasts of the IP's segments of ``kind`` (``segments_stored``), each with its label (``labels`` by key,
    else the key) and its sales and new listings expected over the next ``HORIZON`` days (the sums of the days'
    point forecasts; None without a forecast), the most sales expected first; ``UnknownIp`` for an IP not in the
    catalogue."""
    ip = IpMetadata.get_or_none(IpMetadata.id == ip_id)
    if ip is None:
        raise UnknownIp(ip_id)

    def expected(forecasts: list[Forecast], measure: str) -> float | None:
        days = next(f.days for f in forecasts if f.measure == measure)
        return round(sum(d.mean for d in days), 1) if days else None

    found = [(segment, forecasts, expected(forecasts, OUTFLOW), expected(forecasts, INFLOW))
             for segment, forecasts in segments_stored(ip_id, kind, now).items()]
    found.sort(key=lambda s: (-1.0 if s[2] is None else -s[2], s[0].key))
    segments = [{"key": segment.key, "label": labels.get(segment.key, segment.key),
                 "next_days": {"days": HORIZON, "outflow": outflow, "inflow": inflow},
                 "forecasts": [f.to_json() for f in forecasts]} for segment, forecasts, outflow, inflow in found]
    return {"ip_id": ip.id, "keyword": ip.keyword, "name": ip.display_name, "by": kind, "segments": segments}


def ip_forecast(ip_id: int, now: float) -> dict[str, Any]:  # JSON, as the API and the command line give it
    """The IP's forecast of every measure (``stored``); ``UnknownIp`` for an IP not in the catalogue."""
    ip = IpMetadata.get_or_none(IpMetadata.id == ip_id)
    if ip is None:
        raise UnknownIp(ip_id)
    return {"ip_id": ip.id, "keyword": ip.keyword, "name": ip.display_name,
            "forecasts": [f.to_json() for f in stored(ip_id, now)]}


def csv_rows(answer: dict[str, Any]) -> list[dict[str, Any]]:  # ip_forecast's JSON → CSV rows by CSV_COLUMNS
    """``ip_forecast``'s answer as flat rows (``CSV_COLUMNS``), the measures without a forecast left out."""
    return [{"measure": f["measure"], "day": d["day"], "mean": d["mean"], "lo80": d["interval_80"][0],
             "hi80": d["interval_80"][1], "lo95": d["interval_95"][0], "hi95": d["interval_95"][1],
             "origin": f["origin"], "history_days": f["history_days"], "model": f["model"]}
            for f in answer["forecasts"] for d in f["days"]]


#: A forecast counts on the What sells board while its origin is one of this many last closed days: the day's close
#: reaches the forecasts within hours, and an IP that is no longer refit (paused, or no longer tracked) keeps its
#: last forecast, of days that have passed.
CURRENT_DAYS = 2


def board_next_days(kind: str, labels: Mapping[str, str], now: float) -> dict[str, Any]:  # JSON, as the API gives it
    """Each segment of ``kind`` across the IPs (the What sells page): the sales and new listings expected over the
    ``HORIZON`` days of each IP's current forecast of it (its origin one of the last ``CURRENT_DAYS`` closed days as
    of ``now``), added up over the IPs that have one, and how many do; the most sales expected first. An IP whose
    segment is too thin to forecast adds nothing: the sums are of the forecast ones. ``stale_ips``: the IPs left out
    because their forecasts of ``kind`` are older."""
    since = day_of(naive_utc(now)) - timedelta(days=CURRENT_DAYS)
    flows = (SegmentForecast.kind == kind) & SegmentForecast.measure.in_([OUTFLOW, INFLOW])
    sums: dict[str, dict[str, float]] = {}
    ips: dict[str, int] = {}
    for key, measure, total, count in tuples(
            SegmentForecast.select(SegmentForecast.key, SegmentForecast.measure, fn.SUM(SegmentForecast.mean),
                                   fn.COUNT(SegmentForecast.ip_id.distinct()))
            .where(flows & (SegmentForecast.origin >= since))
            .group_by(SegmentForecast.key, SegmentForecast.measure)):
        sums.setdefault(key, {})[measure] = float(total)
        if measure == OUTFLOW:
            ips[key] = count
    stale = (SegmentForecast.select(fn.COUNT(SegmentForecast.ip_id.distinct()))
             .where(flows & (SegmentForecast.origin < since)).scalar())
    ordered = sorted(sums, key=lambda key: (-sums[key].get(OUTFLOW, -1.0), key))
    return {"by": kind, "days": HORIZON, "stale_ips": int(stale or 0), "segments": [
        {"key": key, "label": labels.get(key, key), "ips": ips.get(key, 0),
         "outflow": _rounded(sums[key].get(OUTFLOW)), "inflow": _rounded(sums[key].get(INFLOW))} for key in ordered]}


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def segment_csv_rows(answer: dict[str, Any]) -> list[dict[str, Any]]:  # segment_forecasts' JSON → CSV rows
    """``segment_forecasts``' answer as flat rows (``SEGMENT_CSV_COLUMNS``), a segment's measures without a forecast
    left out."""
    return [{"key": s["key"], "label": s["label"], **row}
            for s in answer["segments"] for row in csv_rows({"forecasts": s["forecasts"]})]
