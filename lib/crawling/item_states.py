"""What a read of a listing's page tells of it (``lib.crawling.item_read``), as the crawl's result and the worker
name it: the item API's statuses, ``DELETED`` (the site holds no listing under its id any more) and ``UNKNOWN``
(the read told nothing)."""

from __future__ import annotations

import re

ON_SALE, TRADING, SOLD_OUT, DELETED, UNKNOWN = "on_sale", "trading", "sold_out", "deleted", "unknown"
STATES = (ON_SALE, TRADING, SOLD_OUT, DELETED, UNKNOWN)
#: A listing id as a listing page's URL takes it (``m`` and digits; a shop's product id is letters and digits).
LISTING_ID = re.compile(r"[A-Za-z0-9]{1,40}")
