"""/api/v1 on real Redis, databases and broker: responses valid against the OpenAPI document, numbers equal to
what the database holds, exports, and the operator rules for requeue and purge."""

from __future__ import annotations

import csv
import io
import time
import urllib.request
from collections import defaultdict
from datetime import timedelta
from urllib.parse import quote

import jsonschema
import pytest

from lib.core import keys
from lib.core.clock import FrozenClock, naive_utc
from lib.core.redis_client import state_redis
from lib.core.settings import load_settings
from lib.market.processing import CrawlResult, ResultProcessor
from lib.market.read_side import SEGMENT_COLUMNS, ReadSide
from lib.market.retention import WindowBeyondRetention, max_segment_hours, max_window_hours
from models import IpMetadata, IpStatsHourly, ItemSnapshot

from ..helpers import wait_for
from ..test_alerts_and_read_side import T0, seed_results
from .conftest import TOKEN, call, call_request, start_dashboard

H = 3600


def openapi(dashboard) -> dict:
    return call(f"{dashboard.url}/api/v1/openapi.json").json()


def check_against_openapi(doc: dict, path: str, method: str, reply) -> None:
    """Validate a JSON reply against the document's schema for that path, method and status."""
    operation = doc["paths"][path][method]
    response = operation["responses"].get(str(reply.status))
    assert response is not None, f"{method.upper()} {path} answered {reply.status}, which its document does not list"
    schema = response["content"]["application/json"]["schema"]
    jsonschema.Draft202012Validator({**schema, "components": doc["components"]}).validate(reply.json())


def window_sums(hours: int, now: float) -> dict[int, tuple[int, int]]:
    """Inflow and outflow of each IP over the window, summed here from the hourly rows."""
    since = naive_utc(now - now % H) - timedelta(hours=hours - 1)
    sums: dict[int, list[int]] = defaultdict(lambda: [0, 0])
    for row in IpStatsHourly.select().where(IpStatsHourly.hour_bucket >= since):
        sums[row.ip_id][0] += row.inflow
        sums[row.ip_id][1] += row.outflow
    return {ip: (i, o) for ip, (i, o) in sums.items()}


def test_every_read_endpoint_matches_its_openapi_document(dashboard):
    doc = openapi(dashboard)
    ip = dashboard.ips[1].id
    for path, url in [("/api/v1/meta", "/api/v1/meta"),
                      ("/api/v1/leaderboard", "/api/v1/leaderboard?by=outflow&hours=24"),
                      ("/api/v1/leaderboard", "/api/v1/leaderboard?by=liquidity&hours=720&q=%E5%91%AA"),
                      ("/api/v1/leaderboard", "/api/v1/leaderboard?by=nope"),
                      ("/api/v1/ips/{ip_id}", f"/api/v1/ips/{ip}?hours=48"),
                      ("/api/v1/ips/{ip_id}", "/api/v1/ips/999999"),
                      ("/api/v1/ips/{ip_id}/days", f"/api/v1/ips/{ip}/days?days=30"),
                      ("/api/v1/ips/{ip_id}/days", "/api/v1/ips/999999/days"),
                      ("/api/v1/ips/{ip_id}/days", f"/api/v1/ips/{ip}/days?days=100000"),
                      ("/api/v1/ips/{ip_id}/segments", f"/api/v1/ips/{ip}/segments?hours=48&by=goods"),
                      ("/api/v1/ips/{ip_id}/segments", f"/api/v1/ips/{ip}/segments?by=character"),
                      ("/api/v1/ips/{ip_id}/segments", "/api/v1/ips/999999/segments"),
                      ("/api/v1/ips/{ip_id}/segments", f"/api/v1/ips/{ip}/segments?hours=241"),
                      ("/api/v1/status", "/api/v1/status"),
                      ("/api/v1/deadletters", "/api/v1/deadletters")]:
        reply = call(dashboard.url + url)
        assert reply.headers["content-type"].startswith("application/json"), url
        check_against_openapi(doc, path, "get", reply)
    assert call(dashboard.url + "/api/v1/ips/999999").status == 404
    assert call(dashboard.url + "/api/v1/ips/389458025881176113152").status == 422  # no IP has it: no query
    assert call(dashboard.url + "/api/v1/leaderboard?by=nope").status == 400
    assert call(dashboard.url + "/api/v1/leaderboard?hours=0").status == 422


