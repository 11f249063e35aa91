"""``animetop simulator``: a local stand-in for jp.mercari.com's search, with switches for blocks.

    GET  /search?keyword=…&status=on_sale|sold_out%7Ctrading&sort=created_time&order=desc[&page_token=v1:N]
    POST /v2/entities:search            the JSON API the page's script calls (refused, 401, without the page's
                                        DPoP proof and X-Platform headers)
    GET  /item/<id>                     a listing's page (realistic market): its script GETs the item API
    GET  /items/get?id=…                the item API: the listing's state, or 404 once deleted (refused, 401, without
                                        the page's headers; realistic market)
    GET  /_truth?keyword=…&status=…&page=N   ground truth of that page at the simulator's current time
    POST /_control  {"mode": "403|429|challenge|captcha|soft_block|slow|malformed|priceless_cells|scrim|cut_short|
                              normal",
                     "count": N (search pages the mode lasts; default: until changed), "delay_ms": …,
                     "retry_after": seconds a 429 asks for, "time": T, "speed": S}
    GET  /_control  the current switches and counters

``market="realistic"`` serves the realistic market (lib/standins/simulator/model.py) instead of the deterministic
one: its answers, its page truth (each listing with its story), now and then an empty answer, and a 429 past the
site's rate of search requests per address (docs/concepts/simulator.md).
"""

from __future__ import annotations

import base64
import binascii
import json
import random
import threading
import time
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

from lib.core.local_server import LocalHttpServer
from lib.standins.simulator import market
from lib.standins.simulator.model import MarketModel
from lib.standins.simulator.page import (
    CAPTCHA,
    CLOUDFLARE_403,
    CLOUDFLARE_CHALLENGE,
    ITEM_PAGE,
    SCRIM,
    SEARCH_PAGE,
    TOO_MANY,
)
from lib.standins.simulator.rate_limit import AddressRateLimiter
from lib.standins.simulator.realistic import RealisticSearch

PAGE_SIZE = 120
API_PATH = "/v2/entities:search"
ITEM_API_PATH = "/items/get"
STATUS_OF = {"STATUS_ON_SALE": market.ON_SALE, "STATUS_TRADING": market.TRADING, "STATUS_SOLD_OUT": market.SOLD_OUT}
API_STATUS = {market.ON_SALE: "ITEM_STATUS_ON_SALE", market.TRADING: "ITEM_STATUS_TRADING",
              market.SOLD_OUT: "ITEM_STATUS_SOLD_OUT"}
#: What a search page's API answer says when a listing has no price (besides the placeholder price).
NO_PRICE_FLAG = "isNoPrice"
MODES = {"normal", "403", "429", "challenge", "captcha", "soft_block", "slow", "malformed", "priceless_cells", "scrim",
         "cut_short"}
#: Mode ``cut_short``: the page stops rendering after this many listings (its lazy load never comes), while its
#: API answer, and its next-page control, are whole: a page really cut short, which the DOM path must notice.
CUT_SHORT_AT = 40
#: The markets a simulator can serve: the deterministic one the tests' fixtures rely on (the default), and the
#: realistic market model.
MARKETS = ("deterministic", "realistic")


class SimClock:
    """Simulated time: ``at`` when started, moving ``speed`` times faster than real time (0 freezes it)."""

    def __init__(self, at: float | None = None, speed: float = 1.0) -> None:
        self.set(at if at is not None else time.time(), speed)

    def set(self, at: float, speed: float) -> None:
        self._base, self._real, self.speed = at, time.monotonic(), speed

    def now(self) -> float:
        return self._base + (time.monotonic() - self._real) * self.speed


