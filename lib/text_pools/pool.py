"""Title and content pools (docs/operating/pools.md): Redis lists topped up from the database, popped by applications.

Each row is handed out once. A queued row left "available" could be queued
again by a refill, so a fill *claims* rows first (status 2,
"queued") and pushes only what it claimed. Popping moves the id atomically
from the list to a "handed" set until the row is marked used (status 0),
which a batched ``mark_used`` message does. A queued row that is neither in
the list nor handed out was lost (Redis wiped, a filler died between claim
and push): the next fill, under the fill lock, makes it available again.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any, cast

import peewee
import redis

from lib.core import keys
from lib.core.clock import Clock, get_clock
from lib.core.db import is_mysql, retrying_deadlocks, write_transaction
from lib.core.settings import Settings
from lib.scheduling.execution_state import ExecutionState
from models import Content, Title
from models.pool import AVAILABLE, QUEUED, USED, PoolRow

logger = logging.getLogger(__name__)

#: The only tables a pool can be made of: kinds come from this whitelist, never from input strings.
KINDS: dict[str, type[PoolRow]] = {"titles": Title, "contents": Content}
FILL_JOB = "fill_pool"
#: The fill lock is a lease renewed at every step (not a plain 60 s lock): a filler killed
#: mid-fill blocks fills for this long at most, while a slow live one keeps its lock.
FILL_LOCK_SECONDS = 15
#: How long a consumer waits for rows a filler has claimed but not yet pushed before it says PoolEmpty.
QUEUED_WAIT = 3.0
#: After Redis failed, how long a consumer goes straight to the database before trying Redis again.
REDIS_RETRY_AFTER = 5.0
#: Ids per IN (…) list: well under SQLite's 32,766 bound variables.
ID_CHUNK = 2000
#: Largest number of values in one LPUSH.
PUSH_CHUNK = 1000


class _RangeMoved(Exception):
    """The range update of a claim marked other rows than those selected (rows were added to it meanwhile)."""


class PoolError(ValueError):
    """An unknown kind or group."""


class PoolEmpty(LookupError):
    """No row is available in the pool or the database."""


@dataclass(frozen=True)
class Item:
    id: int
    text: str


def model_of(kind: str) -> type[PoolRow]:
    try:
        return KINDS[kind]
    except (KeyError, TypeError):
        raise PoolError(f"unknown pool kind {kind!r}; expected one of {', '.join(KINDS)}") from None


def check_group(kind: str, group_id: int) -> type[PoolRow]:
    model = model_of(kind)
    if not isinstance(group_id, int) or isinstance(group_id, bool):
        raise PoolError(f"group id must be a whole number, got {group_id!r}")
    if not model.select().where(model.group_id == group_id).exists():
        raise PoolError(f"no {kind} group {group_id}")
    return model


def active_groups(kind: str) -> list[int]:
    """Groups that still have rows to hand out."""
    model = model_of(kind)
    query = model.select(model.group_id).where(model.status.in_([AVAILABLE, QUEUED])).distinct()
    return sorted(r.group_id for r in query)


def load_rows(kind: str, group_id: int, batch_id: int, texts: list[str], clock: Clock | None = None) -> int:
    model = model_of(kind)
    now = (clock or get_clock()).utcnow()
    rows = [{"group_id": group_id, "batch_id": batch_id, "text": t, "status": AVAILABLE, "created_at": now,
             "updated_at": now} for t in texts]
    with write_transaction():
        for start in range(0, len(rows), 500):
            model.insert_many(rows[start:start + 500]).execute()
    return len(rows)


@dataclass
class FillResult:
    kind: str
    group_id: int
    pushed: int = 0
    recovered: int = 0
    marked_used: int = 0
    skipped: str | None = None  # "full" | "busy"


class PoolFiller:
    """The producer side: tops a pool up to POOL_SIZE when it is below POOL_THRESHOLD."""

    def __init__(self, client: redis.Redis, settings: Settings, clock: Clock | None = None) -> None:
        self.client = client
        self.settings = settings
        self.clock = clock or get_clock()

    def fill(self, kind: str, group_id: int) -> FillResult:
        model = check_group(kind, group_id)
        result = FillResult(kind, group_id)
        key = keys.pool(kind, group_id)
        if self.client.llen(key) >= self.settings.pool_threshold:
            result.skipped = "full"
            return result
        lock = self.client.lock(keys.pool_filling(kind, group_id), timeout=FILL_LOCK_SECONDS, blocking=False)
        if not lock.acquire():
            result.skipped = "busy"
            return result
        try:
            result.marked_used, result.recovered = self._reconcile(kind, group_id, model)
            lock.reacquire()
            need = self.settings.pool_size - self.client.llen(key)
            if need > 0:
                items = self._claim(model, group_id, need)
                for start in range(0, len(items), PUSH_CHUNK):
                    chunk = items[start:start + PUSH_CHUNK]
                    # Renew the lease before each push. Had it lapsed, another filler may have found these
                    # rows missing from Redis and made them available again: pushing them would hand them
                    # out twice, so stop; they are queued rows its (or the next) reconcile takes care of.
                    lock.reacquire()
                    # LPUSH in priority order and RPOP from the other end: the newest batch goes out first.
                    self.client.lpush(key, *[json.dumps({"id": i.id, "text": i.text}, ensure_ascii=False)
                                             for i in chunk])
                    result.pushed += len(chunk)
            ExecutionState(self.clock).record_execution(FILL_JOB, f"{kind}:{group_id}")
        except redis.exceptions.LockNotOwnedError:
            logger.warning("fill lock of %s lapsed mid-fill (%d pushed); the next fill reconciles the rest",
                           key, result.pushed)
            return result
        finally:
            try:
                lock.release()
            except redis.exceptions.LockError:
                pass
        if result.pushed or result.recovered:
            logger.info("filled %s: %d pushed, %d recovered", key, result.pushed, result.recovered)
        return result

    def _claim(self, model: type[PoolRow], group_id: int, need: int) -> list[Item]:
        """Mark up to ``need`` available rows queued, newest batch first, and return them.

        The rows are locked while claimed (SELECT … FOR UPDATE on MySQL; SQLite's write transaction locks
        the whole database), so a database-fallback consumer cannot take one in between.
        """
        def by_range() -> list[tuple[int, str, int]]:
            with write_transaction():
                rows = self._select_available(model, group_id, need)
                if rows and self._queue_through(model, group_id, rows[-1]) != len(rows):
                    raise _RangeMoved()  # rows came into the range meanwhile: undo, and claim by id
                return rows

        def by_id() -> list[tuple[int, str, int]]:
            with write_transaction():
                rows = self._select_available(model, group_id, need)
                ids = [r[0] for r in rows]
                for start in range(0, len(ids), ID_CHUNK):
                    model.update(status=QUEUED, updated_at=self.clock.utcnow()) \
                        .where(model.id.in_(ids[start:start + ID_CHUNK])).execute()
                return rows

        try:
            rows = retrying_deadlocks(by_range)
        except _RangeMoved:
            logger.info("%s group %s changed while claiming: claiming by id", model._meta.table_name, group_id)
            rows = retrying_deadlocks(by_id)
        return [Item(row_id, text) for row_id, text, _ in rows]

    @staticmethod
    def _select_available(model: type[PoolRow], group_id: int, need: int) -> list[tuple[int, str, int]]:
        query = (model.select(model.id, model.text, model.batch_id)
                 .where((model.group_id == group_id) & (model.status == AVAILABLE))
                 .order_by(model.batch_id.desc(), model.id.asc()).limit(need))
        rows = cast(Iterable[tuple[int, str, int]], (query.for_update() if is_mysql() else query).tuples())
        return list(rows)

    def _queue_through(self, model: type[PoolRow], group_id: int, last: tuple[int, str, int]) -> int:
        """Mark queued every available row of the group up to ``last`` in claiming order (batch newest first,
        then id): the rows just selected, by one range instead of a list of ids (building an IN list of
        5,000 ids cost more than all the rest of a fill). Returns how many rows it marked."""
        last_id, _, last_batch = last
        up_to_last = (model.batch_id > last_batch) | ((model.batch_id == last_batch) & (model.id <= last_id))
        return int(model.update(status=QUEUED, updated_at=self.clock.utcnow())
                   .where((model.group_id == group_id) & (model.status == AVAILABLE) & up_to_last).execute())

    def _reconcile(self, kind: str, group_id: int, model: type[PoolRow]) -> tuple[int, int]:
        """Under the fill lock: mark handed-out rows used, and make lost queued rows available again."""
        handed_key = keys.pool_handed(kind, group_id)
        handed = {int(x) for x in self.client.smembers(handed_key)}
        marked = mark_used(model, handed, self.clock) if handed else 0
        if handed:
            self.client.srem(handed_key, *handed)
        queued = model.select().where((model.group_id == group_id) & (model.status == QUEUED)).count()
        in_list = self.client.llen(keys.pool(kind, group_id))
        if queued <= in_list:
            return marked, 0
        listed = {json.loads(x)["id"] for x in self.client.lrange(keys.pool(kind, group_id), 0, -1)}
        listed |= {int(x) for x in self.client.smembers(handed_key)}  # popped since we looked
        lost = [r.id for r in model.select(model.id).where((model.group_id == group_id) & (model.status == QUEUED))
                if r.id not in listed]
        for start in range(0, len(lost), 500):
            model.update(status=AVAILABLE, updated_at=self.clock.utcnow()) \
                .where(model.id.in_(lost[start:start + 500]) & (model.status == QUEUED)).execute()
        if lost:
            logger.warning("%s: %d queued rows were missing from Redis; made available again",
                           keys.pool(kind, group_id), len(lost))
        return marked, len(lost)


def _execute(query: peewee.BaseQuery) -> int:
    return int(query.execute())


def mark_used(model: type[PoolRow], ids: Iterable[int], clock: Clock | None = None) -> int:
    """Mark handed-out rows used; idempotent."""
    ids = sorted(set(ids))
    now = (clock or get_clock()).utcnow()
    done = 0
    for start in range(0, len(ids), 500):
        query = model.update(status=USED, updated_at=now).where(model.id.in_(ids[start:start + 500])
                                                                 & (model.status != USED))
        done += retrying_deadlocks(partial(_execute, query))
    return done


# Pops FIFO and remembers the id as handed out, in one step: a consumer dying in between loses nothing.
_POP = """
local raw = redis.call('RPOP', KEYS[1])
if raw then
  redis.call('SADD', KEYS[2], cjson.decode(raw)['id'])
