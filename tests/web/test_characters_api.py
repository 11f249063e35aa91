"""/api/v1/ips/{id}/characters: an IP's character list, read by anyone and changed only by the operator (the
token, or a session with its CSRF token, as requeue and purge), every answer as the OpenAPI document states."""

from __future__ import annotations

import time
import urllib.request
from urllib.parse import quote

from lib.core.redis_client import state_redis
from lib.market.processing import CrawlResult, ResultProcessor
from lib.segments.character_store import replace_characters
from lib.segments.stored import CHARACTER
from models import ItemSnapshot, ListingSegment

from ..test_alerts_and_read_side import T0
from .conftest import TOKEN, call, call_request
from .test_api import check_against_openapi, openapi, signed_in

PATH = "/api/v1/ips/{ip_id}/characters"
ONE = "/api/v1/ips/{ip_id}/characters/{name}"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
JUJUTSU = [{"name": "五条悟", "aliases": ["五条", "gojo"]}, {"name": "虎杖悠仁", "aliases": ["虎杖"]}]


def listed(reply) -> list[dict]:
    return [{"name": c["name"], "aliases": c["aliases"]} for c in reply.json()["characters"]]


def test_anyone_reads_an_ip_s_list(dashboard):
    doc = openapi(dashboard)
    ip = dashboard.ips[0].id
    replace_characters(ip, [(c["name"], c["aliases"]) for c in JUJUTSU])
    reply = call(f"{dashboard.url}/api/v1/ips/{ip}/characters")
    assert reply.status == 200
    check_against_openapi(doc, PATH, "get", reply)
    assert reply.json()["ip_id"] == ip and listed(reply) == JUJUTSU
    created = {c["created_at"] for c in reply.json()["characters"]}
    assert len(created) == 1 and abs(created.pop() - time.time()) < 60  # written on this process's clock
    empty = call(f"{dashboard.url}/api/v1/ips/{dashboard.ips[1].id}/characters")
    assert empty.status == 200 and empty.json()["characters"] == []
    missing = call(f"{dashboard.url}/api/v1/ips/999999/characters")
    assert missing.status == 404 and missing.json()["detail"] == "no IP with id 999999"
    check_against_openapi(doc, PATH, "get", missing)
    assert call(f"{dashboard.url}/api/v1/ips/{2**31}/characters").status == 422  # no IP can have it


def changes(dashboard, ip: int) -> list[tuple[str, str, object]]:
    """Every change the API offers, on IP ``ip``: (method, URL, body)."""
    url = f"{dashboard.url}/api/v1/ips/{ip}/characters"
    return [("PUT", url, {"characters": [{"name": "七海建人"}]}), ("POST", url, {"name": "七海建人"}),
            ("DELETE", f"{url}/{quote('五条悟')}", None)]


def test_only_the_operator_changes_a_list(dashboard):
    doc = openapi(dashboard)
    ip = dashboard.ips[0].id
    replace_characters(ip, [(c["name"], c["aliases"]) for c in JUJUTSU])
    if dashboard.token is None:
        for method, url, body in changes(dashboard, ip):
            reply = call(url, method, body, BEARER)
            assert reply.status == 403 and "read-only" in reply.json()["detail"], (method, reply.body)
            check_against_openapi(doc, ONE if method == "DELETE" else PATH, method.lower(), reply)
    else:
        cookie, csrf = signed_in(dashboard)
        refused = [({}, 401), ({"Authorization": "Bearer wrong-token-wrong-token"}, 403),
                   (cookie, 403),                                   # a session without its CSRF token
                   ({**cookie, "X-CSRF-Token": "0" * 32}, 403),
                   ({**cookie, "X-CSRF-Token": csrf, "Origin": "http://evil.example"}, 403)]
        for headers, status in refused:
            for method, url, body in changes(dashboard, ip):
                reply = call(url, method, body, headers)
                assert reply.status == status, (headers, method, reply.body)
                check_against_openapi(doc, ONE if method == "DELETE" else PATH, method.lower(), reply)
    assert listed(call(f"{dashboard.url}/api/v1/ips/{ip}/characters")) == JUJUTSU  # nothing was touched


