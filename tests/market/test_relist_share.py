"""The shops' relists that inflow still counts as new, estimated from the sample of checks (docs/concepts/measures.md,
"Estimates"): the estimator against a computation written here from its documented definition, its 95 % interval
against the truth of simulated windows, and the worker's result path drawing the sample, checking it first and the
window measures carrying the estimate."""

import hashlib
import math
import random
from dataclasses import replace

import pytest

from lib.core.redis_client import state_redis
from lib.core.settings import use_settings
from lib.market.processing import CrawlResult
from lib.market.relist_share import RelistSample, still_counted, without_relists
from lib.market.relists import BACKLOG_CRAWLS, drawn, sample_share, to_check
from lib.market.values import Estimate, Measure
from lib.market.windows import window_measures
from tests.market import test_relists
from tests.market.test_relists import DAY, OTHER, T0, Crawls, H, flows, item, shop

Z = 1.959963984540054
proc, ip = test_relists.proc, test_relists.ip  # the relists tests' fixtures: a result processor, an IP


def by_definition(rows):
    """A and Var(A), written from the definition, of rows (hour created, π or None where not drawn, True/False
    decided relist or None undecided): the sample is the drawn of the hours whose drawn are all decided, ρ its
    share of the drawn; the Hájek share over it, the relists still counted N·p̂ − D within [0, U], and
    N²·Σ (1 − ρπ)(y − p̃)²/π² ÷ (Σ 1/π)²."""
    open_hours = {h for h, s, r in rows if s is not None and r is None}
    sample = [(s, 1.0 if r else 0.0) for h, s, r in rows if s is not None and r is not None and h not in open_hours]
    drawn_count = sum(s is not None for _, s, _ in rows)
    n, k = len(sample), sum(y for _, y in sample)
    share = sum(y / s for s, y in sample) / sum(1 / s for s, _ in sample)
    decided_relists = sum(r is True for _, _, r in rows)
    undecided = sum(r is None for _, _, r in rows)
    value = min(max(len(rows) * share - decided_relists, 0), undecided)
    rho, p = n / drawn_count, (k + 2) / (n + 4)
    variance = len(rows) ** 2 * sum((1 - rho * s) * (y - p) ** 2 / s ** 2 for s, y in sample) \
        / sum(1 / s for s, _ in sample) ** 2
    return value, variance


def tally(rows):
    return RelistSample.of((T0 + h * H + 60, s, r) for h, s, r in rows)


def test_the_relists_still_counted_are_the_samples_share_of_all_less_those_decided():
    rows = ([(0, 0.5, True)] * 6 + [(1, 0.5, False)] * 4 + [(1, 0.25, True)] * 2  # drawn, their hours decided
            + [(2, 0.5, None), (2, 0.5, True), (2, 0.5, False)]  # an hour not decided yet: out of the sample
            + [(0, None, True)] * 5 + [(1, None, False)] * 7 + [(h % 3, None, None) for h in range(40)])
    sample = tally(rows)
    assert (sample.listings, sample.relists, sample.undecided, sample.drawn, sample.checked) == (
        len(rows), 6 + 2 + 1 + 5, 41, 15, 12)
    value, variance = still_counted(sample)
    expected, expected_variance = by_definition(rows)
    assert value == pytest.approx(expected) and variance == pytest.approx(expected_variance)
    assert 0 < value <= 41 and variance > 0


def test_nothing_is_estimated_without_a_decided_draw_or_an_undecided_listing():
    assert still_counted(tally([(0, 0.5, None), (0, None, None)])) is None  # nothing drawn decided
    assert still_counted(tally([(0, 0.5, True), (0, 0.5, None), (1, None, None)])) is None  # its hour still open
    assert still_counted(tally([(0, 1.0, True), (0, None, False)])) is None  # nothing undecided
    assert without_relists(Measure(30, 24), 30, None) == Measure(30, 24)


def test_every_listing_drawn_and_decided_but_the_newest_estimates_those():
    """Drawn with certainty, decided but for the newest hour's: those are the sample's share, with a variance
    (they may be either)."""
    rows = [(0, 1.0, True)] * 3 + [(0, 1.0, False)] * 7 + [(1, 1.0, None)] * 10
    value, variance = still_counted(tally(rows))
    assert value == pytest.approx(3.0) and variance > 0


