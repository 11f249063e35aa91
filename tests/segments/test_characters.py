"""Characters named in titles: ``(name, aliases)`` pairs matched in any spelling, several a title, never among
the search words."""

import json
import re

import pytest

from lib.segments.character_lists import CharactersUnavailable, load_characters_file
from lib.segments.characters import Character, CharacterMatcher, match_characters

JUJUTSU = [("五条悟", ["五条", "ごじょう", "gojo", "satoru gojo"]), ("虎杖悠仁", ["虎杖", "itadori", "yuji"]),
           ("夏油傑", ["夏油", "geto"]), ("七海建人", ["ナナミン", "七海"])]


@pytest.mark.parametrize("title, expected", [
    ("呪術廻戦 五条悟 アクスタ", ["五条悟"]),
    ("呪術廻戦 五条 虎杖 缶バッジ 2個", ["五条悟", "虎杖悠仁"]),           # several, in the list's order
    ("虎杖 五条 缶バッジ", ["五条悟", "虎杖悠仁"]),
    ("Jujutsu Kaisen Gojo acrylic stand", ["五条悟"]),                    # Latin alias, any case
    ("ＧＯＪＯ ＳＡＴＯＲＵ plush", ["五条悟"]),                            # full width; "satoru gojo" not needed
    ("ｺﾞｼﾞｮｳ ぬいぐるみ", ["五条悟"]),                                    # half-width katakana for a hiragana alias
    ("ﾅﾅﾐﾝ ラバスト", ["七海建人"]),
    ("呪術廻戦 五条悟 アクスタ 【検索用】夏油 虎杖", ["五条悟"]),          # not the search words
    ("呪術廻戦 タオル", []),
    ("gojoxx yujiro", []),                                               # Latin names are whole words
])
def test_characters_in_titles(title, expected):
    assert match_characters(title, JUJUTSU) == expected


@pytest.mark.parametrize("title, expected", [
    ("SPY×FAMILY アーニャ ねんどろいど", ["アーニャ"]),  # ロイド inside ねんどろいど (a goods word) is not Loid
    ("SPY×FAMILY ねんどろいど ロイド", ["ロイド"]),      # named outside it: Loid
    ("SPY×FAMILY ロイド アクスタ", ["ロイド"]),
])
def test_a_name_inside_a_goods_word_is_not_the_character(title, expected):
    """Seen in the simulator's titles (issue 27 point 6): "ねんどろいど" named ロイド."""
    assert match_characters(title, [("アーニャ", []), ("ロイド", [])]) == expected


def test_a_matcher_compiles_once_and_answers_the_same():
    matcher = CharacterMatcher([Character("ハチワレ"), Character("うさぎ", ("ウサギ",))])
    assert matcher.match("ちいかわ ぬいぐるみ ハチワレ ｳｻｷﾞ") == ["ハチワレ", "うさぎ"]
    assert matcher.match("ちいかわ ぬいぐるみ") == []


def test_a_characters_file_is_read_and_checked(tmp_path):
    path = tmp_path / "characters.json"
    path.write_text(json.dumps([{"name": "五条悟", "aliases": ["五条"]}, {"name": "夏油傑", "aliases": []}],
                               ensure_ascii=False), encoding="utf-8")
    assert load_characters_file(path) == [Character("五条悟", ("五条",)), Character("夏油傑", ())]
    for bad in ('{"name": "五条悟"}', '[{"aliases": []}]', '[{"name": "五条悟", "aliases": "五条"}]', "[", ""):
        path.write_text(bad, encoding="utf-8")
        with pytest.raises(CharactersUnavailable, match=re.escape(str(path))):
            load_characters_file(path)
    with pytest.raises(CharactersUnavailable, match="No such file"):
        load_characters_file(tmp_path / "missing.json")