def test_the_operator_replaces_adds_and_removes(dashboard):
    if dashboard.token is None:
        return  # read-only: test_only_the_operator_changes_a_list
    doc = openapi(dashboard)
    ip = dashboard.ips[0].id
    url = f"{dashboard.url}/api/v1/ips/{ip}/characters"

    def check(reply, method: str, path: str = PATH, status: int = 200):
        assert reply.status == status, (method, reply.status, reply.body)
        check_against_openapi(doc, path, method, reply)
        return reply

    reply = check(call(url, "PUT", {"characters": JUJUTSU}, BEARER), "put")
    assert reply.json()["changed"] is True and listed(reply) == JUJUTSU
    assert check(call(url, "PUT", {"characters": JUJUTSU}, BEARER), "put").json()["changed"] is False

    # through a session, as the pages would: the CSRF token and this server's origin
    cookie, csrf = signed_in(dashboard)
    session = {**cookie, "X-CSRF-Token": csrf, "Origin": dashboard.url}
    reply = check(call(url, "POST", {"name": "五条悟", "aliases": ["悟", "GOJO"]}, session), "post")
    assert reply.json()["changed"] is True and listed(reply)[0] == {"name": "五条悟", "aliases": ["五条", "gojo", "悟"]}
    reply = check(call(url, "POST", {"name": "Fate/七海", "aliases": []}, BEARER), "post")
    assert [c["name"] for c in listed(reply)] == ["五条悟", "虎杖悠仁", "Fate/七海"]

    # refusals the document cannot state as a schema: 409, naming the words; nothing changes
    for method, body, refusal in [
        ("POST", {"name": "夏油傑", "aliases": ["虎杖"]},
         "the alias '虎杖' of '夏油傑' is the same word to the matcher as the alias '虎杖' of '虎杖悠仁'"),
        ("POST", {"name": "★"}, "the name '★' has no letter or digit"),
        ("PUT", {"characters": [{"name": "A"}, {"name": "ａ"}]}, "entry 2: the name 'ａ' is the same word"),
    ]:
        reply = check(call(url, method, body, BEARER), method.lower(), status=409)
        assert refusal in reply.json()["detail"], reply.body
    # and those it states: 422
    for method, body in [("POST", {"name": "夏油\n傑"}), ("POST", {"name": ""}), ("POST", {"name": "傑" * 101}),
                         ("POST", {"name": "夏油傑", "alias": ["夏油"]}), ("POST", {"name": 5}),
                         ("PUT", [{"name": "夏油傑"}]),
                         ("PUT", {"characters": [{"name": "夏油傑", "aliases": "夏油"}]}),
                         ("PUT", {"characters": [{"name": f"キャラ{i}"} for i in range(501)]})]:
        check(call(url, method, body, BEARER), method.lower(), status=422)
    assert [c["name"] for c in listed(call(url))] == ["五条悟", "虎杖悠仁", "Fate/七海"]

    # removal: by the name in any spelling the matcher reads alike, a slash in it too; repeating it is no error
    reply = check(call(f"{url}/{quote('ｺﾞｼﾞｮｳ')}", "DELETE", None, BEARER), "delete", ONE)
    assert reply.json()["changed"] is False
    check(call(url, "PUT", {"characters": [{"name": "ゴジョウ"}, *listed(reply)[1:]]}, BEARER), "put")
    reply = check(call(f"{url}/{quote('ｺﾞｼﾞｮｳ')}", "DELETE", None, BEARER), "delete", ONE)
    assert reply.json()["changed"] is True and [c["name"] for c in listed(reply)] == ["虎杖悠仁", "Fate/七海"]
    reply = check(call(f"{url}/{quote('Fate/七海', safe='')}", "DELETE", None, BEARER), "delete", ONE)
    assert [c["name"] for c in listed(reply)] == ["虎杖悠仁"]
    reply = check(call(f"{url}/{quote('Fate/七海')}", "DELETE", None, BEARER), "delete", ONE)
    assert reply.json()["changed"] is False

    for method, target, body in [("PUT", "/api/v1/ips/999999/characters", {"characters": []}),
                                 ("POST", "/api/v1/ips/999999/characters", {"name": "五条悟"}),
                                 ("DELETE", "/api/v1/ips/999999/characters/x", None)]:
        reply = call(dashboard.url + target, method, body, BEARER)
        check(reply, method.lower(), ONE if method == "DELETE" else PATH, 404)
        assert reply.json()["detail"] == "no IP with id 999999"