def test_inflow_less_the_relists_still_counted_is_an_estimate_within_the_count():
    rows = [(0, 0.5, True)] * 5 + [(0, 0.5, False)] * 5 + [(1, None, None)] * 30
    sample = tally(rows)
    relists, variance = by_definition(rows)
    got = without_relists(Measure(100, 24), 100, sample)
    assert isinstance(got, Estimate) and got.n == 24
    assert got.value == pytest.approx(100 - relists, abs=0.05)
    low, high = got.interval
    assert low == pytest.approx(max(100 - relists - Z * math.sqrt(variance), 100 - 30), abs=0.05)
    assert high == pytest.approx(min(100 - relists + Z * math.sqrt(variance), 100), abs=0.05)
    # an estimated inflow's unseen spans hold as many for each listing as the count: scaled, variances added
    estimated = Estimate(200.0, 24, interval=(150.0, 260.0))
    got = without_relists(estimated, 100, sample)
    own = ((260.0 - 200.0) / Z) ** 2
    half = Z * math.sqrt(own * (1 - relists / 100) ** 2 + variance * 2 ** 2)
    assert got.value == pytest.approx(200 - 2 * relists, abs=0.05)
    assert got.interval == pytest.approx((max(got.value - half, 70), min(got.value + half, 260.0)), abs=0.05)


def simulated_window(rng):
    """One window of a busy IP's shops, crawled hourly: each crawl's new listings undecided or not, the undecided
    drawn with the worker's share for 20 checks a crawl; read backs deciding relists more often than copies (not
    at random), any hour's; the drawn ones checked the crawl after (those of the last crawl not yet), a check now
    and then telling nothing (out of the sample); the truth of each one."""
    relist_share = rng.uniform(0.1, 0.7)
    rows, truths, other = [], [], rng.randint(200, 2000)
    crawls = 24
    for crawl in range(crawls):
        batch = rng.randint(20, 120)
        share = sample_share(batch, 20)
        for _ in range(batch):
            truth = rng.random() < relist_share
            drawn_now = rng.random() < share
            read_back = rng.random() < (0.3 if truth else 0.1)
            told = drawn_now and crawl < crawls - 1
            if told and rng.random() < 0.05:
                drawn_now = told = False
            rows.append((crawl, share if drawn_now else None, truth if (read_back or told) else None))
            truths.append(truth)
    counted = other + sum(decided is not True for _, _, decided in rows)
    # the true inflow: the other new goods and every undecided or decided listing that is not a relist
    true_inflow = other + sum(not truth for truth in truths)
    return rows, counted, true_inflow


def test_the_intervals_hold_the_true_inflow_of_simulated_windows_as_often_as_they_claim():
    rng = random.Random(20261201)
    held, errors = [], []
    for _ in range(1000):
        rows, counted, true_inflow = simulated_window(rng)
        got = without_relists(Measure(counted, 24), counted, tally(rows))
        low, high = got.interval
        held.append(low <= true_inflow <= high)
        errors.append(got.value - true_inflow)
    # the 99 % binomial band of 95 % over 1,000 windows, and no bias beyond its own sampling
    assert 0.932 <= sum(held) / len(held) <= 0.968, sum(held) / len(held)
    mean = sum(errors) / len(errors)
    spread = math.sqrt(sum((e - mean) ** 2 for e in errors) / (len(errors) - 1))
    assert abs(mean) < 3 * spread / math.sqrt(len(errors)), (mean, spread)


def test_a_draw_is_a_hash_of_the_listing_unrelated_to_its_order():
    ids = [f"m{k:011d}" for k in range(20000)]
    assert [drawn(sid, 0.25) for sid in ids[:50]] == [drawn(sid, 0.25) for sid in ids[:50]]
    for share in (0.1, 0.5):
        got = sum(drawn(sid, share) for sid in ids) / len(ids)
        assert abs(got - share) < 4 * math.sqrt(share * (1 - share) / len(ids))
    # independent of the order: as often among the first half as among the second
    first, second = (sum(drawn(sid, 0.3) for sid in half) for half in (ids[:10000], ids[10000:]))
    assert abs(first - second) < 4 * math.sqrt(2 * 10000 * 0.21)
    assert all(drawn(sid, 1.0) for sid in ids[:100]) and not any(drawn(sid, 0.0) for sid in ids[:100])
    assert sample_share(10, 20) == 1.0 and sample_share(80, 20) == 0.25 and sample_share(5, 0) == 0.0


def test_drawn_listings_are_checked_first_and_past_the_backlog_bound(ip):
    from models import RelistUndecided

    most = 3
    def row(sid, created, earlier, share=None, relist=None, back=T0 - DAY):
        return {"ip_id": ip.id, "source_id": sid, "created": created, "back": back, "earlier": earlier,
                "share": share, "relist": relist}

    RelistUndecided.insert_many([
        *[row(f"n{k}", T0 + k, f"e{k}") for k in range(BACKLOG_CRAWLS * most + 1)],
        *[row(f"d{k}", T0 + 100 + k, f"f{k}", 0.5) for k in range(2)],
        row("old", T0 - 2 * DAY, "g", 0.5, back=T0 - 3 * DAY), row("done", T0, "h", 0.5, relist=True)]).execute()
    # past the bound the others wait; the drawn are checked, but not those decided, nor before ``since``
    assert to_check(ip.id, most, T0 - DAY) == ["f0", "f1"]
    RelistUndecided.delete().where(RelistUndecided.source_id == "n0").execute()
    assert to_check(ip.id, most, T0 - DAY) == ["f0", "f1", "e1"]


