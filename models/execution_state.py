import peewee

from .base import BaseModel


class CollectorExecutionState(BaseModel):
    """Last execution time per (job, parameter); seed 001. Times are Unix seconds."""

    collector_name = peewee.CharField(max_length=100)
    param_key = peewee.CharField(max_length=191, default="")  # "" for jobs without a parameter
    last_execution_time = peewee.DoubleField()
    created_at = peewee.DoubleField()
    updated_at = peewee.DoubleField()
    execution_count = peewee.IntegerField(default=0)

    class Meta:
        table_name = "collector_execution_state"
        primary_key = peewee.CompositeKey("collector_name", "param_key")
