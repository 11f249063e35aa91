"""Scripted crawl sequences of a small simulated market, and the definitions of docs/concepts/measures.md computed from
them here, independently of the production code (tests/market/*)."""

from __future__ import annotations

import math
import random
import statistics
from collections import defaultdict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from .test_intervals import Z as Z95
from .test_intervals import exact_ranks, km_interval_by_hand, wilson_by_hand

H = 3600.0
T0 = 1_800_000_000.0 - (1_800_000_000.0 % H)


@dataclass
class Listing:
    sid: str
    created: float
    price: int
    cut_at: float | None  # the price drops 20 % at this time
    sales: list[float]  # sale times; a relist between two of them
    relists: list[float]
    priced: bool = True  # False: the site shows no real price when sold
    title: str = ""  # "": the source id stands for it

    def status(self, at: float) -> str | None:
        if at < self.created:
            return None
        status = "on_sale"
        for k, sale in enumerate(self.sales):
            if at >= sale:
                status = "sold"
                if k < len(self.relists) and at >= self.relists[k]:
                    status = "on_sale"
        return status

    def price_at(self, at: float) -> int:
        return int(self.price * 0.8) if self.cut_at is not None and at >= self.cut_at else self.price

    def last_sale(self, at: float) -> float:
        return max(s for s in self.sales if s <= at)


@dataclass
class Script:
    crawls: list[tuple[float, list[dict]]]  # (crawled_at, items), in time order
    search: list[dict] = field(default_factory=list)  # per crawl: the search totals


def make_script(seed: int, api: bool = True, n_crawls: int = 10, on_sale_page: int = 40,
                sold_page: int = 30, titles: Sequence[str] = ()) -> Script:
    """``titles``: each listing's title is one of them, drawn uniformly (by a generator of its own, so the market
    is the seed's whatever the titles); without them a listing's title is its source id."""
    rng = random.Random(seed)
    times = []
    t = T0 + rng.uniform(0, H)
    for _ in range(n_crawls):
        times.append(t)
        t += rng.uniform(0.3 * H, 2.5 * H)
    listings = []
    for k in range(400):
        created = rng.uniform(T0 - 6 * H, t)
        sales, relists = [], []
        sale = created + rng.expovariate(1 / (3 * H))
        if rng.random() < 0.8:
            sales.append(sale)
            if rng.random() < 0.1:
                relists.append(sale + rng.uniform(0.2 * H, H))
                if rng.random() < 0.7:
                    sales.append(relists[0] + rng.expovariate(1 / (2 * H)))
        cut = created + rng.uniform(0, 2 * H) if rng.random() < 0.3 else None
        price = rng.choice([300, 500, 800, 1200, 1500, 2000, 3500, 9000]) + rng.randrange(0, 100)
        listings.append(Listing(f"m{seed}-{k}", created, price, cut, sales, relists, rng.random() > 0.05))
    title_rng = random.Random(f"titles-{seed}")
    for x in listings:
        x.title = title_rng.choice(titles) if titles else x.sid
    crawls, search = [], []
    for at in times:
        on_sale = sorted((x for x in listings if x.status(at) == "on_sale"), key=lambda x: -x.created)
        sold = sorted((x for x in listings if x.status(at) == "sold"), key=lambda x: -x.last_sale(at))
        items = []
        for x in on_sale[:on_sale_page]:
            items.append({"source_id": x.sid, "status": "on_sale", "price": x.price_at(at), "title": x.title,
                          "created": x.created if api else None, "updated": None})
        for x in sold[:sold_page]:
            sale = x.last_sale(at)
            items.append({"source_id": x.sid, "status": "sold", "price": x.price_at(sale) if x.priced else None,
                          "title": x.title, "created": x.created if api else None, "updated": sale if api else None})
        crawls.append((at, items))
        search.append({"on_sale": {"num_found": len(on_sale), "pages": 1, "items": min(len(on_sale), on_sale_page)},
                       "sold": {"num_found": len(sold), "pages": 1, "items": min(len(sold), sold_page)}})
    return Script(crawls, search)


# -- the definitions of docs/concepts/measures.md, computed from the observations ---------------------------------


def hour_of(ts: float) -> float:
    return ts - ts % H


