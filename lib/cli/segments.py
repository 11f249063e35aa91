"""``animetop segments``: the goods types and characters of listing titles, and the stored listings' segments."""

from __future__ import annotations

import json
import sys

from lib.cli.common import app_database, command


@command("segments")
def cmd_segments(args) -> int:
    if args.action == "reapply":
        return _reapply(args)
    if args.action == "board":
        return _board(args)
    return _classify(args)


def _board(args) -> int:
    from lib.cli.common import app_read_side
    from lib.cli.ips import print_segments

    try:
        result = app_read_side().segments_board(args.hours, args.by)
    except ValueError as e:  # a window longer than the per-listing facts are kept
        print(f"animetop segments board: {e}", file=sys.stderr)
        return 1
    return print_segments(result, args.by, args.format,
                          f"Across every IP, last {result['hours']} h by {result['by']}",
                          f"no listing was created or sold in the last {result['hours']} h")


def _classify(args) -> int:
    from pathlib import Path

    from lib.core.settings import settings_or_exit
    from lib.segments.character_lists import CharactersUnavailable, characters_for_ip, load_characters_file
    from lib.segments.characters import CharacterMatcher
    from lib.segments.classify import Classifier
    from lib.segments.stored import configured_taxonomy
    from lib.segments.taxonomy import TaxonomyError, load_taxonomy

    try:
        # without --taxonomy, the goods types the results are classified by (SEGMENTS_TAXONOMY)
        taxonomy = load_taxonomy(Path(args.taxonomy)) if args.taxonomy else configured_taxonomy(settings_or_exit())
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


def _reapply(args) -> int:
    from lib.cli.common import app_read_side
    from lib.segments.stored import configured_classifier, resegment
    from lib.segments.taxonomy import TaxonomyError
    from models import IpMetadata

    if args.taxonomy or args.characters:
        print("animetop segments reapply: it applies the configured goods types (SEGMENTS_TAXONOMY) and the IPs' "
              "character lists; --taxonomy and --characters only try them (classify)", file=sys.stderr)
        return 2
    side = app_read_side()  # binds the database; its Redis client drops the answers the new segments change
    try:
        configured_classifier(side.settings)
    except TaxonomyError as e:
        print(f"animetop segments reapply: SEGMENTS_TAXONOMY: {e}", file=sys.stderr)
        return 2
    if args.ip is not None and IpMetadata.get_or_none(IpMetadata.id == args.ip) is None:
        print(f"animetop segments reapply: no IP with id {args.ip}", file=sys.stderr)
        return 1
    report = resegment(side.settings, side, args.ip)
    print(f"{report.ips} IP(s), {report.listings:,} listing(s): {report.added:,} segment row(s) added, "
          f"{report.removed:,} removed")
    return 0