end
return {raw, redis.call('LLEN', KEYS[1])}
"""


class PoolConsumer:
    """The consumer API for applications: ``pop(kind, group) -> Item``.

    Pops from Redis; with the pool empty or Redis unreachable, claims a row
    straight from the database. Used ids are sent in batches to the
    ``mark_used`` actor by a background thread.
    """

    def __init__(self, client: Callable[[], redis.Redis], settings: Settings, *,
                 send_mark_used: Callable[[str, int, list[int]], None],
                 request_fill: Callable[[str, int], None] | None = None, clock: Clock | None = None) -> None:
        self._client = client
        self.settings = settings
        self.send_mark_used = send_mark_used
        self.request_fill = request_fill
        self.clock = clock or get_clock()
        self._pending: dict[tuple[str, int], list[int]] = {}
        self._mutex = threading.Lock()
        self._stop = threading.Event()
        self._known_groups: set[tuple[str, int]] = set()
        self._pop_script: Callable[..., Any] | None = None
        self._redis_down_until = 0.0
        self._flusher = threading.Thread(target=self._flush_loop, name="pool-mark-used", daemon=True)
        self._flusher.start()

    def pop(self, kind: str, group_id: int) -> Item:
        if (kind, group_id) not in self._known_groups:
            check_group(kind, group_id)
            self._known_groups.add((kind, group_id))
        model = model_of(kind)
        deadline = time.monotonic() + QUEUED_WAIT
        while True:
            redis_up = time.monotonic() >= self._redis_down_until
            if redis_up:
                try:
                    item = self._pop_from_redis(kind, group_id)
                    if item is not None:
                        return item
                except redis.RedisError as e:
                    redis_up = False
                    # don't pay a connection timeout on every pop while Redis is down
                    self._redis_down_until = time.monotonic() + REDIS_RETRY_AFTER
                    logger.warning("pool %s unreachable (%s): claiming from the database for %.0fs",
                                   keys.pool(kind, group_id), e, REDIS_RETRY_AFTER)
            try:
                return self._claim_from_database(model, group_id)
            except PoolEmpty:
                # Rows a filler has just claimed are on their way to the pool: wait for them a little.
                in_transit = redis_up and model.select().where(
                    (model.group_id == group_id) & (model.status == QUEUED)).exists()
                if not in_transit or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    def _pop_from_redis(self, kind: str, group_id: int) -> Item | None:
        client = self._client()
        if self._pop_script is None:
            self._pop_script = client.register_script(_POP)
        raw, length = self._pop_script(keys=[keys.pool(kind, group_id), keys.pool_handed(kind, group_id)])
        if int(length) < self.settings.pool_threshold:
            self._ask_for_fill(client, kind, group_id)
        if raw is None:
            return None
        data = json.loads(raw)
        with self._mutex:
            self._pending.setdefault((kind, group_id), []).append(int(data["id"]))
        return Item(int(data["id"]), data["text"])

    def _ask_for_fill(self, client: redis.Redis, kind: str, group_id: int) -> None:
        if self.request_fill is not None and client.set(keys.pool_fill_requested(kind, group_id), 1, nx=True, ex=10):
            try:
                self.request_fill(kind, group_id)
            except Exception as e:  # the periodic fill comes within a minute anyway
                logger.warning("could not request a fill of %s: %s", keys.pool(kind, group_id), e)

    def _claim_from_database(self, model: type[PoolRow], group_id: int) -> Item:
        """Take one available row with a compare-and-set, so two consumers never get the same row."""
        for _ in range(50):
            candidates = list(model.select(model.id, model.text)
                              .where((model.group_id == group_id) & (model.status == AVAILABLE))
                              .order_by(model.batch_id.desc(), model.id.asc()).limit(8))
            if not candidates:
                raise PoolEmpty(f"no {model._meta.table_name} left in group {group_id}")
            row = random.choice(candidates)  # spread racing consumers over the first few rows
            try:
                taken = model.update(status=USED, updated_at=self.clock.utcnow()) \
                    .where((model.id == row.id) & (model.status == AVAILABLE)).execute()
            except peewee.OperationalError:  # SQLite busy under heavy contention: try again
                taken = 0
            if taken == 1:
                return Item(row.id, row.text)
        raise PoolEmpty(f"could not claim a {model._meta.table_name} row in group {group_id} (contention)")

    def _flush_loop(self) -> None:
        while not self._stop.wait(self.settings.pool_mark_used_interval):
            self.flush()

    def flush(self) -> None:
        """Send the ids handed out so far to be marked used (kept for the next flush if sending fails)."""
        with self._mutex:
            pending, self._pending = self._pending, {}
        for (kind, group_id), ids in pending.items():
            try:
                self.send_mark_used(kind, group_id, ids)
            except Exception as e:
                logger.warning("could not send mark_used for %d %s: %s; will retry", len(ids), kind, e)
                with self._mutex:
                    self._pending.setdefault((kind, group_id), []).extend(ids)

    def close(self) -> None:
        self._stop.set()
        self._flusher.join(timeout=5)
        self.flush()
