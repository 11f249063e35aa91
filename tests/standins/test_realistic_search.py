"""The realistic market as the search serves it (lib/standins/simulator/realistic.py and the simulator's HTTP
server): padding past the real results, numFound, auctions' ``auction_info``, the indexing delay, empty answers
and 429s past the per-address rate. Each test fails if its trait is removed."""

import json
import math
import urllib.error
import urllib.request
from dataclasses import replace

import pytest

from lib.segments.normalize import fold
from lib.standins.simulator import MarketSimulator
from lib.standins.simulator.model import DAY, HOUR, MarketModel
from lib.standins.simulator.rate_limit import AddressRateLimiter
from lib.standins.simulator.realistic import PAGE_SIZE, RealisticSearch, Served
from lib.standins.simulator.server import API_PATH
from lib.standins.simulator.stories import ON_SALE, SOLD_OUT, TRADING
from lib.standins.simulator.traits import RateLimit, load_traits
from lib.standins.simulator.truth import on_sale_count

T = 1_780_239_600.0 + 10 * DAY
ON = frozenset({ON_SALE})
SOLD = frozenset({SOLD_OUT, TRADING})
TRAITS = load_traits()


@pytest.fixture(scope="module")
def search():
    return RealisticSearch(MarketModel(4, sizes={"niche": 0.3, "small": 1.0, "big": 150.0, "ワンピース": 0.5}))


def pages(search, keyword, statuses, t=T, last=6):
    return [search.page(keyword, statuses, n, t) for n in range(1, last + 1)]


def test_padding_follows_the_real_results_and_never_matches_the_keyword(search):
    for keyword in ("niche", "small", "ワンピース"):
        for statuses in (ON, SOLD):
            real = search.results(keyword, statuses, T)
            served = [item for page in pages(search, keyword, statuses) for item in page.items]
            flags = [item.padded for item in served]
            # the real results first, all of them, then only padding
            assert flags == [False] * len(real) + [True] * (len(served) - len(real))
            assert [item.story.id for item in served[:len(real)]] == [item.story.id for item in real]
            padded = [item for item in served if item.padded]
            assert len(padded) == min(TRAITS.search.padding_positions, 6 * PAGE_SIZE - len(real)) > 0
            assert all(item.status in statuses for item in padded)
            for item in padded:  # after the segments' normalization, the keyword is not in the title
                assert fold(keyword) not in fold(item.story.title), item.story.title
    # the search ends after its padding
    real = len(search.results("niche", ON, T))
    last = math.ceil((real + TRAITS.search.padding_positions) / PAGE_SIZE)
    assert search.page("niche", ON, last, T).has_next is False
    assert search.page("niche", ON, last - 1, T).has_next is True


def test_a_large_ip_has_no_padding_on_the_pages_a_crawl_reads(search):
    for statuses in (ON, SOLD):
        assert not any(item.padded for page in pages(search, "big", statuses, last=5) for item in page.items)
        assert all(len(page.items) == PAGE_SIZE and page.has_next for page in pages(search, "big", statuses, last=5))


def test_num_found_undercounts_and_is_capped(search):
    model = search.model
    true_on_sale = on_sale_count(model, "small", T)
    reported = search.num_found("small", ON, T)
    assert 0 < reported < true_on_sale  # the last day's listings times a factor under 1: an undercount
    assert reported <= len(search.results("small", ON, T))
    assert search.num_found("small", SOLD, T) < len(search.results("small", SOLD, T))
    # the cap: with a cap of 200 and no factor, an IP of 40 an hour reports 200 where it holds hundreds more
    traits = replace(TRAITS, search=replace(TRAITS.search, num_found_cap=200, num_found_factor=(1.0, 1.0)))
    capped = RealisticSearch(MarketModel(4, traits, sizes={"big": 40.0}))
    assert capped.num_found("big", ON, T) == 200 < on_sale_count(capped.model, "big", T)
    assert TRAITS.search.num_found_cap == 15_000