#: The measures a leaderboard ranks by (docs/concepts/measures.md).
MEASURES = {"heat", "heat_low", "momentum", "outflow", "inflow", "liquidity", "sell_through", "median_price",
            "time_to_sell"}


def test_the_document_states_the_bounds_the_server_enforces(db, env, broker):
    """The longest window and day series are settings: the document of an application built with other values
    than the defaults states those, and the server answers up to them and refuses (400) just past them."""
    settings = load_settings({**env, "RETENTION_WINDOW": "30d", "RETENTION_DAILY": "400d", "RETENTION_DETAIL": "5d"})
    clock = FrozenClock(T0 + 120)
    ips, _ = seed_results(settings, clock)
    server, _ = start_dashboard(settings, broker, None, clock)
    try:
        url, ip = f"{server.url}/api/v1", ips[0].id
        doc = call(f"{url}/openapi.json").json()

        def schema(path: str, name: str) -> dict:
            return next(p["schema"] for p in doc["paths"][f"/api/v1{path}"]["get"]["parameters"] if p["name"] == name)

        for path in ("/leaderboard", "/ips/{ip_id}", "/ips/{ip_id}/series.csv"):
            assert (schema(path, "hours")["minimum"], schema(path, "hours")["maximum"]) == (1, 30 * 24), path
        assert (schema("/ips/{ip_id}/days", "days")["minimum"], schema("/ips/{ip_id}/days", "days")["maximum"]) == \
            (1, 400)
        assert (schema("/ips/{ip_id}/segments", "hours")["minimum"],
                schema("/ips/{ip_id}/segments", "hours")["maximum"]) == (1, 30 * 24)  # past RETENTION_DETAIL
        assert [call(f"{url}/ips/{ip}/segments?hours={n}").status for n in (720, 721)] == [200, 400]
        assert call(f"{url}/meta").json()["max_segment_hours"] == 720
        assert set(schema("/leaderboard", "by")["enum"]) == MEASURES
        for path in ("/ips/{ip_id}", "/ips/{ip_id}/series.csv", "/ips/{ip_id}/days", "/ips/{ip_id}/segments"):
            assert (schema(path, "ip_id")["minimum"], schema(path, "ip_id")["maximum"]) == (1, 2**31 - 1), path
        for query, status in [("hours=720", 200), ("hours=721", 400)]:
            for path in (f"/leaderboard?{query}", f"/ips/{ip}?{query}", f"/ips/{ip}/series.csv?{query}"):
                assert call(url + path).status == status, path
        assert [call(f"{url}/ips/{ip}/days?days={n}").status for n in (400, 401)] == [200, 400]
        assert {by for by in MEASURES if call(f"{url}/leaderboard?by={by}").status == 200} == MEASURES
        # an id no IP can have (the id column is a signed 32-bit integer on MariaDB) is refused before any query
        for big in (2**31, 2**63, 389458025881176113152):
            assert call(f"{url}/ips/{big}").status == 422, big
        assert call(f"{url}/ips/{2**31 - 1}").status == 404
    finally:
        server.stop()


def test_405_names_every_method_of_the_path(dashboard):
    """``Allow`` lists the methods the document lists for the path, also where a path has one route per
    method."""
    doc = openapi(dashboard)
    for path, method in [("/api/v1/session", "OPTIONS"), ("/api/v1/session", "GET"), ("/api/v1/meta", "POST"),
                         ("/api/v1/deadletters/purge", "PUT")]:
        reply = call(dashboard.url + path, method)
        assert reply.status == 405, (path, method)
        assert sorted(reply.headers["allow"].split(", ")) == sorted(m.upper() for m in doc["paths"][path]), \
            (path, method)


