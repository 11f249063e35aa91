"""When each scheduled job last ran (docs/concepts/scheduling.md), so a restart resumes instead of starting over.

Every scheduled job records here: the crawl of each IP (param: the IP id),
pool fills per group, collection runs per task. Reads never fail a job (a
read error means "first run", with a warning) and writes are retried and
never fail the job they record.
"""

from __future__ import annotations

import logging
import time

import peewee

from lib.core.clock import Clock, get_clock
from lib.core.db import on_conflict_update, write_transaction
from models import JobExecutionState

logger = logging.getLogger(__name__)

WRITE_ATTEMPTS = 4


class ExecutionState:
    """Last execution times per (job name, parameter) in ``collector_execution_state``."""

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock or get_clock()

    def last_execution_time(self, name: str, param: str | int = "") -> float | None:
        try:
            row = JobExecutionState.get_or_none(
                (JobExecutionState.collector_name == name)
                & (JobExecutionState.param_key == str(param)))
        except peewee.DatabaseError as e:
            logger.warning("could not read execution state of %s[%s], treating as first run: %s", name, param, e)
            return None
        return row.last_execution_time if row else None

    def last_execution_times(self, name: str, params: list[str | int]) -> dict[str, float]:
        """Many parameters of one job in one query (bootstrap of thousands of IPs)."""
        keys = [str(p) for p in params]
        found: dict[str, float] = {}
        try:
            for chunk_start in range(0, len(keys), 500):
                chunk = keys[chunk_start:chunk_start + 500]
                query = (JobExecutionState
                         .select(JobExecutionState.param_key, JobExecutionState.last_execution_time)
                         .where((JobExecutionState.collector_name == name)
                                & (JobExecutionState.param_key.in_(chunk))))
                found.update({row.param_key: row.last_execution_time for row in query})
        except peewee.DatabaseError as e:
            logger.warning("could not read execution states of %s, treating as first runs: %s", name, e)
        return found

    def record_execution(self, name: str, param: str | int = "", at: float | None = None) -> bool:
        """Upsert the time and count one more execution; retried, never raises. False if it gave up."""
        at = self.clock.now() if at is None else at
        now = self.clock.now()
        model = JobExecutionState
        for attempt in range(1, WRITE_ATTEMPTS + 1):
            try:
                with write_transaction():
                    on_conflict_update(
                        model.insert(collector_name=name, param_key=str(param), last_execution_time=at,
                                     created_at=now, updated_at=now, execution_count=1),
                        [model.collector_name, model.param_key],
                        update={model.last_execution_time: at, model.updated_at: now,
                                model.execution_count: model.execution_count + 1},
                    ).execute()
                return True
            except peewee.DatabaseError as e:
                if attempt == WRITE_ATTEMPTS:
                    logger.error("could not record execution of %s[%s] after %d attempts: %s",
                                 name, param, attempt, e)
                    return False
                logger.warning("recording execution of %s[%s] failed (%s); retrying", name, param, e)
                time.sleep(0.2 * 2 ** attempt)
        return False

    def next_run_time(self, name: str, param: str | int, interval: float) -> float:
        """Now if never run or overdue, else the last run plus the interval (the rule of every scheduled job)."""
        now = self.clock.now()
        last = self.last_execution_time(name, param)
        if last is None or now - last >= interval:
            return now
        return last + interval

    def should_run_now(self, name: str, param: str | int, interval: float) -> bool:
        return self.next_run_time(name, param, interval) <= self.clock.now()

