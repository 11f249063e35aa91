import peewee

from .base import BaseModel, CodeField, ExactCharField, ListingIdField, NaturalKeyMetadata
from .retention import PrunedSummaries

#: Longest segment key: a goods type's id or a character's name.
SEGMENT_KEY_MAX_LENGTH = 100


class ListingSegment(BaseModel):
    """One segment a listing of an IP is in (README "Segments"): a goods type its title sells (``kind`` goods,
    ``key`` the type's id) or a character it names (``kind`` character, ``key`` the name). Derived from the
    listing's stored title (``item_snapshots.title``) by ``lib.segments.stored``; a listing may be in several
    segments of a kind. Keyed by listing, kind and key (no row id: the key is the row); the key serves the join
    from a listing's events."""

    ip_id = peewee.IntegerField()
    source_id = ListingIdField()
    kind = CodeField(("goods", "character"))
    key = ExactCharField(max_length=SEGMENT_KEY_MAX_LENGTH)  # compared exactly: names differ by a kana

    class Meta:
        table_name = "listing_segments"
        model_metadata_class = NaturalKeyMetadata
        primary_key = peewee.CompositeKey("ip_id", "source_id", "kind", "key")
        without_rowid = True


class SegmentStatsDaily(PrunedSummaries):
    """One segment's listings of one IP pruned from one UTC day (docs/operating/storage.md, "Long windows"): the
    summaries ``ip_stats_daily`` keeps of the IP's pruned listings (the ``pruned_*`` columns of ``PrunedSummaries``),
    restricted to the segment's listings, and ``pruned_sales``, their sales by sale day (every one, with a price or
    not: the segment's outflow, which the IP reads from its hourly rows instead). Written by the pruning pass
    (``lib.market.daily.summarize_pruned_segments``), read by the segments windows reaching past RETENTION_DETAIL."""

    ip_id = peewee.IntegerField()
    kind = CodeField(("goods", "character"))
    key = ExactCharField(max_length=SEGMENT_KEY_MAX_LENGTH)
    day = peewee.DateTimeField()  # naive UTC, midnight
    pruned_sales = peewee.IntegerField(default=0)

    class Meta:
        table_name = "segment_stats_daily"
        model_metadata_class = NaturalKeyMetadata
        primary_key = peewee.CompositeKey("ip_id", "kind", "key", "day")
        without_rowid = True
        indexes = ((("kind", "day"), False),)  # the board across IPs: one kind's days


class SegmentDailyFlow(BaseModel):
    """One segment's market flow of one IP in one completed UTC day, rolled up with the IP's daily row
    (``lib.market.daily``): its listings created and sold that day and the median of their sold prices, the ones
    summarized by a pruning pass included (``segment_stats_daily``). The segments' forecasts read these
    (docs/concepts/forecasts.md); a day the IP was tracked without a row here had no listing of the segment."""

    ip_id = peewee.IntegerField()
    kind = CodeField(("goods", "character"))
    key = ExactCharField(max_length=SEGMENT_KEY_MAX_LENGTH)
    day = peewee.DateTimeField()  # naive UTC, midnight
    inflow = peewee.IntegerField(default=0)
    outflow = peewee.IntegerField(default=0)
    sample_count = peewee.IntegerField(default=0)  # sales with a real price
    median_price = peewee.DoubleField(null=True)

    class Meta:
        table_name = "segment_daily_flows"
        model_metadata_class = NaturalKeyMetadata
        primary_key = peewee.CompositeKey("ip_id", "kind", "key", "day")
        without_rowid = True
        indexes = ((("ip_id", "day"), False),)  # a rollup replaces an IP's days
