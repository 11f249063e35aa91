import peewee

from lib.core import listing_ids
from lib.core.db import database, is_mysql

#: MySQL/MariaDB binary collations, best first. The NO PAD ones also tell "a" from "a " (MariaDB ≥ 10.2,
#: MySQL ≥ 8.0); plain utf8mb4_bin, the fallback, ignores trailing spaces like every PAD SPACE collation.
EXACT_COLLATIONS = ("utf8mb4_nopad_bin", "utf8mb4_0900_bin", "utf8mb4_bin")
#: The largest id an ``AutoField`` holds on every database we run on: a signed 32-bit INTEGER on MySQL/MariaDB
#: (SQLite's is 64-bit). An id from outside (an API path) beyond it names no row, and one beyond 64 bits cannot
#: even be bound to a query (SQLite raises OverflowError): such ids are refused before they reach the database.
MAX_AUTO_ID = 2**31 - 1


def exact_collation() -> str:
    """The first of ``EXACT_COLLATIONS`` the bound MySQL/MariaDB server knows (asked once per connection)."""
    db = database.obj
    known = getattr(db, "_animetop_exact_collation", None)
    if known is None:
        table = peewee.Table("COLLATIONS", schema="information_schema")
        names = {row[0] for row in table.select(table.c.COLLATION_NAME)
                 .where(table.c.COLLATION_NAME.in_(EXACT_COLLATIONS)).bind(database).tuples()}
        known = db._animetop_exact_collation = next(c for c in EXACT_COLLATIONS if c in names or c == "utf8mb4_bin")
    return known


class ExactCharField(peewee.CharField):
    """A string compared and kept unique exactly as stored, on every database.

    MySQL/MariaDB's default utf8mb4 collation folds case and treats every emoji (every character outside the
    Basic Multilingual Plane) as equal, so two distinct keywords like 🔥 and 🎉, or two record keys "abc" and
    "ABC", would collide in a unique index there and not on SQLite. On MySQL this column has a binary
    collation (``animetop db init`` converts existing columns); SQLite compares code points already.
    """

    def ddl_datatype(self, ctx):
        data_type = super().ddl_datatype(ctx)
        if not is_mysql():
            return data_type
        collation = exact_collation()  # one of EXACT_COLLATIONS: an identifier from a fixed list
        return peewee.NodeList((data_type, peewee.SQL("CHARACTER SET utf8mb4 COLLATE"), peewee.SQL(collation)))


class BaseModel(peewee.Model):
    class Meta:
        database = database
        legacy_table_names = False


class NaturalKeyMetadata(peewee.Metadata):
    """Metadata of a table keyed by its natural key (``Meta.primary_key`` a ``CompositeKey``) with no row id: on
    SQLite a ``WITHOUT ROWID`` table, on MySQL/MariaDB an InnoDB table clustered by that key. Either way the key's
    columns are stored once, in the table itself, instead of again in a unique index beside a row id
    (docs/concepts/market-data.md). Peewee writes ``WITHOUT ROWID`` for every database: only SQLite's gets it."""

    @property
    def without_rowid(self) -> bool:
        return self._without_rowid and not is_mysql()

    @without_rowid.setter
    def without_rowid(self, value: bool) -> None:
        self._without_rowid = value


class CodeField(peewee.Field):
    """One of a few fixed names (``names``), stored as its position in them: a small number instead of the text
    in the row and in every index holding the column (SQLite stores 0 and 1 in no bytes at all). Reads and
    comparisons through the model see the names; a query comparing anything but the field itself (an expression
    around it) compares with ``db_value(name)``."""

    field_type = "TINYINT"

    def __init__(self, names: tuple[str, ...], *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.names = names
        self.codes = {name: code for code, name in enumerate(names)}

    def db_value(self, value: str | int | None) -> int | None:
        if value is None or isinstance(value, int):
            return value
        try:
            return self.codes[value]
        except KeyError:
            raise ValueError(f"{self.name} must be one of {self.names}, got {value!r:.40}") from None

    def python_value(self, value):
        return None if value is None else self.names[int(value)]

    def from_previous(self, column: peewee.Node) -> peewee.Node:
        """The column of a table written before it was coded (its names as text) as codes: ``animetop db init``
        copies such a table into the new layout through this."""
        return peewee.Case(column, [(name, code) for code, name in enumerate(self.names)], column)


class ListingIdField(peewee.Field):
    """A listing's id (``source_id``) stored as ``lib.core.listing_ids`` encodes it: 5 bytes for a Mercari item's
    ``m`` and 11 digits, a zero byte and the text for any other id, exact for every string. Reads and comparisons
    through the model see the id's text; a comparison the model cannot convert (a ``peewee.Tuple`` of columns, an
    expression around the column) compares with ``db_value(source_id)``. The bytes compare exactly on every
    database (SQLite's BLOB, MySQL/MariaDB's VARBINARY), like ``ExactCharField``'s binary collation."""

    field_type = "BLOB"

    def ddl_datatype(self, ctx):
        # MySQL/MariaDB index a BLOB only by a prefix: a key column is a VARBINARY of the longest value
        return peewee.SQL("VARBINARY(257)" if is_mysql() else "BLOB")  # listing_ids.MAX_BYTES

    def db_value(self, value: object) -> bytes | None:
        if value is None:
            return None
        if not isinstance(value, str):
            raise ValueError(f"{self.name} must be a listing id (a string), got {type(value).__name__}")
        return listing_ids.encode(value)

    def python_value(self, value):
        return None if value is None else listing_ids.decode(value)

    def startswith(self, prefix: str) -> peewee.Expression:
        """The ids that start with ``prefix`` (which must not be the start of a Mercari item's id, ``m`` and
        digits, whose bytes are its number: no range of bytes holds them), as a range of the stored bytes."""
        if not isinstance(prefix, str) or listing_ids.could_be_item(prefix):
            raise ValueError(f"{self.name}.startswith takes a prefix that no Mercari item id starts with, "
                             f"got {prefix!r:.40}")
        low = listing_ids.text_prefix(prefix)
        return (self >= peewee.Value(low, converter=False)) & (self < peewee.Value(low + b"\xff", converter=False))

    def from_previous(self, column: peewee.Node) -> peewee.Node:
        """The column of a table written before the ids were encoded (their text) as stored now: ``animetop db
        init`` copies such a table into the new layout through this (SQLite: a function of the connection)."""
        if is_mysql():  # m<digits>: the number's hexadecimal digits, padded to whole bytes; else a 0 byte, the text
            number = peewee.Cast(peewee.fn.SUBSTRING(column, 2), "UNSIGNED")
            digits = peewee.fn.HEX(number)
            item = peewee.fn.UNHEX(peewee.fn.LPAD(digits, 2 * peewee.fn.CEIL(peewee.fn.LENGTH(digits) / 2), "0"))
            return peewee.Case(None, [(peewee.Expression(column, "REGEXP", listing_ids.SQL_ITEM), item)],
                               peewee.fn.CONCAT(peewee.SQL("X'00'"), peewee.Cast(column, "BINARY")))
        database.connection().create_function(ENCODE_FUNCTION, 1, listing_ids.encode, deterministic=True)
        return peewee.fn.animetop_listing_id(column)


#: The name of SQLite's function ``ListingIdField.from_previous`` registers.
ENCODE_FUNCTION = "animetop_listing_id"
