"""Title/content pools: fill_pool, mark_used, the periodic fill, and the consumer that other applications pop
rows with (logic in ``lib.text_pools``)."""

from periodiq import cron

from lib.core import keys
from lib.core.errors import LockBusy
from lib.core.redis_client import state_redis
from lib.core.settings import Settings, get_settings
from lib.messaging.routes import FILL_ALL_POOLS, FILL_POOL, MARK_USED
from lib.text_pools.pool import KINDS, PoolConsumer, PoolFiller, active_groups, model_of
from lib.text_pools.pool import mark_used as mark_rows_used


@FILL_POOL.declare(max_retries=3)
def fill_pool(kind: str, group_id: int) -> None:
    """Top up one pool (its own fill lock keeps two fillers from both filling).

    A held lock may be a filler that was killed mid-fill: wait for its lease to lapse and try again
    rather than drop the fill (a live filler's pool is full by then, and the retry ends at once).
    """
    result = PoolFiller(state_redis(), get_settings()).fill(kind, group_id)
    if result.skipped == "busy":
        raise LockBusy(keys.pool_filling(kind, group_id))


@MARK_USED.declare(max_retries=10)
def mark_used(kind: str, group_id: int, ids: list[int]) -> None:
    """Mark a consumer's handed-out rows used, in one statement per 500 ids."""
    mark_rows_used(model_of(kind), [int(i) for i in ids])


@FILL_ALL_POOLS.declare(periodic=cron("* * * * *"), max_retries=0)
def fill_all_pools() -> None:
    """Every minute (and at scheduler start): a fill for every kind and active group."""
    for kind in KINDS:
        for group_id in active_groups(kind):
            fill_pool.send(kind, group_id)


def pool_consumer(settings: Settings | None = None) -> PoolConsumer:
    """A consumer of this app's pools: rows handed out are marked used, and fills requested, through the
    actors above (batched ``mark_used`` messages; one fill request per pool at a time)."""
    settings = settings or get_settings()

    def send_mark_used(kind: str, group_id: int, ids: list[int]) -> None:
        mark_used.send(kind, group_id, ids)

    def request_fill(kind: str, group_id: int) -> None:
        fill_pool.send(kind, group_id)

    return PoolConsumer(lambda: state_redis(settings), settings, send_mark_used=send_mark_used,
                        request_fill=request_fill)
