import peewee

from .base import BaseModel

AVAILABLE, QUEUED, USED = 1, 2, 0


class PoolRow(BaseModel):
    """A title or content handed out once (seed 002). status: 1 available, 2 queued in the Redis pool, 0 used.

    Status 2 is ours: seed 002 left queued rows at 1, so a refill could queue them again and hand them out
    twice.
    """

    id = peewee.AutoField()  # peewee's implicit key, declared for the type checker

    group_id = peewee.IntegerField()
    batch_id = peewee.IntegerField()
    text = peewee.TextField()
    status = peewee.SmallIntegerField(default=AVAILABLE)
    created_at = peewee.DateTimeField()
    updated_at = peewee.DateTimeField()

    class Meta:
        indexes = ((("group_id", "status", "batch_id", "id"), False),)


class Title(PoolRow):
    class Meta:
        table_name = "titles"


class Content(PoolRow):
    class Meta:
        table_name = "contents"