TITLES = [f"鬼滅の刃 アクスタ {name}" for name in (
    "炭治郎", "禰豆子", "善逸", "伊之助", "義勇", "しのぶ", "煉獄", "宇髄", "無一郎", "蜜璃", "小芭内", "実弥",
    "悲鳴嶼", "カナヲ", "玄弥", "炭十郎", "累", "猗窩座", "童磨", "黒死牟", "無惨", "鱗滝", "錆兎", "真菰",
    "愈史郎", "珠世", "魘夢", "妓夫太郎", "堕姫", "半天狗")]


def digest_draw(sid, share):
    return int.from_bytes(hashlib.blake2b(sid.encode(), digest_size=8).digest(), "big") < share * 2.0 ** 64


def test_the_worker_draws_a_shops_undecided_listings_checks_them_and_the_window_estimates_the_rest(
        proc, ip, settings):
    """A shop lists 30 goods it listed before, a day later, no crawl reading back past the first listings: 30
    undecided, each drawn with chance 20/30; a crawl checks the drawn ones and finds the even-numbered first
    listings deleted. The day's inflow is the count less the sample's share of relists among the rest, by the
    definition, and an estimate."""
    from lib.crawling.page_plan import plan_for
    from models import RelistUndecided

    crawl = Crawls(proc, ip)
    crawl(T0 + 60, item("base", T0 - H, "ちいかわ ぬいぐるみ", seller=OTHER))
    first = T0 + H - 600
    crawl(T0 + H, *[item(f"e{k}", first - k, title) for k, title in enumerate(TITLES)], *shop(first - 60))
    # pages that reach back to the crawl before, not to the first listings: no unseen span, nothing read back past
    mid = item("mid", T0 + DAY - 2500, "鬼滅の刃 ポスター", seller=OTHER)
    crawl(T0 + DAY - 2400, mid, item("mid0", first + 300, "鬼滅の刃 缶バッジ", seller=OTHER), whole=False)
    again = [T0 + DAY - 1800 + 100 * k for k in range(len(TITLES))]  # over two hours
    crawl(T0 + DAY + 1200, *[item(f"r{k}", at, title) for k, (at, title) in enumerate(zip(again, TITLES))], mid,
          whole=False)
    share = sample_share(len(TITLES), settings.scheduler_relist_checks)
    assert share == pytest.approx(2 / 3)
    stored = dict(RelistUndecided.select(RelistUndecided.source_id, RelistUndecided.share).tuples())
    in_sample = [k for k in range(len(TITLES)) if digest_draw(f"r{k}", share)]
    assert {sid for sid, s in stored.items() if s is not None} == {f"r{k}" for k in in_sample}
    assert all(s == pytest.approx(share) for s in stored.values() if s is not None)
    planned = plan_for(state_redis(settings), ip.id, settings).checks
    assert set(planned) == {f"e{k}" for k in in_sample}
    checked = in_sample[:-2]  # the last two drawn not decided yet: their hour is out of the sample
    assert int(again[in_sample[-1]] // H) != int(again[in_sample[0]] // H)
    out = proc.apply(CrawlResult.parse(ip.id, "checked", T0 + DAY + H, [], 0, None, None,
                                       checks={f"e{k}": "deleted" if k % 2 == 0 else "on_sale" for k in checked}))
    assert out.relisted == sum(k % 2 == 0 for k in checked)
    rows = [(int(again[k] // H), share if k in in_sample else None, (k % 2 == 0) if k in checked else None)
            for k in range(len(TITLES))]
    relists, variance = by_definition(rows)
    now = T0 + DAY + 2 * H
    measured = window_measures([ip.id], 24, now)[ip.id].inflow
    # the window's count: the day's new listings ("mid" and the 30), less the relists found
    counted = flows(ip)[0] - len(TITLES) - len(shop(first - 60)) - 1
    assert counted == len(TITLES) + 1 - out.relisted
    assert isinstance(measured, Estimate)
    assert measured.value == pytest.approx(counted - relists, abs=0.05)
    low, high = measured.interval
    half = Z * math.sqrt(variance)
    undecided = sum(decided is None for _, _, decided in rows)
    assert low == pytest.approx(max(counted - relists - half, counted - undecided), abs=0.05)
    assert high == pytest.approx(min(counted - relists + half, counted), abs=0.05)
    # off, the count stands (the settings fixture puts them back)
    use_settings(replace(settings, flow_estimates=False))
    assert window_measures([ip.id], 24, now)[ip.id].inflow == Measure(counted, measured.n)
