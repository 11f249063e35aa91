"""The realistic market: IPs of every size, with cycles, trends and bursts, sellers who relist, auctions.

Nothing is stored. Each IP (a keyword) has a profile drawn from (seed, keyword); the listings created in one hour
of an IP are drawn from (seed, keyword, hour): a Poisson number at the hour's rate, each with its whole story
(lib/standins/simulator/stories.py). A listing relisted after ``d`` days is deleted then and listed again under
a new id by the same seller, so the listings created in an hour are that hour's new ones and the relists of
listings created ``d`` days before (a relisted listing is not relisted again). Every trait's value and the
public fact it comes from are in ``market_traits.toml``; docs/concepts/simulator.md describes the model.
"""

from __future__ import annotations

import bisect
import hashlib
import math
import random
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from itertools import accumulate

from lib.standins.simulator.stories import Auction, Burst, ListingStory, PricePoint
from lib.standins.simulator.story_titles import Title, make_title
from lib.standins.simulator.traits import Traits, load_traits

HOUR = 3600.0
DAY = 24 * HOUR
#: The lowest price a listing can have on the site.
MIN_PRICE = 300


def digest(*parts: object) -> int:
    """A stable 64-bit number of ``parts`` (Python's ``hash`` of a string changes between processes)."""
    text = "\x00".join(str(p) for p in parts)
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def poisson(rng: random.Random, mean: float) -> int:
    """A Poisson draw (Knuth's product of uniforms; a rounded normal above 50, where the two agree)."""
    if mean <= 0:
        return 0
    if mean > 50:
        return max(0, round(rng.gauss(mean, math.sqrt(mean))))
    limit, k, product = math.exp(-mean), 0, rng.random()
    while product > limit:
        k += 1
        product *= rng.random()
    return k


@dataclass(frozen=True)
class IpProfile:
    """What makes one IP's market its own.

    Parameters:
        keyword: the IP's search keyword.
        size: new listings an hour at a mean hour of the week, before trend and bursts.
        price_level: its prices against the goods types' medians.
        liquidity: multiplies its listings' chance to sell.
        trend_amplitude, trend_period_days, trend_phase: its slow rise and fall (see ``trend``).
        goods: goods type ids, and ``goods_cum``: their cumulative weights in its mix.
        sellers: how many sellers list its goods.
    """

    keyword: str
    size: float
    price_level: float
    liquidity: float
    trend_amplitude: float
    trend_period_days: float
    trend_phase: float
    goods: tuple[str, ...]
    goods_cum: tuple[float, ...]
    sellers: int