def test_a_body_that_does_not_parse_gets_a_documented_answer(dashboard):
    doc = openapi(dashboard)
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"}
    for path in ("/api/v1/session", "/api/v1/deadletters/requeue", "/api/v1/deadletters/purge"):
        request = urllib.request.Request(dashboard.url + path, data=b"\xff{not json", method="POST", headers=headers)
        reply = call_request(request)
        assert reply.status in (400, 403), (path, reply.status)  # 403: read-only refuses before reading the body
        check_against_openapi(doc, path, "post", reply)


def test_leaderboard_numbers_order_filter_and_sparkline(dashboard):
    now = dashboard.clock.now()
    sums = window_sums(24, now)
    reply = call(f"{dashboard.url}/api/v1/leaderboard?by=outflow&hours=24").json()
    got = [(r["ip_id"], r["inflow"], r["outflow"]) for r in reply["rows"]]
    expected = sorted(((ip, i, o) for ip, (i, o) in sums.items()), key=lambda t: (-t[2], t[0]))
    assert got == expected and [r["rank"] for r in reply["rows"]] == [1, 2, 3]
    # the sparkline: outflow per hour over the last 24 hours, oldest first, summed here from the rows
    since = naive_utc(now - now % H) - timedelta(hours=23)
    for row in reply["rows"]:
        line = [0] * 24
        for r in IpStatsHourly.select().where((IpStatsHourly.ip_id == row["ip_id"])
                                              & (IpStatsHourly.hour_bucket >= since)):
            line[int((r.hour_bucket - since) / timedelta(hours=1))] += r.outflow
        assert row["sparkline"] == line and sum(line) == row["outflow"]
    # beyond two days, per UTC day: over 30 days, 31 days are touched (the first and the last partly)
    month = call(f"{dashboard.url}/api/v1/leaderboard?by=outflow&hours=720").json()
    since = naive_utc(now - now % H) - timedelta(hours=719)
    for row in month["rows"]:
        line = [0] * 31
        for r in IpStatsHourly.select().where((IpStatsHourly.ip_id == row["ip_id"])
                                              & (IpStatsHourly.hour_bucket >= since)):
            line[(r.hour_bucket.date() - since.date()).days] += r.outflow
        assert row["sparkline"] == line and sum(line) == row["outflow"] > 0
    name = IpMetadata.get_by_id(dashboard.ips[2].id).display_name
    filtered = call(f"{dashboard.url}/api/v1/leaderboard?by=outflow&hours=24&q={quote(name[1:3])}").json()
    assert [r["ip_id"] for r in filtered["rows"]] == [dashboard.ips[2].id] and filtered["total"] == 3
    by_inflow = call(f"{dashboard.url}/api/v1/leaderboard?by=inflow&hours=24").json()
    assert [r["ip_id"] for r in by_inflow["rows"]] == [ip for ip, _, _ in
                                                       sorted(((ip, i, o) for ip, (i, o) in sums.items()),
                                                              key=lambda t: (-t[1], -t[2], t[0]))]


def test_per_day_series_sums_the_hours_of_each_utc_day(dashboard):
    """/ips/{id}/days: per UTC day, the flows of that day's hourly rows summed here (the daily rows' definition is
    tested in tests/market/test_daily.py); as CSV the same; a range beyond RETENTION_DAILY is refused."""
    now = dashboard.clock.now()
    meta = call(f"{dashboard.url}/api/v1/meta").json()
    assert meta["max_days"] == 730
    for ip in (i.id for i in dashboard.ips):
        reply = call(f"{dashboard.url}/api/v1/ips/{ip}/days?days=30").json()
        first = naive_utc(now - now % (24 * H)) - timedelta(days=29)
        sums: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
        for r in IpStatsHourly.select().where((IpStatsHourly.ip_id == ip) & (IpStatsHourly.hour_bucket >= first)):
            day = sums[f"{r.hour_bucket:%Y-%m-%d}"]
            day[0] += 1
            day[1] += r.inflow
            day[2] += r.outflow
        assert {r["day"]: [r["hours"], r["inflow"], r["outflow"]] for r in reply["series"]} == sums
        assert sum(o for _, _, o in sums.values()) > 0
        assert reply["series"][-1]["partial"] and reply["last_day"] == f"{naive_utc(now):%Y-%m-%d}"
        rows = list(csv.DictReader(io.StringIO(call(f"{dashboard.url}/api/v1/ips/{ip}/days?days=30&format=csv")
                                               .body.decode())))
        assert [(r["day"], int(r["outflow"])) for r in rows] == [(r["day"], r["outflow"]) for r in reply["series"]]
    assert call(f"{dashboard.url}/api/v1/ips/{ip}/days?days=731").status == 400
    assert call(f"{dashboard.url}/api/v1/ips/{ip}/days?days=0").status == 422


