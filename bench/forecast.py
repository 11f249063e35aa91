"""``python -m bench forecast [--ips 40] [--days 91] [--cuts 5] [--max-size 200] [--seed 1]``: the forecasts
(docs/concepts/forecasts.md) backtested on the realistic market's truth (docs/concepts/simulator.md): trends,
the daily and weekly cycle, scheduled bursts, IPs of sizes drawn from its heavy-tailed distribution.

Each IP's true daily new listings (new goods, not relists) and sales, and each goods type's true daily sales across
the IPs (fitted as segments are), over ``--days`` UTC days, are cut at ``--cuts`` weekly origins ending a week
before the last day; each cut leaves at least 28 days of history. Every cut is forecast 7 days ahead by the stored
forecasts' models and by the weekly seasonal naive method, and scored (``lib.forecast.backtest``): MASE and its
ratio to the naive method's, the 80 % and 95 % intervals' coverage, the scaled pinball loss, and the coverage of the
days' distributions with the counts' steps smoothed out (``lib.forecast.backtest``, "Coverage"). Printed per series kind
and per IP size. The goods types also as the product forecasts them: each IP's sales of each goods type whose
history has the flow a segment needs, fitted as its segments are (the IP page's segments table), and those forecasts
added up over the IPs per goods type (the What sells board's next week), against the same IPs' true sales of it.
Then breakouts (``lib.forecast.breakouts``): each of the last cuts' days held against the forecast of it made the
day before, flagged as the stored forecasts flag, scored against the market's scheduled bursts: recall (bursts
flagged on their first day or the next) and precision (flagged days from a burst's first day to the day after its
last), for sales, new listings and either, and for each IP's sales of each goods type that sells 10 or more a day
(fitted as segments are; a burst of the IP counts for each of its goods types); the same recall and precision at other
margins past the 95 % interval (``lib.forecast.breakouts.MARGIN``) for the series of 10 or more a day; and the
ordinary days (outside every burst) above and below the 95 % interval, which upward breakouts rest on (each tail
should hold 2.5 % of them).

What it costs: drawing the market grows with the listings (IPs × size × days); the fits grow with the cuts (IPs,
goods types and cuts), the breakouts' with IPs × the days checked. ``--max-size`` truncates the drawn sizes (new
listings an hour) to keep the draw short: the market's own tail reaches 2,000.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import TypeVar

from lib.forecast import fit
from lib.forecast.backtest import (
    EPOCH,
    Scored,
    Summary,
    backtest,
    cuts,
    forecasts,
    score,
    seasonal_naive,
    seasonal_scale,
    summarize,
)
from lib.forecast.breakouts import MARGIN, MIN_SAMPLE, UP, Check
from lib.forecast.series import MIN_SEGMENT_FLOW
from lib.forecast.values import HORIZON, INFLOW, OUTFLOW, History, Segment
from lib.standins.simulator.model import DAY, HOUR, MarketModel

#: A series' key: an IP's keyword, or a (keyword, segment key) pair.
K = TypeVar("K", bound=Hashable)
#: A UTC midnight.
T0 = 1_800_000_000.0 - (1_800_000_000.0 % DAY)
MIN_HISTORY = 28
#: The breakouts' margins scored besides the shipped one (``lib.forecast.breakouts.MARGIN``).
MARGINS = (0.0, 0.1, 0.2, 0.3, 0.5, 1.0)
USAGE = "usage: python -m bench forecast [--ips 40] [--days 91] [--cuts 5] [--max-size 200] [--seed 1]"
#: Size classes by new listings an hour, as bench accuracy names them.
CLASSES = ((1.0, "niche (< 1/h)"), (5.0, "small (1-5/h)"), (40.0, "middling (5-40/h)"), (float("inf"),
                                                                                      "large (>= 40/h)"))


@dataclass(frozen=True)
class Options:
    """What a run simulates.

    Parameters:
        ips: how many IPs; days: the UTC days drawn; cuts: weekly origins per series; max_size: the largest size
        drawn; seed: the market's.
    """

    ips: int = 40
    days: int = 91
    cuts: int = 5
    max_size: float = 200.0
    seed: int = 1


def options(argv: list[str]) -> Options:
    values: dict[str, float] = {}
    names = {"--ips": "ips", "--days": "days", "--cuts": "cuts", "--max-size": "max_size", "--seed": "seed"}
    while argv:
        flag = argv.pop(0)
        if flag not in names or not argv:
            raise SystemExit(USAGE)
        values[names[flag]] = float(argv.pop(0))
    o = Options(**{k: (v if k == "max_size" else int(v)) for k, v in values.items()})  # type: ignore[arg-type]
    if o.days < MIN_HISTORY + 7 * o.cuts or o.ips < 1 or o.cuts < 1:
        raise SystemExit(f"{USAGE}\n  --days must leave {MIN_HISTORY} days of history before the first cut: at least "
                         f"{MIN_HISTORY + 7 * o.cuts} for {o.cuts} cuts")
    return o


@dataclass(frozen=True)
class Truth:
    """The market's true daily flows: each IP's new goods listed and sales, each goods type's sales across the IPs,
    and each IP's sales of each goods type (keyed by keyword and goods type)."""

    listed: dict[str, list[float]]
    sold: dict[str, list[float]]
    goods: dict[str, list[float]]
    ip_goods: dict[tuple[str, str], list[float]]


