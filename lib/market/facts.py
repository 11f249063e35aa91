"""Event-time facts: every sighting of a listing is stored once, as runs (``listing_sightings``: the first and
last crawl of each run of consecutive crawls that saw the listing unchanged), and the listing's market events
(created, sold) are derived from all its sightings and the IP's baseline crawl
(``listing_events``, unique per listing, kind and occurrence). Both are a function of the *set* of results
applied, so any delivery order and any repetition end with the same facts; the hourly rows are then derived
from the events of the hours touched. Definitions 1–3 in docs/concepts/measures.md."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import peewee

from lib.core.db import ParameterList, insert_rows
from lib.market.item_state import ON_SALE, SOLD, CrawlItem, ItemState
from lib.market.relists import goods_groups
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
    # a sale carries its listing's creation even from before the baseline (no created event is counted then):
    # the ages at sale the outflow estimate learns from would otherwise leave out the older listings' sales
    listed_at = created
    if created is not None:
        if created >= baseline_at:
            created_at = created
            events.append(Event(CREATED, 0, created))
    elif ordered[0].crawled_at > baseline_at and ordered[0].status == ON_SALE:
        created_at = listed_at = ordered[0].crawled_at
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
                                        listed if previous is not None else None, listed_at))
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


@dataclass(frozen=True)
class Run:
    """A stored run of sightings (``models.ListingSighting``): ``first`` and ``last`` crawl, and what they saw.
    ``(sid, first)`` is its row's key."""

    sid: str
    first: float
    last: float
    key: tuple[str, int | None, float | None, float | None]  # status, price, created, updated (sold only)


def sighting_key(status: str, price: int | None, created: float | None,
                 updated: float | None) -> tuple[str, int | None, float | None, float | None]:
    """What a run holds unchanged. The site's updated time is kept for sold sightings only: an event reads it from
    the first sold sighting of a spell (the sale time), never from an on-sale one."""
    return status, price, created, updated if status == SOLD else None


def _run_row(ip_id: int, source_id: str, first: float, last: float,
             key: tuple[str, int | None, float | None, float | None]) -> dict[str, Any]:  # a row to insert
    status, price, created, updated = key
    return {"ip_id": ip_id, "source_id": source_id, "crawled_at": first, "last_seen": last, "status": status,
            "price": price, "created": created, "updated": updated}


def _runs(ip_id: int, source_ids: Sequence[str], since: float | None = None) -> dict[str, list[Run]]:
    """The runs of these listings, by listing, in time order (only those ending at ``since`` or later when
    given)."""
    query = ListingSighting.select(ListingSighting.source_id, ListingSighting.crawled_at,
                                   ListingSighting.last_seen, ListingSighting.status, ListingSighting.price,
                                   ListingSighting.created, ListingSighting.updated)
    where = (ListingSighting.ip_id == ip_id) & ListingSighting.source_id.in_(ParameterList(source_ids))
    if since is not None:
        where &= ListingSighting.last_seen >= since
    found: dict[str, list[Run]] = defaultdict(list)
    for sid, first, last, status, price, created, updated in tuples(query.where(where)):
        found[sid].append(Run(sid, first, first if last is None else last,
                              sighting_key(status, price, created, updated)))
    for runs in found.values():
        runs.sort(key=lambda r: r.first)
    return found


