"""The crawler's listing rules without a browser: the price rule, Retry-After, and the pipeline's acceptance of
the no-price flag."""

import email.utils

import pytest

from lib.core.errors import BadMessage
from lib.crawling.listings import item_from_api, item_from_cell
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
