"""Title/content pools: fill_pool, mark_used and the periodic fill (logic in ``lib.text_pools.pool``)."""

import dramatiq
from periodiq import cron

from lib.text_pools.pool import FILL_ACTOR, KINDS, MARK_USED_ACTOR, PoolFiller, active_groups, mark_used as mark_rows_used
from lib.text_pools.pool import model_of
from lib.core import keys
from lib.core.errors import LockBusy
from lib.messaging.queues import POOL
from lib.core.redis_client import state_redis
from lib.core.settings import get_settings


@dramatiq.actor(actor_name=FILL_ACTOR, queue_name=POOL, max_retries=3)
def fill_pool(kind: str, group_id: int) -> None:
    """Top up one pool (its own fill lock keeps two fillers from both filling).

    A held lock may be a filler that was killed mid-fill: wait for its lease to lapse and try again
    rather than drop the fill (a live filler's pool is full by then, and the retry ends at once).
    """
    result = PoolFiller(state_redis(), get_settings()).fill(kind, group_id)
    if result.skipped == "busy":
        raise LockBusy(keys.pool_filling(kind, group_id))


@dramatiq.actor(actor_name=MARK_USED_ACTOR, queue_name=POOL, max_retries=10)
def mark_used(kind: str, group_id: int, ids: list) -> None:
    """Mark a consumer's handed-out rows used, in one statement per 500 ids."""
    mark_rows_used(model_of(kind), [int(i) for i in ids])


@dramatiq.actor(queue_name=POOL, periodic=cron("* * * * *"), max_retries=0)
def fill_all_pools() -> None:
    """Every minute (and at scheduler start): a fill for every kind and active group."""
    for kind in KINDS:
        for group_id in active_groups(kind):
            fill_pool.send(kind, group_id)