def test_a_body_that_does_not_parse_gets_a_documented_answer(dashboard):
    doc = openapi(dashboard)
    url = f"{dashboard.url}/api/v1/ips/{dashboard.ips[0].id}/characters"
    for method in ("PUT", "POST"):
        request = urllib.request.Request(url, data=b"\xff{not json", method=method,
                                         headers={"Content-Type": "application/json", **BEARER})
        reply = call_request(request)
        assert reply.status in (400, 403), (method, reply.status)  # 403: read-only refuses before the body
        check_against_openapi(doc, PATH, method.lower(), reply)


def test_hostile_names_round_trip_and_are_removed_by_their_path(dashboard):
    """Names with quotes, SQL, URL metacharacters (``/ ? # % &``), emoji and bidirectional marks: stored and read
    back as sent, and each removed through its percent-encoded path segment."""
    if dashboard.token is None:
        return  # read-only: nothing can be stored
    url = f"{dashboard.url}/api/v1/ips/{dashboard.ips[2].id}/characters"
    names = ["'; DROP TABLE ip_characters; --", "a/b/../c", "what?x=1", "#anchor", "100% & 50%", "%2F%00",
             "🔥 五条悟", "\u202eabc", "e\u0301", "\\ back\\slash", 'say "x"', ".. up"]
    body = {"characters": [{"name": n, "aliases": [f"{n} 別名"]} for n in names]}
    assert call(url, "PUT", body, BEARER).status == 200
    assert listed(call(url)) == body["characters"]
    for i, name in enumerate(names):
        reply = call(f"{url}/{quote(name, safe='')}", "DELETE", None, BEARER)
        assert reply.status == 200 and reply.json()["changed"] is True, (name, reply.body)
        assert [c["name"] for c in listed(reply)] == names[i + 1:]


def character_rows(ip: int) -> set[tuple[str, str]]:
    return set(ListingSegment.select(ListingSegment.source_id, ListingSegment.key)
               .where((ListingSegment.ip_id == ip) & (ListingSegment.kind == CHARACTER)).tuples())


def test_a_change_segments_the_ip_s_stored_listings_again(dashboard, settings):
    """A changed list applies to the listings already stored, at once (no ``segments reapply``): the answer says
    how many rows it wrote and deleted, and the IP's cached segments answer follows."""
    if dashboard.token is None:
        return
    ip = dashboard.ips[0].id
    titled = [{"source_id": "t1", "title": "五条悟 アクスタ", "status": "on_sale", "price": 800},
              {"source_id": "t2", "title": "虎杖 缶バッジ", "status": "on_sale", "price": 500},
              {"source_id": "t3", "title": "ぬいぐるみ", "status": "on_sale", "price": 900}]
    ResultProcessor(settings, state_redis(settings), dashboard.clock).apply(
        CrawlResult.parse(ip, "titled", T0 + 90, titled))
    stored = ItemSnapshot.select().where(ItemSnapshot.ip_id == ip).count()
    url = f"{dashboard.url}/api/v1/ips/{ip}/characters"
    segments = f"{dashboard.url}/api/v1/ips/{ip}/segments?by=character"
    assert character_rows(ip) == set() and call(segments).json()["segments"] == []  # and now cached

    reply = call(url, "PUT", {"characters": JUJUTSU}, BEARER)
    check_against_openapi(openapi(dashboard), PATH, "put", reply)
    assert reply.json()["resegmented"] == {"listings": stored, "added": 2, "removed": 0}
    assert character_rows(ip) == {("t1", "五条悟"), ("t2", "虎杖悠仁")}
    assert {s["key"] for s in call(segments).json()["segments"]} == {"五条悟", "虎杖悠仁"}

    reply = call(f"{url}/{quote('五条悟')}", "DELETE", None, BEARER)
    assert reply.json()["resegmented"] == {"listings": stored, "added": 0, "removed": 1}
    assert character_rows(ip) == {("t2", "虎杖悠仁")}
    reply = call(url, "POST", {"name": "五条悟", "aliases": ["悟"]}, BEARER)
    assert reply.json()["resegmented"] == {"listings": stored, "added": 1, "removed": 0}
    reply = call(url, "POST", {"name": "五条悟", "aliases": ["悟"]}, BEARER)  # no change: nothing segmented
    assert reply.json()["changed"] is False and reply.json()["resegmented"] is None
    assert {s["key"] for s in call(segments).json()["segments"]} == {"五条悟", "虎杖悠仁"}
