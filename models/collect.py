import peewee

from .base import BaseModel, ExactCharField


class CollectionTask(BaseModel):
    """A source task collected incrementally, newest first (docs/operating/collection.md), with its saved progress."""

    id = peewee.AutoField()  # peewee's implicit key, declared for the type checker

    task_id = ExactCharField(max_length=100, unique=True)  # the task's id at the source
    source_name = peewee.CharField(max_length=100)
    batch_size = peewee.IntegerField(default=100)
    date_field = peewee.CharField(max_length=100, default="date")
    key_field = peewee.CharField(max_length=100, null=True)  # a stable id field of the rows, if they have one
    filter_days = peewee.IntegerField(default=7)
    max_expired_batches = peewee.IntegerField(default=3)
    interval = peewee.IntegerField(default=3600)  # seconds between runs
    enabled = peewee.BooleanField(default=True)
    # progress
    last_start_offset = peewee.IntegerField(null=True)  # where the last finished run started
    run_id = peewee.CharField(max_length=40, null=True)  # the run in progress, if any
    run_start_offset = peewee.IntegerField(null=True)
    run_end_offset = peewee.IntegerField(null=True)
    run_current_offset = peewee.IntegerField(null=True)  # next batch to read
    run_expired_streak = peewee.IntegerField(default=0)
    run_first = peewee.BooleanField(default=False)
    run_started_at = peewee.DateTimeField(null=True)
    rows_collected = peewee.BigIntegerField(default=0)
    rows_skipped = peewee.BigIntegerField(default=0)
    last_run_finished_at = peewee.DateTimeField(null=True)
    created_at = peewee.DateTimeField()
    updated_at = peewee.DateTimeField()

    class Meta:
        table_name = "collection_tasks"


class CollectedRow(BaseModel):
    """The default sink: one row per (task, record key), so overlaps and redeliveries never duplicate."""

    id = peewee.AutoField()  # peewee's implicit key, declared for the type checker

    task = peewee.IntegerField()  # CollectionTask.id
    record_key = ExactCharField(max_length=64)
    data = peewee.TextField()  # the row as JSON
    collected_at = peewee.DateTimeField()

    class Meta:
        table_name = "collected_rows"
        indexes = ((("task", "record_key"), True),)
