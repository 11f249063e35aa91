"""What a character list may hold: names and aliases kept as typed, refused when empty, too long, with control
characters, with nothing the matcher can find, or when two of them are one word to the matcher."""

import re
import sys
import unicodedata

import pytest

from lib.segments.character_lists import CharactersUnavailable, load_characters_file, parse_characters
from lib.segments.character_rules import (
    MAX_ALIASES,
    MAX_CHARACTERS,
    NAME_MAX_LENGTH,
    NO_CONTROL_CHARACTERS,
    CharacterListError,
    MatcherConflict,
    check_list,
    merged,
)
from lib.segments.characters import Character

GOJO = Character("五条悟", ("五条", "gojo"))
ITADORI = Character("虎杖悠仁", ("虎杖",))


def test_a_list_is_kept_as_typed():
    words = [("五条悟", ["五条", "Satoru Gojo", "ｺﾞｼﾞｮｳ"]), ("'; DROP TABLE ip_characters; --", []),
             ("\u3000全角空白\u3000", ["a\u200bb"]), ("鬼" * NAME_MAX_LENGTH, ["100%"])]
    assert check_list(words) == [Character(n, tuple(a)) for n, a in words]


@pytest.mark.parametrize("name, aliases, refusal", [
    ("", [], "entry 1: the name '' is empty"),
    ("五条悟", [""], "alias 1 of '五条悟' ('') is empty"),
    ("鬼" * (NAME_MAX_LENGTH + 1), [], f"is {NAME_MAX_LENGTH + 1} characters long; at most {NAME_MAX_LENGTH}"),
    ("五条悟", ["x" * (NAME_MAX_LENGTH + 1)], "alias 1 of '五条悟'"),
    ("五条\t悟", [], "control characters (U+0009 at position 3"),
    ("五条悟", ["go\x00jo"], "control characters (U+0000 at position 3"),
    ("c1\x85", [], "U+0085"),
    ("bad\udcff", [], "not valid Unicode (U+DCFF"),
    (5, [], "the name must be text; got int"),
    ("五条悟", "五条", "the aliases of '五条悟' must be a list of text"),
    ("五条悟", [["五条"]], "alias 1 of '五条悟' must be text; got list"),
    ("五条悟", [f"a{i}" for i in range(MAX_ALIASES + 1)], f"has {MAX_ALIASES + 1} aliases; at most {MAX_ALIASES}"),
])
def test_malformed_words_are_refused_naming_the_entry(name, aliases, refusal):
    with pytest.raises(CharacterListError, match=re.escape(refusal)) as e:
        check_list([(name, aliases)])
    assert not isinstance(e.value, MatcherConflict)


@pytest.mark.parametrize("name, aliases, refusal", [
    ("!!!", [], "the name '!!!' has no letter or digit"),          # symbols become spaces
    ("🔥", [], "the name '🔥' has no letter or digit"),
    ("   ", [], "has no letter or digit"),                          # blank
    ("五条悟", ["【】"], "alias 1 of '五条悟' ('【】') has no letter or digit"),
    ("五条悟", ["五条悟"], "is the same word as its name '五条悟'"),
    ("五条悟", ["ＧＯＪＯ", "gojo"], "alias 2 of '五条悟' ('gojo') is the same word as its alias 'ＧＯＪＯ'"),
    ("五条悟", ["ゴジョウ", "ｺﾞｼﾞｮｳ"], "(both read 'ごじょう')"),           # half-width katakana and hiragana
    ("五条悟", ["ゴジョー", "ごじょ"], "(both read 'ごじょ')"),             # a long vowel at the end is dropped
])
def test_words_the_matcher_cannot_use_are_conflicts(name, aliases, refusal):
    with pytest.raises(MatcherConflict, match=re.escape(refusal)):
        check_list([(name, aliases)])


@pytest.mark.parametrize("second, refusal", [
    (("五条悟", []), "entry 2: the name '五条悟' is the same word to the matcher as the name '五条悟' (entry 1)"),
    (("Gojo", []), "the name 'Gojo' is the same word to the matcher as the alias 'gojo' of '五条悟' (entry 1)"),
    (("虎杖悠仁", ["ｺﾞｼﾞｮｳ"]), None),                                  # another word entirely: fine
    (("虎杖悠仁", ["五条"]), "entry 2: the alias '五条' of '虎杖悠仁' is the same word to the matcher as the alias "
                         "'五条' of '五条悟' (entry 1)"),
    (("五条 悟", []), "entry 2: the name '五条 悟'"),                      # a space is no letter: one word
])
def test_a_word_names_one_character(second, refusal):
    first = ("五条悟", ["五条", "gojo"])
    if refusal is None:
        assert len(check_list([first, second])) == 2
    else:
        with pytest.raises(MatcherConflict, match=re.escape(refusal)):
            check_list([first, second])


