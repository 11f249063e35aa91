"""How deep each search of one crawl reads (docs/concepts/crawling.md, "Pages that follow change").

Both searches list newest-created first. A search is read page by page until one of:

* its results end: no next page, or a page holding listings none of which is the IP's (the site's padding);
* the page cap (SCHEDULER_PAGES_ON_SALE, SCHEDULER_PAGES_SOLD);
* a page whose oldest listing of the IP was created at or before the plan's ``until``: every listing past it is
  older, and the worker that made the plan knows it needs none of them (``lib.market.page_plans``). A listing
  created after ``until`` whose seller has listings on sale under a title it may relist (the plan's ``watch``:
  by ``watch_key``, when they were created) takes ``until`` back past the oldest of those: it is told from new
  goods only by reading back past the earlier listing and not finding it (``lib.market.relists``).

A page without creation times (read from the DOM, which shows none) never meets ``until``: the search goes on to
its cap, as a crawl without a plan does. The worker stores each IP's plan for its next crawl in the state store;
the crawl reads it (one ``GET``) and, when there is none or it cannot be read, reads the caps.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import redis

from lib.core import keys
from lib.core.settings import Settings
from lib.crawling.item_states import LISTING_ID
from lib.segments.title_keys import earlier_titles

logger = logging.getLogger(__name__)

#: A plan is kept this long after the crawl it was made from: an IP crawled less often reads its caps.
PLAN_TTL = 30 * 86400
#: How late a listing may reach the search after it is created: ~50 s (https://github.com/take-kun/mercapi/issues/37)
#: and ~60 s (https://github.com/marvinody/mercari/issues/28) reported; ten times that, for the outliers nobody
#: reported. Every depth a plan sets is this much further back. A page holds 120 listings, so the margin costs a page
#: only when the depth falls on a page's end.
LATE_INDEXING = 600.0


def watch_key(seller: str, title_key: str) -> str:
    """A listing's key in a plan's watch: its seller's hash and its title's fingerprint (``title_keys``), in 32
    bits (two of an IP's few hundred watched listings share one by chance once in millions of plans)."""
    return hashlib.blake2b(f"{seller}|{title_key}".encode(), digest_size=4).hexdigest()


@dataclass(frozen=True, slots=True)
class SearchPlan:
    """How deep one search reads.

    Parameters:
      pages: the most pages read.
      until: a creation time (Unix seconds): the search stops after the page whose oldest listing of the IP was
        created at or before it. None: read to the end of the results or ``pages``.
      why: the reason, for operators (``animetop ip list``).
    """

    pages: int
    until: float | None = None
    why: str = "the page cap"
    #: listings on sale a new listing may relist, by ``watch_key``: when they were created
    watch: Mapping[str, tuple[float, ...]] = field(default_factory=dict)

    def reached(self, oldest: float | None) -> bool:
        """Whether a page whose oldest listing of the IP was created at ``oldest`` ends the search: at or before
        ``until``. A page with no creation time (None: the DOM's, or none of the IP's) never does."""
        return self.until is not None and oldest is not None and oldest <= self.until

    def deepened(self, items: Iterable[Mapping[str, Any]]) -> SearchPlan:
        """The plan after a page of the IP's ``items``: ``until`` taken back to ``LATE_INDEXING`` before the oldest
        watched listing that one created after ``until`` may relist (the same seller, a title it may have had)."""
        if self.until is None or not self.watch:
            return self
        until = self.until
        for item in items:
            created, seller, title = item.get("created"), item.get("seller"), item.get("title")
            if not isinstance(created, (int, float)) or created <= self.until or not isinstance(seller, str) \
                    or not isinstance(title, str):
                continue
            earlier = [t for key in earlier_titles(title) for t in self.watch.get(watch_key(seller, key), ())
                       if t < created]
            if earlier:
                until = min(until, min(earlier) - LATE_INDEXING)
        if until == self.until:
            return self
        return replace(self, until=until, why=f"{self.why}, and back to the listings a new one may relist")


@dataclass(frozen=True, slots=True)
class CrawlPlan:
    """One crawl's depth, per search; ``made_at``: the crawl it was planned after (None: no plan, the caps);
    ``flow``: the IP's new listings an hour as its crawls saw them (None: not known yet), which its interval follows
    (``lib.scheduling.schedule.planned_interval``); ``sold_shallow``: this crawl reads only the sold search's
    newest page, the how-manyth in a row since its last deep read (0: it reads as deep as ``sold`` allows);
    ``relists_read_at``: the crawl after which the latest read back to what undecided new listings may relist was
    planned (``lib.market.page_plans``; None: none yet); ``checks``: the listings whose pages the crawl reads after
    its searches (``lib.crawling.item_read``: the earlier listings undecided new ones may relist)."""

    on_sale: SearchPlan
    sold: SearchPlan
    made_at: float | None = None
    flow: float | None = None
    sold_shallow: int = 0
    relists_read_at: float | None = None
    checks: tuple[str, ...] = ()

    @classmethod
    def caps(cls, pages_on_sale: int, pages_sold: int) -> CrawlPlan:
        """Today's settings' fixed depth: each search to its end or its cap."""
        return cls(SearchPlan(pages_on_sale), SearchPlan(pages_sold))

    def search(self, label: str) -> SearchPlan:
        return self.on_sale if label == "on_sale" else self.sold

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))  # watch: a JSON object of lists

    @classmethod
    def from_json(cls, text: str | bytes, pages_on_sale: int, pages_sold: int) -> CrawlPlan:
        """A stored plan, its page counts held to today's caps (a cap lowered since it was made wins).

        Raises:
          ValueError: not a plan.
        """
        raw = json.loads(text)
        if not isinstance(raw, dict):
            raise ValueError("a crawl plan is a JSON object")
        flow = _time(raw.get("flow"))
        if flow is not None and flow < 0:
            raise ValueError(f"a plan's flow is a number of listings an hour, got {flow!r:.40}")
        shallow = raw.get("sold_shallow", 0)
        if not isinstance(shallow, int) or isinstance(shallow, bool) or shallow < 0:
            raise ValueError(f"a plan's sold_shallow is a whole number of at least 0, got {shallow!r:.40}")
        checks = raw.get("checks") or []
        if not isinstance(checks, list) or not all(isinstance(c, str) and LISTING_ID.fullmatch(c) for c in checks):
            raise ValueError(f"a plan's checks are a list of listing ids, got {checks!r:.40}")
        return cls(_search(raw.get("on_sale"), pages_on_sale), _search(raw.get("sold"), pages_sold),
                   _time(raw.get("made_at")), flow, shallow, _time(raw.get("relists_read_at")), tuple(checks))


