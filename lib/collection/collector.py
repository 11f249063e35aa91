"""Incremental collection newest-first by offset (docs/operating/collection.md), resumable from saved progress.

A run reads the total, then walks windows ``[offset, offset + size)`` from
the newest (``total - batch``) down to the previous run's start offset (0 on
the first run). Each window is one ``collect_batch`` message: fetch, filter
by date, write the valid rows to the sink, save progress, send the next.
Stop rules: the window reached the end; on a first run, ``max_expired_batches``
windows in a row with only expired rows; the task was disabled. At the end
``last_start_offset`` becomes this run's start.

A total below one batch clamps at 0 (read whole), and a total that shrank
below the saved start offset (rows deleted at the source) is logged and the
run ends at the newest window instead of crashing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import peewee

from lib.collection.export_api import ExportApiClient
from lib.core.clock import Clock, get_clock
from lib.core.db import on_conflict_update, write_transaction
from lib.core.settings import Settings
from lib.scheduling.execution_state import ExecutionState
from models import CollectedRow, CollectionTask

logger = logging.getLogger(__name__)

COLLECT_JOB = "collect"
DATE_FORMATS = ("%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y/%m/%d %H:%M:%S", "%Y-%m-%d",
                "%Y/%m/%d")


class CollectError(ValueError):
    """A collection task cannot be added, found or run as asked."""


@dataclass(frozen=True)
class BatchMessage:
    """Arguments of one ``collect_batch`` message."""

    task: int
    offset: int
    size: int
    end: int
    run_start: int
    expired_streak: int
    run_id: str

    def as_kwargs(self) -> dict[str, Any]:
        return dict(self.__dict__)


def parse_date(value: Any) -> datetime | None:
    """A row's date as naive UTC, or None when it is missing or unparsable."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, timezone.utc).replace(tzinfo=None)
    if not isinstance(value, str):
        return None
    text = value.strip()
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        return parsed.astimezone(timezone.utc).replace(tzinfo=None) if parsed.tzinfo else parsed
    except ValueError:
        pass
    for fmt in DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt)
        except ValueError:
            continue
    return None


