import peewee

from .base import BaseModel, CodeField, ExactCharField, ListingIdField, NaturalKeyMetadata


class ItemSnapshot(BaseModel):
    """Latest known state of one listing of one IP. Times are Unix seconds."""

    id = peewee.AutoField()  # peewee's implicit key, declared for the type checker

    ip_id = peewee.IntegerField()
    source_id = ListingIdField()
    title = peewee.CharField(max_length=500, default="")
    price = peewee.IntegerField(null=True)  # yen; None for listings without a price
    status = peewee.CharField(max_length=16)  # on_sale | sold
    # what follows the canonical URL of ``url_forms`` (usually nothing), or the whole URL (lib.market.listing_urls)
    image_url = peewee.CharField(max_length=500, default="")
    item_url = peewee.CharField(max_length=500, default="")
    url_forms = peewee.SmallIntegerField(null=True)  # None: both URLs stored whole (rows of earlier versions)
    first_seen = peewee.DoubleField()
    last_seen = peewee.DoubleField()
    created = peewee.DoubleField(null=True)
    updated = peewee.DoubleField(null=True)
    # the seller's keyed hash as the crawler sent it (never the seller's id; None: not known, as from the DOM) and
    # the fingerprint of the normalized title (``lib.market.relists.title_match``): what a relist is recognised by
    seller = ExactCharField(max_length=32, null=True)
    title_match = peewee.CharField(max_length=16, null=True)
    # an auction: its price is the current bid (None: stored before auctions were recognised)
    auction = peewee.BooleanField(null=True, default=False)

    class Meta:
        table_name = "item_snapshots"
        # the second finds a seller's earlier listings of a title (a relist's goods) by index
        indexes = ((("ip_id", "source_id"), True), (("ip_id", "seller", "title_match"), False))


class IpStatsHourly(BaseModel):
    """Market flow of one IP in one UTC hour (docs/concepts/measures.md, definition 4)."""

    id = peewee.AutoField()  # peewee's implicit key, declared for the type checker

    ip_id = peewee.IntegerField()
    hour_bucket = peewee.DateTimeField()  # naive UTC, minute 0
    inflow = peewee.IntegerField(default=0)
    outflow = peewee.IntegerField(default=0)
    liquidity_index = peewee.DecimalField(max_digits=8, decimal_places=4, null=True)  # outflow/inflow
    avg_price = peewee.DecimalField(max_digits=10, decimal_places=2, null=True)  # of items sold this hour
    min_price = peewee.DecimalField(max_digits=10, decimal_places=2, null=True)
    max_price = peewee.DecimalField(max_digits=10, decimal_places=2, null=True)
    sample_count = peewee.IntegerField(default=0)  # sold items with a real price
    median_price = peewee.DecimalField(max_digits=10, decimal_places=2, null=True)
    p25_price = peewee.DecimalField(max_digits=10, decimal_places=2, null=True)
    p75_price = peewee.DecimalField(max_digits=10, decimal_places=2, null=True)

    class Meta:
        table_name = "ip_stats_hourly"
        # the last covers the leaderboard's read (every IP's flows over a range of hours, grouped by IP) and the
        # sparklines without reading the rows themselves
        indexes = ((("ip_id", "hour_bucket"), True), (("hour_bucket",), False),
                   (("ip_id", "hour_bucket", "inflow", "outflow"), False))


class ListingSighting(BaseModel):
    """A run of sightings of one listing: what consecutive crawls of its IP saw of it, unchanged — the same
    status, price, created time and (sold) updated time — from ``crawled_at`` (the run's first crawl) to
    ``last_seen`` (its last). The sightings inside a run are the IP's crawls between the two (the ledger,
    ``applied_results``), so the runs hold every sighting once and nothing twice; a crawl that sees the listing
    unchanged moves ``last_seen``, any other change starts a run (README "Market measures"). Keyed by listing and
    first crawl time, with no row id."""

    ip_id = peewee.IntegerField()
    source_id = ListingIdField()
    crawled_at = peewee.DoubleField()  # Unix seconds: the run's first crawl
    last_seen = peewee.DoubleField(null=True)  # the run's last crawl (None only before ``db init`` migrated it)
    status = CodeField(("on_sale", "sold"))
    price = peewee.IntegerField(null=True)  # yen; None: no real price
    created = peewee.DoubleField(null=True)  # the site's created time, when the API gave one
    updated = peewee.DoubleField(null=True)  # the site's updated time of a sold listing (its sale time)

    class Meta:
        table_name = "listing_sightings"
        model_metadata_class = NaturalKeyMetadata
        primary_key = peewee.CompositeKey("ip_id", "source_id", "crawled_at")
        without_rowid = True


