import peewee

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
