import peewee

from .base import BaseModel


class CrawlSearchTotal(BaseModel):
    """What one crawl saw of one of an IP's searches (on sale or sold): the site's own count of the search's
    listings and how much of it the pages read covered. Written with the crawl's ledger row."""

    id = peewee.AutoField()  # peewee's implicit key, declared for the type checker

    task_id = peewee.CharField(max_length=100)
    ip_id = peewee.IntegerField()
    crawled_at = peewee.DoubleField()  # Unix seconds
    status = peewee.CharField(max_length=16)  # on_sale | sold: which search
    num_found = peewee.IntegerField(null=True)  # the search's total as the site reported it; None: not reported
    pages_read = peewee.IntegerField()
    items_read = peewee.IntegerField()  # distinct listings of the IP on those pages
    #: distinct listings on those pages whose titles name neither the IP's keyword nor an alias (the site's padding
    #: past the real results): not counted; None where the crawler did not tell them apart
    items_missed = peewee.IntegerField(null=True)
    # how far back the pages reached, by creation time (lib.market.reach): the oldest ``created`` on them when the
    # crawl read all its planned pages (None: the search ended on them, or no page gave a time), and the newest
    reach = peewee.DoubleField(null=True)
    newest = peewee.DoubleField(null=True)

    class Meta:
        table_name = "crawl_search_totals"
        # the last two cover the leaderboard's reads: every IP's sold totals over a window in time order
        # (coverage), and each IP's latest on-sale total (supply)
        indexes = ((("task_id", "status"), True), (("ip_id", "crawled_at"), False),
                   (("status", "crawled_at", "ip_id", "num_found"), False),
                   (("status", "ip_id", "crawled_at", "num_found"), False))
