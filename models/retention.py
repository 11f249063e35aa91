import peewee

from .base import BaseModel


class PrunedSummaries(BaseModel):
    """The summaries of one day's listings whose per-listing facts were pruned (``lib.market.daily``), for the
    windows that reach past RETENTION_DETAIL: exact counts and sketches (``lib.market.summaries``), added to as
    each pruning pass removes listings. The columns ``ip_stats_daily`` (an IP's listings) and
    ``segment_stats_daily`` (one segment's) share; a base of models, no table of its own."""

    # By creation day: how many were created, their first sales by day after it (``offset:count``), the times to
    # sell of the sold ones and the censoring times of the others (seconds).
    pruned_created = peewee.IntegerField(default=0)
    pruned_sold_by = peewee.TextField(null=True)
    pruned_sold_times = peewee.TextField(null=True)
    pruned_censored = peewee.TextField(null=True)
    # By sale day: the real prices of their sales, how many of those were seen on sale first (price cuts' count)
    # and the cuts among them as a fraction of the first on-sale price.
    pruned_prices = peewee.TextField(null=True)
    pruned_cut_samples = peewee.IntegerField(default=0)
    pruned_cuts = peewee.TextField(null=True)


class IpStatsDaily(PrunedSummaries):
    """One IP's market flow in one completed UTC day, rolled up from its hourly rows and sales (README "Storage
    and retention"): the per-day series reads these, and they outlive the hourly rows and the per-listing facts.
    Its ``pruned_*`` columns (``PrunedSummaries``) summarize the IP's listings pruned from the day."""

    id = peewee.AutoField()  # peewee's implicit key, declared for the type checker

    ip_id = peewee.IntegerField()
    day = peewee.DateTimeField()  # naive UTC, midnight
    hours = peewee.IntegerField(default=0)  # tracked hours of the day (hourly rows rolled up)
    inflow = peewee.IntegerField(default=0)
    outflow = peewee.IntegerField(default=0)
    sample_count = peewee.IntegerField(default=0)  # sold items with a real price
    avg_price = peewee.DecimalField(max_digits=10, decimal_places=2, null=True)
    min_price = peewee.DecimalField(max_digits=10, decimal_places=2, null=True)
    max_price = peewee.DecimalField(max_digits=10, decimal_places=2, null=True)
    median_price = peewee.DecimalField(max_digits=10, decimal_places=2, null=True)
    p25_price = peewee.DecimalField(max_digits=10, decimal_places=2, null=True)
    p75_price = peewee.DecimalField(max_digits=10, decimal_places=2, null=True)
    class Meta:
        table_name = "ip_stats_daily"
        indexes = ((("ip_id", "day"), True),)


class IpDayPending(BaseModel):
    """A UTC day of one IP whose hourly rows changed since its daily row was computed: written in the transaction
    that changes them, removed by the rollup that recomputes the day (``lib.market.daily``)."""

    id = peewee.AutoField()  # peewee's implicit key, declared for the type checker

    ip_id = peewee.IntegerField()
    day = peewee.DateTimeField()  # naive UTC, midnight

    class Meta:
        table_name = "ip_days_pending"
        indexes = ((("ip_id", "day"), True), (("day", "ip_id"), False))


class StorageMark(BaseModel):
    """A named point in time the storage has reached; ``pruned_before``: facts older than this may be gone."""

    name = peewee.CharField(max_length=40, primary_key=True)
    value = peewee.DoubleField()  # Unix seconds

    class Meta:
        table_name = "storage_marks"