def expected_events(script: Script) -> tuple[list[tuple], list[tuple]]:
    """(created events, sold events) by definitions 1–3: created (sid, time); sold (sid, time, price, listed
    price, created time)."""
    baseline = min(at for at, _ in script.crawls)
    seen: dict[str, list[tuple[float, dict]]] = defaultdict(list)
    for at, items in script.crawls:
        for it in items:
            seen[it["source_id"]].append((at, it))
    created_events, sold_events = [], []
    for sid, obs in seen.items():
        obs.sort(key=lambda o: o[0])
        created = obs[0][1]["created"]
        created_time = None
        if created is not None and created >= baseline:
            created_time = created
        elif created is None and obs[0][0] != baseline and obs[0][1]["status"] == "on_sale":
            created_time = obs[0][0]
        if created_time is not None:
            created_events.append((sid, created_time))
        for k, (at, it) in enumerate(obs):
            if it["status"] != "sold":
                continue
            if k > 0 and obs[k - 1][1]["status"] == "sold":
                continue  # not a change
            if k == 0 and at == baseline:
                continue  # the baseline counts nothing
            last_on_sale = obs[k - 1][0] if k > 0 else None
            updated = it["updated"]
            in_window = updated is not None and (last_on_sale is None or updated > last_on_sale) and updated <= at
            when = updated if in_window else at
            if when < baseline:
                continue
            listed = None
            if k > 0:  # the first on-sale price of the spell that ended in this sale
                j = k - 1
                while j > 0 and obs[j - 1][1]["status"] == "on_sale":
                    j -= 1
                listed = obs[j][1]["price"]
            sold_events.append((sid, when, it["price"], listed, created_time))
    return created_events, sold_events


def quartiles(values: list[int]) -> tuple[float, float, float]:
    if len(values) == 1:
        return (values[0], values[0], values[0])
    q = statistics.quantiles(values, n=4, method="inclusive")
    return (q[0], q[1], q[2])


def expected_hours(script: Script) -> dict[float, dict]:
    """Definition 4: a row per hour from the baseline's hour to the latest crawl's, zeros included."""
    created, sold = expected_events(script)
    first = hour_of(min(at for at, _ in script.crawls))
    last = hour_of(max(at for at, _ in script.crawls))
    rows: dict[float, dict] = {}
    h = first
    while h <= last:
        rows[h] = {"inflow": 0, "outflow": 0, "prices": []}
        h += H
    for _, when in created:
        rows.setdefault(hour_of(when), {"inflow": 0, "outflow": 0, "prices": []})["inflow"] += 1
    for _, when, price, _, _ in sold:
        row = rows.setdefault(hour_of(when), {"inflow": 0, "outflow": 0, "prices": []})
        row["outflow"] += 1
        if price is not None:
            row["prices"].append(price)
    out = {}
    for h, row in rows.items():
        prices = row["prices"]
        p25, median, p75 = quartiles(prices) if prices else (None, None, None)
        out[h] = {
            "inflow": row["inflow"], "outflow": row["outflow"],
            "liquidity": round(row["outflow"] / row["inflow"], 4) if row["inflow"] else None,
            "samples": len(prices), "avg": round(statistics.fmean(prices), 2) if prices else None,
            "median": None if median is None else round(median, 2),
            "p25": None if p25 is None else round(p25, 2), "p75": None if p75 is None else round(p75, 2),
            "min": min(prices) if prices else None, "max": max(prices) if prices else None,
        }
    return out


# -- definition 5 and 6 -------------------------------------------------------------------------------------------


def km(durations: list[tuple[float, bool]]) -> list[tuple[float, float]]:
    """Product-limit estimate: at each distinct sale duration t, S ×= 1 − sales at t / listings still at risk."""
    times = sorted({d for d, sold in durations if sold})
    s, curve = 1.0, []
    for t in times:
        at_risk = sum(1 for d, _ in durations if d >= t)
        sales = sum(1 for d, sold in durations if sold and d == t)
        s *= 1 - sales / at_risk
        curve.append((t, s))
    return curve


def _starts(now: float, hours: int, detail_from: float | None) -> tuple[float, float, float, float]:
    """The window's first hour, and (docs/operating/storage.md) where its per-listing measures start, where
    its previous window's do, and where coverage starts: a start before the detail horizon moves back to its UTC
    midnight; coverage starts at the detail horizon at the earliest."""
    since = hour_of(now) - (hours - 1) * H

    def cut(t: float) -> float:
        return t - t % (24 * H) if detail_from is not None and t < detail_from else t
    return since, cut(since), cut(since - hours * H), since if detail_from is None else max(since, detail_from)


def window_durations(script: Script, hours: int, now: float,
                     detail_from: float | None = None) -> list[tuple[float, bool]]:
    """Time to sell's (duration, sold) of the listings created in the window, as definition 5 reads them."""
    created, sold = expected_events(script)
    _, cohort_since, _, _ = _starts(now, hours, detail_from)
    last_seen: dict[str, float] = {}
    for at, items in script.crawls:
        for it in items:
            last_seen[it["source_id"]] = max(last_seen.get(it["source_id"], 0.0), at)
    first_sale: dict[str, float] = {}
    for sid, when, *_ in sorted(sold, key=lambda e: e[1]):
        first_sale.setdefault(sid, when)
    durations = []
    for sid, when in created:
        if cohort_since <= when <= now:
            if sid in first_sale and first_sale[sid] <= now:
                durations.append((first_sale[sid] - when, True))
            else:
                durations.append((min(last_seen[sid], now) - when, False))
    return durations


