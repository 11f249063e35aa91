import peewee

from .base import BaseModel


class JobExecutionState(BaseModel):
    """Last execution time per (job, parameter) (docs/concepts/scheduling.md). Times are Unix seconds.

    Other consumers of the table call a scheduled job a "collector", hence its table and column names
    (``collector_execution_state.collector_name``); here that is a *job* (a crawl of an IP, a pool fill, a
    collection run), not the export-API ``Collector`` of ``lib.collection`` nor a Prometheus collector.
    """

    collector_name = peewee.CharField(max_length=100)
    param_key = peewee.CharField(max_length=191, default="")  # "" for jobs without a parameter
    last_execution_time = peewee.DoubleField()
    created_at = peewee.DoubleField()
    updated_at = peewee.DoubleField()
    execution_count = peewee.IntegerField(default=0)

    class Meta:
        table_name = "collector_execution_state"
        primary_key = peewee.CompositeKey("collector_name", "param_key")
