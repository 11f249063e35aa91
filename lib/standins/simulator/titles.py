"""Listing titles of the simulated market, with their truth: the goods types and characters
a title really carries, in proportions of real anime-goods listings.

The mix is an estimate from how second-hand anime goods are listed (badges, stands, cards and figures lead;
discs, games and novels trail), written down here, not measured: what matters to the tests is that every type
appears, often enough to be counted in a crawl of 5 + 5 pages, and that the hard titles of the labelled sample
occur too — several types in one bundle, slang and abbreviations, keyword stuffing after 検索用 (whose words are
*not* the listing's), accessories that are not their type (a stand's base alone: ``other``), English titles,
and titles with no type at all. Each listing's title is drawn from a generator of its own (seeded by keyword and
number), so the other fields of the listing draw exactly what they drew before titles carried goods.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

#: Goods type → (weight in the mix, the ways sellers write it). Ids as in lib/segments/goods_types.toml.
GOODS: dict[str, tuple[float, tuple[str, ...]]] = {
    "can_badge": (15, ("缶バッジ", "缶バッチ", "缶バ", "ホロ缶バッジ")),
    "acrylic_stand": (12, ("アクリルスタンド", "アクスタ", "アクリルスタンド BIG")),
    "trading_card": (11, ("トレカ", "カード", "ウエハース カード", "SR カード", "トレーディングカード")),
    "figure": (10, ("フィギュア", "プライズ フィギュア", "ねんどろいど", "figma", "スケールフィギュア")),
    "acrylic_keychain": (8, ("アクリルキーホルダー", "アクキー", "アクリルチャーム")),
    "plush": (8, ("ぬいぐるみ", "ぬいぐるみ マスコット", "ぬい", "もちころりん ぬいぐるみ")),
    "comic": (6, ("全巻セット", "漫画 1-10巻", "単行本", "コミック 既刊")),
    "rubber_strap": (4, ("ラバーストラップ", "ラバスト", "ラバーマスコット")),
    "poster_tapestry": (4, ("タペストリー", "B2タペストリー", "ポスター", "タペ")),
    "clear_file": (3, ("クリアファイル", "A4クリアファイル")),
    "apparel": (3, ("Tシャツ", "パーカー", "キャップ", "ソックス")),
    "disc": (3, ("Blu-ray", "DVD BOX", "BD", "サントラ CD")),
    "shikishi": (2, ("色紙", "ミニ色紙", "イラスト色紙")),
    "cosplay": (2, ("コスプレ衣装", "ウィッグ", "コスプレ 一式")),
    "game": (2, ("Switch ソフト", "PS5 ソフト", "ゲームソフト")),
    "novel": (2, ("小説", "ノベライズ 文庫", "ライトノベル")),
    "doujinshi": (2, ("同人誌", "同人誌 2冊")),
}
#: Titles with no goods type of the taxonomy (truth: ``other``), and a type's accessory alone (also ``other``).
OTHER = ("マグカップ", "ステッカー", "ランチョンマット", "ハンドタオル", "パスケース", "マフラータオル")
ACCESSORIES = ("アクスタ 台座のみ", "フィギュア 空箱", "カードスリーブ", "ぬい服 ハンドメイド")
#: English and romaji ways of writing some types.
ENGLISH = {"acrylic_stand": "acrylic stand", "acrylic_keychain": "acrylic keychain", "plush": "plush",
           "figure": "figure", "can_badge": "can badge"}
#: Decorations sellers add around the goods.
BEFORE = ("", "", "【新品未開封】", "【美品】", "公式 ", "非売品 ", "★まとめ売り★ ")
AFTER = ("", "", " 未開封", " セット", " 2点", " 美品", " 匿名配送", " 特典付き")
#: Characters of the demo's franchises (an IP without a roster has listings of no character).
CHARACTERS: dict[str, tuple[str, ...]] = {
    "鬼滅の刃": ("竈門炭治郎", "竈門禰豆子", "我妻善逸", "嘴平伊之助", "冨岡義勇", "煉獄杏寿郎"),
    "呪術廻戦": ("五条悟", "虎杖悠仁", "伏黒恵", "釘崎野薔薇", "夏油傑", "七海建人"),
    "推しの子": ("星野アイ", "星野アクア", "星野ルビー", "有馬かな", "黒川あかね"),
    "チェンソーマン": ("デンジ", "パワー", "マキマ", "早川アキ"),
    "葬送のフリーレン": ("フリーレン", "フェルン", "シュタルク", "ヒンメル"),
    "SPY×FAMILY": ("アーニャ", "ロイド", "ヨル", "ボンド"),
    "ブルーロック": ("潔世一", "蜂楽廻", "凪誠士郎", "千切豹馬"),
    "ハイキュー!!": ("日向翔陽", "影山飛雄", "孤爪研磨", "黒尾鉄朗"),
}
#: Shares of the mix: a title of two types (a bundle), keyword stuffing, an accessory alone, no type, English.
BUNDLE, STUFFED, ACCESSORY, NO_TYPE, IN_ENGLISH = 0.06, 0.06, 0.02, 0.05, 0.03
#: Of the titles with a roster: none, one or two characters named.
CHARACTER_SHARES = (0.35, 0.55, 0.10)


@dataclass(frozen=True)
class Title:
    """A listing's title and what it truly carries (``goods``: type ids, ``other`` alone when none;
    ``characters``: the roster names it names, stuffing excluded)."""

    text: str
    goods: tuple[str, ...]
    characters: tuple[str, ...]


def _rng(keyword: str, n: int) -> random.Random:
    return random.Random(int.from_bytes(hashlib.sha1(f"title:{keyword}:{n}".encode()).digest()[:8], "big"))


#: Types never bundled together in one title: "小説 全巻セット" is a set of novels, not novels and comics.
APART = {"comic": ("novel",), "novel": ("comic",)}


def _pick_type(rng: random.Random, exclude: tuple[str, ...] = ()) -> str:
    kinds = [k for k in GOODS if k not in exclude]
    return rng.choices(kinds, weights=[GOODS[k][0] for k in kinds])[0]


def make_title(keyword: str, n: int) -> Title:
    """The title of listing ``n`` of ``keyword``, and its truth."""
    rng = _rng(keyword, n)
    roster = CHARACTERS.get(keyword, ())
    named: tuple[str, ...] = ()
    if roster:
        count = rng.choices((0, 1, 2), weights=CHARACTER_SHARES)[0]
        named = tuple(rng.sample(roster, min(count, len(roster))))
    draw = rng.random()
    before, after = rng.choice(BEFORE), rng.choice(AFTER)
    number = f"{n % 1000:03d}"
    people = " ".join(named)
    if draw < NO_TYPE:
        return Title(f"{before}{keyword} {people} {rng.choice(OTHER)}{after} {number}".replace("  ", " "), ("other",),
                     named)
    if draw < NO_TYPE + ACCESSORY:
        return Title(f"{keyword} {people} {rng.choice(ACCESSORIES)} {number}".replace("  ", " "), ("other",), named)
    kind = _pick_type(rng)
    words = rng.choice(GOODS[kind][1])
    if draw < NO_TYPE + ACCESSORY + IN_ENGLISH and kind in ENGLISH:
        return Title(f"{keyword} {ENGLISH[kind]} {people} {number}".replace("  ", " "), (kind,), named)
    goods: tuple[str, ...] = (kind,)
    if draw < NO_TYPE + ACCESSORY + IN_ENGLISH + BUNDLE:
        second = _pick_type(rng, exclude=(kind, *APART.get(kind, ())))
        words = f"{words} {rng.choice(GOODS[second][1])} まとめ"
        goods = tuple(sorted((kind, second)))
    text = f"{before}{keyword} {people} {words}{after} {number}"
    if draw > 1 - STUFFED:  # other goods named for the search only: not this listing's
        stuffing = _pick_type(rng, exclude=(kind,))
        text += f" 検索用 {rng.choice(GOODS[stuffing][1])}"
    return Title(" ".join(text.split()), goods, named)