def test_exports(dashboard):
    reply = call(f"{dashboard.url}/api/v1/leaderboard?by=outflow&hours=24&format=csv")
    assert reply.status == 200 and reply.headers["content-type"].startswith("text/csv")
    assert "attachment" in reply.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(reply.body.decode())))
    as_json = call(f"{dashboard.url}/api/v1/leaderboard?by=outflow&hours=24").json()["rows"]
    assert [(int(r["ip_id"]), r["name"], int(r["outflow"])) for r in rows] == \
        [(r["ip_id"], r["name"], r["outflow"]) for r in as_json]
    ip = dashboard.ips[1].id
    series = list(csv.DictReader(io.StringIO(call(f"{dashboard.url}/api/v1/ips/{ip}/series.csv?hours=24").body
                                             .decode())))
    detail = call(f"{dashboard.url}/api/v1/ips/{ip}?hours=24").json()
    assert [(s["hour"], int(s["inflow"]), int(s["outflow"])) for s in series] == \
        [(s["hour"], s["inflow"], s["outflow"]) for s in detail["series"]]
    assert sum(s["outflow"] for s in detail["series"]) == 6
    sold = {s.source_id for s in ItemSnapshot.select().where((ItemSnapshot.ip_id == ip)
                                                             & (ItemSnapshot.status == "sold"))}
    assert {s["source_id"] for s in detail["latest_sales"]} == sold


def test_segments_of_an_ip(dashboard, settings):
    """/ips/{id}/segments: the IP's goods types with their listings' measures (a bundle counted in each type it
    sells; the numbers' definitions are tested in tests/market/test_segments.py), most sold first; the same as CSV;
    no characters without a character list."""
    ip = dashboard.ips[2].id  # one new listing and three sales at T0 + 60, untitled: other
    titled = [{"source_id": f"t{k}", "status": "on_sale", "price": 800, "title": title}
              for k, title in enumerate(["五条悟 アクスタ", "五条悟 アクスタ", "缶バッジ アクスタ セット"])]
    sold = {"source_id": "s5", "status": "sold", "price": 1000}  # an untitled listing's sale
    ResultProcessor(settings, state_redis(settings), dashboard.clock).apply(
        CrawlResult.parse(ip, f"{ip}-titled", T0 + 90, [*titled, sold]))
    reply = call(f"{dashboard.url}/api/v1/ips/{ip}/segments?hours=24&by=goods")
    assert reply.status == 200
    body = reply.json()
    check_against_openapi(openapi(dashboard), "/api/v1/ips/{ip_id}/segments", "get", reply)
    assert (body["ip_id"], body["hours"], body["by"]) == (ip, 24, "goods")
    flows = {s["key"]: (s["label"], s["measures"]["inflow"]["value"], s["measures"]["outflow"]["value"])
             for s in body["segments"]}
    assert flows == {"other": ("その他", 1, 4), "acrylic_stand": ("アクリルスタンド", 3, 0),
                     "can_badge": ("缶バッジ", 1, 0)}
    assert [s["key"] for s in body["segments"]] == ["other", "acrylic_stand", "can_badge"]
    for s in body["segments"]:  # under 5 prices: insufficient, with its count, why, and no interval
        n = int(s["measures"]["outflow"]["value"])
        assert s["measures"]["median_price"] == {"value": None, "n": n, "interval": None, "why": (
            f"needs 5 sold prices in the window, {f'has {n}' if n else 'has none'}")}
    export = call(f"{dashboard.url}/api/v1/ips/{ip}/segments?hours=24&by=goods&format=csv")
    assert export.headers["content-type"].startswith("text/csv") and "attachment" in \
        export.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(export.body.decode())))
    assert list(rows[0]) == SEGMENT_COLUMNS
    assert [(r["key"], int(r["inflow"]), int(r["outflow"])) for r in rows] == [(k, i, o) for k, (_, i, o) in
                                                                             flows.items()]
    assert call(f"{dashboard.url}/api/v1/ips/{ip}/segments?by=character").json()["segments"] == []
    assert call(f"{dashboard.url}/api/v1/ips/{ip}/segments?by=nope").status == 422


