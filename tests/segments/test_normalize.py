"""Normalization: the spellings sellers use for one word meet in one form."""

import pytest

from lib.segments.normalize import compact, fold, normalize


@pytest.mark.parametrize("variants", [
    ["アクスタ", "ｱｸｽﾀ", "あくすた"],                          # half-width katakana, hiragana
    ["ラバーストラップ", "ﾗﾊﾞｰｽﾄﾗｯﾌﾟ", "ラバー ストラップ", "ラバ－ストラップ"],  # voiced marks, spaces, full-width dash
    ["キーホルダー", "キーホルダ", "キ〜ホルダ〜", "キーホルダー"],       # long vowel dropped or typed as a tilde
    ["タペストリー", "タペストリ〜", "タペストリ～", "タペストリ—"],
    ["CD", "ＣＤ", "cd"],                                       # full-width Latin, case
    ["Blu-ray", "ｂｌｕ－ｒａｙ", "blu ray"],
    ["【新品】ぬいぐるみ", "★新品★ ぬいぐるみ", "新品・ぬいぐるみ"],   # brackets and symbols separate words
])
def test_spellings_of_one_word_fold_to_one_form(variants):
    assert len({fold(v) for v in variants}) == 1, {v: fold(v) for v in variants}


def test_normalize_keeps_words_apart_and_fold_runs_them_together():
    assert normalize("【新品未開封】呪術廻戦　五条悟 アクスタ") == "新品未開封 呪術廻戦 五条悟 あくすた"
    assert fold("【新品未開封】呪術廻戦　五条悟 アクスタ") == "新品未開封呪術廻戦五条悟あくすた"
    # Latin words stay apart: a whole-word match of "cd" must not see "cddvd" or "5cd"
    assert fold("5 CD DVD ＢＯＸ") == "5 cd dvd box"


def test_a_dash_is_a_long_vowel_after_kana_and_a_separator_elsewhere():
    assert normalize("ポスタ—") == "ぽすたー"
    assert normalize("1〜20巻") == "1 20巻"
    assert normalize("S.H.Figuarts") == "s h figuarts"
    assert normalize("〜〜ちいかわ〜〜") == "ちいかわー"


def test_only_a_word_final_long_vowel_is_dropped():
    assert fold("カード") == "かーど"           # inside the word it tells カード from かど
    assert fold("ポスター 鬼滅") == "ぽすた鬼滅"
    assert fold("ポスターフレーム") == "ぽすたーふれーむ"


def test_hashtags_are_kept_for_the_stuffing_rules():
    assert normalize("#呪術廻戦 #アクスタ") == "#呪術廻戦 #あくすた"


def test_compact_of_normalize_is_fold():
    title = "ＴＶアニメ『鬼滅の刃』ＣＤ サウンドトラック ｾｯﾄ"
    assert compact(normalize(title)) == fold(title) == "tvあにめ鬼滅の刃cdさうんどとらっくせっと"
