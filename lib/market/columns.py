"""A window's per-listing rows held as columns of machine numbers rather than as lists of tuples.

A refresh of the windows reads every listing of a week (across all IPs for the segments boards): as tuples of
Python floats that is about 150 bytes a listing, in small objects the interpreter's allocator keeps in its arenas
after they are freed, so every refresh whose window holds more listings than the last raises the worker's resident
memory for good. As columns it is 24 bytes a listing in three buffers that are freed whole.

Each class reads back exactly what was appended (``None`` included), in order, as the tuples the measures iterate.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator

#: ``None`` in an integer column (prices are never negative).
_NO_INT = -(2 ** 63)


def _float_or_none(value: float) -> float | None:
    return None if math.isnan(value) else value


def _int_or_none(value: int) -> int | None:
    return None if value == _NO_INT else value


class SaleRows:
    """The window's sales: (at, price, listed price), prices ``None`` where there is none."""

    __slots__ = ("_at", "_price", "_listed")

    def __init__(self) -> None:
        self._at = array("d")
        self._price = array("q")
        self._listed = array("q")

    def append(self, row: tuple[float, int | None, int | None]) -> None:
        at, price, listed = row
        self._at.append(at)
        self._price.append(_NO_INT if price is None else price)
        self._listed.append(_NO_INT if listed is None else listed)

    def __len__(self) -> int:
        return len(self._at)

    def __iter__(self) -> Iterator[tuple[float, int | None, int | None]]:
        for at, price, listed in zip(self._at, self._price, self._listed, strict=True):
            yield at, _int_or_none(price), _int_or_none(listed)


class CreatedRows:
    """The window's new listings: (created at, first sale at, last seen), times ``None`` where unknown."""

    __slots__ = ("_at", "_sold", "_seen")

    def __init__(self) -> None:
        self._at = array("d")
        self._sold = array("d")
        self._seen = array("d")

    def append(self, row: tuple[float, float | None, float | None]) -> None:
        at, sold, seen = row
        self._at.append(at)
        self._sold.append(math.nan if sold is None else sold)
        self._seen.append(math.nan if seen is None else seen)

    def __len__(self) -> int:
        return len(self._at)

    def __iter__(self) -> Iterator[tuple[float, float | None, float | None]]:
        for at, sold, seen in zip(self._at, self._sold, self._seen, strict=True):
            yield at, _float_or_none(sold), _float_or_none(seen)