class MarketModel:
    """The realistic market of a seed: profiles, listings and their stories, as pure functions of time.

    Parameters:
        seed: every draw derives from it (the same seed, the same market).
        traits: the traits (default: the shipped ``market_traits.toml``).
        sizes: fixed sizes (new listings an hour) for some keywords, instead of drawn ones.
        bursts: fixed bursts for some keywords, instead of drawn ones.
        cache_hours: how many IP-hours of listings are kept once drawn.
    """

    def __init__(self, seed: int = 0, traits: Traits | None = None, *, sizes: Mapping[str, float] | None = None,
                 bursts: Mapping[str, tuple[Burst, ...]] | None = None, cache_hours: int = 16384) -> None:
        self.seed = seed
        self.traits = traits if traits is not None else load_traits()
        self._sizes = dict(sizes or {})
        self._bursts = dict(bursts or {})
        self._cache_hours = cache_hours
        self._roots: OrderedDict[tuple[str, int], tuple[ListingStory, ...]] = OrderedDict()
        self._created: OrderedDict[tuple[str, int], tuple[ListingStory, ...]] = OrderedDict()
        self._profiles: dict[str, IpProfile] = {}
        self._sellers: dict[str, tuple[tuple[float, ...], tuple[str, ...]]] = {}
        self._goods = dict(self.traits.goods)
        self._lock = threading.Lock()  # the simulator's server answers from several threads

    # -- an IP ----------------------------------------------------------------------------------------
    def profile(self, keyword: str) -> IpProfile:
        if keyword not in self._profiles:
            self._profiles[keyword] = self._draw_profile(keyword)
        return self._profiles[keyword]

    def _draw_profile(self, keyword: str) -> IpProfile:
        rng = random.Random(digest(self.seed, keyword, "profile"))
        t = self.traits
        sizes, spread = t.sizes, t.ips
        u = rng.random()
        # the inverse of a Pareto's distribution function truncated to [minimum, maximum]
        ratio = (sizes.minimum / sizes.maximum) ** sizes.tail_index
        size = sizes.minimum / (1 - u * (1 - ratio)) ** (1 / sizes.tail_index)
        size = self._sizes.get(keyword, dict(sizes.known).get(keyword, size))
        price_level = math.exp(rng.gauss(0, spread.price_level_sd))
        liquidity = math.exp(rng.gauss(0, spread.liquidity_sd))
        amplitude = rng.gauss(0, t.trend.amplitude_sd)
        period = rng.uniform(*t.trend.period_days)
        phase = rng.uniform(0, 2 * math.pi)
        names = tuple(name for name, _ in t.goods)
        weights = [goods.weight * math.exp(rng.gauss(0, spread.goods_mix_sd)) for _, goods in t.goods]
        sellers = max(spread.min_sellers, round(size * spread.sellers_per_listing_hour))
        return IpProfile(keyword, size, price_level, liquidity, amplitude, period, phase, names,
                         tuple(accumulate(weights)), sellers)

    def trend(self, keyword: str, t: float) -> float:
        p = self.profile(keyword)
        return math.exp(p.trend_amplitude * math.sin(2 * math.pi * t / DAY / p.trend_period_days + p.trend_phase))

    def cycle(self, t: float) -> float:
        """The daily and weekly cycle's multiplier at ``t`` (local time of the site)."""
        c = self.traits.cycle
        local = t + c.utc_offset_hours * HOUR
        hour = int(local // HOUR) % 24
        weekday = (int(local // DAY) + 3) % 7  # 1970-01-01 was a Thursday (Monday = 0)
        return c.daily[hour] * c.weekly[weekday]

    def bursts(self, keyword: str, start: float, end: float) -> tuple[Burst, ...]:
        """The IP's bursts overlapping [start, end)."""
        if keyword in self._bursts:
            return tuple(b for b in self._bursts[keyword] if b.end > start and b.start < end)
        b = self.traits.bursts
        period = b.period_days * DAY
        out: list[Burst] = []
        for k in range(int(start // period) - 1, int(end // period) + 1):
            rng = random.Random(digest(self.seed, keyword, "bursts", k))
            for _ in range(poisson(rng, b.per_period)):
                kind = rng.choices(b.kinds, weights=[kind.weight for kind in b.kinds])[0]
                begin = k * period + rng.uniform(0, period)
                burst = Burst(kind.name, begin, begin + kind.days * DAY, kind.factor)
                if burst.end > start and burst.start < end:
                    out.append(burst)
        return tuple(sorted(out, key=lambda burst: burst.start))

    def burst_factor(self, keyword: str, t: float) -> float:
        return max([1.0, *(b.factor for b in self.bursts(keyword, t, t + 1))])

    def rate(self, keyword: str, t: float) -> float:
        """New listings an hour of the IP at ``t`` (constant within each hour: its value at the hour's middle)."""
        middle = (t // HOUR + 0.5) * HOUR
        return (self.profile(keyword).size * self.cycle(middle) * self.trend(keyword, middle)
                * self.burst_factor(keyword, middle))

    # -- its listings ------------------------------------------------------------------------------------
    def _cached(self, cache: OrderedDict[tuple[str, int], tuple[ListingStory, ...]], key: tuple[str, int],
                make: tuple[ListingStory, ...] | None) -> tuple[ListingStory, ...] | None:
        with self._lock:
            if make is None:
                found = cache.get(key)
                if found is not None:
                    cache.move_to_end(key)
                return found
            cache[key] = make
            if len(cache) > self._cache_hours:
                cache.popitem(last=False)
            return make

    def new_listings(self, keyword: str, hour: int) -> tuple[ListingStory, ...]:
        """The listings of new goods created in hour ``hour`` (seconds since the epoch // 3600)."""
        key = (keyword, hour)
        found = self._cached(self._roots, key, None)
        if found is None:
            rng = random.Random(digest(self.seed, keyword, "hour", hour))
            count = poisson(rng, self.rate(keyword, hour * HOUR))
            found = self._cached(self._roots, key, tuple(self._root(keyword, hour, i, rng) for i in range(count)))
        assert found is not None
        return found

    def created_in(self, keyword: str, hour: int) -> tuple[ListingStory, ...]:
        """Every listing created in hour ``hour``, new goods and relists, newest first."""
        key = (keyword, hour)
        found = self._cached(self._created, key, None)
        if found is not None:
            return found
        relists: list[ListingStory] = []
        low, high = self.traits.relists.after_days
        for days in range(low, high + 1):
            for origin in (hour - 24 * days, hour - 24 * days - 1):
                for story in self.new_listings(keyword, origin):
                    if story.relisted_as is not None and story.ended_at is not None \
                            and int(story.ended_at // HOUR) == hour:
                        relists.append(self._relist(story))
        stories = sorted((*self.new_listings(keyword, hour), *relists), key=lambda s: s.created, reverse=True)
        made = self._cached(self._created, key, tuple(stories))
        assert made is not None
        return made

    def listings(self, keyword: str, start: float, end: float) -> Iterator[ListingStory]:
        """Every listing created in [start, end), newest first."""
        for hour in range(math.ceil(end / HOUR) - 1, int(start // HOUR) - 1, -1):
            for story in self.created_in(keyword, hour):
                if start <= story.created < end:
                    yield story

    def story(self, keyword: str, listing_id: str, near: float, hours: float = 24 * 14) -> ListingStory | None:
        """The story of listing ``listing_id`` of ``keyword`` created within ``hours`` before ``near``."""
        for story in self.listings(keyword, near - hours * HOUR, near + HOUR):
            if story.id == listing_id:
                return story
        return None

    # -- one listing's draws -----------------------------------------------------------------------------
    def _seller(self, keyword: str, u: float) -> str:
        sellers = self._sellers.get(keyword)
        if sellers is None:
            zipf, count = self.traits.ips.seller_zipf, self.profile(keyword).sellers
            sellers = self._sellers[keyword] = (
                tuple(accumulate(1 / (rank + 1) ** zipf for rank in range(count))),
                tuple(str(100_000_000 + digest(self.seed, keyword, "seller", rank) % 900_000_000)
                      for rank in range(count)))
        cum, ids = sellers
        return ids[min(len(ids) - 1, bisect.bisect_right(cum, u * cum[-1]))]

    def _root(self, keyword: str, hour: int, index: int, rng: random.Random) -> ListingStory:
        t, profile = self.traits, self.profile(keyword)
        draw, gauss = rng.random, rng.gauss
        # every draw is made whatever the branches taken, so a listing's draws never shift another's
        created = (hour + draw()) * HOUR
        low, high = t.search.index_delay_seconds
        delay = low + (high - low) * draw()
        goods = profile.goods[bisect.bisect_right(profile.goods_cum, draw() * profile.goods_cum[-1])]
        kind = self._goods[goods]
        median = kind.median_price * profile.price_level
        price = max(MIN_PRICE, int(round(median * math.exp(gauss(0, kind.price_sd)), -1)))
        seller = self._seller(keyword, draw())
        is_auction = draw() < t.auctions.share
        sells_u, time_z = draw(), gauss(0, t.selling.time_sd)
        cut_u, cut_after_u, cut_factor_u = draw(), draw(), draw()
        relist_u, relist_days_u = draw(), draw()
        trade_u = draw()
        ident, relist_id = f"m{int(draw() * 9e10) + 10**10}", f"m{int(draw() * 9e10) + 10**10}"
        low, high = t.selling.trade_hours
        trade = (low + (high - low) * trade_u) * HOUR
        title = make_title(self.seed, keyword, goods, ident)
        if is_auction:
            return self._auction(keyword, ident, seller, goods, title, created, delay, price, trade, profile)
        sale = self._sale_after(goods, price, median, profile.liquidity, sells_u, time_z)
        prices: tuple[PricePoint, ...] = (PricePoint(created, price),)
        cuts = t.price_cuts
        if cut_u < cuts.share:
            after = cuts.after_hours[0] + (cuts.after_hours[1] - cuts.after_hours[0]) * cut_after_u
            factor = cuts.factor[0] + (cuts.factor[1] - cuts.factor[0]) * cut_factor_u
            lower = max(MIN_PRICE, int(round(price * factor, -1)))
            if lower < price:  # a listing at the lowest price has nothing to cut
                prices += (PricePoint(created + after * HOUR, lower),)
        low_days, high_days = t.relists.after_days
        relist_at = (created + (low_days + int(relist_days_u * (high_days - low_days + 1))) * DAY
                     if relist_u < t.relists.share else None)
        sold_at: float | None = None
        ended_at: float | None = None
        relisted_as: str | None = None
        if relist_at is not None and (sale is None or created + sale > relist_at):
            ended_at, relisted_as = relist_at, relist_id
        elif sale is not None:
            sold_at = created + sale
        else:
            ended_at = created + t.selling.life_hours * HOUR
        end = sold_at if sold_at is not None else ended_at
        if len(prices) > 1 and end is not None and prices[1].at >= end:
            prices = prices[:1]
        return ListingStory(ident, keyword, seller, goods, title, created, delay, prices, sold_at,
                            None if sold_at is None else sold_at + trade, ended_at, None, None, relisted_as,
                            created)

    def _sale_after(self, goods: str, price: float, median: float, liquidity: float, u: float,
                    z: float) -> float | None:
        """Seconds from listing to sale (None: it does not sell before it leaves the search). Cheaper listings
        sell more often and sooner."""
        s, kind = self.traits.selling, self._goods[goods]
        relative = price / median
        chance = min(s.max_chance, kind.sell_chance * liquidity * relative ** -s.chance_elasticity)
        if u >= chance:
            return None
        wait = kind.median_hours * relative ** s.time_elasticity * math.exp(z) * HOUR
        return wait if wait < s.life_hours * HOUR else None

    def _auction(self, keyword: str, ident: str, seller: str, goods: str, title: Title, created: float,
                 delay: float, price: int, trade: float, profile: IpProfile) -> ListingStory:
        a = self.traits.auctions
        rng = random.Random(digest(self.seed, ident, "auction"))
        end = created + rng.uniform(*a.duration_hours) * HOUR
        start_price = max(MIN_PRICE, int(round(price * a.start_factor, -1)))
        count = poisson(rng, a.mean_bids * profile.liquidity)
        times = sorted(rng.uniform(created, end) for _ in range(count))
        bids = tuple(PricePoint(at, int(round(start_price + (price - start_price) * (i + 1) / count, -1)))
                     for i, at in enumerate(times))
        auction = Auction(str(digest(self.seed, ident) % 1_000_000), created, end, start_price, bids)
        sold_at = end if bids else None
        return ListingStory(ident, keyword, seller, goods, title, created, delay,
                            (PricePoint(created, start_price), *bids), sold_at,
                            None if sold_at is None else sold_at + trade, None if bids else end, auction, None,
                            None, created)

    def relist(self, old: ListingStory) -> ListingStory | None:
        """The listing that relists ``old`` (None: ``old`` was not relisted)."""
        return self._relist(old) if old.relisted_as is not None else None

    def _relist(self, old: ListingStory) -> ListingStory:
        """The new listing of ``old``'s goods by its seller, when ``old`` was deleted."""
        t = self.traits
        assert old.relisted_as is not None and old.ended_at is not None
        rng = random.Random(digest(self.seed, old.relisted_as))
        created = old.ended_at
        delay = rng.uniform(*t.search.index_delay_seconds)
        same, tweak = rng.random() < t.relists.same_title, rng.choice(t.relists.title_tweaks)
        title = old.title_of if same else replace(old.title_of, tweak=tweak)
        price = old.price_at(created)
        profile = self.profile(old.keyword)
        median = self._goods[old.goods].median_price * profile.price_level
        sale = self._sale_after(old.goods, price, median, profile.liquidity, rng.random(),
                                rng.gauss(0, t.selling.time_sd))
        trade = rng.uniform(*t.selling.trade_hours) * HOUR
        sold_at = created + sale if sale is not None else None
        return ListingStory(old.relisted_as, old.keyword, old.seller_id, old.goods, title, created, delay,
                            (PricePoint(created, price),), sold_at, None if sold_at is None else sold_at + trade,
                            None if sold_at is not None else created + t.selling.life_hours * HOUR, None, old.id,
                            None, old.first_listed)
