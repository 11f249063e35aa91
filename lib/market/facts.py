"""Event-time facts: every sighting of a listing is stored once (``listing_sightings``), and the listing's
market events (created, sold) are derived from all its sightings and the IP's baseline crawl
(``listing_events``, unique per listing, kind and occurrence). Both are a function of the *set* of results
applied, so any delivery order and any repetition end with the same facts; the hourly rows are then derived
from the events of the hours touched. Definitions 1–3 in the README ("Market measures")."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

import peewee

from lib.market.item_state import ON_SALE, SOLD, CrawlItem, ItemState
from lib.market.statistics import hour_bucket, tuples
from models import AppliedResult, ListingEvent, ListingSighting

CREATED = "created"
SOLD_EVENT = "sold"
CHUNK = 500


@dataclass(frozen=True)
class Sighting:
    crawled_at: float
    status: str
    price: int | None
    created: float | None = None
    updated: float | None = None


@dataclass(frozen=True)
class Event:
    kind: str
    occurrence: int
    event_at: float
    price: int | None = None
    listed_price: int | None = None
    created_at: float | None = None


def derive_events(sightings: Iterable[Sighting], baseline_at: float) -> list[Event]:
    """A listing's counted events from all its sightings (any order) and its IP's baseline crawl time."""
    ordered = sorted(sightings, key=lambda s: s.crawled_at)
    if not ordered:
        return []
    events: list[Event] = []
    created = next((s.created for s in ordered if s.created is not None), None)
    created_at: float | None = None
    if created is not None:
        if created >= baseline_at:
            created_at = created
            events.append(Event(CREATED, 0, created))
    elif ordered[0].crawled_at > baseline_at and ordered[0].status == ON_SALE:
        created_at = ordered[0].crawled_at
        events.append(Event(CREATED, 0, created_at))
    sales = 0
    listed: int | None = None  # the first on-sale price of the current on-sale spell
    previous: Sighting | None = None
    for s in ordered:
        if s.status == ON_SALE:
            if previous is None or previous.status == SOLD:
                listed = s.price
        elif previous is None or previous.status == ON_SALE:
            if previous is not None or s.crawled_at > baseline_at:
                low = previous.crawled_at if previous is not None else float("-inf")
                at = s.updated if s.updated is not None and low < s.updated <= s.crawled_at else s.crawled_at
                if at >= baseline_at:
                    events.append(Event(SOLD_EVENT, sales, at, s.price,
                                        listed if previous is not None else None, created_at))
                    sales += 1
            listed = None
        previous = s
    return events


@dataclass
class FactsOutcome:
    inflow: int = 0  # created events this result added (net)
    outflow: int = 0
    hours: set[datetime] | None = None  # hours whose events changed


def baseline_of(ip_id: int) -> float | None:
    """The IP's baseline: its earliest applied crawl."""
    value = (AppliedResult.select(peewee.fn.MIN(AppliedResult.crawled_at))
             .where(AppliedResult.ip_id == ip_id).scalar())
    return None if value is None else float(value)


def store_sightings(ip_id: int, crawled_at: float, items: Sequence[CrawlItem]) -> None:
    rows = [{"ip_id": ip_id, "source_id": i.source_id, "crawled_at": crawled_at, "status": i.status,
             "price": i.price, "created": i.created, "updated": i.updated} for i in items]
    for start in range(0, len(rows), CHUNK):
        ListingSighting.insert_many(rows[start:start + CHUNK]).on_conflict_ignore().execute()


def needs_derivation(item: CrawlItem, crawled_at: float, before: ItemState | None) -> bool:
    """False when the sighting only extends the listing's latest spell (same status, after its latest known
    sighting): appending it cannot change the listing's events, whose times and prices come from the first
    sighting of each spell (a price cut shows at the sale, against the spell's first price)."""
    return before is None or crawled_at <= before.last_seen or before.status != item.status