def heats_covariance(flows: Callable[[float, float], tuple[int, int, int]], start: float, hours: int) -> float:
    """Definition 8: the covariance of a window's heat and its previous window's. The two share the outflow counted
    in their ranges' intersections (Poisson: variance the count); Cov(ln rate_X, ln rate_Y) = count(X ∩ Y) /
    (hours_X · hours_Y · rate_X · rate_Y), rate = outflow / hours + 1/24. ``flows(low, high)``: (inflow, outflow,
    tracked hours) in [low, high)."""
    week = 7 * 24 * H
    baseline, previous = (start - week, start), (start - hours * H, start)
    previous_baseline = (start - hours * H - week, start - hours * H)

    def log_cov(x: tuple[float, float], y: tuple[float, float]) -> float:
        low, high = max(x[0], y[0]), min(x[1], y[1])
        shared = flows(low, high)[1] if low < high else 0
        _, ox, hx = flows(*x)
        _, oy, hy = flows(*y)
        return shared / (hx * hy * (ox / hx + 1 / 24) * (oy / hy + 1 / 24))
    shared_baselines, baseline_and_previous = log_cov(baseline, previous_baseline), log_cov(baseline, previous)
    return 100 * 100 * 0.15 ** 2 * (shared_baselines - baseline_and_previous) / math.log(2) ** 2


