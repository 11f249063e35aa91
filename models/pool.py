import peewee

from .base import BaseModel

AVAILABLE, QUEUED, USED = 1, 2, 0


class PoolRow(BaseModel):
    """A title or content handed out once (docs/operating/pools.md). status: 1 available, 2 queued, 0 used.

    Status 2 exists because a queued row left at 1 could be queued again by a refill and handed out
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
