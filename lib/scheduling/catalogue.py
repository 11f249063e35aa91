"""The IPs being tracked (``ip_metadata``): add, list, enable, disable, import."""

from __future__ import annotations

import builtins
import csv
import io
import json
import logging
import unicodedata
from collections.abc import Iterator, Sequence
from pathlib import Path

import peewee

from lib.core.clock import Clock, get_clock, to_timestamp
from lib.core.db import database
from lib.core.settings import Settings
from lib.scheduling.budget_plan import CostStore
from lib.scheduling.schedule import CRAWL_JOB, IpDue, ScheduleStore, ip_due_from_row, ip_interval, parse_aliases
from models import IpMetadata
from models.ip import KEYWORD_MAX_LENGTH

#: The bounds of an interval an operator pins (seconds): a minute (the scheduler's tick), thirty days.
MIN_PINNED = 60.0
MAX_PINNED = 30 * 86400.0

logger = logging.getLogger(__name__)


class CatalogueError(ValueError):
    """An IP cannot be added or changed as asked."""


def check_keyword(keyword: str, what: str = "keyword") -> str:
    """The keyword (or display name) as given, or a clear refusal; it is stored and searched exactly as typed."""
    if not isinstance(keyword, str) or not keyword.strip():
        raise CatalogueError(f"the {what} is empty")
    if len(keyword) > KEYWORD_MAX_LENGTH:
        raise CatalogueError(f"the {what} is {len(keyword)} characters long; at most {KEYWORD_MAX_LENGTH} are allowed")
    for i, c in enumerate(keyword):
        kind = unicodedata.category(c)
        if kind == "Cc":  # C0 (NUL, tab, new line…), DEL and C1: never part of a search word
            raise CatalogueError(f"the {what} contains control characters (U+{ord(c):04X} at position {i + 1}; "
                                 f"tabs, new lines, NUL… are refused)")
        if kind == "Cs":  # a lone surrogate: bytes that were not UTF-8 (e.g. on the command line)
            raise CatalogueError(f"the {what} is not valid Unicode (U+{ord(c):04X} at position {i + 1}: "
                                 f"was it typed in another encoding than UTF-8?)")
    return keyword