def test_nothing_is_served_before_its_indexing_delay(search):
    t = T + 0.4 * HOUR
    served = [item for page in pages(search, "big", ON, t, last=2) for item in page.items]
    assert all(item.story.created + item.story.index_delay <= t for item in served)
    hidden = [s for s in search.model.listings("big", t - 60, t) if s.created + s.index_delay > t]
    assert hidden  # listed within the last minute, not yet in the search
    ids = {item.story.id for item in served}
    assert not ids & {s.id for s in hidden}
    # each change reaches the search after the same delay: a sale shows as on sale until then
    sold = [s for s in search.model.listings("big", t - 2 * DAY, t - DAY) if s.sold_at]
    story = sold[0]
    assert story.search_status_at(story.sold_at + story.index_delay - 1) == ON_SALE
    assert story.search_status_at(story.sold_at + story.index_delay + 1) == TRADING


def test_auctions_carry_auction_info_and_show_the_current_bid(search):
    served = [item for page in pages(search, "big", ON, last=2) for item in page.items]
    assert any(item.story.auction is not None for item in served)  # auctions are on the pages
    served += [Served(story, story.search_status_at(T), False) for story in search.model.listings("big", T - 3 * DAY, T)
               if story.auction is not None and story.search_status_at(T)]
    auctions = [item for item in served if item.story.auction is not None]
    assert any(item.story.auction.bids_at(T) for item in auctions)
    assert {item.status for item in auctions} >= {ON_SALE, SOLD_OUT}
    for item in served:
        api = search.api_item(item, T)
        story = item.story
        if story.auction is None:
            assert "auction_info" not in api
            continue
        info, seen = api["auction_info"], T - story.index_delay
        bids = story.auction.bids_at(seen)
        assert set(info) == {"id", "start_time", "expected_end_time", "bid_deadline_duration_seconds",
                             "bid_total_duration_seconds", "total_bids", "highest_bid", "state"}
        assert info["total_bids"] == len(bids)
        assert api["price"] == str(bids[-1].price if bids else story.auction.start_price)
        assert info["state"] == ("STATE_ONGOING" if seen < story.auction.end else TRAITS.auctions.ended_state)
        assert api["sellerId"] == story.seller_id


def test_the_empty_answer_share_and_the_429_rate():
    limiter = AddressRateLimiter(TRAITS.rate_limit)
    # 91 requests at 60 a minute run clean; at 76.3 a minute the 13th request draws a 429
    assert all(limiter.allow("a", i * 1.0) for i in range(91))
    refused = [i for i in range(40) if not limiter.allow("b", i * 60 / 76.3)]
    assert refused and refused[0] + 1 <= 13
    assert limiter.allow("c", 0.0)  # each address its own bucket
    # a bucket of one request: the second at once is refused, the next after a second is served
    tight = AddressRateLimiter(RateLimit(60, 1.0, 1))
    assert [tight.allow("d", t) for t in (0.0, 0.1, 1.2)] == [True, False, True]


def post_api(sim, keyword, status="STATUS_ON_SALE", token=""):
    request = urllib.request.Request(
        sim.url + API_PATH, method="POST", headers={"X-Platform": "web", "DPoP": _dpop(sim.url + API_PATH),
                                                    "Content-Type": "application/json"},
        data=json.dumps({"pageToken": token, "searchCondition": {"keyword": keyword, "status": [status]}}).encode())
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def _dpop(url):
    import base64

    def part(obj):
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")
    return f"{part({'typ': 'dpop+jwt'})}.{part({'htm': 'POST', 'htu': url})}.sig"