def test_segments_board_across_ips(dashboard, settings):
    """/segments: each goods type over every IP's listings (the board the "What sells" page draws): its flows the
    IPs' flows of that type added up (each IP's own /ips/{id}/segments), its sold prices pooled, so six sales of a
    type that no IP alone has enough of give it a median (the "inclusive" median, computed here), with its
    interval; an insufficient measure carries its why; the same as CSV; a window beyond RETENTION_WINDOW is
    refused."""
    processor = ResultProcessor(settings, state_redis(settings), dashboard.clock)
    prices = {dashboard.ips[0].id: [1000, 1200, 1400], dashboard.ips[1].id: [2000, 2200, 2600]}
    for ip, sold_at in prices.items():
        stands = [{"source_id": f"a{k}", "status": "on_sale", "price": p, "title": f"アクスタ {k}"}
                  for k, p in enumerate(sold_at)]
        processor.apply(CrawlResult.parse(ip, f"{ip}-stands-1", T0 + 90, stands))
        processor.apply(CrawlResult.parse(ip, f"{ip}-stands-2", T0 + 100, [{**x, "status": "sold"} for x in stands]))
    reply = call(f"{dashboard.url}/api/v1/segments?hours=24&by=goods")
    assert reply.status == 200
    check_against_openapi(openapi(dashboard), "/api/v1/segments", "get", reply)
    board = reply.json()
    assert (board["hours"], board["by"]) == (24, "goods")
    summed: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for ip in dashboard.ips:
        for s in call(f"{dashboard.url}/api/v1/ips/{ip.id}/segments?hours=24&by=goods").json()["segments"]:
            summed[s["key"]][0] += int(s["measures"]["inflow"]["value"])
            summed[s["key"]][1] += int(s["measures"]["outflow"]["value"])
            if s["key"] == "acrylic_stand":  # three prices of its own: insufficient, with why
                assert s["measures"]["median_price"]["value"] is None and s["measures"]["median_price"]["why"]
    flows = {s["key"]: [s["measures"]["inflow"]["value"], s["measures"]["outflow"]["value"]] for s in board["segments"]}
    assert flows == dict(summed) and flows["acrylic_stand"] == [6, 6]
    assert [s["key"] for s in board["segments"]] == sorted(flows, key=lambda k: (-flows[k][1], -flows[k][0], k))
    stand = next(s for s in board["segments"] if s["key"] == "acrylic_stand")
    assert stand["label"] == "アクリルスタンド" and stand["measures"]["outflow"]["n"] == 24
    pooled = sorted(p for ps in prices.values() for p in ps)
    median = stand["measures"]["median_price"]
    assert (median["value"], median["n"]) == ((pooled[2] + pooled[3]) / 2, 6)
    assert median["interval"] is not None and median["interval"][0] <= median["value"]
    assert all(m["why"] for s in board["segments"] for m in (s["measures"]["sell_through"],)
               if m["value"] is None)
    export = call(f"{dashboard.url}/api/v1/segments?hours=24&by=goods&format=csv")
    assert export.headers["content-type"].startswith("text/csv") and "attachment" in \
        export.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(export.body.decode())))
    assert list(rows[0]) == SEGMENT_COLUMNS
    assert [(r["key"], int(r["inflow"]), int(r["outflow"])) for r in rows] == [(k, *v) for k, v in flows.items()]
    assert float(next(r for r in rows if r["key"] == "acrylic_stand")["median_price"]) == median["value"]
    longest = call(f"{dashboard.url}/api/v1/meta").json()["max_segment_hours"]
    assert [call(f"{dashboard.url}/api/v1/segments?hours={h}").status for h in (longest, longest + 1)] == [200, 400]


