"""The classifier on each kind of hard title the issue names, a few titles a kind (the labelled sample measures
it at scale): slang and abbreviations, accessories that are not the type, ～風 look-alikes, keyword stuffing,
English and romaji, bundles, and goods outside the taxonomy."""

import pytest

from lib.segments.classify import Classifier, classify
from lib.segments.taxonomy import parse_taxonomy


@pytest.mark.parametrize("title, expected", [
    ("鬼滅の刃 缶バ 5個", ["can_badge"]),
    ("呪術廻戦 缶バッチ 虎杖", ["can_badge"]),                # the common misspelling
    ("ハイキュー ラバキー 影山", ["rubber_strap"]),
    ("ブルーロック ラバマス 凪", ["rubber_strap"]),
    ("推しの子 B2タペ アイ", ["poster_tapestry"]),
    ("チェンソーマン BD 1巻", ["disc"]),
    ("ワンフェス ガレキ 未組立", ["figure"]),
    ("ねんどろ 五条悟", ["figure"]),
    ("ちいかわ ぬい ハチワレ", ["plush"]),
    ("推しの子 クリファ", ["clear_file"]),
    ("ポケカ リザードン SAR", ["trading_card"]),
    ("転スラ ラノベ 1-20巻", ["novel"]),
    ("ラブライブ 円盤 全巻", ["disc"]),
])
def test_slang_and_abbreviations(title, expected):
    assert classify(title) == expected


@pytest.mark.parametrize("title, expected", [
    ("呪術廻戦 アクスタ 台座のみ", ["other"]),                 # the stand's base alone
    ("アクスタ台座 透明 10個", ["other"]),
    ("鬼滅の刃 フィギュアケース 展示用", ["other"]),
    ("ねんどろいど 用 透明 ケース", ["other"]),
    ("ポケモンカード スリーブ ピカチュウ 64枚", ["other"]),    # card sleeves
    ("トップローダー 35pt ポケカ", ["other"]),
    ("ぬい服 20cm 制服", ["other"]),                          # clothes for a plush
    ("ぬいぐるみ用 衣装 ハンドメイド", ["other"]),
    ("缶バッジカバー 57mm 100枚", ["other"]),
    ("ポスターフレーム B2", ["other"]),
    ("DVDケース 空 10枚", ["other"]),
    ("Switch 本体 有機EL", ["other"]),
])
def test_accessories_are_not_the_type(title, expected):
    assert classify(title) == expected


@pytest.mark.parametrize("title, expected", [
    ("フィギュア ケース付き ワンピース", ["figure"]),           # the accessory comes with the item
    ("ポケカ スリーブ付き 20枚", ["trading_card"]),
    ("ブルーロック アクスタ 台座なし", ["acrylic_stand"]),      # the accessory is missing, the item is there
    ("鬼滅の刃 タペストリー 棒なし", ["poster_tapestry"]),
])
def test_an_accessory_that_comes_with_or_is_missing_excludes_nothing(title, expected):
    assert classify(title) == expected


@pytest.mark.parametrize("title, expected", [
    ("缶バッジ風 ステッカー 五条悟", ["other"]),
    ("アクスタ風 スマホスタンド", ["other"]),
    ("ぬいぐるみ風 クッション", ["other"]),
    ("アクスタ～風 キーホルダー", ["other"]),               # a tilde before 風
])
def test_look_alikes_are_not_the_type(title, expected):
    assert classify(title) == expected


@pytest.mark.parametrize("title, expected", [
    ("ちいかわ ぬいぐるみ ハチワレ 【検索用】アクスタ 缶バッジ", ["plush"]),
    ("呪術廻戦 缶バッジ 五条悟 アクスタ ぬい 好きな方にも", ["can_badge"]),
    ("ハイキュー アクキー 及川 クリアファイル ポスター 等お探しの方", ["acrylic_keychain"]),
    ("五条悟 ぬいぐるみ #呪術廻戦 #アクスタ #缶バッジ", ["plush"]),
    ("ツイステ ラバスト エペル 関連 アクスタ 缶バッジ", ["rubber_strap"]),
    ("ブルーロック アクスタ 潔 ※缶バッジ ラバストも出品中", ["acrylic_stand"]),
    # the marker addresses fans of a character, not a list of goods: the bundle stays whole
    ("呪術廻戦 缶バッジ アクスタ まとめ売り 五条 好きな方に", ["acrylic_stand", "can_badge"]),
    # 関連 after the franchise only: a bundle of related goods
    ("呪術廻戦 関連グッズ まとめ 缶バッジ アクスタ", ["acrylic_stand", "can_badge"]),
    # the item is named among the search words only: the first of them is kept
    ("ちいかわ ぬいぐるみ 好きな方に", ["plush"]),
    ("#呪術廻戦 #五条悟 #アクスタ", ["acrylic_stand"]),
    # the item is goods outside the taxonomy: the search words add nothing
    ("呪術廻戦 タオル 五条 アクスタ 缶バッジ 好きな方にも", ["other"]),
])
def test_keyword_stuffing_adds_no_goods_type(title, expected):
    assert classify(title) == expected


