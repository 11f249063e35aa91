"""Where the characters of an IP come from: the character list storage (issue 27's point 2, built separately),
or a file an operator gives (``--characters FILE``): a JSON array of ``{"name": …, "aliases": […]}``."""

from __future__ import annotations

import json
from pathlib import Path

from lib.segments.characters import Character


class CharactersUnavailable(LookupError):
    """No character list can be read for the IP (the message says why and what to do)."""


def characters_for_ip(ip_id: int) -> list[Character]:
    """The characters of IP ``ip_id``, from the operator-maintained character lists.

    Those lists' storage is not part of this build yet: until it is, this raises ``CharactersUnavailable`` and
    the characters are given in a file (``load_characters_file``)."""
    raise CharactersUnavailable(f"the character lists of IPs are not stored in this build, so IP {ip_id}'s "
                                f"cannot be read: give them with --characters FILE")


def load_characters_file(path: Path) -> list[Character]:
    """Characters from a JSON file: ``[{"name": "五条悟", "aliases": ["五条", "gojo"]}, …]``."""
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise CharactersUnavailable(f"{path}: {e}") from None
    if not isinstance(data, list):
        raise CharactersUnavailable(f"{path}: expected a JSON array of {{\"name\": …, \"aliases\": […]}}")
    characters = []
    for i, entry in enumerate(data):
        name = entry.get("name") if isinstance(entry, dict) else None
        aliases = entry.get("aliases", []) if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name.strip() or not isinstance(aliases, list) \
                or not all(isinstance(a, str) and a.strip() for a in aliases):
            raise CharactersUnavailable(f"{path}: entry {i + 1} needs a \"name\" (text) and \"aliases\" (a list "
                                        f"of text, may be empty)")
        characters.append(Character(name, tuple(aliases)))
    return characters
