"""A listing's id (the site's, ``source_id``) as the per-listing tables store it: a few bytes instead of its text,
in every key and index that holds it (docs/operating/storage.md).

A Mercari item's id, ``m`` and 11 digits (``m12345678901``), is stored as its number in big-endian bytes without
leading zeros: 5 bytes instead of 12 characters (and their length byte). Any other id (a Mercari Shops product's
22 letters and digits, a test's ``m1-0``, the empty string) is stored as a zero byte followed by its UTF-8: the
number's bytes never start with zero, so the two forms never meet and the encoding is exact for every string. It
is reversible, so no table maps ids to numbers: a row says its id by itself, the same whatever order results
arrive in, and a copy of rows (``bench.replicate``) or a pruning pass needs nothing beside them.

The ``m`` form takes up to 18 digits with no leading zero (``m0123`` would not come back as written), at most
8 bytes; ``animetop db init`` converts a database that stored the ids as text in SQL (MySQL/MariaDB) or with this
module's ``encode`` (SQLite), which agree (tests/market/test_storage_layout.py)."""

from __future__ import annotations

import re

_ITEM = re.compile(r"m[1-9][0-9]{0,17}")
#: The prefix of an id stored as its text.
TEXT = b"\x00"
#: The longest stored value: the prefix and a 64-character id (``CrawlItem.parse``'s bound) of 4-byte characters
#: (MySQL/MariaDB's column is a VARBINARY of this length: ``models.base.ListingIdField``).
MAX_BYTES = 257
#: ``_ITEM`` as a MySQL/MariaDB regular expression, for the conversion of a text column in SQL
#: (``models.base.ListingIdField.from_previous``; ``\z``: the very end, where ``$`` also matches before a final
#: newline).
SQL_ITEM = r"^m[1-9][0-9]{0,17}\z"


def encode(source_id: str) -> bytes:
    """The bytes stored for a listing id."""
    if _ITEM.fullmatch(source_id):
        number = int(source_id[1:])
        return number.to_bytes((number.bit_length() + 7) // 8, "big")
    return TEXT + source_id.encode()


def text_prefix(prefix: str) -> bytes:
    """The stored bytes of every id that starts with ``prefix`` and is stored as text start with these (and sort
    before them followed by 0xFF, a byte UTF-8 never holds). An id stored as its number may also start with
    ``prefix`` when the prefix could begin a Mercari item's id (``could_be_item``)."""
    return TEXT + prefix.encode()


def could_be_item(prefix: str) -> bool:
    """Whether an id stored as its number (``m`` and digits) can start with ``prefix``."""
    return _ITEM.fullmatch(prefix) is not None or prefix in ("", "m")


def decode(stored: bytes) -> str:
    """The listing id ``encode`` stored."""
    if stored[:1] == TEXT:
        return bytes(stored[1:]).decode()
    return f"m{int.from_bytes(stored, 'big')}"
