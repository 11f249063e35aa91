"""Applies one crawl result (docs/concepts/measures.md), with an exactly-once effect on the statistics.

Order, chosen so that a crash at any point followed by redelivery ends as
one clean run:

1. read the items' states (Redis, falling back to the database snapshots
   when Redis lost states it should still have) and decide each transition;
2. in ONE database transaction: the ledger row of the task id, snapshots and
   their titles' segments, hourly stats, alerts, the IP's weight and last
   crawl — or nothing, if the ledger already has the task (a redelivery
   after a commit);
3. write the new states to Redis (idempotent: never moves an item back);
4. record the execution, reschedule the IP (closed loop), drop caches.

Steps 3–4 are idempotent, so they simply run again on redelivery.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import peewee
import redis

from lib.core.clock import Clock, get_clock, naive_utc, to_timestamp
from lib.core.db import ParameterList, insert_rows, select_tuples, write_transaction
from lib.core.errors import BadMessage
from lib.core.settings import Settings
from lib.crawling.item_states import LISTING_ID, STATES
from lib.crawling.page_plan import load_plan, most_on_sale_pages, most_sold_pages, store_plan
from lib.market import listing_urls, window_rows
from lib.market.facts import (
    CrawlTimes,
    FactsOutcome,
    event_hours,
    needs_derivation,
    rebuild_ip_events,
    rederive,
    store_sightings,
)
from lib.market.item_state import ON_SALE, SOLD, STATUSES, Change, CrawlItem, ItemState, ItemStateStore, decide
from lib.market.page_plans import crawl_pages, next_plan, reached_share, sold_outran
from lib.market.read_side import invalidate_caches
from lib.market.relists import (
    decide_checked,
    decide_undecided,
    find_relists,
    keep_undecided,
    sample_share,
    store_relists,
    to_check,
    undecided_backs,
)
from lib.market.retention import details_pruned_before
from lib.market.statistics import (
    adjusted_weight,
    ensure_hours,
    evaluate_alerts_many,
    hour_bucket,
    record_alerts,
    refresh_hours,
    settled_hours,
)
from lib.scheduling.budget_plan import CostStore, CrawlCost, RelistReads
from lib.scheduling.execution_state import ExecutionState
from lib.scheduling.schedule import CRAWL_JOB, ScheduleStore, longest_interval, planned_interval
from lib.segments.stored import Segmenter, segment_applied, stored_titles
from lib.segments.title_keys import title_match
from models import AppliedResult, CrawlSearchTotal, IpMetadata, IpStatsHourly, ItemSnapshot

logger = logging.getLogger(__name__)

@dataclass(frozen=True)
class SearchTotal:
    """One search of a crawl (on sale or sold): the site's total count of its listings, when the site reported
    one, and what the pages read covered. Carried in a crawl result as ``search = {status: {"num_found": …,
    "pages": …, "items": …, "ended": …}}``."""

    status: str
    num_found: int | None
    pages_read: int
    items_read: int
    #: Listings the pages held that are not about the IP (their titles name neither its keyword nor an alias: the
    #: site's padding past the real results), from the crawl's ``relevance``; None when the crawler did not say.
    items_missed: int | None = None
    #: Whether the search ended on the pages read (no next page, or past its real results, and no page of it
    #: failed), as the crawler saw it; None from a crawler that did not say (then: fewer pages than planned).
    ended: bool | None = None

    @classmethod
    def parse(cls, status: Any, raw: Any) -> SearchTotal:
        if status not in STATUSES:
            raise BadMessage(f"search: the status must be one of {STATUSES}, got {status!r:.40}")
        if not isinstance(raw, dict):
            raise BadMessage(f"search {status}: a {type(raw).__name__}, not a map")
        def count(name: str, value: Any) -> int:
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise BadMessage(f"search {status}: {name} must be a non-negative whole number, got {value!r:.40}")
            return value

        num_found = raw.get("num_found")
        ended = raw.get("ended")
        if ended is not None and not isinstance(ended, bool):
            raise BadMessage(f"search {status}: ended must be true or false, got {ended!r:.40}")
        return cls(status, None if num_found is None else count("num_found", num_found),
                   count("pages", raw.get("pages")), count("items", raw.get("items")), ended=ended)

    def with_relevance(self, raw: Any) -> SearchTotal:
        """This total with the search's ``relevance`` (``{"matched": …, "missed": …}``) of the crawl message."""
        if not isinstance(raw, dict):
            raise BadMessage(f"relevance {self.status}: a {type(raw).__name__}, not a map")
        missed = raw.get("missed")
        if not isinstance(missed, int) or isinstance(missed, bool) or missed < 0:
            raise BadMessage(f"relevance {self.status}: missed must be a non-negative whole number, got "
                             f"{missed!r:.40}")
        return dataclasses.replace(self, items_missed=missed)


