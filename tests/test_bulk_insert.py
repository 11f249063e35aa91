"""``lib.core.db.insert_rows``, the bulk insert the result path writes its rows with, on SQLite and MariaDB: the
rows Peewee's ``insert_many`` would write (defaults, nullable columns, converted fields), its three conflict
behaviours, all rows or none, and bad input refused by name. And the reads: ``ParameterList``, the IN list they
take (the same statement and rows as a plain list), and ``select_tuples`` (the rows Peewee's ``tuples()`` gives)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal

import peewee
import pytest

from lib.core.db import ParameterList, database, insert_rows, is_mysql, select_tuples
from models.base import BaseModel, CodeField, ExactCharField, ListingIdField


class Stock(BaseModel):
    """Every kind of column the result path writes: a row id, an exact key, a coded name, defaults, nullables."""

    id = peewee.AutoField()
    shop = peewee.IntegerField()
    sku = ExactCharField(max_length=64)
    state = CodeField(("on_sale", "sold"))
    title = peewee.CharField(max_length=500, default="")
    price = peewee.IntegerField(null=True)
    seen = peewee.DoubleField()
    hour = peewee.DateTimeField(null=True)
    mean = peewee.DecimalField(max_digits=10, decimal_places=2, null=True)
    count = peewee.IntegerField(default=lambda: 7)
    listing = ListingIdField(null=True)

    class Meta:
        table_name = "bulk_stock"
        indexes = ((("shop", "sku"), True),)


KEY = [Stock.shop, Stock.sku]
COLUMNS = (Stock.shop, Stock.sku, Stock.state, Stock.title, Stock.price, Stock.seen, Stock.hour, Stock.mean,
           Stock.count)


@pytest.fixture
def stock(db) -> Iterator[None]:
    database.create_tables([Stock])
    yield
    database.drop_tables([Stock])


def stored() -> dict[tuple[int, str], tuple]:
    return {(r[0], r[1]): r[2:] for r in Stock.select(*COLUMNS).tuples()}


def row(shop: int, sku: str, **values) -> dict:
    return {"shop": shop, "sku": sku, "state": "on_sale", "seen": 1.5, **values}


def test_rows_are_written_as_given_with_defaults_and_nulls_filled(stock):
    at = datetime(2026, 11, 24, 23, 0)
    insert_rows(Stock, [row(1, "鬼滅 '%s; --", price=1200, title="呪術廻戦", hour=at, mean=Decimal("12.50")),
                        row(1, "ABC", state="sold", count=3),
                        row(2, "abc")])
    assert stored() == {
        (1, "鬼滅 '%s; --"): ("on_sale", "呪術廻戦", 1200, 1.5, at, Decimal("12.50"), 7),
        (1, "ABC"): ("sold", "", None, 1.5, None, None, 3),  # a field a row leaves out: its default, or NULL
        (2, "abc"): ("on_sale", "", None, 1.5, None, None, 7),
    }
    assert list(Stock.select(peewee.fn.COUNT(Stock.id)).where(Stock.state == "sold").tuples()) == [(1,)]


def test_ignore_keeps_the_stored_rows_and_adds_the_new_ones(stock):
    insert_rows(Stock, [row(1, "a", price=1)])
    insert_rows(Stock, [row(1, "a", price=2), row(1, "b", price=3)], conflict="ignore")
    assert {k: v[2] for k, v in stored().items()} == {(1, "a"): 1, (1, "b"): 3}


def test_update_sets_only_the_preserved_columns(stock):
    insert_rows(Stock, [row(1, "a", price=1, title="old", seen=1.0)])
    insert_rows(Stock, [row(1, "a", price=2, title="new", seen=9.0), row(1, "b", price=3, seen=2.0)],
                conflict="update", target=KEY, preserve=[Stock.price, Stock.title])
    assert stored() == {(1, "a"): ("on_sale", "new", 2, 1.0, None, None, 7),
                        (1, "b"): ("on_sale", "", 3, 2.0, None, None, 7)}


def test_a_failing_insert_writes_none_of_its_rows(stock):
    insert_rows(Stock, [row(1, "taken")])
    with pytest.raises(peewee.IntegrityError):  # the driver's error as Peewee's, as a query raises it
        insert_rows(Stock, [row(1, f"n{i}") for i in range(50)] + [row(1, "taken")])
    assert set(stored()) == {(1, "taken")}
    with pytest.raises(peewee.IntegrityError), database.atomic():  # inside a transaction: it rolls back whole
        Stock.create(shop=2, sku="x", state="sold", seen=0.0)
        insert_rows(Stock, [row(2, "y"), row(2, "x")])
    assert set(stored()) == {(1, "taken")}


def test_many_rows_are_all_written(stock):
    """More rows than PyMySQL puts in one statement (about 1 MB): it sends several, all in the transaction."""
    rows = [row(i % 3, f"sku{i}", title="あ" * 200, price=i) for i in range(3000)]
    insert_rows(Stock, rows, conflict="ignore")
    found = stored()
    assert len(found) == 3000 and all(found[(i % 3, f"sku{i}")][2] == i for i in range(3000))


def test_the_mysql_statement_is_one_pymysql_sends_as_multi_row_inserts(stock):
    """PyMySQL folds an executemany into multi-row INSERTs only when the statement matches its pattern; otherwise
    it sends one statement per row, correct but a round trip each."""
    if not is_mysql():
        pytest.skip("MySQL/MariaDB only")
    from pymysql.cursors import RE_INSERT_VALUES

    from lib.core.db import _insert_statement

    for conflict, target, preserve in (("error", (), ()), ("ignore", (), ()), ("update", ("shop", "sku"), ("price",))):
        sql, _ = _insert_statement(type(database.obj), Stock, ("shop", "sku", "state", "seen"), conflict, target,
                                   preserve)
        assert RE_INSERT_VALUES.match(sql), sql


def test_bad_input_is_refused_by_name(stock):
    with pytest.raises(ValueError, match="no field 'colour'"):
        insert_rows(Stock, [row(1, "a", colour="red")])
    with pytest.raises(ValueError, match="has no seen"):
        insert_rows(Stock, [row(1, "a"), {"shop": 1, "sku": "b", "state": "sold"}])
    with pytest.raises(ValueError, match="state must be one of"):
        insert_rows(Stock, [row(1, "a", state="gone")])
    with pytest.raises(ValueError, match="needs the columns to update"):
        insert_rows(Stock, [row(1, "a")], conflict="update", target=KEY)
    with pytest.raises(ValueError, match="for conflict='update'"):
        insert_rows(Stock, [row(1, "a")], conflict="ignore", preserve=[Stock.price])
    assert stored() == {}
    insert_rows(Stock, [])  # nothing to do


def test_a_parameter_list_selects_what_a_plain_list_selects(stock):
    insert_rows(Stock, [row(1, f"s{i}", state="sold" if i % 3 else "on_sale") for i in range(20)]
                + [row(1, "鬼滅 '%s; --"), row(2, "s1")])
    wanted = ["s1", "s5", "鬼滅 '%s; --", "S2", "nowhere"]

    def both(where) -> list:
        found = [sorted(Stock.select(Stock.shop, Stock.sku, Stock.state).where(where(values)).tuples())
                 for values in (ParameterList(wanted), wanted)]
        assert found[0] == found[1]
        return found[0]

    assert both(lambda ids: (Stock.shop == 1) & Stock.sku.in_(ids)) == [(1, "s1", "sold"), (1, "s5", "sold"),
                                                                        (1, "鬼滅 '%s; --", "on_sale")]
    sold = both(lambda _: Stock.state.in_(ParameterList(["sold"])))  # converted by the field (a code)
    assert len(sold) == 13 and {s for _, _, s in sold} == {"sold"}
    assert Stock.select().where(Stock.sku.in_(ParameterList([]))).count() == 0  # empty: false, as a plain list
    assert Stock.select().where(Stock.sku.not_in(ParameterList([]))).count() == 22
    query = Stock.select(Stock.sku).where(Stock.sku.in_(ParameterList(["s1", peewee.SQL("'s2'")])))
    plain = Stock.select(Stock.sku).where(Stock.sku.in_(["s1", peewee.SQL("'s2'")]))
    assert query.sql() == plain.sql() and sorted(query.tuples()) == [("s1",), ("s1",), ("s2",)]  # a node: SQL
    assert str(Stock.select().where(Stock.sku.in_(ParameterList(["a'b"])))) == \
        str(Stock.select().where(Stock.sku.in_(["a'b"])))  # printed with its values inline


def test_values_of_another_type_are_converted_as_insert_many_converts_them(stock):
    """A plain column's value of its own type is sent as it is; any other goes through the field's db_value, as
    Peewee's insert_many sends it (a bool or a numeric string to an integer, an int to a double, an int to text)."""
    odd = [row(1, "a", price=True, seen=2, title=12), row(1, "b", price="40", seen="2.5", count=False),
           row(1, "c", listing="m123456789", mean=3)]
    insert_rows(Stock, odd)
    mine = stored()
    database.execute_sql(f"DELETE FROM {Stock._meta.table_name}")
    Stock.insert_many(odd).execute()
    assert stored() == mine
    assert [type(v) for v in mine[(1, "a")]] == [str, str, int, float, type(None), type(None), int]
    assert mine[(1, "b")][2] == 40 and mine[(1, "b")][3] == 2.5


