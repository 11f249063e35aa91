"""The characters of an IP, as its operator lists them (docs/concepts/measures.md, segments by character)."""

import peewee

from .base import BaseModel, ExactCharField

#: Longest character name or alias accepted (a column's size: the unique key (ip_id, name) holds it).
CHARACTER_NAME_MAX_LENGTH = 100


class IpCharacter(BaseModel):
    """One character of an IP: the name answers give, and the other names titles use for it (a JSON array of
    text). ``position`` keeps the operator's order, which the matcher answers in. Names are unique per IP as
    stored (exact collation: "Gojo" and "gojo" are two keys here; ``lib.segments.character_rules`` refuses such
    pairs, which the matcher reads as one word, before they are written)."""

    id = peewee.AutoField()  # peewee's implicit key, declared for the type checker

    ip_id = peewee.IntegerField()
    position = peewee.IntegerField()
    name = ExactCharField(max_length=CHARACTER_NAME_MAX_LENGTH)
    aliases = peewee.TextField()  # JSON array of text, in the operator's order
    created_at = peewee.DateTimeField()
    updated_at = peewee.DateTimeField()

    class Meta:
        table_name = "ip_characters"
        indexes = ((("ip_id", "name"), True),)