def test_responses_carry_strict_security_headers(dashboard):
    for path in ("/", f"/ip/{dashboard.ips[0].id}", "/operations", "/api/v1/meta"):
        headers = {k.lower(): v for k, v in call(dashboard.url + path).headers.items()}
        assert "script-src 'self'" in headers["content-security-policy"], path
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["x-frame-options"] == "DENY"


def signed_in(dashboard) -> tuple[dict[str, str], str]:
    reply = call(f"{dashboard.url}/api/v1/session", "POST", {"token": TOKEN})
    assert reply.status == 200, reply.body
    cookie = f"animetop_session={reply.cookies['animetop_session']}"
    return {"Cookie": cookie}, reply.json()["csrf_token"]


def test_requeue_and_purge_need_the_operator(dashboard, dead):
    url = f"{dashboard.url}/api/v1/deadletters"
    doc = openapi(dashboard)
    one = {"ids": [dead[0]]}
    if call(f"{dashboard.url}/api/v1/meta").json()["operator_enabled"] is False:
        for action in ("requeue", "purge"):
            reply = call(f"{url}/{action}", "POST", one, {"Authorization": f"Bearer {TOKEN}"})
            assert reply.status == 403 and "read-only" in reply.json()["detail"]
        assert call(f"{dashboard.url}/api/v1/session", "POST", {"token": TOKEN}).status == 403
        assert len(dashboard.letters.list("work")) == 3
        return
    refused = [
        ({}, 401),  # no credentials
        ({"Authorization": "Bearer wrong-token-wrong-token"}, 403),
    ]
    cookie, csrf = signed_in(dashboard)
    refused += [
        (cookie, 403),  # a session without its CSRF token: what a cross-site form would send
        ({**cookie, "X-CSRF-Token": "0" * 32}, 403),
        ({**cookie, "X-CSRF-Token": csrf, "Origin": "http://evil.example"}, 403),
        ({"Cookie": "animetop_session=forged.9999999999.00", "X-CSRF-Token": csrf}, 401),
    ]
    for headers, status in refused:
        for action in ("requeue", "purge"):
            reply = call(f"{url}/{action}", "POST", one, headers)
            assert reply.status == status, (headers, action, reply.body)
            check_against_openapi(doc, f"/api/v1/deadletters/{action}", "post", reply)
    assert len(dashboard.letters.list("work")) == 3  # nothing was touched

    # the confirmation step: a dry run names what would be affected and changes nothing
    preview = call(f"{url}/purge", "POST", {"all": True, "dry_run": True}, {**cookie, "X-CSRF-Token": csrf})
    check_against_openapi(doc, "/api/v1/deadletters/purge", "post", preview)
    assert preview.json()["count"] == 3 and {d["message_id"] for d in preview.json()["letters"]} == set(dead)
    assert len(dashboard.letters.list("work")) == 3

    # single requeue through a session, single purge with the bearer token, then the rest in bulk
    reply = call(f"{url}/requeue", "POST", {"ids": [dead[0]]}, {**cookie, "X-CSRF-Token": csrf,
                                                                "Origin": dashboard.url})
    assert reply.status == 200 and [d["message_id"] for d in reply.json()["letters"]] == [dead[0]]
    wait_for(lambda: {d.message_id for d in dashboard.letters.list("work")} == set(dead),
             what="the requeued message to fail and be dead-lettered again")
    reply = call(f"{url}/purge", "POST", {"ids": [dead[1]]}, {"Authorization": f"Bearer {TOKEN}"})
    assert reply.status == 200 and reply.json()["count"] == 1
    assert {d.message_id for d in dashboard.letters.list("work")} == {dead[0], dead[2]}
    reply = call(f"{url}/purge", "POST", {"all": True, "queue": "work"}, {"Authorization": f"Bearer {TOKEN}"})
    assert reply.json()["count"] == 2 and dashboard.letters.list("work") == []
    assert call(f"{url}/purge", "POST", {}, {"Authorization": f"Bearer {TOKEN}"}).status == 400


