"""Stored forecasts kept current as days close (docs/concepts/forecasts.md, "Kept current"), on SQLite and MariaDB:
the rollup marks the IPs whose daily rows it wrote, a refresh refits exactly their changed histories, read from the
daily rows by the series' definition written here, and leaves an unchanged history as it was."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

import pytest

from lib.core.db import insert_rows, write_transaction
from lib.forecast import fit
from lib.forecast.read import stored
from lib.forecast.refresh import refresh
from lib.forecast.values import HORIZON, INFLOW, MEDIAN_PRICE, OUTFLOW, History
from lib.market.daily import roll_up_pending
from lib.market.statistics import mark_pending
from models import IpDailyChanged, IpForecast, IpMetadata, IpStatsHourly

FIRST = datetime(2026, 5, 4)  # naive UTC midnight


def at(day: datetime) -> float:
    return day.replace(tzinfo=timezone.utc).timestamp()


def write_days(ip_id: int, flows: dict[datetime, tuple[int, int, int]]) -> None:
    """Hourly rows for each day: (tracked hours, inflow, outflow), the flows spread over its first hours (the IP
    added to the catalogue first)."""
    if IpMetadata.get_or_none(IpMetadata.id == ip_id) is None:
        IpMetadata.create(id=ip_id, keyword=f"forecast {ip_id}", display_name=f"forecast {ip_id}",
                          created_at=FIRST, updated_at=FIRST)
    rows = []
    for day, (hours, inflow, outflow) in flows.items():
        for h in range(hours):
            rows.append({"ip_id": ip_id, "hour_bucket": day + timedelta(hours=h),
                         "inflow": inflow // hours + (h < inflow % hours),
                         "outflow": outflow // hours + (h < outflow % hours)})
    with write_transaction():
        insert_rows(IpStatsHourly, rows)
        mark_pending(ip_id, [r["hour_bucket"] for r in rows])


def expected(ip_id: int, flows: dict[datetime, tuple[int, int, int]], measure: str) -> History:
    """The definition: days of at least 12 tracked hours, flows × 24 / hours, the last run of days in a row."""
    run: list[datetime] = []
    for day in sorted(d for d, (hours, _, _) in flows.items() if hours >= 12):
        run = run + [day] if run and day - run[-1] == timedelta(days=1) else [day]
    k = 1 if measure == INFLOW else 2
    return History(ip_id, measure, tuple(run), tuple(flows[d][k] * 24.0 / flows[d][0] for d in run))


def rows_of(ip_id: int, measure: str) -> list[tuple]:
    return [(r.day, round(r.mean, 6), round(r.lo80, 6), round(r.hi80, 6), round(r.lo95, 6), round(r.hi95, 6),
             r.origin, r.history_days, r.fitted_at)
            for r in IpForecast.select().where((IpForecast.ip_id == ip_id) & (IpForecast.measure == measure))
                                        .order_by(IpForecast.day)]


def test_closed_days_are_forecast_by_the_definition_and_an_unchanged_history_is_not_refit(db):
    rng = random.Random(4)
    busy = {FIRST + timedelta(days=i): (24, rng.randint(40, 60) * (2 if i % 7 >= 5 else 1), rng.randint(20, 40))
            for i in range(30)}
    busy[FIRST + timedelta(days=12)] = (8, 20, 9)  # hardly tracked: the run starts after it
    busy[FIRST + timedelta(days=20)] = (16, 30, 14)  # two thirds tracked: scaled to the day
    young = {FIRST + timedelta(days=20 + i): (24, 5, 2) for i in range(10)}
    write_days(1, busy)
    write_days(2, young)
    now = at(FIRST + timedelta(days=30, hours=1))
    roll_up_pending(now)
    assert sorted(m.ip_id for m in IpDailyChanged.select()) == [1, 2]

    done = refresh(now)
    assert (done.ips, done.refit, done.unchanged) == (2, 2, 0)
    assert IpDailyChanged.select().count() == 0
    for measure in (INFLOW, OUTFLOW):
        history = expected(1, busy, measure)
        assert history.days[0] == FIRST + timedelta(days=13) and len(history.days) == 17
        (want,) = fit.forecast([history], now)
        assert rows_of(1, measure) == [(d.day, round(d.mean, 6), round(d.lo80, 6), round(d.hi80, 6),
                                        round(d.lo95, 6), round(d.hi95, 6), history.days[-1], 17, now)
                                       for d in want.days]
        assert [r[0] for r in rows_of(1, measure)] == [FIRST + timedelta(days=30 + k) for k in range(HORIZON)]
    shown = {f.measure: f for f in stored(2, now)}
    assert not shown[OUTFLOW].days
    assert shown[OUTFLOW].why == "needs 14 tracked days in a row (at least 12 h each); has 10"
    assert shown[MEDIAN_PRICE].why.startswith("needs 7 days with at least 3 priced sales")

    # a past day rolled up again unchanged: marked, read, not refit
    mark_pending(1, [FIRST + timedelta(days=25)])
    later = now + 3600
    roll_up_pending(later)
    again = refresh(later)
    assert (again.ips, again.refit, again.unchanged) == (1, 0, 2)
    assert rows_of(1, OUTFLOW)[0][-1] == now  # fitted then, not now

    # the next day closes: refit from the new origin
    busy[FIRST + timedelta(days=30)] = (24, 50, 30)
    write_days(1, {FIRST + timedelta(days=30): busy[FIRST + timedelta(days=30)]})
    next_day = at(FIRST + timedelta(days=31, hours=1))
    roll_up_pending(next_day)
    third = refresh(next_day)
    assert (third.ips, third.refit) == (1, 2)
    assert rows_of(1, OUTFLOW)[0][0] == FIRST + timedelta(days=31)
    assert rows_of(1, OUTFLOW)[0][6] == FIRST + timedelta(days=30)


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_history_that_became_too_short_drops_its_forecast(db):
    write_days(3, {FIRST + timedelta(days=i): (24, 10, 5) for i in range(14)})
    now = at(FIRST + timedelta(days=14, hours=1))
    roll_up_pending(now)
    refresh(now)
    assert len(rows_of(3, OUTFLOW)) == HORIZON
    # its last day turns out hardly tracked (a late correction of its hours): 13 days in a row are left
    IpStatsHourly.delete().where((IpStatsHourly.ip_id == 3) & (IpStatsHourly.hour_bucket >= FIRST + timedelta(
        days=13, hours=6))).execute()
    mark_pending(3, [FIRST + timedelta(days=13)])
    roll_up_pending(now + 60)
    assert refresh(now + 60).refit == 0
    assert rows_of(3, OUTFLOW) == [] and rows_of(3, INFLOW) == []
    assert {f.measure: f.why for f in stored(3, now + 60)}[OUTFLOW].endswith("has 13")