@dataclass(frozen=True)
class CrawlTimes:
    """The IP's applied crawls as a result's transaction finds them before writing its ledger row, from one read
    of the ledger: the earliest and latest, and the ones just before and just after the result's crawl time."""

    earliest: float | None
    latest: float | None
    before: float | None
    after: float | None
    same: int  # results of the same crawl time already applied

    @classmethod
    def read(cls, ip_id: int, crawled_at: float) -> CrawlTimes:
        at = AppliedResult.crawled_at
        below, above = peewee.Case(None, [(at < crawled_at, at)]), peewee.Case(None, [(at > crawled_at, at)])
        equal = peewee.Case(None, [(at == crawled_at, 1)], 0)
        (row,) = tuples(AppliedResult.select(peewee.fn.MIN(at), peewee.fn.MAX(at), peewee.fn.MAX(below),
                                             peewee.fn.MIN(above), peewee.fn.SUM(equal))
                        .where(AppliedResult.ip_id == ip_id))
        earliest, latest, before, after, same = (None if v is None else float(v) for v in row)
        return cls(earliest, latest, before, after, int(same or 0))

    def neighbours(self) -> tuple[float | None, float | None, bool]:
        """The applied crawls just before and just after the result's crawl time, and whether another result of
        the same crawl time was applied already (``store_sightings``'s ``neighbours``)."""
        return self.before, self.after, self.same >= 1

    def baseline_with(self, crawled_at: float) -> float:
        """The IP's baseline once the result's ledger row is written (``baseline_of``)."""
        return crawled_at if self.earliest is None else min(self.earliest, crawled_at)


def runs_keyed(ip_id: int, keys: Sequence[tuple[str, float]]) -> Any:
    """The condition selecting these runs of the IP by their key, (source id, first crawl): the listings' range
    of the primary key, then the pairs."""
    return ((ListingSighting.ip_id == ip_id)
            & ListingSighting.source_id.in_(ParameterList(sorted({sid for sid, _ in keys})))
            & peewee.Tuple(ListingSighting.source_id, ListingSighting.crawled_at)
            .in_([(ListingSighting.source_id.db_value(sid), at) for sid, at in keys]))


class _Writes:
    """The run rows one result changes, written in bulk."""

    def __init__(self, ip_id: int) -> None:
        self.ip_id = ip_id
        self.inserts: list[dict[str, Any]] = []  # listing_sightings rows to insert, read back by applied_to
        self.lasts: dict[float, list[tuple[str, float]]] = defaultdict(list)  # new last crawl → runs' keys
        # runs that go on past their last crawl: (that crawl, the new last) → runs' keys. A listing has one run at
        # most that ends at a given crawl (its runs never share a crawl), so these are found by listing and last
        # crawl: an index range per listing, where the keys' pairs made the database test every run of the
        # listings against every pair (9 ms for a quiet 1,000-item crawl on SQLite, most of its writes)
        self.extends: dict[tuple[float, float], list[tuple[str, float]]] = defaultdict(list)
        self.firsts: list[tuple[tuple[str, float], float]] = []
        self.deletes: list[tuple[str, float]] = []

    def applied_to(self, runs: dict[str, list[Run]]) -> dict[str, list[Run]]:
        """These listings' runs (all of each one's) as the writes will leave them, in time order."""
        moved_last = {key: last for last, keys in self.lasts.items() for key in keys}
        moved_last.update((key, last) for (_, last), keys in self.extends.items() for key in keys)
        moved_first = dict(self.firsts)
        deleted = set(self.deletes)
        result: dict[str, list[Run]] = {}
        for sid, found in runs.items():
            kept = []
            for run in found:
                key = (sid, run.first)
                if key in deleted:
                    continue
                kept.append(Run(sid, moved_first.get(key, run.first), moved_last.get(key, run.last), run.key))
            result[sid] = kept
        for row in self.inserts:
            if row["source_id"] in result:
                result[row["source_id"]].append(Run(row["source_id"], row["crawled_at"], row["last_seen"],
                                                    (row["status"], row["price"], row["created"], row["updated"])))
        for found in result.values():
            found.sort(key=lambda r: r.first)
        return result

    def flush(self) -> None:
        for (last, new_last), keys in self.extends.items():
            sids = [sid for sid, _ in keys]
            for start in range(0, len(sids), CHUNK):
                ListingSighting.update(last_seen=new_last).where(
                    (ListingSighting.ip_id == self.ip_id)
                    & ListingSighting.source_id.in_(ParameterList(sids[start:start + CHUNK]))
                    & (ListingSighting.last_seen == last)).execute()
        for last, keys in self.lasts.items():
            for start in range(0, len(keys), CHUNK):
                ListingSighting.update(last_seen=last).where(runs_keyed(self.ip_id, keys[start:start + CHUNK])) \
                    .execute()
        for key, first in self.firsts:
            ListingSighting.update(crawled_at=first).where(runs_keyed(self.ip_id, [key])).execute()
        for start in range(0, len(self.deletes), CHUNK):
            ListingSighting.delete().where(runs_keyed(self.ip_id, self.deletes[start:start + CHUNK])).execute()
        insert_rows(ListingSighting, self.inserts)
        self.__init__(self.ip_id)  # type: ignore[misc]  # emptied for the next result: the fields of a new one


