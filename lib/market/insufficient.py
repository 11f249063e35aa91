"""Why a measure is insufficient, and when it will be ready where that can be told (docs/concepts/measures.md,
"Insufficient"): each measure whose value is null gains ``why``, a sentence naming what it needs and what the
window has ("needs 5 sold prices in the window, has 3"; "needs 24 tracked hours in the 7 days before the window,
has 5: ready at about 2026-11-24 14:00 UTC"). The counts are the measures' own ``n``; the minimums and what each
``n`` counts are ``lib.market.windows``'s (``NEEDS``, ``HEAT_NEEDS``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from typing import TypeVar

from lib.market.values import Estimate, Measure, TimeToSell, WindowMeasures

QUANTILES = {"p25": 0.25, "median": 0.5, "p75": 0.75}

M = TypeVar("M", bound=Measure)


@dataclass(frozen=True, slots=True)
class HeatParts:
    """What the heat rests on besides its sales (``explain``'s reasons).

    Parameters:
      baseline_hours: tracked hours in the 7 days before the window.
      window_hours: tracked hours in the window.
      sell_through_ok: whether the window's sell-through is sufficient.
    """

    baseline_hours: int
    window_hours: int
    sell_through_ok: bool


def ready_at(now: float, hours_missing: int) -> str:
    """The UTC hour by which ``hours_missing`` more tracked hours will have passed (crawls continuing)."""
    at = datetime.fromtimestamp(now, timezone.utc).replace(minute=0, second=0, microsecond=0)
    return f"{at + timedelta(hours=hours_missing + 1):%Y-%m-%d %H:00} UTC"


def _has(n: int) -> str:
    return f"has {n}" if n else "has none"


def _why(m: M, why: str) -> M:
    return replace(m, why=why)


def explain(measures: WindowMeasures, now: float, needs: dict[str, tuple[int, str]], heat_needs: dict[str, int],
            heat_parts: HeatParts, previous_heat_ok: bool) -> WindowMeasures:
    """``measures`` with ``why`` on each insufficient one. ``needs``: measure → (minimum, what its n counts);
    ``heat_parts``: what the heat rests on besides its sales."""
    changed: dict[str, Measure | TimeToSell] = {}
    for name, (minimum, what) in needs.items():
        m: Measure = getattr(measures, name)
        if m.value is None:
            changed[name] = _why(m, f"needs {minimum} {what}, {_has(m.n)}" if m.n < minimum else _BEYOND.get(
                name, "insufficient"))
    tts = measures.time_to_sell_hours
    quartiles: list[Estimate] = []
    for name, q in QUANTILES.items():
        quartile: Estimate = getattr(tts, name)
        if quartile.value is None:
            quartile = _why(quartile, (
                f"needs {heat_needs['sales_to_time']} sales among the listings created in the window, "
                f"{_has(quartile.n)}" if quartile.n < heat_needs["sales_to_time"] else
                f"fewer than {q:.0%} of the listings created in the window have sold yet (the Kaplan–Meier "
                f"curve stays above {1 - q:.0%})"))
        quartiles.append(quartile)
    p25, median, p75 = quartiles
    if (p25, median, p75) != (tts.p25, tts.median, tts.p75):
        changed["time_to_sell_hours"] = replace(tts, p25=p25, median=median, p75=p75)
    heat = measures.heat
    if heat.value is None:
        heat = changed["heat"] = _why(heat, _heat_why(heat_parts, heat.n, now, heat_needs))
    momentum = measures.momentum
    if momentum.value is None:
        changed["momentum"] = _why(momentum, "needs the heat of this window and of the one before it: " + (
            f"this window's heat {heat.why}" if heat.value is None
            else "the previous window's heat is insufficient" if not previous_heat_ok else "insufficient"))
    # each value replaces its own field with the same type (``_why`` keeps it), which mypy cannot see through **
    return replace(measures, **changed) if changed else measures  # type: ignore[arg-type]  # see above


def left_out_why(by: str, needs: dict[str, tuple[int, str]], heat_needs: dict[str, int]) -> str:
    """What a ranking by ``by`` needs of an IP: why the IPs it leaves out are left out."""
    heat = (f"heat needs {heat_needs['baseline_hours']} tracked hours in the 7 days before the window, "
            f"{heat_needs['heat_sales']} sales in the window and its baseline together, and a sufficient "
            f"sell-through ({heat_needs['created']} listings created in the window)")
    if by in ("heat", "heat_low"):
        return heat
    if by == "momentum":
        return f"momentum needs the heat of the window and of the one before it ({heat})"
    if by == "time_to_sell":
        return (f"time to sell needs {heat_needs['sales_to_time']} sales among the listings created in the window, "
                "and half of those listings sold")
    minimum, what = needs[by]
    return f"{by.replace('_', ' ')} needs {minimum} {what}"


#: Why a measure with enough observations still has no value.
_BEYOND = {"hours_of_supply": "the on-sale search reported no total at the latest crawl",
           "coverage": "the sold search's total did not grow between the window's crawls"}


def _heat_why(parts: HeatParts, sales: int, now: float, needs: dict[str, int]) -> str:
    reasons = []
    baseline = parts.baseline_hours
    if baseline < needs["baseline_hours"]:
        reasons.append(f"{needs['baseline_hours']} tracked hours in the 7 days before the window, {_has(baseline)}: "
                       f"ready at about {ready_at(now, needs['baseline_hours'] - baseline)}")
    if not parts.window_hours:
        reasons.append("a tracked hour in the window")
    if sales < needs["heat_sales"]:
        reasons.append(f"{needs['heat_sales']} sales in the window and its baseline together, {_has(sales)}")
    if not parts.sell_through_ok:
        reasons.append(f"a sufficient sell-through ({needs['created']} listings created in the window)")
    return "needs " + "; ".join(reasons) if reasons else "insufficient"