class Catalogue:
    """IP rows plus their place in the schedule, kept in step."""

    def __init__(self, schedule: ScheduleStore, settings: Settings, clock: Clock | None = None) -> None:
        self.schedule = schedule
        self.settings = settings
        self.clock = clock or get_clock()

    def add(self, keyword: str, name: str | None = None, weight: float = 1.0,
            aliases: Sequence[str] = ()) -> IpMetadata:
        """Add an IP; it is due at once. ``aliases``: the other names its listings' titles use
        (``lib.segments.relevance``)."""
        keyword = check_keyword(keyword)
        if name:
            check_keyword(name, "name")
        if not (0 < weight <= 100):
            raise CatalogueError(f"the weight must be above 0 and at most 100; got {weight}")
        stored = _stored_aliases(aliases, keyword)
        now = self.clock.utcnow()
        try:
            with database.atomic():
                ip = IpMetadata.create(keyword=keyword, display_name=name or keyword, weight=weight,
                                       aliases=stored, created_at=now, updated_at=now)
        except peewee.IntegrityError:
            raise CatalogueError(f"an IP with keyword {keyword!r} exists already") from None
        self.schedule.schedule(ip.id, self.clock.now())
        return ip

    def edit_aliases(self, ip_id: int, add: Sequence[str] = (), remove: Sequence[str] = ()) -> IpMetadata:
        """Add and remove aliases of an IP (removed ones by their reading: ``fold``); its next crawl uses them.
        Nothing is changed when any of them is refused."""
        from lib.segments.normalize import fold

        ip = self.get(ip_id)
        current = list(parse_aliases(ip.aliases))
        gone = {fold(a) for a in remove}
        unknown = [a for a in remove if fold(a) not in {fold(c) for c in current}]
        if unknown:
            raise CatalogueError(f"IP {ip_id} has no alias {unknown[0]!r} (its aliases: {current or 'none'})")
        kept = [a for a in current if fold(a) not in gone]
        have = {fold(a) for a in kept}
        # an alias it has already (in any spelling that reads alike) is kept as it was, not refused
        stored = _stored_aliases(kept + [a for a in add if not isinstance(a, str) or fold(a) not in have],
                                 ip.keyword)
        (IpMetadata.update(aliases=stored, updated_at=self.clock.utcnow()).where(IpMetadata.id == ip_id)
         .execute())
        return self.get(ip_id)

    def get(self, ip_id: int) -> IpMetadata:
        ip = IpMetadata.get_or_none(IpMetadata.id == ip_id)
        if ip is None:
            raise CatalogueError(f"no IP with id {ip_id}")
        return ip

    def list(self, active_only: bool = False) -> list[IpMetadata]:
        query = IpMetadata.select().order_by(IpMetadata.id)
        if active_only:
            query = query.where(IpMetadata.active == True)  # noqa: E712  # SQL: Peewee overloads ==
        return list(query)

    def disable(self, ip_id: int) -> IpMetadata:
        """Stop crawling an IP: inactive in the database and gone from the schedule."""
        self.get(ip_id)  # an unknown id raises here
        IpMetadata.update(active=False, updated_at=self.clock.utcnow()).where(IpMetadata.id == ip_id).execute()
        self.schedule.remove(ip_id)
        CostStore(self.schedule.client).remove(ip_id)  # it spends no more of the budget
        return self.get(ip_id)

    def enable(self, ip_id: int) -> IpMetadata:
        """Crawl an IP again: now if it is overdue (or never ran), else at its last crawl + interval."""
        (IpMetadata.update(active=True, updated_at=self.clock.utcnow())
         .where(IpMetadata.id == self.get(ip_id).id).execute())
        ip = self.get(ip_id)
        self._reschedule(ip)
        return ip

    def pin(self, ip_id: int, interval: float | None) -> IpMetadata:
        """Crawl an IP every ``interval`` seconds whatever its heat (None: its adaptive interval again); an active
        IP's next crawl moves to its last crawl + the new interval (now if that has passed)."""
        if interval is not None and not MIN_PINNED <= interval <= MAX_PINNED:
            raise CatalogueError(f"a pinned interval is between a minute and {MAX_PINNED / 86400:g} days, not "
                                 f"{interval:g} s")
        (IpMetadata.update(pinned_interval=interval, updated_at=self.clock.utcnow())
         .where(IpMetadata.id == self.get(ip_id).id).execute())
        ip = self.get(ip_id)
        if ip.active:
            self._reschedule(ip)
        return ip

    def _reschedule(self, ip: IpMetadata) -> None:
        """Due now if overdue (or never run), else at its last crawl + interval."""
        from lib.scheduling.execution_state import ExecutionState

        last = ExecutionState(self.clock).last_execution_time(CRAWL_JOB, ip.id) or to_timestamp(ip.last_crawled_at)
        now = self.clock.now()
        interval = ip_interval(ip, self.settings)
        self.schedule.schedule(ip.id, now if last is None or last + interval <= now else last + interval)

    def import_file(self, path: Path) -> tuple[int, builtins.list[str]]:
        """Add IPs from a file: one keyword a line, or CSV with a header (keyword[,name][,weight][,aliases], the
        aliases separated by ``|``). Returns (added, problems); existing keywords are reported, not duplicated."""
        text = Path(path).read_text(encoding="utf-8-sig")
        added, problems = 0, []
        for line_no, keyword, name, weight, aliases in _rows(text):
            try:
                self.add(keyword, name, weight, aliases)
                added += 1
            except CatalogueError as e:
                problems.append(f"line {line_no}: {e}")
        return added, problems

    def due_info(self, ip_ids: builtins.list[int]) -> dict[int, IpDue]:
        rows = IpMetadata.select(IpMetadata.id, IpMetadata.keyword, IpMetadata.weight, IpMetadata.active,
                                 IpMetadata.last_crawled_at, IpMetadata.aliases,
                                 IpMetadata.pinned_interval).where(IpMetadata.id.in_(ip_ids))
        return {row.id: ip_due_from_row(row) for row in rows}

    def iter_all(self, chunk: int = 2000) -> Iterator[IpDue]:
        last_id = 0
        while True:
            rows = list(IpMetadata.select(IpMetadata.id, IpMetadata.keyword, IpMetadata.weight, IpMetadata.active,
                                          IpMetadata.last_crawled_at, IpMetadata.aliases, IpMetadata.pinned_interval)
                        .where(IpMetadata.id > last_id).order_by(IpMetadata.id).limit(chunk))
            if not rows:
                return
            yield from (ip_due_from_row(r) for r in rows)
            last_id = rows[-1].id


def aliases_of(ip: IpMetadata) -> tuple[str, ...]:
    return parse_aliases(ip.aliases)


def _stored_aliases(aliases: Sequence[str], keyword: str) -> str | None:
    """The aliases' column value (a JSON array; NULL for none), or a ``CatalogueError`` naming the refused one."""
    from lib.segments.relevance import AliasError, check_aliases

    try:
        checked = check_aliases(aliases, keyword)
    except AliasError as e:
        raise CatalogueError(str(e)) from None
    return json.dumps(list(checked), ensure_ascii=False) if checked else None


def _rows(text: str) -> Iterator[tuple[int, str, str | None, float, builtins.list[str]]]:
    lines = text.splitlines()
    first = lines[0].strip().lower() if lines else ""
    if first.startswith("keyword") and ("," in first or first == "keyword"):
        reader = csv.DictReader(io.StringIO(text))
        for i, row in enumerate(reader, start=2):
            keyword = row.get("keyword") or ""
            if not keyword.strip():
                continue
            try:
                weight = float(row.get("weight") or 1.0)
            except ValueError:
                weight = -1.0  # refused by add() with a clear message
            aliases = [a for a in (row.get("aliases") or "").split("|") if a.strip()]
            yield i, keyword, (row.get("name") or None), weight, aliases
        return
    for i, line in enumerate(lines, start=1):
        if line.strip() and not line.lstrip().startswith("#"):
            yield i, line.rstrip("\r\n"), None, 1.0, []
