"""The stored forecasts as they are shown (docs/concepts/forecasts.md): ``animetop forecast show`` and
``/api/v1/ips/{id}/forecast``."""

from __future__ import annotations

from typing import Any

from lib.core.clock import naive_utc
from lib.forecast.series import enough, histories
from lib.forecast.values import MEASURES, DayForecast, Forecast
from lib.market.statistics import day_of
from lib.segments.character_store import UnknownIp
from models import IpForecast, IpMetadata

#: A forecast's CSV columns: a row per measure and day ahead.
CSV_COLUMNS = ("measure", "day", "mean", "lo80", "hi80", "lo95", "hi95", "origin", "history_days", "model")


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
            history = by_measure[measure]
            out.append(Forecast(ip_id, measure, history.origin, len(history.days), None, None,
                                why=enough(history) or "not fitted yet: the next refresh after the daily rollup "
                                                        "fits it"))
    return out


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
