"""Titles of the realistic market's listings, made when read: a week of a large IP lists hundreds of thousands,
and most are only counted, never shown."""

from __future__ import annotations

import random
from dataclasses import dataclass

from lib.standins.simulator.titles import AFTER, BEFORE, CHARACTERS, GOODS


@dataclass(frozen=True, slots=True)
class Title:
    """A listing's title: drawn from (``seed``, ``key``) for the IP's ``keyword`` and ``goods``, then ``tweak``
    appended (a relist's changed word; empty for the first listing and a relist that kept its title)."""

    seed: int
    keyword: str
    goods: str
    key: str
    tweak: str = ""

    @property
    def text(self) -> str:
        rng = random.Random(f"{self.seed}\x00{self.key}")
        roster = CHARACTERS.get(self.keyword, ())
        person = f" {rng.choice(roster)}" if roster and rng.random() < 0.6 else ""
        words = rng.choice(GOODS[self.goods][1]) if self.goods in GOODS else self.goods
        return " ".join(f"{rng.choice(BEFORE)}{self.keyword}{person} {words}{rng.choice(AFTER)}".split()) + self.tweak


def make_title(seed: int, keyword: str, goods: str, key: str) -> Title:
    return Title(seed, keyword, goods, key)
