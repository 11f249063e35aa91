"""``animetop ip characters ID [list|add|remove|import|export]``: an IP's characters and the other names titles
use for them (``lib.segments.character_store``), which ``segments classify --ip ID`` matches."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from lib.cli.common import app_database, parse_ip_id


def cmd_characters(args) -> int:
    from lib.scheduling.catalogue import CatalogueError
    from lib.segments import character_store as store
    from lib.segments.character_lists import CharactersUnavailable, load_characters_file
    from lib.segments.character_rules import CharacterListError

    operation = args.operation or "list"
    label = f"animetop ip characters {operation}"
    if args.format == "csv":
        print(f"{label}: --format table or json (export writes the import file's JSON)", file=sys.stderr)
        return 2
    if args.alias and operation != "add":
        print(f"{label}: --alias goes with add", file=sys.stderr)
        return 2
    if (args.operand is None) != (operation in ("list", "export")):
        what = {"add": "NAME", "remove": "NAME", "import": "FILE"}.get(operation)
        print(f"{label}: " + (f"expected {what}" if what else f"unexpected argument {args.operand!r}"),
              file=sys.stderr)
        return 2
    try:
        ip_id = parse_ip_id(args.value)
        app_database()
        if operation == "list":
            _print(ip_id, args.format)
        elif operation == "export":
            listed = [{"name": c.name, "aliases": list(c.aliases)} for c in store.characters_of(ip_id)]
            print(json.dumps(listed, ensure_ascii=False, indent=2))
        elif operation == "add":
            changes = store.add_character(ip_id, args.operand, args.alias)
            verb = "added" if changes.added else "updated" if changes.any else "unchanged:"
            print(f"IP {ip_id}: {verb} {args.operand!r}" + ("" if changes.added else
                                                          " (already listed; its new aliases added)" if changes.any
                                                          else " (already listed with these aliases)"))
            if changes.any:
                _resegment(ip_id)
        elif operation == "remove":
            removed = store.remove_character(ip_id, args.operand)
            if removed is None:
                print(f"{label}: IP {ip_id} lists no character named {args.operand!r}", file=sys.stderr)
                return 1
            print(f"IP {ip_id}: removed {removed.name!r}")
            _resegment(ip_id)
        elif operation == "import":
            changes = store.replace_characters(ip_id, load_characters_file(Path(args.operand)))
            total = changes.added + changes.changed + changes.moved + changes.unchanged
            print(f"IP {ip_id}: {total} character(s) listed ({changes.added} added, {changes.changed} with other "
                  f"aliases, {changes.removed} removed, {changes.moved} moved, {changes.unchanged} unchanged)")
            if changes.any:
                _resegment(ip_id)
    except (CatalogueError, store.UnknownIp, CharactersUnavailable, CharacterListError) as e:
        print(f"{label}: {e}", file=sys.stderr)
        return 1
    return 0


def _resegment(ip_id: int) -> None:
    """The IP's stored listings segmented again by its changed list (``lib.segments.stored.resegment``)."""
    from lib.cli.common import app_read_side
    from lib.segments.stored import resegment

    side = app_read_side()
    report = resegment(side.settings, side, ip_id)
    print(f"IP {ip_id}: {report.listings:,} stored listing(s) segmented again: {report.added:,} segment row(s) "
          f"added, {report.removed:,} removed")


def _print(ip_id: int, fmt: str) -> None:
    from lib.segments.character_store import stored_characters

    rows = stored_characters(ip_id)
    if fmt == "json":
        print(json.dumps([{"name": r.name, "aliases": list(r.aliases), "created_at": r.created_at.isoformat() + "Z",
                           "updated_at": r.updated_at.isoformat() + "Z"} for r in rows], ensure_ascii=False, indent=2))
        return
    import unicodedata

    from lib.market.read_side import display_ljust

    # terminal columns: a CJK character takes two (display_ljust's count)
    width = max([len("NAME"), *(sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in r.name)
                                for r in rows)])
    print(display_ljust("NAME", width) + "  ALIASES")
    for r in rows:
        print(display_ljust(r.name, width) + "  " + (", ".join(r.aliases) or "-"))
    print(f"{len(rows)} character(s) of IP {ip_id}")
