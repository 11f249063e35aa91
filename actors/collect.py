"""collect_batch and the periodic collection starter (logic in ``lib.collection``)."""

from periodiq import cron

from lib.collection.collector import BatchMessage, app_collector, due_tasks
from lib.core.settings import get_settings
from lib.messaging.routes import COLLECT_BATCH, START_DUE_COLLECTIONS


@COLLECT_BATCH.declare(max_retries=5, time_limit=300_000,
                       idempotency_key=lambda task, offset, size, end, run_start, expired_streak, run_id:
                       f"{run_id}:{offset}",
                       lock_key=lambda task, *_, **__: f"collect:{task}")
def collect_batch(task: int, offset: int, size: int, end: int, run_start: int, expired_streak: int,
                  run_id: str) -> None:
    """One window of a run; sends the next window until a stop rule holds."""
    outcome = app_collector(get_settings()).batch(
        BatchMessage(task, offset, size, end, run_start, expired_streak, run_id))
    if outcome.next_message is not None:
        collect_batch.send(**outcome.next_message.as_kwargs())


@START_DUE_COLLECTIONS.declare(periodic=cron("* * * * *"), max_retries=0)
def start_due_collections() -> None:
    """Every minute: start a run of each enabled task whose interval has passed (execution-state store)."""
    collector = app_collector(get_settings())
    for task in due_tasks():
        first = collector.start(task)
        if first is not None:
            collect_batch.send(**first.as_kwargs())