def _event_row(ip_id: int, source_id: str, e: Event) -> dict:
    return {"ip_id": ip_id, "source_id": source_id, "kind": e.kind, "occurrence": e.occurrence,
            "event_at": e.event_at, "hour_bucket": hour_bucket(e.event_at), "price": e.price,
            "listed_price": e.listed_price, "created_at": e.created_at}


def _row_event(row: ListingEvent) -> Event:
    return Event(row.kind, row.occurrence, row.event_at, row.price, row.listed_price, row.created_at)


def rederive(ip_id: int, source_ids: Sequence[str], baseline_at: float, floor: float | None = None) -> FactsOutcome:
    """Bring the events of these listings in line with their sightings; the counts and hours that changed.
    ``floor``: the time storage was pruned to (``lib.market.retention``): events before it are left as they are
    and never derived again (a listing pruned as dormant that shows up again is not counted twice)."""
    outcome = FactsOutcome(hours=set())
    assert outcome.hours is not None
    for start in range(0, len(source_ids), CHUNK):
        chunk = list(source_ids[start:start + CHUNK])
        sightings: dict[str, list[Sighting]] = defaultdict(list)
        for sid, at, status, price, created, updated in tuples(
                ListingSighting.select(ListingSighting.source_id, ListingSighting.crawled_at, ListingSighting.status,
                                       ListingSighting.price, ListingSighting.created, ListingSighting.updated)
                .where((ListingSighting.ip_id == ip_id) & ListingSighting.source_id.in_(chunk))):
            sightings[sid].append(Sighting(at, status, price, created, updated))
        stored: dict[tuple[str, str, int], ListingEvent] = {
            (row.source_id, row.kind, row.occurrence): row
            for row in ListingEvent.select().where((ListingEvent.ip_id == ip_id) & ListingEvent.source_id.in_(chunk))}
        wanted = {(sid, e.kind, e.occurrence): e for sid in chunk for e in derive_events(sightings[sid], baseline_at)}
        if floor is not None:
            wanted = {key: e for key, e in wanted.items() if e.event_at >= floor}
            stored = {key: row for key, row in stored.items() if row.event_at >= floor or key in wanted}
        stale = [row for key, row in stored.items() if key not in wanted or _row_event(row) != wanted[key]]
        fresh = [(key, e) for key, e in wanted.items() if key not in stored or _row_event(stored[key]) != e]
        for row in stale:
            outcome.hours.add(row.hour_bucket)
            outcome.inflow -= row.kind == CREATED
            outcome.outflow -= row.kind == SOLD_EVENT
        if stale:
            ListingEvent.delete().where(ListingEvent.id.in_([row.id for row in stale])).execute()
        new_rows = [_event_row(ip_id, key[0], e) for key, e in fresh]
        for _, e in fresh:
            outcome.hours.add(hour_bucket(e.event_at))
            outcome.inflow += e.kind == CREATED
            outcome.outflow += e.kind == SOLD_EVENT
        for i in range(0, len(new_rows), CHUNK):
            ListingEvent.insert_many(new_rows[i:i + CHUNK]).execute()
    return outcome


def rebuild_ip_events(ip_id: int, baseline_at: float) -> set[datetime]:
    """Derive every listing's events of an IP again (its baseline moved, or a migration); the hours touched."""
    hours = event_hours(ip_id)
    ListingEvent.delete().where(ListingEvent.ip_id == ip_id).execute()
    ids = [sid for (sid,) in tuples(ListingSighting.select(ListingSighting.source_id)
                                    .where(ListingSighting.ip_id == ip_id).distinct())]
    outcome = rederive(ip_id, ids, baseline_at)
    return hours | (outcome.hours or set())


def event_hours(ip_id: int) -> set[datetime]:
    return {h for (h,) in tuples(ListingEvent.select(ListingEvent.hour_bucket).where(ListingEvent.ip_id == ip_id)
                                 .distinct())}