def test_rows_giving_every_column_are_written_as_insert_many_writes_them(stock):
    """Rows naming every column with a default take the one-step path (no column defaulted per row): values of
    their own type, of another type and None, and a row that leaves a nullable column out, as insert_many writes
    them."""
    at = datetime(2026, 11, 24, 23, 0)
    full = {"title": "t", "count": 2, "price": 5, "hour": at, "mean": Decimal("1.25"), "listing": "m123456789"}
    rows = [row(1, "a", **full), row(1, "b", **{**full, "price": "40", "seen": 3, "count": True, "hour": None}),
            row(1, "c", **{k: v for k, v in full.items() if k != "mean"}), row(1, "d", **{**full, "listing": None})]
    insert_rows(Stock, rows)
    mine = stored(), list(Stock.select(Stock.sku, Stock.listing).order_by(Stock.sku).tuples())
    database.execute_sql(f"DELETE FROM {Stock._meta.table_name}")
    Stock.insert_many(rows).execute()
    assert (stored(), list(Stock.select(Stock.sku, Stock.listing).order_by(Stock.sku).tuples())) == mine
    assert mine[0][(1, "b")] == ("on_sale", "t", 40, 3.0, None, Decimal("1.25"), 1)
    assert mine[0][(1, "c")][5] is None and mine[1][0] == ("a", "m123456789") and mine[1][3] == ("d", None)