def record_key(row: dict[str, Any], key_field: str | None) -> str:
    """A stable id field when the rows have one, else a hash of the row's content."""
    if key_field and row.get(key_field) is not None:
        return str(row[key_field])[:64]
    canonical = json.dumps(row, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def find_task(ident: str | int) -> CollectionTask:
    """A task by the source's task id, or by our numeric id."""
    text = str(ident)
    task = CollectionTask.get_or_none(CollectionTask.task_id == text)
    if task is None and text.isdigit():
        task = CollectionTask.get_or_none(CollectionTask.id == int(text))
    if task is None:
        raise CollectError(f"no collection task {ident!r}")
    return task


def add_task(task_id: str, source_name: str, clock: Clock | None = None, **options: Any) -> CollectionTask:
    if not task_id or len(task_id) > 100:
        raise CollectError("the task id must be 1 to 100 characters")
    if (options.get("batch_size") or 100) < 1:
        raise CollectError("the batch size must be at least 1")
    now = (clock or get_clock()).utcnow()
    try:
        return CollectionTask.create(task_id=task_id, source_name=source_name, created_at=now, updated_at=now,
                                     **{k: v for k, v in options.items() if v is not None})
    except peewee.IntegrityError:
        raise CollectError(f"collection task {task_id!r} exists already") from None


class Sink:
    """Where collected rows go. ``write`` must be idempotent per (task, record key)."""

    def write(self, task: CollectionTask, rows: list[dict[str, Any]]) -> int:
        raise NotImplementedError


class DatabaseSink(Sink):
    """The table ``collected_rows``, unique per (task, record key)."""

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock or get_clock()

    def write(self, task: CollectionTask, rows: list[dict[str, Any]]) -> int:
        """Upsert the rows; returns how many distinct records were written (new or refreshed)."""
        if not rows:
            return 0
        now = self.clock.utcnow()
        records = {record_key(r, task.key_field): r for r in rows}
        values = [{"task": task.id, "record_key": k, "data": json.dumps(r, ensure_ascii=False, default=str),
                   "collected_at": now} for k, r in records.items()]
        for start in range(0, len(values), 200):
            on_conflict_update(CollectedRow.insert_many(values[start:start + 200]),
                               [CollectedRow.task, CollectedRow.record_key],
                               preserve=[CollectedRow.data]).execute()
        return len(records)


class ActorSink(Sink):
    """Sends each batch on as one message to a downstream actor (``COLLECT_SINK=actor:NAME``), which takes
    ``task_id`` and ``rows`` and must deduplicate by each row's ``_record_key``."""

    def __init__(self, actor_name: str, send: Callable[[str, dict[str, Any]], None]) -> None:
        self.actor_name = actor_name
        self.send = send

    def write(self, task: CollectionTask, rows: list[dict[str, Any]]) -> int:
        if rows:
            keyed = [{**r, "_record_key": record_key(r, task.key_field)} for r in rows]
            self.send(self.actor_name, {"task_id": task.task_id, "rows": keyed})
        return len(rows)


@dataclass
class BatchOutcome:
    fetched: int = 0
    written: int = 0
    expired: int = 0
    skipped: int = 0
    next_message: BatchMessage | None = None
    finished: bool = False
    stop_reason: str | None = None


class Collector:
    """Runs collection tasks: ``start`` a run, then ``batch`` one window at a time."""

    def __init__(self, client: ExportApiClient, sink: Sink, clock: Clock | None = None) -> None:
        self.client = client
        self.sink = sink
        self.clock = clock or get_clock()

    # -- a run -----------------------------------------------------------------
    def start(self, task: CollectionTask) -> BatchMessage | None:
        """Begin a run (or resume the one in progress); returns the first batch message, or None."""
        task = CollectionTask.get_by_id(task.id)
        if not task.enabled:
            raise CollectError(f"collection task {task.task_id} is disabled")
        if task.run_id is not None:
            logger.info("task %s: resuming run %s at offset %s", task.task_id, task.run_id, task.run_current_offset)
            return self._window(task, task.run_current_offset, task.run_expired_streak)
        total = self.client.total(task.task_id)
        first = task.last_start_offset is None
        start = max(total - task.batch_size, 0)
        end = 0 if task.last_start_offset is None else task.last_start_offset
        if not first and end > start:
            logger.warning("task %s: the source shrank (total %d, last run started at %d): reading the newest "
                           "window only", task.task_id, total, end)
            end = start
        if total == 0:
            logger.info("task %s: the source has no rows", task.task_id)
            return None
        run_id = uuid.uuid4().hex[:16]
        with write_transaction():
            claimed = CollectionTask.update(
                run_id=run_id, run_start_offset=start, run_end_offset=end, run_current_offset=start,
                run_expired_streak=0, run_first=first, run_started_at=self.clock.utcnow(),
                updated_at=self.clock.utcnow(),
            ).where((CollectionTask.id == task.id) & (CollectionTask.run_id.is_null())).execute()
        if not claimed:
            return self.start(task)  # another process started a run just now: join it
        logger.info("task %s: run %s from offset %d down to %d (total %d)", task.task_id, run_id, start, end, total)
        return self._window(CollectionTask.get_by_id(task.id), start, 0)

    def _window(self, task: CollectionTask, offset: int | None, expired_streak: int) -> BatchMessage:
        # a task row with a run in progress has every run_* column set (start() writes them in one UPDATE)
        assert offset is not None and task.run_end_offset is not None and task.run_start_offset is not None
        assert task.run_id is not None
        return BatchMessage(task=task.id, offset=offset, size=task.batch_size, end=task.run_end_offset,
                            run_start=task.run_start_offset, expired_streak=expired_streak, run_id=task.run_id)

    def batch(self, msg: BatchMessage) -> BatchOutcome:
        """Fetch one window, filter, write, save progress; says what to send next."""
        outcome = BatchOutcome()
        task = CollectionTask.get_or_none(CollectionTask.id == msg.task)
        if task is None or task.run_id != msg.run_id:
            outcome.stop_reason = "stale message (its run is over)"
            return outcome
        if not task.enabled:
            self._finish(task, reason="disabled")
            outcome.finished, outcome.stop_reason = True, "disabled"
            return outcome
        page = self.client.page(task.task_id, msg.offset, msg.size)
        valid, expired, skipped = self._filter(task, page.rows)
        outcome.fetched, outcome.expired, outcome.skipped = len(page.rows), expired, len(skipped)
        outcome.written = self.sink.write(task, valid)
        streak = msg.expired_streak + 1 if page.rows and not valid and expired else 0

        next_offset = max(msg.offset - task.batch_size, msg.end)
        done = msg.offset <= msg.end
        if task.run_first and streak >= task.max_expired_batches:
            done, outcome.stop_reason = True, f"{streak} batches in a row held only expired rows"
        elif done:
            outcome.stop_reason = "reached the end offset"
        with write_transaction():
            CollectionTask.update(
                run_current_offset=next_offset, run_expired_streak=streak,
                rows_collected=CollectionTask.rows_collected + len(valid),
                rows_skipped=CollectionTask.rows_skipped + len(skipped), updated_at=self.clock.utcnow(),
            ).where((CollectionTask.id == task.id) & (CollectionTask.run_id == msg.run_id)
                    # a late duplicate of an earlier window must not move progress back
                    & (CollectionTask.run_current_offset >= next_offset)).execute()
        if done:
            self._finish(task, reason=outcome.stop_reason)
            outcome.finished = True
        else:
            outcome.next_message = BatchMessage(task=task.id, offset=next_offset, size=msg.offset - next_offset,
                                                end=msg.end, run_start=msg.run_start, expired_streak=streak,
                                                run_id=msg.run_id)
        return outcome

    def _filter(self, task: CollectionTask, rows: list[Any]) -> tuple[list[dict[str, Any]], int, list[Any]]:
        cutoff = self.clock.utcnow() - timedelta(days=task.filter_days)
        valid, expired, skipped = [], 0, []
        for row in rows:
            if not isinstance(row, dict):
                skipped.append(row)
                continue
            when = parse_date(row.get(task.date_field))
            if when is None:
                skipped.append(row)
            elif when < cutoff:
                expired += 1
            else:
                valid.append(row)
        if skipped:
            logger.warning("task %s: skipped %d rows that are not objects or lack a usable %r; e.g. %s",
                           task.task_id, len(skipped), task.date_field, str(skipped[0])[:200])
        return valid, expired, skipped

    def _finish(self, task: CollectionTask, reason: str | None) -> None:
        with write_transaction():
            CollectionTask.update(
                last_start_offset=CollectionTask.run_start_offset, run_id=None, run_current_offset=None,
                run_expired_streak=0, last_run_finished_at=self.clock.utcnow(), updated_at=self.clock.utcnow(),
            ).where(CollectionTask.id == task.id).execute()
        ExecutionState(self.clock).record_execution(COLLECT_JOB, task.id)
        logger.info("task %s: run finished (%s)", task.task_id, reason)


def due_tasks(clock: Clock | None = None) -> list[CollectionTask]:
    """Enabled tasks without a run in progress whose interval has passed since their last run."""
    state = ExecutionState(clock)
    query = CollectionTask.select().where((CollectionTask.enabled == True)  # noqa: E712  # SQL: Peewee overloads ==
                                         & (CollectionTask.run_id.is_null()))
    return [t for t in query if state.should_run_now(COLLECT_JOB, t.id, t.interval)]


def app_collector(settings: Settings) -> Collector:
    """A collector on the configured API and sink."""
    import dramatiq
    from dramatiq import Message

    from lib.messaging.queues import COLLECT

    client = ExportApiClient(settings.collect_api_url, settings.collect_api_username, settings.collect_api_password)
    if settings.collect_sink == "database":
        sink: Sink = DatabaseSink()
    else:
        def send(actor: str, kwargs: dict[str, Any]) -> None:
            dramatiq.get_broker().enqueue(Message(queue_name=COLLECT, actor_name=actor, args=(), kwargs=kwargs,
                                                  options={}))
        sink = ActorSink(settings.collect_sink.split(":", 1)[1], send)
    return Collector(client, sink)