def test_a_list_has_at_most_so_many_characters():
    many = [(f"キャラ{i}", []) for i in range(MAX_CHARACTERS)]
    assert len(check_list(many)) == MAX_CHARACTERS
    with pytest.raises(CharacterListError, match=f"at most {MAX_CHARACTERS}"):
        check_list([*many, ("もう一人", [])])


def test_merging_adds_a_character_or_the_aliases_it_lacks():
    listed = [GOJO, ITADORI]
    assert merged(listed, "夏油傑", ["夏油"]) == ([GOJO, ITADORI, Character("夏油傑", ("夏油",))], True)
    # listed already (the name as the matcher reads it): only the new aliases, after its own; the name kept
    assert merged(listed, "五条悟", ["GOJO", "悟"]) == ([Character("五条悟", ("五条", "gojo", "悟")), ITADORI], True)
    assert merged(listed, "五条悟", ["五条"]) == (listed, False)
    assert merged(listed, "五条悟", []) == (listed, False)
    with pytest.raises(MatcherConflict, match="the alias '虎杖' of '五条悟' is the same word to the matcher as the "
                                              "alias '虎杖' of '虎杖悠仁'"):
        merged(listed, "五条悟", ["虎杖"])
    with pytest.raises(MatcherConflict, match="the name 'Gojo'"):
        merged(listed, "Gojo", [])
    with pytest.raises(CharacterListError, match="control characters"):
        merged(listed, "夏油傑", ["夏\n油"])


def test_the_documented_pattern_is_the_rule_on_control_characters():
    """NO_CONTROL_CHARACTERS (the OpenAPI document's) refuses exactly Unicode's control characters (Cc), read as
    JSON Schema reads it (ECMA 262: ``$`` ends the text, where Python's ``$`` also matches before a final new
    line)."""
    assert NO_CONTROL_CHARACTERS.endswith("$")
    pattern = re.compile(NO_CONTROL_CHARACTERS[:-1] + r"\Z")
    every = [chr(i) for i in range(sys.maxunicode + 1)]
    refused = {c for c in every if not pattern.search(c)}
    assert refused == {c for c in every if unicodedata.category(c) == "Cc"}
    assert refused == {chr(i) for i in [*range(0x20), *range(0x7F, 0xA0)]}
    assert not pattern.search("ok\n")  # not before a final new line either


def test_a_characters_file_names_the_bad_entry(tmp_path):
    assert parse_characters('[{"name": "五条悟", "aliases": ["五条"]}, {"name": "夏油傑"}]') == [
        Character("五条悟", ("五条",)), Character("夏油傑")]
    for text, refusal in [
        ('{"name": "五条悟"}', "expected a JSON array"),
        ('[{"name": "五条悟"},\n "夏油傑"]', "entry 2: expected an object"),
        ('[{"name": "五条悟"}, {"aliases": []}]', 'entry 2: no "name"'),
        ('[{"name": "五条悟", "alias": ["五条"]}]', "entry 1: unknown key 'alias'"),
        ('[{"name": "五条悟", "aliases": null}]', "entry 1: the aliases of '五条悟' must be a list"),
        ('[{"name": "五条悟"}, {"name": "ごじょう", "aliases": ["GOJO"]}, {"name": "gojo"}]',
         "entry 3: the name 'gojo' is the same word to the matcher as the alias 'GOJO' of 'ごじょう' (entry 2)"),
        ('[{"name": "五条悟"},\n {"name": ', "not JSON: Expecting value: line 2 column 11"),
    ]:
        with pytest.raises(CharacterListError, match=re.escape(refusal)):
            parse_characters(text)
        path = tmp_path / "characters.json"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(CharactersUnavailable, match=re.escape(f"{path}: {refusal}")):
            load_characters_file(path)
    path.write_bytes(b"\xef\xbb\xbf" + '[{"name": "五条悟"}]'.encode())  # a byte-order mark (Windows editors)
    assert load_characters_file(path) == [Character("五条悟")]
    path.write_bytes(b'[{"name": "\xff"}]')
    with pytest.raises(CharactersUnavailable, match="can't decode byte 0xff"):
        load_characters_file(path)
