"""Titles of the realistic market's listings, made when read: a week of a large IP lists hundreds of thousands,
and most are only counted, never shown."""

from __future__ import annotations

import functools
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
        return _drawn(self.seed, self.keyword, self.goods, self.key) + self.tweak


#: A listing's title is made each time a page shows it (every crawl of its IP while it is on the pages read):
#: drawing it again seeds a generator from a string, the simulator's largest cost per listing served.
@functools.lru_cache(maxsize=1 << 16)
def _drawn(seed: int, keyword: str, goods: str, key: str) -> str:
    rng = random.Random(f"{seed}\x00{key}")
    roster = CHARACTERS.get(keyword, ())
    person = f" {rng.choice(roster)}" if roster and rng.random() < 0.6 else ""
    words = rng.choice(GOODS[goods][1]) if goods in GOODS else goods
    return " ".join(f"{rng.choice(BEFORE)}{keyword}{person} {words}{rng.choice(AFTER)}".split())


def make_title(seed: int, keyword: str, goods: str, key: str) -> Title:
    return Title(seed, keyword, goods, key)
