"""Whether a listing's title is about an IP: its keyword or one of the aliases its operator gives, read the way the
segments read titles (``normalize.fold``), so that a page the site padded past its real results with "similar
items" of other franchises is told apart from the IP's own listings (docs/concepts/crawling.md, "What is counted").

The rule, for each term (the keyword, and each alias):

- Spelling is the segments' (``normalize``): any width (ＯＮＥ ＰＩＥＣＥ is one piece), case, katakana or
  hiragana (ハイキュー and はいきゅー), a long vowel written as a dash or left off at the end, punctuation and
  brackets as separators (ハイキュー!! is ハイキュー, 【推しの子】 is 推しの子). Kanji and kana spellings of one
  name (鬼滅 and きめつ), romaji and English names are different words: an operator gives them as aliases.
- Japanese is found anywhere in the title, since Japanese is written without spaces (推しの子 is found in
  推しの子アクスタ, and also in 私の推しの子供服: the title cannot tell these apart). Latin letters and digits are
  whole words (``WordSet``: "one piece" is not found in "someone pieces", "onepiece" is found).
- A term of several words (鬼滅の刃 炭治郎) is found when the whole term is, or each of its words is somewhere in
  the title, in any order, as the site's search treats the words of a query.
- The whole title counts, its search words (【検索用】…) included: a seller's own title sometimes names the IP only
  there.

A term that folds to no letter or digit (``!!!``) can never be found: an IP with no findable term has every listing
counted (``TitleMatcher.filters`` is False), as before aliases existed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from lib.segments.character_rules import CharacterListError, check_word
from lib.segments.normalize import fold, normalize
from lib.segments.taxonomy import WordSet

#: Longest alias, most aliases of one IP, and the fewest characters an alias must fold to: a single kana or kanji
#: (ワ, 呪) is inside far too many titles to say which IP a listing is about.
ALIAS_MAX_LENGTH = 100
MAX_ALIASES = 30
ALIAS_MIN_FOLDED = 2


class AliasError(ValueError):
    """An alias (or a list of them) that cannot be stored as given; the message names it and why."""


def check_alias(alias: object, keyword: str = "") -> str:
    """``alias`` as given, or an ``AliasError``: text of 1 to ``ALIAS_MAX_LENGTH`` characters without control
    characters, with at least ``ALIAS_MIN_FOLDED`` characters the matcher reads, not the keyword again."""
    what = f"the alias {alias!r}" if isinstance(alias, str) and len(alias) <= ALIAS_MAX_LENGTH else "the alias"
    if isinstance(alias, str) and len(alias) > ALIAS_MAX_LENGTH:
        raise AliasError(f"the alias is {len(alias)} characters long; at most {ALIAS_MAX_LENGTH} are allowed")
    try:
        word = check_word(alias, what)
    except CharacterListError as e:  # the same rules as a character's alias
        raise AliasError(str(e)) from None
    if len(fold(word).replace(" ", "")) < ALIAS_MIN_FOLDED:
        raise AliasError(f"{what} reads as {fold(word)!r}, fewer than {ALIAS_MIN_FOLDED} characters: it is inside "
                         f"too many titles to tell the IP's listings")
    if keyword and fold(word) == fold(keyword):
        raise AliasError(f"{what} reads as the keyword {keyword!r} does; it adds nothing")
    return word


def check_aliases(aliases: Iterable[object], keyword: str = "") -> tuple[str, ...]:
    """Each alias checked (``check_alias``), none reading like another; in the order given."""
    out: list[str] = []
    seen: dict[str, str] = {}
    for alias in aliases:
        word = check_alias(alias, keyword)
        folded = fold(word)
        if folded in seen:
            raise AliasError(f"the alias {word!r} reads as {seen[folded]!r} does; give one of them")
        seen[folded] = word
        out.append(word)
    if len(out) > MAX_ALIASES:
        raise AliasError(f"{len(out)} aliases; at most {MAX_ALIASES} are allowed")
    return tuple(out)


@dataclass(frozen=True)
class _Term:
    """One term compiled: the whole of it, and each of its words when it has several."""

    whole: WordSet
    words: tuple[WordSet, ...]

    @classmethod
    def of(cls, term: str) -> _Term | None:
        parts = [w for w in normalize(term).split(" ") if any(c.isalnum() for c in fold(w))]
        if not parts:
            return None
        return cls(WordSet([term]), tuple(WordSet([w]) for w in parts) if len(parts) > 1 else ())

    def found(self, folded: str) -> bool:
        if self.whole.spans(folded):
            return True
        return bool(self.words) and all(w.spans(folded) for w in self.words)


@dataclass(frozen=True)
class TitleMatcher:
    """The titles of one IP's listings: its ``keyword`` and its operator's ``aliases`` (the rule: the module's
    docstring). Compiled once; ``matches`` is what each listing is asked."""

    keyword: str
    aliases: tuple[str, ...] = ()
    _terms: tuple[_Term, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        terms = (_Term.of(t) for t in (self.keyword, *self.aliases))
        object.__setattr__(self, "_terms", tuple(t for t in terms if t is not None))

    @property
    def filters(self) -> bool:
        """False when no term has a letter or digit the matcher reads: then every title matches."""
        return bool(self._terms)

    def matches(self, title: str) -> bool:
        if not self._terms:
            return True
        folded = fold(title)
        return any(t.found(folded) for t in self._terms)


@dataclass(frozen=True)
class Relevance:
    """What a page (or a search, or a crawl) held: listings whose titles match the IP, and those that do not."""

    matched: int = 0
    missed: int = 0

    def __add__(self, other: Relevance) -> Relevance:
        return Relevance(self.matched + other.matched, self.missed + other.missed)

    @property
    def share(self) -> float | None:
        """The share of matching listings; None when none was read."""
        total = self.matched + self.missed
        return self.matched / total if total else None


def title_matcher(keyword: str, aliases: Sequence[str] | None = None) -> TitleMatcher:
    return TitleMatcher(keyword, tuple(aliases or ()))