def store_sightings(ip_id: int, crawled_at: float, items: Sequence[CrawlItem],
                    neighbours: tuple[float | None, float | None, bool],
                    derive: Collection[str] = ()) -> dict[str, list[Run]] | None:
    """Add one crawl's sightings to the listings' runs. Called once the crawl's ledger row is written: the runs
    are the maximal sets of the IP's consecutive applied crawls that saw a listing unchanged, so they depend on the
    set of crawls applied, never on their order. A crawl after every other extends the runs its previous crawl
    ended; a late one may also cut a run in two (it saw the listing changed, or did not see it). ``neighbours``:
    the crawl's place in the ledger, ``CrawlTimes.neighbours``.

    Returns the runs of the ``derive`` listings (whose events the caller derives next) as these writes leave them,
    all of each one's, read here with the runs the crawl extends, for a crawl after every other; None for a late
    or repeated one (``rederive`` reads them)."""
    at = crawled_at
    before, after, repeated = neighbours
    newest = after is None and not repeated
    writes = _Writes(ip_id)
    # an auction's price is its current bid, not an asking price: its sightings carry none, so its sale counts as
    # outflow and stays out of the fixed-price statistics (docs/concepts/measures.md, definition 3)
    seen = {i.source_id: sighting_key(i.status, None if i.auction else i.price, i.created, i.updated) for i in items}
    ids = list(seen)
    whole: dict[str, list[Run]] = {}
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start:start + CHUNK]
        if after is None:  # the newest crawl: only a run its previous crawl ended can go on (or one it is in)
            keep = [sid for sid in chunk if sid in derive] if newest else []
            rest = [sid for sid in chunk if sid not in derive] if keep else chunk
            runs = _runs(ip_id, rest, before) if before is not None and rest else {}
            if keep:  # all their runs: two reads, each row read once (one read with an OR took longer than both)
                runs.update(_runs(ip_id, keep))
            whole.update((sid, runs.get(sid, [])) for sid in keep)
            runs = {sid: [r for r in found if before is not None and r.last >= before]
                    for sid, found in runs.items()}
        else:
            runs = _runs(ip_id, chunk)
        for sid in chunk:
            _add_sighting(writes, sid, at, seen[sid], runs.get(sid, []), before, after, repeated)
    if after is not None and not repeated:
        # a crawl inside the IP's history that did not see a listing ends the runs that spanned it
        for sid, first, last, status, price, created, updated in tuples(
                ListingSighting.select(ListingSighting.source_id, ListingSighting.crawled_at, ListingSighting.last_seen,
                                       ListingSighting.status, ListingSighting.price, ListingSighting.created,
                                       ListingSighting.updated)
                .where((ListingSighting.ip_id == ip_id) & (ListingSighting.crawled_at < at)
                       & (ListingSighting.last_seen > at))):
            if sid not in seen:
                writes.lasts[before].append((sid, first))  # type: ignore[index]  # a crawl before it: ``before`` is set
                writes.inserts.append(_run_row(ip_id, sid, after, last, sighting_key(status, price, created, updated)))
    written = writes.applied_to(whole) if newest else None
    writes.flush()
    return written


