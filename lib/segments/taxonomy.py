"""The goods types, read from their data file (``goods_types.toml`` beside this module; its header documents
the fields) and compiled for matching: every word folded (``normalize.fold``) once, at load."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from lib.segments.normalize import fold, is_ascii_alnum, normalize

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 reads TOML with tomli (setup.cfg installs it there)
    import tomli as tomllib

#: The packaged data file (lib/segments/goods_types.toml; setup.cfg's package_data ships it).
DATA_FILE = "goods_types.toml"
#: The type a listing is in when no other matched; it matches nothing itself.
OTHER = "other"

_TYPE_FIELDS = {"id", "ja", "en", "terms", "weak_terms", "patterns", "weak_patterns", "weak_yields_to", "not_in",
                "accessories", "vetoes", "for_words"}
_WORD_LISTS = ("matching", "stuffing")
_MATCHING_FIELDS = {"for_words", "lookalike_words", "absent_words", "included_words"}
_STUFFING_FIELDS = {"after", "after_weak", "before", "connectors"}
_ID = re.compile(r"[a-z][a-z0-9_]*\Z")


class TaxonomyError(ValueError):
    """The data file is not a valid taxonomy (the message says where)."""


class WordSet:
    """Words (folded) found in a folded title: Japanese anywhere, Latin as whole words with an optional plural
    ``s`` (a Latin word is not found inside another: "cd" in "abcd", "ds" in "3ds").

    Parameters:
        words: the words as written in the data file.
        patterns: regular expressions over the folded title, added as they are.
    """

    def __init__(self, words: list[str], patterns: list[str] | None = None) -> None:
        folded = sorted({fold(w) for w in words if fold(w)}, key=len, reverse=True)  # longest first
        alternatives = [self._alternative(w) for w in folded] + list(patterns or [])
        self.words = folded
        self.regex = re.compile("|".join(f"(?:{a})" for a in alternatives)) if alternatives else None
        #: What every match starts with: each word up to its first space (which a match may drop). A text that
        #: holds none of them has no match. None when patterns make it unknown.
        self.heads: tuple[str, ...] | None = None if patterns else tuple(w.split(" ")[0] for w in folded)

    @staticmethod
    def _alternative(word: str) -> str:
        body = re.escape(word).replace(r"\ ", " ?")  # "acrylic stand" also finds "acrylicstand"
        if is_ascii_alnum(word[0]):
            body = r"(?<![a-z0-9])" + body
        if is_ascii_alnum(word[-1]):
            body += r"(?:e?s)?(?![a-z0-9])"
        return body

    def spans(self, text: str) -> list[tuple[int, int]]:
        return [m.span() for m in self.regex.finditer(text)] if self.regex else []

    def starts(self, text: str, at: int) -> int | None:
        """The end of a word of this set that begins at ``at``, or None."""
        if self.regex is None:
            return None
        m = self.regex.match(text, at)
        return m.end() if m else None

    def __bool__(self) -> bool:
        return self.regex is not None


@dataclass(frozen=True)
class GoodsType:
    """One goods type, compiled.

    Parameters:
        id: the type's id (the API's, CSV's and CLI's).
        ja, en: display names.
        terms, weak_terms: the words that name the type; weak ones only when no type in ``weak_yields_to``
            matched a term.
        weak_yields_to: ids; None for every type.
        not_in, accessories, vetoes: the words that exclude a term or the type (see the data file).
        for_words: whether the taxonomy's for-words (用) exclude this type's terms.
    """

    id: str
    ja: str
    en: str
    terms: WordSet
    weak_terms: WordSet
    weak_yields_to: frozenset[str] | None
    not_in: WordSet
    accessories: WordSet
    vetoes: WordSet
    for_words: bool


@dataclass(frozen=True)
class Taxonomy:
    """The goods types and the rules they share.

    Parameters:
        types: every type, ``other`` last, in the data file's order (the order ``classify`` answers in).
        for_words, lookalike_words, absent_words, included_words: the [matching] words.
        stuffing_after, stuffing_after_weak, stuffing_before, connectors: the [stuffing] words, normalized
            (``normalize``, words kept apart: the stuffing rules read words).
        source: where the taxonomy was read from.
    """

    types: tuple[GoodsType, ...]
    for_words: WordSet
    lookalike_words: WordSet
    absent_words: WordSet
    included_words: WordSet
    stuffing_after: tuple[str, ...]
    stuffing_after_weak: tuple[str, ...]
    stuffing_before: tuple[str, ...]
    connectors: tuple[str, ...]
    source: str

    @property
    def ids(self) -> list[str]:
        return [t.id for t in self.types]


def packaged_path() -> Path:
    """The data file as installed with the package."""
    return Path(str(resources.files("lib.segments").joinpath(DATA_FILE)))


@cache
def default_taxonomy() -> Taxonomy:
    """The packaged taxonomy, read once a process."""
    return load_taxonomy(packaged_path())


def load_taxonomy(path: Path) -> Taxonomy:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise TaxonomyError(f"{path}: {e}") from None
    return parse_taxonomy(data, str(path))


def parse_taxonomy(data: dict[str, Any], source: str) -> Taxonomy:
    unknown = set(data) - {"types", *_WORD_LISTS}
    if unknown:
        raise TaxonomyError(f"{source}: unknown section(s) {', '.join(sorted(unknown))}")
    matching = _section(data, "matching", _MATCHING_FIELDS, source)
    stuffing = _section(data, "stuffing", _STUFFING_FIELDS, source)
    raw_types = data.get("types")
    if not isinstance(raw_types, list) or not raw_types:
        raise TaxonomyError(f"{source}: no [[types]]")
    types = [_goods_type(raw, source) for raw in raw_types]
    ids = [t.id for t in types]
    duplicated = sorted({i for i in ids if ids.count(i) > 1})
    if duplicated:
        raise TaxonomyError(f"{source}: type id(s) given twice: {', '.join(duplicated)}")
    if OTHER not in ids:
        raise TaxonomyError(f"{source}: the type {OTHER!r} (no type matched) is missing")
    for t in types:
        unknown_ids = sorted((t.weak_yields_to or frozenset()) - set(ids))
        if unknown_ids:
            raise TaxonomyError(f"{source}: type {t.id!r} yields to unknown type(s) {', '.join(unknown_ids)}")
    types.sort(key=lambda t: t.id == OTHER)  # other last: it is the answer when nothing else is
    return Taxonomy(
        types=tuple(types),
        for_words=WordSet(_strings(matching, "for_words", source)),
        lookalike_words=WordSet(_strings(matching, "lookalike_words", source)),
        absent_words=WordSet(_strings(matching, "absent_words", source)),
        included_words=WordSet(_strings(matching, "included_words", source)),
        stuffing_after=tuple(normalize(w) for w in _strings(stuffing, "after", source)),
        stuffing_after_weak=tuple(normalize(w) for w in _strings(stuffing, "after_weak", source)),
        stuffing_before=tuple(normalize(w) for w in _strings(stuffing, "before", source)),
        connectors=tuple(sorted({normalize(w) for w in _strings(stuffing, "connectors", source)}, key=len,
                                reverse=True)),
        source=source,
    )


def _section(data: dict[str, Any], name: str, fields: set[str], source: str) -> dict[str, Any]:
    section = data.get(name, {})
    if not isinstance(section, dict):
        raise TaxonomyError(f"{source}: [{name}] must be a table")
    unknown = set(section) - fields
    if unknown:
        raise TaxonomyError(f"{source}: [{name}] has unknown field(s) {', '.join(sorted(unknown))}")
    return section


def _strings(table: dict[str, Any], field: str, where: str) -> list[str]:
    value = table.get(field, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise TaxonomyError(f"{where}: {field} must be a list of non-empty strings")
    return value


def _goods_type(raw: Any, source: str) -> GoodsType:
    if not isinstance(raw, dict):
        raise TaxonomyError(f"{source}: each [[types]] must be a table")
    type_id = raw.get("id")
    if not isinstance(type_id, str) or not _ID.match(type_id):
        raise TaxonomyError(f"{source}: a type's id must be lower-case letters, digits and _ (got {type_id!r})")
    where = f"{source}: type {type_id!r}"
    unknown = set(raw) - _TYPE_FIELDS
    if unknown:
        raise TaxonomyError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    patterns = {f: _strings(raw, f, where) for f in ("patterns", "weak_patterns")}
    for field, values in patterns.items():
        for pattern in values:
            try:
                re.compile(pattern)
            except re.error as e:
                raise TaxonomyError(f"{where}: {field} {pattern!r}: {e}") from None
    terms, weak = _strings(raw, "terms", where), _strings(raw, "weak_terms", where)
    if type_id == OTHER and (patterns["patterns"] or weak or patterns["weak_patterns"]):
        raise TaxonomyError(f"{where}: other matches nothing; only its terms (goods outside the taxonomy) are read")
    for_words = raw.get("for_words", True)
    if not isinstance(for_words, bool):
        raise TaxonomyError(f"{where}: for_words must be true or false")
    yields = raw.get("weak_yields_to")
    return GoodsType(
        id=type_id,
        ja=str(raw.get("ja", type_id)),
        en=str(raw.get("en", type_id)),
        terms=WordSet(terms, patterns["patterns"]),
        weak_terms=WordSet(weak, patterns["weak_patterns"]),
        weak_yields_to=None if yields is None else frozenset(_strings(raw, "weak_yields_to", where)),
        not_in=WordSet(_strings(raw, "not_in", where)),
        accessories=WordSet(_strings(raw, "accessories", where)),
        vetoes=WordSet(_strings(raw, "vetoes", where)),
        for_words=for_words,
    )
