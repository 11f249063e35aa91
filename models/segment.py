import peewee

from .base import BaseModel, ExactCharField

#: Longest segment key: a goods type's id or a character's name.
SEGMENT_KEY_MAX_LENGTH = 100


class ListingSegment(BaseModel):
    """One segment a listing of an IP is in (README "Segments"): a goods type its title sells (``kind`` goods,
    ``key`` the type's id) or a character it names (``kind`` character, ``key`` the name). Derived from the
    listing's stored title (``item_snapshots.title``) by ``lib.segments.stored``; a listing may be in several
    segments of a kind. Unique per listing, kind and key; the same index serves the join from a listing's
    events."""

    id = peewee.AutoField()  # peewee's implicit key, declared for the type checker

    ip_id = peewee.IntegerField()
    source_id = ExactCharField(max_length=64)
    kind = peewee.CharField(max_length=16)  # goods | character
    key = ExactCharField(max_length=SEGMENT_KEY_MAX_LENGTH)  # compared exactly: names differ by a kana

    class Meta:
        table_name = "listing_segments"
        indexes = ((("ip_id", "source_id", "kind", "key"), True),)