def daily_truth(model: MarketModel, keywords: list[str], days: int) -> Truth:
    """The IPs' true daily flows over ``days`` UTC days from ``T0`` (new goods: relists are not new listings)."""
    end = T0 + days * DAY
    life = model.traits.selling.life_hours * HOUR
    listed = {k: [0.0] * days for k in keywords}
    sold = {k: [0.0] * days for k in keywords}
    goods: dict[str, list[float]] = defaultdict(lambda: [0.0] * days)
    ip_goods: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0] * days)
    for keyword in keywords:
        for story in model.listings(keyword, T0 - life, end):
            if story.relist_of is None and T0 <= story.created < end:
                listed[keyword][int((story.created - T0) // DAY)] += 1
            if story.sold_at is not None and T0 <= story.sold_at < end:
                day = int((story.sold_at - T0) // DAY)
                sold[keyword][day] += 1
                goods[story.goods][day] += 1
                ip_goods[(keyword, story.goods)][day] += 1
    return Truth(listed, sold, dict(goods), dict(ip_goods))


def board_backtest(ip_goods: dict[tuple[str, str], list[float]], origins: list[int]) -> tuple[list[Scored],
                                                                                             list[Scored]]:
    """Each IP's sales of each goods type cut and forecast as the stored segments' forecasts are (each cut whose
    history has the flow a segment needs: ``lib.forecast.series.enough``), scored; and, per goods type and cut,
    those forecasts' point forecasts added up over the IPs, as the What sells board adds them, scored against the
    same IPs' true sales of it (MASE only: the board gives no interval)."""
    selected = [c for c in cuts(ip_goods, origins, MIN_HISTORY) if sum(c.history) >= MIN_SEGMENT_FLOW]
    made = forecasts(selected, OUTFLOW, "goods")
    per_ip = [s for c, days in zip(selected, made, strict=True) if (s := score(c, days)) is not None]
    added: dict[tuple[str, int], tuple[list[float], list[float], list[float]]] = {}
    for c, days in zip(selected, made, strict=True):
        assert isinstance(c.key, tuple)
        history, actual, mean = added.setdefault((c.key[1], c.origin), ([0.0] * len(c.history), [0.0] * HORIZON,
                                                                         [0.0] * HORIZON))
        for t, v in enumerate(c.history):
            history[t] += v
        for h in range(HORIZON):
            actual[h] += c.actual[h]
            mean[h] += days[h].mean
    board = []
    for (goods, origin), (history, actual, mean) in sorted(added.items()):
        scale = seasonal_scale(history)
        if scale > 0:
            naive = seasonal_naive(history)
            board.append(Scored(goods, origin, scale,
                                statistics.fmean(abs(a - m) for a, m in zip(actual, mean, strict=True)) / scale,
                                statistics.fmean(abs(a - n) for a, n in zip(actual, naive, strict=True)) / scale,
                                0, 0, HORIZON, float("nan")))
    return per_ip, board


def size_class(size: float) -> str:
    return next(name for bound, name in CLASSES if size < bound)


def main(argv: list[str] | None = None) -> int:
    o = options(list(argv or []))
    started = time.perf_counter()
    drawn = MarketModel(seed=o.seed)
    keywords = [f"forecast-ip-{k}" for k in range(o.ips)]
    sizes = {k: min(o.max_size, drawn.profile(k).size) for k in keywords}
    model = MarketModel(seed=o.seed, sizes=sizes)
    print(f"forecast: {o.ips} IPs of the realistic market (seed {o.seed}, sizes {min(sizes.values()):.2g}-"
          f"{max(sizes.values()):.3g} new listings an hour), {o.days} days, {o.cuts} weekly cuts of 7 days ahead, "
          f"at least {MIN_HISTORY} days of history each")
    truth = daily_truth(model, keywords, o.days)
    listed, sold, goods = truth.listed, truth.sold, truth.goods
    drawn_in = time.perf_counter() - started
    origins = [o.days - 7 - 7 * k for k in range(o.cuts)]
    print("| series | cuts | MASE | seasonal naive | ratio | 80 % held | 95 % held | scaled pinball | 80 % smoothed "
          "| 95 % smoothed |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    fitted = time.perf_counter()
    results: dict[str, list[Scored]] = {}
    for name, series, measure, kind in (("IPs' sales", sold, OUTFLOW, None),
                                        ("IPs' new listings", listed, INFLOW, None),
                                        ("goods types' sales", goods, OUTFLOW, "goods")):
        keyed: dict[Hashable, list[float]] = dict(series)
        summary, scored = backtest(keyed, origins, MIN_HISTORY, measure, kind)
        results[name] = scored
        print(row(name, summary))
    per_ip, board = board_backtest(truth.ip_goods, origins)
    print(row("each IP's goods types' sales", summarize(per_ip)))
    print(row("goods types' sales, IPs' forecasts added up", summarize(board), intervals=False))
    for _bound, label in CLASSES:
        of_class = [s for s in results["IPs' sales"] if size_class(sizes[str(s.key)]) == label]
        if of_class:
            print(row(f"IPs' sales, {label}", summarize(of_class)))
    scored_in = time.perf_counter() - fitted
    print()
    print(f"Breakouts over the last {o.cuts * 7} days: each day held against the forecast made the day before "
          f"(upward, at least {MIN_SAMPLE} that day), against the market's scheduled bursts")
    print("| flow | bursts | found within a day of their start | recall | flagged days | in a burst | precision |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    started_b = time.perf_counter()
    checked = {measure: day_checks(series, measure, o.days, o.cuts * 7)
               for series, measure in ((sold, OUTFLOW), (listed, INFLOW))}
    flags = {measure: flagged_days(series, measure, o.days, o.cuts * 7, checked[measure])
             for series, measure in ((sold, OUTFLOW), (listed, INFLOW))}
    either = {k: flags[OUTFLOW][k] | flags[INFLOW][k] for k in keywords}
    for name, series, flagged in (("sales", sold, flags[OUTFLOW]), ("new listings", listed, flags[INFLOW]),
                                  ("either (IPs sized by sales)", sold, either)):
        for label, only in (("all IPs", None), (f"IPs of {MIN_SAMPLE}+ a day", MIN_SAMPLE)):
            b = breakout_scores(model, series, flagged, o.days, o.cuts * 7, only)
            print(f"| {name}, {label} | {b.bursts} | {b.found} | {b.recall:.2f} | {b.flagged} | {b.in_burst} | "
                  f"{b.precision:.2f} |")
    busy_goods = {k: v for k, v in truth.ip_goods.items() if sum(v) / len(v) >= MIN_SAMPLE}
    goods_checked = day_checks(busy_goods, OUTFLOW, o.days, o.cuts * 7, kind="goods")
    b = breakout_scores(model, busy_goods, flagged_days(busy_goods, OUTFLOW, o.days, o.cuts * 7, goods_checked),
                        o.days, o.cuts * 7, None)
    print(f"| each IP's goods types' sales, of {MIN_SAMPLE}+ a day ({len(busy_goods)}) | {b.bursts} | {b.found} | "
          f"{b.recall:.2f} | {b.flagged} | {b.in_burst} | {b.precision:.2f} |")
    print()
    print(f"Breakouts by their margin past the 95 % interval (a share of its upper half; shipped: {MARGIN}), series of "
          f"{MIN_SAMPLE}+ a day: recall, precision")
    print("| margin | sales | new listings | either | each IP's goods types' sales |")
    print("|---:|---|---|---|---|")
    for margin in MARGINS:
        by_flow = {measure: flagged_days(series, measure, o.days, o.cuts * 7, checked[measure], margin)
                   for series, measure in ((sold, OUTFLOW), (listed, INFLOW))}
        either_flow = {k: by_flow[OUTFLOW][k] | by_flow[INFLOW][k] for k in keywords}
        cells = [breakout_scores(model, sold, by_flow[OUTFLOW], o.days, o.cuts * 7, MIN_SAMPLE),
                 breakout_scores(model, listed, by_flow[INFLOW], o.days, o.cuts * 7, MIN_SAMPLE),
                 breakout_scores(model, sold, either_flow, o.days, o.cuts * 7, MIN_SAMPLE),
                 breakout_scores(model, busy_goods, flagged_days(busy_goods, OUTFLOW, o.days, o.cuts * 7, goods_checked,
                                                                 margin), o.days, o.cuts * 7, None)]
        print(f"| {margin:g} | " + " | ".join(f"{c.recall:.2f}, {c.precision:.2f}" for c in cells) + " |")
    print()
    print("Ordinary days (outside every burst, as above) against the 95 % interval of an ordinary day of the forecast "
          "made the day before (what breakouts are held against): each tail should hold 2.5 %")
    print("| flow | days | above the interval | below it |")
    print("|---|---:|---:|---:|")
    for name, series, measure in (("sales", sold, OUTFLOW), ("new listings", listed, INFLOW)):
        for label, only in (("all IPs", None), (f"IPs of {MIN_SAMPLE}+ a day", MIN_SAMPLE)):
            t = tails(model, series, checked[measure], o.days, o.cuts * 7, only)
            print(f"| {name}, {label} | {t.days} | {100 * t.above / max(1, t.days):.1f} % | "
                  f"{100 * t.below / max(1, t.days):.1f} % |")
    t = tails(model, busy_goods, goods_checked, o.days, o.cuts * 7, None)
    print(f"| each IP's goods types' sales, of {MIN_SAMPLE}+ a day | {t.days} | {100 * t.above / max(1, t.days):.1f} % "
          f"| {100 * t.below / max(1, t.days):.1f} % |")
    print(f"  (market drawn in {drawn_in:.0f} s, backtests fitted and scored in {scored_in:.0f} s, breakouts in "
          f"{time.perf_counter() - started_b:.0f} s)")
    return 0


@dataclass(frozen=True)
class BreakoutScores:
    """Bursts that began in the span, those flagged on their first day or the next, days flagged, those within a
    burst (from its first day to the day after its last)."""

    bursts: int
    found: int
    flagged: int
    in_burst: int

    @property
    def recall(self) -> float:
        return self.found / self.bursts if self.bursts else float("nan")

    @property
    def precision(self) -> float:
        return self.in_burst / self.flagged if self.flagged else float("nan")


def day_checks(series: Mapping[K, list[float]], measure: str, days: int, span: int,
               kind: str | None = None) -> dict[K, dict[int, Check]]:
    """Each series' days of the last ``span``, each held against the forecast of it made the day before (the refit
    a closed day gets); fitted as the segments of ``kind`` are (keys: keyword and segment key), or as IPs are."""
    keys = list(series)
    first = days - span
    cells = [(k, d) for k in keys for d in range(first, days)]
    histories = [History(i, measure, tuple(EPOCH + timedelta(days=t) for t in range(d)), tuple(series[k][:d]),
                         None if kind is None else Segment(kind, segment_key(k)))
                 for i, (k, d) in enumerate(cells)]
    made = {f.ip_id: f.days[0] for f in fit.forecast(histories, 0.0)}
    checked: dict[K, dict[int, Check]] = {k: {} for k in keys}
    for i, (k, d) in enumerate(cells):
        checked[k][d] = Check(0, measure, EPOCH, series[k][d], made[i])
    return checked


def keyword(key: Hashable) -> str:
    """The IP's keyword of a series key: the keyword itself, or a (keyword, segment key) pair's first."""
    return str(key[0]) if isinstance(key, tuple) else str(key)


def segment_key(key: Hashable) -> str:
    """The segment key of a (keyword, segment key) pair."""
    assert isinstance(key, tuple)
    return str(key[1])


def flagged_days(series: Mapping[K, list[float]], measure: str, days: int, span: int,
                 checked: dict[K, dict[int, Check]] | None = None, margin: float = MARGIN) -> dict[K, set[int]]:
    """Each IP's days of the last ``span`` flagged upward (``lib.forecast.breakouts``; ``margin``: past the 95 %
    interval by that share of its half, the shipped one unless given) against the forecast made the day before
    (``day_checks``, made here unless given)."""
    checked = day_checks(series, measure, days, span) if checked is None else checked
    return {k: {d for d, c in by_day.items() if c.direction_past(margin) == UP} for k, by_day in checked.items()}


def burst_days(model: MarketModel, keyword: str, first: int, days: int) -> list[tuple[int, int]]:
    """The IP's scheduled bursts that touch days ``first`` to ``days``: each from its first day to the day after its
    last."""
    return [(int((b.start - T0) // DAY), int((b.end - T0) // DAY) + 1)
            for b in model.bursts(keyword, T0 + (first - 7) * DAY, T0 + days * DAY)]


@dataclass(frozen=True)
class Tails:
    """Ordinary days (outside every burst, as ``breakout_scores`` spans them) and those above and below the 95 %
    interval of an ordinary day of the forecast made the day before (``Check.band``, what breakouts are judged
    against): each tail should hold 2.5 % of them."""

    days: int
    above: int
    below: int


def tails(model: MarketModel, series: Mapping[K, list[float]], checked: dict[K, dict[int, Check]], days: int,
          span: int, at_least: float | None) -> Tails:
    first = days - span
    n = above = below = 0
    for k, by_day in checked.items():
        if at_least is not None and sum(series[k]) / len(series[k]) < at_least:
            continue
        spans = burst_days(model, keyword(k), first, days)
        for d, c in by_day.items():
            if not any(s <= d <= e for s, e in spans):
                n += 1
                above += c.value > c.band[1]
                below += c.value < c.band[0]
    return Tails(n, above, below)


def breakout_scores(model: MarketModel, series: Mapping[K, list[float]], flagged: Mapping[K, set[int]], days: int,
                    span: int, at_least: float | None) -> BreakoutScores:
    """The flagged days (``flagged_days``) against the scheduled bursts of each series' IP; ``at_least``: only the
    series whose mean daily flow is that."""
    keywords = [k for k, v in series.items() if at_least is None or sum(v) / len(v) >= at_least]
    first = days - span
    bursts = found = in_burst = 0
    for k in keywords:
        spans = burst_days(model, keyword(k), first, days)
        for start, _ in spans:
            if first <= start < days:
                bursts += 1
                found += bool(flagged[k] & {start, start + 1})
        in_burst += sum(1 for d in flagged[k] if any(s <= d <= e for s, e in spans))
    return BreakoutScores(bursts, found, sum(len(flagged[k]) for k in keywords), in_burst)


def row(name: str, summary: Summary | None, intervals: bool = True) -> str:
    """A table row; without ``intervals``, the point forecasts' scores only."""
    if summary is None:
        return f"| {name} | 0 | | | | | | | | |"
    smooth = ("| |" if summary.smooth_coverage80 is None or summary.smooth_coverage95 is None else
              f"{100 * summary.smooth_coverage80:.1f} % | {100 * summary.smooth_coverage95:.1f} % |")
    held = (f"{100 * summary.coverage80:.1f} % | {100 * summary.coverage95:.1f} % | {summary.pinball:.3f} | {smooth}"
            if intervals else "| | | | |")
    return (f"| {name} | {summary.cuts} | {summary.mase:.3f} | {summary.naive_mase:.3f} | {summary.mase_ratio:.2f} | "
            + held)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
