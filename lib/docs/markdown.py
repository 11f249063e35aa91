"""Small helpers for writing Markdown tables and text from code."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence


def cell(text: str) -> str:
    """``text`` fit for a table cell: one line, pipes escaped."""
    return re.sub(r"\s*\n\s*", " ", text.strip()).replace("|", "\\|")


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A Markdown table's lines; cells are taken as written (``cell`` them first where needed)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def code(text: str) -> str:
    """``text`` as inline code (empty text has no code span: it reads "(empty)")."""
    if text == "":
        return "(empty)"
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def prose(text: str) -> str:
    """A docstring or description as Markdown prose: reStructuredText's ``double`` code marks become Markdown's
    single ones, and line breaks become spaces."""
    return re.sub(r"``([^`]+)``", r"`\1`", " ".join(text.split()))
