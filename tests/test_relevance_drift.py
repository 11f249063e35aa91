"""The "crawler drift" signal on the share of listings about the crawled IP (``match_share_moved``): each crawl's
share against its IP's usual share (a weighted mean of its earlier crawls' shares, computed here from its
definition in docs/concepts/crawling.md), kept in a real Redis, shown in ``animetop status`` and the metrics."""

import pytest

from lib.core import keys
from lib.core.redis_client import state_redis
from lib.crawling import drift
from lib.crawling.drift import DriftLog, metric_families, render_status, status_section


def record(ip_id: int, matched: int, missed: int, n: int) -> dict:
    """A crawl's drift record of one full page (120 listings: ``matched`` about the IP, ``missed`` not)."""
    assert matched + missed == 120
    pages = [{"status": "on_sale", "page": 1, "source": "api", "items": 120, "matched": matched, "missed": missed,
              "has_next": True, "anomalies": {}}]
    return {"ip_id": ip_id, "task_id": f"t-{ip_id}-{n}", "at": 1000.0 + n, "pages": pages, "errors": {}}


@pytest.fixture
def client(settings):
    client = state_redis(settings)
    client.delete(keys.CRAWLER_DRIFT, keys.CRAWLER_MATCH_SHARE)
    yield client
    client.delete(keys.CRAWLER_DRIFT, keys.CRAWLER_MATCH_SHARE)


def usual_shares(shares: list[float]) -> list[float | None]:
    """The usual share each crawl is compared with: None until its IP has ``SHARE_MIN_CRAWLS`` crawls, then the
    exponentially weighted mean of the earlier shares, the first share as its start."""
    out: list[float | None] = []
    mean = None
    for count, share in enumerate(shares):
        out.append(mean if count >= drift.SHARE_MIN_CRAWLS else None)
        mean = share if mean is None else (1 - drift.SHARE_WEIGHT) * mean + drift.SHARE_WEIGHT * share
    return out


def test_a_share_that_moves_in_every_latest_crawl_raises_the_alert(client):
    log = DriftLog(client)
    # two IPs of different usual shares, each steady within 10 points: no alert
    a = [0.5, 0.55, 0.45, 0.5, 0.6, 0.5, 0.55, 0.5]
    b = [1.0, 0.95, 1.0, 1.0, 0.9, 1.0, 1.0, 0.95]
    n = 0
    for share_a, share_b in zip(a, b, strict=True):
        for ip_id, share in ((1, share_a), (2, share_b)):
            n += 1
            assert log.record(record(ip_id, round(share * 120), 120 - round(share * 120), n)) == []
    # the records carry the share and the usual share it was compared with, as defined
    stored = [r for r in reversed(log.recent(drift.KEEP)) if r["ip_id"] == 1]
    assert [r["relevance"]["share"] for r in stored] == pytest.approx(a, abs=1 / 120)
    want = usual_shares([round(x * 120) / 120 for x in a])
    got = [r["relevance"]["usual"] for r in stored]
    assert [g is None for g in got] == [w is None for w in want]
    assert [g for g in got if g is not None] == pytest.approx([w for w in want if w is not None])
    section = status_section(client)
    assert section["alert"] == [] and section["matched"] + section["missed"] == 120 * drift.CRAWLS * 3
    assert "listings about the crawled IP" in "\n".join(render_status(section))

    # titles stop matching (the site changed what it shows, or pads every page): both IPs' shares fall to 0
    reasons: list[str] = []
    for k in range(drift.CRAWLS):
        n += 1
        reasons = log.record(record(1 + k % 2, 0, 120, n))
        if k < drift.CRAWLS - 1:
            assert reasons == []  # only once every one of the latest crawls holds the move
    assert reasons == ["match_share_moved"]
    section = status_section(client)
    assert section["alert"] == ["match_share_moved"] and section["largest_share_move"] < -drift.SHARE_MOVE
    assert "ALERT crawler drift: match_share_moved" in "\n".join(render_status(section))
    families = {f.name: f for f in metric_families(client)}
    alert = {s.labels["reason"]: s.value for s in families["animetop_crawler_drift"].samples}
    assert alert["match_share_moved"] == 1
    listings = {s.labels["relevance"]: s.value for s in families["animetop_crawler_recent_listings"].samples}
    assert listings == {"matched": section["matched"], "missed": section["missed"]}

    # back to their usual shares: the alert ends with the next crawls
    for _ in range(drift.CRAWLS):
        n += 1
        reasons = log.record(record(2, 114, 6, n))
    assert reasons == []


def test_a_new_ip_and_records_without_counts_raise_nothing(client):
    log = DriftLog(client)
    for n in range(drift.CRAWLS + 1):
        assert log.record(record(10 + n, 0, 120, n)) == []  # each IP new: no usual share yet
    for n in range(drift.CRAWLS + 1):
        old = record(1, 0, 120, 100 + n)
        for page in old["pages"]:  # a record written before listings were told apart
            del page["matched"], page["missed"]
        assert log.record(old) == []
    assert status_section(client)["alert"] == []