def _add_sighting(writes: _Writes, sid: str, at: float, key: tuple[str, int | None, float | None, float | None],
                  runs: list[Run], before: float | None,
                  after: float | None, repeated: bool) -> None:
    covering = next((r for r in runs if r.first <= at <= r.last), None)
    if covering is not None:
        if covering.first == at or covering.last == at or repeated or covering.key == key:
            return  # seen at this crawl already (the first result of a crawl time is kept), or unchanged
        # changed in the middle of a run: the run ends at the crawl before, and goes on from the crawl after
        writes.lasts[before].append((sid, covering.first))  # type: ignore[index]  # inside a run: a crawl before it
        writes.inserts.append(_run_row(writes.ip_id, sid, at, at, key))
        writes.inserts.append(_run_row(writes.ip_id, sid, after,  # type: ignore[arg-type]  # inside a run: set
                                       covering.last, covering.key))
        return
    ending = next((r for r in runs if before is not None and r.last == before and r.key == key), None)
    starting = next((r for r in runs if after is not None and r.first == after and r.key == key), None)
    if ending is not None and starting is not None:  # the crawl joins two runs
        writes.lasts[starting.last].append((sid, ending.first))
        writes.deletes.append((sid, starting.first))
    elif ending is not None:
        writes.extends[(ending.last, at)].append((sid, ending.first))
    elif starting is not None:
        writes.firsts.append(((sid, starting.first), at))
    else:
        writes.inserts.append(_run_row(writes.ip_id, sid, at, at, key))


def needs_derivation(item: CrawlItem, crawled_at: float, before: ItemState | None) -> bool:
    """False when the sighting only extends the listing's latest spell (same status, after its latest known
    sighting): appending it cannot change the listing's events, whose times and prices come from the first
    sighting of each spell (a price cut shows at the sale, against the spell's first price)."""
    return before is None or crawled_at <= before.last_seen or before.status != item.status


def _event_row(ip_id: int, source_id: str, e: Event) -> dict[str, Any]:  # a listing_events row to insert
    return {"ip_id": ip_id, "source_id": source_id, "kind": e.kind, "occurrence": e.occurrence,
            "event_at": e.event_at, "price": e.price, "listed_price": e.listed_price, "created_at": e.created_at}