def test_the_server_serves_the_realistic_market_with_its_truth_empties_and_429s():
    model = MarketModel(4, sizes={"niche": 0.3})
    sim = MarketSimulator(at=T, speed=0, market="realistic", model=model).start()
    try:
        status, answer = post_api(sim, "niche")
        assert status == 200
        assert answer == RealisticSearch(model).answer("niche", ON, 1, T) | {
            "searchCondition": {"keyword": "niche", "status": ["STATUS_ON_SALE"]}}
        truth = json.loads(urllib.request.urlopen(sim.url + "/_truth?keyword=niche&status=on_sale",
                                                  timeout=30).read())
        assert [item["id"] for item in truth] == [item["id"] for item in answer["items"]]
        assert any(item["truth"]["padded"] for item in truth) and not truth[0]["truth"]["padded"]
        # a frozen clock: the bucket refills in real time; requests back to back soon draw a 429 with Retry-After
        codes = [post_api(sim, "niche")[0] for _ in range(12)]
        assert 429 in codes and sim.counters["rate_limited"] >= 1
    finally:
        sim.stop()
    # empty answers: their share over many requests (no rate limit here; a share of 10 % to count it in 200)
    traits = replace(TRAITS, search=replace(TRAITS.search, empty_answer_share=0.1))
    model = MarketModel(4, traits, sizes={"niche": 0.3})
    sim = MarketSimulator(at=T, speed=0, market="realistic", model=model, rate_limit=False, seed=3).start()
    try:
        answers = [post_api(sim, "niche")[1] for _ in range(200)]
        empty = sum(not a["items"] for a in answers)
        assert abs(empty - 20) <= 4 * math.sqrt(200 * 0.1 * 0.9)
        assert sim.counters["empty"] == empty
        assert all(a["meta"]["numFound"] == answers[0]["meta"]["numFound"] for a in answers)
    finally:
        sim.stop()


def test_the_deterministic_market_stays_the_default():
    sim = MarketSimulator(at=T, speed=0)
    try:
        assert sim.market == "deterministic" and sim.realistic is None and sim.limiter is None
    finally:
        sim.server.server_close()
    with pytest.raises(ValueError):
        MarketSimulator(market="imaginary")


def test_the_cli_chooses_the_market_and_its_seed():
    from lib.cli.parser import build_parser

    args = build_parser().parse_args(["simulator", "--market", "realistic", "--seed", "3"])
    assert (args.market, args.seed) == ("realistic", 3)
    assert build_parser().parse_args(["simulator"]).market == "deterministic"
    assert build_parser().parse_args(["demo", "--market", "realistic"]).market == "realistic"


def test_the_item_api_tells_a_served_listings_state_and_not_found_once_it_left_unsold(search):
    """``GET /items/get``: a listing the search served, at a later time, is on sale, trading or sold out as its story
    says, or, deleted (relisted, withdrawn), not found (HTTP 404, ``RecordNotFoundException``); an id no page served
    is not found either."""
    page = search.page("big", ON, 1, T - 3 * DAY)
    seen = {"on_sale": 0, "trading": 0, "sold_out": 0, "gone": 0}
    for served in page.items:
        story = served.story
        status, body = search.item(story.id, T)
        truth = story.status_at(T)
        if truth is None:
            assert status == 404 and body["errors"][0]["code"] == "RecordNotFoundException"
            seen["gone"] += 1
        else:
            assert status == 200 and body["data"]["status"] == truth and body["data"]["id"] == story.id
            assert body["data"]["name"] == story.title and body["data"]["price"] == story.price_at(T)
            seen[truth] += 1
    assert all(seen.values()), seen  # three days on, page 1 holds listings of every fate
    assert search.item("m99999999999", T)[0] == 404


def test_the_server_serves_a_listings_page_and_its_item_api_to_the_page_s_script_only():
    model = MarketModel(4, sizes={"niche": 0.3})
    sim = MarketSimulator(at=T, speed=0, market="realistic", model=model, rate_limit=False).start()
    try:
        status, answer = post_api(sim, "niche")
        listing = next(item["id"] for item in answer["items"])
        with urllib.request.urlopen(f"{sim.url}/item/{listing}", timeout=30) as page:
            assert "/items/get?id=" in page.read().decode()
        with pytest.raises(urllib.error.HTTPError) as refused:  # no DPoP proof, no X-Platform: not the page's script
            urllib.request.urlopen(f"{sim.url}/items/get?id={listing}", timeout=30)
        assert refused.value.code == 401 and sim.counters["api_refused"] == 1
    finally:
        sim.stop()
