"""Keyword stuffing: the goods a seller lists so that more searches find the listing, which the listing does
not sell ("五条悟 ぬいぐるみ 【検索用】アクスタ 缶バッジ", "缶バッジ 凪 アクスタ ぬい 好きな方にも").

Read on the ``normalize``d title, word by word. Three kinds of marker, listed in the taxonomy's [stuffing]:

- ``after`` (検索用): the rest of the title is search words and is dropped. When the words before the marker name
  no item, the seller named it among the search words: the first goods word after the marker is kept.
- ``after_weak`` (関連, #): the same, only when the words before the marker name a goods type; otherwise the
  title is read whole ("呪術廻戦 関連グッズ 缶バッジ" sells badges; a title of hashtags is its own description).
- ``before`` (好きな方にも, お探しの方): the run of goods words just before the marker (and the connectors
  between them: など, 等, や …) is search words. It is dropped when the rest of the title still names an item,
  goods of a type or not ("タオル 五条 アクスタ 好きな方に" sells a towel); otherwise the first word of the run is
  the item and is kept.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import lru_cache

from lib.segments.taxonomy import Taxonomy

#: Whether a normalized fragment of a title names an item (a goods type's word, or goods outside the taxonomy).
Names = Callable[[str], bool]


def strip_stuffing(text: str, taxonomy: Taxonomy, names_goods: Names, names_item: Names) -> str:
    """``text`` (normalized) without its search words. ``names_goods``: the fragment has a goods type's word;
    ``names_item``: it has that or a word of goods outside the taxonomy."""
    text = _cut_after(text, taxonomy, names_goods, names_item)
    return _cut_before(text, taxonomy, names_goods, names_item)


def _markers(text: str, words: tuple[str, ...]) -> Iterator[tuple[int, int]]:
    """Where ``words`` occur in ``text``, a space allowed between any two characters (検索 用)."""
    any_word, each_word = _marker_patterns(words)
    if any_word is None or any_word.search(text) is None:  # most titles have no marker: one search, not one a word
        return
    for pattern in each_word:
        for m in pattern.finditer(text):
            yield m.span()


@lru_cache(maxsize=64)
def _marker_patterns(words: tuple[str, ...]) -> tuple[re.Pattern[str] | None, list[re.Pattern[str]]]:
    """The marker words' patterns, built once a taxonomy: one finding any of them, and one a word (a word's
    matches are found on their own, whether or not another word's overlap them)."""
    each = [" ?".join(re.escape(c) for c in word if c != " ") for word in words]
    return (re.compile("|".join(f"(?:{p})" for p in each)) if each else None), [re.compile(p) for p in each]


def _cut_after(text: str, taxonomy: Taxonomy, names_goods: Names, names_item: Names) -> str:
    strong = set(_markers(text, taxonomy.stuffing_after))
    weak = set(_markers(text, taxonomy.stuffing_after_weak)) - strong
    for start, end in sorted(strong | weak):
        before, after = text[:start].strip(), text[end:]
        if names_goods(before) or ((start, end) in strong and names_item(before)):
            return before
        if (start, end) in strong:
            first = next((w for w in after.split() if names_goods(w)), "")
            return f"{before} {first}".strip()
    return text


def _cut_before(text: str, taxonomy: Taxonomy, names_goods: Names, names_item: Names) -> str:
    found = sorted(_markers(text, taxonomy.stuffing_before))
    if not found:
        return text
    start, end = found[0]
    words = text[:start].split()
    run_start = len(words)
    while run_start and (names_goods(words[run_start - 1]) or _is_connector(words[run_start - 1], taxonomy)):
        run_start -= 1
    run = words[run_start:]
    goods_in_run = [w for w in run if names_goods(w)]
    if not goods_in_run:
        return text
    kept = words[:run_start]
    if not names_item(" ".join(kept)):
        kept.append(goods_in_run[0])
    return " ".join([*kept, text[end:].strip()]).strip()


def _is_connector(word: str, taxonomy: Taxonomy) -> bool:
    for connector in taxonomy.connectors:
        word = word.replace(connector, "")
    return not word
