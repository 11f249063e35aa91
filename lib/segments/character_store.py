"""The character lists of the IPs, in the database (``ip_characters``): read, added to, removed from and
replaced. Each change is one transaction that holds the IP's row (MySQL/MariaDB: ``SELECT … FOR UPDATE``;
SQLite: the write lock), so two changes to one list run one after the other and each checks the list as the
other left it; a change that is refused writes nothing."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from lib.core.clock import get_clock
from lib.core.db import is_mysql, retrying_deadlocks, write_transaction
from lib.segments.character_rules import check_list, merged
from lib.segments.characters import Character
from lib.segments.normalize import fold
from models import IpCharacter, IpMetadata


class UnknownIp(LookupError):
    """No IP has the id asked for."""

    def __init__(self, ip_id: int) -> None:
        super().__init__(f"no IP with id {ip_id}")
        self.ip_id = ip_id


@dataclass(frozen=True)
class StoredCharacter:
    """A character as stored: the operator's words and when the row was made and last changed (naive UTC)."""

    name: str
    aliases: tuple[str, ...]
    created_at: datetime
    updated_at: datetime

    @property
    def character(self) -> Character:
        return Character(self.name, self.aliases)


@dataclass(frozen=True)
class Changes:
    """What a change did to a list: characters added, with other aliases, removed, only moved in the list (their
    ``updated_at`` stays), left as they were."""

    added: int = 0
    changed: int = 0
    removed: int = 0
    moved: int = 0
    unchanged: int = 0

    @property
    def any(self) -> bool:
        return bool(self.added or self.changed or self.removed or self.moved)


def _known(ip_id: int, lock: bool = False) -> None:
    query = IpMetadata.select(IpMetadata.id).where(IpMetadata.id == ip_id)
    if lock and is_mysql():
        query = query.for_update()
    if query.scalar() is None:
        raise UnknownIp(ip_id)


def _rows(ip_id: int) -> list[IpCharacter]:
    return list(IpCharacter.select().where(IpCharacter.ip_id == ip_id)
                .order_by(IpCharacter.position, IpCharacter.id))


def stored_characters(ip_id: int) -> list[StoredCharacter]:
    """IP ``ip_id``'s characters in the operator's order (``UnknownIp`` when there is no such IP)."""
    _known(ip_id)
    return [StoredCharacter(r.name, tuple(json.loads(r.aliases)), r.created_at, r.updated_at) for r in _rows(ip_id)]


def characters_of(ip_id: int) -> list[Character]:
    """IP ``ip_id``'s characters as the matcher takes them (``(name, aliases)`` pairs)."""
    return [s.character for s in stored_characters(ip_id)]


def _change(ip_id: int, change: Callable[[list[Character]], list[Character]]) -> Changes:
    """Apply ``change`` (the list as stored → the list wanted, or a ``CharacterListError``) to IP ``ip_id``'s
    list in one transaction, writing only the rows that differ."""
    def work() -> Changes:
        with write_transaction():
            _known(ip_id, lock=True)
            rows = _rows(ip_id)
            wanted = change([Character(r.name, tuple(json.loads(r.aliases))) for r in rows])
            return _write(ip_id, rows, wanted)

    return retrying_deadlocks(work)


def _write(ip_id: int, rows: list[IpCharacter], wanted: Sequence[Character]) -> Changes:
    now = get_clock().utcnow()
    by_name = {r.name: r for r in rows}
    keep = {c.name for c in wanted}
    gone = [r.id for r in rows if r.name not in keep]
    if gone:  # first: a name respelled ("Gojo" → "gojo") must not meet its old row on a case-folding index
        IpCharacter.delete().where(IpCharacter.id.in_(gone)).execute()
    added = changed = moved = unchanged = 0
    for position, character in enumerate(wanted):
        aliases = json.dumps(list(character.aliases), ensure_ascii=False)
        row = by_name.get(character.name)
        if row is None:
            IpCharacter.create(ip_id=ip_id, position=position, name=character.name, aliases=aliases,
                               created_at=now, updated_at=now)
            added += 1
        elif row.aliases != aliases:
            (IpCharacter.update(position=position, aliases=aliases, updated_at=now)
             .where(IpCharacter.id == row.id).execute())
            changed += 1
        elif row.position != position:
            IpCharacter.update(position=position).where(IpCharacter.id == row.id).execute()
            moved += 1
        else:
            unchanged += 1
    return Changes(added, changed, len(gone), moved, unchanged)


def add_character(ip_id: int, name: str, aliases: Sequence[str] = ()) -> Changes:
    """Add a character at the end of IP ``ip_id``'s list, or, when it is listed already (its name as the matcher
    reads it), add those of ``aliases`` it lacks. ``CharacterListError`` when a word is refused or is another
    character's."""
    return _change(ip_id, lambda listed: merged(listed, name, aliases)[0])


def remove_character(ip_id: int, name: str) -> Character | None:
    """Remove the character named ``name`` (as the matcher reads it: ``Gojo`` removes ``gojo``) from IP
    ``ip_id``'s list; the character removed, or None when none has that name."""
    removed: list[Character] = []

    def without(listed: list[Character]) -> list[Character]:
        key = fold(name) if isinstance(name, str) else None
        removed.extend(c for c in listed if key and fold(c.name) == key)
        return [c for c in listed if c not in removed]

    _change(ip_id, without)
    return removed[0] if removed else None


def replace_characters(ip_id: int, characters: Sequence[tuple[object, object]]) -> Changes:
    """Make ``characters`` IP ``ip_id``'s whole list, in their order (checked first: ``check_list``); characters
    kept keep their creation time."""
    wanted = check_list(characters)
    return _change(ip_id, lambda listed: wanted)