class ListingEvent(BaseModel):
    """A counted market event of one listing: ``created`` (inflow) or ``sold`` (outflow), at its event time.
    Derived from the listing's sightings; keyed by listing, kind and occurrence (the n-th sale), with no row id."""

    ip_id = peewee.IntegerField()
    source_id = ListingIdField()
    kind = CodeField(("created", "sold"))
    occurrence = peewee.IntegerField()  # 0 for created; the n-th counted sale of the listing
    event_at = peewee.DoubleField()  # Unix seconds; its hour is implied (lib.market.statistics.hour_spans)
    price = peewee.IntegerField(null=True)  # sold: the real sale price, None when the site showed none
    listed_price = peewee.IntegerField(null=True)  # sold: the first on-sale price seen before this sale
    created_at = peewee.DoubleField(null=True)  # sold: when the listing was created (ages at sale: estimates)

    class Meta:
        table_name = "listing_events"
        model_metadata_class = NaturalKeyMetadata
        primary_key = peewee.CompositeKey("ip_id", "source_id", "kind", "occurrence")
        without_rowid = True
        # the first serves a few IPs' events over a range of hours (hourly rows, window rows, alerts, days); the
        # second covers the leaderboard's reads (every IP's sales, or listings created, from a time on)
        indexes = ((("ip_id", "event_at"), False),
                   (("kind", "event_at", "ip_id", "source_id", "price", "listed_price"), False))
        #: indexes of earlier versions that ``animetop db init`` drops (``lib.market.schema``)
        retired_indexes = (("kind", "hour_bucket", "ip_id", "event_at", "source_id", "price", "listed_price"),)


class ListingRelist(BaseModel):
    """A listing recognised as a relist: the same goods as ``goods_id``, the goods' first listing, listed again by
    the same seller (docs/concepts/measures.md, definition 2). The goods' events are kept under ``goods_id``;
    ``relist_of``: the listing it replaced (the goods' first, or an earlier relist); ``relisted_at``: when the
    relist was created. Keyed by IP and the relist's listing, with no row id."""

    ip_id = peewee.IntegerField()
    source_id = ListingIdField()
    goods_id = ListingIdField()
    relist_of = ListingIdField()
    relisted_at = peewee.DoubleField()

    class Meta:
        table_name = "listing_relists"
        model_metadata_class = NaturalKeyMetadata
        primary_key = peewee.CompositeKey("ip_id", "source_id")
        without_rowid = True
        indexes = ((("ip_id", "goods_id"), False), (("ip_id", "relist_of"), False), (("ip_id", "relisted_at"), False))


class RelistUndecided(BaseModel):
    """A listing new to the IP that may relist an earlier listing of its seller's with a title it may have had, where
    no crawl had yet read back past that earlier listing when it was applied (docs/concepts/measures.md,
    definition 2). A later crawl that reads back that far, or checks the earlier listing, decides it (``relist``);
    the row stays, decided or not, until retention prunes the listing: the window's inflow estimate reads them.
    ``created``: when the new listing was created; ``back``: the latest such earlier listing's creation, which that
    crawl must read back to. Keyed by IP and the new listing, with no row id."""

    ip_id = peewee.IntegerField()
    source_id = ListingIdField()
    created = peewee.DoubleField()
    back = peewee.DoubleField()
    #: that earlier listing, whose page a crawl may read instead (``lib.crawling.item_read``; None once a read
    #: told nothing, or stored before the reads)
    earlier = ListingIdField(null=True)
    #: the chance it had of being drawn into the IP's sample of checks, where it was drawn (None: not drawn, or
    #: stored before the samples); the sample's relist share estimates the undecided ones' (lib/market/relist_share.py)
    share = peewee.DoubleField(null=True)
    #: once decided: whether it relists an earlier listing (True) or is other goods (False); None while undecided
    relist = peewee.BooleanField(null=True)

    class Meta:
        table_name = "relist_undecided"
        model_metadata_class = NaturalKeyMetadata
        primary_key = peewee.CompositeKey("ip_id", "source_id")
        without_rowid = True
        indexes = ((("ip_id", "back"), False), (("ip_id", "created"), False))


class IpAlert(BaseModel):
    """A market alert; at most one per IP, rule and hour."""

    id = peewee.AutoField()  # peewee's implicit key, declared for the type checker

    ip_id = peewee.IntegerField()
    rule = peewee.CharField(max_length=40)
    hour_bucket = peewee.DateTimeField()
    value = peewee.DoubleField()
    threshold = peewee.DoubleField()
    message = peewee.CharField(max_length=500)
    details = peewee.TextField(default="{}")  # JSON
    created_at = peewee.DateTimeField()

    class Meta:
        table_name = "ip_alerts"
        indexes = ((("ip_id", "rule", "hour_bucket"), True), (("created_at",), False))


class AppliedResult(BaseModel):
    """Ledger of crawl results whose effect is in the database, written in the same transaction."""

    task_id = peewee.CharField(max_length=100, primary_key=True)
    ip_id = peewee.IntegerField()
    crawled_at = peewee.DoubleField()
    applied_at = peewee.DoubleField()
    items = peewee.IntegerField()
    inflow = peewee.IntegerField()
    outflow = peewee.IntegerField()

    class Meta:
        table_name = "applied_results"
        indexes = ((("ip_id", "crawled_at"), False),)  # an IP's previous crawl: the start of its inflow window


class AlertDelivery(BaseModel):
    """What became of one alert on one channel: sent, failed or deduplicated."""

    id = peewee.AutoField()  # peewee's implicit key, declared for the type checker

    alert_id = peewee.IntegerField()
    channel = ExactCharField(max_length=191)  # the URL, credentials redacted
    status = peewee.CharField(max_length=16)
    attempts = peewee.IntegerField(default=0)
    detail = peewee.CharField(max_length=500, default="")
    updated_at = peewee.DateTimeField()

    class Meta:
        table_name = "alert_deliveries"
        indexes = ((("alert_id", "channel"), True),)