def expected_window(script: Script, hours: int, now: float, mins: dict, detail_from: float | None = None,
                    intervals: bool = True) -> dict:
    """Definitions 5 and 6; ``detail_from``: the detail horizon (docs/operating/storage.md). ``intervals``: with
    the 95 % intervals (definition 8; time to sell's, by brute force, take seconds for thousands of listings)."""
    created, sold = expected_events(script)
    rows = expected_hours(script)
    since, cohort_since, previous_cohort_since, coverage_from = _starts(now, hours, detail_from)
    end_hour = hour_of(now) + H
    first_sale: dict[str, float] = {}
    for sid, when, *_ in sorted(sold, key=lambda e: e[1]):
        first_sale.setdefault(sid, when)

    def flows(low, high):
        hs = [h for h in rows if low <= h < high]
        return (sum(rows[h]["inflow"] for h in hs), sum(rows[h]["outflow"] for h in hs), len(hs))

    def cohort_of(low, high):
        cohort = [sid for sid, when in created if low <= when < high]
        return len(cohort), sum(1 for sid in cohort if sid in first_sale and first_sale[sid] < high)

    def sell_through(low, high):
        n, sold = cohort_of(low, high)
        return sold / n if n >= mins["created"] else None

    def heat_and_variance(low, high, cohort_low, cohort_high):
        """The heat, and its variance by the delta method of docs/concepts/measures.md (definition 8)."""
        i, o, h = flows(low, high)
        bi, bo, bh = flows(low - 7 * 24 * H, low)
        st = sell_through(cohort_low, cohort_high)
        if bh < 24 or not h or o + bo < 10 or st is None:
            return None, None
        rate, base = o / h + 1 / 24, bo / bh + 1 / 24
        lift = math.log2(rate / base)
        n, sold = cohort_of(cohort_low, cohort_high)
        var_lift = (max(o, 1) / (h * h * rate * rate) + max(bo, 1) / (bh * bh * base * base)) / math.log(2) ** 2
        shrunk = (sold + 2) / (n + 4)
        variance = 100 * 100 * (0.15 ** 2 * var_lift + 0.16 * shrunk * (1 - shrunk) / (n + 4))
        return 100 * (0.6 * (max(-2, min(2, lift)) / 4 + 0.5) + 0.4 * st), variance

    def heat(low, high, cohort_low, cohort_high):
        value, _ = heat_and_variance(low, high, cohort_low, cohort_high)
        return None if value is None else round(value, 1)

    def normal(value, variance, low, high):
        if value is None or variance is None:
            return None
        half = Z95 * math.sqrt(variance)
        return [round(max(low, value - half), 1), round(min(high, value + half), 1)]

    inflow, outflow, tracked = flows(since, end_hour)
    prices = [p for _, when, p, _, _ in sold if when >= cohort_since and p is not None]
    cuts = [(listed, p) for _, when, p, listed, _ in sold if when >= cohort_since and p is not None and listed]
    cut_sizes = [(listed - p) / listed for listed, p in cuts if p < listed]
    durations = window_durations(script, hours, now, detail_from)
    curve = km(durations)

    def km_q(q):
        return next((t / H for t, s in curve if s <= 1 - q + 1e-12), None)

    n_sales = sum(1 for _, s in durations if s)
    k = math.floor(0.1 * len(prices))
    trimmed = sorted(prices)[k:len(prices) - k]
    _, r_out, r_hours = flows(end_hour - 24 * H, end_hour)
    latest = max(range(len(script.crawls)), key=lambda n: script.crawls[n][0])
    # a script without the searches' totals has no supply nor coverage
    supply = script.search[latest]["on_sale"]["num_found"] if script.search else None
    grown = observed = 0
    in_window = [(at, script.search[n]["sold"]["num_found"]) for n, (at, _) in enumerate(script.crawls)
                 if coverage_from <= at <= now] if script.search else []
    for (a, ta), (b, tb) in zip(in_window, in_window[1:]):
        if tb > ta:
            grown += tb - ta
            observed += sum(1 for _, when, *_ in sold if a < when <= b)
    quart = quartiles(prices) if len(prices) >= mins["prices"] else (None, None, None)
    h_now = heat(since, now + 1e-6, cohort_since, now + 1e-6)
    h_prev = heat(since - hours * H, since, previous_cohort_since, cohort_since)
    # the intervals (docs/concepts/measures.md, definition 8), by the by-hand computations of
    # tests/market/test_intervals.py
    ordered = sorted(prices)

    def price_interval(num, den):
        ranks = exact_ranks(len(prices), num, den) if len(prices) >= mins["prices"] else None
        return None if ranks is None else [ordered[ranks[0] - 1], ordered[ranks[1] - 1]]

    def time_interval(q):
        ci = km_interval_by_hand(durations, q) if n_sales >= mins["sales"] and km_q(q) is not None else None
        return None if ci is None else [ci[0] / H, None if ci[1] is None else ci[1] / H]

    n_cohort, sold_cohort = cohort_of(cohort_since, now + 1e-6)
    hv_now = heat_and_variance(since, now + 1e-6, cohort_since, now + 1e-6)
    hv_prev = heat_and_variance(since - hours * H, since, previous_cohort_since, cohort_since)
    bounds = {} if not intervals else {
        "p25_price_interval": price_interval(1, 4), "median_price_interval": price_interval(1, 2),
        "p75_price_interval": price_interval(3, 4),
        "sell_through_interval": (list(wilson_by_hand(sold_cohort, n_cohort))
                                  if sell_through(cohort_since, now + 1e-6) is not None else None),
        "time_to_sell_p25_interval": time_interval(0.25), "time_to_sell_median_interval": time_interval(0.5),
        "time_to_sell_p75_interval": time_interval(0.75),
        "heat_interval": normal(*hv_now, 0, 100),
        "momentum_interval": (normal(h_now - h_prev, max(0.0, hv_now[1] + hv_prev[1]
                                                         - 2 * heats_covariance(flows, since, hours)), -100, 100)
                              if h_now is not None and h_prev is not None else None),
    }
    return bounds | {
        "inflow": inflow, "outflow": outflow, "tracked_hours": tracked,
        "liquidity": outflow / inflow if inflow else None,
        "median_price": quart[1], "p25_price": quart[0], "p75_price": quart[2],
        "trimmed_mean_price": statistics.fmean(trimmed) if len(prices) >= mins["prices"] else None,
        "sell_through": sell_through(cohort_since, now + 1e-6),
        "time_to_sell_median": km_q(0.5) if n_sales >= mins["sales"] else None,
        "time_to_sell_curve": [[t / H, share] for t, share in curve] if n_sales >= mins["sales"] else [],
        "time_to_sell_p25": km_q(0.25) if n_sales >= mins["sales"] else None,
        "time_to_sell_p75": km_q(0.75) if n_sales >= mins["sales"] else None,
        "price_cut_share": len(cut_sizes) / len(cuts) if len(cuts) >= mins["cuts"] else None,
        "median_price_cut": statistics.median(cut_sizes) if cut_sizes else None,
        "supply": supply,
        "hours_of_supply": supply / (r_out / r_hours) if r_out and supply is not None else None,
        "coverage": observed / grown if grown >= mins["coverage"] else None,
        "heat": h_now,
        "momentum": round(h_now - h_prev, 1) if h_now is not None and h_prev is not None else None,
    }


def restricted(script: Script, source_ids: Collection[str]) -> Script:
    """The same crawls seeing only these listings (a segment's): the definitions read each listing on its own,
    and the crawls' times (the baseline, the tracked hours) stay the IP's."""
    return Script([(at, [it for it in items if it["source_id"] in source_ids]) for at, items in script.crawls],
                  script.search)


def shifted(script: Script, offset: float) -> Script:
    """The same script ``offset`` seconds later."""
    def move(it: dict) -> dict:
        return {**it, "created": None if it["created"] is None else it["created"] + offset,
                "updated": None if it["updated"] is None else it["updated"] + offset}
    return Script([(at + offset, [move(it) for it in items]) for at, items in script.crawls], script.search)
