"""The "similar items" the site pads search pages with past the real results: listings of other franchises whose
titles never match the searched keyword after the segments' normalization (``lib.segments.normalize.fold``),
from the franchises of ``[search]`` of ``market_traits.toml``."""

from __future__ import annotations

import math
import random

from lib.segments.normalize import fold
from lib.standins.simulator.model import DAY, HOUR, MIN_PRICE, MarketModel, digest
from lib.standins.simulator.stories import ListingStory, PricePoint
from lib.standins.simulator.story_titles import make_title

#: How many titles are tried for one position before the position is left out.
ATTEMPTS = 8


def padding(model: MarketModel, keyword: str, sold: bool, t: float, count: int) -> list[ListingStory]:
    """The first ``count`` padding listings of a search for ``keyword`` at ``t`` (on sale, or sold when
    ``sold``): the same within an hour, like the site's recommendations."""
    search = model.traits.search
    hour = int(t // HOUR)
    needle = fold(keyword)
    others = [k for k in search.padding_keywords if needle not in fold(k) and fold(k) not in needle]
    out: list[ListingStory] = []
    position = 0
    while len(out) < count and others and position < count * 2:
        rng = random.Random(digest(model.seed, "padding", keyword, sold, hour, position))
        position += 1
        for _ in range(ATTEMPTS):
            other = rng.choice(others)
            profile = model.profile(other)
            goods = rng.choice(profile.goods)
            ident = f"m{int(rng.random() * 9e10) + 10**10}"
            title = make_title(model.seed, other, goods, ident)
            if needle and needle in fold(title.text):
                continue
            kind = dict(model.traits.goods)[goods]
            price = max(MIN_PRICE, int(round(kind.median_price * math.exp(rng.gauss(0, kind.price_sd)), -1)))
            created = t - rng.uniform(HOUR, 7 * DAY)
            sold_at = rng.uniform(created, t - HOUR / 2) if sold else None
            out.append(ListingStory(ident, other, str(100_000_000 + rng.randrange(900_000_000)), goods, title,
                                    created, 0.0, (PricePoint(created, price),), sold_at,
                                    None if sold_at is None else sold_at + HOUR / 4, None, None, None, None,
                                    created))
            break
    return out