def search_reach(items: list[CrawlItem], status: str, ended: bool) -> dict[str, float | None]:
    """How far back a search's pages reached by creation time (docs/concepts/measures.md, "Estimates"): its
    listings' oldest ``created``, None when the search ``ended`` on its pages (it was seen whole), and their
    newest (None: no listing with a time). A listing seen on both searches counts for the sold one (it sold while
    the crawl read them)."""
    times = [item.created for item in items if item.status == status and item.created is not None]
    if not times:
        return {"reach": None, "newest": None}
    return {"reach": None if ended else float(min(times)), "newest": float(max(times))}


def _ended(result: CrawlResult, total: SearchTotal, planned: int) -> bool:
    """Whether the search ended on the pages read: as the crawler said, else (a crawler that did not say) fewer
    pages than planned, none of them failed (a failed page is skipped, and the crawl goes on to the next: the
    search did not end there)."""
    if total.ended is not None:
        return total.ended
    failed = any(str(key).split(":", 1)[0] == total.status for key in result.errors)
    return total.pages_read < planned and not failed


@dataclass(frozen=True)
class CrawlResult:
    ip_id: int
    task_id: str
    crawled_at: float
    items: list[CrawlItem]
    pages_crawled: int = 0
    errors: dict[str, Any] = field(default_factory=dict)  # as the crawler's message carried them
    search: list[SearchTotal] = field(default_factory=list)
    #: the listings the crawl checked on their pages: id → state (``lib.crawling.item_states``)
    checks: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, ip_id: Any, task_id: Any, crawled_at: Any, items: Any, pages_crawled: Any = 0,
              errors: Any = None, search: Any = None, relevance: Any = None, checks: Any = None) -> CrawlResult:
        if not isinstance(task_id, str) or not task_id or len(task_id) > 100:
            raise BadMessage("task_id must be a non-empty string of at most 100 characters")
        if not isinstance(items, (list, tuple)):
            raise BadMessage("items must be a list")
        if search is not None and not isinstance(search, dict):
            raise BadMessage("search must be a map of status to totals")
        parsed: dict[str, CrawlItem] = {}
        for raw in items:
            item = CrawlItem.parse(raw)
            parsed.setdefault(item.source_id, item)  # the same listing on two pages counts once
        if relevance is not None and not isinstance(relevance, dict):
            raise BadMessage("relevance must be a map of status to matched and missed listings")
        if checks is not None and not (isinstance(checks, dict) and all(
                isinstance(k, str) and LISTING_ID.fullmatch(k) and v in STATES for k, v in checks.items())):
            raise BadMessage(f"checks must map listing ids to one of {', '.join(STATES)}")
        totals = [SearchTotal.parse(status, raw) for status, raw in (search or {}).items()]
        if relevance:
            totals = [t.with_relevance(relevance[t.status]) if t.status in relevance else t for t in totals]
        return cls(ip_id=int(ip_id), task_id=task_id, crawled_at=float(crawled_at), items=list(parsed.values()),
                   pages_crawled=int(pages_crawled or 0), errors=dict(errors or {}), search=totals,
                   checks=dict(checks or {}))


@dataclass
class Outcome:
    task_id: str
    applied: bool  # False: the ledger already had it (redelivery)
    baseline: bool = False
    transitions: dict[str, int] = field(default_factory=dict)
    inflow: int = 0
    outflow: int = 0
    relisted: int = 0  # new listings recognised as relists (not inflow)
    weight: float | None = None
    alerts: list[int] = field(default_factory=list)


