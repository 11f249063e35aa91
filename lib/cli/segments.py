"""``animetop segments``: the goods types and characters of listing titles."""

from __future__ import annotations

import json
import sys

from lib.cli.common import app_database, command


@command("segments")
def cmd_segments(args) -> int:
    from pathlib import Path

    from lib.segments.character_lists import CharactersUnavailable, characters_for_ip, load_characters_file
    from lib.segments.characters import CharacterMatcher
    from lib.segments.classify import Classifier
    from lib.segments.taxonomy import TaxonomyError, default_taxonomy, load_taxonomy

    try:
        taxonomy = load_taxonomy(Path(args.taxonomy)) if args.taxonomy else default_taxonomy()
        if args.characters:
            characters = load_characters_file(Path(args.characters))
        elif args.ip is not None:
            app_database()
            characters = characters_for_ip(args.ip)
            if not characters:
                print(f"animetop segments classify: IP {args.ip} lists no characters (add them with `animetop ip "
                      f"characters {args.ip} add NAME`): none will be matched", file=sys.stderr)
        else:
            characters = []
    except (TaxonomyError, CharactersUnavailable) as e:
        print(f"animetop segments classify: {e}", file=sys.stderr)
        return 2
    classifier = Classifier(taxonomy)
    matcher = CharacterMatcher(characters, classifier)
    out = sys.stdout.buffer
    # UTF-8 both ways whatever the locale: titles are Japanese
    for raw in sys.stdin.buffer:
        title = raw.decode("utf-8", errors="replace").removeprefix("\ufeff").rstrip("\r\n")
        if not title.strip():
            continue
        line = {"title": title, "goods": classifier.classify(title), "characters": matcher.match(title)}
        out.write(json.dumps(line, ensure_ascii=False).encode("utf-8") + b"\n")
        out.flush()  # an operator typing titles sees each answer at once
    return 0