def test_status_shows_crawler_drift(dashboard, settings):
    from lib.core.redis_client import state_redis
    from lib.crawling.drift import CRAWLS, DriftLog

    doc = openapi(dashboard)
    reply = call(f"{dashboard.url}/api/v1/status")
    check_against_openapi(doc, "/api/v1/status", "get", reply)
    assert reply.json()["crawler_drift"]["crawls"] == 0 and reply.json()["crawler_drift"]["alert"] == []
    log = DriftLog(state_redis(settings))
    dom_only = {"pages": [{"source": "dom", "items": 120, "has_next": True, "anomalies": {}}] * 2}
    for _ in range(CRAWLS):  # the API path gone for several crawls in a row
        log.record(dom_only)
    reply = call(f"{dashboard.url}/api/v1/status")
    check_against_openapi(doc, "/api/v1/status", "get", reply)
    drift = reply.json()["crawler_drift"]
    assert drift["crawls"] == CRAWLS and drift["pages_by_source"] == {"dom": 2 * CRAWLS}
    assert drift["alert"] == ["api_path_missing"]


def test_status_shows_each_address_request_budget(db, env, broker):
    """With a budget, /api/v1/status carries each address's: the loads of the last minute, the budget now (halved
    by a 429) and when it was cut; with none (CRAWL_RATE_LIMIT=0), an empty list."""
    from lib.crawling.budget import RequestBudget
    from lib.crawling.rate_limit import count_load

    settings = load_settings({**env, "CRAWL_RATE_LIMIT": "10"})
    r = state_redis(settings)
    RequestBudget(10, lambda: r).throttled("direct")
    while time.time() % 60 > 50:  # the count and the read in the same minute (a wait of 10 s at most)
        time.sleep(0.2)
    for _ in range(3):
        count_load(r, "direct", at=time.time() - 60)
    from lib.scheduling.budget_plan import CostStore, Price
    CostStore(r).set_price(Price(price=2.5, budget=480, planned=480, ips=40, lengthened=12, unseen=90, at=T0))
    server, _ = start_dashboard(settings, broker, None, FrozenClock(T0))
    try:
        reply = call(f"{server.url}/api/v1/status")
        check_against_openapi(call(f"{server.url}/api/v1/openapi.json").json(), "/api/v1/status", "get", reply)
        (budget,) = reply.json()["crawl_budgets"]
        shown = (budget["address"], budget["limit"], budget["budget"], budget["loads_last_minute"])
        assert shown == ("direct", 5, 10, 3)
        assert budget["cut_at"] is not None and budget["full_at"] > budget["cut_at"]
        plan = reply.json()["crawl_plan"]
        assert (plan["planned"], plan["budget"], plan["lengthened"], plan["over"]) == (480, 480, 12, False)
    finally:
        server.stop()
    server, _ = start_dashboard(load_settings(env), broker, None, FrozenClock(T0))
    try:
        state_redis(settings).delete(keys.CRAWL_PRICE)  # no budget: the tick sets no plan
        answer = call(f"{server.url}/api/v1/status").json()
        assert answer["crawl_budgets"] == [] and answer["crawl_plan"] is None
    finally:
        server.stop()


