"""One spelling for the many ways a Mercari seller types the same word: what titles and terms are matched on.

Two forms. ``normalize`` keeps the words apart (the stuffing rules read words); ``fold`` is what terms are
looked for in, the words run together the way Japanese is written without spaces.

- NFKC: half-width katakana to full width (ｱｸｽﾀ → アクスタ, voiced marks composed), full-width Latin and
  digits to ASCII (ＣＤ → CD), compatibility forms (① → 1); then lower case.
- Katakana folded to hiragana (jaconv), so ヌイグルミ and ぬいぐるみ are one word.
- A dash or tilde after kana is a long vowel (ポスタ— and タペストリ〜 are ポスター and タペストリー); elsewhere it
  is a separator (blu-ray, 1〜20巻). A long vowel ending a run of kana is dropped in the folded form, so
  キーホルダ and キーホルダー meet (only at the end: inside a word it tells カード from かど).
- Other symbols and brackets (【】・×★/) separate words, except ``#``, which starts a hashtag.
- Folded: spaces are dropped except between two ASCII letters or digits (ラバー ストラップ is ラバーストラップ,
  "acrylic stand" stays two words).
"""

from __future__ import annotations

import re
import unicodedata

import jaconv

#: Long-vowel marks, dashes and tildes as NFKC leaves them (ｰ has become ー, － "-", ～ "~").
DASHES = frozenset("ー-‐‑‒–—―−~〜〰")
LONG_VOWEL = "ー"
#: Kept though a symbol: it starts a hashtag, which the stuffing rules read.
KEPT_SYMBOLS = frozenset("#")

_SPACES = re.compile(r"\s+")
_TRAILING_LONG_VOWEL = re.compile(r"ー(?![ぁ-ゖゝゞゔ])")
_SPACE_BETWEEN_ALNUM = re.compile(r"(?<=[a-z0-9]) (?=[a-z0-9])")


def is_kana(char: str) -> bool:
    """Hiragana (katakana is folded to it before this is asked), the long-vowel mark and the iteration marks."""
    return "ぁ" <= char <= "ゖ" or char in "ゝゞーゔ"


def is_ascii_alnum(char: str) -> bool:
    return char.isascii() and char.isalnum()


def normalize(text: str) -> str:
    """``text`` in one spelling, words kept apart by single spaces."""
    text = jaconv.kata2hira(unicodedata.normalize("NFKC", text).lower())
    out: list[str] = []
    for char in text:
        if char in DASHES:
            # after kana a long vowel (squeezed: ーー is ー), elsewhere a separator
            if out and is_kana(out[-1]):
                if out[-1] != LONG_VOWEL:
                    out.append(LONG_VOWEL)
            else:
                out.append(" ")
        elif char.isalnum() or char in KEPT_SYMBOLS or unicodedata.category(char)[0] in "LMN":
            out.append(char)
        else:
            out.append(" ")
    return _SPACES.sub(" ", "".join(out)).strip()


def compact(normalized: str) -> str:
    """A ``normalize``d text with its words run together (spaces stay only between ASCII letters or digits) and
    a long vowel that ends a run of kana dropped."""
    kept = _SPACE_BETWEEN_ALNUM.sub("\0", normalized).replace(" ", "").replace("\0", " ")
    return _TRAILING_LONG_VOWEL.sub("", kept)


def fold(text: str) -> str:
    """What terms are matched in: ``compact(normalize(text))``."""
    return compact(normalize(text))
