"""The crawler's listing rules without a browser: the price rule, Retry-After, and the pipeline's acceptance of
the no-price flag."""

import email.utils

import pytest

from lib.core.errors import BadMessage
from lib.crawling.listings import item_from_api, item_from_cell, seller_hash
from lib.crawling.page_fetch import retry_after_seconds
from lib.market.item_state import CrawlItem

API = {"id": "m123", "name": "x", "price": "4500", "status": "ITEM_STATUS_ON_SALE", "created": "1700000000",
       "updated": "1700000100", "thumbnails": ["t"], "itemType": "ITEM_TYPE_MERCARI"}


@pytest.mark.parametrize("change, price, flag", [
    ({}, 4500, None),
    ({"isNoPrice": True, "price": "9999999"}, None, "no_price"),
    ({"noPrice": True}, None, "no_price"),           # the flag under another spelling
    ({"isNoPrice": False, "price": "9999999"}, None, "placeholder"),
    ({"price": 4500}, 4500, None),                   # a number where a string was: still read (and an anomaly)
])
def test_api_prices(change, price, flag):
    item = item_from_api({**API, **change}, "https://jp.mercari.com")
    assert (item["price"], item["price_flag"]) == (price, flag)
    assert item["created"] == 1700000000 and item["item_url"] == "https://jp.mercari.com/item/m123"


def test_sold_statuses_and_an_unknown_one():
    for status in ("ITEM_STATUS_SOLD_OUT", "ITEM_STATUS_TRADING"):
        assert item_from_api({**API, "status": status}, "b")["status"] == "sold"
    assert item_from_api({**API, "status": "ITEM_STATUS_NEW_KIND"}, "b", "sold")["status"] == "sold"


@pytest.mark.parametrize("cell, price, flag", [
    ({"price": "¥4,500"}, 4500, None),
    ({"price": "¥9,999,999"}, None, "placeholder"),
    ({"price": None, "label": "xの画像 4,500円"}, 4500, None),
    ({"price": None, "label": "xの画像"}, None, "missing"),
])
def test_cell_prices(cell, price, flag):
    item = item_from_cell({"href": "/item/m1", "name": "x", "label": "", "sold": False, **cell}, "b")
    assert (item["price"], item["price_flag"]) == (price, flag)


def test_retry_after_in_seconds_or_as_a_date():
    assert retry_after_seconds("120") == 120.0
    when = email.utils.formatdate(1_000_060, usegmt=True)
    assert retry_after_seconds(when, now=1_000_000) == 60.0
    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None


def test_the_pipeline_takes_the_flag_only_with_a_null_price():
    base = {"source_id": "m1", "title": "x", "status": "sold"}
    assert CrawlItem.parse({**base, "price": None, "price_flag": "placeholder"}).price_flag == "placeholder"
    assert CrawlItem.parse({**base, "price": 300}).price_flag is None
    with pytest.raises(BadMessage):
        CrawlItem.parse({**base, "price": 300, "price_flag": "placeholder"})
    with pytest.raises(BadMessage):
        CrawlItem.parse({**base, "price": None, "price_flag": 7})


#: A hit of an auction in the shape the search API answers it (take-kun/mercapi PR #50, its recorded example: the
#: ``auction_info`` map, numbers as numbers, a day's bidding; the price is the current bid).
AUCTION_HIT = {**API, "id": "m70000000001", "sellerId": "123456789", "price": "3200", "auction_info": {
    "id": "a1b2c3", "start_time": 1738972800, "expected_end_time": 1739059199, "bid_deadline_duration_seconds": 40000,
    "bid_total_duration_seconds": 86399, "total_bids": 3, "highest_bid": 3200, "state": "STATE_ONGOING"}}


def test_an_auction_is_recognised_by_its_auction_info_and_shows_its_bid():
    item = item_from_api(AUCTION_HIT, "https://jp.mercari.com")
    assert item["auction"] is True and item["price"] == 3200
    assert item_from_api(API, "b")["auction"] is False
    assert item_from_api({**API, "auction_info": None}, "b")["auction"] is False  # a null map: fixed price
    assert CrawlItem.parse(item).auction is True
    with pytest.raises(BadMessage):
        CrawlItem.parse({**item, "auction": "yes"})


def test_the_seller_is_kept_as_a_keyed_hash_never_as_its_id():
    key = b"a key of sixteen characters"
    item = item_from_api(AUCTION_HIT, "b", seller_key=key)
    assert item["seller"] == seller_hash("123456789", key) and "123456789" not in str(item)
    assert len(item["seller"]) == 16
    assert item_from_api({**AUCTION_HIT, "id": "m2"}, "b", seller_key=key)["seller"] == item["seller"]  # same seller
    assert item_from_api({**AUCTION_HIT, "sellerId": "123456780"}, "b", seller_key=key)["seller"] != item["seller"]
    assert item_from_api(AUCTION_HIT, "b", seller_key=b"another key of 16 chars")["seller"] != item["seller"]
    assert item_from_api(AUCTION_HIT, "b")["seller"] is None  # no key: the seller is not kept
    assert item_from_api(API, "b", seller_key=key)["seller"] is None  # a hit without a seller
    # the DOM shows no seller: relists cannot be recognised from it
    cell = item_from_cell({"href": "/item/m1", "name": "x", "label": "", "sold": False, "price": "¥4,500"}, "b")
    assert cell["seller"] is None and cell["auction"] is False
    assert CrawlItem.parse(item).seller == item["seller"]
    with pytest.raises(BadMessage):
        CrawlItem.parse({**item, "seller": "x" * 33})


def test_without_a_secret_all_crawlers_hash_sellers_with_one_key_kept_in_the_state_store(env, settings):
    """SELLER_HASH_SECRET unset: the first crawler makes a random key in the state store and the others read it, so
    a seller hashed by one crawler is recognised in another's pages; the key is never the same in two stores."""
    from lib.core import keys
    from lib.core.redis_client import state_redis
    from lib.core.settings import load_settings
    from lib.crawling.crawl import Crawler
    from lib.crawling.listings import deployment_seller_key

    assert settings.seller_hash_secret is None
    first = Crawler(settings, manager=None, rotator=None)  # type: ignore[arg-type]  # only its key is used
    second = Crawler(settings, manager=None, rotator=None)  # type: ignore[arg-type]
    key = first._seller_key()
    assert key is not None and len(key) == 64 and second._seller_key() == key
    assert item_from_api(AUCTION_HIT, "b", seller_key=second._seller_key())["seller"] == seller_hash("123456789", key)
    client = state_redis(settings)
    client.delete(keys.SELLER_HASH_KEY)  # an emptied store: a new key, another one
    assert deployment_seller_key(client) != key
    secret = Crawler(load_settings({**env, "SELLER_HASH_SECRET": "a secret of this deployment"}),
                     manager=None, rotator=None)  # type: ignore[arg-type]
    assert secret._seller_key() == b"a secret of this deployment"