def _search(raw: object, cap: int) -> SearchPlan:
    if not isinstance(raw, dict):
        raise ValueError("a search plan is a JSON object")
    pages = raw.get("pages")
    if not isinstance(pages, int) or isinstance(pages, bool) or pages < 1:
        raise ValueError(f"a search plan's pages must be a whole number of at least 1, got {pages!r:.40}")
    why = raw.get("why")
    watch = raw.get("watch") or {}
    if not isinstance(watch, dict):
        raise ValueError("a search plan's watch is a JSON object")
    times: dict[str, tuple[float, ...]] = {}
    for key, created in watch.items():
        if not isinstance(created, list):
            raise ValueError(f"a watched key's listings are a list of creation times, got {created!r:.40}")
        times[key] = tuple(t for t in map(_time, created) if t is not None)
    return SearchPlan(min(pages, cap), _time(raw.get("until")), why if isinstance(why, str) else "the page cap",
                      times)


def _time(raw: object) -> float | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw):
        raise ValueError(f"a plan's time must be a number, got {raw!r:.40}")
    return float(raw)


def store_plan(client: redis.Redis, ip_id: int, plan: CrawlPlan) -> None:
    client.set(keys.crawl_plan(ip_id), plan.to_json(), ex=PLAN_TTL)


def caps(settings: Settings) -> CrawlPlan:
    """The plan of a crawl the worker planned nothing for: each search to its end or its page cap."""
    return CrawlPlan.caps(settings.scheduler_pages_on_sale, settings.scheduler_pages_sold)


