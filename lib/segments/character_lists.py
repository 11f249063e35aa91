"""Where the characters of an IP come from: its list in the database (``characters_for_ip``; kept with
``animetop ip characters`` or the API), or a file an operator gives (``load_characters_file``, the format of
``animetop ip characters ID import`` and ``export``): a JSON array of ``{"name": …, "aliases": […]}``."""

from __future__ import annotations

import json
from pathlib import Path

from lib.segments.character_rules import CharacterListError, check_list
from lib.segments.character_store import UnknownIp, characters_of
from lib.segments.characters import Character

#: The keys of an entry of a characters file ("aliases" may be left out: none).
ENTRY_KEYS = ("name", "aliases")


class CharactersUnavailable(LookupError):
    """No character list can be read for the IP, or from the file (the message says why and what to do)."""


def characters_for_ip(ip_id: int) -> list[Character]:
    """The characters of IP ``ip_id`` (``(name, aliases)`` pairs, in the operator's order; none listed: empty),
    from the database bound; ``CharactersUnavailable`` when there is no such IP."""
    try:
        return characters_of(ip_id)
    except UnknownIp as e:
        raise CharactersUnavailable(str(e)) from None


def parse_characters(text: str) -> list[Character]:
    """Characters from the text of a characters file, checked as any list is (``check_list``); a
    ``CharacterListError`` names the entry (counting from 1) and what is wrong with it."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise CharacterListError(f"not JSON: {e}") from None
    if not isinstance(data, list):
        raise CharacterListError('expected a JSON array of {"name": …, "aliases": […]}')
    entries: list[tuple[object, object]] = []
    for i, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise CharacterListError(f'entry {i + 1}: expected an object {{"name": …, "aliases": […]}}; got '
                                     f"{type(entry).__name__}")
        unknown = [k for k in entry if k not in ENTRY_KEYS]
        if unknown:
            raise CharacterListError(f"entry {i + 1}: unknown key {unknown[0]!r} (an entry has {ENTRY_KEYS[0]!r} "
                                     f"and {ENTRY_KEYS[1]!r})")
        if "name" not in entry:
            raise CharacterListError(f'entry {i + 1}: no "name"')
        entries.append((entry["name"], entry.get("aliases", [])))
    return check_list(entries)


def load_characters_file(path: Path) -> list[Character]:
    """Characters from a JSON file: ``[{"name": "五条悟", "aliases": ["五条", "gojo"]}, …]`` (``parse_characters``);
    ``CharactersUnavailable`` naming the file and, where it is the entry, which one."""
    try:
        return parse_characters(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, CharacterListError) as e:
        raise CharactersUnavailable(f"{path}: {e}") from None
