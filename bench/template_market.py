"""The scripted market of one *template* IP of the benchmark market (``bench.replicate``): its listings over the
whole period and what each of its crawls reports, in the crawler's message format, so the results go through the
real result processing.

A market about as busy as the read benchmarks' earlier synthetic one (0.2–1.0 new listings an hour, about as many
sales): listings appear at the template's rate; 75 % sell (after an exponential wait of mean 15 h), 2 % of the
sales are cancelled and the listing relisted an hour or two later, 15 % cut their price once (to 70–95 %), 3 % of
the sold ones show no real price; a listing still on sale a week after its creation is withdrawn (it leaves the
on-sale search). The IP is crawled every two hours (weight 1.0 at the default ``SCHEDULER_BASE_INTERVAL``), a few
minutes late each time; a crawl reads one page of each search (on sale, newest first; sold, latest sale first:
120 listings each) and reports the searches' totals. A pure function of (template, times)."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

H = 3600.0
#: Listings a search page shows.
PAGE = 120
#: A listing still on sale this long after its creation is withdrawn.
WITHDRAWN_AFTER = 7 * 24 * H
#: Sold listings before the period (the sold search's total starts there).
ARCHIVE = 5_000
#: Hours between an IP's crawls (weight 1.0).
INTERVAL = 2 * H
_NOUNS = ["フィギュア", "アクリルスタンド", "缶バッジ", "ぬいぐるみ", "キーホルダー", "タペストリー", "色紙"]


@dataclass(frozen=True)
class Listing:
    sid: str
    title: str
    created: float
    price: int
    cut_at: float | None
    cut_price: int
    sold_at: float | None
    relisted_at: float | None  # a cancelled trade: on sale again (and never sold after)
    priced: bool  # False: the site shows no real price once sold

    def status(self, at: float) -> str | None:
        if at < self.created:
            return None
        if self.relisted_at is not None and at >= self.relisted_at:
            return "on_sale" if at < self.created + WITHDRAWN_AFTER else None
        if self.sold_at is not None and at >= self.sold_at:
            return "sold"
        return "on_sale" if at < self.created + WITHDRAWN_AFTER else None

    def price_at(self, at: float) -> int:
        return self.cut_price if self.cut_at is not None and at >= self.cut_at else self.price

    def updated_at(self, at: float) -> float:
        return max(m for m in (self.created, self.cut_at, self.sold_at, self.relisted_at) if m is not None and m <= at)


@dataclass(frozen=True)
class Crawl:
    """One crawl result: ``task_id`` is ``bench-<crawl number, 6 digits>-<ip id>`` (``replicate`` rewrites the
    IP id's part)."""

    crawled_at: float
    items: list[dict]
    search: dict[str, dict[str, int]]

    def task_id(self, ip_id: int, k: int) -> str:
        return f"{TASK_PREFIX}{k:06d}-{ip_id}"


TASK_PREFIX = "bench-"
#: Characters of a task id before its IP id.
TASK_HEAD = len(TASK_PREFIX) + 7


def rate(template: int) -> float:
    """New listings an hour of template ``template``: spread over 0.2–1.0 by a fixed sequence."""
    return 0.2 + 0.8 * ((template * 0.618034) % 1.0)


def listings(template: int, start: float, end: float) -> list[Listing]:
    """The template's listings created from a week before ``start`` (the market a first crawl finds) to
    ``end``."""
    rng = random.Random(1000 + template)
    per_hour = rate(template)
    out = []
    at = start - WITHDRAWN_AFTER
    n = 0
    while True:
        at += rng.expovariate(per_hour) * H
        if at >= end:
            return out
        price = int(round(rng.lognormvariate(7.6, 0.7), -1)) + 300
        cut = rng.random() < 0.15
        sold = rng.random() < 0.75
        sold_at = at + min(rng.expovariate(1 / 15), 6 * 24) * H if sold else None
        relisted = sold_at is not None and rng.random() < 0.02
        out.append(Listing(
            sid=f"m{template:03d}{n:08d}", title=f"IP{template} {_NOUNS[n % len(_NOUNS)]} {n % 1000:03d}",
            created=at, price=price, cut_at=at + rng.uniform(0.5, 20) * H if cut else None,
            cut_price=max(300, int(price * rng.uniform(0.7, 0.95))), sold_at=sold_at,
            relisted_at=sold_at + rng.uniform(1, 2) * H if relisted else None, priced=rng.random() > 0.03))
        n += 1


def crawl_times(template: int, start: float, end: float) -> list[float]:
    """Every two hours from ``start`` (a template's own phase within the first interval) to before ``end``, each
    a few minutes late."""
    rng = random.Random(2000 + template)
    first = start + (template * 0.381966 % 1.0) * INTERVAL
    return [first + k * INTERVAL + rng.uniform(0, 300) for k in range(math.ceil((end - first) / INTERVAL))
            if first + k * INTERVAL + 300 < end]


def _item(x: Listing, status: str, at: float) -> dict:
    sold = status == "sold"
    price = x.price_at(x.sold_at if sold and x.sold_at is not None else at)
    return {"source_id": x.sid, "title": x.title, "price": price if x.priced or not sold else None,
            "status": status, "image_url": f"https://static.mercdn.net/thumb/item/webp/{x.sid}_1.jpg",
            "item_url": f"https://jp.mercari.com/item/{x.sid}", "created": x.created, "updated": x.updated_at(at)}


def crawls(template: int, start: float, end: float) -> list[Crawl]:
    """What each of the template's crawls from ``start`` to ``end`` reports, in time order."""
    market = listings(template, start, end)
    out = []
    for at in crawl_times(template, start, end):
        live = [(x, s) for x in market if x.created <= at and (s := x.status(at)) is not None]
        on_sale = sorted((x for x, s in live if s == "on_sale"), key=lambda x: -x.created)
        sold = sorted((x for x, s in live if s == "sold"), key=lambda x: -(x.sold_at or 0.0))
        all_sold = sum(1 for x in market if x.sold_at is not None and x.sold_at <= at
                       and not (x.relisted_at is not None and x.relisted_at <= at))
        items = [_item(x, "on_sale", at) for x in on_sale[:PAGE]] + [_item(x, "sold", at) for x in sold[:PAGE]]
        search = {"on_sale": {"num_found": len(on_sale), "pages": 1, "items": min(len(on_sale), PAGE)},
                  "sold": {"num_found": ARCHIVE + all_sold, "pages": 1, "items": min(len(sold), PAGE)}}
        out.append(Crawl(at, items, search))
    return out
