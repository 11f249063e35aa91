import peewee

from .base import BaseModel, ExactCharField

#: Longest keyword accepted; Mercari's own search box takes well under this.
KEYWORD_MAX_LENGTH = 200


class IpMetadata(BaseModel):
    """An IP whose market heat is tracked (``ip_metadata``).

    "IP" throughout animetop means intellectual property in the franchise sense: an anime/manga title such as
    鬼滅の刃, tracked through the search keyword its listings on Mercari are found by (never an IP address).
    """

    id = peewee.AutoField()  # peewee's implicit key, declared for the type checker

    keyword = ExactCharField(max_length=KEYWORD_MAX_LENGTH, unique=True)
    display_name = peewee.CharField(max_length=KEYWORD_MAX_LENGTH)
    #: The other names its listings' titles use (romaji, English, abbreviations), a JSON array of text in the
    #: operator's order; NULL: none. A listing counts for the IP when its title names the keyword or one of these
    #: (``lib.segments.relevance``).
    aliases = peewee.TextField(null=True)
    active = peewee.BooleanField(default=True, index=True)
    weight = peewee.DoubleField(default=1.0)
    #: Seconds between its crawls as an operator pinned them (``animetop ip pin``); NULL: the adaptive interval.
    pinned_interval = peewee.DoubleField(null=True)
    last_crawled_at = peewee.DateTimeField(null=True)
    created_at = peewee.DateTimeField()
    updated_at = peewee.DateTimeField()

    class Meta:
        table_name = "ip_metadata"