def rederive(ip_id: int, source_ids: Sequence[str], baseline_at: float, floor: float | None = None,
             runs: dict[str, list[Run]] | None = None) -> FactsOutcome:
    """Bring the events of these listings in line with their sightings; the counts and hours that changed.
    ``floor``: the time storage was pruned to (``lib.market.retention``): events before it are left as they are
    and never derived again (a listing pruned as dormant that shows up again is not counted twice)."""
    outcome = FactsOutcome(hours=set())
    assert outcome.hours is not None
    for start in range(0, len(source_ids), CHUNK):
        # a relisted goods' events come from the sightings of all its listings, under its first listing's id
        groups = goods_groups(ip_id, list(source_ids[start:start + CHUNK]))
        chunk = sorted({sid for members in groups.values() for sid in members})
        given = [sid for sid in chunk if runs is not None and sid in runs]
        sightings = _sightings_of({sid: runs[sid] for sid in given}) if runs is not None else {}
        rest = [sid for sid in chunk if sid not in given]
        if rest:
            sightings.update(listing_sightings(ip_id, rest))
        stored: dict[tuple[str, str, int], Event] = {
            (sid, kind, occurrence): Event(kind, occurrence, event_at, price, listed_price, created_at)
            for sid, kind, occurrence, event_at, price, listed_price, created_at in tuples(
                ListingEvent.select(ListingEvent.source_id, ListingEvent.kind, ListingEvent.occurrence,
                                    ListingEvent.event_at, ListingEvent.price, ListingEvent.listed_price,
                                    ListingEvent.created_at)
                .where((ListingEvent.ip_id == ip_id) & ListingEvent.source_id.in_(ParameterList(chunk))))}
        wanted = {(goods, e.kind, e.occurrence): e for goods, members in groups.items()
                  for e in goods_events(members, sightings, baseline_at)}
        if floor is not None:
            wanted = {key: e for key, e in wanted.items() if e.event_at >= floor}
            stored = {key: e for key, e in stored.items() if e.event_at >= floor or key in wanted}
        stale = [(key, e) for key, e in stored.items() if key not in wanted or e != wanted[key]]
        fresh = [(key, e) for key, e in wanted.items() if key not in stored or stored[key] != e]
        for _, e in stale:
            outcome.hours.add(hour_bucket(e.event_at))
            outcome.inflow -= e.kind == CREATED
            outcome.outflow -= e.kind == SOLD_EVENT
        for (sid, kind, occurrence), _ in stale:  # by its primary key: few, when a late or changed sighting moves one
            ListingEvent.delete().where((ListingEvent.ip_id == ip_id) & (ListingEvent.source_id == sid)
                                        & (ListingEvent.kind == kind)
                                        & (ListingEvent.occurrence == occurrence)).execute()
        new_rows = [_event_row(ip_id, key[0], e) for key, e in fresh]
        for _, e in fresh:
            outcome.hours.add(hour_bucket(e.event_at))
            outcome.inflow += e.kind == CREATED
            outcome.outflow += e.kind == SOLD_EVENT
        insert_rows(ListingEvent, new_rows)
    return outcome


def goods_events(members: Sequence[str], sightings: dict[str, list[Sighting]], baseline_at: float) -> list[Event]:
    """The events of one goods: ``members`` its listings, the first one first (a listing alone, or a listing and
    its relists), from all their sightings. A relisted goods whose first listing's sightings are gone (pruned) was
    created before the storage floor: its relists add no creation."""
    if len(members) == 1:
        return derive_events(sightings.get(members[0], []), baseline_at)
    events = derive_events([s for sid in members for s in sightings.get(sid, [])], baseline_at)
    if not sightings.get(members[0]):
        events = [e for e in events if e.kind != CREATED]
    return events


def listing_sightings(ip_id: int, source_ids: Sequence[str]) -> dict[str, list[Sighting]]:
    """The sightings of these listings that their events depend on: the first and last of each run. The ones
    inside a run repeat its first but for their time, and an event reads only the first sighting, the first
    carrying a created time and the two around each change (``derive_events``), so they change nothing."""
    return _sightings_of(_runs(ip_id, source_ids))


def _sightings_of(runs: dict[str, list[Run]]) -> dict[str, list[Sighting]]:
    sightings: dict[str, list[Sighting]] = defaultdict(list)
    for sid, found in runs.items():
        for run in found:
            status, price, created, updated = run.key
            sightings[sid].append(Sighting(run.first, status, price, created, updated))
            if run.last != run.first:
                sightings[sid].append(Sighting(run.last, status, price, created, updated))
    return sightings


def rebuild_ip_events(ip_id: int, baseline_at: float) -> set[datetime]:
    """Derive every listing's events of an IP again (its baseline moved, or a migration); the hours touched."""
    hours = event_hours(ip_id)
    ListingEvent.delete().where(ListingEvent.ip_id == ip_id).execute()
    ids = [sid for (sid,) in tuples(ListingSighting.select(ListingSighting.source_id)
                                    .where(ListingSighting.ip_id == ip_id).distinct())]
    outcome = rederive(ip_id, ids, baseline_at)
    return hours | (outcome.hours or set())


def event_hours(ip_id: int) -> set[datetime]:
    return {hour_bucket(at) for (at,) in tuples(ListingEvent.select(ListingEvent.event_at)
                                                .where(ListingEvent.ip_id == ip_id))}
