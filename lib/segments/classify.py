"""A title's goods types: ``classify(title)`` answers the ids of the types it sells (several for a bundle;
``other`` alone when none matched), by the taxonomy's words (``taxonomy``), on the normalized title
(``normalize``) without its search words (``stuffing``).

A term of a type puts the title in the type unless
- it lies inside one of the type's ``not_in`` words (ぬい in ぬい服);
- a for-word (用), a look-alike word (風) or an absent word (なし) follows it, or one of the type's
  ``accessories`` (フィギュア ケース) that does not itself come with the item (ケース付き) or go missing (棒なし);
- one of the type's ``vetoes`` stands anywhere in the title (台座のみ, スリーブ), not followed by an included or
  absent word.
A weak term counts the same way, but only when no type it yields to (every type, unless the taxonomy narrows
it) matched a term.
"""

from __future__ import annotations

from functools import cache

from lib.segments.normalize import compact, normalize
from lib.segments.stuffing import strip_stuffing
from lib.segments.taxonomy import OTHER, GoodsType, Taxonomy, WordSet, default_taxonomy


class Classifier:
    """Goods types of titles by one taxonomy.

    Parameters:
        taxonomy: the goods types (default: the packaged ones).
    """

    def __init__(self, taxonomy: Taxonomy | None = None) -> None:
        self.taxonomy = taxonomy or default_taxonomy()
        self._matched = [t for t in self.taxonomy.types if t.id != OTHER]
        self._other_terms = next(t.terms for t in self.taxonomy.types if t.id == OTHER)
        self._heads = _HeadIndex(self._matched)

    def classify(self, title: str) -> list[str]:
        """The ids of the goods types ``title`` sells, in the taxonomy's order; ``[other]`` when none."""
        return self.types_in(self.searched_text(title))

    def searched_text(self, title: str) -> str:
        """What terms and names are looked for in: the title ``normalize``d, without its search words, folded."""
        return compact(self.without_stuffing(normalize(title)))

    def without_stuffing(self, normalized: str) -> str:
        """A ``normalize``d title without its search words."""
        return strip_stuffing(normalized, self.taxonomy, self._names_goods, self._names_item)

    def types_in(self, folded: str) -> list[str]:
        """The goods types of a folded text (``normalize.fold``), stuffing already removed."""
        strong, weak = self._evidence(folded)
        found = set(strong)
        for t in self._matched:
            if t.id in weak and t.id not in strong:
                yields = t.weak_yields_to if t.weak_yields_to is not None else {u.id for u in self._matched}
                if not strong & yields:
                    found.add(t.id)
        return [t.id for t in self._matched if t.id in found] or [OTHER]

    def term_spans(self, folded: str) -> list[tuple[int, int]]:
        """Where a folded text names goods (any type's terms, weak ones too): a character's name found inside one
        of these is part of the goods word (ロイド in ねんどろいど), not the character."""
        present = self._heads.present(folded)
        return [span for t in self._matched for words, weak in ((t.terms, False), (t.weak_terms, True))
                if (t.id, weak) in present for span in words.spans(folded)]

    def _evidence(self, folded: str) -> tuple[set[str], set[str]]:
        strong: set[str] = set()
        weak: set[str] = set()
        present = self._heads.present(folded)
        for t in self._matched:
            searched = ((t.id, False) in present, (t.id, True) in present)
            if not any(searched):
                continue  # no word of the type starts anywhere in the text
            found = ((t.terms.spans(folded) if searched[0] else [], strong),
                     (t.weak_terms.spans(folded) if searched[1] else [], weak))
            if not found[0][0] and not found[1][0]:
                continue  # no term of the type: its vetoes and masks, which only take terms away, need no search
            if self._vetoed(t, folded):
                continue
            masks = [s for s in t.not_in.spans(folded) if not self._kept_by_what_follows(folded, s[1])]
            for spans, into in found:
                if any(not self._excluded(t, folded, span, masks) for span in spans):
                    into.add(t.id)
        return strong, weak

    def _vetoed(self, t: GoodsType, folded: str) -> bool:
        return any(not self._kept_by_what_follows(folded, end) for _, end in t.vetoes.spans(folded))

    def _kept_by_what_follows(self, folded: str, at: int) -> bool:
        """An accessory, veto or ``not_in`` word ending at ``at`` comes with the item (付き) or is missing (なし):
        it excludes nothing."""
        return _follows(self.taxonomy.included_words, folded, at) or _follows(self.taxonomy.absent_words, folded, at)

    def _excluded(self, t: GoodsType, folded: str, span: tuple[int, int], masks: list[tuple[int, int]]) -> bool:
        start, end = span
        if any(start < m_end and m_start < end for m_start, m_end in masks):
            return True
        tax = self.taxonomy
        if _follows(tax.lookalike_words, folded, end) or _follows(tax.absent_words, folded, end):
            return True
        if t.for_words and _follows(tax.for_words, folded, end):
            return True
        accessory_end = t.accessories.starts(folded, _skip_space(folded, end))
        return accessory_end is not None and not self._kept_by_what_follows(folded, accessory_end)

    def _names_goods(self, normalized: str) -> bool:
        strong, weak = self._evidence(compact(normalized))
        return bool(strong or weak)

    def _names_item(self, normalized: str) -> bool:
        return self._names_goods(normalized) or bool(self._other_terms.spans(compact(normalized)))


class _HeadIndex:
    """Which goods types' terms (and weak terms) may occur in a text, in one pass over it: a word set none of
    whose ``heads`` occurs has no match, so its search is skipped (on the labelled titles, about 3 of the 17
    types are searched this way). The heads are keyed by their first two characters (one when that is all).

    Parameters:
        types: the goods types whose terms are looked for.
    """

    def __init__(self, types: list[GoodsType]) -> None:
        self.by_start: dict[str, list[tuple[str, tuple[str, bool]]]] = {}
        always = set()
        for t in types:
            for words, weak in ((t.terms, False), (t.weak_terms, True)):
                if words.heads is None:
                    always.add((t.id, weak))  # patterns: no head says where a match starts
                for head in words.heads or ():
                    self.by_start.setdefault(head[:2], []).append((head, (t.id, weak)))
        self.always = frozenset(always)

    def present(self, text: str) -> set[tuple[str, bool]]:
        """(type id, weak) of the word sets that may match in ``text``."""
        found = set(self.always)
        get = self.by_start.get
        for at in range(len(text)):
            for start in (text[at], text[at:at + 2]):
                for head, key in get(start, ()):
                    if key not in found and text.startswith(head, at):
                        found.add(key)
        return found


def _skip_space(folded: str, at: int) -> int:
    """Past a space, or past the long vowel of a term whose folded form lost it (ポスタ|ーフレーム)."""
    return at + 1 if folded[at:at + 1] in (" ", "ー") else at


def _follows(words: WordSet, folded: str, at: int) -> bool:
    return words.starts(folded, _skip_space(folded, at)) is not None


@cache
def default_classifier() -> Classifier:
    return Classifier()


def classify(title: str) -> list[str]:
    """The ids of the goods types ``title`` sells by the packaged taxonomy (``Classifier.classify``)."""
    return default_classifier().classify(title)