def test_refusals_answer_the_same_from_every_route(dashboard, settings):
    """An IP no one has is answered 404 and a window past what the storage keeps 400, each with the read side's
    reason as the body, from every route that reads them (one handler each, lib.web.app), as each route's
    document states."""
    side, doc = ReadSide(settings, None, dashboard.clock), openapi(dashboard)
    url, ip = f"{dashboard.url}/api/v1", dashboard.ips[0].id
    for path, route in [("/ips/999999", "/ips/{ip_id}"), ("/ips/999999/series.csv", "/ips/{ip_id}/series.csv"),
                        ("/ips/999999/days", "/ips/{ip_id}/days"), ("/ips/999999/segments", "/ips/{ip_id}/segments")]:
        reply = call(url + path)
        assert (reply.status, reply.json()) == (404, {"detail": "no IP with id 999999"}), path
        check_against_openapi(doc, f"/api/v1{route}", "get", reply)

    def reason(refused) -> str:
        with pytest.raises(WindowBeyondRetention) as e:
            refused()
        return str(e.value)

    hours, segment_hours = max_window_hours(settings) + 1, max_segment_hours(settings) + 1
    window = reason(lambda: side.check_window(hours))
    segments = reason(lambda: side.check_segment_window(segment_hours))
    days = reason(lambda: side.ip_days(ip, side.max_days() + 1))
    for path, route, why in [(f"/leaderboard?hours={hours}", "/leaderboard", window),
                             (f"/ips/{ip}?hours={hours}", "/ips/{ip_id}", window),
                             (f"/ips/{ip}/series.csv?hours={hours}", "/ips/{ip_id}/series.csv", window),
                             (f"/ips/{ip}/days?days={side.max_days() + 1}", "/ips/{ip_id}/days", days),
                             (f"/ips/{ip}/segments?hours={segment_hours}", "/ips/{ip_id}/segments", segments),
                             (f"/segments?hours={segment_hours}", "/segments", segments)]:
        reply = call(url + path)
        assert (reply.status, reply.json()) == (400, {"detail": why}), path
        check_against_openapi(doc, f"/api/v1{route}", "get", reply)


def test_an_estimated_flow_carries_its_interval_on_the_board(db, settings, broker, capsys):
    """With FLOW_ESTIMATES on, an IP whose on-sale pages fell short has its inflow estimated: the board's JSON row
    gives its 95 % interval (valid against the document), the CSV its low and high, the command line marks it ≈;
    an IP whose search ended on its pages keeps a counted inflow, without an interval."""
    from dataclasses import replace

    from lib.core.settings import use_settings
    from lib.market.leaderboard_text import print_leaderboard

    from ..market.test_estimates import short_and_whole

    settings = replace(settings, flow_estimates=True)
    use_settings(settings)  # the reads' (the fixture puts it back)
    short, whole, _ = short_and_whole(settings, T0)
    clock = FrozenClock(T0 + H + 60)
    server, _ = start_dashboard(settings, broker, None, clock)
    try:
        reply = call(f"{server.url}/api/v1/leaderboard?by=inflow&hours=24")
        check_against_openapi(openapi(server), "/api/v1/leaderboard", "get", reply)
        rows = {r["ip_id"]: r for r in reply.json()["rows"]}
        low, high = rows[short.id]["inflow_interval"]
        assert rows[short.id]["inflow"] > 10 and low <= rows[short.id]["inflow"] <= high
        assert rows[whole.id]["inflow"] == 10 and rows[whole.id]["inflow_interval"] is None
        table = list(csv.DictReader(io.StringIO(
            call(f"{server.url}/api/v1/leaderboard?by=inflow&hours=24&format=csv").body.decode())))
        by_id = {int(r["ip_id"]): r for r in table}
        assert (float(by_id[short.id]["inflow_low"]), float(by_id[short.id]["inflow_high"])) == (low, high)
        assert by_id[whole.id]["inflow_low"] == by_id[whole.id]["inflow_high"] == ""
        assert "inflow_interval" not in table[0]
    finally:
        server.stop()
    print_leaderboard(ReadSide(settings, state_redis(settings), clock), "inflow", 24, 10)
    lines = {line.split()[1]: line for line in capsys.readouterr().out.splitlines()[2:] if line.split()}
    assert f"≈{rows[short.id]['inflow']:.0f}" in lines[str(short.id)].split()
    assert "≈" not in lines[str(whole.id)] and "10" in lines[str(whole.id)].split()
