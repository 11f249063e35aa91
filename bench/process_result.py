"""A 1,000-item crawl result end to end (state machine + database writes), against the floor measured in the
same run: the same Redis commands pipelined raw plus, in one transaction, one bulk upsert of the same snapshot rows
and one bulk insert of the same sighting rows (the facts every result stores, docs/concepts/measures.md), each one
prepared statement the driver runs for every row (``insert_rows``, the cheapest bulk write we have, which the
result path uses too). For contrast, a naive version with one round trip per item; and the same
result against a second floor that reads and writes the states with the result path's own Redis scripts, which
cost less than the raw commands (what the result path does beyond that floor is all in the database and Python).

Each round a tenth of the listings sell and a tenth are new, and every price moves: the events of the 200 that
change are derived again, the 800 that only extend their spell are not; but every listing starts a new run of its
sightings, the worst case for storing what changed. So a second series, a quiet market, moves one price in 20 (the
floor stores the same rows whatever changed). A listing keeps its title, so only the new
ones' titles are segmented. The titles are the labelled sample's (tests/segments/titles_tuning.tsv), so classifying
one costs what a real one does (a made-up title naming no goods costs a quarter of it).

On a SQLite file by default; ``--db mysql://…`` runs on that MySQL/MariaDB database, every table of which is dropped
first. What grows with what: a result's cost and its floor's with the result's listings; the result's part beyond
the floor with the listings that changed (new titles classified, changed listings' events derived)."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from lib.core import keys
from lib.core.clock import FrozenClock
from lib.core.db import bind_database, database, insert_rows, on_conflict_update
from lib.core.redis_client import state_redis
from lib.market.item_state import ItemState, ItemStateStore
from lib.market.processing import CrawlResult, ResultProcessor
from lib.market.schema import create_tables
from lib.scheduling.catalogue import Catalogue
from lib.scheduling.schedule import ScheduleStore
from models import ItemSnapshot, ListingSighting

from .common import bench_settings, empty_database, load_average, report

T0 = 1_800_000_000.0
#: Real listings' titles, the classifier's labelled sample: one per listing, in turn.
TITLES = [line.split("\t")[0] for line in (Path(__file__).parent.parent / "tests" / "segments" / "titles_tuning.tsv")
          .read_text(encoding="utf-8").splitlines()[1:]]
UNIQUE = [ItemSnapshot.ip_id, ItemSnapshot.source_id]
PRESERVE = [ItemSnapshot.price, ItemSnapshot.status, ItemSnapshot.last_seen]


def items(n: int, round_: int, quiet: bool = False) -> list[dict]:
    # each round: a tenth of the listings sell, a tenth are new, every price moves (quiet: one in 20); a listing
    # keeps its title
    ids = [i + round_ * n // 10 for i in range(n)]
    return [{"source_id": f"m{k}", "title": TITLES[k % len(TITLES)],
             "price": (1000 + k % 500 + (round_ if k % 20 == round_ % 20 else 0)) if quiet else 1000 + i,
             "status": "sold" if i < n // 10 else "on_sale", "image_url": "", "item_url": ""}
            for i, k in enumerate(ids)]


def floor_once(r, ip_id: int, rows: list[dict], at: float) -> None:
    pipe = r.pipeline(transaction=False)
    for row in rows:
        pipe.hgetall(keys.item_state(ip_id, row["source_id"]))
    pipe.execute()
    pipe = r.pipeline(transaction=False)
    for row in rows:
        key = keys.item_state(ip_id, row["source_id"])
        pipe.hset(key, mapping={"status": row["status"], "price": row["price"], "first_seen": at, "last_seen": at})
        pipe.pexpire(key, 86_400_000)
    pipe.execute()
    floor_writes(ip_id, rows, at)


def scripted_floor_once(store: ItemStateStore, ip_id: int, rows: list[dict], at: float) -> None:
    """The floor with the result path's own Redis calls (a script per 500 states each way), which cost less than
    the raw commands: what the result path does beyond it is then all in the database and in Python."""
    store.read(ip_id, [row["source_id"] for row in rows])
    store.write(ip_id, [(row["source_id"], ItemState(row["status"], row["price"], at, at)) for row in rows])
    floor_writes(ip_id, rows, at)


def floor_writes(ip_id: int, rows: list[dict], at: float) -> None:
    snapshot_rows = [{"ip_id": ip_id, "source_id": x["source_id"], "title": x["title"], "price": x["price"],
                      "status": x["status"], "first_seen": at, "last_seen": at} for x in rows]
    sighting_rows = [{"ip_id": ip_id, "source_id": x["source_id"], "crawled_at": at, "status": x["status"],
                      "price": x["price"], "created": None, "updated": None} for x in rows]
    with database.atomic():  # the cheapest bulk writes there are: one prepared statement, executemany
        insert_rows(ItemSnapshot, snapshot_rows, conflict="update", target=UNIQUE, preserve=PRESERVE)
        insert_rows(ListingSighting, sighting_rows, conflict="ignore")


def naive_once(r, ip_id: int, rows: list[dict], at: float) -> None:
    for row in rows:
        key = keys.item_state(ip_id, row["source_id"])
        r.hgetall(key)
        r.hset(key, mapping={"status": row["status"], "price": row["price"], "first_seen": at, "last_seen": at})
        r.pexpire(key, 86_400_000)
        on_conflict_update(
            ItemSnapshot.insert(ip_id=ip_id, source_id=row["source_id"], title=row["title"], price=row["price"],
                                status=row["status"], first_seen=at, last_seen=at),
            UNIQUE, preserve=PRESERVE).execute()


def run(n: int = 1000, rounds: int = 5, url: str | None = None) -> None:
    with tempfile.TemporaryDirectory() as tmp, bench_settings(Path(tmp), url) as settings:
        bind_database(settings.database_url_resolved)
        print(f"process_result: {n:,}-item results on {url.split('://')[0] if url else 'sqlite'} "
              f"(floor: raw pipelined Redis + one bulk upsert), load {load_average()}")
        empty_database(url)
        create_tables()
        r = state_redis(settings)
        r.flushdb()
        clock = FrozenClock(T0)
        catalogue = Catalogue(ScheduleStore(r), settings, clock)
        proc = ResultProcessor(settings, r, clock)
        ips = [catalogue.add(f"bench {k}") for k in range(5)]
        proc.apply(CrawlResult.parse(ips[0].id, "warm", T0, items(n, 0)))  # baseline
        # the floors' states too: unwarmed, a floor's first round read 1,000 missing hashes, cheaper than states
        floor_once(r, ips[1].id, items(n, 0), T0)
        scripted_floor_once(proc.states, ips[3].id, items(n, 0), T0)
        full, floor, scripted, quiet, naive = [], [], [], [], []
        for k in range(1, rounds + 1):
            at = T0 + 60 * k
            result = CrawlResult.parse(ips[0].id, f"t{k}", at, items(n, k))
            start = time.perf_counter()
            proc.apply(result)
            full.append(time.perf_counter() - start)
            start = time.perf_counter()
            floor_once(r, ips[1].id, items(n, k), at)
            floor.append(time.perf_counter() - start)
            start = time.perf_counter()
            scripted_floor_once(proc.states, ips[3].id, items(n, k), at)
            scripted.append(time.perf_counter() - start)
        proc.apply(CrawlResult.parse(ips[4].id, "warm-quiet", T0, items(n, 0, quiet=True)))
        for k in range(1, rounds + 1):  # after the others: the same database and Redis as theirs, not more
            result = CrawlResult.parse(ips[4].id, f"q{k}", T0 + 60 * k, items(n, k, quiet=True))
            start = time.perf_counter()
            proc.apply(result)
            quiet.append(time.perf_counter() - start)
        for k in range(1, 3):
            start = time.perf_counter()
            naive_once(r, ips[2].id, items(n, k), T0 + 60 * k)
            naive.append(time.perf_counter() - start)
        report("process_result end to end (s)", min(full), min(floor))
        report("  against a floor with its Redis scripts (s)", min(full), min(scripted))
        report("a quiet market: one price in 20 moves (s)", min(quiet), min(floor))
        report("naive, one round trip per item (s)", min(naive), min(floor))
        database.close()


def main(argv: list[str] | None = None) -> int:
    argv = argv or []
    if argv and (len(argv) != 2 or argv[0] != "--db" or not argv[1].startswith("mysql://")):
        raise SystemExit("usage: python -m bench process_result [--db mysql://…]  (its tables are dropped first)")
    run(url=argv[1] if argv else None)
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
