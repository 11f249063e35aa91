"""The window's column stores read back exactly the rows appended to them (lib/market/columns.py)."""

from lib.market.columns import CreatedRows, SaleRows


def test_sales_read_back_as_appended_with_none_and_extremes():
    rows = [(1795750416.8010855, 450, None), (1795750417.0, None, 1200), (0.0, 0, 0),
            (1.5, 9_999_998, 2 ** 62), (2.0, None, None)]
    column = SaleRows()
    for row in rows:
        column.append(row)
    assert len(column) == len(rows)
    assert list(column) == rows
    assert all(type(p) is int for _, p, _ in column if p is not None)


def test_created_read_back_as_appended_with_none():
    rows = [(1795750416.8010855, None, 1795750500.25), (10.0, 12.5, None), (11.0, None, None), (12.0, 13.0, 14.0)]
    column = CreatedRows()
    for row in rows:
        column.append(row)
    assert len(column) == len(rows)
    assert list(column) == rows
    assert list(column) == list(column)  # iterated again, the same


def test_empty_columns():
    assert list(SaleRows()) == [] and len(CreatedRows()) == 0