def test_a_single_column_row_is_written(db):
    class Word(BaseModel):
        word = ExactCharField(max_length=16, primary_key=True)

        class Meta:
            table_name = "bulk_word"

    database.create_tables([Word])
    try:
        insert_rows(Word, [{"word": "五条"}, {"word": "Gojo"}])
        assert sorted(w for (w,) in Word.select(Word.word).tuples()) == ["Gojo", "五条"]
    finally:
        database.drop_tables([Word])


def test_select_tuples_reads_what_peewee_reads(stock):
    at = datetime(2026, 11, 24, 23, 0)
    insert_rows(Stock, [row(1, "鬼滅 '%s; --", price=1200, title="呪術廻戦", hour=at, mean=Decimal("12.50"),
                            listing="m123456789"),
                        row(1, "ABC", state="sold", count=3, listing="x-other"),
                        row(2, "abc")])
    every = Stock.select(Stock.id, *COLUMNS, Stock.listing).order_by(Stock.id)
    assert select_tuples(every) == list(every.tuples())
    assert select_tuples(every)[0][-1] == "m123456789" and select_tuples(every)[0][7] == at
    assert select_tuples(Stock.select().where(Stock.shop == 9)) == []
    # a function read as the database returns it, as Peewee reads it; an expression goes through Peewee
    flagged = Stock.select(Stock.sku, peewee.fn.EXISTS(Stock.select(peewee.SQL("1")).where(Stock.count > 5))
                           .coerce(False)).order_by(Stock.sku)
    assert select_tuples(flagged) == list(flagged.tuples()) == [("ABC", 1), ("abc", 1), ("鬼滅 '%s; --", 1)]
    summed = Stock.select(Stock.state, peewee.fn.SUM(Stock.mean)).group_by(Stock.state).order_by(Stock.state)
    assert select_tuples(summed) == list(summed.tuples())
