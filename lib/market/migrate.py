"""Bring a database written before the event-time facts to them (``animetop db init``): what it stored of each
listing is its latest state (``item_snapshots``), so each IP's sightings are rebuilt from those, then its
events and hourly rows. A database written before the sightings were stored as runs has one row per listing and
crawl: those become runs (``compress_sightings``). docs/operating/database.md."""

from __future__ import annotations

import logging
from collections import defaultdict
from typing import Any

from lib.core.db import write_transaction
from lib.market.facts import CHUNK, baseline_of, rebuild_ip_events, runs_keyed, sighting_key
from lib.market.item_state import ON_SALE, SOLD
from lib.market.retention import pruned_before
from lib.market.statistics import ensure_hours, hour_bucket, refresh_hours, tuples
from models import AppliedResult, IpStatsHourly, ItemSnapshot, ListingEvent, ListingSighting

logger = logging.getLogger(__name__)


def snapshot_sightings(snap: ItemSnapshot) -> list[dict[str, Any]]:  # listing_sightings rows to insert
    """The sightings a snapshot implies: seen at ``first_seen`` and at ``last_seen``. A listing sold by its last
    sighting and seen earlier was on sale at its first (the state machine saw it change); one seen once was in
    that state then. Intermediate sightings (relists, price cuts) were never stored and are not invented."""
    base = {"ip_id": snap.ip_id, "source_id": snap.source_id, "created": snap.created}
    price = None if snap.auction else snap.price  # an auction's bid is no asking price (store_sightings)
    last = {**base, "crawled_at": snap.last_seen, "last_seen": snap.last_seen, "status": snap.status,
            "price": price, "updated": snap.updated if snap.status == SOLD else None}
    if snap.first_seen == snap.last_seen:
        return [last]
    first_status = ON_SALE if snap.status == SOLD else snap.status
    return [{**base, "crawled_at": snap.first_seen, "last_seen": snap.first_seen, "status": first_status,
             "price": price, "updated": None}, last]


def ips_without_facts() -> list[int]:
    applied = {ip for (ip,) in tuples(AppliedResult.select(AppliedResult.ip_id).distinct())}
    with_facts = {ip for (ip,) in tuples(ListingSighting.select(ListingSighting.ip_id).distinct())}
    if pruned_before() is not None:
        # pruned storage: an IP without sightings had them all pruned (every listing dormant), it does not
        # predate the facts; its snapshots went with them, so there is nothing to rebuild from
        with_snapshots = {ip for (ip,) in tuples(ItemSnapshot.select(ItemSnapshot.ip_id).distinct())}
        return sorted((applied - with_facts) & with_snapshots)
    return sorted(applied - with_facts)


def rebuild_ip(ip_id: int) -> int:
    """Sightings from the snapshots, then events and hourly rows, for one IP; the number of events."""
    baseline_at = baseline_of(ip_id)
    if baseline_at is None:
        return 0
    latest = float(AppliedResult.select(AppliedResult.crawled_at).where(AppliedResult.ip_id == ip_id)
                   .order_by(AppliedResult.crawled_at.desc()).first().crawled_at)
    with write_transaction():
        rows = [row for snap in ItemSnapshot.select().where(ItemSnapshot.ip_id == ip_id)
                for row in snapshot_sightings(snap)]
        for start in range(0, len(rows), CHUNK):
            ListingSighting.insert_many(rows[start:start + CHUNK]).on_conflict_ignore().execute()
        hours = rebuild_ip_events(ip_id, baseline_at)
        tracked = (hour_bucket(baseline_at), hour_bucket(latest))
        IpStatsHourly.delete().where(IpStatsHourly.ip_id == ip_id).execute()
        ensure_hours(ip_id, *tracked)
        refresh_hours(ip_id, hours, tracked)
    return ListingEvent.select().where(ListingEvent.ip_id == ip_id).count()


def compress_sightings() -> list[int]:
    """Turn the sightings stored one row per listing and crawl (``last_seen`` NULL) into runs, one transaction per
    IP; the IPs done. A run is a listing's sightings at consecutive crawls of its IP (every crawl time known: the
    ledger's and the sightings' own, since pruning may have thinned the ledger) with the same status, price,
    created and, sold, updated time: its first row stays, with ``last_seen`` its last crawl, and the others go.
    The first and last sighting of each run are all its events read, so they stay what they were."""
    done = []
    for (ip_id,) in tuples(ListingSighting.select(ListingSighting.ip_id).where(ListingSighting.last_seen.is_null())
                           .distinct()):
        with write_transaction():
            compress_ip(ip_id)
        done.append(ip_id)
    return done


def compress_ip(ip_id: int) -> None:
    rows = tuples(ListingSighting.select(ListingSighting.source_id, ListingSighting.crawled_at,
                                         ListingSighting.last_seen, ListingSighting.status, ListingSighting.price,
                                         ListingSighting.created, ListingSighting.updated)
                  .where(ListingSighting.ip_id == ip_id)
                  .order_by(ListingSighting.source_id, ListingSighting.crawled_at))
    crawls = sorted({float(at) for (at,) in tuples(AppliedResult.select(AppliedResult.crawled_at)
                                                   .where(AppliedResult.ip_id == ip_id))}
                    | {float(r[1]) for r in rows} | {float(r[2]) for r in rows if r[2] is not None})
    index = {at: k for k, at in enumerate(crawls)}
    lasts: dict[float, list[tuple[str, float]]] = defaultdict(list)
    deletes: list[tuple[str, float]] = []
    # the run: (key of its row: (source_id, first crawl), source_id, key, last)
    run: tuple[tuple[str, float], str, tuple[str, int | None, float | None, float | None], float] | None = None
    for sid, first, last, status, price, created, updated in rows:
        key = sighting_key(status, price, created, updated)
        last = first if last is None else last
        if (run is not None and run[1] == sid and run[2] == key and index[float(first)] == index[float(run[3])] + 1):
            deletes.append((sid, first))
            run = (run[0], sid, key, last)
        else:
            if run is not None:
                lasts[run[3]].append(run[0])
            run = ((sid, first), sid, key, last)
    if run is not None:
        lasts[run[3]].append(run[0])
    for start in range(0, len(deletes), CHUNK):
        ListingSighting.delete().where(runs_keyed(ip_id, deletes[start:start + CHUNK])).execute()
    for last, keys in lasts.items():
        for start in range(0, len(keys), CHUNK):
            ListingSighting.update(last_seen=last).where(runs_keyed(ip_id, keys[start:start + CHUNK])).execute()
    ListingSighting.update(updated=None).where((ListingSighting.ip_id == ip_id)
                                               & (ListingSighting.status == ON_SALE)).execute()


def migrate_market_facts() -> list[int]:
    """Rebuild the facts of every IP that has applied crawls but no sightings, and turn sightings stored one per
    crawl into runs; the IPs rebuilt."""
    compressed = compress_sightings()
    if compressed:
        logger.info("sightings of %d IP(s) stored as runs", len(compressed))
    done = []
    for ip_id in ips_without_facts():
        events = rebuild_ip(ip_id)
        logger.info("IP %s: facts rebuilt from its snapshots (%d events)", ip_id, events)
        done.append(ip_id)
    return done