class MarketSimulator(LocalHttpServer):
    name = "market-simulator"

    def __init__(self, port: int = 0, *, at: float | None = None, speed: float = 1.0, clock=None,
                 record: str | None = None, market: str = "deterministic", seed: int = 0,
                 model: MarketModel | None = None, rate_limit: bool = True) -> None:
        """``clock``: share an app ``Clock`` instead of a private one (the demo: the simulator and the process
        types must agree on the time to the millisecond). ``record``: a JSON-lines file of every API answer
        (keyword, time, statuses, page and each item's id, status, price, true creation time and last update).
        ``market``: one of ``MARKETS``; the realistic one is ``model`` (default: ``MarketModel(seed)``), and
        ``rate_limit`` answers 429 past the site's rate per address (counted in simulated time)."""
        if market not in MARKETS:
            raise ValueError(f"unknown market {market!r}; expected one of {MARKETS}")
        self.market = market
        self.realistic = (RealisticSearch(model if model is not None else MarketModel(seed))
                          if market == "realistic" else None)
        self.limiter = (AddressRateLimiter(self.realistic.model.traits.rate_limit)
                        if self.realistic is not None and rate_limit else None)
        self._empties = random.Random(seed)
        self.clock = clock if clock is not None else SimClock(at, speed)
        self._record = open(record, "a", encoding="utf-8") if record else None
        self.mode = "normal"
        self.mode_left: int | None = None
        self.delay_ms = 0
        self.retry_after = 1
        self.counters = {"pages": 0, "api": 0, "blocked": 0, "api_refused": 0, "rate_limited": 0, "empty": 0,
                         "item_api": 0}
        #: (monotonic time, mode) of every search page load, in order.
        self.page_log: list[tuple[float, str]] = []
        self._lock = threading.Lock()
        super().__init__(self._handler(), port)

    def set_mode(self, mode: str, count: int | None = None, delay_ms: int = 0, retry_after: int = 1) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; expected one of {sorted(MODES)}")
        with self._lock:
            self.mode, self.mode_left, self.delay_ms, self.retry_after = mode, count, delay_ms, retry_after

    def _take_mode(self) -> str:
        """The mode for this search page load (counting down a limited one)."""
        with self._lock:
            mode = self.mode
            if self.mode_left is not None:
                self.mode_left -= 1
                if self.mode_left <= 0:
                    self.mode, self.mode_left = "normal", None
            self.counters["pages"] += 1
            self.page_log.append((time.monotonic(), mode))
            return mode

    # -- the data ----------------------------------------------------------------
    @staticmethod
    def page_items(keyword: str, statuses: set[str], page: int, t: float) -> tuple[list, int]:
        """A page's listings and the search's total (the archive of old sold listings after the young ones).
        Page n holds the search's hits n·120 − 119 to n·120 less the hidden ones (``market.hidden``): a few
        short of 120 while it has a next page, as on the real site; the total counts the hidden ones too."""
        found = market.search(keyword, statuses, t)
        start = (page - 1) * PAGE_SIZE
        items = found[start:start + PAGE_SIZE]
        if len(items) < PAGE_SIZE and market.SOLD_OUT in statuses:
            items += market.archive(keyword, t, max(0, start - len(found)), PAGE_SIZE - len(items))
        return [pair for pair in items if not pair[0].hidden], len(found) + market.archived_sold(keyword, statuses, t)

    @staticmethod
    def api_item(item: market.Listing, status: str, t: float) -> dict:
        """One listing as the API lists it: every number a string, like the real one."""
        price = item.price_at(t)
        return {
            "id": item.id, "sellerId": str(10_000_000 + int(item.created) % 89_999_999),
            "buyerId": "", "status": API_STATUS[status], "name": item.name,
            "price": str(market.PLACEHOLDER_PRICE if price is None else price),
            "created": str(int(item.created)), "updated": str(int(item.updated_at(t))),
            "thumbnails": [f"https://static.mercdn.net/thumb/item/webp/{item.id}_1.jpg"],
            "itemType": "ITEM_TYPE_BEYOND" if item.shops else "ITEM_TYPE_MERCARI",
            "itemConditionId": str(1 + int(item.created) % 6), "shippingPayerId": "2", "itemSizes": [],
            "itemBrand": None, "itemPromotions": [], "shopName": "", "itemSize": None, "shippingMethodId": "14",
            "categoryId": "1", NO_PRICE_FLAG: price is None,
        }

    @staticmethod
    def reported_price(item: market.Listing, t: float) -> int | None:
        """The price a faithful crawler reports: none for a listing without one or priced at the placeholder."""
        price = item.price_at(t)
        return None if price is None or price == market.PLACEHOLDER_PRICE else price

    def truth(self, keyword: str, statuses: set[str], page: int, t: float | None = None) -> list[dict]:
        """The listings a page shows at ``t`` (default: now), as the crawler should report them (the realistic
        market's with each listing's story under ``truth``)."""
        t = self.clock.now() if t is None else t
        if self.realistic is not None:
            return self.realistic.truth(keyword, frozenset(statuses), page, t)
        items, _ = self.page_items(keyword, statuses, page, t)
        return [self.api_item(item, status, t) for item, status in items]

    def record_served(self, keyword: str, statuses: set[str], page: int, t: float, items: list) -> None:
        line = json.dumps({"keyword": keyword, "t": t, "statuses": sorted(statuses), "page": page,
                           "items": [[item.id, status, self.reported_price(item, t), item.created,
                                      item.updated_at(t)] for item, status in items]},
                          ensure_ascii=False)
        if self._record is None:
            return
        with self._lock:
            self._record.write(line + "\n")
            self._record.flush()

    def answer(self, keyword: str, statuses: set[str], page: int, t: float, record: bool = True) -> dict:
        """The search API's answer (``POST /v2/entities:search``) for page ``page`` of a search at ``t``, recorded
        (``record``) when the simulator keeps a record."""
        if self.realistic is not None:
            return self._realistic_answer(keyword, statuses, page, t, record)
        items, found = self.page_items(keyword, statuses, page, t)
        if record and self._record is not None:
            self.record_served(keyword, statuses, page, t, items)
        more = page * PAGE_SIZE < found
        return {"meta": {"nextPageToken": f"v1:{page}" if more else "",
                         "previousPageToken": f"v1:{page - 2}" if page > 2 else "", "numFound": str(found)},
                "items": [self.api_item(item, status, t) for item, status in items], "components": [],
                "searchCondition": {}, "searchConditionId": ""}

    def _realistic_answer(self, keyword: str, statuses: set[str], page: int, t: float, record: bool) -> dict:
        assert self.realistic is not None
        found = self.realistic.page(keyword, frozenset(statuses), page, t)
        answer = self.realistic.answer_of(found, page, t)
        if record and self._record is not None:
            served = found.items
            line = json.dumps({"keyword": keyword, "t": t, "statuses": sorted(statuses), "page": page,
                               "items": [[s.story.id, s.status, s.story.price_at(t - s.story.index_delay),
                                          s.story.created, s.story.updated_at(t), s.padded] for s in served]},
                              ensure_ascii=False)
            with self._lock:
                self._record.write(line + "\n")
                self._record.flush()
        return answer

    def rate_limited(self, address: str) -> bool:
        """Whether a search request from ``address`` now is past the site's rate (the realistic market only);
        counted in simulated time while the clock runs, in real time while it stands still."""
        if self.limiter is None:
            return False
        speed = getattr(self.clock, "speed", 1.0)
        now = self.clock.now() if speed else time.monotonic()
        return not self.limiter.allow(address, now)

    def empty_now(self) -> bool:
        """Whether this API answer is one of the realistic market's empty ones."""
        if self.realistic is None:
            return False
        with self._lock:
            return self._empties.random() < self.realistic.model.traits.search.empty_answer_share

    def answer_for(self, keyword: str, status_param: str, page: int, t: float) -> dict:
        """``answer`` for a search page's URL ``status`` parameter (``on_sale``, ``sold_out|trading``), mapped to
        the API's statuses as the page's script maps them (``page.SEARCH_PAGE``): what a crawl of that page at
        ``t`` would have read, without a browser (the demo's history, ``lib.operations.backfill``)."""
        statuses = {STATUS_OF["STATUS_" + s.upper()] for s in status_param.split("|")}
        return self.answer(keyword, statuses, page, t)

    def stop(self) -> None:
        super().stop()
        if self._record is not None:
            self._record.close()

    def _handler(self):
        sim = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, status: int, body: str | bytes, content_type: str = "text/html; charset=utf-8",
                      headers: dict[str, str] | None = None) -> None:
                raw = body.encode() if isinstance(body, str) else body
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                try:
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):  # the browser went away (a page left mid-load)
                    self.close_connection = True

            def _json(self, status: int, obj: object) -> None:
                self._send(status, json.dumps(obj, ensure_ascii=False), "application/json")

            def do_GET(self):
                parts = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                if parts.path == "/search":
                    return self._search_page(query)
                if parts.path == "/_truth":
                    statuses = {s for s in query.get("status", "on_sale").split("|")}
                    return self._json(200, sim.truth(query.get("keyword", ""), statuses, int(query.get("page", 1)),
                                                     float(query["t"]) if "t" in query else None))
                if parts.path == "/_control":
                    return self._json(200, {"mode": sim.mode, "mode_left": sim.mode_left, "time": sim.clock.now(),
                                            "speed": sim.clock.speed, **sim.counters})
                if parts.path == ITEM_API_PATH and sim.realistic is not None:
                    return self._item_api(query.get("id", ""))
                if parts.path.startswith("/item/") and sim.realistic is not None:
                    return self._send(200, ITEM_PAGE)
                if parts.path.startswith(("/item/", "/shops/product/")):
                    return self._send(200, "<html><body>item</body></html>")
                self._send(404, "not found")

            def _search_page(self, query: dict) -> None:
                mode = sim._take_mode()
                if mode in ("403", "429", "challenge", "captcha"):
                    sim.counters["blocked"] += 1
                    status, body = {"403": (403, CLOUDFLARE_403), "429": (429, TOO_MANY),
                                    "challenge": (503, CLOUDFLARE_CHALLENGE), "captcha": (200, CAPTCHA)}[mode]
                    headers = {"Retry-After": str(sim.retry_after)} if mode == "429" else {}
                    return self._send(status, body, headers=headers)
                config = json.dumps({"api": API_PATH + "?mode=" + mode, "malformed": mode == "malformed",
                                     "priceless": mode == "priceless_cells",
                                     "cut": CUT_SHORT_AT if mode == "cut_short" else 0})
                page = SEARCH_PAGE % {"keyword": _html(query.get("keyword", "")),
                                      "config": config.replace("<", "\\u003c"),
                                      "scrim": SCRIM if mode == "scrim" else ""}
                self._send(200, page)

            def do_POST(self):
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    return self._json(400, {"error": "bad json"})
                if parts.path == "/_control":
                    try:
                        if "mode" in body:
                            sim.set_mode(body["mode"], body.get("count"), int(body.get("delay_ms", 0)),
                                         int(body.get("retry_after", 1)))
                        if ("time" in body or "speed" in body) and not isinstance(sim.clock, SimClock):
                            raise ValueError("this simulator shares the app's clock: time and speed are fixed")
                        if "time" in body or "speed" in body:
                            sim.clock.set(float(body.get("time", sim.clock.now())),
                                          float(body.get("speed", sim.clock.speed)))
                    except ValueError as e:
                        return self._json(400, {"error": str(e)})
                    return self._json(200, {"ok": True})
                if parts.path == API_PATH:
                    refused = _refusal(self.headers, "POST", API_PATH)
                    if refused:
                        sim.counters["api_refused"] += 1
                        return self._json(401, {"code": 16, "message": refused})
                    return self._api(body, parse_qs(parts.query).get("mode", ["normal"])[0])
                self._json(404, {"error": "not found"})

            def _limited(self) -> bool:
                """Answer 429 when this request is past the site's rate for its address (True: answered)."""
                if not sim.rate_limited(self.client_address[0]):
                    return False
                sim.counters["rate_limited"] += 1
                assert sim.limiter is not None
                retry = str(sim.limiter.limit.retry_after_seconds)
                self._send(429, json.dumps({"code": 8, "message": "too many requests"}), "application/json",
                           headers={"Retry-After": retry})
                return True

            def _item_api(self, listing_id: str) -> None:
                refused = _refusal(self.headers, "GET", ITEM_API_PATH)
                if refused:
                    sim.counters["api_refused"] += 1
                    return self._json(401, {"code": 16, "message": refused})
                sim.counters["item_api"] += 1
                if self._limited():
                    return None
                assert sim.realistic is not None
                status, body = sim.realistic.item(listing_id, sim.clock.now())
                self._json(status, body)

            def _api(self, body: dict, mode: str) -> None:
                sim.counters["api"] += 1
                if self._limited():
                    return None
                condition = body.get("searchCondition") or {}
                statuses = {STATUS_OF[s] for s in condition.get("status", []) if s in STATUS_OF} or {market.ON_SALE}
                token = body.get("pageToken") or ""
                page = int(token.split(":")[1]) + 1 if token.startswith("v1:") else 1
                answer = sim.answer(condition.get("keyword", ""), statuses, page, sim.clock.now(),
                                    record=mode in ("normal", "slow"))
                if mode == "slow" and sim.delay_ms:
                    time.sleep(sim.delay_ms / 1000)
                if mode == "soft_block":
                    answer["items"] = []
                elif sim.empty_now():
                    sim.counters["empty"] += 1
                    answer["items"] = []
                self._json(200, answer | {"searchCondition": condition})

        return Handler


def _refusal(headers, method: str, path: str) -> str | None:
    """Why an API request (``method`` to ``path``) lacks what the real page's script sends (None: it has it). Only
    the page's own script can fetch the API: a DPoP proof (a JWT whose payload names the method and URL) and
    ``X-Platform: web``."""
    if headers.get("X-Platform") != "web":
        return "missing X-Platform"
    proof = headers.get("DPoP") or ""
    parts = proof.split(".")
    if len(parts) != 3:
        return "missing or malformed DPoP proof"
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (binascii.Error, ValueError):
        return "unreadable DPoP proof"
    if not isinstance(claims, dict) or claims.get("htm") != method or urlsplit(str(claims.get("htu"))).path != path:
        return "DPoP proof for another request"
    return None


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