@pytest.mark.parametrize("title, expected", [
    ("Jujutsu Kaisen Gojo acrylic stand", ["acrylic_stand"]),
    ("Chiikawa plushies lot", ["plush"]),
    ("Demon Slayer nendoroid Tanjiro", ["figure"]),
    ("Haikyu can badges set of 5", ["can_badge"]),
    ("Pokemon cards bulk", ["trading_card"]),
    ("akusuta Gojo Satoru", ["acrylic_stand"]),
    ("nuigurumi chiikawa", ["plush"]),
    ("Spy x Family Blu-ray", ["disc"]),
    ("ＡＣＲＹＬＩＣ ＳＴＡＮＤ 呪術廻戦", ["acrylic_stand"]),
])
def test_english_and_romaji(title, expected):
    assert classify(title) == expected


def test_latin_terms_match_whole_words_only():
    assert classify("abcd efg") == ["other"]          # no "cd" inside a word
    assert classify("ドラクエ11 3DS") == ["game"]     # "3ds", not "ds" after a digit... still a game
    assert classify("Peter Parker figure") == ["figure"]


def test_a_bundle_has_every_type_it_sells_in_the_taxonomy_order():
    assert classify("呪術廻戦 ラバスト 缶バッジ アクキー 色紙 まとめ") == [
        "acrylic_keychain", "can_badge", "rubber_strap", "shikishi"]


def test_other_only_when_nothing_matched():
    assert classify("ちいかわ ステッカー セット") == ["other"]
    assert classify("") == ["other"]
    assert "other" not in classify("ちいかわ ステッカー ぬいぐるみ セット")


@pytest.mark.parametrize("title, expected", [
    ("遊戯王 カード まとめ売り", ["trading_card"]),            # weak カード, nothing stronger
    ("アクスタ カード付き", ["acrylic_stand"]),                # カード is not a trading card beside a stand
    ("呪術廻戦 全巻セット 0-27巻", ["comic"]),
    ("鬼滅の刃 DVD 全巻セット", ["disc"]),                     # volumes of discs
    ("葬送のフリーレン 12巻 特装版 アクスタ付き", ["acrylic_stand", "comic"]),  # volumes yield to discs, not stands
])
def test_weak_terms_count_only_without_a_stronger_type(title, expected):
    assert classify(title) == expected


def test_a_taxonomy_from_data_drives_the_classifier():
    data = {
        "matching": {"for_words": ["用"]},
        "stuffing": {"after": ["検索用"]},
        "types": [
            {"id": "mug", "terms": ["マグカップ", "mug"], "accessories": ["スリーブ"]},
            {"id": "other", "terms": ["タオル"]},
        ],
    }
    classifier = Classifier(parse_taxonomy(data, "test"))
    assert classifier.classify("ちいかわ マグカップ") == ["mug"]
    assert classifier.classify("ﾏｸﾞｶｯﾌﾟ用 スリーブ") == ["other"]
    assert classifier.classify("ちいかわ マグカップ スリーブ") == ["other"]
    assert classifier.classify("ちいかわ タオル 検索用 マグカップ") == ["other"]
    assert classifier.classify("Chiikawa mugs") == ["mug"]


def test_skipping_the_word_sets_none_of_whose_heads_occurs_changes_no_answer():
    """The classifier searches only the word sets one of whose heads (a word up to its first space) occurs in the
    title: every labelled title (both parts) gets the answer, and the goods words' spans, of a classifier that
    searches every set; and most sets are skipped."""
    from pathlib import Path

    from lib.segments.classify import Classifier
    from lib.segments.normalize import compact, normalize

    here = Path(__file__).parent
    titles = [line.split("\t")[0] for name in ("titles_tuning.tsv", "titles_held_out.tsv")
              for line in (here / name).read_text(encoding="utf-8").splitlines()[1:]]
    skipping, searching = Classifier(), Classifier()
    every = {(t.id, weak) for t in searching._matched for weak in (False, True)}
    searching._heads.present = lambda text: set(every)  # type: ignore[method-assign]
    assert [skipping.classify(t) for t in titles] == [searching.classify(t) for t in titles]
    folded = [skipping.searched_text(t) for t in titles]
    assert [skipping.term_spans(f) for f in folded] == [searching.term_spans(f) for f in folded]  # characters' masks
    assert len(titles) > 800
    searched = sum(len(skipping._heads.present(compact(skipping.without_stuffing(normalize(t))))) for t in titles)
    assert searched < len(titles) * len(every) / 6


def test_a_head_is_found_wherever_its_words_match():
    """Heads cover what a match may look like: a Latin word with its space dropped or a plural, a word anywhere in
    the title, a one-character word; a type with patterns is always searched."""
    data = {
        "types": [
            {"id": "stand", "terms": ["acrylic stand", "アクスタ"]},
            {"id": "cd", "terms": ["cd"], "weak_terms": ["盤"]},
            {"id": "fig", "terms": ["フィギュア"], "patterns": ["ねんど?ろいど"]},
            {"id": "other", "terms": []},
        ],
    }
    classifier = Classifier(parse_taxonomy(data, "test"))
    assert classifier.classify("五条 acrylicstands") == ["stand"]
    assert classifier.classify("五条 acrylic stand") == ["stand"]
    assert classifier.classify("五条悟アクスタ") == ["stand"]
    assert classifier.classify("五条 cds") == ["cd"]
    assert classifier.classify("初回 盤") == ["cd"]
    assert classifier.classify("五条 ねんろいど") == ["fig"]
    assert classifier._heads.present("x") == {("fig", False)}  # its weak terms: none, so never searched