def deep_sold_pages(settings: Settings) -> int:
    """The most pages a plan's sold search reads: a deep read takes the cap of SCHEDULER_SOLD_DEEP_EVERY crawls,
    less the newest page each of the others reads (``lib.market.page_plans``)."""
    every = settings.scheduler_sold_deep_every
    return every * settings.scheduler_pages_sold - (every - 1)


def spare_sold_pages(settings: Settings) -> int:
    """The most pages the sold search of an IP that outruns its cap reads when the request budget has requests to
    spare (``lib.scheduling.budget_plan``): SCHEDULER_PAGES_SOLD_MAX, or the cap when deep reads take its place."""
    if settings.scheduler_sold_deep_every > 1:
        return settings.scheduler_pages_sold
    return max(settings.scheduler_pages_sold, settings.scheduler_pages_sold_max)


def most_sold_pages(settings: Settings) -> int:
    """The most pages any plan's sold search reads: a deep read's, or a read the budget's spare requests deepen."""
    return max(deep_sold_pages(settings), spare_sold_pages(settings))


def most_on_sale_pages(settings: Settings) -> int:
    """The most pages any plan's on-sale search reads: a read back to what undecided listings may relist
    (SCHEDULER_RELIST_PAGES), or the cap."""
    return max(settings.scheduler_pages_on_sale, settings.scheduler_relist_pages)


def plan_for(client: redis.Redis, ip_id: int, settings: Settings) -> CrawlPlan:
    """The plan the IP's next crawl reads: its stored one with SCHEDULER_PAGE_PLAN on (``load_plan``), else the
    caps."""
    if not settings.scheduler_page_plan:
        return caps(settings)
    return load_plan(client, ip_id, settings.scheduler_pages_on_sale, settings.scheduler_pages_sold,
                     most_sold_pages(settings), most_on_sale_pages(settings))


def load_plans(client: redis.Redis, ip_ids: Sequence[int], pages_on_sale: int,
               pages_sold: int) -> dict[int, CrawlPlan | None]:
    """Each IP's stored plan (None: none, or unreadable), one pipeline of ``GET``s (a cluster splits it by slot);
    ``pages_sold``: the most pages a planned sold read may take (``most_sold_pages``)."""
    pipe = client.pipeline(transaction=False)
    for ip_id in ip_ids:
        pipe.get(keys.crawl_plan(ip_id))
    out: dict[int, CrawlPlan | None] = {}
    for ip_id, text in zip(ip_ids, pipe.execute(), strict=True):
        try:
            out[ip_id] = None if text is None else CrawlPlan.from_json(text, pages_on_sale, pages_sold)
        except ValueError:
            out[ip_id] = None
    return out


def load_plan(client: redis.Redis, ip_id: int, pages_on_sale: int, pages_sold: int,
              sold_most: int | None = None, on_sale_most: int | None = None) -> CrawlPlan:
    """The IP's plan for its next crawl; the caps when it has none, or when it cannot be read (the crawl then costs
    what a crawl without a plan costs, and loses nothing). ``sold_most``, ``on_sale_most``: the most pages a
    planned read of each search may take (``most_sold_pages``, ``most_on_sale_pages``; None: the cap)."""
    caps = CrawlPlan.caps(pages_on_sale, pages_sold)
    try:
        text = client.get(keys.crawl_plan(ip_id))
    except redis.RedisError as e:
        logger.warning("IP %s: could not read its crawl plan (%s): reading the page caps", ip_id, e)
        return caps
    if text is None:
        return caps
    try:
        return CrawlPlan.from_json(text, on_sale_most or pages_on_sale, sold_most or pages_sold)
    except ValueError as e:
        logger.warning("IP %s: its stored crawl plan is unreadable (%s): reading the page caps", ip_id, e)
        return caps