class ResultProcessor:
    def __init__(self, settings: Settings, client: redis.Redis, clock: Clock | None = None) -> None:
        self.settings = settings
        self.client = client
        self.clock = clock or get_clock()
        self.states = ItemStateStore(client, settings.analyzer_item_ttl_available, settings.analyzer_item_ttl_sold,
                                     self.clock)
        self.schedule = ScheduleStore(client)
        self.floor: float | None = None  # storage pruned before this (lib.market.retention), read per result
        self._caps = {"on_sale": settings.scheduler_pages_on_sale, SOLD: settings.scheduler_pages_sold}

    # -- step 1 ----------------------------------------------------------------
    def decide(self, result: CrawlResult, ip: IpMetadata) -> tuple[list[Change], bool]:
        ids = [item.source_id for item in result.items]
        known = self.states.read(result.ip_id, ids)
        window_start = self._previous_crawl(result)
        # A state last seen before the IP's previous applied crawl may be stale, not just unchanged: that crawl
        # committed but its Redis write failed (Redis, or the cluster master of this IP, went down), and this
        # result came before its retry. Its snapshots, written in its transaction, are then newer.
        doubtful = [i for i in ids if i not in known
                    or (window_start is not None and known[i].last_seen < window_start)]
        if doubtful:
            for source_id, snapshot in self._snapshot_states(result, doubtful).items():
                if source_id not in known or snapshot.last_seen > known[source_id].last_seen:
                    known[source_id] = snapshot
            for source_id in doubtful:  # its title is read from the database (its snapshot may be gone)
                if source_id in known and known[source_id].title_key is not None:
                    known[source_id] = dataclasses.replace(known[source_id], title_key=None)
        baseline = not AppliedResult.select().where(AppliedResult.ip_id == result.ip_id).exists()
        changes = []
        for item in result.items:
            change = decide(known.get(item.source_id), item, result.crawled_at, baseline=baseline,
                            resurfaced_after=self.settings.analyzer_item_ttl_available, window_start=window_start)
            if change is not None:
                changes.append(change)
        return changes, baseline

    @staticmethod
    def _previous_crawl(result: CrawlResult) -> float | None:
        """When the IP's latest crawl before this one started: the start of this result's inflow window."""
        row = (AppliedResult.select(AppliedResult.crawled_at)
               .where((AppliedResult.ip_id == result.ip_id) & (AppliedResult.crawled_at < result.crawled_at)
                      & (AppliedResult.task_id != result.task_id))
               .order_by(AppliedResult.crawled_at.desc()).first())
        return row.crawled_at if row is not None else None

    def _snapshot_states(self, result: CrawlResult, source_ids: list[str]) -> dict[str, ItemState]:
        """States Redis should still hold (their TTL has not run out) but lost: read back from snapshots."""
        ttl = {"on_sale": self.settings.analyzer_item_ttl_available, SOLD: self.settings.analyzer_item_ttl_sold}
        found = {}
        for start in range(0, len(source_ids), 500):
            chunk = source_ids[start:start + 500]
            for source_id, status, price, first_seen, last_seen in select_tuples(
                    ItemSnapshot.select(ItemSnapshot.source_id, ItemSnapshot.status, ItemSnapshot.price,
                                        ItemSnapshot.first_seen, ItemSnapshot.last_seen)
                    .where((ItemSnapshot.ip_id == result.ip_id)
                           & (ItemSnapshot.source_id.in_(ParameterList(chunk))))):
                if last_seen + ttl[status] > result.crawled_at:
                    found[source_id] = ItemState(status, price, first_seen, last_seen)
        return found

    # -- step 2 ----------------------------------------------------------------
    def persist(self, result: CrawlResult, ip: IpMetadata, changes: list[Change], baseline: bool) -> Outcome:
        outcome = Outcome(task_id=result.task_id, applied=True, baseline=baseline)
        with write_transaction():
            if AppliedResult.get_or_none(AppliedResult.task_id == result.task_id) is not None:
                outcome.applied = False
                return outcome
            for change in changes:
                if change.transition is not None:
                    key = change.transition.value
                    outcome.transitions[key] = outcome.transitions.get(key, 0) + 1
            times = CrawlTimes.read(result.ip_id, result.crawled_at)
            AppliedResult.create(task_id=result.task_id, ip_id=result.ip_id, crawled_at=result.crawled_at,
                                 applied_at=self.clock.now(), items=len(result.items), inflow=0, outflow=0)
            reaches = self._insert_search_totals(result)
            # a listing whose state says its stored title is this one was stored and segmented with it: only the
            # others' titles are read (new listings, retitled ones, states that do not know)
            unsure = [c for c in changes if c.before is None or c.before.title_key != c.after.title_key]
            previous_titles = stored_titles(result.ip_id, [c.item.source_id for c in unsure])
            # listings the IP never stored: a relist of an earlier one is not new goods (lib/market/relists.py)
            new = [c.item for c in unsure if c.item.source_id not in previous_titles]
            on_sale = {i.source_id for i in result.items if i.status != SOLD}
            relists = find_relists(result.ip_id, result.crawled_at, new, self.settings.relist_within, on_sale)
            store_relists(result.ip_id, relists.links, new, result.crawled_at)
            self._upsert_snapshots(result.ip_id, changes)
            # the listings earlier results could not tell from relists, that this crawl's on-sale pages may tell
            told = reaches.get(ON_SALE)
            late = {} if told is None or told["newest"] is None else decide_undecided(
                result.ip_id, result.crawled_at, told["reach"], self.settings.relist_within, on_sale)
            # and those whose earlier listing the crawl checked on its page
            late |= decide_checked(result.ip_id, result.checks)
            keep_undecided(result.ip_id, relists.undecided, new, result.crawled_at,
                           sample_share(len(relists.undecided), self.settings.scheduler_relist_checks))
            outcome.relisted = len(relists.links) + len(late)
            segment_applied(result.ip_id, {c.item.source_id: c.item.title for c in unsure}, previous_titles,
                            lambda: Segmenter.for_ip(self.settings, result.ip_id))
            facts = self._apply_facts(result, changes, times)
            hours = (facts.hours or set()) | self._apply_late_relists(result, times, late)
            window_rows.mark_pending(result.ip_id, hours, result.crawled_at, self.clock.now(),
                                     window_rows.precomputed_windows(self.settings.leaderboard_precompute))
            outcome.inflow, outcome.outflow = max(facts.inflow, 0), max(facts.outflow, 0)
            AppliedResult.update(inflow=outcome.inflow, outflow=outcome.outflow) \
                .where(AppliedResult.task_id == result.task_id).execute()
            baseline_at = times.baseline_with(result.crawled_at)
            alerts = []
            settled = settled_hours(times.latest, result.crawled_at, baseline_at)
            for bucket, findings in sorted(evaluate_alerts_many(result.ip_id, settled, baseline_at,
                                                                self.settings).items()):
                alerts += record_alerts(result.ip_id, bucket, findings, self.clock.utcnow())
            outcome.alerts = [a.id for a in alerts]
            if baseline:
                outcome.inflow = outcome.outflow = 0
            weight = ip.weight if baseline else adjusted_weight(ip.weight, outcome.inflow, outcome.outflow,
                                                                    self.settings)
            outcome.weight = weight
            last = to_timestamp(ip.last_crawled_at)
            newest = result.crawled_at if last is None else max(last, result.crawled_at)
            IpMetadata.update(weight=weight, last_crawled_at=naive_utc(newest), updated_at=self.clock.utcnow()) \
                .where(IpMetadata.id == ip.id).execute()
        return outcome

    def _apply_facts(self, result: CrawlResult, changes: list[Change], times: CrawlTimes) -> FactsOutcome:
        """Store the sightings, derive the events they change, and recompute the hours those touch. ``times``: the
        ledger as the transaction found it before writing this result's row."""
        ip_id = result.ip_id
        previous_crawl, previous_baseline = times.latest, times.earliest
        before = {c.item.source_id: c.before for c in changes}
        candidates = [item.source_id for item in result.items
                      if needs_derivation(item, result.crawled_at, before.get(item.source_id))]
        runs = store_sightings(ip_id, result.crawled_at, result.items, times.neighbours(), derive=set(candidates))
        baseline_at = times.baseline_with(result.crawled_at)
        latest = max(previous_crawl or result.crawled_at, result.crawled_at)
        tracked = (hour_bucket(baseline_at), hour_bucket(latest))
        if previous_baseline is not None and result.crawled_at < previous_baseline:
            # an older result than the IP's baseline so far: it becomes the baseline, and every listing counts
            # from it (rare: a first crawl's retries outlasting the second crawl)
            hours = rebuild_ip_events(ip_id, baseline_at)
            IpStatsHourly.delete().where(IpStatsHourly.ip_id == ip_id).execute()
            ensure_hours(ip_id, *tracked)
            refresh_hours(ip_id, hours | event_hours(ip_id), tracked)
            return FactsOutcome(hours=hours)
        facts = rederive(ip_id, candidates, baseline_at, self.floor, runs)
        if previous_crawl is None or result.crawled_at > previous_crawl:
            first = hour_bucket(previous_crawl) if previous_crawl is not None else tracked[0]
            if self.floor is not None:  # no hourly rows come back before the pruned horizon
                first = max(first, hour_bucket(self.floor))
            ensure_hours(ip_id, first, tracked[1])
        refresh_hours(ip_id, facts.hours or set(), tracked)
        return facts

    def _apply_late_relists(self, result: CrawlResult, times: CrawlTimes, late: dict[str, str]) -> set[datetime]:
        """Derive again the goods of the relists decided late (``decide_undecided``): a relist's creation is no
        longer inflow, and its goods' sale is timed from their first listing. The hours that changed."""
        if not late:
            return set()
        baseline_at = times.baseline_with(result.crawled_at)
        facts = rederive(result.ip_id, sorted(set(late) | set(late.values())), baseline_at, self.floor)
        latest = max(times.latest or result.crawled_at, result.crawled_at)
        refresh_hours(result.ip_id, facts.hours or set(), (hour_bucket(baseline_at), hour_bucket(latest)))
        return facts.hours or set()

    def _insert_search_totals(self, result: CrawlResult) -> dict[str, dict[str, float | None]]:
        """Store the result's searches' totals; each search's reach (``search_reach``), by status."""
        reaches = {total.status: search_reach(result.items, total.status,
                                              _ended(result, total, self._caps[total.status]))
                   for total in result.search}
        if result.search:
            CrawlSearchTotal.insert_many([{
                "task_id": result.task_id, "ip_id": result.ip_id, "crawled_at": result.crawled_at,
                "status": total.status, "num_found": total.num_found, "pages_read": total.pages_read,
                "items_read": total.items_read, "items_missed": total.items_missed, **reaches[total.status],
            } for total in result.search]).execute()
        return reaches

    def _upsert_snapshots(self, ip_id: int, changes: list[Change]) -> None:
        rows = []
        for c in changes:
            forms, item_url, image_url = listing_urls.encode(c.item.source_id, c.item.item_url, c.item.image_url)
            rows.append({
                "ip_id": ip_id, "source_id": c.item.source_id, "title": c.item.title, "price": c.item.price,
                "status": c.item.status, "image_url": image_url, "item_url": item_url, "url_forms": forms,
                "first_seen": c.after.first_seen, "last_seen": c.after.last_seen, "created": c.item.created,
                "updated": c.item.updated, "seller": c.item.seller,
                "title_match": title_match(c.item.title),
                "auction": c.item.auction,
            })
        # the seller and the title's fingerprint are kept as first stored: a later sighting read from the DOM, which
        # shows no seller, does not drop it, and the index on them (relists' lookup) is not rewritten by every
        # result (an upsert setting an indexed column updates the index, changed or not)
        preserve: list[peewee.Field] = [ItemSnapshot.title, ItemSnapshot.price, ItemSnapshot.status,
                                        ItemSnapshot.image_url, ItemSnapshot.item_url, ItemSnapshot.url_forms,
                                        ItemSnapshot.last_seen, ItemSnapshot.created, ItemSnapshot.updated,
                                        ItemSnapshot.auction]
        insert_rows(ItemSnapshot, rows, conflict="update", target=[ItemSnapshot.ip_id, ItemSnapshot.source_id],
                    preserve=preserve)

    # -- steps 3-4 -------------------------------------------------------------
    def apply_states(self, result: CrawlResult, changes: list[Change]) -> None:
        self.states.write(result.ip_id, [(c.item.source_id, c.after) for c in changes])

    def close_loop(self, result: CrawlResult) -> None:
        ip = IpMetadata.get_by_id(result.ip_id)
        # From the IP's newest crawl: a result that arrives late, after a newer one, must not move the last
        # execution or the next crawl back in time.
        newest = max(result.crawled_at, to_timestamp(ip.last_crawled_at) or result.crawled_at)
        ExecutionState(self.clock).record_execution(CRAWL_JOB, result.ip_id, at=newest)
        flow, seen, outran = None, 1.0, False
        costs = CostStore(self.client)
        # set by the scheduler's tick (lib.scheduling.budget_plan); only IPs with a plan have a flow to price
        price = costs.price() if self.settings.scheduler_page_plan else None
        ended = {total.status: _ended(result, total, self._caps[total.status]) for total in result.search}
        if self.settings.scheduler_page_plan:
            last = load_plan(self.client, ip.id, self._caps["on_sale"], self._caps[SOLD],
                             most_sold_pages(self.settings), most_on_sale_pages(self.settings))
            flow = last.flow  # a late result plans nothing: the newer crawl's plan and flow stand
            # what the crawl spent on undecided relists: a read back's on-sale pages past the first, and its checks
            spent = len(result.checks) + sum(1 for key in result.errors if str(key).startswith("check:"))
            if result.crawled_at >= newest and last.made_at is not None and last.relists_read_at == last.made_at:
                spent += max(0, sum(t.pages_read for t in result.search if t.status == ON_SALE) - 1)
            if spent:
                RelistReads(self.client).record(result.crawled_at, spent)
            if result.crawled_at >= newest:
                outran = last.sold_shallow > 0 or sold_outran(result.items, ended, last)
                spare = price.sold_pages if price is not None and self._needs_depth(result, outran) else 0
                # checks are made where the request budget does not bind: a budget that lengthens intervals buys
                # more with pages than with checks (docs/concepts/crawling.md, "Item checks")
                checking = self.settings.scheduler_relist_checks if price is None or price.price == 0 else 0
                waiting_since = result.crawled_at - self.settings.relist_within
                checks = to_check(ip.id, checking, waiting_since) if checking else []
                # the next crawl's checks decide theirs: a read back is for the others
                undecided = undecided_backs(ip.id, waiting_since, set(checks))
                plan = next_plan(result.crawled_at, result.items, ended, self.settings, last, spare, undecided,
                                 checks)
                store_plan(self.client, ip.id, plan)
                flow = plan.flow
                seen = reached_share(result.crawled_at, result.items, bool(ended.get(ON_SALE)), last)
        if ip.active:
            interval = planned_interval(ip, flow, self.settings)
            if flow is not None:  # the budget plans the IPs whose flow is known (docs/concepts/scheduling.md)
                cost = CrawlCost(flow=flow, pages=crawl_pages(result.search, ended, self._caps[SOLD], outran),
                                 least=interval,
                                 most=interval if ip.pinned_interval else longest_interval(flow, interval,
                                                                                          self.settings),
                                 at=result.crawled_at, seen=seen, outran=outran)
                if result.crawled_at >= newest:
                    costs.put(ip.id, cost)
                interval = cost.interval_at(price.price) if price is not None else interval
            self.schedule.schedule(ip.id, newest + interval)
        else:
            costs.remove(ip.id)
        invalidate_caches(self.client, result.ip_id)

    def _needs_depth(self, result: CrawlResult, outran: bool) -> bool:
        """Whether the IP's next sold read may take the pages the budget has to spare: its sold search outran the
        cap, or took more pages than the cap to reach back a listing's life (so reads to the cap would outrun it
        again). Only pages that date their listings tell either: a search read from the DOM is read to the cap."""
        if not any(i.status == SOLD and i.created is not None for i in result.items):
            return False
        return outran or any(t.status == SOLD and t.pages_read > self._caps[SOLD] for t in result.search)

    def apply(self, result: CrawlResult) -> Outcome:
        started = time.perf_counter()
        ip = IpMetadata.get_or_none(IpMetadata.id == result.ip_id)
        if ip is None:
            raise BadMessage(f"no IP with id {result.ip_id}")
        self.floor = details_pruned_before()
        if self.floor is not None and result.crawled_at < self.floor:
            # the facts it would be derived against were pruned (docs/operating/storage.md)
            logger.warning("result %s of IP %s skipped: crawled at %s, before the storage was pruned to %s",
                           result.task_id, result.ip_id, naive_utc(result.crawled_at), naive_utc(self.floor))
            return Outcome(task_id=result.task_id, applied=False)
        changes, baseline = self.decide(result, ip)
        outcome = self.persist(result, ip, changes, baseline)
        self.apply_states(result, changes)
        self.close_loop(result)
        logger.info("result %s of IP %s %s: %d items, %s, inflow %d, outflow %d, relisted %d, %d alert(s) in %.0f ms",
                    result.task_id, result.ip_id, "applied" if outcome.applied else "was already applied",
                    len(result.items), "baseline" if baseline else outcome.transitions, outcome.inflow,
                    outcome.outflow, outcome.relisted, len(outcome.alerts), (time.perf_counter() - started) * 1000)
        return outcome

