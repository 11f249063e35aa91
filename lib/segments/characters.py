"""Characters named in a title: ``match_characters(title, characters)``, each character a ``(name, aliases)``
pair, matched like goods terms (``normalize.fold``: any script, width or long-vowel spelling; names in Latin
letters as whole words) and not among the title's search words (``stuffing``: "五条悟 アクスタ 【検索用】夏油
虎杖" names 五条悟 only), nor inside a goods word ("ねんどろいど" does not name ロイド). A title may name several."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from lib.segments.classify import Classifier, default_classifier
from lib.segments.taxonomy import WordSet


class Character(NamedTuple):
    """A character of an IP as an operator lists it: the name answered, and the other names titles use."""

    name: str
    aliases: tuple[str, ...] = ()


class CharacterMatcher:
    """The characters a title names, for one list of characters (compiled once).

    Parameters:
        characters: ``(name, aliases)`` pairs, in the order answers keep.
        classifier: whose taxonomy's stuffing rules drop search words (default: the packaged taxonomy's).
    """

    def __init__(self, characters: Iterable[tuple[str, Sequence[str]]], classifier: Classifier | None = None):
        self.characters = [Character(name, tuple(aliases)) for name, aliases in characters]
        self._names = [(c.name, WordSet([c.name, *c.aliases])) for c in self.characters]
        self._classifier = classifier or default_classifier()

    def match(self, title: str) -> list[str]:
        return self.match_in(self._classifier.searched_text(title))

    def match_in(self, folded: str) -> list[str]:
        """The characters named in a title's ``Classifier.searched_text``."""
        goods = self._classifier.term_spans(folded)
        found: list[str] = []
        for name, words in self._names:
            if name not in found and any(not any(g0 <= s0 and s1 <= g1 for g0, g1 in goods)
                                         for s0, s1 in words.spans(folded)):
                found.append(name)
        return found


def match_characters(title: str, characters: Iterable[tuple[str, Sequence[str]]]) -> list[str]:
    """The names of the ``characters`` (``(name, aliases)`` pairs) that ``title`` names, in their order."""
    return CharacterMatcher(characters).match(title)
